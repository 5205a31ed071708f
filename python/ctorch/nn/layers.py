"""The layers of torch.nn, each calling the C ops through nn.functional."""
from collections import OrderedDict
import math

from .. import _C
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _pair(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


def _triple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x, x)


def _single(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_C.empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(_C.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return _C.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return "in_features={}, out_features={}, bias={}".format(self.in_features, self.out_features,
                                                                 self.bias is not None)


class Bilinear(Module):
    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(_C.empty((out_features, in1_features, in2_features), dtype=dtype))
        if bias:
            self.bias = Parameter(_C.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        y = _C.einsum("bi,oij,bj->bo", input1, self.weight, input2)
        return y + self.bias if self.bias is not None else y

    def extra_repr(self):
        return "in1_features={}, in2_features={}, out_features={}, bias={}".format(
            self.in1_features, self.in2_features, self.out_features, self.bias is not None)


class _ConvNd(Module):
    def __init__(self, nd, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_modes:
            raise ValueError("padding_mode must be one of {}, but got padding_mode='{}'".format(
                valid_modes, padding_mode))
        tup = _pair if nd == 2 else (_triple if nd == 3 else _single)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError("Invalid padding string {!r}, should be one of {}".format(padding,
                                                                                          {"valid", "same"}))
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = tup(padding)
        self.dilation = tup(dilation)
        self.transposed = transposed
        self.output_padding = tup(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * nd
            if padding == "same":
                for d, k, i in zip(self.dilation, self.kernel_size, range(nd - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in range(2)]
        if transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(_C.empty(shape, dtype=dtype))
        if bias:
            self.bias = Parameter(_C.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        nd = len(self.kernel_size)
        if self.padding != (0,) * nd:
            s += ", padding={padding}"
        if self.dilation != (1,) * nd:
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * nd:
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class Conv1d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, dtype)

    def forward(self, input):
        if self.padding_mode != "zeros":
            return F.conv1d(F.pad(input, self._reversed_padding_repeated_twice, self.padding_mode), self.weight,
                            self.bias, self.stride, 0, self.dilation, self.groups)
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, dtype)

    def forward(self, input):
        if self.padding_mode != "zeros":
            return F.conv2d(F.pad(input, self._reversed_padding_repeated_twice, self.padding_mode), self.weight,
                            self.bias, self.stride, 0, self.dilation, self.groups)
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for ConvTranspose2d')
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)


class _NormBase(Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(_C.ones(num_features, dtype=dtype))
            self.bias = Parameter(_C.zeros(num_features, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", _C.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", _C.tensor(0, dtype=_C.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_input_dim(self, input):
        pass

    def forward(self, input):
        self._check_input_dim(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            eaf = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias, bn_training, eaf,
                            self.eps)

    def extra_repr(self):
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "track_running_stats={track_running_stats}".format(**self.__dict__))


class BatchNorm1d(_NormBase):
    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError("expected 2D or 3D input (got {}D input)".format(input.dim()))


class BatchNorm2d(_NormBase):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError("expected 4D input (got {}D input)".format(input.dim()))


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) \
            else (normalized_shape,)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_C.ones(self.normalized_shape, dtype=dtype))
            self.bias = Parameter(_C.zeros(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(_C.ones(num_channels, dtype=dtype))
            self.bias = Parameter(_C.zeros(num_channels, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}".format(**self.__dict__)


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) \
            else (normalized_shape,)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_C.ones(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError("dropout probability has to be between 0 and 1, but got {}".format(p))
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return "p={}, inplace={}".format(self.p, self.inplace)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(_C.empty((num_embeddings, embedding_dim), dtype=dtype))
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from ..autograd.grad_mode import no_grad
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, **kwargs):
        rows, cols = embeddings.shape
        m = cls(rows, cols, padding_idx=padding_idx, _weight=embeddings)
        m.weight.requires_grad = not freeze
        return m

    def extra_repr(self):
        s = "{num_embeddings}, {embedding_dim}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        return s.format(**self.__dict__)


# Pooling modules of any dimension: each subclass names its functional (nn.functional.<_fn>, looked up
# when called, so the 1-d/3-d functionals installed later are found too).
class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return getattr(F, self._fn)(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                    self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return "kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, " \
               "ceil_mode={ceil_mode}".format(**self.__dict__)


class _AvgPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return getattr(F, self._fn)(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                    self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.kernel_size, self.stride, self.padding)


class _AdaptiveAvgPoolNd(Module):
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return getattr(F, self._fn)(input, self.output_size)

    def extra_repr(self):
        return "output_size={}".format(self.output_size)


class _AdaptiveMaxPoolNd(_AdaptiveAvgPoolNd):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return getattr(F, self._fn)(input, self.output_size, self.return_indices)


class MaxPool2d(_MaxPoolNd):
    _fn = "max_pool2d"


class AvgPool2d(_AvgPoolNd):
    _fn = "avg_pool2d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _fn = "adaptive_avg_pool2d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _fn = "adaptive_max_pool2d"


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return "kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride}".format(
            **self.__dict__)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return "start_dim={}, end_dim={}".format(self.start_dim, self.end_dim)


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return "dim={}, unflattened_size={}".format(self.dim, self.unflattened_size)


def _act(name, fn, repr_fmt=None, params=()):
    """An activation module over a functional form; params are (name, default) pairs."""
    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        for (pname, default), v in zip(params, args):
            kwargs.setdefault(pname, v)
        for pname, default in params:
            setattr(self, pname, kwargs.get(pname, default))

    def forward(self, input):
        return fn(self, input)

    def extra_repr(self):
        return repr_fmt.format(**self.__dict__) if repr_fmt else ""
    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__module__": __name__})


ReLU = _act("ReLU", lambda s, x: F.relu(x, s.inplace), "inplace=True" if False else None, (("inplace", False),))
ReLU.extra_repr = lambda self: "inplace=True" if self.inplace else ""
ReLU6 = _act("ReLU6", lambda s, x: F.relu6(x, s.inplace), None, (("inplace", False),))
ReLU6.extra_repr = lambda self: "inplace=True" if self.inplace else ""
LeakyReLU = _act("LeakyReLU", lambda s, x: F.leaky_relu(x, s.negative_slope, s.inplace), None,
                 (("negative_slope", 0.01), ("inplace", False)))
LeakyReLU.extra_repr = lambda self: "negative_slope={}{}".format(self.negative_slope,
                                                                  ", inplace=True" if self.inplace else "")
GELU = _act("GELU", lambda s, x: F.gelu(x, s.approximate), "approximate='{approximate}'", (("approximate", "none"),))
SiLU = _act("SiLU", lambda s, x: F.silu(x, s.inplace), None, (("inplace", False),))
SiLU.extra_repr = lambda self: "inplace=True" if self.inplace else ""
Mish = _act("Mish", lambda s, x: F.mish(x, s.inplace), None, (("inplace", False),))
ELU = _act("ELU", lambda s, x: F.elu(x, s.alpha, s.inplace), "alpha={alpha}", (("alpha", 1.0), ("inplace", False)))
CELU = _act("CELU", lambda s, x: F.celu(x, s.alpha, s.inplace), "alpha={alpha}", (("alpha", 1.0), ("inplace", False)))
SELU = _act("SELU", lambda s, x: F.selu(x, s.inplace), None, (("inplace", False),))
Sigmoid = _act("Sigmoid", lambda s, x: _C.sigmoid(x))
Tanh = _act("Tanh", lambda s, x: _C.tanh(x))
Softsign = _act("Softsign", lambda s, x: F.softsign(x))
Tanhshrink = _act("Tanhshrink", lambda s, x: F.tanhshrink(x))
LogSigmoid = _act("LogSigmoid", lambda s, x: F.logsigmoid(x))
Hardsigmoid = _act("Hardsigmoid", lambda s, x: F.hardsigmoid(x, s.inplace), None, (("inplace", False),))
Hardswish = _act("Hardswish", lambda s, x: F.hardswish(x, s.inplace), None, (("inplace", False),))
Hardtanh = _act("Hardtanh", lambda s, x: F.hardtanh(x, s.min_val, s.max_val, s.inplace),
                "min_val={min_val}, max_val={max_val}", (("min_val", -1.0), ("max_val", 1.0), ("inplace", False)))
Softplus = _act("Softplus", lambda s, x: F.softplus(x, s.beta, s.threshold), "beta={beta}, threshold={threshold}",
                (("beta", 1), ("threshold", 20)))
Softmax = _act("Softmax", lambda s, x: F.softmax(x, s.dim), "dim={dim}", (("dim", None),))
LogSoftmax = _act("LogSoftmax", lambda s, x: F.log_softmax(x, s.dim), "dim={dim}", (("dim", None),))
Softmin = _act("Softmin", lambda s, x: F.softmin(x, s.dim), "dim={dim}", (("dim", None),))
GLU = _act("GLU", lambda s, x: F.glu(x, s.dim), "dim={dim}", (("dim", -1),))


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            size_average = True if size_average is None else size_average
            reduce = True if reduce is None else reduce
            reduction = ("mean" if size_average else "sum") if reduce else "none"
        self.reduction = reduction


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# ---- containers ----
class Sequential(Module):
    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError("index {} is out of range".format(idx))
        return list(self._modules.values())[idx % n]

    def __setitem__(self, idx, module):
        key = list(self._modules.keys())[idx]
        setattr(self, key, module)

    def __delitem__(self, idx):
        keys = list(self._modules.keys())[idx]
        for k in (keys if isinstance(keys, list) else [keys]):
            del self._modules[k]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError("index {} is out of range".format(idx))
        return self._modules[str(idx % n)]

    def __setitem__(self, idx, module):
        self.add_module(str(idx % len(self)), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)


class ModuleDict(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self[k] = m


class ParameterList(Module):
    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        for v in values or []:
            self.append(v)

    def append(self, value):
        p = value if isinstance(value, Parameter) else Parameter(value)
        self.register_parameter(str(self._size), p)
        self._size += 1
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, idx):
        return self._parameters[str(idx % self._size)]

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self._parameters.values())


class ParameterDict(Module):
    def __init__(self, parameters=None):
        super().__init__()
        for k, v in (parameters or {}).items():
            self[k] = v

    def __setitem__(self, key, value):
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))

    def __getitem__(self, key):
        return self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()
