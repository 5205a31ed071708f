"""Commonly used PyTorch functions composed from existing ctorch ops (real dtypes only).

Each is built from differentiable ctorch ops, so autograd follows without new C code.
"""
import builtins as _b
import math as _math


def install(torch):
    T = torch.Tensor

    def _wrap(d, nd):
        if d < -nd or d >= nd:
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                             % (-nd, nd - 1, d))
        return d + nd if d < 0 else d

    # ---- diagonals ----
    def diag(input, diagonal=0, *, out=None):
        if input.dim() == 1:
            n = input.shape[0] + _b.abs(diagonal)
            r = torch.zeros(n, n, dtype=input.dtype, device=input.device)
            r = _fill_diag(r, input, diagonal)
        elif input.dim() == 2:
            r = input.diagonal(diagonal).clone()
        else:
            raise RuntimeError("matrix or a vector expected")
        if out is not None:
            out.resize_(r.shape).copy_(r)
            return out
        return r

    def _fill_diag(r, values, offset, dim1=-2, dim2=-1):
        # zeros with values written on the diagonal (the write is differentiable in values)
        r.diagonal(offset, dim1, dim2).copy_(values)
        return r

    def diag_embed(input, offset=0, dim1=-2, dim2=-1):
        nd = input.dim() + 1
        d1, d2 = _wrap(dim1, nd), _wrap(dim2, nd)
        if d1 == d2:
            raise RuntimeError("diagonal dimensions cannot be identical %d, %d" % (dim1, dim2))
        n = input.shape[-1] + _b.abs(offset) if input.dim() else 1 + _b.abs(offset)
        rest = list(input.shape[:-1])
        shape = []
        for i in range(nd):
            shape.append(n if i in (d1, d2) else rest.pop(0))
        r = torch.zeros(*shape, dtype=input.dtype, device=input.device)
        return _fill_diag(r, input, offset, d1, d2)

    def diagflat(input, offset=0):
        return diag(input.flatten(), offset)

    def trace(self):
        if self.dim() != 2:
            raise RuntimeError("trace: expected a matrix, but got tensor with dim %d" % self.dim())
        if self.dtype == torch.bool:
            raise RuntimeError("\"trace\" not implemented for 'Bool'")
        return self.diagonal().sum()

    # ---- reductions ----
    def nansum(input, dim=None, keepdim=False, *, dtype=None):
        x = torch.where(torch.isnan(input), torch.zeros((), dtype=input.dtype), input) \
            if input.is_floating_point() else input
        if dim is None:
            return x.sum(dtype=dtype)
        return x.sum(dim, keepdim=keepdim, dtype=dtype)

    def nanmean(input, dim=None, keepdim=False, *, dtype=None):
        if not input.is_floating_point():
            raise RuntimeError("nanmean(): expected input to have floating point dtype but got %s"
                               % _legacy(input.dtype))
        cnt = (~torch.isnan(input)).sum(dim, keepdim=keepdim) if dim is not None else (~torch.isnan(input)).sum()
        return nansum(input, dim, keepdim, dtype=dtype) / cnt

    def _legacy(dt):
        return {torch.float64: "Double", torch.float32: "Float", torch.int64: "Long", torch.int32: "Int",
                torch.bool: "Bool"}.get(dt, str(dt))

    class aminmax_t(tuple):
        def __new__(cls, mn, mx):
            return tuple.__new__(cls, (mn, mx))

        min = property(lambda s: s[0])
        max = property(lambda s: s[1])

        def __repr__(self):
            return "torch.return_types.aminmax(\nmin=%r,\nmax=%r)" % (self[0], self[1])

    aminmax_t.__name__ = aminmax_t.__qualname__ = "aminmax"

    def aminmax(input, *, dim=None, keepdim=False):
        if dim is None:
            mn, mx = input.amin(), input.amax()
            if keepdim:
                shape = [1] * input.dim()
                mn, mx = mn.reshape(shape), mx.reshape(shape)
            return aminmax_t(mn, mx)
        mn, mx = input.amin(dim, keepdim), input.amax(dim, keepdim)
        if keepdim and input.dim() == 0:
            # PyTorch 1.13 keeps a 0-dim input's reduced dim as size 1
            mn, mx = mn.reshape(1), mx.reshape(1)
        return aminmax_t(mn, mx)

    def dist(input, other, p=2):
        return (input - other).norm(p)

    # ---- products ----
    def vdot(input, other):
        return torch.dot(input, other)

    def tensordot(a, b, dims=2, out=None):
        if isinstance(dims, int):
            if dims < 0:
                raise RuntimeError("tensordot expects dims >= 0, but got dims=%d" % dims)
            da = list(range(a.dim() - dims, a.dim()))
            db = list(range(dims))
        elif isinstance(dims, torch.Tensor) and dims.dim() == 0:
            return tensordot(a, b, int(dims.item()), out)
        else:
            da, db = dims
            if isinstance(da, int):
                da, db = [da], [db]
            da, db = [int(d) for d in da], [int(d) for d in db]
            if len(da) != len(db):
                raise RuntimeError("both dimension lists should have same length")
        da = [_wrap(d, a.dim()) for d in da]
        db = [_wrap(d, b.dim()) for d in db]
        for x, y in zip(da, db):
            if a.shape[x] != b.shape[y]:
                raise RuntimeError("contracted dimensions need to match, but first has size %d in dim %d and "
                                   "second has size %d in dim %d" % (a.shape[x], x, b.shape[y], y))
        fa = [d for d in range(a.dim()) if d not in da]
        fb = [d for d in range(b.dim()) if d not in db]
        k = _math.prod(a.shape[d] for d in da)
        ma = a.permute(*(fa + da)).reshape(-1, k)
        mb = b.permute(*(db + fb)).reshape(k, -1)
        r = (ma @ mb).reshape([a.shape[d] for d in fa] + [b.shape[d] for d in fb])
        if out is not None:
            out.resize_(r.shape).copy_(r)
            return out
        return r

    def inner(input, other, *, out=None):
        if input.dim() == 0 or other.dim() == 0:
            r = input * other
        else:
            if input.shape[-1] != other.shape[-1]:
                raise RuntimeError("inner() the last dimension must match on both input tensors but got shapes %s "
                                   "and %s" % (list(input.shape), list(other.shape)))
            r = tensordot(input, other, ([-1], [-1]))
        if out is not None:
            out.resize_(r.shape).copy_(r)
            return out
        return r

    def kron(input, other):
        nd = _b.max(input.dim(), other.dim())
        a = input.reshape([1] * (nd - input.dim()) + list(input.shape))
        b = other.reshape([1] * (nd - other.dim()) + list(other.shape))
        ea, eb = [], []
        for d in range(nd):
            ea += [a.shape[d], 1]
            eb += [1, b.shape[d]]
        r = a.reshape(ea) * b.reshape(eb)
        return r.reshape([a.shape[d] * b.shape[d] for d in range(nd)])

    # ---- shapes ----
    def _atleast(n, tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(_atleast(n, tuple(tensors[0])))
        res = []
        for t in tensors:
            if t.dim() >= n:
                res.append(t)
            elif n == 1 or t.dim() == 0:
                res.append(t.reshape([1] * n))
            elif n == 2:
                res.append(t.unsqueeze(0))
            else:  # 3-D: (N,) -> (1, N, 1); (M, N) -> (M, N, 1)
                res.append(t.reshape(1, -1, 1) if t.dim() == 1 else t.unsqueeze(-1))
        return res[0] if len(res) == 1 else tuple(res)

    def atleast_1d(*tensors):
        return _atleast(1, tensors)

    def atleast_2d(*tensors):
        return _atleast(2, tensors)

    def atleast_3d(*tensors):
        return _atleast(3, tensors)

    def broadcast_shapes(*shapes):
        res = []
        for s in shapes:
            s = [s] if isinstance(s, int) else list(s)
            for i in range(1, len(s) + 1):
                if i > len(res):
                    res.insert(0, s[-i])
                elif res[-i] == 1 or res[-i] == s[-i]:
                    res[-i] = s[-i] if res[-i] == 1 else res[-i]
                elif s[-i] != 1:
                    raise RuntimeError("Shape mismatch: objects cannot be broadcast to a single shape")
        return torch.Size(res)

    def column_stack(tensors, *, out=None):
        cols = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors]
        return torch.hstack(cols) if out is None else torch.hstack(cols, out=out)

    def _split_n(name, mind, dim):
        def f(input, indices_or_sections):
            if input.dim() < mind:
                raise RuntimeError("torch.%s requires a tensor with at least %d dimension, but got a tensor with %d "
                                   "dimensions!" % (name, mind, input.dim()))
            d = 0 if (name == "hsplit" and input.dim() == 1) else dim
            if isinstance(indices_or_sections, int) and input.shape[d] % indices_or_sections != 0:
                raise RuntimeError("torch.%s attempted to split along dimension %d, but the size of the dimension %d "
                                   "is not divisible by the split_size %d!" % (name, d, input.shape[d],
                                                                               indices_or_sections))
            return torch.tensor_split(input, indices_or_sections, d)
        f.__name__ = name
        return f

    def cartesian_prod(*tensors):
        if len(tensors) == 1:
            return tensors[0]
        grids = torch.meshgrid(*tensors, indexing="ij")
        return torch.stack([g.reshape(-1) for g in grids], 1)

    def diff(input, n=1, dim=-1, prepend=None, append=None):
        if input.dim() == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        d = _wrap(dim, input.dim())
        parts = [p for p in (prepend, input, append) if p is not None]
        x = torch.cat(parts, d) if len(parts) > 1 else input
        for _ in range(n):
            m = x.shape[d]
            if m == 0:
                break
            a, b = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
            x = (a != b) if x.dtype == torch.bool else a - b
        return x

    def _tri_indices(lower):
        def f(row, col, offset=0, *, dtype=None, device=None, layout=None):
            rs, cs = [], []
            for i in range(row):
                for j in range(col):
                    if (j - i <= offset) if lower else (j - i >= offset):
                        rs.append(i)
                        cs.append(j)
            return torch.tensor([rs, cs], dtype=dtype if dtype is not None else torch.int64,
                                device=device).reshape(2, len(rs))
        f.__name__ = "tril_indices" if lower else "triu_indices"
        return f

    def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False, **kw):
        size, stride = list(size), list(stride)
        if len(size) != len(stride):
            raise RuntimeError("mismatch in length of strides and shape")
        n = 1 + _b.sum((s - 1) * st for s, st in zip(size, stride)) if all(s > 0 for s in size) else 0
        r = torch.empty(n, dtype=dtype, device=device).as_strided(size, stride)
        r = r.detach()
        if requires_grad:
            r.requires_grad_()
        return r


    # ---- quantiles (sort, then interpolate between the two nearest ranks) ----
    def _quantile(name, ignore_nan):
        def f(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
            if input.dtype not in (torch.float32, torch.float64):
                raise RuntimeError("%s() input tensor must be either float or double dtype" % name)
            scalar_q = not isinstance(q, torch.Tensor)
            qt = torch.tensor([float(q)], dtype=input.dtype) if scalar_q else q
            if not scalar_q:
                if qt.dim() > 1:
                    raise RuntimeError("%s() q must be a scalar or 1D tensor" % name)
                if qt.dtype != input.dtype:
                    raise RuntimeError("%s() q tensor must be same dtype as the input tensor" % name)
                scalar_q = qt.dim() == 0
                qt = qt.reshape(-1)
            if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
                raise RuntimeError("%s() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                                   "Got %s" % (name, interpolation))
            if bool(((qt < 0) | (qt > 1)).any()):
                raise RuntimeError("%s() q values must be in the range [0, 1]" % name)
            if input.numel() == 0:
                raise RuntimeError("%s() input tensor must be non-empty" % name)
            if dim is None:
                x = input.reshape(-1)
                kept = [1] * input.dim()
            else:
                d = _wrap(dim, _b.max(input.dim(), 1))
                x = input.movedim(d, -1) if input.dim() else input.reshape(1)
                kept = list(input.shape)
                if input.dim():
                    kept[d] = 1
            rest = list(x.shape[:-1])
            n = x.shape[-1]
            srt = x.sort(-1).values  # NaN sorts last
            nans = torch.isnan(x).sum(-1, keepdim=True)
            k = (n - nans) if ignore_nan else torch.full_like(nans, n)
            Q = qt.shape[0]
            rank = qt.reshape([Q] + [1] * (len(rest) + 1)) * (k - 1).to(input.dtype)
            rank = rank.clamp(min=0)
            if interpolation == "nearest":
                rank = rank.round()
            lo = rank.floor().long().clamp(0, n - 1)
            hi = rank.ceil().long().clamp(0, n - 1)
            se = srt.expand([Q] + rest + [n])
            vlo, vhi = se.gather(-1, lo), se.gather(-1, hi)
            if interpolation in ("lower", "nearest"):
                r = vlo
            elif interpolation == "higher":
                r = vhi
            else:
                w = rank - rank.floor() if interpolation == "linear" else torch.full_like(rank, 0.5)
                r = torch.lerp(vlo, vhi, w)
            bad = (k == 0) if ignore_nan else (nans > 0)
            r = torch.where(bad.expand_as(r), torch.full((), float("nan"), dtype=r.dtype), r)
            r = r.squeeze(-1)
            if keepdim:
                r = r.reshape([Q] + kept)
            if scalar_q:
                r = r.squeeze(0)
            if out is not None:
                out.resize_(r.shape).copy_(r)
                return out
            return r
        f.__name__ = name
        return f

    def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
        if side is not None:
            if side not in ("left", "right"):
                raise RuntimeError("torch.searchsorted(): side can only be 'left' or 'right' but got %s" % side)
            if right and side == "left":
                raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of "
                                   "left while right was True")
            right = side == "right"
        seq = sorted_sequence
        if sorter is not None:
            seq = seq.gather(-1, sorter)
        scalar = not isinstance(input, torch.Tensor)
        x = torch.tensor(input, dtype=seq.dtype) if scalar else input
        if seq.dim() > 1 and list(seq.shape[:-1]) != list(x.shape[:-1]):
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions of boundaries tensor and input value tensor must match, but we got "
                               "boundaries tensor %s and input value tensor %s" % (list(seq.shape), list(x.shape)))
        xs = x.unsqueeze(-1)
        sq = seq if seq.dim() == 1 else seq.unsqueeze(-2)
        cmp = (sq <= xs) if right else (sq < xs)
        r = cmp.sum(-1).to(torch.int32 if out_int32 else torch.int64)
        if out is not None:
            out.resize_(r.shape).copy_(r)
            return out
        return r

    def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
        if boundaries.dim() != 1:
            raise RuntimeError("boundaries tensor must be 1 dimension, but got dim(%d)" % boundaries.dim())
        return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)

    def cross(input, other, dim=None, *, out=None):
        a, b = torch.broadcast_tensors(input, other)
        if dim is None:
            cand = [i for i in range(a.dim()) if a.shape[i] == 3]
            if not cand:
                raise RuntimeError("no dimension of size 3 in input")
            dim = cand[0]
        d = _wrap(dim, a.dim())
        if a.shape[d] != 3:
            raise RuntimeError("linalg.cross: inputs dimension %d must have length 3. Got %d and %d"
                               % (dim, input.shape[d] if input.dim() > d else 1, other.shape[d] if other.dim() > d
                                  else 1))
        a0, a1, a2 = a.unbind(d)
        b0, b1, b2 = b.unbind(d)
        r = torch.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)
        if out is not None:
            out.resize_(r.shape).copy_(r)
            return out
        return r

    def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
        r = input.clone()
        r.diagonal(offset, dim1, dim2).copy_(src)
        return r

    def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
        r = input.clone()
        d = _wrap(dim, input.dim())
        idx = [slice(None)] * d + [slice(start, end, step)]
        r[tuple(idx)] = src
        return r

    def gcd(input, other, *, out=None):
        if input.is_floating_point() or other.is_floating_point():
            raise RuntimeError("\"gcd_cpu\" not implemented for '%s'" % _legacy(torch.promote_types(input.dtype,
                                                                                                     other.dtype)))
        a, b = torch.broadcast_tensors(input.abs(), other.abs())
        a, b = a.clone(), b.clone()
        while bool((b != 0).any()):
            nz = b != 0
            a, b = torch.where(nz, b, a), torch.where(nz, a % torch.where(nz, b, torch.ones_like(b)), b)
        if out is not None:
            out.copy_(a)
            return out
        return a

    def lcm(input, other, *, out=None):
        g = gcd(input, other)
        safe = torch.where(g == 0, torch.ones_like(g), g)
        r = torch.where(g == 0, torch.zeros_like(g), (input // safe * other).abs())
        if out is not None:
            out.copy_(r)
            return out
        return r

    def cov(input, *, correction=1, fweights=None, aweights=None):
        if fweights is not None or aweights is not None:
            raise NotImplementedError("ctorch's cov does not take fweights/aweights")
        if input.dim() > 2:
            raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an input with %d "
                               "dimensions" % input.dim())
        x = input.reshape(1, -1) if input.dim() < 2 else input
        if not x.is_floating_point():
            x = x.to(torch.get_default_dtype())
        n = x.shape[1]
        xc = x - x.mean(1, keepdim=True)
        c = (xc @ xc.t()) / _b.max(n - correction, 0)
        return c.reshape(()) if input.dim() < 2 else c

    def corrcoef(input):
        c = cov(input)
        if c.dim() == 0:
            return c / c
        d = c.diagonal()
        sd = d.sqrt()
        c = c / sd.unsqueeze(1) / sd.unsqueeze(0)
        return c.clamp(-1, 1)

    def trapezoid(y, x=None, *, dx=None, dim=-1):
        d = _wrap(dim, y.dim())
        n = y.shape[d]
        if n == 0:
            return y.sum(d)
        s = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
        if x is not None:
            xd = x if x.dim() == 1 else x
            xn = xd.shape[-1 if x.dim() == 1 else d]
            dxs = xd.diff(dim=-1 if x.dim() == 1 else d)
            if x.dim() == 1:
                dxs = dxs.reshape([xn - 1] + [1] * (y.dim() - 1 - d))
            return (s * dxs).sum(d) / 2
        return s.sum(d) * ((1.0 if dx is None else dx) / 2)

    def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
        d = _wrap(dim, y.dim())
        n = y.shape[d]
        s = y.narrow(d, 1, _b.max(n - 1, 0)) + y.narrow(d, 0, _b.max(n - 1, 0))
        if x is not None:
            dxs = x.diff(dim=-1 if x.dim() == 1 else d)
            if x.dim() == 1:
                dxs = dxs.reshape([_b.max(n - 1, 0)] + [1] * (y.dim() - 1 - d))
            return (s * dxs / 2).cumsum(d)
        return (s * ((1.0 if dx is None else dx) / 2)).cumsum(d)

    def vander(x, N=None, increasing=False):
        if x.dim() != 1:
            raise RuntimeError("x must be a one-dimensional tensor.")
        if N is None:
            N = x.shape[0]
        if N < 0:
            raise RuntimeError("N must be non-negative.")
        xx = x.to(torch.int64) if not x.is_floating_point() else x
        r = xx.unsqueeze(-1) ** torch.arange(N, dtype=torch.int64)
        return r if increasing else r.flip(-1)

    def combinations(input, r=2, with_replacement=False):
        if input.dim() != 1:
            raise RuntimeError("Expect a 1D vector, but got shape %s" % list(input.shape))
        if r < 0:
            raise RuntimeError("Expect a non-negative number, but got %d" % r)
        if r == 0:
            return torch.empty(0, dtype=input.dtype)
        import itertools
        gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
        idx = list(gen(range(input.shape[0]), r))
        if not idx:
            return torch.empty(0, r, dtype=input.dtype) if r > 1 else torch.empty(0, dtype=input.dtype)
        res = input[torch.tensor(idx, dtype=torch.int64)]
        return res.reshape(-1) if r == 1 else res

    def range_(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
        import warnings
        warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior "
                      "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
                      "values in [start, end).", UserWarning, stacklevel=2)
        if end is None:
            start, end = 0, start
        if step == 0:
            raise RuntimeError("step must be nonzero")
        n = int(_math.floor((end - start) / step)) + 1
        if n < 0:
            raise RuntimeError("upper bound and larger bound inconsistent with step sign")
        dt = dtype if dtype is not None else torch.get_default_dtype()
        r = (torch.arange(n, dtype=torch.float64) * step + start).to(dt)
        if requires_grad:
            r.requires_grad_()
        return r

    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, **kw):
        return empty_strided(size, stride, dtype=dtype if dtype is not None else self.dtype,
                             device=device if device is not None else self.device, requires_grad=requires_grad)

    for name, fn in [("quantile", _quantile("quantile", False)), ("nanquantile", _quantile("nanquantile", True)),
                     ("searchsorted", searchsorted), ("bucketize", bucketize), ("cross", cross),
                     ("diagonal_scatter", diagonal_scatter), ("slice_scatter", slice_scatter), ("gcd", gcd),
                     ("lcm", lcm), ("cov", cov), ("corrcoef", corrcoef), ("trapezoid", trapezoid),
                     ("cumulative_trapezoid", cumulative_trapezoid), ("vander", vander),
                     ("combinations", combinations), ("range", range_)]:
        if not hasattr(torch, name):
            setattr(torch, name, fn)
    for name in ["quantile", "nanquantile", "cross", "diagonal_scatter", "slice_scatter", "gcd", "lcm", "cov",
                 "corrcoef", "bucketize"]:
        if not hasattr(T, name):
            setattr(T, name, getattr(torch, name))
    if not hasattr(T, "new_empty_strided"):
        T.new_empty_strided = new_empty_strided


    def histc(input, bins=100, min=0, max=0, *, out=None):
        if bins <= 0:
            raise RuntimeError("torch.histc(): bins must be > 0, but got %d for dimension 0" % bins)
        if not input.is_floating_point():
            raise RuntimeError("\"histogram_cpu\" not implemented for '%s'" % _legacy(input.dtype))
        lo, hi = float(min), float(max)
        x = input.reshape(-1)
        if lo == hi and x.numel():
            lo, hi = float(x.min()), float(x.max())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if lo > hi:
            raise RuntimeError("torch.histc(): max must be larger than min")
        keep = (x >= lo) & (x <= hi)
        idx = ((x - lo) * bins / (hi - lo)).floor().long().clamp(0, bins - 1)
        onehot = (idx.unsqueeze(-1) == torch.arange(bins)) & keep.unsqueeze(-1)
        r = onehot.sum(0).to(input.dtype)
        if out is not None:
            out.resize_(r.shape).copy_(r)
            return out
        return r

    if not hasattr(torch, "histc"):
        torch.histc = histc
    if not hasattr(T, "histc"):
        T.histc = histc

    # ---- pointwise ----
    def float_power(input, exponent, *, out=None):
        a = input.to(torch.float64) if isinstance(input, torch.Tensor) else float(input)
        e = exponent.to(torch.float64) if isinstance(exponent, torch.Tensor) else float(exponent)
        r = torch.pow(a, e)
        if out is not None:
            out.copy_(r)
            return out
        return r

    def heaviside(input, values, *, out=None):
        if input.dtype != values.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
        zero = torch.zeros((), dtype=input.dtype)
        r = torch.where(input == 0, values, (input > zero).to(input.dtype))
        if out is not None:
            out.copy_(r)
            return out
        return r

    def ldexp(input, other, *, out=None):
        r = input * torch.pow(2.0, other)
        if out is not None:
            out.copy_(r)
            return out
        return r

    def signbit(input, *, out=None):
        if input.is_floating_point():
            r = torch.copysign(torch.ones((), dtype=input.dtype), input) < 0
        else:
            r = input < 0
        if out is not None:
            out.copy_(r)
            return out
        return r

    # conj of a real tensor is the tensor itself (PyTorch returns self for non-complex)
    def conj(input):
        return input

    def conj_physical(input):
        return input.clone()

    def _imag(self):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    for name, fn in [("diag", diag), ("diag_embed", diag_embed), ("diagflat", diagflat), ("trace", trace),
                     ("nansum", nansum), ("nanmean", nanmean), ("aminmax", aminmax), ("dist", dist),
                     ("vdot", vdot), ("tensordot", tensordot), ("inner", inner), ("kron", kron),
                     ("atleast_1d", atleast_1d), ("atleast_2d", atleast_2d), ("atleast_3d", atleast_3d),
                     ("broadcast_shapes", broadcast_shapes), ("column_stack", column_stack),
                     ("hsplit", _split_n("hsplit", 1, 1)), ("vsplit", _split_n("vsplit", 2, 0)),
                     ("dsplit", _split_n("dsplit", 3, 2)), ("cartesian_prod", cartesian_prod), ("diff", diff),
                     ("tril_indices", _tri_indices(True)), ("triu_indices", _tri_indices(False)),
                     ("empty_strided", empty_strided), ("float_power", float_power), ("heaviside", heaviside),
                     ("ldexp", ldexp), ("signbit", signbit), ("conj", conj), ("conj_physical", conj_physical)]:
        if not hasattr(torch, name):
            setattr(torch, name, fn)
    # Tensor methods (the function with self first)
    for name in ["diag", "diag_embed", "diagflat", "trace", "nansum", "nanmean", "aminmax", "dist", "vdot",
                 "inner", "kron", "hsplit", "vsplit", "dsplit", "diff", "float_power", "heaviside", "ldexp",
                 "signbit", "conj", "conj_physical"]:
        if not hasattr(T, name):
            setattr(T, name, getattr(torch, name))
    if not hasattr(T, "mH"):
        T.mH = property(lambda self: self.mT)
    if not hasattr(T, "imag"):
        T.imag = property(_imag)
    if not hasattr(T, "is_conj"):
        T.is_conj = lambda self: False
    if not hasattr(T, "is_neg"):
        T.is_neg = lambda self: False
