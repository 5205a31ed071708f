"""In-place changes to views that autograd cannot track, as PyTorch 1.13 refuses them: a view made in
no_grad mode (or in inference mode) changed with grad mode on, and an output of an op returning several
views (unbind, split, chunk) changed in place. Each case runs with torch and with ctorch: the same
exception type and message, or the same values when both allow it."""
import pytest
import torch
import ctorch


def c_leaf_view(L):
    x = L.ones(3, requires_grad=True)
    with L.no_grad():
        v = x[:2]
    v.mul_(2)


def c_nonleaf_view(L):
    x = L.ones(3, requires_grad=True)
    y = x * 2
    with L.no_grad():
        v = y[:2]
    v.mul_(2)


def c_other_requires_grad(L):
    x = L.ones(3)
    w = L.ones(2, requires_grad=True)
    with L.no_grad():
        v = x[:2]
    v.add_(w)


def c_detached_view(L):
    x = L.ones(3, requires_grad=True)
    y = x * 2
    with L.no_grad():
        v = y.detach()[:2]
    v.mul_(L.ones(2, requires_grad=True))


def c_copy_into(L):
    y = L.ones(3, requires_grad=True) * 2
    with L.no_grad():
        v = y[:2]
    v.copy_(L.ones(2, requires_grad=True))


def c_zero_transposed(L):
    y = L.ones(2, 2, requires_grad=True) * 2
    with L.no_grad():
        v = y.t()
    v.zero_()


def c_setitem(L):
    y = L.ones(2, 3, requires_grad=True) * 2
    with L.no_grad():
        v = y[0]
    v[1] = 5.0


def c_both_inside(L):  # allowed: view and in-place both untracked
    y = L.ones(3, requires_grad=True) * 2
    with L.no_grad():
        v = y[:2]
        v.mul_(2)
    return y.tolist(), v.tolist()


def c_both_outside(L):  # allowed: tracked
    x = L.ones(3, requires_grad=True)
    y = x * 2
    v = y[:2]
    v.mul_(3)
    y.sum().backward()
    return x.grad.tolist()


def c_no_grad_anywhere(L):  # allowed: nothing requires grad
    x = L.ones(3)
    with L.no_grad():
        v = x[:2]
    v.mul_(2)
    return x.tolist()


def c_unbind(L):
    y = L.ones(2, 3, requires_grad=True) * 2
    a, b = y.unbind(0)
    b.mul_(2)


def c_split(L):
    y = L.ones(4, requires_grad=True) * 2
    a, b = y.split(2)
    a.mul_(2)


def c_split_second(L):
    y = L.ones(4, requires_grad=True) * 2
    a, b = y.split(2)
    b.add_(1)


def c_split_sizes(L):
    y = L.ones(5, requires_grad=True) * 2
    a, b = y.split([2, 3])
    b.add_(1)


def c_split_plain(L):  # allowed: no grad involved
    a, b = L.ones(4).split(2)
    a.mul_(2)
    return a.tolist()


def c_split_no_grad(L):  # allowed: changed with grad mode off
    y = L.ones(4, requires_grad=True) * 2
    a, b = y.split(2)
    with L.no_grad():
        a.mul_(2)
    return y.tolist()


def c_inference_view(L):
    y = L.ones(3, requires_grad=True) * 2
    with L.inference_mode():
        v = y[:2]
    v.mul_(2)


CASES = [c_leaf_view, c_nonleaf_view, c_other_requires_grad, c_detached_view, c_copy_into, c_zero_transposed,
         c_both_inside, c_both_outside, c_no_grad_anywhere, c_unbind, c_split, c_split_second,
         c_split_sizes, c_split_plain, c_split_no_grad, c_inference_view]


def _run(fn, L):
    try:
        return ("ok", fn(L))
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_view_inplace_like_pytorch(fn):
    assert _run(fn, ctorch) == _run(fn, torch)


def test_setitem_on_no_grad_view():
    # PyTorch 1.13 stops here on an internal assert ("!grad_fn INTERNAL ASSERT FAILED"); ctorch refuses
    # it with the message of the rule it breaks
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        c_setitem(ctorch)


def test_refused_change_leaves_values():
    y = ctorch.ones(3, requires_grad=True) * 2
    with ctorch.no_grad():
        v = y[:2]
    with pytest.raises(RuntimeError, match="no_grad mode"):
        v.add_(ctorch.ones(2, requires_grad=True))
    assert y.tolist() == [2.0, 2.0, 2.0]
