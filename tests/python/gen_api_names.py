"""Writes tests/python/api_names.txt: the 500 most used names of torch, torch.Tensor, torch.nn,
torch.nn.functional and torch.optim, ranked from PyTorch 1.13's own documentation text.

There is no network here and Debian ships neither PyTorch's tutorials nor its Sphinx docs, so the
"docs" are the docstrings that those pages are built from: the installed package's sources under
/usr/lib/python3/dist-packages/torch (_torch_docs.py, _tensor_docs.py, nn/functional.py, the
modules' and optimizers' docstrings, ...).

Candidates: the public (no leading underscore) non-module attributes of torch, torch.Tensor,
torch.nn, torch.nn.functional, torch.optim and torch.optim.lr_scheduler (torch's dtype objects
included; deprecated storage classes and private helpers are never candidates).

Rank: (1) the number of mentions in docstring example lines (lines starting with `>>>` or `...`
in any .py file of the package), (2) ties broken by mentions anywhere in the package's .py
files except torch/testing/_internal, (3) then alphabetically. A mention is `torch.NAME`,
`nn.NAME`, `F.NAME` / `functional.NAME`, `optim.NAME` / `lr_scheduler.NAME`, or for a Tensor
attribute `.NAME` after an expression (and not after `torch.`, `nn.`, `F.`, `np.`, `self.`).

Usage: /usr/bin/python3 tests/python/gen_api_names.py [N]   (N defaults to 500)
"""
import collections
import os
import re
import sys
import types

import torch
import torch.nn
import torch.nn.functional
import torch.optim
import torch.optim.lr_scheduler

ROOT = os.path.dirname(torch.__file__)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_names.txt")


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_") and not isinstance(getattr(obj, n, None), types.ModuleType)}


def candidates():
    c = {}
    for n in public(torch):
        v = getattr(torch, n, None)
        if n.endswith("Storage") or n.endswith("Tensor") and n != "Tensor":  # legacy typed classes
            continue
        c["torch." + n] = ("torch", n)
    for n in public(torch.Tensor):
        c["torch.Tensor." + n] = ("Tensor", n)
    for n in public(torch.nn):
        c["torch.nn." + n] = ("nn", n)
    for n in public(torch.nn.functional):
        v = getattr(torch.nn.functional, n)
        if callable(v) and getattr(v, "__module__", "") and not getattr(v, "__module__", "").startswith("typing"):
            c["torch.nn.functional." + n] = ("F", n)
    for n in public(torch.optim):
        c["torch.optim." + n] = ("optim", n)
    for n in public(torch.optim.lr_scheduler):
        v = getattr(torch.optim.lr_scheduler, n)
        if isinstance(v, type) and v.__module__ == "torch.optim.lr_scheduler":
            c["torch.optim.lr_scheduler." + n] = ("sched", n)
    return c


PREFIX = {
    "torch": r"(?<![\w.])torch\.",
    "nn": r"(?<![\w])(?:torch\.)?nn\.",
    "F": r"(?<![\w])(?:F|functional)\.",
    "optim": r"(?<![\w])(?:torch\.)?optim\.",
    "sched": r"(?<![\w])lr_scheduler\.",
    # a Tensor attribute: `.NAME` after an identifier, `)` or `]` (the identifier is checked below)
    "Tensor": r"(?:\b(\w+)|[\)\]])\.",
}
# `.NAME` after these is a module's or another library's function, not a Tensor attribute
NOT_TENSORS = {"torch", "F", "np", "numpy", "nn", "self", "math", "os", "sys", "random", "optim", "functional",
               "init", "utils", "data", "linalg", "fft", "special", "distributed", "dist", "jit", "cuda", "autograd",
               "onnx", "testing", "sparse", "lr_scheduler", "fx", "ao", "quantization", "backends", "distributions",
               "nested", "masked", "hub", "profiler", "multiprocessing", "mp", "package", "futures", "scipy", "re"}


def count(texts, cands):
    """mentions of each candidate in the texts (one regex per namespace)"""
    counts = collections.Counter()
    by_ns = collections.defaultdict(dict)
    for full, (ns, n) in cands.items():
        by_ns[ns][n] = full
    for ns, names in by_ns.items():
        pat = re.compile(PREFIX[ns] + r"(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) +
                         r")\b")
        for t in texts:
            for m in pat.finditer(t):
                if ns == "Tensor":
                    if m.group(1) in NOT_TENSORS:
                        continue
                    counts[names[m.group(2)]] += 1
                else:
                    counts[names[m.group(1)]] += 1
    return counts


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    examples, code = [], []
    for d, _, files in os.walk(ROOT):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            p = os.path.join(d, f)
            try:
                text = open(p, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            examples.append("\n".join(l for l in text.splitlines() if re.match(r"\s*(>>>|\.\.\.)\s", l)))
            if "/testing/_internal" not in p:
                code.append(text)
    cands = candidates()
    ex, co = count(examples, cands), count(code, cands)
    ranked = sorted(cands, key=lambda k: (-ex[k], -co[k], k))[:n]
    with open(OUT, "w") as f:
        f.write("# The %d most used names of torch, torch.Tensor, torch.nn, torch.nn.functional and torch.optim\n" % n)
        f.write("# in PyTorch %s's own documentation text: made by tests/python/gen_api_names.py (its docstring\n"
                "# states the candidates and the ranking rule). Columns: name, mentions in docstring examples,\n"
                "# mentions in the package's code.\n" % ".".join(torch.__version__.split(".")[:2]))
        for k in ranked:
            f.write("%s %d %d\n" % (k, ex[k], co[k]))
    print("wrote %s: %d names (%d candidates); the last has %d example mentions" % (OUT, len(ranked), len(cands),
                                                                                   ex[ranked[-1]]))


if __name__ == "__main__":
    main()
