/* A strict parser for the safetensors JSON header. It reads exactly the schema (an object
 * of tensor entries and one optional "__metadata__" object of strings), so it never
 * recurses into arbitrary JSON: nesting depth is fixed, every byte is bounds-checked,
 * and every problem gets its own message naming the tensor. */
#include "io_internal.h"
#include <stdio.h>
#include <stdlib.h>

/* Rank = position in the reference writer's Dtype enum, which lists dtypes in increasing
 * alignment; the writer emits higher ranks first. */
const ct_st_dtype ct_st_dtypes[] = {
    {"BOOL", 8, CT_BOOL, 0},          {"F4", 4, CT_NUM_DTYPES, 1},
    {"F6_E2M3", 6, CT_NUM_DTYPES, 2}, {"F6_E3M2", 6, CT_NUM_DTYPES, 3},
    {"U8", 8, CT_UINT8, 4},           {"I8", 8, CT_INT8, 5},
    {"F8_E5M2", 8, CT_NUM_DTYPES, 6}, {"F8_E4M3", 8, CT_NUM_DTYPES, 7},
    {"F8_E8M0", 8, CT_NUM_DTYPES, 8}, {"F8_E4M3FNUZ", 8, CT_NUM_DTYPES, 9},
    {"F8_E5M2FNUZ", 8, CT_NUM_DTYPES, 10}, {"I16", 16, CT_INT16, 11},
    {"U16", 16, CT_NUM_DTYPES, 12},   {"F16", 16, CT_FLOAT16, 13},
    {"BF16", 16, CT_BFLOAT16, 14},    {"I32", 32, CT_INT32, 15},
    {"U32", 32, CT_NUM_DTYPES, 16},   {"F32", 32, CT_FLOAT32, 17},
    {"C64", 64, CT_NUM_DTYPES, 18},   {"F64", 64, CT_FLOAT64, 19},
    {"I64", 64, CT_INT64, 20},        {"U64", 64, CT_NUM_DTYPES, 21},
};
const int ct_st_n_dtypes = (int)(sizeof ct_st_dtypes / sizeof ct_st_dtypes[0]);

int ct_st_dtype_of(ct_dtype dt) {
  for (int i = 0; i < ct_st_n_dtypes; i++)
    if (ct_st_dtypes[i].ct == dt && dt != CT_NUM_DTYPES) return i;
  return -1;
}

#define MAX_DIMS_ACCEPTED 64

/* ---- messages ----------------------------------------------------------------------- */
/* A name for messages: truncated, control bytes escaped, so a hostile name cannot
 * flood or garble the error text. */
static const char *show(const char *s, char *buf, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; s && s[i] && o + 8 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (i >= 96) {
      memcpy(buf + o, "...", 3);
      o += 3;
      break;
    }
    if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    else buf[o++] = (char)c;
  }
  buf[o] = 0;
  return buf;
}

static ct_status fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static ct_status fail(const char *fmt, ...) {
  char m[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  return ct_set_error(CT_ERR_RUNTIME, "%s", m);
}

ct_status ct_st_wrap_error(const char *where) {
  ct_status st = ct_last_status();
  if (st == CT_OK) st = CT_ERR_RUNTIME;
  char m[1024];
  snprintf(m, sizeof m, "%s", ct_last_error());
  return ct_set_error(st, "invalid safetensors %s: %s", where, m);
}

/* ---- info lifetime ------------------------------------------------------------------- */
void ct_safetensors_info_free(ct_safetensors_info *info) {
  if (!info) return;
  for (int64_t i = 0; i < info->n; i++) free(info->e[i].name);
  for (int64_t i = 0; i < info->nm; i++) {
    free(info->mk[i]);
    free(info->mv[i]);
  }
  free(info->e);
  free(info->pool);
  free(info->mk);
  free(info->mv);
  free(info);
}

static bool grow(void **p, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return true;
  int64_t c = *cap ? *cap : 8;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q) {
    ct_set_error(CT_ERR_OOM, "CPU out of memory while parsing a safetensors header");
    return false;
  }
  *p = q;
  *cap = c;
  return true;
}

