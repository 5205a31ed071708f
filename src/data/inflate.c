/* gzip (RFC 1952) and DEFLATE (RFC 1951) decoding, written for ctorch so the library needs no
 * zlib. Every input is untrusted: each read is bounds-checked, code-length sets are validated
 * (over-subscribed sets and missing end-of-block codes are refused), back references may not
 * reach before the output's start, the output is capped, and each gzip member's CRC-32 and
 * length are checked. Errors are RuntimeErrors naming the problem. */
#include "data_internal.h"
#include <stdlib.h>
#include <string.h>

#define MAX_BITS 15
#define FAST_BITS 10 /* codes up to this length are decoded by one table lookup */

typedef struct {
  const uint8_t *in;
  size_t n, pos;    /* input and the next byte to load */
  uint64_t bits;    /* loaded bits, next bit lowest */
  int nbits;
  uint8_t *out;
  size_t len, cap, max;
  const char *what; /* file name for messages */
  bool prefix;      /* stop quietly once max bytes are out (reading just a header) */
  bool full;        /* prefix mode: max reached */
} inf_state;

/* A canonical Huffman code: counts per length, symbols in code order, and a lookup table
 * indexed by the next FAST_BITS input bits (entry = symbol << 4 | length, 0 = slow path). */
typedef struct {
  uint16_t count[MAX_BITS + 1];
  uint16_t symbol[288];
  uint16_t fast[1 << FAST_BITS];
} huff;

static ct_status fail(inf_state *s, const char *msg) {
  return ct_set_error(CT_ERR_RUNTIME, "%s: damaged gzip data: %s", s->what, msg);
}

static void refill(inf_state *s) {
  while (s->nbits <= 56 && s->pos < s->n) {
    s->bits |= (uint64_t)s->in[s->pos++] << s->nbits;
    s->nbits += 8;
  }
}

/* n <= 32 bits, or an error at the end of the input. */
static bool getbits(inf_state *s, int n, uint32_t *v) {
  if (s->nbits < n) refill(s);
  if (s->nbits < n) return false;
  *v = (uint32_t)(s->bits & ((UINT64_C(1) << n) - 1));
  s->bits >>= n;
  s->nbits -= n;
  return true;
}

/* Builds h from lengths[0..n); returns 0 ok (possibly incomplete), -1 over-subscribed. */
static int huff_build(huff *h, const uint8_t *lengths, int n) {
  memset(h->count, 0, sizeof h->count);
  for (int i = 0; i < n; i++) h->count[lengths[i]]++;
  h->count[0] = 0;
  int left = 1;
  for (int l = 1; l <= MAX_BITS; l++) {
    left <<= 1;
    left -= h->count[l];
    if (left < 0) return -1;
  }
  uint16_t offs[MAX_BITS + 2];
  offs[1] = 0;
  for (int l = 1; l <= MAX_BITS; l++) offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
  for (int i = 0; i < n; i++)
    if (lengths[i]) h->symbol[offs[lengths[i]]++] = (uint16_t)i;
  /* the fast table: walk the codes in canonical order, storing each short one bit-reversed */
  memset(h->fast, 0, sizeof h->fast);
  int code = 0, idx = 0;
  for (int l = 1; l <= MAX_BITS; l++) {
    for (int k = 0; k < h->count[l]; k++, idx++, code++) {
      if (l > FAST_BITS) continue;
      int rev = 0;
      for (int b = 0; b < l; b++) rev |= ((code >> b) & 1) << (l - 1 - b);
      for (int e = rev; e < (1 << FAST_BITS); e += 1 << l) h->fast[e] = (uint16_t)(h->symbol[idx] << 4 | l);
    }
    code <<= 1;
  }
  return 0;
}

/* The next symbol, or -1 (no such code, or the input ended). */
static int decode(inf_state *s, const huff *h) {
  if (s->nbits < MAX_BITS) refill(s);
  uint16_t e = h->fast[s->bits & ((1u << FAST_BITS) - 1)];
  if (e && (e & 15) <= s->nbits) {
    s->bits >>= e & 15;
    s->nbits -= e & 15;
    return e >> 4;
  }
  /* canonical decoding one bit at a time: codes of length l are consecutive from first */
  int code = 0, first = 0, index = 0;
  for (int l = 1; l <= MAX_BITS && l <= s->nbits; l++) {
    code |= (int)((s->bits >> (l - 1)) & 1);
    int count = h->count[l];
    if (code - first < count) {
      s->bits >>= l;
      s->nbits -= l;
      return h->symbol[index + code - first];
    }
    index += count;
    first += count;
    first <<= 1;
    code <<= 1;
  }
  return -1;
}

