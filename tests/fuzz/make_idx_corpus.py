#!/usr/bin/env python3
"""Writes the IDX reader's fuzz seeds and damaged-file corpus (stdlib only).

  tests/fuzz/seeds/idx/    valid files: raw IDX (<stem>.idx) and gzip forms of them
                           (<stem>.<how>.gz: stored blocks, fixed and dynamic Huffman codes,
                           several members, optional header fields); test_models.c checks each
                           .gz decodes to the tensor its <stem>.idx holds
  tests/fuzz/damaged_idx/  damaged files + MANIFEST ("file<TAB>expected substring"): the C test
                           requires ct_idx_load and ct_idx_load_buffer to refuse each one with
                           an error containing the substring
"""
import gzip
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def idx(code, shape, payload):
    return bytes([0, 0, code, len(shape)]) + b"".join(struct.pack(">I", s) for s in shape) + payload


def gz_member(data, level=9, flags=0, extra=b"", name=b"", comment=b"", strategy=zlib.Z_DEFAULT_STRATEGY):
    """One gzip member built by hand, so header fields and flags can be chosen."""
    head = bytes([0x1f, 0x8b, 8, flags]) + struct.pack("<I", 0) + bytes([0, 255])
    if flags & 4:
        head += struct.pack("<H", len(extra)) + extra
    if flags & 8:
        head += name + b"\0"
    if flags & 16:
        head += comment + b"\0"
    if flags & 2:
        head += struct.pack("<H", zlib.crc32(head) & 0xffff)
    c = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
    body = c.compress(data) + c.flush()
    return head + body + struct.pack("<II", zlib.crc32(data) & 0xffffffff, len(data) & 0xffffffff)


def raw_deflate(data, level=9, strategy=zlib.Z_DEFAULT_STRATEGY):
    c = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
    return c.compress(data) + c.flush()


def lcg_bytes(n, seed, mod=256):
    out, x = bytearray(), seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7fffffff
        out.append((x >> 16) % mod)
    return bytes(out)


