"""torch.unique(dim=...) and torch.unique_consecutive over the C ops (sort, compare, cumsum, scatter).
Called from the C bindings of Tensor.unique / Tensor.unique_consecutive."""
from . import _C


def _wrap_dim(x, dim):
    nd = x.dim()
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if dim < -nd or dim >= nd:
        raise IndexError("Dimension out of range (expected to be in range of [{}, {}], but got {})".format(
            -nd, nd - 1, dim))
    return dim + nd if dim < 0 else dim


def _result(out, inverse, counts, return_inverse, return_counts):
    if return_inverse and return_counts:
        return out, inverse, counts
    if return_inverse:
        return out, inverse
    if return_counts:
        return out, counts
    return out


def _empty_long():
    return _C.zeros(0, dtype=_C.int64)


def _groups(rows, perm):
    """rows [n, M] taken in order perm: start flags of runs of equal rows, run ids, run starts."""
    s = rows.index_select(0, perm)
    n = s.size(0)
    if n > 1:
        differ = (s[1:] != s[:-1])
        if differ.dim() > 1:
            differ = differ.any(1)
        start = _C.cat([_C.ones(1, dtype=_C.bool, device=s.device), differ])
    else:
        start = _C.ones(n, dtype=_C.bool, device=s.device)
    ids = start.to(_C.int64).cumsum(0) - 1
    firsts = start.nonzero().reshape(-1)
    counts = _C.cat([firsts[1:], _C.tensor([n], device=s.device)]) - firsts
    return ids, firsts, counts


def unique_dim(x, dim, return_inverse=False, return_counts=False, consecutive=False):
    """Unique slices along dim: sorted lexicographically (torch.unique) or runs of equal neighbours
    (torch.unique_consecutive)."""
    d = _wrap_dim(x, dim)
    if x.numel() == 0:
        if sum(1 for s in x.shape if s == 0) > 1:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
        if x.size(d) != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        return _result(x.clone(), _empty_long(), _empty_long(), return_inverse, return_counts)
    n = x.size(d)
    with _no_grad():
        rows = x.detach().movedim(d, 0).reshape(n, -1)
        perm = _C.arange(n, device=x.device)
        if not consecutive:
            # lexicographic order: stable sorts from the last column to the first
            for c in range(rows.size(1) - 1, -1, -1):
                key = rows[:, c].index_select(0, perm)
                perm = perm.index_select(0, key.sort(stable=True)[1])
        ids, firsts, counts = _groups(rows, perm)
        inverse = _C.zeros(n, dtype=_C.int64, device=x.device).scatter(0, perm, ids)
        pick = perm.index_select(0, firsts)
    out = x.index_select(d, pick)
    return _result(out, inverse, counts, return_inverse, return_counts)


def unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        return unique_dim(x, dim, return_inverse, return_counts, consecutive=True)
    flat = x.reshape(-1)
    n = flat.numel()
    if n == 0:
        return _result(flat.clone(), _C.zeros(x.shape, dtype=_C.int64), _empty_long(), return_inverse,
                       return_counts)
    with _no_grad():
        ids, firsts, counts = _groups(flat.detach(), _C.arange(n, device=x.device))
    out = flat.index_select(0, firsts)
    return _result(out, ids.reshape(x.shape), counts, return_inverse, return_counts)


def _no_grad():
    from .autograd.grad_mode import no_grad
    return no_grad()
