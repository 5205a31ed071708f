#!/usr/bin/env python3
"""Writes the fuzz seed corpora and the damaged-file corpus (stdlib only).

  tests/fuzz/seeds/safetensors/  valid files (seeds for fuzz_safetensors)
  tests/fuzz/seeds/header/       valid JSON headers (seeds for fuzz_header; the first 8
                                 bytes of each seed are the data length, little-endian)
  tests/fuzz/damaged/            damaged files + MANIFEST ("file<TAB>expected substring"):
                                 the C tests (test_io.c) require every reader to refuse each
                                 one with an error containing the substring.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def st(header, data=b"", pad=True, raw=None):
    text = raw if raw is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(n, off=0):
    return {"dtype": "F32", "shape": [n], "data_offsets": [off, off + 4 * n]}


VALID = {
    "one_f32": st({"w": f32(2)}, b"\x00\x00\x80\x3f\x00\x00\x00\x40"),
    "empty": st({}),
    "meta_only": st({"__metadata__": {"format": "pt"}}),
    "mixed": st({"__metadata__": {"k": "v"}, "a": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]},
                 "b": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [16, 20]},
                 "c": {"dtype": "BOOL", "shape": [], "data_offsets": [20, 21]},
                 "e": {"dtype": "F16", "shape": [0, 4], "data_offsets": [21, 21]}}, bytes(range(21))),
    "escapes": st(None, b"\x07", raw=b'{"n\\u00e9\\ud83d\\ude00\\n\\"x\\"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
}

W = {"w": f32(2)}
D8 = b"\x00" * 8
DAMAGED = [  # (name, bytes, expected message substring)
    ("truncated_length", b"\x10\x00\x00", "too small"),
    ("empty_file", b"", "too small"),
    ("header_longer_than_file", struct.pack("<Q", 100) + b'{"a":1}', "larger than the"),
    ("huge_header_length", struct.pack("<Q", 1 << 60) + b"{}      ", "exceeds the limit"),
    ("header_length_over_limit", struct.pack("<Q", 100_000_001) + b"{}      ", "exceeds the limit"),
    ("all_ff_length", b"\xff" * 8 + b"{}", "exceeds the limit"),
    ("empty_header", struct.pack("<Q", 0), "must begin with '{'"),
    ("truncated_data", st(W, D8[:4]), "go beyond the end of the data buffer"),
    ("trailing_bytes", st(W, D8 + b"junk"), "trailing bytes"),
    ("overlapping_offsets", st({"a": f32(2), "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\x00" * 12), "overlap"),
    ("empty_inside_other", st({"a": f32(2), "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}}, D8), "overlap"),
    ("hole_between", st({"a": f32(1), "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}, b"\x00" * 12), "hole"),
    ("hole_at_start", st({"b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, D8), "hole"),
    ("bad_dtype", st({"w": {"dtype": "F17", "shape": [2], "data_offsets": [0, 8]}}, D8), "unknown dtype 'F17'"),
    ("lowercase_dtype", st({"w": {"dtype": "f32", "shape": [2], "data_offsets": [0, 8]}}, D8), "unknown dtype 'f32'"),
    ("dtype_not_string", st({"w": {"dtype": 5, "shape": [2], "data_offsets": [0, 8]}}, D8), "dtype must be a string"),
    ("negative_shape", st({"w": {"dtype": "F32", "shape": [-1, 2], "data_offsets": [0, 8]}}, D8), "negative value"),
    ("huge_shape", st({"w": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 1 << 32], "data_offsets": [0, 8]}}, D8), "overflows"),
    ("huge_bytes", st({"w": {"dtype": "F64", "shape": [1 << 61], "data_offsets": [0, 8]}}, D8), "overflows"),
    ("shape_float", st(None, D8, raw=b'{"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}'), "fraction or exponent"),
    ("shape_exponent", st(None, D8, raw=b'{"w":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}'), "fraction or exponent"),
    ("shape_number_too_big", st(None, D8, raw=b'{"w":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}}'), "too large"),
    ("shape_leading_zero", st(None, D8, raw=b'{"w":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}}'), "leading zero"),
    ("shape_not_array", st({"w": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}}, D8), "shape must be an array"),
    ("shape_string_entry", st({"w": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}}, D8), "expected a non-negative integer"),
    ("size_mismatch", st({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}, D8), "hold 8 bytes, but dtype F32 with shape [2, 2] needs 16"),
    ("offsets_reversed", st({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}}, D8), "end before they begin"),
    ("offsets_three", st({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8, 8]}}, D8), "exactly two"),
    ("offsets_one", st({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}}, D8), "exactly two"),
    ("offsets_negative", st({"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}, D8), "negative value"),
    ("offsets_beyond_end", st({"w": {"dtype": "F32", "shape": [250], "data_offsets": [0, 1000]}}, D8), "go beyond the end"),
    ("duplicate_name", st(None, D8, raw=b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'), "duplicate tensor name 'w'"),
    ("duplicate_field", st(None, D8, raw=b'{"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}'), "duplicate field 'dtype'"),
    ("missing_field", st({"w": {"dtype": "F32", "shape": [2]}}, D8), "missing field 'data_offsets'"),
    ("unknown_field", st({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "extra": 1}}, D8), "unknown field 'extra'"),
    ("metadata_non_string", st({"__metadata__": {"epoch": 3}, **W}, D8), "the value of 'epoch' is not a string"),
    ("metadata_nested", st({"__metadata__": {"a": {"b": "c"}}, **W}, D8), "the value of 'a' is not a string"),
    ("metadata_not_object", st({"__metadata__": ["a"], **W}, D8), "__metadata__ must be an object"),
    ("metadata_twice", st(None, D8, raw=b'{"__metadata__":{},"__metadata__":{},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'), "duplicate key '__metadata__'"),
    ("metadata_duplicate_key", st(None, D8, raw=b'{"__metadata__":{"a":"1","a":"2"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'), "__metadata__: duplicate key 'a'"),
    ("metadata_as_tensor", st({"__metadata__": f32(2)}, D8), "is not a string"),
    ("nested_junk", st(None, D8, raw=b'{"w":[[[[[[[[[[{"dtype":"F32"}]]]]]]]]]]}'), "expected an object"),
    ("deep_nesting", st(None, b"", raw=b'{"w":{"dtype":' + b"[" * 50000 + b"]" * 50000 + b"}}"), "dtype must be a string"),
    ("tensor_not_object", st(None, b"", raw=b'{"w":"F32"}'), "expected an object"),
    ("not_an_object", st(None, b"", raw=b"[1,2]"), "must begin with '{'"),
    ("leading_space", st(None, b"", raw=b" {}"), "must begin with '{'"),
    ("trailing_garbage", st(None, b"", raw=b"{}x"), "after the header's closing"),
    ("two_objects", st(None, b"", raw=b"{}{}"), "after the header's closing"),
    ("nul_padding", st(None, b"", raw=b"{}\x00\x00\x00\x00\x00\x00", pad=False), "after the header's closing"),
    ("unterminated_object", st(None, b"", raw=b'{"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}', pad=False), "expected ',' or '}'"),
    ("unterminated_string", st(None, b"", raw=b'{"w', pad=False), "unterminated string"),
    ("missing_colon", st(None, b"", raw=b'{"w" {}}'), "expected ':'"),
    ("missing_comma", st(None, D8, raw=b'{"w":{"dtype":"F32" "shape":[2],"data_offsets":[0,8]}}'), "expected ',' or '}'"),
    ("trailing_comma", st(None, b"", raw=b'{"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},}'), "expected a string"),
    ("invalid_utf8", st(None, b"", raw=b'{"\xff":1}'), "not valid UTF-8"),
    ("overlong_utf8", st(None, b"", raw=b'{"\xc0\xaf":1}'), "not valid UTF-8"),
    ("utf8_surrogate", st(None, b"", raw=b'{"\xed\xa0\x80":1}'), "not valid UTF-8"),
    ("control_char_in_name", st(None, b"", raw=b'{"a\x01b":{}}'), "control character"),
    ("bad_escape", st(None, b"", raw=b'{"a\\qb":{}}'), "unknown escape"),
    ("lone_high_surrogate", st(None, b"", raw=b'{"\\ud800":{}}'), "lone high surrogate"),
    ("lone_low_surrogate", st(None, b"", raw=b'{"\\udc00":{}}'), "lone low surrogate"),
    ("bad_unicode_escape", st(None, b"", raw=b'{"\\u12G4":{}}'), "bad \\u escape"),
    ("nul_in_name", st(None, b"", raw=b'{"a\\u0000b":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}'), "NUL"),
    ("empty_entry", st(None, b"", raw=b'{"w":{}}'), "missing field 'dtype'"),
]


def main():
    for sub in ("seeds/safetensors", "seeds/header", "damaged"):
        os.makedirs(os.path.join(HERE, sub), exist_ok=True)
    for name, data in VALID.items():
        with open(os.path.join(HERE, "seeds/safetensors", name + ".safetensors"), "wb") as f:
            f.write(data)
        (n,) = struct.unpack("<Q", data[:8])
        with open(os.path.join(HERE, "seeds/header", name + ".bin"), "wb") as f:
            f.write(struct.pack("<Q", len(data) - 8 - n) + data[8:8 + n])
    lines = []
    for name, data, expect in DAMAGED:
        fn = name + ".safetensors"
        with open(os.path.join(HERE, "damaged", fn), "wb") as f:
            f.write(data)
        lines.append(f"{fn}\t{expect}\n")
    with open(os.path.join(HERE, "damaged", "MANIFEST"), "w") as f:
        f.write("# file<TAB>substring of the error every reader must give (written by make_corpus.py)\n")
        f.writelines(lines)
    print(f"{len(VALID)} seeds, {len(DAMAGED)} damaged files")


if __name__ == "__main__":
    main()