/* ---- a set of strings (duplicate names and metadata keys) ---------------------------- */
typedef struct {
  const char **slot;
  int64_t cap, n;
} strset;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* 1 inserted, 0 already present, -1 out of memory */
static int strset_add(strset *S, const char *s) {
  if ((S->n + 1) * 2 > S->cap) {
    int64_t cap = S->cap ? S->cap * 2 : 64;
    const char **ns = calloc((size_t)cap, sizeof *ns);
    if (!ns) {
      ct_set_error(CT_ERR_OOM, "CPU out of memory while parsing a safetensors header");
      return -1;
    }
    for (int64_t i = 0; i < S->cap; i++)
      if (S->slot[i]) {
        uint64_t h = hash_str(S->slot[i]) & (uint64_t)(cap - 1);
        while (ns[h]) h = (h + 1) & (uint64_t)(cap - 1);
        ns[h] = S->slot[i];
      }
    free(S->slot);
    S->slot = ns;
    S->cap = cap;
  }
  uint64_t h = hash_str(s) & (uint64_t)(S->cap - 1);
  while (S->slot[h]) {
    if (!strcmp(S->slot[h], s)) return 0;
    h = (h + 1) & (uint64_t)(S->cap - 1);
  }
  S->slot[h] = s;
  S->n++;
  return 1;
}

/* ---- the parser ------------------------------------------------------------------------ */
typedef struct {
  const unsigned char *s;
  size_t n, i;
  ct_safetensors_info *info;
} P;

bool ct_st_valid_utf8(const unsigned char *s, size_t n, size_t *bad) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      *bad = i;
      return false;
    }
    if (n - i < len) {
      *bad = i;
      return false;
    }
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) {
        *bad = i;
        return false;
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    /* overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8 */
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *bad = i;
      return false;
    }
    i += len;
  }
  return true;
}

