/* Shared helpers of `ctorch train-gpt` and `ctorch sample`. */
#include "gpt_cmd.h"
#include "ctorch/cuda.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double gpt_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

bool gpt_parse_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out) {
  char *end;
  errno = 0;
  long long v = s ? strtoll(s, &end, 10) : 0;
  if (!s || !*s || *end || errno || v < lo || v > hi) {
    fprintf(stderr, "ctorch: %s expects an integer in [%lld, %lld], got '%s'\n", opt, (long long)lo, (long long)hi,
            s ? s : "");
    return false;
  }
  *out = v;
  return true;
}

bool gpt_parse_f64(const char *opt, const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = s ? strtod(s, &end) : 0;
  if (!s || !*s || *end || errno || !(v >= lo && v <= hi)) {
    fprintf(stderr, "ctorch: %s expects a number in [%g, %g], got '%s'\n", opt, lo, hi, s ? s : "");
    return false;
  }
  *out = v;
  return true;
}

ct_tokenizer *gpt_tokenizer_for_model(const char *dir, const ct_gpt_config *cfg) {
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", dir);
  size_t n;
  char *s = ctj_read_file(path, &n);
  ctj *j = s ? ctj_parse(s, n, NULL, 0) : NULL;
  free(s);
  const char *kind = ctj_get_str(j, "ctorch_tokenizer", NULL);
  ct_tokenizer *t = NULL;
  if (kind && !strcmp(kind, "byte")) t = ct_tokenizer_byte();
  else if (kind && !strcmp(kind, "char")) {
    const ctj *v = ctj_get(j, "ctorch_vocab");
    if (v && v->type == CTJ_STR) t = ct_tokenizer_char_from_vocab(v->str, v->len);
    else fprintf(stderr, "ctorch: %s names the char tokenizer but has no ctorch_vocab\n", path);
  } else t = ct_tokenizer_gpt2_load_dir(dir); /* gpt2, or a Hugging Face checkpoint */
  ctj_free(j);
  if (t && ct_tokenizer_vocab_size(t) > cfg->vocab_size) {
    fprintf(stderr, "ctorch: the tokenizer has %lld tokens but the model only %lld\n",
            (long long)ct_tokenizer_vocab_size(t), (long long)cfg->vocab_size);
    ct_tokenizer_free(t);
    return NULL;
  }
  return t;
}

void gpt_tokenizer_json(const ct_tokenizer *tok, ctj_buf *b) {
  ctj_buf_printf(b, "\"ctorch_tokenizer\": \"%s\"", ct_tokenizer_kind_name(ct_tokenizer_get_kind(tok)));
  size_t n;
  const char *v = ct_tokenizer_char_vocab(tok, &n);
  if (v) {
    ctj_buf_puts(b, ",\n  \"ctorch_vocab\": ");
    ctj_buf_str(b, v, n);
  }
}

static bool copy_file(const char *from, const char *to) {
  size_t n;
  char *s = ctj_read_file(from, &n);
  if (!s) return false;
  FILE *f = fopen(to, "wb");
  bool ok = f && fwrite(s, 1, n, f) == n;
  if (f && fclose(f)) ok = false;
  free(s);
  return ok;
}

bool gpt_copy_tokenizer_files(const char *src, const char *dst) {
  static const char *const names[] = {"tokenizer.json", "vocab.json", "merges.txt", "encoder.json", "vocab.bpe"};
  if (!strcmp(src, dst)) return true;
  bool any = false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/%s", src, names[i]);
    snprintf(b, sizeof b, "%s/%s", dst, names[i]);
    FILE *f = fopen(a, "rb");
    if (!f) continue;
    fclose(f);
    if (!copy_file(a, b)) return false;
    any = true;
  }
  return any;
}

/* --device for train-gpt and sample: cpu, cuda or cuda:N, checked (and a missing driver or GPU
 * reported) before any work, as train-cnn does. */
bool gpt_parse_device(const char *cmd, const char *s, ct_device *out) {
  *out = ct_cpu();
  if (!s || !strcmp(s, "cpu")) return true;
  char *end = NULL;
  long idx = 0;
  bool ok = !strncmp(s, "cuda", 4) && (s[4] == 0 || s[4] == ':');
  if (ok && s[4] == ':') {
    errno = 0;
    idx = strtol(s + 5, &end, 10);
    ok = end != s + 5 && !*end && !errno && idx >= 0 && idx <= 1024;
  }
  if (!ok) {
    fprintf(stderr, "ctorch %s: --device: invalid device string '%s' (cpu, cuda or cuda:N)\n", cmd, s);
    return false;
  }
  if (!ct_cuda_is_available()) {
    fprintf(stderr, "ctorch %s: --device %s: %s\n", cmd, s, ct_cuda_unavailable_reason());
    return false;
  }
  if (idx >= ct_cuda_device_count()) {
    fprintf(stderr, "ctorch %s: --device %s: there are %d CUDA device(s)\n", cmd, s, ct_cuda_device_count());
    return false;
  }
  *out = ct_cuda((int)idx);
  return true;
}
