/* ctorch sample: text generation from a model directory (ctorch's train-gpt output or a Hugging Face
 * GPT-2 checkpoint) with a key/value cache, streamed to stdout token by token. --explain shows the
 * candidates each token was drawn from. Ctrl-C stops after the current token. */
#include "cli.h"
#include "gpt_cmd.h"
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

static void usage(void) {
  printf("usage: ctorch sample --model DIR [options]\n\n"
         "Generates text from a model saved by `ctorch train-gpt --out DIR` or a Hugging Face GPT-2 checkpoint\n"
         "(config.json + model.safetensors + tokenizer files), streaming tokens as they come. Ctrl-C stops.\n\n"
         "  --model DIR          the model directory (required)\n"
         "  --prompt TEXT        text to continue (default: a newline, or <|endoftext|> for GPT-2)\n"
         "  --max-tokens N       tokens to generate (default 200)\n"
         "  --temperature X      softmax temperature; 0 picks the most likely token (default 0.8)\n"
         "  --top-k N            sample among the N most likely tokens (0: all; default 0)\n"
         "  --top-p X            nucleus sampling: the smallest set with probability >= X (default 1)\n"
         "  --seed N             random seed (default 1337)\n"
         "  --explain            per token: its probability and the top candidates (--explain-k of them)\n"
         "  --explain-k N        candidates shown by --explain (default 5)\n"
         "  --threads N          CPU threads\n"
         "  --device D           cpu (default), cuda or cuda:N: where the model and its cache live\n");
}

typedef struct {
  const ct_tokenizer *tok;
  bool explain;
  int64_t k, count;
  int64_t *top;
} gen_ctx;

/* A token's bytes for --explain: quoted, with escapes for control bytes and quotes. */
static void show_token(const ct_tokenizer *tok, int64_t id) {
  size_t n;
  const char *s = ct_tokenizer_token_bytes(tok, id, &n);
  putchar('\'');
  for (size_t i = 0; s && i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\n') fputs("\\n", stdout);
    else if (c == '\t') fputs("\\t", stdout);
    else if (c == '\'' || c == '\\') printf("\\%c", c);
    else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
    else putchar(c);
  }
  putchar('\'');
}

static bool on_token(int64_t id, const float *probs, int64_t V, void *user) {
  gen_ctx *c = user;
  if (!c->explain) {
    size_t n;
    const char *s = ct_tokenizer_token_bytes(c->tok, id, &n);
    if (s) fwrite(s, 1, n, stdout);
  } else {
    /* the k most probable candidates (a partial selection: k is small) */
    int64_t k = c->k < V ? c->k : V, m = 0;
    for (int64_t i = 0; i < V; i++) {
      float p = probs[i];
      if (p <= 0 || (m == k && p <= probs[c->top[k - 1]])) continue;
      int64_t j = m < k ? m++ : k - 1; /* insert at the end (dropping the smallest when full) */
      while (j > 0 && probs[c->top[j - 1]] < p) {
        c->top[j] = c->top[j - 1];
        j--;
      }
      c->top[j] = i;
    }
    printf("%5lld  ", (long long)++c->count);
    show_token(c->tok, id);
    printf("  p=%.3f  |", probs[id]);
    for (int64_t j = 0; j < m; j++) {
      printf(" ");
      show_token(c->tok, c->top[j]);
      printf(" %.3f", probs[c->top[j]]);
    }
    printf("\n");
  }
  fflush(stdout);
  return !interrupted;
}

