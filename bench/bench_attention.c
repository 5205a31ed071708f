/* scaled_dot_product_attention forward+backward on the CPU: ctorch's fused path
 * (src/backend/cpu/kernels_attention.c), ctorch's composed path (matmul, softmax, matmul:
 * what ran before, with the same packed GEMM and SIMD softmax), and PyTorch 1.13 CPU
 * (bench/bench_attention_torch.py run by /usr/bin/python3; 1.13's sdpa is composed too),
 * same thread counts, in one run. Best-of-N timings like bench_main.c; ratio > 1 means
 * ctorch's fused path is faster than the peer.
 * Build: cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -o BUILD/bench_attention bench/bench_attention.c \
 *          BUILD/libctorch.a -lm -lpthread
 *   (a library built with CUDA also needs -ldl -lrt -lstdc++ -L/usr/local/cuda/lib64 -lcudart_static)
 * Then one training step (forward + loss + backward, no optimizer) of small GPTs (src/models/gpt.c,
 * causal attention through this path), fused vs composed: tokens/s (wall and, for 1 thread, CPU).
 * Usage: bench_attention [--threads N] [--quick] [--no-torch] [--no-sdpa] [--no-gpt] [--t T] [--json FILE]
 * (--t: only sequence length T, 256 or 1024)
 * CT_BENCH_PYTHON names the Python with torch (default /usr/bin/python3). */
#include "ctorch.h"
#include "ctorch/models.h"
#include "backend/cpu/kernels_attention.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_clock.h"

static double last_cpu; /* best CPU time of the last time_it */

typedef void (*bench_fn)(void *ctx);
/* best of `reps` after one warm-up; stops once `budget` seconds are spent (>= 3 timings) */
static double time_it(bench_fn fn, void *ctx, int reps, double budget) {
  fn(ctx);
  double best = 1e30, bestc = 1e30, start = now();
  for (int r = 0; r < reps; r++) {
    double t0 = now(), c0 = cpu_now();
    fn(ctx);
    double t = now() - t0, c = cpu_now() - c0;
    if (t < best) best = t;
    if (c < bestc) bestc = c;
    if (r >= 2 && now() - start > budget) break;
  }
  last_cpu = bestc;
  return best;
}

static void die_if(bool bad) {
  if (bad) {
    fprintf(stderr, "bench_attention: %s\n", ct_last_error());
    exit(1);
  }
}

/* ---- PyTorch peer: "name seconds" lines ---- */
static struct {
  char name[96];
  double t, c;
} tres[64];
static int ntres = 0;
static int64_t only_t = 0;
static void run_torch(int threads, bool quick) {
  char cmd[512];
  const char *py = getenv("CT_BENCH_PYTHON");
  snprintf(cmd, sizeof cmd, "%s bench/bench_attention_torch.py --threads %d%s --t %lld 2>/dev/null",
           py && *py ? py : "/usr/bin/python3", threads, quick ? " --quick" : "", (long long)only_t);
  FILE *p = popen(cmd, "r");
  if (!p) return;
  char line[256];
  while (fgets(line, sizeof line, p) && ntres < 64) {
    char nm[96];
    double t, cpu = -1;
    if (sscanf(line, "%95s %lf %lf", nm, &t, &cpu) >= 2) {
      snprintf(tres[ntres].name, sizeof tres[ntres].name, "%s", nm);
      tres[ntres].c = cpu;
      tres[ntres++].t = t;
    }
  }
  pclose(p);
}
static double torch_time(const char *name, double *cpu) {
  for (int i = 0; i < ntres; i++)
    if (!strcmp(tres[i].name, name)) {
      *cpu = tres[i].c;
      return tres[i].t;
    }
  *cpu = -1;
  return -1;
}

typedef struct {
  ct_tensor *q, *k, *v, *go;
  bool causal, fused;
} att_ctx;

