/* Internals of src/data: gzip/DEFLATE decoding (inflate.c) for the IDX reader (idx.c). */
#ifndef CT_DATA_INTERNAL_H
#define CT_DATA_INTERNAL_H
#include "core/internal.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CRC-32 (ISO-HDLC, gzip's), continuing from crc (0 to start). */
uint32_t ct_crc32(uint32_t crc, const void *data, size_t n);
/* Whether data starts with gzip's magic bytes. */
bool ct_is_gzip(const void *data, size_t n);
/* Decodes a whole gzip file (one or more members; each member's CRC-32 and length checked; no
 * trailing bytes) into a new malloc'ed buffer; more than max_out output bytes is an error. what
 * names the input in messages. */
ct_status ct_gunzip(const void *in, size_t n, size_t max_out, const char *what, void **out, size_t *out_len);
/* The first min(max_out, all) decompressed bytes, for peeking at a header (no checksums). */
ct_status ct_gunzip_prefix(const void *in, size_t n, size_t max_out, const char *what, void **out, size_t *out_len);
/* One raw DEFLATE stream (no header). */
ct_status ct_inflate_raw(const void *in, size_t n, size_t max_out, const char *what, void **out, size_t *out_len);

#endif
