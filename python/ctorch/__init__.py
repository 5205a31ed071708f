"""ctorch: PyTorch's Python API over the ctorch C library.

`import ctorch as torch` runs PyTorch programs unchanged: same names, same keyword
arguments, same printed output and the same random numbers as PyTorch 1.13 on the CPU.
"""
import builtins as _builtins
import math as _math
import sys as _sys

from . import _C
from ._C import (  # noqa: F401  (re-exported names)
    float32, float64, float16, bfloat16, int8, uint8, int16, int32, int64, dtype, Generator,
    default_generator, get_default_dtype, set_default_dtype, promote_types, can_cast, get_num_threads,
    set_num_threads, manual_seed, initial_seed, is_grad_enabled, is_inference_mode_enabled, from_numpy,
    tensor, as_tensor,
)
bool = getattr(_C, "bool")  # noqa: A001  (torch.bool shadows the builtin here, as in torch)
float = float32  # noqa: A001
double = float64
half = float16
int = int32  # noqa: A001
long = int64
short = int16
__version__ = "1.13.0+ctorch"

_C_manual_seed = manual_seed


def manual_seed(seed):
    """torch.manual_seed: any value int() accepts, within PyTorch's 64-bit range."""
    seed = _builtins.int(seed)
    if not -(1 << 63) <= seed < (1 << 64):
        raise RuntimeError("Overflow when unpacking long")
    return _C_manual_seed(seed)


inf = _math.inf
nan = _math.nan
e = _math.e
pi = _math.pi


class Size(tuple):
    """torch.Size: a tuple of ints that prints as torch.Size([...])."""

    def __repr__(self):
        return "torch.Size([" + ", ".join(str(x) for x in self) + "])"

    __str__ = __repr__

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __reduce__(self):
        return (Size, (tuple(self),))