/* out = sdpa(q, k, v); backward with grad_output go into q, k, v (the same work as the
 * PyTorch side: forward, then torch.autograd.grad) */
static void run_fb(void *p) {
  att_ctx *c = p;
  ct_sdpa_fused_set_enabled(c->fused);
  ct_tensor *o = ct_scaled_dot_product_attention(c->q, c->k, c->v, NULL, 0, c->causal, NULL, NULL);
  die_if(!o);
  ct_tensor *ins[3] = {c->q, c->k, c->v}, *g[3] = {NULL, NULL, NULL};
  die_if(ct_autograd_grad(1, &o, &c->go, 3, ins, g, false, false, false) != CT_OK);
  for (int i = 0; i < 3; i++) ct_release(g[i]);
  ct_release(o);
  ct_sdpa_fused_set_enabled(true);
}
static void run_f(void *p) {
  att_ctx *c = p;
  ct_sdpa_fused_set_enabled(c->fused);
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *o = ct_scaled_dot_product_attention(c->q, c->k, c->v, NULL, 0, c->causal, NULL, NULL);
  ct_set_grad_enabled(prev);
  die_if(!o);
  ct_release(o);
  ct_sdpa_fused_set_enabled(true);
}

/* ---- a GPT training step (forward, loss, backward) ---- */
typedef struct {
  ct_gpt *m;
  ct_tensor *idx, *tgt;
} gpt_ctx;
static void run_gpt(void *p) {
  gpt_ctx *c = p;
  ct_tensor *loss = NULL;
  die_if(ct_gpt_forward(c->m, c->idx, c->tgt, true, NULL, NULL, &loss) != CT_OK || !loss);
  die_if(ct_backward(loss, NULL, false, false) != CT_OK);
  ct_release(loss);
}

static void bench_gpt(int th, bool quick) {
  static const int64_t cfgs[][5] = {/* layers, heads, width, context, batch */
                                    {4, 4, 128, 64, 12},
                                    {4, 4, 128, 256, 8},
                                    {6, 6, 384, 256, 4}};
  ct_set_num_threads(th);
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    ct_gpt_config cf = {256, cfgs[i][3], cfgs[i][2], cfgs[i][0], cfgs[i][1], 0.0, 1e-5};
    ct_manual_seed(0);
    gpt_ctx c = {ct_gpt_new(&cf, NULL), NULL, NULL};
    die_if(!c.m);
    int64_t sh[2] = {cfgs[i][4], cfgs[i][3]};
    ct_options io = ct_opts_dtype(CT_INT64);
    c.idx = ct_randint(0, 256, 2, sh, &io, NULL);
    c.tgt = ct_randint(0, 256, 2, sh, &io, NULL);
    die_if(!c.idx || !c.tgt);
    double tok = (double)(sh[0] * sh[1]);
    int reps = quick ? 3 : 10;
    ct_sdpa_fused_set_enabled(true);
    double tf = time_it(run_gpt, &c, reps, quick ? 1.0 : 4.0), cf_ = last_cpu;
    ct_sdpa_fused_set_enabled(false);
    double tc = time_it(run_gpt, &c, reps, quick ? 1.0 : 4.0), cc = last_cpu;
    ct_sdpa_fused_set_enabled(true);
    printf("gpt_L%lldH%lldC%lldT%lldB%lld_t%d  tokens/s wall: fused %8.0f composed %8.0f (x%.2f)", (long long)cfgs[i][0],
           (long long)cfgs[i][1], (long long)cfgs[i][2], (long long)cfgs[i][3], (long long)cfgs[i][4], th, tok / tf,
           tok / tc, tc / tf);
    if (th == 1) printf("   cpu: fused %8.0f composed %8.0f (x%.2f)", tok / cf_, tok / cc, cc / cf_);
    printf("\n");
    fflush(stdout);
    ct_release(c.idx);
    ct_release(c.tgt);
    ct_gpt_free(c.m);
  }
}

