/* Byte and character tokenizers, and what every tokenizer shares (token table, lookup, decode). */
#include "core/internal.h"
#include "text/text_internal.h"
#include <stdlib.h>
#include <string.h>

uint64_t ct_tok_hash(const char *s, size_t n) { /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

ct_status ct_tokmap_build(ct_tokenizer *t) {
  size_t cap = 16;
  while (cap < (size_t)t->n_vocab * 2) cap *= 2;
  free(t->map.slots);
  t->map.slots = malloc(cap * sizeof *t->map.slots);
  if (!t->map.slots) return CT_ERR(CT_ERR_OOM, "out of memory building a tokenizer");
  t->map.cap = cap;
  for (size_t i = 0; i < cap; i++) t->map.slots[i] = -1;
  for (int64_t id = 0; id < t->n_vocab; id++) {
    if (!t->tok[id]) continue;
    size_t h = (size_t)ct_tok_hash(t->tok[id], t->tok_len[id]) & (cap - 1);
    for (;; h = (h + 1) & (cap - 1)) {
      int64_t o = t->map.slots[h];
      if (o < 0) { t->map.slots[h] = id; break; }
      /* a duplicate token keeps its first id */
      if (t->tok_len[o] == t->tok_len[id] && !memcmp(t->tok[o], t->tok[id], t->tok_len[id])) break;
    }
  }
  return CT_OK;
}

int64_t ct_tokmap_find(const ct_tokenizer *t, const char *s, size_t n) {
  if (!t->map.slots) return -1;
  size_t cap = t->map.cap, h = (size_t)ct_tok_hash(s, n) & (cap - 1);
  for (;; h = (h + 1) & (cap - 1)) {
    int64_t o = t->map.slots[h];
    if (o < 0) return -1;
    if (t->tok_len[o] == n && !memcmp(t->tok[o], s, n)) return o;
  }
}

size_t ct_utf8_len(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t len;
  uint32_t min;
  if (u[0] < 0x80) return 1;
  if ((u[0] & 0xE0) == 0xC0) { len = 2; min = 0x80; }
  else if ((u[0] & 0xF0) == 0xE0) { len = 3; min = 0x800; }
  else if ((u[0] & 0xF8) == 0xF0) { len = 4; min = 0x10000; }
  else return 1;
  if (len > n) return 1;
  uint32_t cp = u[0] & (0x7F >> len);
  for (size_t i = 1; i < len; i++) {
    if ((u[i] & 0xC0) != 0x80) return 1;
    cp = (cp << 6) | (u[i] & 0x3F);
  }
  /* overlong forms, surrogates and values past U+10FFFF are not valid UTF-8 */
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return 1;
  return len;
}

uint32_t ct_utf8_decode(const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  if (len == 1) return u[0] < 0x80 ? u[0] : 0x110000u + u[0];
  uint32_t cp = u[0] & (0x7F >> len);
  for (size_t i = 1; i < len; i++) cp = (cp << 6) | (u[i] & 0x3F);
  return cp;
}

ct_tokenizer *ct_tokenizer_alloc(ct_tokenizer_kind kind, int64_t n) {
  ct_tokenizer *t = calloc(1, sizeof *t);
  if (t) {
    t->kind = kind;
    t->n_vocab = n;
    t->eot = -1;
    t->tok = calloc((size_t)(n ? n : 1), sizeof *t->tok);
    t->tok_len = calloc((size_t)(n ? n : 1), sizeof *t->tok_len);
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
  }
  if (!t || !t->tok || !t->tok_len) {
    ct_tokenizer_free(t);
    ct_set_error(CT_ERR_OOM, "out of memory building a tokenizer");
    return NULL;
  }
  return t;
}

void ct_tokenizer_free(ct_tokenizer *t) {
  if (!t) return;
  if (t->tok)
    for (int64_t i = 0; i < t->n_vocab; i++) free(t->tok[i]);
  free(t->tok);
  free(t->tok_len);
  free(t->map.slots);
  free(t->vocab);
  free(t->merge_keys);
  free(t->merge_rank);
  free(t->merge_out);
  free(t);
}

static bool set_token(ct_tokenizer *t, int64_t id, const char *s, size_t n) {
  t->tok[id] = malloc(n + 1);
  if (!t->tok[id]) return false;
  memcpy(t->tok[id], s, n);
  t->tok[id][n] = 0;
  t->tok_len[id] = n;
  return true;
}

ct_tokenizer *ct_tokenizer_byte(void) {
  ct_tokenizer *t = ct_tokenizer_alloc(CT_TOKENIZER_BYTE, 256);
  for (int b = 0; t && b < 256; b++) {
    char c = (char)b;
    if (!set_token(t, b, &c, 1)) {
      ct_tokenizer_free(t);
      ct_set_error(CT_ERR_OOM, "out of memory building a tokenizer");
      return NULL;
    }
    t->byte_id[b] = b;
  }
  return t;
}

/* Byte-string order equals code point order for UTF-8. */
typedef struct {
  const char *s;
  size_t n;
} span;
static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  size_t m = x->n < y->n ? x->n : y->n;
  int c = memcmp(x->s, y->s, m);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Distinct characters of text (sorted if sort), as a char tokenizer. */
static ct_tokenizer *char_tokenizer(const char *text, size_t n, bool sort) {
  if (!text && n) {
    ct_set_error(CT_ERR_VALUE, "char tokenizer: text is NULL");
    return NULL;
  }
  /* first pass: a temporary set of the characters in a hash of spans */
  size_t cap = 1024, count = 0;
  span *set = calloc(cap, sizeof *set);
  if (!set) goto oom;
  for (size_t i = 0; i < n;) {
    size_t l = ct_utf8_len(text + i, n - i);
    size_t h = (size_t)ct_tok_hash(text + i, l) & (cap - 1);
    while (set[h].s && !(set[h].n == l && !memcmp(set[h].s, text + i, l))) h = (h + 1) & (cap - 1);
    if (!set[h].s) {
      set[h].s = text + i;
      set[h].n = l;
      if (++count * 2 > cap) { /* rehash */
        span *ns = calloc(cap * 2, sizeof *ns);
        if (!ns) goto oom;
        for (size_t k = 0; k < cap; k++) {
          if (!set[k].s) continue;
          size_t g = (size_t)ct_tok_hash(set[k].s, set[k].n) & (cap * 2 - 1);
          while (ns[g].s) g = (g + 1) & (cap * 2 - 1);
          ns[g] = set[k];
        }
        free(set);
        set = ns;
        cap *= 2;
      }
    }
    i += l;
  }
  /* keep first-appearance order when not sorting: walk the text again */
  span *list = malloc((count ? count : 1) * sizeof *list);
  if (!list) goto oom;
  size_t k = 0;
  if (sort) {
    for (size_t i = 0; i < cap; i++)
      if (set[i].s) list[k++] = set[i];
    qsort(list, count, sizeof *list, span_cmp);
  } else {
    for (size_t i = 0; i < n;) {
      size_t l = ct_utf8_len(text + i, n - i);
      size_t h = (size_t)ct_tok_hash(text + i, l) & (cap - 1);
      while (!(set[h].n == l && !memcmp(set[h].s, text + i, l))) h = (h + 1) & (cap - 1);
      if (set[h].s == text + i) list[k++] = set[h]; /* its first occurrence */
      i += l;
    }
  }
  free(set);
  set = NULL;
  ct_tokenizer *t = ct_tokenizer_alloc(CT_TOKENIZER_CHAR, (int64_t)count);
  if (!t) { free(list); return NULL; }
  size_t total = 0;
  for (size_t i = 0; i < count; i++) total += list[i].n;
  t->vocab = malloc(total + 1);
  if (!t->vocab) { free(list); ct_tokenizer_free(t); goto oom; }
  for (size_t i = 0; i < count; i++) {
    memcpy(t->vocab + t->vocab_len, list[i].s, list[i].n);
    t->vocab_len += list[i].n;
    if (!set_token(t, (int64_t)i, list[i].s, list[i].n)) { free(list); ct_tokenizer_free(t); goto oom; }
    if (list[i].n == 1) t->byte_id[(unsigned char)list[i].s[0]] = (int64_t)i;
  }
  t->vocab[t->vocab_len] = 0;
  free(list);
  if (ct_tokmap_build(t) != CT_OK) { ct_tokenizer_free(t); return NULL; }
  return t;
oom:
  free(set);
  ct_set_error(CT_ERR_OOM, "out of memory building a tokenizer");
  return NULL;
}

ct_tokenizer *ct_tokenizer_char_from_text(const char *text, size_t n) { return char_tokenizer(text, n, true); }

ct_tokenizer *ct_tokenizer_char_from_vocab(const char *vocab, size_t n) {
  /* the vocabulary string lists each character once, in id order */
  ct_tokenizer *t = char_tokenizer(vocab, n, false);
  if (t && t->vocab_len != n) {
    ct_tokenizer_free(t);
    ct_set_error(CT_ERR_VALUE, "char tokenizer: the vocabulary string repeats a character");
    return NULL;
  }
  return t;
}

ct_tokenizer_kind ct_tokenizer_get_kind(const ct_tokenizer *t) { return t ? t->kind : CT_TOKENIZER_BYTE; }

const char *ct_tokenizer_kind_name(ct_tokenizer_kind k) {
  switch (k) {
    case CT_TOKENIZER_BYTE: return "byte";
    case CT_TOKENIZER_CHAR: return "char";
    case CT_TOKENIZER_GPT2: return "gpt2";
  }
  return "?";
}

int64_t ct_tokenizer_vocab_size(const ct_tokenizer *t) { return t ? t->n_vocab : 0; }

const char *ct_tokenizer_char_vocab(const ct_tokenizer *t, size_t *n) {
  if (!t || t->kind != CT_TOKENIZER_CHAR) return NULL;
  if (n) *n = t->vocab_len;
  return t->vocab;
}

int64_t ct_tokenizer_eot(const ct_tokenizer *t) { return t ? t->eot : -1; }

const char *ct_tokenizer_token_bytes(const ct_tokenizer *t, int64_t id, size_t *len) {
  if (!t) {
    ct_set_error(CT_ERR_VALUE, "tokenizer is NULL");
    return NULL;
  }
  if (id < 0 || id >= t->n_vocab || !t->tok[id]) {
    ct_set_error(CT_ERR_INDEX, "index %lld is out of bounds for a vocabulary of size %lld", (long long)id,
                 (long long)t->n_vocab);
    return NULL;
  }
  if (len) *len = t->tok_len[id];
  return t->tok[id];
}

char *ct_tokenizer_decode(const ct_tokenizer *t, const int64_t *ids, size_t n_ids, size_t *len) {
  if (!t || (!ids && n_ids)) {
    ct_set_error(CT_ERR_VALUE, "decode: tokenizer or ids is NULL");
    return NULL;
  }
  size_t total = 0;
  for (size_t i = 0; i < n_ids; i++) {
    size_t l;
    if (!ct_tokenizer_token_bytes(t, ids[i], &l)) return NULL;
    total += l;
  }
  char *out = malloc(total + 1);
  if (!out) {
    ct_set_error(CT_ERR_OOM, "out of memory decoding tokens");
    return NULL;
  }
  size_t o = 0;
  for (size_t i = 0; i < n_ids; i++) {
    memcpy(out + o, t->tok[ids[i]], t->tok_len[ids[i]]);
    o += t->tok_len[ids[i]];
  }
  out[o] = 0;
  if (len) *len = o;
  return out;
}

ct_status ct_gpt2_encode(const ct_tokenizer *t, const char *text, size_t n, int64_t **ids, size_t *n_ids);

ct_status ct_tokenizer_encode(const ct_tokenizer *t, const char *text, size_t n, int64_t **ids, size_t *n_ids) {
  if (!t || !ids || !n_ids || (!text && n)) return CT_ERR(CT_ERR_VALUE, "encode: NULL argument");
  *ids = NULL;
  *n_ids = 0;
  if (t->kind == CT_TOKENIZER_GPT2) return ct_gpt2_encode(t, text, n, ids, n_ids);
  int64_t *out = malloc((n ? n : 1) * sizeof *out);
  if (!out) return CT_ERR(CT_ERR_OOM, "out of memory encoding text");
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    if (t->kind == CT_TOKENIZER_BYTE) {
      out[k++] = (unsigned char)text[i++];
      continue;
    }
    size_t l = ct_utf8_len(text + i, n - i);
    int64_t id = ct_tokmap_find(t, text + i, l);
    if (id < 0) {
      free(out);
      return CT_ERR(CT_ERR_VALUE, "character '%.*s' (byte offset %zu) is not in the tokenizer's vocabulary", (int)l,
                    text + i, i);
    }
    out[k++] = id;
    i += l;
  }
  *ids = out;
  *n_ids = k;
  return CT_OK;
}
