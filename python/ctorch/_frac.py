"""Fractional max pooling (F.fractional_max_pool2d/3d, nn.FractionalMaxPool2d/3d) and torch.histogramdd,
composed from ctorch ops, with PyTorch 1.13's semantics: the same random window offsets (drawn with
torch.rand from the global stream, or taken from `_random_samples`), the same bin edges, the same messages."""
import builtins as _b
import math as _math


def _torch():
    import ctorch
    return ctorch


_CPP_NAMES = {"torch.float32": "Float", "torch.float64": "Double", "torch.float16": "Half",
              "torch.bfloat16": "BFloat16", "torch.int64": "Long", "torch.int32": "Int", "torch.int16": "Short",
              "torch.int8": "Char", "torch.uint8": "Byte", "torch.bool": "Bool"}


def _cpp(dt):
    return _CPP_NAMES.get(str(dt), str(dt))


def _return_type(name, fields):
    """A tuple with named fields printed as PyTorch prints torch.return_types.<name>."""
    def __new__(cls, *vals):
        return tuple.__new__(cls, vals)

    def __repr__(self):
        return "torch.return_types.%s(\n%s)" % (name, ",\n".join("%s=%r" % (f, v) for f, v in zip(fields, self)))
    ns = {"__new__": __new__, "__repr__": __repr__, "__slots__": ()}
    for i, f in enumerate(fields):
        ns[f] = property(lambda s, i=i: s[i])
    return type(name, (tuple,), ns)


