#!/usr/bin/python3
"""Builds the parity fixtures: gen_fixtures.py OUTDIR [name-substring]

Imports every tests/parity/cases_*.py (each defines CASES, a list of parity_lib.case),
builds each case's inputs deterministically (a torch.Generator seeded from the case
name's CRC32), runs the case's fn with PyTorch 1.13, and writes OUTDIR/fixtures.bin for
the C harness (tests/parity/harness.c). A case whose fn raises without error= (or that
fails for any other reason) is written as a "generator failure" record that the C
harness counts as a failed case, so problems are never silent; this script also exits 1.

Fixture format (little-endian; version 1):
  file    := "CTPF" u32 version u32 n_cases case*
  str     := u32 nbytes, utf-8 bytes
  tensor  := u8 dtype (ctorch's ct_dtype order: float32 float64 float16 bfloat16 int8 uint8
             int16 int32 int64 bool), u8 ndim, i64 shape[ndim], u8 layout (0 contiguous,
             1 transposed, 2 strided), u8 requires_grad, u64 nbytes, raw data in logical
             row-major order in the dtype's own encoding (float16/bfloat16 as their 16-bit
             patterns, bool as one byte 0/1)
  opt     := u8 present, [tensor]
  attr    := str key, u8 kind, payload: 0 None (nothing), 1 int (i64), 2 float (f64),
             3 bool (u8), 4 str (str; torch.dtype becomes its name "float32"),
             5 int list (u32 n, i64*n), 6 float list (u32 n, f64*n)
  case    := str name, str op, str source file, str genfail ("" unless the generator failed),
             u32 n_attrs attr*, f64 rtol atol grad_rtol grad_atol (NaN = dtype default),
             u8 gradgrad, u8 fd, u8 has_error, str error, u8 check_strides,
             u32 n_in tensor*                    (inputs; requires_grad as the case says)
             u32 n_out tensor*                   (PyTorch's outputs; requires_grad = PyTorch's)
             geom*n_out                          (geom := u8 ndim, i64 strides[ndim], i64 storage
                                                  offset, i8 index of the first input sharing its
                                                  storage or -1)
             opt*n_out                           (grad_outputs: present for outputs requiring grad)
             opt*n_in                            (grads: present for inputs requiring grad when
                                                  some grad_output is present; None -> zeros)
             u8 has_gradgrad, [opt*n_in (v), opt*n_in (gradgrad)]
                                                 (gradgrad_i = d/dx_i sum_j sum(grad_j * v_j),
                                                  over the grads that require grad; zeros if none)
"""
import glob
import importlib.util
import math
import os
import struct
import sys
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import torch
except Exception as e:  # the harness must fail loudly, never skip
    sys.stderr.write("gen_fixtures: cannot import torch (%s); run `make deps` (python3-torch)\n" % e)
    sys.exit(2)

import parity_lib  # noqa: E402

DT_CODES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]
TORCH_DT = {n: getattr(torch, n) for n in DT_CODES}
DT_OF_TORCH = {v: k for k, v in TORCH_DT.items()}
FLOATS = ("float32", "float64", "float16", "bfloat16")
LAYOUT_CODE = {"contiguous": 0, "transposed": 1, "strided": 2}


class GenError(Exception):
    pass


# ---- binary writer -------------------------------------------------------------
class W:
    def __init__(self):
        self.parts = []

    def u8(self, v):
        self.parts.append(struct.pack("<B", v))

    def u32(self, v):
        self.parts.append(struct.pack("<I", v))

    def i64(self, v):
        self.parts.append(struct.pack("<q", v))

    def u64(self, v):
        self.parts.append(struct.pack("<Q", v))

    def f64(self, v):
        self.parts.append(struct.pack("<d", float("nan") if v is None else float(v)))

    def s(self, v):
        b = (v or "").encode("utf-8")
        self.u32(len(b))
        self.parts.append(b)

    def raw(self, b):
        self.parts.append(b)

    def bytes(self):
        return b"".join(self.parts)


def tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16).numpy().tobytes()
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy().tobytes()
    return t.numpy().tobytes()


def write_tensor(w, t, layout="contiguous", requires_grad=None):
    if t.dtype not in DT_OF_TORCH:
        raise GenError("unsupported dtype %s" % t.dtype)
    w.u8(DT_CODES.index(DT_OF_TORCH[t.dtype]))
    w.u8(t.dim())
    for s in t.shape:
        w.i64(s)
    w.u8(LAYOUT_CODE[layout])
    w.u8(1 if (t.requires_grad if requires_grad is None else requires_grad) else 0)
    b = tensor_bytes(t)
    w.u64(len(b))
    w.raw(b)


def write_opt(w, t):
    if t is None:
        w.u8(0)
    else:
        w.u8(1)
        write_tensor(w, t)


