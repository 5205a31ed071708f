#!/usr/bin/python3
"""Reference safetensors files for ctorch's reader/writer, made with PyTorch.

The `safetensors` package is not installed here, so this is an independent writer and
reader written from the format's spec (8-byte little-endian header length N, N bytes of
JSON header padded with spaces to a multiple of 8, then the data buffer), following the
reference writer's choices: tensors sorted by descending dtype alignment then by name,
compact JSON with "__metadata__" first. The byte vectors asserted by the reference
writer's own tests (huggingface/safetensors, tensor.rs) are checked against this writer
too, so the fixtures agree with the known writer byte for byte.

  safetensors_ref.py write DIR   writes the reference files into DIR
  safetensors_ref.py check DIR   checks the files ctorch wrote into DIR (c_*.safetensors)

Values are exact in every dtype, so the C test can rebuild them: element i of a tensor
is v(i) = ((37*i) % 23 - 11) / 4 for floating dtypes, (37*i) % 23 - 11 for signed
integers, (37*i) % 251 for uint8 and i % 3 == 0 for bool.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

ST = {  # torch dtype -> (safetensors name, rank in the reference writer's alignment order)
    torch.bool: ("BOOL", 0), torch.uint8: ("U8", 4), torch.int8: ("I8", 5), torch.int16: ("I16", 11),
    torch.float16: ("F16", 13), torch.bfloat16: ("BF16", 14), torch.int32: ("I32", 15),
    torch.float32: ("F32", 17), torch.float64: ("F64", 19), torch.int64: ("I64", 20),
}
FROM_ST = {v[0]: k for k, v in ST.items()}


def values(dtype, shape):
    n = int(np.prod(shape)) if len(shape) else 1
    i = torch.arange(n, dtype=torch.int64)
    if dtype == torch.bool:
        v = (i % 3) == 0
    elif dtype == torch.uint8:
        v = (37 * i) % 251
    elif dtype.is_floating_point:
        v = ((37 * i) % 23 - 11).to(torch.float64) / 4
    else:
        v = (37 * i) % 23 - 11
    return v.to(dtype).reshape(shape)


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: same-size view
        t = t.view(torch.int16)
    return t.numpy().astype(t.numpy().dtype.newbyteorder("<"), copy=False).tobytes()


def serialize(tensors, metadata=None):
    """tensors: list of (name, torch tensor); metadata: list of (key, value) or None."""
    items = sorted(tensors, key=lambda kv: (-ST[kv[1].dtype][1], kv[0].encode()))
    header = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    off, blobs = 0, []
    for name, t in items:
        b = tensor_bytes(t)
        header[name] = {"dtype": ST[t.dtype][0], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    # serde_json's compact form: no spaces, UTF-8 verbatim, control characters as \u00xx
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def deserialize(data):
    """A strict reader: returns (dict name -> tensor in offset order, metadata)."""
    assert len(data) >= 8, "too small"
    (n,) = struct.unpack("<Q", data[:8])
    assert n <= 100_000_000 and 8 + n <= len(data), "bad header length"
    text = data[8:8 + n].decode("utf-8")
    assert text.startswith("{"), "header must begin with {"

    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), f"duplicate keys {keys}"
        return dict(pairs)

    header = json.loads(text, object_pairs_hook=no_dups)
    meta = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in meta.values())
    buf = data[8 + n:]
    at, out = 0, {}
    for name, info in sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        assert set(info) == {"dtype", "shape", "data_offsets"}, name
        b, e = info["data_offsets"]
        assert b == at and e >= b, f"{name}: offsets {b, e} (expected begin {at})"
        dt = FROM_ST[info["dtype"]]
        shape = info["shape"]
        assert all(isinstance(s, int) and s >= 0 for s in shape)
        numel = int(np.prod(shape)) if shape else 1
        assert e - b == numel * torch.empty((), dtype=dt).element_size(), name
        raw = bytearray(buf[b:e])
        if dt == torch.bfloat16:
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16) if raw else torch.empty(0, dtype=dt)
        else:
            t = torch.frombuffer(raw, dtype=dt) if raw else torch.empty(0, dtype=dt)
        out[name] = t.reshape(shape)
        at = e
    assert at == len(buf), "buffer not fully covered"
    return out, meta


# ---- the reference writer's own test vectors (huggingface/safetensors tensor.rs) ----------
RUST_SERIALIZATION = bytes([
    64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
    116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
    58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
    101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
    0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64])
RUST_EMPTY = bytes([8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32])
RUST_EMPTY_META = bytes([
    40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
    95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
    116, 34, 125, 125, 32, 32, 32, 32, 32])


def check_against_rust_vectors():
    six = torch.arange(6, dtype=torch.float32)
    assert serialize([("attn.0", six.reshape(1, 2, 3))]) == RUST_SERIALIZATION
    assert serialize([]) == RUST_EMPTY
    assert serialize([], [("framework", "pt")]) == RUST_EMPTY_META


# ---- the fixtures ------------------------------------------------------------------------
SHAPES = [  # (name, dtype, shape): every dtype, a 0-dim, an empty and a 3-D tensor
    ("w.f32", torch.float32, (2, 3)), ("w.f64", torch.float64, (3,)), ("w.f16", torch.float16, (2, 2)),
    ("w.bf16", torch.bfloat16, (5,)), ("w.i8", torch.int8, (4,)), ("w.u8", torch.uint8, (3, 1)),
    ("w.i16", torch.int16, (2,)), ("w.i32", torch.int32, (2, 2, 1)), ("w.i64", torch.int64, (3,)),
    ("w.bool", torch.bool, (4,)), ("scalar", torch.float64, ()), ("empty", torch.float32, (0, 3)),
    ("a.first", torch.float32, (1,)),
]
META = [("format", "pt"), ("note", "quote \" backslash \\ tab \t newline \n bell \x07 é ✓")]


def all_dtypes():
    return [(n, values(dt, s)) for n, dt, s in SHAPES]


def other_writer_file():
    """A valid file as a different writer may lay it out: insertion order (unaligned data),
    metadata last, pretty-printed JSON with \\u escapes, tab/newline padding."""
    items = [("b.i16", values(torch.int16, (3,))), ("a.f64", values(torch.float64, (2,))),
             ("c.u8", values(torch.uint8, (1,))), ("d.f32", values(torch.float32, (2, 2)))]
    header, off, blobs = {}, 0, []
    for name, t in items:
        b = tensor_bytes(t)
        header[name] = {"shape": list(t.shape), "data_offsets": [off, off + len(b)], "dtype": ST[t.dtype][0]}
        off += len(b)
        blobs.append(b)
    header["__metadata__"] = {"writer": "other \u00e9"}
    text = json.dumps(header, indent=2, ensure_ascii=True).encode() + b"\n\t  "
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write(d):
    check_against_rust_vectors()
    os.makedirs(d, exist_ok=True)
    files = {
        "all_dtypes.safetensors": serialize(all_dtypes(), META),
        "other_writer.safetensors": other_writer_file(),
        "rust_serialization.safetensors": RUST_SERIALIZATION,
        "rust_empty_meta.safetensors": RUST_EMPTY_META,
    }
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        tensors, meta = deserialize(data)  # our own reader accepts what we wrote
    print(f"wrote {len(files)} reference files to {d}")


def check(d):
    """ctorch wrote c_all_dtypes.safetensors (same tensors and metadata as all_dtypes) and
    c_checkpoint.safetensors; read them independently and compare."""
    with open(os.path.join(d, "c_all_dtypes.safetensors"), "rb") as f:
        data = f.read()
    tensors, meta = deserialize(data)
    assert meta == dict(META), meta
    want = dict(all_dtypes())
    assert list(tensors) == [n for n, _ in sorted(want.items(), key=lambda kv: (-ST[kv[1].dtype][1], kv[0].encode()))]
    for n, t in want.items():
        assert tensors[n].dtype == t.dtype and tensors[n].shape == t.shape and torch.equal(tensors[n], t), n
    assert data == serialize(all_dtypes(), META), "ctorch's bytes differ from the reference layout"
    with open(os.path.join(d, "c_checkpoint.safetensors"), "rb") as f:
        ck, meta = deserialize(f.read())
    assert meta["ctorch.format"] == "checkpoint" and meta["ctorch.format_version"] == "1", meta
    assert ck["rng.cpu"].dtype == torch.uint8 and ck["rng.cpu"].numel() == 5056
    # the RNG bytes are torch's own layout: torch accepts them and continues the stream
    g = torch.Generator()
    g.set_state(ck["rng.cpu"].clone())
    r = torch.rand(4, generator=g)
    assert r.shape == (4,)
    print(f"checked ctorch's files in {d}: {len(tensors)} tensors, checkpoint with {len(ck)} tensors")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit(__doc__)
    (write if sys.argv[1] == "write" else check)(sys.argv[2])
