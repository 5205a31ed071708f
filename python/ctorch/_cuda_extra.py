"""torch.cuda's graphs and streams, torch.autocast and the TF32 switches over the C library's CUDA backend.

CUDA graphs: `with torch.cuda.graph(g):` records every launch of the block on the device instead of running it
(ct_cuda_graph_begin / ct_cuda_graph_end), and g.replay() runs them again on the same memory. PyTorch's rules
hold: warm the step up eagerly first, keep inputs in fixed tensors and copy new data into them, read the outputs
captured in the block, and do no host read (.item(), print, .cpu()) inside it; such a read raises and the capture
is discarded. Host-side numbers (a learning rate, Adam's bias corrections) are frozen at capture, as in PyTorch
without capturable=True.

Streams: the backend orders all of a device's work on one stream (plus side streams of its own that it joins
itself), so torch.cuda.Stream, torch.cuda.stream(s) and wait_stream keep PyTorch programs running with the same
ordering; they choose no other stream.

Autocast: torch.autocast("cuda", dtype=torch.bfloat16) is the C library's bf16 mode with bfloat16 activations
(ct_cuda_set_autocast_bf16 + ct_cuda_set_autocast_bf16_outputs: matrix products in bfloat16, the float32 list
upcast). Its lower-precision list is PyTorch's matrix products (mm, addmm, bmm, baddbmm, matmul, linear);
convolutions are not on it yet and stay float32 (PyTorch would return bfloat16). Other dtypes and CPU autocast
are refused rather than run in another precision.
"""
import functools as _functools
import gc as _gc
import warnings as _warnings

from . import _C


def _no_cuda():
    if _C._cuda_device_count() == 0:
        raise AssertionError("Torch not compiled with CUDA enabled")


def _index(device):
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    from . import device as _device
    return _device(device).index or 0


# ---------------------------------------------------------------- streams and events
class Stream:
    """torch.cuda.Stream: ctorch's device work is ordered on the device's own stream; this object names it."""

    def __new__(cls, device=None, priority=0, **kwargs):
        _no_cuda()
        s = super().__new__(cls)
        s.device_index = _index(device)
        s.priority = priority
        return s

    @property
    def device(self):
        from . import device as _device
        return _device("cuda", self.device_index)

    def wait_stream(self, stream):
        pass  # one order per device: nothing to wait for

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self):
        self.synchronize()
        return True

    def synchronize(self):
        _C._cuda_synchronize(self.device_index)

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device_index == self.device_index

    def __hash__(self):
        return hash(("cuda_stream", self.device_index))

    def __repr__(self):
        return "<torch.cuda.Stream device=cuda:%d cuda_stream=0x0>" % self.device_index


class Event:
    """torch.cuda.Event: recorded in the device's order; synchronize() waits for the device."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        _no_cuda()
        self._device = None

    def record(self, stream=None):
        self._device = stream.device_index if stream is not None else 0

    def wait(self, stream=None):
        pass

    def query(self):
        self.synchronize()
        return True

    def synchronize(self):
        if self._device is not None:
            _C._cuda_synchronize(self._device)

    def elapsed_time(self, end_event):
        raise RuntimeError("ctorch: torch.cuda.Event timing is not supported; time with torch.cuda.synchronize() "
                           "and time.perf_counter()")


def current_stream(device=None):
    return Stream(device)


def default_stream(device=None):
    return Stream(device)


class stream:  # noqa: N801  (PyTorch's name)
    """torch.cuda.stream(s): the block's work goes where all of the device's work goes (see Stream)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