def encode_attr(w, key, v):
    w.s(key)
    if v is None:
        w.u8(0)
    elif isinstance(v, bool):
        w.u8(3)
        w.u8(1 if v else 0)
    elif isinstance(v, int):
        w.u8(1)
        w.i64(v)
    elif isinstance(v, float):
        w.u8(2)
        w.f64(v)
    elif isinstance(v, str):
        w.u8(4)
        w.s(v)
    elif isinstance(v, torch.dtype):
        if v not in DT_OF_TORCH:
            raise GenError("attr %r: unsupported dtype %s" % (key, v))
        w.u8(4)
        w.s(DT_OF_TORCH[v])
    elif isinstance(v, (list, tuple, torch.Size)):
        items = list(v)
        if all(isinstance(x, (bool, int)) for x in items):
            w.u8(5)
            w.u32(len(items))
            for x in items:
                w.i64(int(x))
        elif all(isinstance(x, (bool, int, float)) for x in items):
            w.u8(6)
            w.u32(len(items))
            for x in items:
                w.f64(float(x))
        else:
            raise GenError("attr %r: lists may hold only numbers (got %r)" % (key, v))
    else:
        raise GenError("attr %r: unsupported value %r (int, float, bool, str, dtype, None, list of numbers)" % (key, v))


# ---- building inputs -------------------------------------------------------------
def make_base(spec, gen):
    dt = TORCH_DT[spec.dtype]
    if spec.values is not None:
        base = torch.tensor(spec.values, dtype=torch.float64 if spec.dtype in FLOATS else torch.int64)
        if tuple(base.shape) != spec.shape:
            raise GenError("values= has shape %s but T's shape is %s" % (tuple(base.shape), spec.shape))
        if spec.dtype == "bool":
            return base != 0
        return base.to(dt)
    if spec.dtype in FLOATS:
        u = torch.rand(spec.shape, generator=gen, dtype=torch.float64)
        return (u * (spec.high - spec.low) + spec.low).to(dt)
    if spec.dtype == "bool":
        return torch.randint(0, 2, spec.shape, generator=gen, dtype=torch.int64) != 0
    lo, hi = int(math.floor(spec.low)), int(math.ceil(spec.high))
    if spec.dtype == "uint8":  # draw non-negative values rather than wrapping negatives
        lo, hi = max(lo, 0), max(hi, 1)
    if hi <= lo:
        hi = lo + 1
    return torch.randint(lo, hi, spec.shape, generator=gen, dtype=torch.int64).to(dt)


def with_layout(base, layout):
    """Same values, different strides (the C harness builds the same geometry)."""
    nd = base.dim()
    if layout == "transposed" and nd >= 2:
        rev = list(range(nd))[::-1]
        x = base.permute(rev).contiguous().permute(rev)
    elif layout == "strided" and nd >= 1:
        shape2 = list(base.shape[:-1]) + [2 * base.shape[-1]]
        buf = torch.zeros(shape2, dtype=base.dtype)
        buf[..., ::2] = base
        x = buf[..., ::2]
    else:
        x = base.clone()
    return x.detach()


def as_tuple(r):
    if isinstance(r, torch.Tensor):
        return (r,)
    if isinstance(r, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in r):
        return tuple(r)
    raise GenError("fn must return a tensor or a tuple of tensors, got %r" % (type(r),))


def randn_like(t, gen):
    return torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t.dtype)


