"""torch.nn."""
from .parameter import Parameter, UninitializedParameter  # noqa: F401
from .module import Module  # noqa: F401
from .layers import *  # noqa: F401,F403
from .layers import (Identity, Linear, Bilinear, Conv1d, Conv2d, ConvTranspose2d, BatchNorm1d, BatchNorm2d,  # noqa
                     LayerNorm, GroupNorm, RMSNorm, Dropout, Embedding, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
                     AdaptiveMaxPool2d, Flatten, Unflatten, ReLU, ReLU6, LeakyReLU, GELU, SiLU, Mish, ELU, CELU, SELU,
                     Sigmoid, Tanh, Softsign, Tanhshrink, LogSigmoid, Hardsigmoid, Hardswish, Hardtanh, Softplus,
                     Softmax, LogSoftmax, Softmin, GLU, MSELoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss,
                     BCEWithLogitsLoss, NLLLoss, CrossEntropyLoss, KLDivLoss, CosineSimilarity, PairwiseDistance,
                     Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict)
from . import functional, init, utils  # noqa: F401,E402
from .transformer import (MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,  # noqa: F401,E402
                          NonDynamicallyQuantizableLinear, TransformerDecoderLayer, TransformerDecoder, Transformer)
from .layers import Unfold  # noqa: F401,E402
from .layers_extra import (ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad2d, ReflectionPad1d,  # noqa: F401,E402
                           ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, MaxPool1d,
                           AvgPool1d, AdaptiveAvgPool1d, PReLU, Upsample, InstanceNorm1d, InstanceNorm2d, Fold,
                           GaussianNLLLoss, BatchNorm3d, EmbeddingBag, InstanceNorm3d, LPPool1d, LPPool2d,
                           TripletMarginLoss, TripletMarginWithDistanceLoss, DataParallel)
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401,E402
