"""The last names of the API-names list: simple ones composed from ctorch ops (narrow_copy, gradient,
histogram, i0, frombuffer, LazyLinear, CTCLoss, ConvTranspose3d, ...) and, for what ctorch does not have
(complex and quantized dtypes, sparse layouts, named tensors), stand-ins that raise a clear error when used
instead of letting a program run on with a wrong result."""
import builtins as _b
import math as _math

from .autograd.function import Function


def _torch():
    import ctorch
    return ctorch


class _Unsupported:
    """A dtype or layout name ctorch lacks: passing it to any function raises NotImplementedError."""

    def __init__(self, name, what):
        self._name = name
        self._ctorch_unsupported = "ctorch has no %s: torch.%s is not supported" % (what, name)
        self.is_complex = what.startswith("complex")
        self.is_floating_point = False

    def __repr__(self):
        return "torch." + self._name


def _refuse(name, what):
    def f(*args, **kwargs):
        raise NotImplementedError("ctorch has no %s: %s is not supported" % (what, name))
    f.__name__ = f.__qualname__ = name.split(".")[-1]
    f._ctorch_unsupported = True  # the API-names suite counts it as missing
    return f


def _could_not_run(op, what):
    def f(self, *args, **kwargs):
        raise NotImplementedError("Could not run 'aten::%s' with arguments from the 'CPU' backend. ctorch has no %s."
                                  % (op, what))
    f.__name__ = op
    f._ctorch_unsupported = True  # the API-names suite counts it as missing
    return f


# ---- simple functions ------------------------------------------------------------------------------------
class _NoDerivative(Function):
    @staticmethod
    def forward(ctx, x, value, op):
        ctx.op = op
        return value

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("derivative for aten::%s is not implemented" % ctx.op)