/* Room for extra more output bytes: 0 ok, 1 over the caller's cap, 2 out of memory. */
static int out_reserve(inf_state *s, size_t extra) {
  if (extra > s->max - s->len) return 1;
  size_t need = s->len + extra;
  if (need <= s->cap) return 0;
  size_t cap = s->cap ? s->cap : 1 << 16;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  if (cap > s->max) cap = s->max;
  uint8_t *p = realloc(s->out, cap);
  if (!p) return 2;
  s->out = p;
  s->cap = cap;
  return 0;
}

static ct_status no_room(inf_state *s, int why) {
  if (why == 1)
    return ct_set_error(CT_ERR_RUNTIME, "%s: decompressed data larger than the limit of %zu bytes", s->what, s->max);
  return ct_set_error(CT_ERR_OOM, "%s: out of memory while decompressing", s->what);
}

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                       193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* Literal/length and distance symbols until end-of-block. */
static ct_status codes(inf_state *s, const huff *lit, const huff *dist) {
  for (;;) {
    int sym = decode(s, lit);
    if (sym < 0) return s->nbits < MAX_BITS && s->pos >= s->n ? fail(s, "unexpected end of data") : fail(s, "invalid literal/length code");
    if (sym < 256) {
      int r = s->len < s->cap ? 0 : out_reserve(s, 1);
      if (r == 1 && s->prefix) return s->full = true, CT_OK;
      if (r) return no_room(s, r);
      s->out[s->len++] = (uint8_t)sym;
      continue;
    }
    if (sym == 256) return CT_OK;
    sym -= 257;
    if (sym >= 29) return fail(s, "invalid literal/length code");
    uint32_t e = 0;
    if (!getbits(s, len_extra[sym], &e)) return fail(s, "unexpected end of data");
    size_t length = len_base[sym] + e;
    int ds = decode(s, dist);
    if (ds < 0) return s->nbits < MAX_BITS && s->pos >= s->n ? fail(s, "unexpected end of data") : fail(s, "invalid distance code");
    if (ds >= 30) return fail(s, "invalid distance code");
    if (!getbits(s, dist_extra[ds], &e)) return fail(s, "unexpected end of data");
    size_t d = dist_base[ds] + e;
    if (d > s->len) return fail(s, "invalid distance too far back");
    if (s->prefix && length > s->max - s->len) {
      length = s->max - s->len;
      s->full = true;
    }
    int r = s->len + length <= s->cap ? 0 : out_reserve(s, length);
    if (r) return no_room(s, r);
    uint8_t *o = s->out + s->len;
    const uint8_t *from = o - d;
    for (size_t i = 0; i < length; i++) o[i] = from[i]; /* byte by byte: overlapping copies repeat */
    s->len += length;
    if (s->full) return CT_OK;
  }
}

static ct_status stored(inf_state *s) {
  s->bits >>= s->nbits & 7; /* to a byte boundary */
  s->nbits -= s->nbits & 7;
  uint32_t len, nlen;
  if (!getbits(s, 16, &len) || !getbits(s, 16, &nlen)) return fail(s, "unexpected end of data");
  if (len != (~nlen & 0xffff)) return fail(s, "invalid stored block lengths");
  if (s->prefix && len > s->max - s->len) {
    len = (uint32_t)(s->max - s->len);
    s->full = true;
  }
  int r = out_reserve(s, len);
  if (r) return no_room(s, r);
  /* whole bytes may still sit in the bit buffer; take those first, then copy */
  while (len && s->nbits >= 8) {
    s->out[s->len++] = (uint8_t)s->bits;
    s->bits >>= 8;
    s->nbits -= 8;
    len--;
  }
  if (len > s->n - s->pos) return fail(s, "unexpected end of data");
  if (len) memcpy(s->out + s->len, s->in + s->pos, len); /* an empty block may come before any output */
  s->len += len;
  s->pos += len;
  return CT_OK;
}

