"""Views made with grad mode off (no_grad, set_grad_enabled(False)) or in inference mode of a tensor that
requires grad: PyTorch 1.13 reports requires_grad=True with no grad_fn (is_leaf), ops using them record graph
but no gradient reaches the view or its base, and in-place changes with grad mode on are refused."""
import pytest
from conftest import both


def _base(L, grad=True):
    b = L.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]], requires_grad=grad)
    return b


MODES = {
    "no_grad": lambda L: L.no_grad(),
    "set_grad_enabled": lambda L: L.set_grad_enabled(False),
    "inference_mode": lambda L: L.inference_mode(),
}
VIEWS = {
    "slice": lambda b: b[:, 1:], "select": lambda b: b[1], "view": lambda b: b.view(6), "t": lambda b: b.t(),
    "reshape": lambda b: b.reshape(3, 2), "unsqueeze": lambda b: b.unsqueeze(0), "expand": lambda b: b[:1].expand(3, 3),
    "diagonal": lambda b: b.diagonal(), "transpose": lambda b: b.transpose(0, 1), "narrow": lambda b: b.narrow(1, 0, 2),
}


def _made(L, mode, view, grad=True, nonleaf=False):
    b = _base(L, grad)
    src = b * 1 if nonleaf else b
    with MODES[mode](L):
        v = VIEWS[view](src)
    return b, v


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_attributes(mode, view):
    def f(L):
        b, v = _made(L, mode, view)
        _, v2 = _made(L, mode, view, nonleaf=True)
        _, v3 = _made(L, mode, view, grad=False)
        return (v.requires_grad, v.grad_fn is None, v.is_leaf, v2.requires_grad, v2.grad_fn is None, v3.requires_grad,
                v.detach().requires_grad, repr(v))
    both(f)


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_used_in_graph(mode):
    def f(L):
        b, v = _made(L, mode, "slice")
        y = v * 2
        z = (y.sum() + (b * b).sum())  # b also used directly: only that path gives b its gradient
        z.backward()
        return (y.requires_grad, type(y.grad_fn).__name__, y.is_leaf, b.grad, v.grad)
    both(f)


def test_backward_reaches_nothing():
    def f(L):
        b, v = _made(L, "no_grad", "view")
        (v ** 2).sum().backward()
        return b.grad, v.grad
    both(f)


def test_view_of_the_view_records():
    def f(L):
        b, v = _made(L, "no_grad", "slice")
        w = v[:1]  # made with grad mode on: a normal view of something requiring grad
        return w.requires_grad, w.grad_fn is not None, w.is_leaf
    both(f)


def test_autograd_grad_unused():
    def f(L):
        b, v = _made(L, "no_grad", "slice")
        return L.autograd.grad((v * 3).sum(), b)
    ec, et = both(f)
    assert str(ec) == str(et)


def test_requires_grad_false_keeps_it():
    def f(L):
        b, v = _made(L, "no_grad", "slice")
        v.requires_grad_(False)
        return v.requires_grad
    both(f)


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_inplace_outside_refused(mode):
    def f(L):
        b, v = _made(L, mode, "slice")
        v.mul_(2)
    ec, et = both(f)
    assert str(ec) == str(et)


def test_inplace_inside_allowed():
    def f(L):
        b = _base(L)
        with L.no_grad():
            v = b[:, :2]
            v.mul_(2)
            v[0, 0] = 7
        return b, v.requires_grad, b.requires_grad, b.is_leaf
    both(f)


def test_non_view_op_does_not_require_grad():
    def f(L):
        b = _base(L)
        with L.no_grad():
            r = b * 2
            c = b.clone()
        return r.requires_grad, c.requires_grad
    both(f)


@pytest.mark.parametrize("data", [[1.0, 2.0], [[1, 2], [3, 4]], 2.5, 3, (True, False), []])
def test_new_tensor_version_zero(data):
    # found while checking the views above: a tensor made from Python numbers starts at version 0
    def f(L):
        t = L.tensor(data)
        with L.no_grad():
            v = L.tensor(data, dtype=L.float64, requires_grad=True)[...]
        return t._version, v._version
    both(f)
