/* The GPT-2 124M shape: ctorch vs PyTorch 1.13 CPU (bench/bench_gpt124m_torch.py), each workload
 * in its own process (this program run again with --child), same thread count, same model: vocab
 * 50257, 1024 positions, C 768, 12 layers, 12 heads, biases, GELU-tanh, pre-LN, tied embeddings,
 * random weights (GPT-2's initialisation; no checkpoint needed).
 *   train     B x T tokens per step (default 4 x 256), AdamW lr 6e-4 weight decay 0.1, dropout 0:
 *             tokens/s of the best step after the first, and peak RSS (VmHWM)
 *   generate  a random prompt (default 16 tokens), then --new tokens (default 64) sampled with
 *             temperature 0.8 and top-k 40 through ct_gpt_generate (KV cache): tokens/s over the
 *             tokens after the first (the prompt's forward excluded), as the PyTorch loop measures
 * Both wall-clock and process-CPU-time tokens/s are printed; on a loaded machine only the CPU-time
 * ratio at 1 thread is fair (PyTorch's OpenBLAS threads spin, so at 2 threads CPU time favours us).
 * Build and run: bench/bench_gpt124m.sh BUILD [threads] [workloads]
 * Usage: bench_gpt124m [--threads N] [--steps S] [--new N] [--only train|generate] [--no-torch]
 * CT_BENCH_PYTHON names the Python with torch (default /usr/bin/python3). */
#include "ctorch.h"
#include "ctorch/models.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench_clock.h"
#include "bench_child.h"

static void die(const char *what) {
  fprintf(stderr, "bench_gpt124m: %s: %s\n", what, ct_last_error());
  exit(1);
}

typedef struct {
  int n;
  double t_first, t_last, c_first, c_last;
} gen_clock;

static bool on_token(int64_t token, const float *probs, int64_t V, void *user) {
  gen_clock *g = user;
  (void)token, (void)probs, (void)V;
  if (g->n++ == 0) {
    g->t_first = now();
    g->c_first = cpu_now();
  } else {
    g->t_last = now();
    g->c_last = cpu_now();
  }
  return true;
}

static int child_main(const char *what, int steps, int64_t B, int64_t T, int64_t prompt_len, int64_t n_new) {
  long rss0 = status_kb("VmRSS");
  ct_manual_seed(0);
  ct_gpt_config c = ct_gpt_config_gpt2();
  c.dropout = 0.0;
  ct_gpt *m = ct_gpt_new(&c, NULL);
  if (!m) die("gpt");
  if (!strcmp(what, "train")) {
    int64_t xs[2] = {B, T};
    ct_tensor *x = ct_randint(0, c.vocab_size, 2, xs, NULL, NULL), *y = ct_randint(0, c.vocab_size, 2, xs, NULL, NULL);
    const ct_dict *pd = ct_gpt_parameters(m);
    int64_t np = ct_dict_len(pd);
    ct_tensor **ps = malloc(sizeof *ps * (size_t)np);
    if (!x || !y || !ps) die("setup");
    for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(pd, i);
    ct_optim *opt = ct_optim_adamw(np, ps, 6e-4, 0.1);
    free(ps);
    if (!opt) die("optimizer");
    long setup = status_kb("VmRSS");
    double best = 1e30, best_cpu = 1e30, lv = 0;
    for (int i = 0; i < steps; i++) {
      double t0 = now(), c0 = cpu_now();
      ct_scope *s = ct_scope_begin();
      ct_tensor *loss = NULL;
      if (ct_gpt_forward(m, x, y, true, NULL, NULL, &loss) != CT_OK) die("forward");
      if (ct_optim_zero_grad(opt, true) || ct_backward(loss, NULL, false, false) || ct_optim_step(opt)) die("step");
      ct_item_double(loss, &lv);
      ct_release(loss);
      ct_scope_end(s);
      double t = now() - t0, tc = cpu_now() - c0;
      if (i > 0 || steps == 1) {
        if (t < best) best = t;
        if (tc < best_cpu) best_cpu = tc;
      }
    }
    double ntok = (double)(B * T);
    printf("RESULT train tok_s=%.3f cpu_tok_s=%.3f hwm_kb=%ld setup_kb=%ld rss0_kb=%ld loss=%.4f\n", ntok / best,
           ntok / best_cpu, status_kb("VmHWM"), setup, rss0, lv);
    ct_optim_free(opt);
    ct_release(x);
    ct_release(y);
  } else {
    ct_generator *g = ct_generator_new(1);
    int64_t *prompt = malloc(sizeof *prompt * (size_t)prompt_len);
    if (!g || !prompt) die("setup");
    ct_tensor *p = ct_randint(0, c.vocab_size, 1, &prompt_len, NULL, g);
    if (!p || ct_copy_to_buffer(p, prompt, CT_INT64, prompt_len) != CT_OK) die("prompt");
    ct_release(p);
    long setup = status_kb("VmRSS");
    ct_gpt_sampling smp = {0.8, 40, 1.0};
    gen_clock gc = {0};
    if (ct_gpt_generate(m, prompt, prompt_len, n_new, &smp, g, on_token, &gc) != CT_OK || gc.n < 2) die("generate");
    double n = (double)(gc.n - 1);
    printf("RESULT generate tok_s=%.3f cpu_tok_s=%.3f hwm_kb=%ld setup_kb=%ld rss0_kb=%ld\n", n / (gc.t_last - gc.t_first),
           n / (gc.c_last - gc.c_first), status_kb("VmHWM"), setup, rss0);
    free(prompt);
    ct_generator_free(g);
  }
  fflush(stdout);
  ct_gpt_free(m);
  return 0;
}

