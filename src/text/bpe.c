/* GPT-2's byte-level BPE: loading (encoder.json + vocab.bpe, vocab.json + merges.txt, or
 * tokenizer.json), the pre-tokenisation regex written out by hand over Unicode categories, and
 * the merge loop of OpenAI's encoder.py (lowest-ranked pair first, every occurrence of it merged
 * left to right). */
#include "core/internal.h"
#include "text/text_internal.h"
#include "util/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/unicode_tables.h"

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cp < r[mid][0]) hi = mid;
    else if (cp > r[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}
static bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 32) - 'a' < 26;
  return in_ranges(ct_uni_letters, sizeof ct_uni_letters / sizeof ct_uni_letters[0], cp);
}
static bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp - '0' < 10;
  return in_ranges(ct_uni_numbers, sizeof ct_uni_numbers / sizeof ct_uni_numbers[0], cp);
}
/* Unicode's White_Space property (what \s means in Python's regex module). */
static bool is_space(uint32_t cp) {
  return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

void ct_gpt2_pretokenize(const char *text, size_t n, void (*fn)(size_t off, size_t len, void *user), void *user) {
  if (!text || !fn) return;
  /* walk characters; cp(i) decodes the one at byte i, nx(i) is the next byte offset */
#define NX(i) ((i) + ct_utf8_len(text + (i), n - (i)))
#define CP(i) ct_utf8_decode(text + (i), ct_utf8_len(text + (i), n - (i)))
  size_t i = 0;
  while (i < n) {
    uint32_t c = CP(i);
    size_t i1 = NX(i);
    if (c == '\'' && i1 < n) { /* contractions: 's 't 'm 'd 're 've 'll (lower case only) */
      char a = text[i1], b = i1 + 1 < n ? text[i1 + 1] : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') { fn(i, 2, user); i += 2; continue; }
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) { fn(i, 3, user); i += 3; continue; }
    }
    /* " ?X+" classes: an optional leading space, then a run of letters, numbers or other symbols */
    size_t j = i;
    uint32_t d = c;
    if (c == ' ' && i1 < n) {
      j = i1;
      d = CP(j);
    }
    int cls = is_letter(d) ? 1 : is_number(d) ? 2 : !is_space(d) ? 3 : 0;
    if (cls) {
      size_t k = j;
      while (k < n) {
        uint32_t e = CP(k);
        int ce = is_letter(e) ? 1 : is_number(e) ? 2 : !is_space(e) ? 3 : 0;
        if (ce != cls) break;
        k = NX(k);
      }
      fn(i, k - i, user);
      i = k;
      continue;
    }
    /* whitespace: \s+(?!\S) takes the run but leaves its last character before a non-space; \s+ takes one */
    size_t k = i, last = i;
    int count = 0;
    while (k < n && is_space(CP(k))) {
      last = k;
      k = NX(k);
      count++;
    }
    size_t end = (k == n || count < 2) ? k : last;
    fn(i, end - i, user);
    i = end;
  }
#undef NX
#undef CP
}

/* ---- GPT-2's byte <-> unicode table: printable bytes map to themselves, the rest to 256 + n ---- */
static void byte_unicode(uint32_t table[256]) {
  int n = 0;
  for (int b = 0; b < 256; b++) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? (uint32_t)b : (uint32_t)(256 + n++);
  }
}

/* Turns a token written in GPT-2's byte-unicode alphabet back into its bytes (in place; a character
 * outside the alphabet, as in added tokens, stays as its UTF-8). */
static size_t unicode_to_bytes(char *s, size_t n, const int16_t *inv) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    size_t l = ct_utf8_len(s + i, n - i);
    uint32_t cp = ct_utf8_decode(s + i, l);
    if (cp < 512 && inv[cp] >= 0) s[o++] = (char)inv[cp];
    else {
      memmove(s + o, s + i, l);
      o += l;
    }
    i += l;
  }
  return o;
}

/* ---- the merge table: (a, b) -> rank and merged id ---- */
static ct_status merges_init(ct_tokenizer *t, size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;
  t->merge_keys = calloc(cap, sizeof *t->merge_keys);
  t->merge_rank = malloc(cap * sizeof *t->merge_rank);
  t->merge_out = malloc(cap * sizeof *t->merge_out);
  t->merge_cap = cap;
  if (!t->merge_keys || !t->merge_rank || !t->merge_out) return CT_ERR(CT_ERR_OOM, "out of memory loading BPE merges");
  return CT_OK;
}