class device:
    """torch.device: only the CPU exists here."""

    def __init__(self, type="cpu", index=None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        if not isinstance(type, (str, device, _builtins.int)) or isinstance(type, _builtins.bool):
            raise TypeError("Device() received an invalid combination of arguments - got (%s), but expected one "
                            "of:\n * (torch.device device)\n      didn't match because some of the arguments have "
                            "invalid types: (!%s!)\n * (str type, int index)\n" % ((_builtins.type(type).__name__,) * 2))
        if isinstance(type, _builtins.int):
            type, index = "cuda", type  # as in PyTorch, a bare index names a CUDA device
        s = str(type)
        if ":" in s:
            s, idx = s.split(":", 1)
            index = _builtins.int(idx)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        if s not in ("cpu", "cuda", "mps", "meta"):
            raise RuntimeError(
                "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, ort, xla, "
                "lazy, vulkan, mps, meta, hpu, privateuseone device type at start of device string: " + str(type))
        self.type = s
        self.index = index

    def __repr__(self):
        if self.index is None:
            return "device(type='%s')" % self.type
        return "device(type='%s', index=%d)" % (self.type, self.index)

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    def __eq__(self, other):
        return isinstance(other, device) and other.type == self.type and other.index == self.index

    def __hash__(self):
        return hash((self.type, self.index))


_CPU = device("cpu")
_devices = {}


def _device_of(s):
    """The torch.device for a tensor's "cuda:N" (one object per device)."""
    d = _devices.get(s)
    if d is None:
        d = _devices[s] = device(s)
    return d


class _Layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


strided = _Layout("strided")
sparse_coo = _Layout("sparse_coo")
contiguous_format = _Layout("contiguous_format")
preserve_format = _Layout("preserve_format")
channels_last = _Layout("channels_last")


class _GradFnBase:
    """The object behind tensor.grad_fn; its class is named like PyTorch's node (AddBackward0)."""

    def __init__(self, tensor):
        self._name = tensor._grad_fn_name

    def name(self):
        return self._name

    @property
    def next_functions(self):
        return ()

    def register_hook(self, fn):
        raise NotImplementedError("grad_fn.register_hook is not implemented in ctorch")


_node_classes = {}


def _node_class(name):
    cls = _node_classes.get(name)
    if cls is None:
        cls = type(name, (_GradFnBase,), {"__module__": "builtins", "__qualname__": name})
        _node_classes[name] = cls
    return cls


class _RemovableHandle:
    def __init__(self, tensor, handle):
        self._tensor = tensor
        self._handle = handle

    def remove(self):
        if self._tensor is not None:
            self._tensor._remove_hook(self._handle)
            self._tensor = None


class _ArrayHolder:
    """Gives numpy the tensor's memory; the array keeps this (and so the tensor) alive."""

    def __init__(self, t):
        self.t = t
        ptr, shape, strides, typestr = t._array_interface()
        self.__array_interface__ = {"data": (ptr, False), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


class _UntypedStorage:
    def __init__(self, t):
        self._t = t

    def data_ptr(self):
        return self._t._storage_ptr()

    def nbytes(self):
        return self._t._storage_nbytes()

    def size(self):
        return self.nbytes()

    def __len__(self):
        return self.nbytes()


def _rebuild_tensor(data, dtype_name, shape, requires_grad):
    t = _C.tensor(data, dtype=getattr(_C, dtype_name)).reshape(shape)
    if requires_grad:
        t.requires_grad_(True)
    return t


class Tensor(_C._TensorBase):
    """torch.Tensor."""

    __array_priority__ = 1000  # numpy defers to our reflected operators

    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import _str
        return _str(self)

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __reversed__(self):
        if self.dim() == 0:
            return self
        return self.flip(0)

    def __contains__(self, element):
        if isinstance(element, (Tensor, _builtins.int, _builtins.float, _builtins.bool)):
            return (element == self).any().item()
        raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a %s." %
                           type(element))

    @property
    def device(self):
        s = self._device_str
        return _CPU if s == "cpu" else _device_of(s)

    @property
    def layout(self):
        return strided

    @property
    def grad_fn(self):
        name = self._grad_fn_name
        if name is None:
            return None
        cache = self.__dict__.get("_grad_fn_cache")
        if cache is not None and cache[0] == name:
            return cache[1]
        node = _node_class(name)(self)
        self.__dict__["_grad_fn_cache"] = (name, node)
        return node

    @property
    def itemsize(self):
        return self.element_size()

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    @property
    def real(self):
        return self

    # in-place shape ops: the view op, then the handle takes its geometry (see _inplace_view_)
    def squeeze_(self, *args, **kwargs):
        return self._inplace_view_(self.squeeze(*args, **kwargs))

    def unsqueeze_(self, *args, **kwargs):
        return self._inplace_view_(self.unsqueeze(*args, **kwargs))

    def t_(self):
        if self.dim() > 2:
            raise RuntimeError("t_() expects a tensor with <= 2 dimensions, but self is %dD" % self.dim())
        return self._inplace_view_(self.t())

    def transpose_(self, dim0, dim1):
        return self._inplace_view_(self.transpose(dim0, dim1))

    swapdims_ = transpose_
    swapaxes_ = transpose_

    def as_strided_(self, size, stride, storage_offset=None):
        return self._inplace_view_(self.as_strided(size, stride, storage_offset))

    def fill_diagonal_(self, fill_value, wrap=False):
        nd = self.dim()
        if nd < 2:
            raise RuntimeError("dimensions must larger than 1")
        shape = self.shape
        if nd > 2 and _builtins.any(s != shape[0] for s in shape):
            raise RuntimeError("all dimensions of input must be of equal length")
        # the diagonal is one strided run: step = sum of the strides
        n = _builtins.min(shape)
        step = _builtins.sum(self.stride())
        rows, cols = shape[0], shape[1]
        if nd == 2 and wrap and rows > cols + 1:
            # PyTorch's wrap restarts the diagonal every cols + 1 rows
            if not self.is_contiguous():
                for r0 in _builtins.range(0, rows, cols + 1):
                    self[r0:r0 + cols].diagonal().fill_(fill_value)
                return self
            n = len(_builtins.range(0, rows * cols, cols + 1))
        self.as_strided((n,), (step,), self.storage_offset()).fill_(fill_value)
        return self

    def register_hook(self, hook):
        return _RemovableHandle(self, self._register_hook(hook))

    def numpy(self, *, force=False):
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if self._device_str != "cpu":
            if not force:
                raise TypeError("can't convert %s device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                                "to host memory first." % self._device_str)
            return self.cpu().numpy(force=True)
        import numpy as np
        return np.asarray(_ArrayHolder(self.detach() if force else self))

    def __array__(self, dtype=None):
        a = self.detach().numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __array_wrap__(self, array):
        if array.dtype == __import__("numpy").bool_:
            array = array.astype("uint8")
        return from_numpy(array)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            return _legacy_names[self.dtype]
        if isinstance(dtype, str):
            for k, v in _legacy_names.items():
                if v == dtype:
                    return self.to(k)
            raise ValueError("invalid type: '%s'" % dtype)
        return self.to(dtype)

    def untyped_storage(self):
        return _UntypedStorage(self)

    storage = untyped_storage

    def _storage_ptr(self):
        return self.data_ptr() - self.storage_offset() * self.element_size()

    def _storage_nbytes(self):
        return self._storage_bytes

    def is_shared(self):
        return False

    def share_memory_(self):
        return self

    def pin_memory(self):
        return self

    def is_pinned(self):
        return False

    def get_device(self):
        d = self.device
        return -1 if d.type == "cpu" else d.index

    def is_set_to(self, other):
        # PyTorch: the same storage seen with the same offset, sizes and strides
        return (self._shares_storage(other) and self.storage_offset() == other.storage_offset() and
                self.shape == other.shape and self.stride() == other.stride())

    def dim_order(self):
        return tuple(sorted(_builtins.range(self.dim()), key=lambda d: -self.stride(d)))

    def apply_(self, fn):
        flat = self.reshape(-1).tolist()
        self.copy_(tensor([fn(v) for v in flat], dtype=self.dtype).reshape(self.shape))
        return self

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with no_grad():
            c = self.clone()
        if self.requires_grad and self.is_leaf:
            c.requires_grad_(True)
        if self.grad is not None:
            c.grad = self.grad.clone()
        memo[id(self)] = c
        return c

    def __reduce_ex__(self, proto):
        return (_rebuild_tensor, (self.detach().reshape(-1).tolist(), _dtype_attr[self.dtype], tuple(self.shape),
                                  self.requires_grad and self.is_leaf))

    def __setstate__(self, state):
        pass

    def __torch_function__(self, *args, **kwargs):
        return NotImplemented

    def __dir__(self):
        return sorted(set(object.__dir__(self)))

    def logsigmoid(self):
        return nn.functional.logsigmoid(self)

    def softplus(self, beta=1, threshold=20):
        return nn.functional.softplus(self, beta, threshold)

    def relu6(self):
        return nn.functional.relu6(self)


_dtype_attr = {float32: "float32", float64: "float64", float16: "float16", bfloat16: "bfloat16", int8: "int8",
               uint8: "uint8", int16: "int16", int32: "int32", int64: "int64", bool: "bool"}
_legacy_names = {float32: "torch.FloatTensor", float64: "torch.DoubleTensor", float16: "torch.HalfTensor",
                 bfloat16: "torch.BFloat16Tensor", int8: "torch.CharTensor", uint8: "torch.ByteTensor",
                 int16: "torch.ShortTensor", int32: "torch.IntTensor", int64: "torch.LongTensor",
                 bool: "torch.BoolTensor"}

_C._set_classes(Tensor, Size)

# ---- functions from the C extension (torch.<name>) ----
_PRIVATE = {"_set_classes", "_TensorBase", "_live_tensors"}
for _n in dir(_C):
    if _n.startswith("nn_") or _n in _PRIVATE or _n.startswith("__"):
        continue
    if _n not in globals():
        globals()[_n] = getattr(_C, _n)
del _n
vector_norm = _C._vector_norm

from ._tensor_str import set_printoptions  # noqa: E402
from .autograd.grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: E402
from . import autograd  # noqa: E402


def is_tensor(obj):
    return isinstance(obj, Tensor)


def _tensor_arg(name, t):
    """PyTorch's parser message for a non-tensor given where `input` must be a Tensor."""
    if not isinstance(t, Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s" % (name, type(t).__name__))
    return t


def is_floating_point(t):
    return _tensor_arg("is_floating_point", t).is_floating_point()


def is_complex(t):
    return _tensor_arg("is_complex", t).is_complex()


def is_inference(t):
    return _tensor_arg("is_inference", t).is_inference()


def is_nonzero(t):
    if t.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return _builtins.bool(t)


def numel(t):
    return t.numel()


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    t = as_tensor(obj, dtype=dtype, device=device)
    if copy:
        t = t.clone()
    if requires_grad:
        t.requires_grad_(True)
    return t


def result_type(tensor, other):
    """torch.result_type: the dtype an arithmetic op on the two would give."""
    def probe(x):
        if isinstance(x, Tensor):
            return x.new_zeros(()) if x.dim() == 0 else x.new_zeros((0,))
        return x
    a, b = probe(tensor), probe(other)
    if not isinstance(a, Tensor):
        a, b = b, a
    if not isinstance(a, Tensor):
        raise TypeError("result_type() received an invalid combination of arguments")
    return _C.add(a, b).dtype


def seed():
    return default_generator.seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def normal_like(*a, **k):
    raise NotImplementedError


class finfo:
    _table = {
        "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 1e-06),
        "float64": (64, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 1e-15),
        "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
        "bfloat16": (16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01),
    }

    def __init__(self, type=None):  # noqa: A002
        type = type or get_default_dtype()
        if not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        self.dtype = _dtype_attr[type]
        self.bits, self.eps, self.max, self.tiny, self.resolution = self._table[self.dtype]
        self.min = -self.max
        self.smallest_normal = self.tiny

    def __repr__(self):
        return ("finfo(resolution=%g, min=%g, max=%g, eps=%g, smallest_normal=%g, tiny=%g, dtype=%s)" %
                (self.resolution, self.min, self.max, self.eps, self.tiny, self.tiny, self.dtype))


class iinfo:
    _table = {"int8": (8, -128, 127), "uint8": (8, 0, 255), "int16": (16, -32768, 32767),
              "int32": (32, -2147483648, 2147483647), "int64": (64, -9223372036854775808, 9223372036854775807),
              "bool": (8, 0, 1)}

    def __init__(self, type):  # noqa: A002
        if type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        self.dtype = _dtype_attr[type]
        self.bits, self.min, self.max = self._table[self.dtype]

    def __repr__(self):
        return "iinfo(min=%d, max=%d, dtype=%s)" % (self.min, self.max, self.dtype)


class _Cuda:
    """torch.cuda over the C library's CUDA backend (no devices without the backend, a driver or a GPU)."""

    @staticmethod
    def is_available():
        return _C._cuda_device_count() > 0

    @staticmethod
    def device_count():
        return _C._cuda_device_count()

    @staticmethod
    def current_device():
        if _C._cuda_device_count() == 0:
            raise AssertionError("Torch not compiled with CUDA enabled")
        return 0

    @staticmethod
    def get_device_name(device=None):
        d = device if isinstance(device, _builtins.int) else (0 if device is None else
                                                             (globals()["device"](device).index or 0))
        if _C._cuda_device_count() == 0:
            raise AssertionError("Torch not compiled with CUDA enabled")
        return _C._cuda_device_name(d)

    @staticmethod
    def is_initialized():
        return _C._cuda_device_count() > 0

    @staticmethod
    def manual_seed(seed):
        pass

    @staticmethod
    def manual_seed_all(seed):
        pass

    @staticmethod
    def synchronize(device=None):
        if _C._cuda_device_count() == 0:
            raise AssertionError("Torch not compiled with CUDA enabled")
        d = device if isinstance(device, _builtins.int) else (0 if device is None else
                                                             (globals()["device"](device).index or 0))
        _C._cuda_synchronize(d)


cuda = _Cuda()
from . import _cuda_extra  # noqa: E402

for _n in ("CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "Stream", "Event", "stream",
           "current_stream", "default_stream", "get_autocast_gpu_dtype", "is_bf16_supported", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "empty_cache", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "set_device", "device", "get_device_properties", "get_device_capability",
           "mem_get_info"):
    _v = getattr(_cuda_extra, _n)  # classes as they are, functions as static methods of torch.cuda
    setattr(_Cuda, _n, _v if isinstance(_v, type) else staticmethod(_v))
del _n, _v


class _CudaAmp:
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)"""

    @staticmethod
    def autocast(enabled=True, dtype=None, cache_enabled=True):
        return _cuda_extra.autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


_Cuda.amp = _CudaAmp()
autocast = _cuda_extra.autocast
is_autocast_enabled = _cuda_extra.is_autocast_enabled
set_float32_matmul_precision = _cuda_extra.set_float32_matmul_precision
get_float32_matmul_precision = _cuda_extra.get_float32_matmul_precision


class _Backends:
    class mps:
        @staticmethod
        def is_available():
            return False

        @staticmethod
        def is_built():
            return False

    class cuda:
        matmul = _cuda_extra._Matmul()

        @staticmethod
        def is_built():
            return "cuda" in _C._backends_compiled().split(",")

    cudnn = _cuda_extra._Cudnn()


backends = _Backends()


def use_deterministic_algorithms(mode, *, warn_only=False):
    pass


def are_deterministic_algorithms_enabled():
    return False


def compile(model=None, **kwargs):  # noqa: A001
    return model if model is not None else (lambda m: m)


from . import nn  # noqa: E402
from . import optim  # noqa: E402
from . import utils  # noqa: E402
from .serialization import save, load  # noqa: E402
from .nn.functional import relu as _relu_f  # noqa: E402,F401

# torch.<activation> names that live on torch itself
selu = nn.functional.selu
celu = nn.functional.celu
rrelu = None
sigmoid = _C.sigmoid
tanh = _C.tanh
relu = _C.relu
softmax = _C.softmax
log_softmax = _C.log_softmax
dropout = nn.functional._dropout_fn
layer_norm = nn.functional.layer_norm
group_norm = nn.functional.group_norm
embedding = nn.functional.embedding
conv1d = nn.functional.conv1d
conv2d = nn.functional.conv2d
conv_transpose2d = nn.functional.conv_transpose2d
max_pool2d = nn.functional.max_pool2d
avg_pool2d = nn.functional.avg_pool2d
batch_norm = nn.functional._batch_norm_fn
cosine_similarity = nn.functional.cosine_similarity
pairwise_distance = nn.functional.pairwise_distance


def cdist(x1, x2, p=2.0):
    return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


def _make_torch_alias():
    """`import torch` inside code run by ctorch finds ctorch when asked (tests use this)."""
    return _sys.modules[__name__]


from . import _gap  # noqa: E402
_gap.install(_sys.modules[__name__])
from . import _extra  # noqa: E402
_extra.install(_sys.modules[__name__])
from . import _composed  # noqa: E402
_composed.install(_sys.modules[__name__])
