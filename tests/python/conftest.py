"""ctorch vs PyTorch 1.13 in one process: helpers shared by the suites."""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# make ctorch importable from a build tree when PYTHONPATH does not name one
if not any(os.path.isdir(os.path.join(p, "ctorch")) for p in sys.path if p):
    for cand in ("build/python-ext", "build/python/python-ext"):
        d = os.path.join(ROOT, cand)
        if os.path.isdir(os.path.join(d, "ctorch")):
            sys.path.insert(0, d)
            break

import pytest  # noqa: E402
import torch  # noqa: E402
import ctorch  # noqa: E402


def to_py(x):
    """A comparable plain form of a result from either library."""
    if isinstance(x, (torch.Tensor, ctorch.Tensor)):
        return ("T", str(x.dtype), tuple(x.shape), x.detach().tolist())
    if isinstance(x, (tuple, list)):
        return type(x).__name__ if False else tuple(to_py(v) for v in x)
    if isinstance(x, (torch.dtype, ctorch.dtype)):
        return str(x)
    if isinstance(x, torch.Size) or isinstance(x, ctorch.Size):
        return ("Size", tuple(x))
    return x


def _close(a, b, rtol, atol):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= atol + rtol * abs(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, rtol, atol) for x, y in zip(a, b))
    return a == b


def assert_same(c, t, rtol=1e-5, atol=1e-6):
    pc, pt = to_py(c), to_py(t)
    assert _close(pc, pt, rtol, atol), "ctorch: %r\ntorch:  %r" % (pc, pt)


def both(fn, rtol=1e-5, atol=1e-6):
    """Run fn(lib) with torch and ctorch; compare results, or exception types and messages."""
    err_t = err_c = None
    try:
        rt = fn(torch)
    except Exception as e:  # noqa: BLE001
        err_t = e
    try:
        rc = fn(ctorch)
    except Exception as e:  # noqa: BLE001
        err_c = e
    if err_t is not None or err_c is not None:
        assert err_t is not None, "only ctorch raised: %r" % (err_c,)
        assert err_c is not None, "only torch raised: %r" % (err_t,)
        assert type(err_c).__name__ == type(err_t).__name__, "%r vs %r" % (err_c, err_t)
        return err_c, err_t
    assert_same(rc, rt, rtol, atol)
    return rc, rt


@pytest.fixture
def libs():
    return torch, ctorch


# Case counts recorded by suites that check many cases per test (type promotion, API names):
# {"python/<file>/<label>": [passed, total]}, written beside the per-file test counts.
_CASES = {}


@pytest.fixture
def conformance(request):
    """record(passed, total, label="cases"): adds a case count to this file's conformance entry."""
    suite = "python/" + os.path.basename(str(request.node.fspath))[:-3]

    def record(passed, total, label="cases"):
        c = _CASES.setdefault(suite + "/" + label, [0, 0])
        c[0] += passed
        c[1] += total
    return record


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Prints each suite's counts and writes them into the conformance file
    ({"python/<suite>": {"passed", "total"}}; $CTORCH_CONFORMANCE, else build/conformance.json).
    Only a run of every collected test writes it: a filtered (-k, -x stop, one file) run would
    record partial counts, so it only prints them."""
    import json
    counts = {}
    ran = set()
    for key in ("passed", "failed", "xfailed", "xpassed", "error", "skipped"):
        for rep in terminalreporter.stats.get(key, []):
            if getattr(rep, "when", "call") not in ("call", "setup"):
                continue
            ran.add(rep.nodeid)
            suite = "python/" + os.path.basename(rep.nodeid.split("::")[0])[:-3]
            c = counts.setdefault(suite, {"passed": 0, "total": 0})
            if key == "skipped":
                c["skipped"] = c.get("skipped", 0) + 1
                continue
            c["total"] += 1
            if key in ("passed", "xpassed"):
                c["passed"] += 1
    for suite, (p, t) in _CASES.items():
        counts[suite] = {"passed": p, "total": t}
    if not counts:
        return
    terminalreporter.write_sep("-", "conformance (passed/total)")
    for suite in sorted(counts):
        c = counts[suite]
        terminalreporter.write_line("%-44s %6d / %-6d%s" % (suite, c["passed"], c["total"],
                                                          "  (%d skipped)" % c["skipped"] if c.get("skipped") else ""))
    collected = getattr(terminalreporter, "_numcollected", None)
    full = (collected is not None and len(ran) >= collected and not terminalreporter.stats.get("deselected")
            and not config.option.keyword and not config.option.markexpr
            and all(os.path.abspath(str(a).split("::")[0]) == HERE for a in config.args))
    path = os.environ.get("CTORCH_CONFORMANCE", os.path.join(ROOT, "build", "conformance.json"))
    if not full:
        terminalreporter.write_line("(a partial run: %s not updated)" % path)
        return
    try:
        data = json.load(open(path)) if os.path.exists(path) else {}
    except (OSError, ValueError):
        data = {}
    # a full run replaces every python/ entry, so suites that no longer exist drop out
    data = {k: v for k, v in data.items() if not k.startswith("python/")}
    data.update(counts)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        terminalreporter.write_line("written to %s" % path)
    except OSError as e:
        terminalreporter.write_line("could not write %s: %s" % (path, e))