int ct_cmd_sample(int argc, char **argv) {
  const char *model = NULL, *prompt = NULL, *device = NULL;
  int64_t max_tokens = 200, top_k = 0, seed = 1337, threads = 0, explain_k = 5;
  double temperature = 0.8, top_p = 1.0;
  bool explain = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage();
      return 0;
    }
    if (!strcmp(a, "--explain")) {
      explain = true;
      continue;
    }
    if (strncmp(a, "--", 2)) {
      fprintf(stderr, "ctorch sample: unexpected argument '%s' (see --help)\n", a);
      return 2;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "ctorch sample: %s needs a value\n", a);
      return 2;
    }
    const char *v = argv[++i];
    bool ok = true;
    if (!strcmp(a, "--model")) model = v;
    else if (!strcmp(a, "--prompt")) prompt = v;
    else if (!strcmp(a, "--device")) device = v;
    else if (!strcmp(a, "--max-tokens")) ok = gpt_parse_i64(a, v, 0, INT64_C(1) << 30, &max_tokens);
    else if (!strcmp(a, "--temperature")) ok = gpt_parse_f64(a, v, 0, 1e6, &temperature);
    else if (!strcmp(a, "--top-k")) ok = gpt_parse_i64(a, v, 0, INT64_C(1) << 40, &top_k);
    else if (!strcmp(a, "--top-p")) ok = gpt_parse_f64(a, v, 1e-9, 1, &top_p);
    else if (!strcmp(a, "--seed")) ok = gpt_parse_i64(a, v, 0, INT64_MAX, &seed);
    else if (!strcmp(a, "--threads")) ok = gpt_parse_i64(a, v, 1, 4096, &threads);
    else if (!strcmp(a, "--explain-k")) ok = gpt_parse_i64(a, v, 1, 1000, &explain_k);
    else {
      fprintf(stderr, "ctorch sample: unknown option '%s' (see --help)\n", a);
      ok = false;
    }
    if (!ok) return 2;
  }
  if (!model) {
    fprintf(stderr, "ctorch sample: --model DIR is required (see --help)\n");
    return 2;
  }
  if (threads) ct_set_num_threads((int)threads);
  ct_device dev;
  if (!gpt_parse_device("sample", device, &dev)) return 1;
  int rc = 1;
  ct_gpt *m = NULL;
  ct_tokenizer *tok = NULL;
  ct_generator *g = NULL;
  int64_t *ids = NULL, *top = NULL;
  size_t n_ids = 0;
  ct_gpt_config cfg;
  if (ct_gpt_read_config(model, &cfg) != CT_OK || !(tok = gpt_tokenizer_for_model(model, &cfg)) ||
      !(m = ct_gpt_load(model)) || !(g = ct_generator_new((uint64_t)seed)) ||
      (dev.type != CT_DEVICE_CPU && ct_gpt_to_device(m, dev) != CT_OK)) {
    fprintf(stderr, "ctorch sample: %s\n", ct_last_error());
    goto done;
  }
  if (prompt && *prompt) {
    if (ct_tokenizer_encode(tok, prompt, strlen(prompt), &ids, &n_ids) != CT_OK) {
      fprintf(stderr, "ctorch sample: %s\n", ct_last_error());
      goto done;
    }
  } else {
    /* no prompt: GPT-2's <|endoftext|>, else a newline if the vocabulary has one, else token 0 */
    int64_t start = ct_tokenizer_eot(tok);
    if (start < 0 && ct_tokenizer_encode(tok, "\n", 1, &ids, &n_ids) == CT_OK && n_ids == 1) start = ids[0];
    free(ids);
    ct_clear_error();
    if (!(ids = malloc(sizeof *ids))) goto done;
    ids[0] = start < 0 ? 0 : start;
    n_ids = 1;
  }
  if (!(top = malloc((size_t)explain_k * sizeof *top))) goto done;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  if (prompt && !explain) fputs(prompt, stdout);
  fflush(stdout);
  gen_ctx c = {tok, explain, explain_k, 0, top};
  ct_gpt_sampling s = {temperature, top_k, top_p};
  double t0 = gpt_now();
  ct_status st = ct_gpt_generate(m, ids, (int64_t)n_ids, max_tokens, &s, g, on_token, &c);
  double dt = gpt_now() - t0;
  signal(SIGINT, SIG_DFL);
  if (!explain) printf("\n");
  fflush(stdout);
  if (st != CT_OK) {
    fprintf(stderr, "ctorch sample: %s\n", ct_last_error());
    goto done;
  }
  if (interrupted) fprintf(stderr, "[stopped]\n");
  (void)dt;
  rc = interrupted ? 130 : 0;
done:
  free(top);
  free(ids);
  ct_generator_free(g);
  ct_gpt_free(m);
  ct_tokenizer_free(tok);
  return rc;
}
