"""PyTorch's argument-parser errors for the common overloaded ops ("X() received an invalid combination
of arguments - got (...), but expected one of: ..." and the one-signature "argument 'a' (position n) must
be T, not U" family), run with torch and with ctorch in one process: same exception type and the same
whole message, "didn't match because ..." lines included."""
import pytest
import torch
import ctorch


class W:  # an argument of no type any op accepts
    pass


CASES = [
    # add: one visible signature (plus a hidden deprecated one)
    "L.add(t, 'a')", "t.add('a')", "L.add(t, t, foo=1)", "L.add(t)", "L.add(t, t, t, t, t, t)", "t.add(t, W())",
    "L.add(t, t, alpha='x')", "t.add(other=W())",
    # reductions: dim given as a name, a float, too many, a bad keyword
    "L.sum(t, 'x')", "t.sum(dim='x')", "L.mean(t, 1.5)", "t.mean(1.5)", "t.sum(1, 2, 3, 4)", "L.sum(t, 0, foo=1)",
    "t.sum(0, 'k')", "L.mean(t, dim=W())", "t.sum(dtype=3)", "L.mean(t2, (0, 'a'))",
    # max / min
    "L.max(t, 'a')", "t.max('a')", "L.min(t, None, None)", "L.max(t, 0, True, 1)", "L.max(t, 0, out=W())",
    "t.min(W())", "t.max(0, 'x')", "L.min(t, dim=1.5)", "t.max(0, keepdim=W())",
    # clamp
    "L.clamp(t, 'a')", "L.clamp(t, min='a')", "t.clamp('a', 1)", "t.clamp(W())", "L.clamp(t, 0, 1, 2)",
    # where
    "L.where(t > 0, 'a', t)", "L.where(t > 0, t, W())", "L.where(t > 0, t, t, out=W())", "L.where(W(), t, t)",
    "L.where(t > 0, 'a', 'b')",
    # cat
    "L.cat(t)", "L.cat([t], 'a')", "L.cat([t], dim=1.5)", "L.cat()", "L.cat([t], 0, 1)", "L.cat([t, 1])",
    "L.cat([t], dim='a')",
    # view / reshape
    "t.view('a')", "t.view(2.0)", "t.view(2, 'a')", "t.view(dtype=W())", "t.view((2, 'a'))", "t.reshape('a')",
    "t.reshape(2, 'a')", "L.reshape(t, 'a')", "L.reshape(t, (2, 1.5))", "t.view(None)",
    # to
    "t.to('a', 'b')", "t.to(dtype=3)", "t.to(W())", "t.to(L.float64, W())",
    # factories
    "L.zeros('a')", "L.ones(2, 'a')", "L.ones((2, 'a'))", "L.full(2, 3)", "L.arange('a')", "L.randn('a')",
    "L.zeros(2, foo=1)", "L.full((2,), 'a')", "L.arange(1, 'a')", "L.randn(2, dtype=3)", "L.ones(2.5)",
    "L.arange(t)", "L.zeros(2, dtype='float')", "L.full((2,), 1, W())", "L.arange(0, 5, 1, 2)",
    "L.randn(2, generator=3)", "L.ones(size=(2, 'a'))", "t.sum(0, 1)", "t.max(0, 1)", "L.ones(2, requires_grad=1)",
]


def _run(L, case):
    t = L.ones(2)
    t2 = L.ones(2, 3)
    try:
        eval(case, {"L": L, "t": t, "t2": t2, "W": W})
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return "no error", ""


@pytest.mark.parametrize("case", CASES)
def test_parser_error_matches_pytorch(case):
    et, mt = _run(torch, case)
    ec, mc = _run(ctorch, case)
    assert et != "no error", "PyTorch accepts %s: not a parser-error case" % case
    assert (ec, mc) == (et, mt)


def test_valid_calls_unaffected():
    # the error hook runs only on failure: valid overloads still work, other errors keep their text
    t = ctorch.ones(2, 3)
    assert t.sum(dim=1).tolist() == [3.0, 3.0]
    assert ctorch.max(t, 1)[0].tolist() == [1.0, 1.0]
    assert ctorch.where(t > 0, 1.0, t).tolist() == [[1.0] * 3] * 2
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.sum(5)
    with pytest.raises(RuntimeError, match="shape '\\[4\\]' is invalid for input of size 6"):
        t.view(4)
