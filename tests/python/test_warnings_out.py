"""out= behaviour matched last: the resize warning is a Python UserWarning with PyTorch's text, out= dtype
rules per op (sum/prod/cumsum compute in out's dtype), and user Functions whose gradient broadcasts."""
import warnings

import pytest
import torch
import ctorch

from conftest import both

SUFFIX = " (Triggered internally at"  # PyTorch appends where in its C++ sources the warning came from


def _resize_warnings(L):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        o = L.zeros(1)
        L.add(L.ones(2), L.ones(2), out=o)
        L.add(L.ones(2), L.ones(2), out=L.zeros(0))  # an empty out is resized silently
    return o, [(x.category, str(x.message).split(SUFFIX)[0]) for x in w]


def test_out_resize_is_userwarning_with_torch_text():
    oc, wc = _resize_warnings(ctorch)
    ot, wt = _resize_warnings(torch)
    assert [c.__name__ for c, _ in wc] == ["UserWarning"]
    assert [(c.__name__, m) for c, m in wc] == [(c.__name__, m) for c, m in wt]
    assert oc.tolist() == ot.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("L", [torch, ctorch], ids=["torch", "ctorch"])
def test_out_resize_warning_as_error(L):
    # with warnings turned into errors, both raise UserWarning after out is written
    o = L.zeros(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="An output with one or more elements was resized"):
            L.add(L.ones(2), L.ones(2), out=o)
    assert o.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("fn", ["sum", "prod", "cumsum", "cumprod"])
@pytest.mark.parametrize("odt", ["int64", "float64"])
def test_reduction_out_computes_in_out_dtype(fn, odt):
    def f(L):
        x = L.tensor([1.5, 1.5, 0.7, 2.25])
        o = L.zeros(4 if fn.startswith("cum") else (), dtype=getattr(L, odt))
        r = getattr(L, fn)(x, 0, out=o)
        assert r is o
        return o
    both(f, rtol=1e-12, atol=0)


def test_norm_out_casts_result():
    def f(L):
        o = L.zeros((), dtype=L.int64)
        L.norm(L.tensor([1.5, 1.5, 0.7]), out=o)
        return o
    both(f)


def test_function_gradient_summed_to_input_shape():
    # a backward returning a broadcastable gradient is summed to the input's shape, as PyTorch does
    def f(L):
        class F(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g.expand(3, 2, 1) * L.tensor([[[1.0]], [[2.0]], [[3.0]]])
        x = L.ones(2, 1, requires_grad=True)
        F.apply(x).sum().backward()
        return x.grad
    both(f, rtol=0, atol=0)


def test_retains_grad_property():
    def f(L):
        x = L.ones(2, requires_grad=True)
        y = x * 2
        a = (x.retains_grad, y.retains_grad)
        y.retain_grad()
        x.retain_grad()
        return a + (x.retains_grad, y.retains_grad)
    both(f)


@pytest.mark.parametrize("name", ["relu_", "sigmoid_", "exp_", "zero_", "clamp_"])
def test_inplace_function_forms(name):
    def f(L):
        x = L.tensor([-1.0, 0.5, 2.0])
        args = (0.0, 1.0) if name == "clamp_" else ()
        r = getattr(L, name)(x, *args)
        return r is x, x
    both(f)