typedef struct {
  bool ok;
  double tok_s, cpu_tok_s;
  long hwm, setup, rss0;
} result;

static result parse(const bench_child *c) {
  result r = {0};
  r.ok = c->ok && sscanf(c->fields, "tok_s=%lf cpu_tok_s=%lf hwm_kb=%ld setup_kb=%ld rss0_kb=%ld", &r.tok_s,
                         &r.cpu_tok_s, &r.hwm, &r.setup, &r.rss0) == 5;
  return r;
}

int main(int argc, char **argv) {
  int threads = 1, steps = 3;
  long long B = 4, T = 256, P = 16, N = 64;
  const char *only = NULL, *child = NULL;
  bool torch = true;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc) B = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--context") && i + 1 < argc) T = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) P = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--new") && i + 1 < argc) N = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--child") && i + 1 < argc) child = argv[++i];
    else if (!strcmp(argv[i], "--no-torch")) torch = false;
    else {
      fprintf(stderr, "usage: %s [--threads N] [--steps S] [--batch B] [--context T] [--prompt P] [--new N] "
                      "[--only train|generate] [--no-torch]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1 || steps < 1 || B < 1 || T < 1 || T > 1024 || P < 1 || N < 2 || P + N > 1024) {
    fprintf(stderr, "bench_gpt124m: threads, steps, batch >= 1, context in [1, 1024], prompt >= 1, new >= 2, "
                    "prompt + new <= 1024\n");
    return 2;
  }
  if (child) {
    if (strcmp(child, "train") && strcmp(child, "generate")) return 2;
    ct_set_num_threads(threads);
    return child_main(child, steps, B, T, P, N);
  }
  printf("GPT-2 124M shape, random weights, %d thread(s); train B %lld T %lld (%d steps, best after the first); "
         "generate prompt %lld + %lld new tokens (KV cache, T 0.8, top-k 40)\n", threads, B, T, steps, P, N);
  printf("%-9s %-8s %10s %12s %9s %10s %10s\n", "workload", "side", "tok/s", "CPU tok/s", "peak MiB", "setup MiB",
         "step d MiB");
  static const char *const what[2] = {"train", "generate"};
  for (int w = 0; w < 2; w++) {
    if (only && strcmp(only, what[w])) continue;
    char args[256];
    snprintf(args, sizeof args, "--threads %d --steps %d --batch %lld --context %lld --prompt %lld --new %lld", threads,
             steps, B, T, P, N);
    bench_child c[2];
    if (!bench_child_pair("bench/bench_gpt124m_torch.py", what[w], threads, args, NULL, torch, false, c)) return 1;
    result r[2] = {parse(&c[0]), parse(&c[1])};
    for (int k = 0; k < (torch ? 2 : 1); k++) {
      if (!r[k].ok) {
        printf("%-9s %-8s failed\n", what[w], k ? "pytorch" : "ctorch");
        continue;
      }
      printf("%-9s %-8s %10.2f %12.2f %9.1f %10.1f %10.1f\n", what[w], k ? "pytorch" : "ctorch", r[k].tok_s,
             r[k].cpu_tok_s, r[k].hwm / 1024.0, r[k].setup / 1024.0, (r[k].hwm - r[k].setup) / 1024.0);
    }
    if (r[0].ok && r[1].ok)
      printf("%-9s ratio    tokens/s %.3f, CPU-time tokens/s %.3f (ctorch / PyTorch, > 1: ctorch faster); peak memory "
             "%.3f, step delta %.3f (ctorch / PyTorch)\n", what[w], r[0].tok_s / r[1].tok_s, r[0].cpu_tok_s / r[1].cpu_tok_s,
             (double)r[0].hwm / (double)r[1].hwm, (double)(r[0].hwm - r[0].setup) / (double)(r[1].hwm - r[1].setup));
    fflush(stdout);
  }
  return 0;
}
