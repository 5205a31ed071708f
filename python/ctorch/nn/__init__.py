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