static size_t merge_slot(const ct_tokenizer *t, uint64_t key) {
  size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (t->merge_cap - 1);
  while (t->merge_keys[h] && t->merge_keys[h] != key) h = (h + 1) & (t->merge_cap - 1);
  return h;
}

static void merge_add(ct_tokenizer *t, int64_t a, int64_t b, int64_t rank, int64_t out) {
  uint64_t key = (((uint64_t)a << 32) | (uint64_t)b) + 1;
  size_t h = merge_slot(t, key);
  if (t->merge_keys[h]) return; /* a repeated merge keeps its first (lowest) rank */
  t->merge_keys[h] = key;
  t->merge_rank[h] = rank;
  t->merge_out[h] = out;
}

static bool merge_find(const ct_tokenizer *t, int64_t a, int64_t b, int64_t *rank, int64_t *out) {
  uint64_t key = (((uint64_t)a << 32) | (uint64_t)b) + 1;
  size_t h = merge_slot(t, key);
  if (!t->merge_keys[h]) return false;
  *rank = t->merge_rank[h];
  *out = t->merge_out[h];
  return true;
}

/* Builds the tokenizer from a vocab object (token -> id) and merges given as "a b" strings or
 * [a, b] pairs; added is tokenizer.json's added_tokens (or NULL). */
static ct_tokenizer *build(const ctj *vocab, const ctj *merges, const ctj *added, const char *what) {
  if (!vocab || vocab->type != CTJ_OBJ) {
    ct_set_error(CT_ERR_VALUE, "%s: the vocabulary is not a JSON object of token -> id", what);
    return NULL;
  }
  int64_t n = 0;
  for (size_t i = 0; i < vocab->n; i++) {
    const ctj *v = &vocab->items[i];
    if (v->type != CTJ_NUM || v->num < 0 || v->num > 1e7 || v->num != (double)(int64_t)v->num) {
      ct_set_error(CT_ERR_VALUE, "%s: token '%s' has an invalid id", what, vocab->keys[i]);
      return NULL;
    }
    if ((int64_t)v->num + 1 > n) n = (int64_t)v->num + 1;
  }
  for (size_t i = 0; added && added->type == CTJ_ARR && i < added->n; i++) {
    double id = ctj_get_num(&added->items[i], "id", -1);
    if (id >= 0 && id <= 1e7 && (int64_t)id + 1 > n) n = (int64_t)id + 1;
  }
  ct_tokenizer *t = ct_tokenizer_alloc(CT_TOKENIZER_GPT2, n);
  if (!t) return NULL;
  uint32_t fwd[256];
  int16_t inv[512];
  byte_unicode(fwd);
  for (int k = 0; k < 512; k++) inv[k] = -1;
  for (int b = 0; b < 256; b++) inv[fwd[b]] = (int16_t)b;
  for (size_t i = 0; i < vocab->n; i++) {
    int64_t id = (int64_t)vocab->items[i].num;
    if (t->tok[id]) continue;
    size_t kl = vocab->key_lens[i];
    if (!(t->tok[id] = malloc(kl + 1))) goto oom;
    memcpy(t->tok[id], vocab->keys[i], kl);
    t->tok_len[id] = unicode_to_bytes(t->tok[id], kl, inv);
    t->tok[id][t->tok_len[id]] = 0;
  }
  for (size_t i = 0; added && added->type == CTJ_ARR && i < added->n; i++) {
    const ctj *a = &added->items[i];
    const ctj *c = ctj_get(a, "content");
    double id = ctj_get_num(a, "id", -1);
    if (!c || c->type != CTJ_STR || id < 0 || (int64_t)id >= n || t->tok[(int64_t)id]) continue;
    if (!(t->tok[(int64_t)id] = malloc(c->len + 1))) goto oom;
    memcpy(t->tok[(int64_t)id], c->str, c->len + 1);
    t->tok_len[(int64_t)id] = c->len;
  }
  if (ct_tokmap_build(t) != CT_OK) {
    ct_tokenizer_free(t);
    return NULL;
  }
  for (int b = 0; b < 256; b++) {
    char c = (char)b;
    if ((t->byte_id[b] = ct_tokmap_find(t, &c, 1)) < 0) {
      ct_set_error(CT_ERR_VALUE, "%s: the vocabulary lacks the token of byte %d", what, b);
      ct_tokenizer_free(t);
      return NULL;
    }
  }
  t->eot = ct_tokmap_find(t, "<|endoftext|>", 13);
  /* merges: parts and result are looked up as bytes; a merge whose parts or result are not in the
   * vocabulary could never produce a known token, so it is skipped */
  size_t nm = merges && merges->type == CTJ_ARR ? merges->n : 0;
  if (merges_init(t, nm) != CT_OK) {
    ct_tokenizer_free(t);
    return NULL;
  }
  char *buf = NULL;
  size_t bufcap = 0;
  for (size_t r = 0; r < nm; r++) {
    const ctj *m = &merges->items[r];
    const char *pa, *pb;
    size_t la, lb;
    if (m->type == CTJ_STR) {
      const char *sp = memchr(m->str, ' ', m->len);
      if (!sp) continue;
      pa = m->str;
      la = (size_t)(sp - m->str);
      pb = sp + 1;
      lb = m->len - la - 1;
    } else if (m->type == CTJ_ARR && m->n == 2 && m->items[0].type == CTJ_STR && m->items[1].type == CTJ_STR) {
      pa = m->items[0].str;
      la = m->items[0].len;
      pb = m->items[1].str;
      lb = m->items[1].len;
    } else continue;
    if (la + lb + 1 > bufcap) {
      bufcap = (la + lb + 1) * 2;
      char *nb = realloc(buf, bufcap);
      if (!nb) { free(buf); goto oom; }
      buf = nb;
    }
    memcpy(buf, pa, la);
    size_t ba = unicode_to_bytes(buf, la, inv);
    memcpy(buf + ba, pb, lb);
    size_t bb = unicode_to_bytes(buf + ba, lb, inv);
    int64_t ia = ct_tokmap_find(t, buf, ba), ib = ct_tokmap_find(t, buf + ba, bb), io = ct_tokmap_find(t, buf, ba + bb);
    if (ia >= 0 && ib >= 0 && io >= 0) merge_add(t, ia, ib, (int64_t)r, io);
  }
  free(buf);
  return t;
oom:
  ct_tokenizer_free(t);
  ct_set_error(CT_ERR_OOM, "out of memory loading a BPE tokenizer");
  return NULL;
}