# ---------------------------------------------------------------- graphs
class CUDAGraph:
    """torch.cuda.CUDAGraph: capture_begin() / capture_end() around a step, then replay()."""

    def __new__(cls, *args, **kwargs):
        _no_cuda()
        g = super().__new__(cls)
        g._graph = None
        g._device = None
        return g

    def capture_begin(self, pool=None, capture_error_mode="global"):
        if self._graph is not None:
            raise RuntimeError("This CUDAGraph instance was already captured; call reset() before capturing again")
        _C._cuda_graph_begin(0)
        self._device = 0

    def capture_end(self, _ok=True):
        if self._device is None:
            raise RuntimeError("capture_end() without capture_begin()")
        dev, self._device = self._device, None
        self._graph = _C._cuda_graph_end(dev, _ok)

    def replay(self):
        if self._graph is None:
            raise RuntimeError("CUDAGraph.replay(): the graph was not captured (or the capture failed)")
        _C._cuda_graph_replay(self._graph)

    def reset(self):
        if self._graph is not None:
            _C._cuda_graph_reset(self._graph)
        self._graph = None

    def pool(self):
        return (0, id(self))

    def num_nodes(self):
        """the launches and copies recorded (ctorch's addition; 0 before a capture)"""
        return _C._cuda_graph_nodes(self._graph) if self._graph is not None else 0

    def enable_debug_mode(self):
        pass

    def debug_dump(self, path):
        raise RuntimeError("ctorch: CUDAGraph.debug_dump is not supported; CT_CUDA_GRAPH_NODES=1 lists the nodes")


def graph_pool_handle():
    return (0, 0)


def is_current_stream_capturing():
    return _C._cuda_is_capturing(0)


