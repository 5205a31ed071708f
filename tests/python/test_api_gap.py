"""Functions added to close the API-names gap (python/ctorch/_gap.py), each against PyTorch 1.13."""
import pytest

from conftest import both


def A(L, *shape, dtype=None):
    """Deterministic data with negatives, zeros and distinct values."""
    n = 1
    for s in shape:
        n *= s
    x = (L.arange(n, dtype=L.float32) * 0.37 - 1.1).sin().reshape(shape)
    return x if dtype is None else x.to(dtype)


CASES = {
    "diag_1d": lambda L: L.diag(A(L, 3)),
    "diag_1d_k": lambda L: L.diag(A(L, 3), 2),
    "diag_1d_negk": lambda L: L.diag(A(L, 3), -1),
    "diag_2d": lambda L: L.diag(A(L, 3, 4)),
    "diag_2d_k": lambda L: L.diag(A(L, 3, 4), 1),
    "diag_2d_int": lambda L: L.diag(L.arange(12).reshape(3, 4), -1),
    "diag_method": lambda L: A(L, 4).diag(),
    "diag_3d_error": lambda L: L.diag(A(L, 2, 2, 2)),
    "diag_embed": lambda L: L.diag_embed(A(L, 2, 3)),
    "diag_embed_offset": lambda L: L.diag_embed(A(L, 2, 3), 1),
    "diag_embed_dims": lambda L: L.diag_embed(A(L, 2, 3), -1, 0, 2),
    "diagflat": lambda L: L.diagflat(A(L, 2, 2)),
    "diagflat_offset": lambda L: L.diagflat(A(L, 3), -2),
    "trace": lambda L: A(L, 3, 4).trace(),
    "trace_int": lambda L: L.arange(9).reshape(3, 3).trace(),
    "nansum": lambda L: L.nansum(L.tensor([1.0, float("nan"), 2.5])),
    "nansum_dim": lambda L: L.nansum(L.tensor([[1.0, float("nan")], [2.0, 3.0]]), 1, keepdim=True),
    "nansum_int": lambda L: L.nansum(L.arange(5)),
    "nanmean": lambda L: L.tensor([1.0, float("nan"), 2.5]).nanmean(),
    "nanmean_dim": lambda L: L.tensor([[1.0, float("nan")], [2.0, 3.0]]).nanmean(0),
    "nanmean_int_error": lambda L: L.arange(3).nanmean(),
    "aminmax": lambda L: tuple(L.aminmax(A(L, 3, 4))),
    "aminmax_dim": lambda L: tuple(L.aminmax(A(L, 3, 4), dim=1, keepdim=True)),
    "aminmax_fields": lambda L: (L.aminmax(A(L, 5)).min, L.aminmax(A(L, 5)).max),
    "dist": lambda L: L.dist(A(L, 4), A(L, 4) * 2),
    "dist_p1": lambda L: L.dist(A(L, 2, 3), L.zeros(3), 1),
    "vdot": lambda L: L.vdot(A(L, 5), A(L, 5) + 1),
    "tensordot_int": lambda L: L.tensordot(A(L, 2, 3, 4), A(L, 3, 4, 5)),
    "tensordot_lists": lambda L: L.tensordot(A(L, 2, 3, 4), A(L, 4, 2), ([0, 2], [1, 0])),
    "tensordot_zero": lambda L: L.tensordot(A(L, 2), A(L, 3), 0),
    "tensordot_mismatch": lambda L: L.tensordot(A(L, 2, 3), A(L, 4, 5), 1),
    "inner_1d": lambda L: L.inner(A(L, 4), A(L, 4)),
    "inner_nd": lambda L: L.inner(A(L, 2, 3), A(L, 4, 3)),
    "inner_scalar": lambda L: L.inner(L.tensor(2.0), A(L, 3)),
    "inner_mismatch": lambda L: L.inner(A(L, 2, 3), A(L, 2)),
    "kron_2d": lambda L: L.kron(A(L, 2, 2), A(L, 2, 3)),
    "kron_mixed": lambda L: L.kron(A(L, 3), A(L, 2, 2)),
    "atleast_1d": lambda L: L.atleast_1d(L.tensor(1.5)),
    "atleast_2d": lambda L: L.atleast_2d(A(L, 3)),
    "atleast_3d_1d": lambda L: L.atleast_3d(A(L, 3)),
    "atleast_3d_2d": lambda L: L.atleast_3d(A(L, 2, 3)),
    "atleast_3d_many": lambda L: L.atleast_3d(L.tensor(1.0), A(L, 2, 3, 4)),
    "atleast_2d_list": lambda L: L.atleast_2d([L.tensor(1.0), A(L, 2)]),
    "broadcast_shapes": lambda L: L.broadcast_shapes((2, 1), (3,), (1, 1, 1)),
    "broadcast_shapes_int": lambda L: L.broadcast_shapes(3, (2, 1)),
    "broadcast_shapes_error": lambda L: L.broadcast_shapes((2, 3), (4,)),
    "column_stack": lambda L: L.column_stack([A(L, 3), A(L, 3, 2)]),
    "hsplit": lambda L: L.hsplit(A(L, 2, 4), 2),
    "hsplit_1d": lambda L: L.hsplit(A(L, 6), [1, 4]),
    "vsplit": lambda L: L.vsplit(A(L, 4, 2), [1]),
    "dsplit": lambda L: L.dsplit(A(L, 2, 2, 4), 2),
    "vsplit_error": lambda L: L.vsplit(A(L, 3), 1),
    "cartesian_prod": lambda L: L.cartesian_prod(L.tensor([1, 2]), L.tensor([3, 4, 5])),
    "diff": lambda L: L.diff(A(L, 5)),
    "diff_n2_dim0": lambda L: L.diff(A(L, 4, 3), n=2, dim=0),
    "diff_prepend_append": lambda L: L.diff(A(L, 4), prepend=L.tensor([0.5]), append=L.tensor([2.0, 1.0])),
    "diff_bool": lambda L: L.diff(L.tensor([True, False, False, True])),
    "diff_int": lambda L: L.arange(6).pow(2).diff(),
    "tril_indices": lambda L: L.tril_indices(3, 4),
    "tril_indices_offset": lambda L: L.tril_indices(4, 3, -1),
    "triu_indices": lambda L: L.triu_indices(3, 3, 1),
    "empty_strided": lambda L: (L.empty_strided((2, 3), (1, 2)).stride(), L.empty_strided((2, 3), (1, 2)).shape),
    "float_power": lambda L: L.float_power(A(L, 4).abs(), 1.5),
    "float_power_int": lambda L: L.float_power(L.arange(4), 2),
    "heaviside": lambda L: L.heaviside(L.tensor([-1.0, 0.0, 2.0]), L.tensor([0.5, 0.25, 0.75])),
    "ldexp": lambda L: L.ldexp(A(L, 3), L.tensor([1, 2, -1])),
    "signbit": lambda L: L.signbit(L.tensor([-1.0, 0.0, -0.0, 3.0])),
    "signbit_int": lambda L: L.arange(-2, 2).signbit(),
    "mH": lambda L: A(L, 2, 3).mH,
    "conj_real": lambda L: (A(L, 3).conj(), A(L, 3).is_conj(), A(L, 3).is_neg()),
    "conj_physical": lambda L: L.conj_physical(A(L, 3)),
    "imag_error": lambda L: A(L, 3).imag,
    "fill_diagonal_2d": lambda L: L.zeros(3, 4).fill_diagonal_(2.5),
    "fill_diagonal_wrap": lambda L: L.zeros(7, 3).fill_diagonal_(1, wrap=True),
    "fill_diagonal_nowrap_tall": lambda L: L.zeros(7, 3).fill_diagonal_(1),
    "fill_diagonal_wrap_noncontig": lambda L: L.zeros(3, 7).t().fill_diagonal_(1, wrap=True),
    "fill_diagonal_3d": lambda L: L.zeros(2, 2, 2).fill_diagonal_(5),
    "fill_diagonal_1d_error": lambda L: L.zeros(3).fill_diagonal_(1),
    "fill_diagonal_unequal_error": lambda L: L.zeros(2, 3, 2).fill_diagonal_(1),
    "squeeze_": lambda L: (lambda b: (b.squeeze_(), b.shape, b.stride(), b._version))(L.zeros(1, 3, 1)),
    "unsqueeze_": lambda L: (lambda b: (b.unsqueeze_(-1), b.shape, b.stride()))(L.zeros(2, 3)),
    "t_": lambda L: (lambda b: (b.t_(), b.shape, b.stride()))(L.zeros(2, 3)),
    "t_3d_error": lambda L: L.zeros(2, 2, 2).t_(),
    "transpose_": lambda L: (lambda b: (b.transpose_(0, 2), b.shape, b.stride()))(L.zeros(2, 3, 4)),
    "squeeze_leaf_error": lambda L: L.zeros(1, 2, requires_grad=True).squeeze_(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name):
    both(CASES[name])


def _grads(L, fn, *shapes):
    xs = [A(L, *s).requires_grad_() for s in shapes]
    fn(L, *xs).sum().backward()
    return [x.grad for x in xs]


GRADS = {
    "diag_1d": (lambda L, x: L.diag(x, 1) * A(L, 4, 4), (3,)),
    "diag_2d": (lambda L, x: L.diag(x) * 3, (3, 4)),
    "diag_embed": (lambda L, x: L.diag_embed(x) * A(L, 2, 3, 3), (2, 3)),
    "tensordot": (lambda L, x, y: L.tensordot(x, y, ([1], [0])), (2, 3), (3, 4)),
    "kron": (lambda L, x, y: L.kron(x, y) * A(L, 4, 6), (2, 2), (2, 3)),
    "diff": (lambda L, x: L.diff(x, n=2) * A(L, 3), (5,)),
    "nansum": (lambda L, x: L.nansum(x * 2), (2, 3)),
    "squeeze_nonleaf": (lambda L, x: (x * 2).squeeze_(0) * A(L, 3), (1, 3)),
    "fill_diagonal_nonleaf": (lambda L, x: (x * 2).fill_diagonal_(0.5) * A(L, 3, 3), (3, 3)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_grad(name):
    fn, shapes = GRADS[name][0], GRADS[name][1:]
    both(lambda L: _grads(L, fn, *shapes))


def test_squeeze_inplace_keeps_object_and_history():
    import ctorch
    import torch
    for L in (torch, ctorch):
        x = A(L, 1, 3).requires_grad_()
        y = x * 2
        z = y.squeeze_(0)
        assert z is y and y.shape == (3,)
        assert type(y.grad_fn).__name__.startswith("SqueezeBackward")


def test_reshape_copy_has_no_base_and_still_differentiates():
    import ctorch
    import torch
    for L in (torch, ctorch):
        x = A(L, 2, 3).requires_grad_()
        r = x.t().reshape(6)
        assert r._base is None
        (r * L.arange(6.0)).sum().backward()
        assert x.grad.tolist() == L.arange(6.0).reshape(3, 2).t().tolist()


Q = {
    "quantile_scalar": lambda L: L.quantile(A(L, 7), 0.3),
    "quantile_tensor_q": lambda L: L.quantile(A(L, 3, 5), L.tensor([0.0, 0.25, 0.5, 1.0]), dim=1),
    "quantile_keepdim": lambda L: L.quantile(A(L, 3, 5), 0.6, dim=0, keepdim=True),
    "quantile_keepdim_nodim": lambda L: L.quantile(A(L, 3, 5), L.tensor([0.2, 0.9]), keepdim=True),
    "quantile_lower": lambda L: L.quantile(A(L, 6), 0.45, interpolation="lower"),
    "quantile_higher": lambda L: L.quantile(A(L, 6), 0.45, interpolation="higher"),
    "quantile_nearest": lambda L: L.quantile(A(L, 6), L.tensor([0.1, 0.3, 0.5, 0.7]), interpolation="nearest"),
    "quantile_midpoint": lambda L: L.quantile(A(L, 6), 0.45, interpolation="midpoint"),
    "quantile_nan": lambda L: L.quantile(L.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]]), 0.5, dim=1),
    "nanquantile_nan": lambda L: L.nanquantile(L.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]]), 0.5, dim=1),
    "nanquantile_allnan": lambda L: L.tensor([[float("nan")] * 2, [1.0, 2.0]]).nanquantile(0.3, dim=-1),
    "quantile_method_double": lambda L: A(L, 4, 3, dtype=L.float64).quantile(0.75, -2),
    "quantile_int_error": lambda L: L.quantile(L.arange(4), 0.5),
    "quantile_q_range_error": lambda L: L.quantile(A(L, 4), 1.5),
    "searchsorted": lambda L: L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([[0, 3, 6], [8, 1, 5]])),
    "searchsorted_right": lambda L: L.searchsorted(L.tensor([1.0, 3.0, 5.0]), L.tensor([3.0, 4.0]), right=True),
    "searchsorted_side": lambda L: L.searchsorted(L.tensor([1, 3, 5]), L.tensor([3, 5]), side="right"),
    "searchsorted_nd": lambda L: L.searchsorted(L.tensor([[1, 3, 5], [2, 4, 6]]), L.tensor([[3, 6], [1, 4]])),
    "searchsorted_int32": lambda L: L.searchsorted(L.tensor([1, 3]), L.tensor([2]), out_int32=True),
    "bucketize": lambda L: L.bucketize(L.tensor([0.5, 1.0, 2.5, 9.0]), L.tensor([1.0, 2.0, 3.0])),
    "bucketize_right": lambda L: L.bucketize(L.tensor([1, 2, 3]), L.tensor([1, 3]), right=True),
    "cross": lambda L: L.cross(A(L, 4, 3), A(L, 4, 3) + 1, dim=1),
    "cross_dim0_broadcast": lambda L: L.cross(A(L, 3, 2), A(L, 3, 1), dim=0),
    "cross_error": lambda L: L.cross(A(L, 4, 2), A(L, 4, 2), dim=1),
    "diagonal_scatter": lambda L: L.diagonal_scatter(L.zeros(3, 4), A(L, 3), 1),
    "diagonal_scatter_dims": lambda L: L.diagonal_scatter(L.zeros(2, 3, 3), A(L, 3, 2), 0, 1, 0),
    "slice_scatter": lambda L: L.slice_scatter(L.zeros(4, 6), A(L, 4, 2), 1, 1, 5, 2),
    "gcd": lambda L: L.gcd(L.tensor([12, -18, 0, 7, 0]), L.tensor([8, 12, 5, 0, 0])),
    "lcm": lambda L: L.lcm(L.tensor([4, -6, 0, 7]), L.tensor([6, 4, 3, 0])),
    "gcd_float_error": lambda L: L.gcd(L.tensor([1.0]), L.tensor([2.0])),
    "cov": lambda L: L.cov(A(L, 3, 6)),
    "cov_1d": lambda L: L.cov(A(L, 5)),
    "cov_correction0": lambda L: L.cov(A(L, 2, 4), correction=0),
    "cov_int": lambda L: L.cov(L.arange(8).reshape(2, 4)),
    "corrcoef": lambda L: L.corrcoef(A(L, 3, 6)),
    "trapezoid": lambda L: L.trapezoid(A(L, 5)),
    "trapezoid_dx_dim": lambda L: L.trapezoid(A(L, 3, 4), dx=0.5, dim=0),
    "trapezoid_x": lambda L: L.trapezoid(A(L, 2, 4), L.tensor([0.0, 0.5, 1.5, 3.0])),
    "cumulative_trapezoid": lambda L: L.cumulative_trapezoid(A(L, 2, 5)),
    "cumulative_trapezoid_x": lambda L: L.cumulative_trapezoid(A(L, 4), L.tensor([0.0, 1.0, 3.0, 4.0])),
    "vander": lambda L: L.vander(L.tensor([1, 2, 3])),
    "vander_float_inc": lambda L: L.vander(A(L, 3), 4, increasing=True),
    "combinations": lambda L: L.combinations(L.tensor([1, 2, 3, 4])),
    "combinations_r3": lambda L: L.combinations(A(L, 4), 3),
    "combinations_repl": lambda L: L.combinations(L.tensor([5, 6, 7]), with_replacement=True),
    "new_empty_strided": lambda L: (lambda e: (e.shape, e.stride(), e.dtype))(
        L.zeros(2, dtype=L.float64).new_empty_strided((2, 3), (3, 1))),
}