def narrow_copy(input, dim, start, length, *, out=None):
    r = input.detach().narrow(dim, start, length).clone()
    T = _torch()
    if input.requires_grad and T.is_grad_enabled():
        r = _NoDerivative.apply(input, r, "narrow_copy")  # PyTorch has no derivative for it
    if out is not None:
        out.resize_(r.shape).copy_(r)
        return out
    return r


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """numpy.gradient's rule: central differences inside, one-sided (first or second order) at the edges"""
    T = _torch()
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % input.dim() for d in dims]
    sp = spacing if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(sp) != len(dims):
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           "arguments to have the same length, but got a spacing argument of length %d and a dim "
                           "argument of length %d." % (len(sp), len(dims)))
    outs = []
    for d, h in zip(dims, sp):
        if isinstance(h, T.Tensor):
            if h.dim() == 0:
                h = float(h)
            else:
                raise NotImplementedError("ctorch: torch.gradient with coordinate tensors as spacing is not "
                                          "implemented; give scalar spacings")
        n = input.shape[d]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
        x = input if input.is_floating_point() else input.to(T.get_default_dtype())
        sl = lambda a, b: x.narrow(d, a, b - a)  # noqa: E731
        mid = (sl(2, n) - sl(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / h
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
        else:
            first = (-1.5 * sl(0, 1) + 2 * sl(1, 2) - 0.5 * sl(2, 3)) / h
            last = (0.5 * sl(n - 3, n - 2) - 2 * sl(n - 2, n - 1) + 1.5 * sl(n - 1, n)) / h
        outs.append(T.cat([first, mid, last], d))
    return tuple(outs)


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    T = _torch()
    if not input.is_floating_point():
        raise RuntimeError("\"histogramdd\" not implemented for '%s'" % {
            "torch.int64": "Long", "torch.int32": "Int", "torch.int16": "Short", "torch.int8": "Char",
            "torch.uint8": "Byte", "torch.bool": "Bool"}.get(str(input.dtype), str(input.dtype)))
    x = input.reshape(-1)
    if isinstance(bins, T.Tensor):
        edges = bins.to(input.dtype)
    else:
        if range is None:
            lo = float(x.min()) if x.numel() else 0.0
            hi = float(x.max()) if x.numel() else 0.0
        else:
            lo, hi = float(range[0]), float(range[1])
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        if lo > hi:
            raise RuntimeError("torch.histogram: min should not exceed max, but got min %s max %s" % (lo, hi))
        edges = T.linspace(lo, hi, bins + 1, dtype=input.dtype)
    nb = edges.numel() - 1
    # bin i holds edges[i] <= x < edges[i+1]; the last bin also holds x == edges[-1]
    idx = T.searchsorted(edges, x, right=True) - 1
    idx = T.where(x == edges[-1], T.full_like(idx, nb - 1), idx)
    ok = (idx >= 0) & (idx < nb)
    w = weight.reshape(-1).to(input.dtype) if weight is not None else T.ones_like(x)
    hist = T.zeros(nb, dtype=input.dtype).index_add_(0, T.where(ok, idx, T.zeros_like(idx)),
                                                    T.where(ok, w, T.zeros_like(w)))
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    from collections import namedtuple
    return namedtuple("histogram", ["hist", "bin_edges"])(hist, edges)


def i0(input, *, out=None):
    """modified Bessel function I0: power series up to |x| = 20, the asymptotic series e^x / sqrt(2 pi x) (...)
    beyond; both branches are differentiable ctorch ops (float64 error ~1e-14 relative)."""
    T = _torch()
    x = input if input.is_floating_point() else input.to(T.get_default_dtype())
    ax = x.abs()
    small = ax.clamp(max=20.0)
    q = small * small / 4
    term = T.ones_like(q)
    s = T.ones_like(q)
    for k in _b.range(1, 90):
        term = term * q / (k * k)
        s = s + term
    big = ax.clamp(min=20.0)
    a = T.ones_like(big)
    c = T.ones_like(big)
    for k in _b.range(1, 16):
        c = c * ((2 * k - 1) ** 2) / (k * 8 * big)
        a = a + c
    large = big.exp() / (2 * _math.pi * big).sqrt() * a
    r = T.where(ax <= 20.0, s, large)
    if out is not None:
        out.resize_(r.shape).copy_(r)
        return out
    return r


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    import numpy as np
    T = _torch()
    npdt = {T.float32: np.float32, T.float64: np.float64, T.float16: np.float16, T.int64: np.int64,
            T.int32: np.int32, T.int16: np.int16, T.int8: np.int8, T.uint8: np.uint8, T.bool: np.bool_}.get(dtype)
    if npdt is None:
        raise TypeError("frombuffer(): dtype %s is not supported by ctorch" % (dtype,))
    nbytes = len(memoryview(buffer).cast("B"))
    item = np.dtype(npdt).itemsize
    if offset < 0 or offset > nbytes:
        raise ValueError("both buffer length (%d) and offset (%d) must be greater than or equal to zero and offset "
                         "must be smaller than buffer length" % (nbytes, offset))
    if count <= 0 and (nbytes - offset) % item:
        raise ValueError("buffer length (%d bytes) after offset (%d bytes) must be a multiple of element size (%d)"
                         % (nbytes, offset, item))
    a = np.frombuffer(buffer, dtype=npdt, count=count, offset=offset)
    if not a.flags.writeable:  # ctorch needs writable memory to share; PyTorch warns and shares
        a = a.copy()
    t = T.from_numpy(a)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_dlpack(ext_tensor):
    import numpy as np
    T = _torch()
    if isinstance(ext_tensor, T.Tensor):
        return ext_tensor
    return T.from_numpy(np.from_dlpack(ext_tensor))


def set_flush_denormal(mode):
    """ctorch never flushes denormals: turning flushing off succeeds (True), turning it on is reported as not
    supported (False), PyTorch's answer where it cannot configure it."""
    return not mode


def set_default_tensor_type(t):
    T = _torch()
    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    name = name.split(".")[-1]
    table = {"FloatTensor": T.float32, "DoubleTensor": T.float64, "HalfTensor": T.float16,
             "BFloat16Tensor": T.bfloat16}
    if isinstance(t, str) and ".cuda." in t:
        raise TypeError("type %s not available. Torch not compiled with CUDA enabled." % t)
    if name not in table:
        raise TypeError("only floating-point types are supported as the default type")
    T.set_default_dtype(table[name])


class _FakeQuant(Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, qmin, qmax):
        import struct
        f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]  # noqa: E731
        scale = f32(scale)  # PyTorch keeps the scale, and its inverse, in float32
        q = (x * f32(1.0 / scale)).round() + zero_point
        ctx.save_for_backward((q >= qmin) & (q <= qmax))
        return (q.clamp(qmin, qmax) - zero_point) * scale

    @staticmethod
    def backward(ctx, g):
        mask, = ctx.saved_tensors
        return g * mask.to(g.dtype), None, None, None, None


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    T = _torch()
    if quant_min > quant_max:
        # PyTorch's message, with the spaces of its source line break
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")
    if isinstance(scale, T.Tensor):
        scale = float(scale)
    if isinstance(zero_point, T.Tensor):
        zero_point = int(zero_point)
    if not (quant_min <= zero_point <= quant_max):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    return _FakeQuant.apply(input, scale, zero_point, quant_min, quant_max)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """self[..., index[i], ...] op= source[..., i, ...]: scatter_reduce_ with the index spread over source"""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got %s." % reduce)
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    d = dim % _b.max(self.dim(), 1)
    shape = [1] * source.dim()
    shape[d] = index.numel()
    idx = index.reshape(shape).expand(source.shape)
    return self.scatter_reduce_(d, idx, source, reduce, include_self=include_self)


def index_reduce(self, dim, index, source, reduce, *, include_self=True):
    return index_reduce_(self.clone(), dim, index, source, reduce, include_self=include_self)


def as_subclass(self, cls):
    """the same data and history under another Tensor subclass (an alias node in the graph)"""
    T = _torch()
    if not (isinstance(cls, type) and issubclass(cls, T.Tensor)):
        raise TypeError("as_subclass(): argument 'cls' must be a subclass of torch.Tensor")
    r = self.view_as(self)
    r.__class__ = cls
    return r


def _names(self):
    return (None,) * self.dim()


def _rename(self, *names, **rename_map):
    if rename_map or any(n is not None for n in names):
        raise NotImplementedError("ctorch has no named tensors: rename() with names is not supported")
    return self.view_as(self)


def _align(op):
    def f(self, *args, **kwargs):
        if self.dim() == 0:
            raise NotImplementedError("ctorch has no named tensors: %s is not supported" % op)
        raise RuntimeError("%s: All input dims must be named. Found unnamed dim at index 0 of Tensor%s" % (
            "align_to", list(self.names)))
    f.__name__ = op
    return f


def _to_dense(self, dtype=None):
    return self if dtype is None else self.to(dtype)


def _dequantize(self):
    if not self.is_floating_point():
        raise NotImplementedError("ctorch has no quantized tensors: dequantize() of %s" % self.dtype)
    return self


# ---- nn --------------------------------------------------------------------------------------------------
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """CTC by the forward (alpha) recursion in log space over time steps, differentiated by autograd.
    log_probs [T, N, C] (or [T, C]), targets [N, S] padded or 1-d concatenated."""
    T = _torch()
    unb = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unb else log_probs
    Tn, N, C = lp.shape
    il = [int(v) for v in (input_lengths.reshape(-1).tolist() if isinstance(input_lengths, T.Tensor)
                           else ([input_lengths] if isinstance(input_lengths, int) else input_lengths))]
    tl = [int(v) for v in (target_lengths.reshape(-1).tolist() if isinstance(target_lengths, T.Tensor)
                           else ([target_lengths] if isinstance(target_lengths, int) else target_lengths))]
    tg = targets.reshape(1, -1) if unb and targets.dim() == 1 else targets
    if len(il) != N or len(tl) != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError("%s is not a valid value for reduction" % reduction)
    # unreachable states hold a large finite negative rather than -inf: logsumexp's gradient over all -inf is
    # nan, over these it is finite and is multiplied by an exactly zero weight downstream
    neg_inf = -1e30
    losses = []
    off = 0
    for b in _b.range(N):
        L = tl[b]
        if tg.dim() == 1:
            lab = tg[off:off + L].tolist()
            off += L
        else:
            lab = tg[b, :L].tolist()
        ext = [blank]
        for c in lab:
            ext += [int(c), blank]
        S = len(ext)
        if il[b] > Tn:
            raise RuntimeError("Expected input_lengths to have value at most %d, but got value %d" % (Tn, il[b]))
        ext_t = T.tensor(ext, dtype=T.int64)
        # transitions: from s, s-1, and s-2 when ext[s] is a label different from ext[s-2]
        skip = [s >= 2 and ext[s] != blank and ext[s] != ext[s - 2] for s in _b.range(S)]
        skip_mask = T.tensor(skip)
        emit = lp[:il[b], b].index_select(1, ext_t)  # [T_b, S]
        init = T.full((S,), neg_inf, dtype=lp.dtype)
        alpha = T.where(T.arange(S) < 2, emit[0] if il[b] > 0 else init, init) if il[b] > 0 else init
        ninf1 = T.full((1,), neg_inf, dtype=lp.dtype)
        ninf2 = T.full((2,), neg_inf, dtype=lp.dtype)
        for t in _b.range(1, il[b]):
            a1 = T.cat([ninf1, alpha[:-1]])
            a2 = T.where(skip_mask, T.cat([ninf2, alpha[:-2]]), T.full_like(alpha, neg_inf))
            alpha = T.logsumexp(T.stack([alpha, a1, a2]), 0) + emit[t]
        ends = alpha[S - 2:] if S >= 2 else alpha[S - 1:]
        ll = T.logsumexp(ends, 0)
        loss = T.where(ll < -1e29, T.full_like(ll, _math.inf), -ll)  # no alignment: PyTorch's inf
        if zero_infinity:
            loss = T.where(T.isinf(loss), T.zeros_like(loss), loss)
        losses.append(loss)
    out = T.stack(losses)
    if reduction == "none":
        return out.squeeze(0) if unb else out
    if reduction == "sum":
        return out.sum()
    tlt = T.tensor([_b.max(v, 1) for v in tl], dtype=out.dtype)
    return (out / tlt).mean()


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """the adjoint of conv3d, composed per depth tap from conv_transpose2d; each tap's output slices land at
    depth i*stride + kd*dilation (zeros interleaved by stride), then the padding is cropped."""
    T = _torch()
    F = T.nn.functional
    from ._nd3 import _triple, _batched
    x, unb = _batched(input, "conv_transpose3d")
    s, p = _triple(stride, "stride"), _triple(padding, "padding")
    op, d = _triple(output_padding, "output_padding"), _triple(dilation, "dilation")
    if weight.dim() != 5 or weight.shape[0] != x.shape[1]:
        raise RuntimeError("Given transposed=1, weight of size %s, expected input%s to have %d channels, but got %d "
                           "channels instead" % (list(weight.shape), list(x.shape), weight.shape[0], x.shape[1]))
    if any(op[i] >= _b.max(s[i], d[i]) for i in _b.range(3)):
        raise RuntimeError("output padding must be smaller than either stride or dilation")
    N, Cin, D, H, W = x.shape
    kD = weight.shape[2]
    full = (D - 1) * s[0] + d[0] * (kD - 1) + 1 + op[0]
    xs = x.transpose(1, 2).reshape(N * D, Cin, H, W)
    out = None
    for kd in _b.range(kD):
        y = F.conv_transpose2d(xs, weight[:, :, kd], None, s[1:], p[1:], op[1:], groups, d[1:])
        Cout, Ho, Wo = y.shape[1], y.shape[2], y.shape[3]
        y = y.reshape(N, D, 1, Cout, Ho, Wo)
        if s[0] > 1:
            y = T.cat([y, T.zeros(N, D, s[0] - 1, Cout, Ho, Wo, dtype=y.dtype)], 2)
        y = y.reshape(N, D * s[0], Cout, Ho, Wo)[:, :(D - 1) * s[0] + 1]
        front = kd * d[0]
        back = full - front - y.shape[1]
        y = F.pad(y.permute(0, 2, 3, 4, 1), (front, back)).permute(0, 4, 1, 2, 3)
        out = y if out is None else out + y
    out = out[:, p[0]:full - p[0]].transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if unb else out


def install(torch):
    nn = torch.nn
    F = nn.functional
    for alias, name in (("cfloat", "complex64"), ("cdouble", "complex128"), ("chalf", "complex32")):
        if getattr(torch, name, None) is None:
            setattr(torch, name, _Unsupported(name, "complex dtypes"))
        if getattr(torch, alias, None) is None:
            setattr(torch, alias, getattr(torch, name))  # aliases, as in PyTorch
    for name, what in (("quint8", "quantized dtypes"), ("qint8", "quantized dtypes"), ("qint32", "quantized dtypes"),
                       ("quint4x2", "quantized dtypes"), ("sparse_csr", "sparse layouts"),
                       ("sparse_csc", "sparse layouts"), ("sparse_bsr", "sparse layouts"),
                       ("sparse_bsc", "sparse layouts")):
        if getattr(torch, name, None) is None:
            setattr(torch, name, _Unsupported(name, what))
    # sparse_coo existed as a plain layout name; it is refused the same way now
    torch.sparse_coo = _Unsupported("sparse_coo", "sparse layouts")
    for name, what in (("complex", "complex dtypes"), ("view_as_real", "complex dtypes"),
                       ("view_as_complex", "complex dtypes"), ("polar", "complex dtypes"),
                       ("sparse_coo_tensor", "sparse tensors"), ("sparse_csr_tensor", "sparse tensors"),
                       ("quantize_per_tensor", "quantized tensors"), ("quantize_per_channel", "quantized tensors"),
                       ("quantize_per_tensor_dynamic", "quantized tensors")):
        if not hasattr(torch, name):
            setattr(torch, name, _refuse("torch." + name, what))
    simple = {"narrow_copy": narrow_copy, "gradient": gradient, "histogram": histogram, "i0": i0,
              "frombuffer": frombuffer, "from_dlpack": from_dlpack, "set_flush_denormal": set_flush_denormal,
              "set_default_tensor_type": set_default_tensor_type,
              "fake_quantize_per_tensor_affine": fake_quantize_per_tensor_affine, "index_reduce": index_reduce}
    for name, fn in simple.items():
        if not hasattr(torch, name):
            setattr(torch, name, fn)
    Tn = torch.Tensor
    methods = {"narrow_copy": narrow_copy, "i0": i0, "histogram": histogram, "index_reduce_": index_reduce_,
               "index_reduce": index_reduce, "as_subclass": as_subclass, "rename": _rename,
               "refine_names": _refuse("Tensor.refine_names", "named tensors"), "align_to": _align("align_to"),
               "align_as": _align("align_as"), "to_dense": _to_dense, "dequantize": _dequantize,
               "values": _could_not_run("values", "sparse tensors"),
               "coalesce": _could_not_run("is_coalesced", "sparse tensors"),
               "crow_indices": _could_not_run("crow_indices", "sparse tensors"),
               "col_indices": _could_not_run("col_indices", "sparse tensors"),
               "row_indices": _could_not_run("row_indices", "sparse tensors"),
               "sparse_mask": _could_not_run("sparse_mask", "sparse tensors"),
               "int_repr": _could_not_run("int_repr", "quantized tensors"),
               "to_sparse": _refuse("Tensor.to_sparse", "sparse tensors"),
               "to_sparse_coo": _refuse("Tensor.to_sparse_coo", "sparse tensors"),
               "to_sparse_csr": _refuse("Tensor.to_sparse_csr", "sparse tensors")}
    for name, fn in methods.items():
        if not hasattr(Tn, name):
            setattr(Tn, name, fn)
    if not hasattr(Tn, "names"):
        Tn.names = property(_names)
    if not hasattr(F, "ctc_loss"):
        F.ctc_loss = ctc_loss
    if not hasattr(F, "conv_transpose3d"):
        F.conv_transpose3d = conv_transpose3d
        torch.conv_transpose3d = conv_transpose3d
    _install_modules(torch)


def _install_modules(torch):
    nn = torch.nn
    from .nn.module import Module
    from .nn.layers import _ConvNd, Linear
    from .nn.parameter import Parameter
    from . import _C

    class CTCLoss(Module):
        def __init__(self, blank=0, reduction="mean", zero_infinity=False):
            super().__init__()
            self.blank, self.reduction, self.zero_infinity = blank, reduction, zero_infinity

        def forward(self, log_probs, targets, input_lengths, target_lengths):
            return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                            self.zero_infinity)

    class ConvTranspose3d(_ConvNd):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                     bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
            if padding_mode != "zeros":
                raise ValueError('Only "zeros" padding mode is supported for ConvTranspose3d')
            super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation, True,
                             output_padding, groups, bias, padding_mode, dtype)

        def forward(self, input, output_size=None):
            if output_size is not None:
                raise NotImplementedError("ctorch: ConvTranspose3d(output_size=...) is not implemented")
            return conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                    self.groups, self.dilation)

    bn_base = nn.BatchNorm3d if hasattr(nn, "BatchNorm3d") else nn.BatchNorm2d

    class SyncBatchNorm(bn_base):
        def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                     process_group=None, device=None, dtype=None):
            super().__init__(num_features, eps, momentum, affine, track_running_stats)
            self.process_group = process_group

        def forward(self, input):
            # as in PyTorch: synchronised batch norm runs on GPUs only
            if not input.is_cuda:
                raise ValueError("SyncBatchNorm expected input tensor to be on GPU")
            return super().forward(input)

        @classmethod
        def convert_sync_batchnorm(cls, module, process_group=None):
            return module

    class LazyLinear(Linear):
        """in_features taken from the first input; the parameters are drawn then, as PyTorch does."""

        def __init__(self, out_features, bias=True, device=None, dtype=None):
            Module.__init__(self)
            self.in_features, self.out_features = 0, out_features
            self._lazy_dtype = dtype
            self.weight = Parameter(_C.empty(0))
            if bias:
                self.bias = Parameter(_C.empty(0))
            else:
                self.register_parameter("bias", None)

        def forward(self, input):
            if self.in_features == 0:
                self.in_features = input.shape[-1]
                dt = self._lazy_dtype
                self.weight = Parameter(_C.empty((self.out_features, self.in_features), dtype=dt))
                if self.bias is not None:
                    self.bias = Parameter(_C.empty(self.out_features, dtype=dt))
                self.reset_parameters()
                self.__class__ = Linear
            return Linear.forward(self, input)

    for cls in (CTCLoss, ConvTranspose3d, SyncBatchNorm, LazyLinear):
        if not hasattr(nn, cls.__name__):
            setattr(nn, cls.__name__, cls)