static ctj *load_json(const char *path) {
  size_t n;
  char *s = ctj_read_file(path, &n);
  if (!s) {
    ct_set_error(CT_ERR_RUNTIME, "cannot read '%s'", path);
    return NULL;
  }
  char err[160];
  ctj *v = ctj_parse(s, n, err, sizeof err);
  free(s);
  if (!v) ct_set_error(CT_ERR_VALUE, "%s: %s", path, err);
  return v;
}

/* vocab.bpe / merges.txt: "#version" line, then one "a b" merge per line. */
static ctj *load_merges_txt(const char *path) {
  size_t n;
  char *s = ctj_read_file(path, &n);
  if (!s) {
    ct_set_error(CT_ERR_RUNTIME, "cannot read '%s'", path);
    return NULL;
  }
  ctj *arr = calloc(1, sizeof *arr);
  if (!arr) goto oom;
  arr->type = CTJ_ARR;
  size_t lines = 0;
  for (size_t i = 0; i < n; i++) lines += s[i] == '\n';
  arr->cap = lines + 1;
  if (!(arr->items = calloc(arr->cap, sizeof *arr->items))) goto oom;
  bool first = true;
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && s[e] != '\n') e++;
    size_t len = e - i;
    if (len && s[i + len - 1] == '\r') len--;
    bool skip = len == 0 || (first && len >= 8 && !memcmp(s + i, "#version", 8));
    first = false;
    if (!skip) {
      ctj *it = &arr->items[arr->n];
      it->type = CTJ_STR;
      if (!(it->str = malloc(len + 1))) goto oom;
      memcpy(it->str, s + i, len);
      it->str[len] = 0;
      it->len = len;
      arr->n++;
    }
    i = e + 1;
  }
  free(s);
  return arr;
oom:
  free(s);
  ctj_free(arr);
  ct_set_error(CT_ERR_OOM, "out of memory reading '%s'", path);
  return NULL;
}

ct_tokenizer *ct_tokenizer_gpt2_load(const char *encoder_json_path, const char *vocab_bpe_path) {
  if (!encoder_json_path || !vocab_bpe_path) {
    ct_set_error(CT_ERR_VALUE, "gpt2 tokenizer: a path is NULL");
    return NULL;
  }
  ctj *vocab = load_json(encoder_json_path);
  ctj *merges = vocab ? load_merges_txt(vocab_bpe_path) : NULL;
  ct_tokenizer *t = merges ? build(vocab, merges, NULL, encoder_json_path) : NULL;
  ctj_free(vocab);
  ctj_free(merges);
  return t;
}