@pytest.mark.parametrize("name", sorted(Q))
def test_case2(name):
    both(Q[name])


def test_range_inclusive_and_warns():
    import warnings

    import ctorch
    import torch
    res = []
    for L in (torch, ctorch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = (L.range(1, 4), L.range(0, 1, 0.25), L.range(3, 0, -1.5, dtype=L.float64))
        assert any(issubclass(x.category, UserWarning) for x in w)
        res.append(r)
    for c, t in zip(res[1], res[0]):
        assert c.dtype == getattr(torch, str(t.dtype).split(".")[1]) or str(c.dtype) == str(t.dtype)
        assert c.tolist() == t.tolist()


def test_quantile_grad():
    def fn(L):
        x = A(L, 3, 5).requires_grad_()
        (L.quantile(x, L.tensor([0.3, 0.8]), dim=1) * L.tensor([[1.0], [2.0]])).sum().backward()
        return x.grad
    both(fn)


H = {
    "histc": lambda L: L.histc(A(L, 20), bins=6),
    "histc_range": lambda L: L.histc(A(L, 20), bins=4, min=-0.5, max=0.5),
    "histc_double_method": lambda L: A(L, 4, 5, dtype=L.float64).histc(3, -1, 1),
    "histc_constant": lambda L: L.histc(L.ones(4), bins=3),
    "histc_bins_error": lambda L: L.histc(A(L, 3), bins=0),
    "histc_minmax_error": lambda L: L.histc(A(L, 3), bins=2, min=1, max=0),
}


@pytest.mark.parametrize("name", sorted(H))
def test_histc(name):
    both(H[name])


def test_base_identity_through_chains():
    import ctorch
    import torch
    for L in (torch, ctorch):
        b = L.arange(12.0)
        v = b.view(3, 4)
        assert v._base is b
        assert v.t()._base is b and v.T._base is b and v[1:]._base is b
        assert all(p._base is b for p in v.split(2, 1))
        assert L.narrow(v, 0, 1, 1)._base is b
        assert b.clone()._base is None


def test_view_base_link_is_collected_in_cycles():
    import gc

    import ctorch
    gc.collect()
    n0 = ctorch._C._live_tensors()
    for _ in range(20):
        b = ctorch.zeros(3)
        v = b.view(3)
        b.cycle = v  # base -> view through __dict__, view -> base through _base
    del b, v
    gc.collect()
    assert ctorch._C._live_tensors() == n0