def main():
    seeds = os.path.join(HERE, "seeds", "idx")
    bad = os.path.join(HERE, "damaged_idx")
    os.makedirs(seeds, exist_ok=True)
    os.makedirs(bad, exist_ok=True)

    # a small image-like set: 3 images of 4x5 with a gradient, labels
    imgs = idx(0x08, [3, 4, 5], bytes((i * 13) % 256 for i in range(60)))
    labels = idx(0x08, [7], bytes([5, 0, 4, 1, 9, 2, 1]))
    i8 = idx(0x09, [4], struct.pack(">4b", -128, -1, 0, 127))
    i16 = idx(0x0B, [2, 2], struct.pack(">4h", -32768, -2, 300, 32767))
    i32 = idx(0x0C, [3], struct.pack(">3i", -2147483648, 65536, 2147483647))
    f32 = idx(0x0D, [2], struct.pack(">2f", 1.5, -0.25))
    f64 = idx(0x0E, [2], struct.pack(">2d", 3.141592653589793, -1e300))
    empty = idx(0x08, [0, 28, 28], b"")
    # compressible but varied: long runs and repeats reach far back (distance codes up to 32K)
    block = lcg_bytes(3000, 7, mod=16)
    big = idx(0x08, [40, 28, 28], (block * 11)[:40 * 784])
    stems = {"images_u8": imgs, "labels_u8": labels, "i8": i8, "i16": i16, "i32": i32, "f32": f32, "f64": f64,
             "empty": empty, "big_u8": big}
    for stem, data in stems.items():
        with open(os.path.join(seeds, stem + ".idx"), "wb") as f:
            f.write(data)
    gz_forms = {
        "stored": lambda d: gz_member(d, level=0),
        "fixed": lambda d: gz_member(d, level=9, strategy=zlib.Z_FIXED),
        "dynamic": lambda d: gz_member(d, level=9),
        "huffman_only": lambda d: gz_member(d, level=6, strategy=zlib.Z_HUFFMAN_ONLY),
        "rle": lambda d: gz_member(d, level=6, strategy=zlib.Z_RLE),
        "gzip_module": lambda d: gzip.compress(d, mtime=0),
        "fields": lambda d: gz_member(d, flags=2 | 4 | 8 | 16, extra=b"ab\x02\x00xy", name=b"x.idx", comment=b"hi"),
        "two_members": lambda d: gz_member(d[:len(d) // 2]) + gz_member(d[len(d) // 2:], level=1),
    }
    for stem in ("images_u8", "labels_u8", "i16", "f64", "empty", "big_u8"):
        for how, fn in gz_forms.items():
            with open(os.path.join(seeds, "%s.%s.gz" % (stem, how)), "wb") as f:
                f.write(fn(stems[stem]))

    good = gz_member(imgs)
    body = raw_deflate(imgs)
    hdr = good[:10]
    trailer = good[-8:]
    damaged = []

    def add(name, data, want):
        damaged.append((name, want))
        with open(os.path.join(bad, name), "wb") as f:
            f.write(data)

    # IDX structure
    add("empty_file.idx", b"", "shorter than its 4-byte magic number")
    add("short_magic.idx", b"\0\0\x08", "shorter than its 4-byte magic number")
    add("bad_magic.idx", b"\1\0\x08\x01" + b"\0\0\0\1" + b"x", "does not start with two zero bytes")
    add("text_file.idx", b"hello world\n", "does not start with two zero bytes")
    add("unknown_type.idx", bytes([0, 0, 0x0A, 1, 0, 0, 0, 1, 0]), "unknown IDX data type 0x0A")
    add("zero_dims.idx", bytes([0, 0, 8, 0]), "IDX file with 0 dimensions")
    add("too_many_dims.idx", bytes([0, 0, 8, 9]) + b"\0\0\0\1" * 9 + b"x", "IDX file with 9 dimensions")
    add("truncated_header.idx", bytes([0, 0, 8, 3, 0, 0, 0, 3, 0, 0]), "IDX header truncated")
    add("truncated_data.idx", imgs[:-1], "file truncated")
    add("trailing_data.idx", imgs + b"\0", "file has trailing bytes")
    add("huge_dims.idx", bytes([0, 0, 0x0E, 3]) + b"\xff\xff\xff\xff" * 3, "IDX dimensions too large")
    add("int_truncated.idx", i32[:-2], "file truncated")
    # gzip wrapper
    add("gz_too_short.gz", good[:12], "too short for a gzip file")
    add("gz_bad_method.gz", good[:2] + b"\x07" + good[3:], "unknown compression method")
    add("gz_reserved_flags.gz", good[:3] + b"\x20" + good[4:], "reserved header flags")
    add("gz_truncated_name.gz", hdr[:3] + b"\x08" + hdr[4:] + b"name-without-end" * 2, "unexpected end of data in the header")
    add("gz_bad_header_crc.gz", gz_member(imgs, flags=2)[:10] + b"\0\0" + gz_member(imgs, flags=2)[12:], "header checksum mismatch")
    add("gz_truncated_body.gz", good[:len(good) // 2], "unexpected end of data")
    add("gz_no_trailer.gz", hdr + body, "trailer is missing")
    add("gz_bad_crc.gz", hdr + body + struct.pack("<I", (zlib.crc32(imgs) ^ 1) & 0xffffffff) + trailer[4:], "CRC-32 mismatch")
    add("gz_bad_length.gz", hdr + body + trailer[:4] + struct.pack("<I", len(imgs) + 1), "length mismatch")
    add("gz_trailing_garbage.gz", good + b"garbage!", "trailing bytes after the gzip stream")
    add("gz_flipped_data_byte.gz", good[:14] + bytes([good[14] ^ 0x10]) + good[15:], "damaged gzip data")
    # DEFLATE blocks (after a valid 10-byte header)
    add("gz_block_type_3.gz", hdr + b"\x07" + b"\0" * 16, "invalid block type")
    add("gz_stored_bad_len.gz", hdr + b"\x01\x05\x00\x05\x00hello" + b"\0" * 8, "invalid stored block lengths")
    add("gz_stored_short.gz", hdr + b"\x01\x05\x00\xfa\xffhel", "unexpected end of data")
    # dynamic header: HLIT=30 (287 codes) is too many
    add("gz_too_many_lengths.gz", hdr + bytes([0x05 | (30 << 3) & 0xff, (30 >> 5) | 0, 0, 0]) + b"\0" * 16,
        "too many length or distance symbols")
    # a dynamic block whose code-length code lengths are all zero: no valid code
    add("gz_bad_code_lengths.gz", hdr + bytes([0x05, 0x00, 0x00, 0x00, 0x00, 0x00]) + b"\0" * 16,
        "invalid code lengths set")
    # a fixed-Huffman match at distance 1 as the very first symbol: nothing to copy from
    add("gz_distance_too_far.gz", hdr + bytes([0x03, 0x02, 0x00]) + b"\0" * 8, "invalid distance too far back")
    # decompresses to a valid IDX header whose data is short / long
    add("gz_idx_truncated.gz", gz_member(imgs[:-3]), "file truncated")
    add("gz_idx_trailing.gz", gz_member(imgs + b"\0\0"), "longer than the header")
    add("gz_idx_bad_magic.gz", gz_member(b"\x01\x02\x03\x04" + imgs[4:]), "does not start with two zero bytes")
    add("gz_empty_member.gz", gz_member(b""), "shorter than its 4-byte magic number")
    # found by fuzz_idx: an empty stored block before any output, then block type 3
    add("gz_empty_stored_block.gz", bytes.fromhex("1f8b08000000000000fff80000ffff0f00000000000000"),
        "invalid block type")
    with open(os.path.join(bad, "MANIFEST"), "w") as f:
        f.write("# file<TAB>substring of the error ct_idx_load must give (written by make_idx_corpus.py)\n")
        for name, want in damaged:
            f.write("%s\t%s\n" % (name, want))
    print("%d seeds, %d damaged files" % (len(os.listdir(seeds)), len(damaged)))


if __name__ == "__main__":
    main()