ct_tokenizer *ct_tokenizer_gpt2_load_json(const char *path) {
  if (!path) {
    ct_set_error(CT_ERR_VALUE, "gpt2 tokenizer: the path is NULL");
    return NULL;
  }
  ctj *root = load_json(path);
  if (!root) return NULL;
  const ctj *model = ctj_get(root, "model");
  const char *type = ctj_get_str(model, "type", "BPE");
  ct_tokenizer *t = NULL;
  if (strcmp(type, "BPE")) ct_set_error(CT_ERR_VALUE, "%s: model type '%s' is not BPE", path, type);
  else t = build(ctj_get(model, "vocab"), ctj_get(model, "merges"), ctj_get(root, "added_tokens"), path);
  ctj_free(root);
  return t;
}

static bool file_exists(const char *dir, const char *name, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (f) fclose(f);
  return f != NULL;
}

ct_tokenizer *ct_tokenizer_gpt2_load_dir(const char *dir) {
  if (!dir) {
    ct_set_error(CT_ERR_VALUE, "gpt2 tokenizer: the directory is NULL");
    return NULL;
  }
  char a[4096], b[4096];
  if (file_exists(dir, "tokenizer.json", a, sizeof a)) return ct_tokenizer_gpt2_load_json(a);
  if (file_exists(dir, "vocab.json", a, sizeof a) && file_exists(dir, "merges.txt", b, sizeof b))
    return ct_tokenizer_gpt2_load(a, b);
  if (file_exists(dir, "encoder.json", a, sizeof a) && file_exists(dir, "vocab.bpe", b, sizeof b))
    return ct_tokenizer_gpt2_load(a, b);
  ct_set_error(CT_ERR_RUNTIME,
               "no GPT-2 tokenizer files in '%s' (tokenizer.json, vocab.json + merges.txt, or encoder.json + vocab.bpe)",
               dir);
  return NULL;
}

/* ---- encoding ---- */
typedef struct {
  const ct_tokenizer *t;
  const char *text;
  int64_t *out;
  size_t n, cap;
  int64_t *word; /* scratch: the current piece's symbols */
  size_t word_cap;
  bool oom;
} enc_ctx;

static void push(enc_ctx *e, int64_t id) {
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 256;
    int64_t *o = realloc(e->out, cap * sizeof *o);
    if (!o) { e->oom = true; return; }
    e->out = o;
    e->cap = cap;
  }
  e->out[e->n++] = id;
}

static void encode_piece(size_t off, size_t len, void *user) {
  enc_ctx *e = user;
  if (e->oom) return;
  const ct_tokenizer *t = e->t;
  const unsigned char *s = (const unsigned char *)e->text + off;
  if (len > e->word_cap) {
    int64_t *w = realloc(e->word, len * sizeof *w);
    if (!w) { e->oom = true; return; }
    e->word = w;
    e->word_cap = len;
  }
  int64_t *w = e->word;
  size_t m = len;
  for (size_t i = 0; i < len; i++) w[i] = t->byte_id[s[i]];
  while (m > 1) {
    int64_t best = INT64_MAX, ba = -1, bb = -1, bo = -1, r, o;
    for (size_t i = 0; i + 1 < m; i++)
      if (merge_find(t, w[i], w[i + 1], &r, &o) && r < best) {
        best = r;
        ba = w[i];
        bb = w[i + 1];
        bo = o;
      }
    if (ba < 0) break;
    size_t k = 0;
    for (size_t i = 0; i < m;) {
      if (i + 1 < m && w[i] == ba && w[i + 1] == bb) {
        w[k++] = bo;
        i += 2;
      } else w[k++] = w[i++];
    }
    m = k;
  }
  for (size_t i = 0; i < m; i++) push(e, w[i]);
}

ct_status ct_gpt2_encode(const ct_tokenizer *t, const char *text, size_t n, int64_t **ids, size_t *n_ids) {
  enc_ctx e = {t, text, NULL, 0, 0, NULL, 0, false};
  ct_gpt2_pretokenize(text, n, encode_piece, &e);
  free(e.word);
  if (e.oom) {
    free(e.out);
    return CT_ERR(CT_ERR_OOM, "out of memory encoding text");
  }
  if (!e.out) e.out = malloc(sizeof *e.out);
  if (!e.out) return CT_ERR(CT_ERR_OOM, "out of memory encoding text");
  *ids = e.out;
  *n_ids = e.n;
  return CT_OK;
}
