#!/usr/bin/env python3
"""Write tests/fixtures/generator_ref.txt: reference random streams from PyTorch's
CPU generator, read by tests/c/test_generator.c.

    python3 tests/gen_generator_ref.py [output_path]

Format (one command per line, '#' starts a comment line):

    cap avx2|default          capability the following cases were recorded with
    case NAME SEED            new generator, manual_seed(SEED)
    OP ARGS [| INPUTS] = OUTPUTS   run OP, compare every output exactly
    OP ARGS [| INPUTS] # FNV       run OP, compare FNV-1a-64 of the output bytes
    state # FNV               FNV-1a-64 of ct_generator_get_state == of torch's get_state()
    setstate HEX              ct_generator_set_state from torch's bytes

Floats are written with float.hex() (exact), float16/bfloat16 as raw bit
patterns, integers in decimal.  The 'default' capability part is recorded by
re-running this script in a child process with ATEN_CPU_CAPABILITY=default.
"""
import os
import subprocess
import sys

import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore", category=UserWarning)

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


def fnv1a(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h ^= b
        h = (h * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def fnv_tensor(t: torch.Tensor) -> str:
    t = t.contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.view(torch.int16)
    arr = t.numpy()
    return "0x%016x" % fnv1a(arr.astype(arr.dtype.newbyteorder("<")).tobytes())


def fmt_values(t: torch.Tensor):
    t = t.contiguous().reshape(-1)
    if t.dtype in (torch.float32, torch.float64):
        return [fh(x) for x in t.tolist()]
    if t.dtype in (torch.float16, torch.bfloat16):
        return ["0x%04x" % (int(x) & 0xFFFF) for x in t.view(torch.int16).tolist()]
    return [str(int(x)) for x in t.tolist()]


def fh(x: float) -> str:
    """float.hex() without the trailing zero digits (still exact)"""
    h = float(x).hex()
    if "." in h:
        mant, exp = h.split("p")
        mant = mant.rstrip("0").rstrip(".")
        h = mant + "p" + exp
    return h


class Writer:
    def __init__(self):
        self.lines = []

    def comment(self, s):
        self.lines.append("# " + s)

    def raw(self, s):
        self.lines.append(s)

    def op(self, name, args, out, inputs=None, hashed=False):
        s = name + " " + " ".join(str(a) for a in args)
        if inputs is not None:
            s += " | " + " ".join(inputs)
        if hashed:
            s += " # " + fnv_tensor(out)
        else:
            s += " = " + " ".join(fmt_values(out))
        self.lines.append(s)


DT = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}


def uniform(w, g, dt, n, a, b, hashed=False):
    t = torch.empty(n, dtype=DT[dt]).uniform_(a, b, generator=g)
    w.op("uniform_" + dt, [n, fh(a), fh(b)], t, hashed=hashed)


def normal(w, g, dt, n, m, s, hashed=False):
    t = torch.empty(n, dtype=DT[dt]).normal_(m, s, generator=g)
    w.op("normal_" + dt, [n, fh(m), fh(s)], t, hashed=hashed)


def rand(w, g, dt, n, hashed=False):
    # torch.rand / torch.randn == uniform_(0, 1) / normal_(0, 1)
    t = torch.rand(n, dtype=DT[dt], generator=g)
    w.op("uniform_" + dt, [n, fh(0.0), fh(1.0)], t, hashed=hashed)


def randn(w, g, dt, n, hashed=False):
    t = torch.randn(n, dtype=DT[dt], generator=g)
    w.op("normal_" + dt, [n, fh(0.0), fh(1.0)], t, hashed=hashed)


def randint(w, g, dt, n, lo, hi, hashed=False):
    tdt = {"i64": torch.int64, "i32": torch.int32, "f32": torch.float32, "f64": torch.float64}[dt]
    t = torch.randint(lo, hi, (n,), dtype=tdt, generator=g)
    w.op("randint_" + dt, [n, lo, hi], t, hashed=hashed)


def record(cap):
    show = torch.__config__.show()
    expect = {"avx2": "CPU capability usage: AVX2", "default": "CPU capability usage: NO AVX"}[cap]
    assert expect in show, "torch did not pick the %s kernels" % cap
    w = Writer()
    w.raw("cap " + cap)

    def case(name, seed):
        w.raw("case %s %d" % (name, seed))
        return torch.Generator().manual_seed(seed)

    sizes = [1, 3, 15, 16, 17, 100]
    seeds = [0, 42] if cap == "avx2" else [0]
    # ---- rand / randn over sizes, each on a fresh generator
    for seed in seeds:
        for dt in ("f32", "f64"):
            for n in sizes:
                g = case("rand_%s_n%d_s%d" % (dt, n, seed), seed)
                rand(w, g, dt, n)
                g = case("randn_%s_n%d_s%d" % (dt, n, seed), seed)
                randn(w, g, dt, n)
    # ---- other seeds, including > 32 bit ones (mt19937 uses the low 32 bits)
    for seed in [1, 12345, 2**32 + 7, 67280421310721, 2**64 - 1]:
        g = case("seeds_%d" % seed, seed)
        rand(w, g, "f32", 5)
        randn(w, g, "f32", 5)
        randn(w, g, "f64", 20)
        rand(w, g, "f64", 3)
    # ---- sequences on one generator
    g = case("seq_a", 7)
    rand(w, g, "f32", 5)
    randn(w, g, "f32", 20)
    rand(w, g, "f32", 3)
    g = case("seq_b", 2024)
    randn(w, g, "f64", 3)  # leaves a cached normal
    rand(w, g, "f64", 2)
    randn(w, g, "f32", 1)  # uses the cached normal
    randn(w, g, "f32", 2)
    randn(w, g, "f32", 33)
    randn(w, g, "f64", 31)
    randint(w, g, "i64", 4, 0, 10)
    randn(w, g, "f64", 1)
    # ---- uniform_(-2, 3) / normal_(1, 2), other ranges
    for dt in ("f32", "f64"):
        g = case("uniform_m2_3_%s" % dt, 3)
        uniform(w, g, dt, 7, -2.0, 3.0)
        uniform(w, g, dt, 40, -2.0, 3.0)
        uniform(w, g, dt, 5, 0.1, 0.7)
        uniform(w, g, dt, 5, -1e-3, 1e6)
        g = case("normal_1_2_%s" % dt, 4)
        normal(w, g, dt, 7, 1.0, 2.0)
        normal(w, g, dt, 40, 1.0, 2.0)
        normal(w, g, dt, 5, -3.5, 0.1)
        normal(w, g, dt, 35, -3.5, 0.1)
    # ---- large streams, checked through a hash
    g = case("big_f32", 99)
    rand(w, g, "f32", 100003, hashed=True)
    randn(w, g, "f32", 100003, hashed=True)
    uniform(w, g, "f32", 100000, -2.0, 3.0, hashed=True)
    normal(w, g, "f32", 100000, 1.0, 2.0, hashed=True)
    normal(w, g, "f32", 100001, -0.25, 3.0, hashed=True)
    g = case("big_f64", 98)
    rand(w, g, "f64", 100003, hashed=True)
    randn(w, g, "f64", 100003, hashed=True)
    uniform(w, g, "f64", 100000, -2.0, 3.0, hashed=True)
    normal(w, g, "f64", 100000, 1.0, 2.0, hashed=True)
    # many small (< 16 elements) normal_ calls on one generator
    g = case("small_normals", 97)
    outs = [torch.empty(k % 15 + 1).normal_(0.5, 1.5, generator=g) for k in range(3000)]
    w.raw("# 3000 normal_f32 calls of sizes k%15+1, mean 0.5 std 1.5, hashed together")
    w.raw("normal_f32_small_seq 3000 %s %s # %s" % (fh(0.5), fh(1.5), fnv_tensor(torch.cat(outs))))
    # ---- half / bfloat16
    for dt in ("f16", "bf16"):
        g = case("half_%s" % dt, 5)
        rand(w, g, dt, 5)
        rand(w, g, dt, 20)
        uniform(w, g, dt, 9, -2.0, 3.0)
        randn(w, g, dt, 5)
        randn(w, g, dt, 17)
        normal(w, g, dt, 33, 1.0, 2.0)
        g = case("big_%s" % dt, 6)
        uniform(w, g, dt, 50000, -2.0, 3.0, hashed=True)
        normal(w, g, dt, 50000, 1.0, 2.0, hashed=True)
        normal(w, g, dt, 50001, 0.0, 1.0, hashed=True)
    # ---- exponential
    g = case("exponential", 8)
    t = torch.empty(6).exponential_(1.0, generator=g)
    w.op("exponential_f32", [6, fh(1.0)], t)
    t = torch.empty(6, dtype=torch.float64).exponential_(2.5, generator=g)
    w.op("exponential_f64", [6, fh(2.5)], t)
    t = torch.empty(20000).exponential_(0.5, generator=g)
    w.op("exponential_f32", [20000, fh(0.5)], t, hashed=True)
    if cap != "avx2":
        return w.lines
    # ---- raw engine output (numpy's MT19937 with init_genrand seeding,
    # cross-checked against torch)
    for seed in [0, 5489, 2**32 + 1]:
        g = case("raw_%d" % seed, seed)
        bg = np.random.MT19937()
        bg._legacy_seeding(seed & 0xFFFFFFFF)
        raw = bg.random_raw(1300).astype(np.uint64)
        ti = torch.randint(0, 2**32 - 1, (1300,), generator=g)
        assert all(int(a) % (2**32 - 1) == int(b) for a, b in zip(raw, ti.tolist()))
        w.raw("random32 10 = " + " ".join(str(int(x)) for x in raw[:10]))
        w.raw("random32 1290 # 0x%016x" % fnv1a(raw[10:].astype("<u4").tobytes()))
        t = torch.empty(700, dtype=torch.int64).random_(-2**63, None, generator=g)
        w.raw("random64 5 = " + " ".join(str(int(x) & 0xFFFFFFFFFFFFFFFF) for x in t[:5].tolist()))
        w.raw("random64 695 # " + fnv_tensor(t[5:]))
    # ---- randint
    g = case("randint", 11)
    randint(w, g, "i64", 10, 0, 10)
    randint(w, g, "i64", 10, -5, 5)
    randint(w, g, "i64", 10, 0, 2**40)
    randint(w, g, "i64", 5, -(2**62), 2**62)
    randint(w, g, "i64", 5, 0, 2**32)      # exactly 2^32: random64
    randint(w, g, "i64", 5, 0, 2**32 - 1)  # random()
    randint(w, g, "i64", 5, -(2**63), 2**63 - 1)
    randint(w, g, "i32", 10, -5, 5)
    randint(w, g, "i32", 5, -(2**31), 2**31 - 1)
    randint(w, g, "f32", 10, 0, 10)
    randint(w, g, "f32", 5, 0, 2**40)
    randint(w, g, "f32", 5, -(2**30) - 3, 2**30 + 5)
    randint(w, g, "f64", 10, -100, 100)
    randint(w, g, "f64", 5, 0, 2**60 + 3)
    randint(w, g, "i64", 100000, -1000, 1000, hashed=True)
    # ---- bernoulli
    g = case("bernoulli", 12)
    t = torch.empty(20).bernoulli_(0.3, generator=g)
    w.op("bernoulli_f32", [20, fh(0.3)], t)
    p = torch.rand(20, generator=torch.Generator().manual_seed(100))
    t = torch.bernoulli(p, generator=g)
    w.op("bernoulli_f32t", [20], t, inputs=fmt_values(p))
    t = torch.empty(10).bernoulli_(p[:10].clone(), generator=g)
    w.op("bernoulli_f32t", [10], t, inputs=fmt_values(p[:10]))
    pd = torch.rand(10, dtype=torch.float64, generator=torch.Generator().manual_seed(101))
    t = torch.bernoulli(pd, generator=g)
    w.op("bernoulli_f64t", [10], t, inputs=fmt_values(pd))
    p01 = torch.tensor([0.0, 1.0, 0.5, 0.0, 1.0, 1e-30, 0.999999], dtype=torch.float32)
    t = torch.bernoulli(p01, generator=g)
    w.op("bernoulli_f32t", [7], t, inputs=fmt_values(p01))
    t = torch.empty(10, dtype=torch.float64).bernoulli_(0.75, generator=g)
    w.op("bernoulli_f64", [10, fh(0.75)], t)
    t = torch.empty(50000).bernoulli_(0.5, generator=g)
    w.op("bernoulli_f32", [50000, fh(0.5)], t, hashed=True)
    # ---- randperm
    g = case("randperm", 13)
    for n in [1, 2, 5, 10]:
        w.op("randperm", [n], torch.randperm(n, generator=g))
    t = torch.randperm(1000, generator=g)
    w.op("randperm", [1000], t)
    t = torch.randperm(100000, generator=g)
    w.op("randperm", [100000], t, hashed=True)
    w.op("randperm", [3], torch.randperm(3, generator=g))
    # ---- multinomial
    for dtn, dt in (("f32", torch.float32), ("f64", torch.float64)):
        g = case("multinomial_%s" % dtn, 14)
        probs = torch.tensor([[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, 2.0, 5.0]], dtype=dt)
        for k, repl in [(1, False), (3, False), (4, False), (1, True), (10, True)]:
            t = torch.multinomial(probs, k, repl, generator=g)
            w.op("multinomial_" + dtn, [2, 4, k, int(repl)], t, inputs=fmt_values(probs))
        # zero-probability categories: ties broken as torch.topk does
        pz = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0,
                            3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], dtype=dt)
        for k in (5, 20, 1):
            t = torch.multinomial(pz, k, False, generator=g)
            w.op("multinomial_" + dtn, [1, 20, k, 0], t, inputs=fmt_values(pz))
        # k * 64 <= n_cat: topk takes its partial_sort path; ties among zeros
        pz2 = torch.zeros(1, 200, dtype=dt)
        pz2[0, 17] = 0.5
        pz2[0, 150] = 0.25
        for k in (3, 2, 1):
            t = torch.multinomial(pz2, k, False, generator=g)
            w.op("multinomial_" + dtn, [1, 200, k, 0], t, inputs=fmt_values(pz2))
        # inputs '@rand SEED Z': torch.rand(numel, dtype, manual_seed(SEED)) with
        # every element whose column is a multiple of Z set to 0
        pb = torch.rand(3, 300, dtype=dt, generator=torch.Generator().manual_seed(102))
        pb[:, ::3] = 0
        for k, repl in [(2, False), (50, False), (150, False), (1, False), (64, True)]:
            t = torch.multinomial(pb, k, repl, generator=g)
            w.op("multinomial_" + dtn, [3, 300, k, int(repl)], t, inputs=["@rand", "102", "3"])
        t = torch.multinomial(torch.ones(1000, dtype=dt), 1000, False, generator=g)
        w.op("multinomial_" + dtn, [1, 1000, 1000, 0], t, inputs=["ones"])
    # ---- state: get_state after draws, set_state from torch bytes
    g = case("state", 15)
    randn(w, g, "f64", 3)  # cached double normal pending
    rand(w, g, "f32", 700, hashed=True)  # crosses a twist
    st = g.get_state()
    assert st.numel() == 5056
    w.raw("state # 0x%016x" % fnv1a(bytes(st.tolist())))
    randn(w, g, "f32", 2)
    randn(w, g, "f32", 20)
    st2 = g.get_state()
    w.raw("case state_restore 1")
    w.raw("setstate " + bytes(st.tolist()).hex())
    g.set_state(st)
    randn(w, g, "f32", 2)
    randn(w, g, "f32", 20)
    w.raw("state # 0x%016x" % fnv1a(bytes(st2.tolist())))
    w.raw("case state_fresh 16")
    st3 = torch.Generator().manual_seed(16).get_state()
    w.raw("state # 0x%016x" % fnv1a(bytes(st3.tolist())))
    return w.lines


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.stdout.write("\n".join(record(sys.argv[2])) + "\n")
        return
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "fixtures", "generator_ref.txt")
    parts = []
    for cap, env_cap in (("avx2", "avx2"), ("default", "default")):
        env = dict(os.environ, ATEN_CPU_CAPABILITY=env_cap)
        res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", cap],
                             env=env, check=True, stdout=subprocess.PIPE)
        parts.append(res.stdout.decode())
    header = ["# PyTorch CPU generator reference streams (torch %s), written by"
              " tests/gen_generator_ref.py" % torch.__version__,
              "# see that script for the format"]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(header) + "\n" + "".join(parts))
    print("wrote", out)


if __name__ == "__main__":
    main()