class graph:  # noqa: N801  (PyTorch's name)
    """with torch.cuda.graph(g): the block is recorded into g (nothing runs), then g.replay() runs it."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.cuda_graph = cuda_graph

    def __enter__(self):
        _C._cuda_synchronize(0)
        _gc.collect()  # as PyTorch: tensors freed by the collector mid-capture would be freed into the graph pool
        self.cuda_graph.capture_begin()

    def __exit__(self, exc_type, exc, tb):
        self.cuda_graph.capture_end(_ok=exc_type is None)
        return False


# ---------------------------------------------------------------- memory and the current device
def _stats(device):
    if _C._cuda_device_count() == 0:
        return (0, 0, 0, 0)  # PyTorch without CUDA answers 0
    return _C._cuda_memory_stats(_index(device))


def memory_allocated(device=None):
    """bytes held by tensors on the device (the caching allocator's blocks in use)"""
    return _stats(device)[0]


def max_memory_allocated(device=None):
    return _stats(device)[2]


def memory_reserved(device=None):
    """bytes the caching allocator holds from the driver: in use plus cached"""
    s = _stats(device)
    return s[0] + s[1]


def empty_cache():
    if _C._cuda_device_count() > 0:
        for i in range(_C._cuda_device_count()):
            _C._cuda_empty_cache(i)


def reset_peak_memory_stats(device=None):
    _no_cuda()
    _C._cuda_reset_peak(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats


class _CudaDeviceProperties:
    """torch.cuda.get_device_properties(d): name, total_memory (bytes), major, minor, multi_processor_count"""

    def __init__(self, name, total_memory, major, minor, multi_processor_count):
        self.name, self.total_memory = name, total_memory
        self.major, self.minor, self.multi_processor_count = major, minor, multi_processor_count
        self.is_integrated, self.is_multi_gpu_board = False, False

    def __repr__(self):
        return ("_CudaDeviceProperties(name='%s', major=%d, minor=%d, total_memory=%dMB, multi_processor_count=%d)" %
                (self.name, self.major, self.minor, self.total_memory // (1024 * 1024), self.multi_processor_count))


def _checked_index(device):
    _no_cuda()
    i = _index(device)
    if i < 0 or i >= _C._cuda_device_count():
        raise AssertionError("Invalid device id")
    return i


def get_device_properties(device):
    return _CudaDeviceProperties(*_C._cuda_device_properties(_checked_index(device)))


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


def mem_get_info(device=None):
    """(free, total) bytes of the device as the driver sees them now"""
    return _C._cuda_mem_get_info(_checked_index(device))


def set_device(device):
    """ctorch's current CUDA device is device 0 ("cuda" means "cuda:0"); choosing it is accepted, another
    one is refused rather than silently ignored."""
    _no_cuda()
    i = _index(device)
    if i < 0:
        return  # PyTorch: a negative index is a no-op
    if i >= _C._cuda_device_count():
        raise RuntimeError("CUDA error: invalid device ordinal")
    if i != 0:
        raise RuntimeError("ctorch: the current CUDA device is cuda:0; name other devices explicitly "
                           "(tensor.to('cuda:%d'))" % i)


class device:  # noqa: N801  (PyTorch's name)
    """with torch.cuda.device(d): set_device(d) for the block (device 0 only; see set_device)"""

    def __init__(self, device):
        self.idx = _index(device)

    def __enter__(self):
        set_device(self.idx)
        return self

    def __exit__(self, *exc):
        return False


# ---------------------------------------------------------------- autocast and TF32
class autocast:  # noqa: N801  (PyTorch's name)
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None); also a decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        from . import bfloat16, float16
        if not isinstance(device_type, str):
            raise ValueError("Expected `device_type` of type `str`, got: `%s`" % type(device_type))
        self.device_type = device_type
        self.enabled = bool(enabled)
        if device_type == "cuda":
            self.fast_dtype = dtype if dtype is not None else float16
        elif device_type == "cpu":
            self.fast_dtype = dtype if dtype is not None else bfloat16
        else:
            raise RuntimeError("User specified an unsupported autocast device_type '%s'" % device_type)
        if not self.enabled:
            return
        if device_type == "cpu":
            raise RuntimeError("ctorch: autocast on the CPU is not supported (its operations would run in float32, "
                               "not PyTorch's bfloat16); use torch.autocast('cuda', dtype=torch.bfloat16) or "
                               "enabled=False")
        if _C._cuda_device_count() == 0:
            _warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
            self.enabled = False
            return
        if self.fast_dtype is not bfloat16:
            raise RuntimeError("ctorch: autocast on CUDA supports dtype=torch.bfloat16 only (got %s)" %
                               self.fast_dtype)

    def __enter__(self):
        self._prev = _C._cuda_autocast_bf16() if self.device_type == "cuda" else None
        if self.device_type == "cuda" and (self.enabled or self._prev[0]):
            _C._cuda_set_autocast_bf16(self.enabled, self.enabled)
        return self

    def __exit__(self, *exc):
        if self._prev is not None and (self.enabled or self._prev[0]):
            _C._cuda_set_autocast_bf16(*self._prev)
        return False

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


def is_autocast_enabled():
    return _C._cuda_autocast_bf16()[1]


def is_bf16_supported():
    return _C._cuda_device_count() > 0 and get_device_capability()[0] >= 8  # bfloat16 tensor cores


def get_autocast_gpu_dtype():
    from . import bfloat16, float16
    return bfloat16 if _C._cuda_autocast_bf16()[1] else float16


class _Matmul:
    """torch.backends.cuda.matmul: allow_tf32 is the C library's switch (default False, as PyTorch)"""

    @property
    def allow_tf32(self):
        return _C._cuda_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, on):
        _C._cuda_set_allow_tf32(bool(on))

    allow_bf16_reduced_precision_reduction = True
    allow_fp16_reduced_precision_reduction = True


class _Cudnn:
    """torch.backends.cudnn: allow_tf32 is the C library's switch for float32 convolutions (PyTorch's default True,
    set when ctorch is imported); deterministic / benchmark are accepted and change nothing (ctorch's CUDA
    convolutions pick one algorithm per shape by cuDNN's heuristics)."""

    deterministic = False
    benchmark = False
    enabled = True

    def __init__(self):
        _C._cudnn_set_allow_tf32(True)

    @property
    def allow_tf32(self):
        return _C._cudnn_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, on):
        _C._cudnn_set_allow_tf32(bool(on))

    @staticmethod
    def is_available():
        return False


_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision):
    if precision not in _PRECISIONS:  # PyTorch warns and changes nothing
        _warnings.warn("%s is not one of 'highest', 'high', or 'medium'; the current setFloat32MatmulPrecision call "
                       "has no effect." % precision)
        return
    _C._cuda_set_allow_tf32(precision != "highest")


def get_float32_matmul_precision():
    return "high" if _C._cuda_allow_tf32() else "highest"