# ---- fractional max pooling ------------------------------------------------------------------------------
def _ints(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _starts(T, s, in_size, out_size, pool):
    """Window starts (B, C, out_size) for the per-plane samples s (B, C), computed in s's dtype as ATen's
    generate_intervals does: int((i + u) * alpha) - int(u * alpha), the last window flush with the end."""
    B, C = s.shape
    if out_size <= 0:
        return T.zeros((B, C, 0), dtype=T.int64)
    last = T.full((B, C, 1), in_size - pool, dtype=T.int64)
    if out_size == 1:
        return last
    # alpha rounded to the samples' dtype before use, as the C++ scalar_t division is
    alpha = T.tensor(float(in_size - pool), dtype=s.dtype) / T.tensor(float(out_size - 1), dtype=s.dtype)
    i = T.arange(out_size - 1, dtype=s.dtype)
    u = s.unsqueeze(-1)
    seq = ((i + u) * alpha).trunc().to(T.int64) - (u * alpha).trunc().to(T.int64)
    # a sample outside [0, 1) is not refused by PyTorch; clamping keeps every window inside the input
    return T.cat([seq.clamp(0, _b.max(in_size - pool, 0)), last], -1)


def _frac_pool(name, nd, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    T = _torch()
    if output_size is None and output_ratio is None:
        raise ValueError("%s requires specifying either an output_size or an output_ratio" % name)
    if output_size is None:
        r = _ints(output_ratio, nd)
        output_size = [int(input.size(d - nd) * r[d]) for d in range(nd)]
    if _random_samples is None:
        n_batch = 1 if input.dim() == nd + 1 else input.size(0)
        _random_samples = T.rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype, device=input.device)
    k, o = _ints(kernel_size, nd), _ints(output_size, nd)
    three = "tuple of three Ints" if nd == 3 else "tuple of Ints"
    where = name if nd == 2 else name + "_out"
    if len(k) != nd:
        raise RuntimeError("%s: kernel_size must either be a single Int or %s" % (name, three))
    if len(o) != nd:
        raise RuntimeError("%s: output_size must either be a single Int or %s" % (name, three))
    k, o = tuple(int(v) for v in k), tuple(int(v) for v in o)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError("%s(): Expected %dD or %dD tensor, but got: %s" % (where, nd + 1, nd + 2, list(input.shape)))
    batched = input.dim() == nd + 2
    for d in range(1 if batched else 0, input.dim()):
        if input.size(d) == 0:
            raise RuntimeError("%s(): Expected input to have non-zero size for non-batch dimensions, but got%s "
                               "with dimension %d being empty." % (where, list(input.shape), d))
    sizes = tuple(input.shape[-nd:])
    axes = ("height", "width") if nd == 2 else ("time", "time", "time")  # PyTorch 1.13 says "time" for all three
    for d in range(nd):
        if o[d] + k[d] - 1 > sizes[d]:
            kd, sd = (k[d], sizes[d]) if nd == 2 else (k[0], sizes[0])
            raise RuntimeError("%s(): pool %s %d too large relative to input %s %d" % (where, axes[d], kd, axes[d], sd))
    neg = [v for v in o if v < 0]
    if neg:
        raise RuntimeError("Trying to create tensor with negative dimension %d: %s"
                           % (neg[0], list(input.shape[:-nd]) + list(o)))
    if not input.is_floating_point() or input.dtype in (T.float16, T.bfloat16):
        raise RuntimeError('"%s_out_frame" not implemented for \'%s\'' % (name, _cpp(input.dtype)))
    if _random_samples.dtype != input.dtype:
        raise RuntimeError("expected scalar type %s but found %s" % (_cpp(input.dtype), _cpp(_random_samples.dtype)))
    x = input if batched else input.unsqueeze(0)
    B, C = x.shape[0], x.shape[1]
    # PyTorch reads the samples as a contiguous (N, C, nd) block whatever their shape
    if _random_samples.numel() < B * C * nd:
        raise RuntimeError("%s: _random_samples should hold %d values (N x C x %d), but holds %d"
                           % (name, B * C * nd, nd, _random_samples.numel()))
    s = _random_samples.detach().reshape(-1)[:B * C * nd].reshape(B, C, nd)
    # samples index the dimensions from the last backwards in 2-d (w, h) and in order in 3-d (t, h, w)
    col = (lambda d: 1 - d) if nd == 2 else (lambda d: d)
    starts = [_starts(T, s[:, :, col(d)], sizes[d], o[d], k[d]) for d in range(nd)]
    # flat index into the plane of every window element: (B, C, o..., k...)
    strides = [1] * nd
    for d in range(nd - 2, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    idx = None
    for d in range(nd):
        shp = [B, C] + [1] * (2 * nd)
        shp[2 + d] = o[d]
        st = starts[d].reshape(shp)
        kshp = [1] * (2 + 2 * nd)
        kshp[2 + nd + d] = _b.max(k[d], 0)
        term = (st + T.arange(_b.max(k[d], 0)).reshape(kshp)) * strides[d]
        idx = term if idx is None else idx + term
    nwin = 1
    for v in k:
        nwin *= _b.max(v, 0)
    plane = 1
    for v in sizes:
        plane *= v
    if nwin == 0 or 0 in o or B == 0:
        # an empty window: PyTorch leaves -inf and the window's first position
        first = 0
        for d in range(nd):
            shp = [B, C] + [1] * nd
            shp[2 + d] = o[d]
            first = first + starts[d].reshape(shp) * strides[d]
        first = first.expand([B, C] + list(o)).contiguous()
        out = T.full([B, C] + list(o), -_math.inf, dtype=input.dtype)
        ind = first
    else:
        idx = idx.expand([B, C] + list(o) + [_b.max(v, 0) for v in k]).reshape(B, C, -1)
        vals = x.reshape(B, C, plane).gather(2, idx).reshape([B, C] + list(o) + [nwin])
        # PyTorch's kernel keeps the first of equal maxima and the last NaN of a window
        arg = vals.detach().argmax(-1, keepdim=True)
        nan = vals.detach().isnan()
        last_nan = (nwin - 1) - nan.flip(-1).to(T.uint8).argmax(-1, keepdim=True)
        arg = T.where(nan.any(-1, keepdim=True), last_nan, arg)
        out = vals.gather(-1, arg).squeeze(-1)  # the gradient goes to the index reported
        ind = idx.reshape([B, C] + list(o) + [nwin]).gather(-1, arg).squeeze(-1)
    if not batched:
        out, ind = out.squeeze(0), ind.squeeze(0)
    return (out, ind) if return_indices else out


def _frac_fn(nd, with_indices):
    name = "fractional_max_pool%dd" % nd

    def f(input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        return _frac_pool(name, nd, input, kernel_size, output_size, output_ratio, with_indices or return_indices,
                          _random_samples)
    f.__name__ = f.__qualname__ = name + ("_with_indices" if with_indices else "")
    return f


fractional_max_pool2d = _frac_fn(2, False)
fractional_max_pool2d_with_indices = _frac_fn(2, True)
fractional_max_pool3d = _frac_fn(3, False)
fractional_max_pool3d_with_indices = _frac_fn(3, True)


def _modules():
    from .nn.module import Module

    class _FractionalMaxPoolNd(Module):
        _nd = 2

        def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                     _random_samples=None):
            super().__init__()
            nd = self._nd
            self.kernel_size = _ints(kernel_size, nd)
            self.return_indices = return_indices
            self.register_buffer("_random_samples", _random_samples)
            self.output_size = _ints(output_size, nd) if output_size is not None else None
            self.output_ratio = _ints(output_ratio, nd) if output_ratio is not None else None
            if output_size is None and output_ratio is None:
                raise ValueError("%s requires specifying either an output size, or a pooling ratio"
                                 % type(self).__name__)
            if output_size is not None and output_ratio is not None:
                raise ValueError("only one of output_size and output_ratio may be specified")
            if self.output_ratio is not None:
                if not all(0 < r < 1 for r in self.output_ratio):
                    raise ValueError("output_ratio must be between 0 and 1 (got {})".format(output_ratio))

        def forward(self, input):
            fn = fractional_max_pool2d if self._nd == 2 else fractional_max_pool3d
            return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                      _random_samples=self._random_samples)

    class FractionalMaxPool2d(_FractionalMaxPoolNd):
        _nd = 2

    class FractionalMaxPool3d(_FractionalMaxPoolNd):
        _nd = 3

    return FractionalMaxPool2d, FractionalMaxPool3d


# ---- histogramdd -----------------------------------------------------------------------------------------
_histogramdd_t = _return_type("histogramdd", ("hist", "bin_edges"))


def histogramdd(input, bins=10, range=None, weight=None, density=False, *, out=None):
    T = _torch()
    P = "torch.histogramdd: "
    if out is not None:
        raise NotImplementedError("ctorch: histogramdd(out=...) is not supported")
    if not isinstance(input, T.Tensor):
        raise TypeError("histogramdd(): argument 'input' (position 1) must be Tensor, not %s" % type(input).__name__)
    if isinstance(bins, T.Tensor) and bins.dim() == 0:
        bins = int(bins)
    if not (isinstance(bins, int) or (isinstance(bins, (list, tuple)) and bins)):
        raise TypeError("histogramdd() received an invalid combination of arguments - got (Tensor, bins=%s), but "
                        "expected one of:\n * (Tensor input, int bins, tuple of floats range, Tensor weight, bool "
                        "density)\n * (Tensor input, tuple of ints bins, tuple of floats range, Tensor weight, bool "
                        "density)\n * (Tensor input, tuple of Tensors bins, tuple of floats range, Tensor weight, "
                        "bool density)\n" % type(bins).__name__)
    if input.dim() < 2:
        raise RuntimeError(P + "input tensor should have at least 2 dimensions")
    if not input.is_floating_point():
        raise RuntimeError("\"histogramdd\" not implemented for '%s'" % _cpp(input.dtype))
    N = input.shape[-1]
    pts = input.detach().reshape(-1, N)
    M = pts.shape[0]
    explicit = isinstance(bins, (list, tuple)) and _b.all(isinstance(b, T.Tensor) for b in bins)
    nbins = [bins] * N if isinstance(bins, int) else list(bins)
    if not explicit:
        for i, b in enumerate(nbins):
            if not isinstance(b, int):
                raise TypeError("histogramdd(): argument 'bins' must be tuple of ints, but found element of type %s "
                                "at pos %d" % (type(b).__name__, i + 1))
        nbins = nbins[:N]  # PyTorch 1.13 reads only the first N counts
    if len(nbins) != N:
        raise RuntimeError(P + "expected %d sequences of bin edges for a %d-dimensional histogram but got %d"
                           % (N, N, len(nbins)))
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(P + "if weight tensor is provided it should have the same shape as the input tensor "
                               "excluding its innermost dimension, but got input with shape %s and weight with "
                               "shape %s" % (list(input.shape), list(weight.shape)))
        if weight.dtype != input.dtype:
            raise RuntimeError(P + "if weight tensor is provided, input tensor and weight tensor should have the "
                               "same dtype, but got input(%s), and weight(%s)"
                               % (str(input.dtype)[6:].replace("float32", "float").replace("float64", "double"),
                                  str(weight.dtype)[6:].replace("float32", "float").replace("float64", "double")))
    if range is not None and len(range) != 2 * N:
        raise RuntimeError(P + "for a %d-dimensional histogram range should have %d elements, but got %d"
                           % (N, 2 * N, len(range)))
    edges = []
    for d in _b.range(N):
        if explicit:
            e = nbins[d]
            if e.dim() != 1:
                raise RuntimeError(P + "bins tensor should have one dimension, but got %d dimensions in the bins "
                                   "tensor for dimension %d" % (e.dim(), d))
            if e.dtype != input.dtype:
                nm = lambda t: {"torch.float32": "float", "torch.float64": "double"}.get(str(t), str(t)[6:])
                raise RuntimeError(P + "input tensor and bins tensors should have the same dtype, but got input with "
                                   "dtype %s and bins for dimension %d with dtype %s" % (nm(input.dtype), d, nm(e.dtype)))
            if e.numel() < 1:
                raise RuntimeError(P + "bins tensor should have at least 1 element, but got 0 elements in the bins "
                                   "tensor for dimension %d" % d)
            edges.append(e.detach())
            continue
        nb = int(nbins[d])
        if nb == 0:
            raise RuntimeError("torch.histogram(): bins must be > 0, but got 0 for dimension %d" % d)
        if nb < 0:
            raise RuntimeError(P + "bins tensor should have at least 1 element, but got 0 elements in the bins "
                               "tensor for dimension %d" % d)
        if range is not None:
            lo, hi = float(range[2 * d]), float(range[2 * d + 1])
        elif M == 0:
            lo, hi = 0.0, 1.0  # numpy's range for no data
        else:
            col = pts[:, d]
            lo, hi = float(col.min()), float(col.max())
        if lo > hi:
            raise RuntimeError(P + "min should not exceed max, but got min %s max %s for dimension %d"
                               % (_g(lo), _g(hi), d))
        if not (_math.isfinite(lo) and _math.isfinite(hi)):
            raise RuntimeError(P + "dimension %d's range [%s, %s] is not finite" % (d, _g(lo), _g(hi)))
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(T.linspace(lo, hi, nb + 1, dtype=input.dtype))
    shape = [e.numel() - 1 for e in edges]
    # bin of each coordinate: edges[i] <= x < edges[i+1], the last bin closed; outside (or NaN): dropped
    lin = T.zeros(M, dtype=T.int64)
    keep = T.ones(M, dtype=T.bool)
    stride = 1
    for d in _b.range(N - 1, -1, -1):
        e, x, nb = edges[d], pts[:, d].contiguous(), shape[d]
        pos = T.searchsorted(e, x, right=True) - 1
        pos = T.where(x == e[-1], T.full_like(pos, nb - 1), pos)
        keep = keep & (x >= e[0]) & (x <= e[-1]) & (pos >= 0) & (pos < nb)
        lin = lin + pos.clamp(0, _b.max(nb - 1, 0)) * stride
        stride *= _b.max(nb, 1)
    total = 1
    for v in shape:
        total *= v
    w = weight.detach().reshape(-1) if weight is not None else T.ones(M, dtype=input.dtype)
    hist = T.zeros(total, dtype=input.dtype)
    if total and M:
        hist.index_add_(0, lin[keep], w[keep])
    hist = hist.reshape(shape)
    if density:
        hist = hist / hist.sum()
        for d in _b.range(N):
            shp = [1] * N
            shp[d] = shape[d]
            hist = hist / (edges[d][1:] - edges[d][:-1]).reshape(shp)
    return _histogramdd_t(hist, tuple(edges))


def _g(v):
    """A double as C++'s stream prints it in PyTorch's messages (1, 0.5, inf, nan)."""
    return ("%g" % v) if _math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")


def install(torch):
    F = torch.nn.functional
    F.fractional_max_pool2d = fractional_max_pool2d
    F.fractional_max_pool3d = fractional_max_pool3d
    F.fractional_max_pool2d_with_indices = fractional_max_pool2d_with_indices
    F.fractional_max_pool3d_with_indices = fractional_max_pool3d_with_indices
    torch.nn.FractionalMaxPool2d, torch.nn.FractionalMaxPool3d = _modules()
    torch.histogramdd = histogramdd