def gen_case(c, w):
    """Writes case c; raises GenError (or anything) on failure, before writing."""
    if not isinstance(c, parity_lib.Case):
        raise GenError("CASES entries must be made with parity_lib.case")
    gen = torch.Generator().manual_seed(zlib.crc32(c.name.encode("utf-8")))
    bases = [make_base(s, gen) for s in c.inputs]
    xs = []
    for s, b in zip(c.inputs, bases):
        x = with_layout(b, s.layout)
        if s.requires_grad:
            if s.dtype not in FLOATS:
                raise GenError("requires_grad=True on a %s input" % s.dtype)
            x.requires_grad_(True)
        xs.append(x)

    outs, gos, grads, vs, ggs = (), [], [], None, None
    if c.error is not None:
        if c.fn is not None:
            try:
                c.fn(*xs)
            except Exception as e:
                if c.error not in str(e):
                    raise GenError("PyTorch's error %r lacks the expected substring %r" % (str(e), c.error))
            else:
                raise GenError("PyTorch did not raise (error=%r expected)" % c.error)
    else:
        if c.fn is None:
            raise GenError("fn is None but no error= is given")
        try:
            with torch.enable_grad():
                outs = as_tuple(c.fn(*xs))
        except GenError:
            raise
        except Exception as e:
            raise GenError("PyTorch raised %s: %s" % (type(e).__name__, e))
        for o in outs:
            if o.dtype not in DT_OF_TORCH:
                raise GenError("output dtype %s is not supported by the harness" % o.dtype)
        gos = [randn_like(o, gen) if (o.requires_grad and o.dtype.is_floating_point) else None for o in outs]
        diff = [i for i, x in enumerate(xs) if x.requires_grad]
        grads = [None] * len(xs)
        used = [(o, g) for o, g in zip(outs, gos) if g is not None]
        if diff and used:
            try:
                gs = torch.autograd.grad([o for o, _ in used], [xs[i] for i in diff], [g for _, g in used],
                                         retain_graph=True, create_graph=c.gradgrad, allow_unused=True)
            except Exception as e:
                raise GenError("PyTorch backward raised %s: %s (set requires_grad=False?)" % (type(e).__name__, e))
            for i, g in zip(diff, gs):
                grads[i] = g if g is not None else torch.zeros_like(xs[i])
            if c.gradgrad:
                vs = [randn_like(x, gen) if x.requires_grad else None for x in xs]
                s = None
                for i, g in zip(diff, gs):
                    if g is not None and g.requires_grad:
                        term = (g * vs[i]).sum()
                        s = term if s is None else s + term
                ggs = [None] * len(xs)
                if s is not None:
                    try:
                        g2 = torch.autograd.grad(s, [xs[i] for i in diff], allow_unused=True)
                    except Exception as e:
                        raise GenError("PyTorch double backward raised %s: %s" % (type(e).__name__, e))
                else:
                    g2 = [None] * len(diff)
                for i, g in zip(diff, g2):
                    ggs[i] = (g if g is not None else torch.zeros_like(xs[i])).detach()
        elif c.gradgrad:
            raise GenError("gradgrad=True but nothing is differentiable")

    cw = W()
    cw.s(c.name)
    cw.s(c.op)
    cw.s(c.source or "")
    cw.s("")
    cw.u32(len(c.attrs))
    for k, v in c.attrs.items():
        encode_attr(cw, k, v)
    for v in (c.rtol, c.atol, c.grad_rtol, c.grad_atol):
        cw.f64(v)
    cw.u8(1 if c.gradgrad else 0)
    cw.u8(1 if c.fd else 0)
    cw.u8(1 if c.error is not None else 0)
    cw.s(c.error or "")
    cw.u8(1 if getattr(c, "check_strides", False) else 0)
    cw.u32(len(xs))
    for s, b in zip(c.inputs, bases):
        write_tensor(cw, b, s.layout, s.requires_grad)
    cw.u32(len(outs))
    for o in outs:
        write_tensor(cw, o)
    for o in outs:
        cw.u8(o.dim())
        for st in o.stride():
            cw.i64(st)
        cw.i64(o.storage_offset())
        share = -1
        for i, x in enumerate(xs):
            if o.numel() and x.numel() and o.storage().data_ptr() == x.storage().data_ptr():
                share = i
                break
        cw.u8(share & 0xFF)
    for g in gos:
        write_opt(cw, g)
    for g in (grads if outs else []):
        write_opt(cw, g)
    if vs is not None:
        cw.u8(1)
        for v in vs:
            write_opt(cw, v)
        for g in ggs:
            write_opt(cw, g)
    else:
        cw.u8(0)
    w.raw(cw.bytes())


def write_genfail(w, name, op, source, msg):
    w.s(name)
    w.s(op)
    w.s(source)
    w.s(msg or "generator failure")
    w.u32(0)
    for _ in range(4):
        w.f64(None)
    w.u8(0)
    w.u8(0)
    w.u8(0)
    w.s("")
    w.u8(0)
    w.u32(0)
    w.u32(0)
    w.u8(0)


def load_cases():
    """[(source, case or None, error message)]"""
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "cases_*.py"))):
        src = os.path.basename(path)
        try:
            spec = importlib.util.spec_from_file_location(src[:-3], path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            cases = getattr(mod, "CASES")
        except Exception as e:
            out.append((src, None, "importing %s failed: %s: %s" % (src, type(e).__name__, e)))
            continue
        for c in cases:
            if isinstance(c, parity_lib.Case):
                c.source = src
            out.append((src, c, None))
    return out


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: gen_fixtures.py OUTDIR [name-substring]\n")
        return 2
    outdir = sys.argv[1]
    filt = sys.argv[2] if len(sys.argv) > 2 else None
    torch.set_num_threads(1)  # deterministic reductions
    os.makedirs(outdir, exist_ok=True)
    w = W()
    n = 0
    fails = 0
    seen = {}
    for src, c, err in load_cases():
        if c is None:
            write_genfail(w, "<import %s>" % src, "__import__", src, err)
            sys.stderr.write("gen_fixtures: %s\n" % err)
            n += 1
            fails += 1
            continue
        name = getattr(c, "name", "?")
        if filt and filt not in name:
            continue
        n += 1
        msg = None
        if name in seen:
            msg = "duplicate case name (also in %s)" % seen[name]
        else:
            seen[name] = src
            try:
                gen_case(c, w)
            except GenError as e:
                msg = str(e)
            except Exception as e:
                msg = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc(limit=3))
        if msg is not None:
            fails += 1
            write_genfail(w, name, getattr(c, "op", "?"), src, msg)
            sys.stderr.write("gen_fixtures: case %s (%s): %s\n" % (name, src, msg))
    data = b"CTPF" + struct.pack("<II", 1, n) + w.bytes()
    tmp = os.path.join(outdir, "fixtures.bin.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(outdir, "fixtures.bin"))
    print("gen_fixtures: %d case(s), %d generator failure(s), %d bytes" % (n, fails, len(data)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