static void ws(P *p) {
  while (p->i < p->n) {
    unsigned char c = p->s[p->i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') p->i++;
    else break;
  }
}

static const char *found(P *p, char *buf, size_t cap) {
  if (p->i >= p->n) return "the end of the header";
  unsigned char c = p->s[p->i];
  if (c >= 0x20 && c < 0x7f) snprintf(buf, cap, "'%c'", c);
  else snprintf(buf, cap, "byte 0x%02x", c);
  return buf;
}

static ct_status syntax(P *p, const char *expected) {
  char b[32];
  return fail("invalid JSON in the header at byte %zu: expected %s, found %s", p->i, expected, found(p, b, sizeof b));
}

static bool peek(P *p, char c) { return p->i < p->n && p->s[p->i] == (unsigned char)c; }

static ct_status expect(P *p, char c, const char *what) {
  if (!peek(p, c)) return syntax(p, what);
  p->i++;
  return CT_OK;
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static ct_status read_u4(P *p, uint32_t *out) {
  if (p->n - p->i < 4) return fail("invalid JSON in the header at byte %zu: truncated \\u escape", p->i);
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval(p->s[p->i + (size_t)k]);
    if (h < 0) return fail("invalid JSON in the header at byte %zu: bad \\u escape", p->i);
    v = v * 16 + (uint32_t)h;
  }
  p->i += 4;
  *out = v;
  return CT_OK;
}

/* A JSON string at p->i into a new NUL-terminated UTF-8 string. */
static ct_status parse_string(P *p, char **out) {
  *out = NULL;
  if (!peek(p, '"')) return syntax(p, "a string");
  size_t start = ++p->i;
  /* the decoded text is never longer than the raw text */
  size_t end = start;
  while (end < p->n && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
  if (end >= p->n) return fail("invalid JSON in the header: unterminated string starting at byte %zu", start - 1);
  char *o = malloc(end - start + 1);
  if (!o) return ct_set_error(CT_ERR_OOM, "CPU out of memory while parsing a safetensors header");
  size_t k = 0;
  for (;;) {
    if (p->i >= p->n) { /* cannot happen (the scan found the closing quote); kept as a guard */
      free(o);
      return fail("invalid JSON in the header: unterminated string starting at byte %zu", start - 1);
    }
    unsigned char c = p->s[p->i];
    if (c == '"') {
      p->i++;
      break;
    }
    if (c < 0x20) {
      free(o);
      return fail("invalid JSON in the header at byte %zu: control character 0x%02x in a string", p->i, c);
    }
    if (c != '\\') {
      o[k++] = (char)c;
      p->i++;
      continue;
    }
    p->i++;
    unsigned char e = p->s[p->i++]; /* in bounds: the scan above stopped on a closing quote */
    switch (e) {
      case '"': o[k++] = '"'; break;
      case '\\': o[k++] = '\\'; break;
      case '/': o[k++] = '/'; break;
      case 'b': o[k++] = '\b'; break;
      case 'f': o[k++] = '\f'; break;
      case 'n': o[k++] = '\n'; break;
      case 'r': o[k++] = '\r'; break;
      case 't': o[k++] = '\t'; break;
      case 'u': {
        uint32_t cp, lo;
        if (read_u4(p, &cp) != CT_OK) {
          free(o);
          return ct_last_status();
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          free(o);
          return fail("invalid JSON in the header at byte %zu: lone low surrogate in a \\u escape", p->i - 6);
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (p->n - p->i < 6 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') {
            free(o);
            return fail("invalid JSON in the header at byte %zu: lone high surrogate in a \\u escape", p->i - 6);
          }
          p->i += 2;
          if (read_u4(p, &lo) != CT_OK) {
            free(o);
            return ct_last_status();
          }
          if (lo < 0xDC00 || lo > 0xDFFF) {
            free(o);
            return fail("invalid JSON in the header at byte %zu: high surrogate not followed by a low one", p->i - 12);
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0) {
          free(o);
          return fail("a string in the header contains \\u0000 (NUL), which ctorch names cannot hold (byte %zu)",
                      p->i - 6);
        }
        if (cp < 0x80) o[k++] = (char)cp;
        else if (cp < 0x800) {
          o[k++] = (char)(0xC0 | (cp >> 6));
          o[k++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          o[k++] = (char)(0xE0 | (cp >> 12));
          o[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
          o[k++] = (char)(0x80 | (cp & 0x3F));
        } else {
          o[k++] = (char)(0xF0 | (cp >> 18));
          o[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
          o[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
          o[k++] = (char)(0x80 | (cp & 0x3F));
        }
        break;
      }
      default:
        free(o);
        return fail("invalid JSON in the header at byte %zu: unknown escape '\\%c'", p->i - 2,
                    e >= 0x20 && e < 0x7f ? e : '?');
    }
  }
  o[k] = 0;
  *out = o;
  return CT_OK;
}

/* A non-negative JSON integer; ctx names it in messages ("tensor 'w': shape"). */
static ct_status parse_uint(P *p, int64_t *out, const char *ctx) {
  if (peek(p, '-')) return fail("%s: negative value at byte %zu (expected a non-negative integer)", ctx, p->i);
  if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') {
    char b[32];
    return fail("%s: expected a non-negative integer at byte %zu, found %s", ctx, p->i, found(p, b, sizeof b));
  }
  size_t start = p->i;
  uint64_t v = 0;
  bool big = false;
  while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
    unsigned d = p->s[p->i] - '0';
    if (v > ((uint64_t)INT64_MAX - d) / 10) big = true;
    else v = v * 10 + d;
    p->i++;
  }
  if (p->s[start] == '0' && p->i - start > 1)
    return fail("invalid JSON in the header at byte %zu: number with a leading zero", start);
  if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E'))
    return fail("%s: expected an integer at byte %zu, found a fraction or exponent", ctx, start);
  if (big) return fail("%s: value at byte %zu is too large (more than 2^63 - 1)", ctx, start);
  *out = (int64_t)v;
  return CT_OK;
}

enum { F_DTYPE = 1, F_SHAPE = 2, F_OFFSETS = 4 };

static ct_status parse_entry(P *p, ct_st_entry *e) {
  char nb[400], ctx[480];
  show(e->name, nb, sizeof nb);
  if (!peek(p, '{')) {
    char b[32];
    return fail("tensor '%s': expected an object {\"dtype\", \"shape\", \"data_offsets\"} at byte %zu, found %s", nb,
                p->i, found(p, b, sizeof b));
  }
  p->i++;
  int seen = 0;
  ws(p);
  if (peek(p, '}')) p->i++;
  else
    for (;;) {
      char *key;
      ws(p);
      CT_TRY(parse_string(p, &key));
      ws(p);
      ct_status st = expect(p, ':', "':'");
      ws(p);
      int f = !strcmp(key, "dtype") ? F_DTYPE : !strcmp(key, "shape") ? F_SHAPE : !strcmp(key, "data_offsets") ? F_OFFSETS : 0;
      if (st == CT_OK && !f) {
        char kb[400];
        st = fail("tensor '%s': unknown field '%s' (expected dtype, shape, data_offsets)", nb, show(key, kb, sizeof kb));
      } else if (st == CT_OK && (seen & f)) st = fail("tensor '%s': duplicate field '%s'", nb, key);
      free(key);
      CT_TRY(st);
      seen |= f;
      if (f == F_DTYPE) {
        if (!peek(p, '"')) {
          char b[32];
          return fail("tensor '%s': dtype must be a string, found %s at byte %zu", nb, found(p, b, sizeof b), p->i);
        }
        char *d;
        CT_TRY(parse_string(p, &d));
        e->dt = -1;
        for (int k = 0; k < ct_st_n_dtypes; k++)
          if (!strcmp(d, ct_st_dtypes[k].name)) e->dt = k;
        if (e->dt < 0) {
          char db[400];
          st = fail("tensor '%s': unknown dtype '%s'", nb, show(d, db, sizeof db));
        }
        free(d);
        CT_TRY(st);
      } else if (f == F_SHAPE) {
        snprintf(ctx, sizeof ctx, "tensor '%s': shape", nb);
        if (!peek(p, '[')) {
          char b[32];
          return fail("%s must be an array of integers, found %s at byte %zu", ctx, found(p, b, sizeof b), p->i);
        }
        p->i++;
        e->ndim = 0;
        e->shape_at = p->info->npool;
        ws(p);
        if (peek(p, ']')) p->i++;
        else
          for (;;) {
            ws(p);
            int64_t v;
            CT_TRY(parse_uint(p, &v, ctx));
            if (e->ndim >= MAX_DIMS_ACCEPTED) return fail("%s has more than %d dimensions", ctx, MAX_DIMS_ACCEPTED);
            if (!grow((void **)&p->info->pool, &p->info->cappool, p->info->npool + 1, sizeof(int64_t)))
              return ct_last_status();
            p->info->pool[p->info->npool++] = v;
            e->ndim++;
            ws(p);
            if (peek(p, ',')) {
              p->i++;
              continue;
            }
            CT_TRY(expect(p, ']', "',' or ']' in a shape"));
            break;
          }
      } else {
        snprintf(ctx, sizeof ctx, "tensor '%s': data_offsets", nb);
        if (!peek(p, '[')) {
          char b[32];
          return fail("%s must be an array [begin, end], found %s at byte %zu", ctx, found(p, b, sizeof b), p->i);
        }
        p->i++;
        ws(p);
        CT_TRY(parse_uint(p, &e->begin, ctx));
        ws(p);
        if (!peek(p, ',')) return fail("%s must hold exactly two integers [begin, end]", ctx);
        p->i++;
        ws(p);
        CT_TRY(parse_uint(p, &e->end, ctx));
        ws(p);
        if (!peek(p, ']')) return fail("%s must hold exactly two integers [begin, end]", ctx);
        p->i++;
      }
      ws(p);
      if (peek(p, ',')) {
        p->i++;
        continue;
      }
      CT_TRY(expect(p, '}', "',' or '}' in a tensor entry"));
      break;
    }
  if (!(seen & F_DTYPE)) return fail("tensor '%s': missing field 'dtype'", nb);
  if (!(seen & F_SHAPE)) return fail("tensor '%s': missing field 'shape'", nb);
  if (!(seen & F_OFFSETS)) return fail("tensor '%s': missing field 'data_offsets'", nb);
  return CT_OK;
}

static ct_status parse_metadata(P *p, strset *keys) {
  if (!peek(p, '{')) {
    char b[32];
    return fail("__metadata__ must be an object of strings, found %s at byte %zu", found(p, b, sizeof b), p->i);
  }
  p->i++;
  ws(p);
  if (peek(p, '}')) {
    p->i++;
    return CT_OK;
  }
  ct_safetensors_info *I = p->info;
  for (;;) {
    char *k, *v;
    ws(p);
    CT_TRY(parse_string(p, &k));
    ws(p);
    ct_status st = expect(p, ':', "':'");
    if (st != CT_OK) {
      free(k);
      return st;
    }
    ws(p);
    if (!peek(p, '"')) {
      char kb[400], b[32];
      st = fail("__metadata__: the value of '%s' is not a string (found %s at byte %zu)", show(k, kb, sizeof kb),
                found(p, b, sizeof b), p->i);
      free(k);
      return st;
    }
    if (parse_string(p, &v) != CT_OK) {
      free(k);
      return ct_last_status();
    }
    if (!grow((void **)&I->mk, &I->capm, I->nm + 1, sizeof(char *)) ||
        !grow((void **)&I->mv, &I->capmv, I->nm + 1, sizeof(char *))) {
      free(k);
      free(v);
      return ct_last_status();
    }
    I->mk[I->nm] = k;
    I->mv[I->nm] = v;
    I->nm++;
    int r = strset_add(keys, k);
    if (r < 0) return ct_last_status();
    if (r == 0) {
      char kb[400];
      return fail("__metadata__: duplicate key '%s'", show(k, kb, sizeof kb));
    }
    ws(p);
    if (peek(p, ',')) {
      p->i++;
      continue;
    }
    return expect(p, '}', "',' or '}' in __metadata__");
  }
}

static int cmp_entry(const void *a, const void *b) {
  const ct_st_entry *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static const char *shape_text(const ct_safetensors_info *I, const ct_st_entry *e, char *buf, size_t cap) {
  size_t o = 0;
  o += (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < e->ndim && o < cap; d++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", d ? ", " : "", (long long)I->pool[e->shape_at + d]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
  return buf;
}

/* Per-tensor checks: offsets ordered, byte count agrees with dtype and shape, in bounds. */
static ct_status check_entry(const ct_safetensors_info *I, ct_st_entry *e) {
  char nb[400], sb[200];
  show(e->name, nb, sizeof nb);
  const ct_st_dtype *dt = &ct_st_dtypes[e->dt];
  if (e->end < e->begin)
    return fail("tensor '%s': data_offsets [%lld, %lld] end before they begin", nb, (long long)e->begin,
                (long long)e->end);
  int64_t numel = 1, bits;
  for (int d = 0; d < e->ndim; d++)
    if (!ct_mul_ok(numel, I->pool[e->shape_at + d], &numel))
      return fail("tensor '%s': shape %s has too many elements (the size overflows)", nb,
                  shape_text(I, e, sb, sizeof sb));
  if (!ct_mul_ok(numel, dt->bits, &bits))
    return fail("tensor '%s': shape %s of dtype %s is too large (the byte size overflows)", nb,
                shape_text(I, e, sb, sizeof sb), dt->name);
  if (bits % 8)
    return fail("tensor '%s': %lld elements of %d-bit dtype %s are not a whole number of bytes", nb,
                (long long)numel, dt->bits, dt->name);
  e->numel = numel;
  if (e->end - e->begin != bits / 8)
    return fail("tensor '%s': data_offsets [%lld, %lld] hold %lld bytes, but dtype %s with shape %s needs %lld", nb,
                (long long)e->begin, (long long)e->end, (long long)(e->end - e->begin), dt->name,
                shape_text(I, e, sb, sizeof sb), (long long)(bits / 8));
  if (I->data_len >= 0 && e->end > I->data_len)
    return fail("tensor '%s': data_offsets [%lld, %lld] go beyond the end of the data buffer (%lld bytes)", nb,
                (long long)e->begin, (long long)e->end, (long long)I->data_len);
  return CT_OK;
}

/* Whole-buffer checks on the sorted entries: no overlaps, no holes, nothing left over. */
static ct_status check_coverage(const ct_safetensors_info *I) {
  int64_t at = 0;
  const ct_st_entry *prev = NULL;
  for (int64_t i = 0; i < I->n; i++) {
    const ct_st_entry *e = &I->e[i];
    char nb[400], pb[400];
    if (e->begin < at)
      return fail("tensor '%s': data_offsets [%lld, %lld] overlap tensor '%s' [%lld, %lld]", show(e->name, nb, sizeof nb),
                  (long long)e->begin, (long long)e->end, show(prev->name, pb, sizeof pb), (long long)prev->begin,
                  (long long)prev->end);
    if (e->begin > at)
      return fail("the data buffer has a hole: bytes [%lld, %lld) before tensor '%s' belong to no tensor",
                  (long long)at, (long long)e->begin, show(e->name, nb, sizeof nb));
    at = e->end;
    prev = e;
  }
  if (I->data_len >= 0 && at != I->data_len)
    return fail("the data buffer has %lld bytes but the tensors cover only %lld: %lld trailing bytes belong to no tensor",
                (long long)I->data_len, (long long)at, (long long)(I->data_len - at));
  return CT_OK;
}

static ct_status parse_top(P *p) {
  ct_safetensors_info *I = p->info;
  size_t bad;
  if (!ct_st_valid_utf8(p->s, p->n, &bad)) return fail("the header is not valid UTF-8 (byte %zu)", bad);
  if (!peek(p, '{')) return fail("the header must begin with '{' (found %s)", p->n ? "another byte" : "an empty header");
  p->i++;
  strset names = {0}, metakeys = {0};
  bool have_meta = false;
  ct_status st = CT_OK;
  ws(p);
  if (peek(p, '}')) p->i++;
  else
    for (;;) {
      char *key;
      ws(p);
      if ((st = parse_string(p, &key)) != CT_OK) break;
      ws(p);
      if ((st = expect(p, ':', "':'")) != CT_OK) {
        free(key);
        break;
      }
      ws(p);
      if (!strcmp(key, "__metadata__")) {
        free(key);
        if (have_meta) {
          st = fail("duplicate key '__metadata__' in the header");
          break;
        }
        have_meta = true;
        if ((st = parse_metadata(p, &metakeys)) != CT_OK) break;
      } else {
        if (!grow((void **)&I->e, &I->cap, I->n + 1, sizeof *I->e)) {
          free(key);
          st = ct_last_status();
          break;
        }
        ct_st_entry *e = &I->e[I->n++];
        memset(e, 0, sizeof *e);
        e->name = key;
        e->order = I->n - 1;
        int r = strset_add(&names, key);
        if (r < 0) {
          st = ct_last_status();
          break;
        }
        if (r == 0) {
          char nb[400];
          st = fail("duplicate tensor name '%s'", show(key, nb, sizeof nb));
          break;
        }
        if ((st = parse_entry(p, e)) != CT_OK) break;
        if ((st = check_entry(I, e)) != CT_OK) break;
      }
      ws(p);
      if (peek(p, ',')) {
        p->i++;
        continue;
      }
      st = expect(p, '}', "',' or '}' after a header entry");
      break;
    }
  free(names.slot);
  free(metakeys.slot);
  CT_TRY(st);
  ws(p);
  if (p->i != p->n) {
    char b[32];
    return fail("unexpected %s at byte %zu after the header's closing '}' (only whitespace padding may follow)",
                found(p, b, sizeof b), p->i);
  }
  if (I->n > 1) qsort(I->e, (size_t)I->n, sizeof *I->e, cmp_entry);
  return check_coverage(I);
}

ct_safetensors_info *ct_safetensors_parse_header(const char *json, size_t n, int64_t data_len) {
  if (!json && n) {
    ct_set_error(CT_ERR_VALUE, "ct_safetensors_parse_header: json is NULL");
    return NULL;
  }
  if ((long long)n > CT_ST_MAX_HEADER) {
    ct_set_error(CT_ERR_RUNTIME, "header length %zu exceeds the limit of %lld bytes", n, CT_ST_MAX_HEADER);
    return NULL;
  }
  ct_safetensors_info *I = ct_xcalloc(1, sizeof *I);
  if (!I) return NULL;
  I->header_len = (int64_t)n;
  I->data_len = data_len < 0 ? -1 : data_len;
  P p = {(const unsigned char *)(json ? json : ""), n, 0, I};
  if (parse_top(&p) != CT_OK) {
    ct_safetensors_info_free(I);
    return NULL;
  }
  return I;
}

ct_safetensors_info *ct_st_parse_file_prefix(const unsigned char *buf, size_t have, uint64_t total) {
  if (total < 8) {
    ct_set_error(CT_ERR_RUNTIME,
                 "the file is too small (%llu bytes): it needs at least the 8-byte header length",
                 (unsigned long long)total);
    return NULL;
  }
  uint64_t n = 0;
  for (int k = 7; k >= 0; k--) n = (n << 8) | buf[k];
  if (n > (uint64_t)CT_ST_MAX_HEADER) {
    ct_set_error(CT_ERR_RUNTIME, "header length %llu exceeds the limit of %lld bytes", (unsigned long long)n,
                 CT_ST_MAX_HEADER);
    return NULL;
  }
  if (n > total - 8) {
    ct_set_error(CT_ERR_RUNTIME, "header length %llu is larger than the %llu bytes that follow it",
                 (unsigned long long)n, (unsigned long long)(total - 8));
    return NULL;
  }
  if (have < 8 + n) {
    ct_set_error(CT_ERR_RUNTIME, "internal error: header not read in full");
    return NULL;
  }
  return ct_safetensors_parse_header((const char *)buf + 8, (size_t)n, (int64_t)(total - 8 - n));
}

/* ---- accessors ----------------------------------------------------------------------- */
int64_t ct_safetensors_info_len(const ct_safetensors_info *I) { return I ? I->n : 0; }

ct_safetensors_entry ct_safetensors_info_entry(const ct_safetensors_info *I, int64_t i) {
  ct_safetensors_entry r;
  memset(&r, 0, sizeof r);
  if (!I || i < 0 || i >= I->n) {
    r.dtype = CT_NUM_DTYPES;
    return r;
  }
  const ct_st_entry *e = &I->e[i];
  r.name = e->name;
  r.dtype_name = ct_st_dtypes[e->dt].name;
  r.dtype = ct_st_dtypes[e->dt].ct;
  r.ndim = e->ndim;
  r.shape = I->pool ? I->pool + e->shape_at : NULL;
  r.numel = e->numel;
  r.begin = e->begin;
  r.end = e->end;
  return r;
}

int64_t ct_safetensors_info_meta_len(const ct_safetensors_info *I) { return I ? I->nm : 0; }
const char *ct_safetensors_info_meta_key(const ct_safetensors_info *I, int64_t i) {
  return I && i >= 0 && i < I->nm ? I->mk[i] : NULL;
}
const char *ct_safetensors_info_meta_value(const ct_safetensors_info *I, int64_t i) {
  return I && i >= 0 && i < I->nm ? I->mv[i] : NULL;
}
int64_t ct_safetensors_info_header_len(const ct_safetensors_info *I) { return I ? I->header_len : -1; }
int64_t ct_safetensors_info_data_len(const ct_safetensors_info *I) { return I ? I->data_len : -1; }
