/* A small recursive-descent JSON parser and a byte buffer for writing JSON. */
#include "util/json.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTJ_MAX_DEPTH 256 /* nesting limit: untrusted files must not exhaust the stack */

typedef struct {
  const char *s;
  size_t n, i;
  char *err;
  size_t errn;
  bool failed;
} ctj_parser;

static void fail(ctj_parser *p, const char *what) {
  if (!p->failed && p->err && p->errn) snprintf(p->err, p->errn, "JSON: %s at byte %zu", what, p->i);
  p->failed = true;
}

static void skip_ws(ctj_parser *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static void free_value(ctj *v) {
  if (!v) return;
  free(v->str);
  for (size_t i = 0; i < v->n; i++) {
    free_value(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->key_lens);
}

void ctj_free(ctj *v) {
  free_value(v);
  free(v);
}

static bool grow(ctj *v, bool obj) {
  if (v->n < v->cap) return true;
  size_t cap = v->cap ? v->cap * 2 : 8;
  ctj *it = realloc(v->items, cap * sizeof *it);
  if (!it) return false;
  v->items = it;
  if (obj) {
    char **k = realloc(v->keys, cap * sizeof *k);
    if (!k) return false;
    v->keys = k;
    size_t *kl = realloc(v->key_lens, cap * sizeof *kl);
    if (!kl) return false;
    v->key_lens = kl;
  }
  v->cap = cap;
  return true;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool read_hex4(ctj_parser *p, unsigned *out) {
  if (p->i + 4 > p->n) return false;
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval(p->s[p->i + (size_t)k]);
    if (h < 0) return false;
    v = v * 16 + (unsigned)h;
  }
  p->i += 4;
  *out = v;
  return true;
}

static size_t put_utf8(char *d, unsigned cp) {
  if (cp < 0x80) { d[0] = (char)cp; return 1; }
  if (cp < 0x800) { d[0] = (char)(0xC0 | (cp >> 6)); d[1] = (char)(0x80 | (cp & 63)); return 2; }
  if (cp < 0x10000) {
    d[0] = (char)(0xE0 | (cp >> 12)); d[1] = (char)(0x80 | ((cp >> 6) & 63)); d[2] = (char)(0x80 | (cp & 63));
    return 3;
  }
  d[0] = (char)(0xF0 | (cp >> 18)); d[1] = (char)(0x80 | ((cp >> 12) & 63));
  d[2] = (char)(0x80 | ((cp >> 6) & 63)); d[3] = (char)(0x80 | (cp & 63));
  return 4;
}

/* Parses a string at p->i (the opening quote); the decoded text is never longer than the source. */
static char *parse_string(ctj_parser *p, size_t *len) {
  p->i++; /* the quote */
  size_t start = p->i, end = start;
  while (end < p->n && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
  if (end >= p->n) { fail(p, "unterminated string"); return NULL; }
  char *out = malloc(end - start + 1);
  if (!out) { fail(p, "out of memory"); return NULL; }
  size_t o = 0;
  while (p->i < end) {
    char c = p->s[p->i++];
    if ((unsigned char)c < 0x20) { fail(p, "control character in string"); free(out); return NULL; }
    if (c != '\\') { out[o++] = c; continue; }
    char e = p->s[p->i++];
    switch (e) {
      case '"': out[o++] = '"'; break;
      case '\\': out[o++] = '\\'; break;
      case '/': out[o++] = '/'; break;
      case 'b': out[o++] = '\b'; break;
      case 'f': out[o++] = '\f'; break;
      case 'n': out[o++] = '\n'; break;
      case 'r': out[o++] = '\r'; break;
      case 't': out[o++] = '\t'; break;
      case 'u': {
        unsigned cp;
        if (!read_hex4(p, &cp)) { fail(p, "bad \\u escape"); free(out); return NULL; }
        if (cp >= 0xD800 && cp < 0xDC00 && p->i + 6 <= end && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
          size_t save = p->i;
          unsigned lo;
          p->i += 2;
          if (read_hex4(p, &lo) && lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          else p->i = save;
        }
        /* a lone surrogate becomes U+FFFD, as Python's json + utf-8 would refuse it */
        if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;
        /* \uXXXX is 6 source bytes and at most 3 output bytes; a pair is 12 for 4 */
        o += put_utf8(out + o, cp);
        break;
      }
      default: fail(p, "bad escape"); free(out); return NULL;
    }
  }
  p->i = end + 1;
  out[o] = 0;
  *len = o;
  return out;
}

static bool parse_value(ctj_parser *p, ctj *v, int depth);

static bool parse_container(ctj_parser *p, ctj *v, bool obj, int depth) {
  v->type = obj ? CTJ_OBJ : CTJ_ARR;
  p->i++;
  skip_ws(p);
  if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) { p->i++; return true; }
  for (;;) {
    if (!grow(v, obj)) { fail(p, "out of memory"); return false; }
    char *key = NULL;
    size_t klen = 0;
    if (obj) {
      skip_ws(p);
      if (p->i >= p->n || p->s[p->i] != '"') { fail(p, "expected a key"); return false; }
      if (!(key = parse_string(p, &klen))) return false;
      skip_ws(p);
      if (p->i >= p->n || p->s[p->i] != ':') { free(key); fail(p, "expected ':'"); return false; }
      p->i++;
    }
    ctj *it = &v->items[v->n];
    memset(it, 0, sizeof *it);
    if (obj) { v->keys[v->n] = key; v->key_lens[v->n] = klen; }
    v->n++;
    if (!parse_value(p, it, depth + 1)) return false;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
    if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) { p->i++; return true; }
    fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    return false;
  }
}

static bool parse_value(ctj_parser *p, ctj *v, int depth) {
  if (depth > CTJ_MAX_DEPTH) { fail(p, "nesting too deep"); return false; }
  skip_ws(p);
  if (p->i >= p->n) { fail(p, "unexpected end"); return false; }
  char c = p->s[p->i];
  if (c == '{' || c == '[') return parse_container(p, v, c == '{', depth);
  if (c == '"') {
    v->type = CTJ_STR;
    return (v->str = parse_string(p, &v->len)) != NULL;
  }
  if (p->n - p->i >= 4 && !memcmp(p->s + p->i, "null", 4)) { v->type = CTJ_NULL; p->i += 4; return true; }
  if (p->n - p->i >= 4 && !memcmp(p->s + p->i, "true", 4)) { v->type = CTJ_BOOL; v->b = true; v->num = 1; p->i += 4; return true; }
  if (p->n - p->i >= 5 && !memcmp(p->s + p->i, "false", 5)) { v->type = CTJ_BOOL; p->i += 5; return true; }
  /* numbers (and Python's NaN / Infinity, which json.dump writes) */
  char buf[64];
  size_t k = 0;
  while (p->i + k < p->n && k < sizeof buf - 1 && strchr("+-0123456789.eEInfityNa", p->s[p->i + k])) {
    buf[k] = p->s[p->i + k];
    k++;
  }
  buf[k] = 0;
  char *endp = NULL;
  double d = k ? strtod(buf, &endp) : 0;
  if (!k || endp == buf) { fail(p, "unexpected character"); return false; }
  p->i += (size_t)(endp - buf);
  v->type = CTJ_NUM;
  v->num = d;
  return true;
}

ctj *ctj_parse(const char *s, size_t n, char *err, size_t errn) {
  if (err && errn) err[0] = 0;
  ctj_parser p = {s, n, 0, err, errn, false};
  ctj *v = calloc(1, sizeof *v);
  if (!s || !v) {
    free(v);
    if (err && errn) snprintf(err, errn, "JSON: out of memory");
    return NULL;
  }
  if (!parse_value(&p, v, 0)) { ctj_free(v); return NULL; }
  skip_ws(&p);
  if (p.i != p.n) { fail(&p, "trailing characters"); ctj_free(v); return NULL; }
  return v;
}

const ctj *ctj_get(const ctj *v, const char *key) {
  if (!v || v->type != CTJ_OBJ) return NULL;
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->keys[i], key)) return &v->items[i];
  return NULL;
}