static ct_status fixed(inf_state *s) {
  static huff lit, dist;
  static int built; /* built once; the tables are then read-only (benign if two threads race: same bytes) */
  if (!built) {
    uint8_t l[288];
    for (int i = 0; i < 288; i++) l[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    huff_build(&lit, l, 288);
    for (int i = 0; i < 30; i++) l[i] = 5;
    huff_build(&dist, l, 30);
    __atomic_store_n(&built, 1, __ATOMIC_RELEASE);
  }
  return codes(s, &lit, &dist);
}

static ct_status dynamic(inf_state *s) {
  static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  uint32_t hlit, hdist, hclen;
  if (!getbits(s, 5, &hlit) || !getbits(s, 5, &hdist) || !getbits(s, 4, &hclen)) return fail(s, "unexpected end of data");
  int nlen = (int)hlit + 257, ndist = (int)hdist + 1, ncode = (int)hclen + 4;
  if (nlen > 286 || ndist > 30) return fail(s, "too many length or distance symbols");
  uint8_t lengths[286 + 30];
  memset(lengths, 0, 19);
  for (int i = 0; i < ncode; i++) {
    uint32_t v;
    if (!getbits(s, 3, &v)) return fail(s, "unexpected end of data");
    lengths[order[i]] = (uint8_t)v;
  }
  huff lencode, lit, dist;
  if (huff_build(&lencode, lengths, 19) != 0) return fail(s, "invalid code lengths set");
  for (int i = 0; i < nlen + ndist;) {
    int sym = decode(s, &lencode);
    if (sym < 0) return fail(s, "invalid code lengths set");
    if (sym < 16) {
      lengths[i++] = (uint8_t)sym;
      continue;
    }
    uint8_t rep = 0;
    uint32_t v;
    int times;
    if (sym == 16) {
      if (i == 0) return fail(s, "invalid bit length repeat");
      rep = lengths[i - 1];
      if (!getbits(s, 2, &v)) return fail(s, "unexpected end of data");
      times = 3 + (int)v;
    } else if (sym == 17) {
      if (!getbits(s, 3, &v)) return fail(s, "unexpected end of data");
      times = 3 + (int)v;
    } else {
      if (!getbits(s, 7, &v)) return fail(s, "unexpected end of data");
      times = 11 + (int)v;
    }
    if (i + times > nlen + ndist) return fail(s, "invalid bit length repeat");
    while (times--) lengths[i++] = rep;
  }
  if (lengths[256] == 0) return fail(s, "invalid code -- missing end-of-block");
  if (huff_build(&lit, lengths, nlen) != 0) return fail(s, "invalid literal/lengths set");
  if (huff_build(&dist, lengths + nlen, ndist) != 0) return fail(s, "invalid distances set");
  return codes(s, &lit, &dist);
}

/* One raw DEFLATE stream starting at s->pos; on return s->pos is after its last byte. */
static ct_status inflate_stream(inf_state *s) {
  s->bits = 0;
  s->nbits = 0;
  for (;;) {
    uint32_t last, type;
    if (!getbits(s, 1, &last) || !getbits(s, 2, &type)) return fail(s, "unexpected end of data");
    ct_status st;
    if (type == 0) st = stored(s);
    else if (type == 1) st = fixed(s);
    else if (type == 2) st = dynamic(s);
    else return fail(s, "invalid block type");
    if (st != CT_OK || s->full) return st;
    if (last) break;
  }
  /* give back the whole bytes loaded ahead into the bit buffer */
  s->pos -= (size_t)(s->nbits / 8);
  s->bits = 0;
  s->nbits = 0;
  return CT_OK;
}

static uint32_t crc_table[256];
static int crc_ready;

uint32_t ct_crc32(uint32_t crc, const void *data, size_t n) {
  if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      crc_table[i] = c;
    }
    __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
  }
  const uint8_t *p = data;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