int main(int argc, char **argv) {
  int maxt = ct_get_num_threads();
  bool quick = false, use_torch = true, sdpa = true, gpt = true;
  const char *json_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) maxt = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--no-torch")) use_torch = false;
    else if (!strcmp(argv[i], "--no-sdpa")) sdpa = false;
    else if (!strcmp(argv[i], "--no-gpt")) gpt = false;
    else if (!strcmp(argv[i], "--t") && i + 1 < argc) only_t = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
  }
  if (maxt < 1) maxt = 1;
  FILE *json = json_path ? fopen(json_path, "w") : NULL;
  int nj = 0;
  if (json) fprintf(json, "[");
  printf("ctorch bench_attention: up to %d threads, %s\n", maxt, ct_simd_level());
  if (use_torch && sdpa) run_torch(maxt, quick);
  double budget = quick ? 0.5 : 3.0;
  int tl[2] = {1, maxt};
  int64_t Ts[2] = {256, 1024};
  for (int ti = 0; sdpa && ti < (maxt > 1 ? 2 : 1); ti++) {
    int th = tl[ti];
    ct_set_num_threads(th);
    for (int si = 0; si < 2; si++)
      for (int causal = 0; causal < 2 && (!only_t || only_t == Ts[si]); causal++) {
        int64_t T = Ts[si], sh[4] = {8, 4, T, 64};
        ct_manual_seed(0);
        ct_options o = ct_opts_dtype(CT_FLOAT32);
        att_ctx c = {ct_randn(4, sh, o, NULL), ct_randn(4, sh, o, NULL), ct_randn(4, sh, o, NULL),
                     ct_randn(4, sh, o, NULL), causal != 0, true};
        for (int i = 0; i < 3; i++) ct_requires_grad_(i == 0 ? c.q : i == 1 ? c.k : c.v, true);
        int reps = quick ? 3 : (T > 512 ? 5 : 15);
        for (int fb = 1; fb >= 0; fb--) {
          char name[96];
          snprintf(name, sizeof name, "sdpa_%s_b8h4t%lldd64%s_t%d", fb ? "fwdbwd" : "fwd", (long long)T,
                   causal ? "_causal" : "", th);
          c.fused = true;
          double tf = time_it(fb ? run_fb : run_f, &c, reps, budget), cf = last_cpu;
          c.fused = false;
          double tc = time_it(fb ? run_fb : run_f, &c, reps, budget), cc = last_cpu;
          double ct, tt = torch_time(name, &ct);
          printf("%-34s wall: fused %8.2f ms  composed %8.2f ms (x%.2f)  torch %8.2f ms (x%.2f)\n", name, tf * 1e3,
                 tc * 1e3, tc / tf, tt > 0 ? tt * 1e3 : -1.0, tt > 0 ? tt / tf : 0.0);
          if (th == 1)
            printf("%-34s  cpu: fused %8.2f ms  composed %8.2f ms (x%.2f)  torch %8.2f ms (x%.2f)\n", "", cf * 1e3,
                   cc * 1e3, cc / cf, ct > 0 ? ct * 1e3 : -1.0, ct > 0 ? ct / cf : 0.0);
          fflush(stdout);
          if (json)
            fprintf(json,
                    "%s\n  {\"name\": \"%s\", \"fused_s\": %.6g, \"composed_s\": %.6g, \"torch_s\": %.6g, "
                    "\"fused_cpu_s\": %.6g, \"composed_cpu_s\": %.6g, \"torch_cpu_s\": %.6g}",
                    nj++ ? "," : "", name, tf, tc, tt, cf, cc, ct);
        }
        ct_release(c.q);
        ct_release(c.k);
        ct_release(c.v);
        ct_release(c.go);
      }
  }
  for (int ti = 0; gpt && ti < (maxt > 1 ? 2 : 1); ti++) bench_gpt(tl[ti], quick);
  if (json) {
    fprintf(json, "\n]\n");
    fclose(json);
  }
  return 0;
}
