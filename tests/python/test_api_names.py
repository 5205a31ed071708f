"""API names: the share of the 500 most used PyTorch names (api_names.txt) that ctorch has.

The share is the suite's passed/total; missing names are printed, not failed on (the goal is
all of them, reached over time). What fails: a malformed list, or a name PyTorch lacks.
"""
import os

import torch
import ctorch

HERE = os.path.dirname(os.path.abspath(__file__))


def load_names():
    names = []
    with open(os.path.join(HERE, "api_names.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                names.append(line.split()[0])
    return names


def resolve(lib, name):
    """lib's object for a dotted torch name (torch.nn.functional.relu), or None when absent."""
    parts = name.split(".")
    assert parts[0] == "torch"
    obj = lib
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def test_list_is_well_formed():
    names = load_names()
    assert len(names) == 500, "api_names.txt has %d names; regenerate it with tests/python/gen_api_names.py" % len(
        names)
    assert len(set(names)) == len(names), "duplicate names in api_names.txt"
    absent = [n for n in names if resolve(torch, n) is None]
    assert not absent, "names PyTorch does not have: %s" % absent


def test_share(conformance, capsys):
    names = load_names()
    # a name that exists only to refuse (complex, quantized, sparse, named tensors) is not had
    missing = [n for n in names if resolve(ctorch, n) is None or getattr(resolve(ctorch, n), "_ctorch_unsupported", None)]
    have = len(names) - len(missing)
    conformance(have, len(names), "names")
    with capsys.disabled():
        print("\nAPI names: ctorch has %d of the %d most used PyTorch names (%.1f%%); missing %d:" %
              (have, len(names), 100.0 * have / len(names), len(missing)))
        line = " "
        for n in missing:
            if len(line) + len(n) > 110:
                print(line)
                line = " "
            line += " " + n
        if missing:
            print(line)
