"""repr/str of tensors printed exactly as PyTorch prints them."""
import pytest
import torch
import ctorch

CASES = [
    lambda L: L.tensor(3),
    lambda L: L.tensor(2.5),
    lambda L: L.tensor(-0.0),
    lambda L: L.tensor(True),
    lambda L: L.tensor([1, 2, 3]),
    lambda L: L.tensor([1.0, 2.0, 3.0]),
    lambda L: L.tensor([1.5, -2.25, 3.125]),
    lambda L: L.tensor([0.1, 0.01, 0.001]),
    lambda L: L.tensor([1e-5, 1.0]),
    lambda L: L.tensor([1e8, 1.0]),
    lambda L: L.tensor([1e10, 2e10]),
    lambda L: L.tensor([123456.789, 0.5]),
    lambda L: L.tensor([1000.0, 1.0]),
    lambda L: L.tensor([1001.0, 1.0]),
    lambda L: L.tensor([float("nan"), 1.0, float("inf"), -float("inf")]),
    lambda L: L.tensor([float("nan"), 1.5]),
    lambda L: L.tensor([float("inf")]),
    lambda L: L.tensor([0.0, 0.0]),
    lambda L: L.tensor([-1, 100, -10000]),
    lambda L: L.tensor([True, False]),
    lambda L: L.tensor([[1, 2], [3, 4]]),
    lambda L: L.tensor([[1.5, 2], [3, 4]]),
    lambda L: L.arange(24).reshape(2, 3, 4),
    lambda L: L.arange(24.0).reshape(2, 3, 4) / 7,
    lambda L: L.zeros(0),
    lambda L: L.zeros(0, 3),
    lambda L: L.zeros(2, 0, dtype=L.int64),
    lambda L: L.zeros(0, dtype=L.int32),
    lambda L: L.zeros(3, dtype=L.float64),
    lambda L: L.tensor([1, 2], dtype=L.int8),
    lambda L: L.tensor([1, 2], dtype=L.uint8),
    lambda L: L.tensor([1.5, 2], dtype=L.float16),
    lambda L: L.tensor([1.5, 2], dtype=L.bfloat16),
    lambda L: L.tensor(1.0, dtype=L.float64),
    lambda L: L.arange(2000),
    lambda L: L.arange(2000.0) / 3,
    lambda L: L.arange(3000).reshape(30, 100),
    lambda L: L.arange(1001).reshape(7, 11, 13)[:, :, :] if False else L.arange(7 * 11 * 13).reshape(7, 11, 13),
    lambda L: L.arange(100.0),
    lambda L: L.arange(40) * 1000,
    lambda L: L.ones(2, 2, requires_grad=True),
    lambda L: L.ones(2, requires_grad=True) * 2,
    lambda L: (L.ones(2, requires_grad=True) + 1).sum(),
    lambda L: L.ones(2, requires_grad=True).mean(),
    lambda L: L.ones(3, 3, requires_grad=True) @ L.ones(3, 3),
    lambda L: L.zeros(0, requires_grad=True),
    lambda L: L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True),
    lambda L: L.linspace(-1, 1, 9),
    lambda L: L.tensor([0.00012345, 123.45]),
    lambda L: L.tensor([[1e-10, 1], [2, 3]]),
    lambda L: L.tensor([12345678.0]),
    lambda L: L.tensor([-5.5]),
    lambda L: L.tensor([[True], [False]]),
    lambda L: L.nn.Parameter(L.ones(2)),
    lambda L: L.nn.Parameter(L.zeros(2, 2), requires_grad=False),
    lambda L: L.tensor([[-1.0, 1e-3], [5.0, 0.25]]),
    lambda L: L.arange(10.0).reshape(2, 5).t(),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_repr(i):
    t = CASES[i](torch)
    c = CASES[i](ctorch)
    assert repr(c) == repr(t)
    assert str(c) == str(t)


def test_print_options():
    try:
        for L in (torch, ctorch):
            L.set_printoptions(precision=2)
        assert repr(ctorch.tensor([1.23456, 2.0])) == repr(torch.tensor([1.23456, 2.0]))
        for L in (torch, ctorch):
            L.set_printoptions(sci_mode=True)
        assert repr(ctorch.tensor([1.23456, 2.0])) == repr(torch.tensor([1.23456, 2.0]))
        for L in (torch, ctorch):
            L.set_printoptions(threshold=5, edgeitems=2, linewidth=40, sci_mode=False)
        assert repr(ctorch.arange(10.0)) == repr(torch.arange(10.0))
        assert repr(ctorch.arange(30.0).reshape(5, 6)) == repr(torch.arange(30.0).reshape(5, 6))
        for L in (torch, ctorch):
            L.set_printoptions(profile="full")
        assert repr(ctorch.arange(1500)) == repr(torch.arange(1500))
    finally:
        for L in (torch, ctorch):
            L.set_printoptions(profile="default")
            L.set_printoptions(sci_mode=None)


def test_return_type_repr():
    assert repr(ctorch.max(ctorch.tensor([[1, 5], [3, 2]]), 1)) == repr(torch.max(torch.tensor([[1, 5], [3, 2]]), 1))
    r = ctorch.tensor([3.0, 1.0, 2.0]).sort()
    assert r.values.tolist() == [1.0, 2.0, 3.0] and r.indices.tolist() == [1, 2, 0]
    v, i = r
    assert v.tolist() == [1.0, 2.0, 3.0]


def test_dtype_repr_default_float64():
    try:
        torch.set_default_dtype(torch.float64)
        ctorch.set_default_dtype(ctorch.float64)
        for f in (lambda L: L.tensor([1.5]), lambda L: L.tensor([1.5], dtype=L.float32), lambda L: L.zeros(0)):
            assert repr(f(ctorch)) == repr(f(torch))
    finally:
        torch.set_default_dtype(torch.float32)
        ctorch.set_default_dtype(ctorch.float32)
