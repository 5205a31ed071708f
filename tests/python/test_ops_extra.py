"""Tensor.view(dtype), torch.unique(dim=...), torch.unique_consecutive against PyTorch 1.13:
values, dtypes, shapes, strides, storage sharing, and errors (type and message)."""
import pytest
import torch
import ctorch

from conftest import both


def F(L):
    return L.tensor([[1.5, -2.0, 3.0, 0.5], [4.0, 0.25, -1.0, 2.0], [0.0, 1.0, -3.5, 2.5]])


def R(L):
    return L.tensor([[1, 2, 0], [3, 4, 1], [1, 2, 0], [0, 9, 9], [3, 4, 1], [1, 2, 1]])


def _geom(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset(), str(t.dtype)


VIEW_DTYPE = {
    "f32_i32": lambda L: F(L).view(L.int32),
    "f32_f32": lambda L: F(L).view(L.float32),
    "f32_f64": lambda L: F(L).view(L.float64),
    "f32_i64": lambda L: F(L).view(L.int64),
    "f32_i16": lambda L: F(L).view(L.int16),
    "f32_u8": lambda L: F(L).view(L.uint8),
    "f32_bool_kw": lambda L: (F(L) == 0).view(dtype=L.uint8),
    "i64_f64": lambda L: L.arange(6).view(L.float64),
    "i64_i8": lambda L: L.arange(3).view(L.int8),
    "u8_i32": lambda L: L.arange(8, dtype=L.uint8).view(L.int32),
    "u8_bool": lambda L: L.tensor([0, 1, 0], dtype=L.uint8).view(L.bool),
    "i16_f16": lambda L: L.tensor([15360, 16384, -17408], dtype=L.int16).view(L.float16),
    "i16_bf16": lambda L: L.tensor([16256, 16384], dtype=L.int16).view(L.bfloat16),
    "f64_f32_col": lambda L: L.arange(8, dtype=L.float64).reshape(2, 4)[:, 1:3].view(L.float32),
    "f32_f64_slice": lambda L: L.arange(12, dtype=L.float32).reshape(3, 4)[:, :2].view(L.float64),
    "f32_f64_offset": lambda L: L.arange(12, dtype=L.float32)[2:10].view(L.float64),
    "0d_same_size": lambda L: L.tensor(1.0).view(L.int32),
    "empty": lambda L: L.zeros(0, 4).view(L.float64),
    "transposed_same_size": lambda L: F(L).t().view(L.int32),
    "int_view_of_float": lambda L: L.tensor([1.0, -0.0, float("inf")]).view(L.int32),
}


@pytest.mark.parametrize("name", sorted(VIEW_DTYPE))
def test_view_dtype(name):
    c, t = both(VIEW_DTYPE[name])
    assert _geom(c) == _geom(t)


VIEW_DTYPE_ERRORS = {
    "0d": lambda L: L.tensor(1.0).view(L.float64),
    "stride_last": lambda L: L.ones(4, 4).t().view(L.float64),
    "stride_last_smaller": lambda L: L.ones(4, 4).t().view(L.int16),
    "size_last": lambda L: L.ones(3, 3).view(L.float64),
    "offset": lambda L: L.ones(10)[1:5].view(L.float64),
    "stride_other": lambda L: L.ones(4, 3)[:, :2].view(L.float64),
    "bool_to_double": lambda L: L.ones(2, dtype=L.bool).view(L.float64),
}


@pytest.mark.parametrize("name", sorted(VIEW_DTYPE_ERRORS))
def test_view_dtype_errors(name):
    ec, et = both(VIEW_DTYPE_ERRORS[name])
    assert isinstance(ec, Exception) and isinstance(et, Exception)
    assert str(ec) == str(et).split("\n")[0]


@pytest.mark.parametrize("lib", [torch, ctorch], ids=["torch", "ctorch"])
def test_view_dtype_shares_storage(lib):
    base = lib.zeros(2, 4)
    v = base.view(lib.int32)
    v[0, 1] = 1065353216  # the bits of 1.0f
    assert base[0, 1].item() == 1.0
    base[1, 3] = 2.0
    assert v[1, 3].item() == 1073741824
    w = base.view(lib.float64)
    assert w.data_ptr() == base.data_ptr() and w.shape == (2, 2)
    v2 = base.view(lib.int16)
    assert v2.shape == (2, 8) and v2.stride() == (8, 1)
    x = lib.ones(3, requires_grad=True)
    y = x.view(lib.int32)
    assert not y.requires_grad and y.grad_fn is None
    assert x.view(lib.float32).requires_grad is False


def test_view_dtype_same_in_both():
    """the same bytes in both libraries (NaN payloads, signed zero, denormals)"""
    vals = [0.0, -0.0, 1e-45, float("nan"), -float("inf"), 3.4028234663852886e38]
    a = torch.tensor(vals).view(torch.int32).tolist()
    b = ctorch.tensor(vals).view(ctorch.int32).tolist()
    assert a == b
    assert str(torch.tensor(vals).view(torch.int32)) == str(ctorch.tensor(vals).view(ctorch.int32))


UNIQUE = {
    "dim0": lambda L: L.unique(R(L), dim=0),
    "dim0_all": lambda L: L.unique(R(L), dim=0, return_inverse=True, return_counts=True),
    "dim1": lambda L: R(L).unique(dim=1, return_inverse=True),
    "dim_neg": lambda L: L.unique(R(L), return_counts=True, dim=-2),
    "unsorted_dim": lambda L: L.unique(R(L).t(), sorted=False, dim=1, return_inverse=True),
    "positional": lambda L: L.unique(R(L), True, True, True, 0),
    "float_dim": lambda L: L.unique(L.tensor([[1.5, 2.0], [-1.0, 3.0], [1.5, 2.0]]), dim=0, return_counts=True),
    "nan_dim": lambda L: L.unique(L.tensor([[1.0, float("nan")], [1.0, float("nan")], [0.0, 1.0]]), dim=0),
    "bool_dim": lambda L: L.unique(L.tensor([[True], [False], [True]]), dim=0, return_counts=True),
    "3d_dim1": lambda L: L.unique(L.tensor([[[1, 2], [1, 2], [0, 1]], [[3, 3], [3, 3], [0, 0]]]), dim=1,
                                  return_inverse=True, return_counts=True),
    "3d_dim2": lambda L: L.unique(L.arange(12).reshape(2, 3, 2) % 2, dim=2, return_counts=True),
    "single_row": lambda L: L.unique(L.tensor([[4, 5, 6]]), dim=0, return_inverse=True, return_counts=True),
    "1d_dim": lambda L: L.unique(L.tensor([3, 1, 3, 2, 1]), dim=0, return_inverse=True, return_counts=True),
    "empty_dim": lambda L: L.unique(L.zeros(0, 3), dim=0, return_inverse=True, return_counts=True),
    "noncontig_dim": lambda L: L.unique(R(L).t()[:, ::2], dim=1, return_inverse=True),
    "flat_inverse_counts": lambda L: L.unique(R(L), return_inverse=True, return_counts=True),
    "grad_input": lambda L: L.unique(L.tensor([[1.0, 2.0], [1.0, 2.0]], requires_grad=True), dim=0).requires_grad,
}

UNIQUE_CONSECUTIVE = {
    "flat": lambda L: L.unique_consecutive(L.tensor([1, 1, 2, 2, 3, 1, 1, 2])),
    "flat_all": lambda L: L.unique_consecutive(L.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True,
                                               return_counts=True),
    "flat_2d_inverse": lambda L: L.tensor([[1, 1], [2, 2], [2, 3]]).unique_consecutive(return_inverse=True),
    "flat_counts": lambda L: L.unique_consecutive(L.tensor([5.0, 5.0, -1.0]), return_counts=True),
    "dim0": lambda L: R(L).unique_consecutive(dim=0, return_inverse=True, return_counts=True),
    "dim0_runs": lambda L: L.unique_consecutive(L.tensor([[1, 2], [1, 2], [3, 4], [3, 4], [1, 2]]), dim=0,
                                                return_inverse=True, return_counts=True),
    "dim1": lambda L: L.unique_consecutive(L.tensor([[1, 1, 2], [0, 0, 2]]), dim=1, return_counts=True),
    "0d": lambda L: L.unique_consecutive(L.tensor(3), return_inverse=True, return_counts=True),
    "empty": lambda L: L.unique_consecutive(L.zeros(0), return_inverse=True, return_counts=True),
    "nan": lambda L: L.unique_consecutive(L.tensor([float("nan"), float("nan"), 1.0])),
    "bool": lambda L: L.unique_consecutive(L.tensor([True, True, False, True]), return_counts=True),
}

UNIQUE_ERRORS = {
    "dim_range": lambda L: L.unique(R(L), dim=2),
    "dim_0d": lambda L: L.unique(L.tensor(3), dim=0),
    "two_zero_dims": lambda L: L.unique(L.zeros(0, 0), dim=0),
    "zero_not_selected": lambda L: L.unique(L.zeros(2, 0), dim=0, return_inverse=True),
    "consecutive_dim_0d": lambda L: L.unique_consecutive(L.tensor(3), dim=0),
    "consecutive_dim_range": lambda L: L.unique_consecutive(L.ones(2, 2), dim=-3),
    "consecutive_zero_not_selected": lambda L: L.unique_consecutive(L.zeros(0, 3), dim=1),
}


@pytest.mark.parametrize("name", sorted(UNIQUE))
def test_unique(name):
    both(UNIQUE[name])


@pytest.mark.parametrize("name", sorted(UNIQUE_CONSECUTIVE))
def test_unique_consecutive(name):
    both(UNIQUE_CONSECUTIVE[name])


@pytest.mark.parametrize("name", sorted(UNIQUE_ERRORS))
def test_unique_errors(name):
    ec, et = both(UNIQUE_ERRORS[name])
    assert isinstance(ec, Exception) and isinstance(et, Exception)
    assert str(ec) == str(et).split("\n")[0]


def test_unique_random_tables():
    """Random small-integer tables: unique(dim) and unique_consecutive(dim) agree with PyTorch."""
    g = torch.Generator().manual_seed(0)
    for trial in range(30):
        n, m = 1 + trial % 7, 1 + trial % 4
        a = torch.randint(0, 3, (n, m), generator=g)
        c = ctorch.tensor(a.tolist())
        for d in (0, 1):
            rt = torch.unique(a, dim=d, return_inverse=True, return_counts=True)
            rc = ctorch.unique(c, dim=d, return_inverse=True, return_counts=True)
            assert [x.tolist() for x in rc] == [x.tolist() for x in rt], (a, d)
            rt = torch.unique_consecutive(a, dim=d, return_inverse=True, return_counts=True)
            rc = ctorch.unique_consecutive(c, dim=d, return_inverse=True, return_counts=True)
            assert [x.tolist() for x in rc] == [x.tolist() for x in rt], (a, d)
