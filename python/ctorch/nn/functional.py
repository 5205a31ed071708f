"""torch.nn.functional over the C ops (PyTorch's names and keyword arguments)."""
import math

from .. import _C

relu = _C.nn_relu
relu6 = _C.nn_relu6
selu = _C.nn_selu
silu = _C.nn_silu
mish = _C.nn_mish
hardsigmoid = _C.nn_hardsigmoid
hardswish = _C.nn_hardswish
hardtanh = _C.nn_hardtanh
leaky_relu = _C.nn_leaky_relu
elu = _C.nn_elu
celu = _C.nn_celu
softplus = _C.nn_softplus
softsign = _C.nn_softsign
linear = _C.linear
conv1d = _C.conv1d
conv2d = _C.conv2d
conv_transpose2d = _C.conv_transpose2d
adaptive_avg_pool2d = _C.adaptive_avg_pool2d
layer_norm = _C.layer_norm
group_norm = _C.group_norm
rms_norm = _C.rms_norm
interpolate = _C.interpolate
pad = _C.pad
one_hot = _C.one_hot
cosine_similarity = _C.cosine_similarity
pairwise_distance = _C.pairwise_distance
scaled_dot_product_attention = _C.scaled_dot_product_attention
mse_loss = _C.nn_mse_loss
l1_loss = _C.nn_l1_loss
smooth_l1_loss = _C.nn_smooth_l1_loss
huber_loss = _C.nn_huber_loss
binary_cross_entropy = _C.nn_binary_cross_entropy
binary_cross_entropy_with_logits = _C.nn_binary_cross_entropy_with_logits
kl_div = _C.nn_kl_div
nll_loss = _C.nn_nll_loss
cross_entropy = _C.nn_cross_entropy


def gelu(input, approximate="none"):
    return _C.nn_gelu(input, approximate)


def relu_(input):
    return input.relu_()


def leaky_relu_(input, negative_slope=0.01):
    return _C.nn_leaky_relu(input, negative_slope, True)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def logsigmoid(input):
    return -_C.nn_softplus(-input)


def tanhshrink(input):
    return input - _C.tanh(input)


def glu(input, dim=-1):
    a, b = input.chunk(2, dim)
    return a * _C.sigmoid(b)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = _C._vector_norm(input, p, dim, True).clamp_min(eps).expand_as(input)
    return input / denom


def _dropout_fn(input, p=0.5, train=True):
    return _C.dropout(input, p, train)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got {}".format(p))
    out = _C.dropout(input, p, training)
    if inplace:
        input.copy_(out)
        return input
    return out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _C.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _C.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _C.adaptive_max_pool2d(input, output_size, return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    stride = kernel_size if stride is None else stride
    r = _C.max_pool2d(input.unsqueeze(-2), (1, kernel_size), (1, stride), (0, padding), (1, dilation), ceil_mode,
                      return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    stride = kernel_size if stride is None else stride
    return _C.avg_pool2d(input.unsqueeze(-2), (1, kernel_size), (1, stride), (0, padding), ceil_mode,
                         count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    return _C.adaptive_avg_pool2d(input.unsqueeze(-2), (1, output_size)).squeeze(-2)


def _batch_norm_fn(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    return _C.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return _C.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if max_norm is not None:
        raise NotImplementedError("embedding(max_norm=...) is not implemented in ctorch")
    return _C.embedding(input, weight, padding_idx)


def unfold(*a, **k):
    raise NotImplementedError("F.unfold is not implemented in ctorch")


def multi_head_attention_forward(*a, **k):
    raise NotImplementedError("use nn.MultiheadAttention")