bool ct_is_gzip(const void *data, size_t n) {
  const uint8_t *p = data;
  return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

ct_status ct_inflate_raw(const void *in, size_t n, size_t max_out, const char *what, void **out, size_t *out_len) {
  if (!out || !out_len || (!in && n)) return ct_set_error(CT_ERR_VALUE, "inflate: NULL argument");
  *out = NULL;
  *out_len = 0;
  inf_state s = {.in = in, .n = n, .max = max_out, .what = what ? what : "<buffer>"};
  ct_status st = inflate_stream(&s);
  if (st != CT_OK) {
    free(s.out);
    return st;
  }
  *out = s.out ? s.out : malloc(1);
  *out_len = s.len;
  return *out ? CT_OK : ct_set_error(CT_ERR_OOM, "out of memory");
}

static ct_status gunzip(const void *in, size_t n, size_t max_out, bool prefix, const char *what, void **out,
                        size_t *out_len) {
  if (!out || !out_len || (!in && n)) return ct_set_error(CT_ERR_VALUE, "gunzip: NULL argument");
  *out = NULL;
  *out_len = 0;
  inf_state s = {.in = in, .n = n, .max = max_out, .what = what ? what : "<buffer>", .prefix = prefix};
  const uint8_t *p = in;
  ct_status st = CT_OK;
  int members = 0;
  /* one or more members back to back (what `cat a.gz b.gz` makes) */
  while (st == CT_OK && (members == 0 || s.pos < n)) {
    size_t h = s.pos;
    if (n - h < 18) {
      st = fail(&s, members ? "trailing bytes after the gzip stream" : "too short for a gzip file");
      break;
    }
    if (p[h] != 0x1f || p[h + 1] != 0x8b) {
      st = members ? fail(&s, "trailing bytes after the gzip stream") : fail(&s, "not in gzip format (bad magic bytes)");
      break;
    }
    if (p[h + 2] != 8) {
      st = fail(&s, "unknown compression method (only deflate is defined)");
      break;
    }
    uint8_t flg = p[h + 3];
    if (flg & 0xe0) {
      st = fail(&s, "reserved header flags are set");
      break;
    }
    size_t q = h + 10;
    if (flg & 4) { /* FEXTRA */
      if (n - q < 2) { st = fail(&s, "unexpected end of data in the header"); break; }
      size_t xlen = (size_t)p[q] | (size_t)p[q + 1] << 8;
      q += 2;
      if (n - q < xlen) { st = fail(&s, "unexpected end of data in the header"); break; }
      q += xlen;
    }
    for (int f = 8; f <= 16 && st == CT_OK; f <<= 1) /* FNAME, FCOMMENT: zero-terminated */
      if (flg & f) {
        const uint8_t *z = q < n ? memchr(p + q, 0, n - q) : NULL;
        if (!z) st = fail(&s, "unexpected end of data in the header");
        else q = (size_t)(z - p) + 1;
      }
    if (st != CT_OK) break;
    if (flg & 2) { /* FHCRC: the low 16 bits of the header's CRC-32 */
      if (n - q < 2) { st = fail(&s, "unexpected end of data in the header"); break; }
      uint32_t want = (uint32_t)p[q] | (uint32_t)p[q + 1] << 8;
      if ((ct_crc32(0, p + h, q - h) & 0xffff) != want) { st = fail(&s, "header checksum mismatch"); break; }
      q += 2;
    }
    s.pos = q;
    size_t start = s.len;
    st = inflate_stream(&s);
    if (st != CT_OK || s.full) break;
    if (n - s.pos < 8) {
      st = fail(&s, "unexpected end of data (the CRC-32 and length trailer is missing)");
      break;
    }
    const uint8_t *t = p + s.pos;
    uint32_t crc = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    uint32_t isize = (uint32_t)t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;
    s.pos += 8;
    if (ct_crc32(0, s.out ? s.out + start : NULL, s.len - start) != crc) {
      st = fail(&s, "CRC-32 mismatch (the data is corrupted)");
      break;
    }
    if ((uint32_t)(s.len - start) != isize) {
      st = fail(&s, "length mismatch");
      break;
    }
    members++;
  }
  if (st != CT_OK) {
    free(s.out);
    return st;
  }
  *out = s.out ? s.out : malloc(1);
  *out_len = s.len;
  return *out ? CT_OK : ct_set_error(CT_ERR_OOM, "out of memory");
}

ct_status ct_gunzip(const void *in, size_t n, size_t max_out, const char *what, void **out, size_t *out_len) {
  return gunzip(in, n, max_out, false, what, out, out_len);
}

ct_status ct_gunzip_prefix(const void *in, size_t n, size_t max_out, const char *what, void **out, size_t *out_len) {
  return gunzip(in, n, max_out, true, what, out, out_len);
}