double ctj_get_num(const ctj *v, const char *key, double fallback) {
  const ctj *m = ctj_get(v, key);
  return m && (m->type == CTJ_NUM || m->type == CTJ_BOOL) ? m->num : fallback;
}

const char *ctj_get_str(const ctj *v, const char *key, const char *fallback) {
  const ctj *m = ctj_get(v, key);
  return m && m->type == CTJ_STR ? m->str : fallback;
}

char *ctj_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (len < cap) break;
    char *nb = realloc(buf, cap * 2 + 1);
    if (!nb) { free(buf); buf = NULL; break; }
    buf = nb;
    cap *= 2;
  }
  bool err = ferror(f);
  fclose(f);
  if (!buf || err) { free(buf); return NULL; }
  buf[len] = 0;
  if (n) *n = len;
  return buf;
}

void ctj_buf_put(ctj_buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = true; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void ctj_buf_puts(ctj_buf *b, const char *s) { ctj_buf_put(b, s, strlen(s)); }

void ctj_buf_printf(ctj_buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  if ((size_t)k < sizeof tmp) { ctj_buf_put(b, tmp, (size_t)k); return; }
  char *big = malloc((size_t)k + 1);
  if (!big) { b->oom = true; return; }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)k + 1, fmt, ap);
  va_end(ap);
  ctj_buf_put(b, big, (size_t)k);
  free(big);
}

void ctj_buf_str(ctj_buf *b, const char *s, size_t n) {
  ctj_buf_put(b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    ctj_buf_put(b, s + run, i - run);
    run = i + 1;
    char e[8];
    switch (c) {
      case '"': ctj_buf_put(b, "\\\"", 2); break;
      case '\\': ctj_buf_put(b, "\\\\", 2); break;
      case '\n': ctj_buf_put(b, "\\n", 2); break;
      case '\t': ctj_buf_put(b, "\\t", 2); break;
      case '\r': ctj_buf_put(b, "\\r", 2); break;
      default: snprintf(e, sizeof e, "\\u%04x", c); ctj_buf_put(b, e, 6);
    }
  }
  ctj_buf_put(b, s + run, n - run);
  ctj_buf_put(b, "\"", 1);
}

void ctj_buf_free(ctj_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}
