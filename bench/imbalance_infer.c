/* Load-independent estimate of the 2-thread (or T-thread) imbalance of the ResNet-18 224 eval forward
 * (the model and input of bench_models.inc.c's resnet18_224_infer rows). The thread count is set to T, but
 * every ct_parallel_for is intercepted (the link's --wrap) and run on the calling thread: its chunks are the
 * pool's (chunk = max(ceil(n / 4T), grain); inline when n <= grain), each timed by the thread's CPU clock,
 * and the pool's greedy claiming is replayed on T simulated threads (the caller starts at 0, the others after
 * --wake microseconds). Per region: its CPU, its simulated span, and the loss = span - CPU / T (the time a
 * thread idles). The sum gives a predicted T-thread wall time of the forward (serial parts + spans, no
 * fork/join or memory-bandwidth costs) that a loaded machine cannot measure. Regions are attributed to their
 * range function (symbol names: resolve the printed addresses with nm; built -no-pie).
 * Build: cc -O2 -no-pie -Iinclude -Isrc -o build/X/imbalance_infer bench/imbalance_infer.c build/X/libctorch.a \
 *          -Wl,--wrap=ct_parallel_for -lm -lpthread -ldl
 * Usage: imbalance_infer [--threads T] [--iters I] [--wake US] [--batch B] [--gemm ADDR]   (prints 'fn 0x... '
 * rows; --gemm: the address of gemm_packed.c's task_range from nm, to split its regions by GEMM shape) */
#include "ctorch.h"
#include "ctorch/vision.h"
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "backend/cpu/gemm_fast.h"

typedef void (*range_fn)(void *ctx, int64_t begin, int64_t end);
void __real_ct_parallel_for(int64_t n, int64_t grain, range_fn fn, void *ctx);

static double clk(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define MAXF 256
static struct {
  void *fn;
  int64_t shape[4]; /* the GEMM's batch, M, N, K (regions of the --gemm function) */
  int64_t calls, inl, chunks;
  double cpu, span;
} agg[MAXF];
static int nagg, T = 2, depth, on;
static void *gemm_fn; /* --gemm ADDR: gemm_packed.c's task_range, whose ctx starts with the ct_fgemm pointer */
static double wake_s;

static int slot(void *fn, void *ctx) {
  int64_t sh[4] = {0, 0, 0, 0};
  if (fn == gemm_fn && ctx) {
    const ct_fgemm *g = *(const ct_fgemm *const *)ctx;
    sh[0] = g->batch, sh[1] = g->M, sh[2] = g->N, sh[3] = g->K;
  }
  for (int i = 0; i < nagg; i++)
    if (agg[i].fn == fn && !memcmp(agg[i].shape, sh, sizeof sh)) return i;
  if (nagg == MAXF) return MAXF - 1;
  agg[nagg].fn = fn;
  memcpy(agg[nagg].shape, sh, sizeof sh);
  return nagg++;
}

void __wrap_ct_parallel_for(int64_t n, int64_t grain, range_fn fn, void *ctx) {
  if (!on) {
    __real_ct_parallel_for(n, grain, fn, ctx);
    return;
  }
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int s = slot((void *)fn, ctx);
  agg[s].calls++;
  if (depth > 0 || n <= grain) { /* nested or small: inline on one thread (a serial region) */
    double c0 = clk(CLOCK_THREAD_CPUTIME_ID);
    depth++;
    fn(ctx, 0, n);
    depth--;
    double c = clk(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (depth == 0) agg[s].inl++, agg[s].cpu += c, agg[s].span += c;
    return;
  }
  int64_t max_tasks = (n + grain - 1) / grain;
  int th = T < max_tasks ? T : (int)max_tasks;
  int64_t chunk = (n + (int64_t)th * 4 - 1) / ((int64_t)th * 4);
  if (chunk < grain) chunk = grain;
  double t[64] = {0};
  for (int i = 1; i < th; i++) t[i] = wake_s;
  double cpu = 0;
  depth++;
  for (int64_t b = 0; b < n; b += chunk) {
    int64_t e = b + chunk < n ? b + chunk : n;
    double c0 = clk(CLOCK_THREAD_CPUTIME_ID);
    fn(ctx, b, e);
    double c = clk(CLOCK_THREAD_CPUTIME_ID) - c0;
    int k = 0;
    for (int i = 1; i < th; i++)
      if (t[i] < t[k]) k = i;
    t[k] += c, cpu += c;
    agg[s].chunks++;
  }
  depth--;
  double span = t[0];
  for (int i = 1; i < th; i++)
    if (t[i] > span && t[i] > wake_s) span = t[i];
  agg[s].cpu += cpu, agg[s].span += span;
}

int main(int argc, char **argv) {
  int iters = 10;
  int64_t batch = 1;
  double wake_us = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) T = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--wake")) wake_us = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--gemm")) gemm_fn = (void *)(uintptr_t)strtoull(argv[i + 1], NULL, 16);
  }
  if (T < 1 || T > 64 || iters < 1 || batch < 1) return 2;
  wake_s = wake_us * 1e-6;
  ct_set_num_threads(T);
  ct_manual_seed(0);
  ct_module *m = ct_resnet18_new(1000);
  int64_t xs[4] = {batch, 3, 224, 224};
  ct_tensor *x = m ? ct_keep(ct_randn(4, xs, ct_opts(), NULL)) : NULL;
  if (!x) return 1;
  ct_module_eval(m);
  ct_set_grad_enabled(false);
  on = 1;
  for (int w = 0; w < 3; w++) ct_release(ct_module_forward(m, x));
  memset(agg, 0, sizeof agg);
  nagg = 0;
  double fwd = 0, best = 1e30;
  for (int i = 0; i < iters; i++) {
    double c0 = clk(CLOCK_THREAD_CPUTIME_ID);
    ct_release(ct_module_forward(m, x));
    double c = clk(CLOCK_THREAD_CPUTIME_ID) - c0;
    fwd += c;
    if (c < best) best = c;
  }
  double rc = 0, rs = 0;
  for (int i = 0; i < nagg; i++) rc += agg[i].cpu, rs += agg[i].span;
  printf("forward (%d threads simulated, wake %.0f us): CPU %.3f ms/it (best %.3f); in regions %.3f, serial outside "
         "%.3f; predicted wall %.3f ms/it vs CPU/%d %.3f (loss %.3f)\n",
         T, wake_us, fwd / iters * 1e3, best * 1e3, rc / iters * 1e3, (fwd - rc) / iters * 1e3,
         (fwd - rc + rs) / iters * 1e3, T, fwd / iters / T * 1e3, (fwd - rc + rs - fwd / T) / iters * 1e3);
  /* by loss, largest first */
  for (int i = 0; i < nagg; i++)
    for (int j = i + 1; j < nagg; j++)
      if (agg[j].span - agg[j].cpu / T > agg[i].span - agg[i].cpu / T) {
        __typeof__(agg[0]) tmp = agg[i];
        agg[i] = agg[j];
        agg[j] = tmp;
      }
  printf("%-18s %8s %8s %8s %10s %10s %10s  %s\n", "fn", "calls/it", "inline", "chunks", "CPU ms/it", "span ms/it",
         "loss ms/it", "GEMM batch x M x N x K");
  for (int i = 0; i < nagg; i++)
  {
    printf("fn %-15p %8.1f %8.1f %8.1f %10.3f %10.3f %10.3f", agg[i].fn, (double)agg[i].calls / iters,
           (double)agg[i].inl / iters, (double)agg[i].chunks / iters, agg[i].cpu / iters * 1e3,
           agg[i].span / iters * 1e3, (agg[i].span - agg[i].cpu / T) / iters * 1e3);
    if (agg[i].shape[0])
      printf("  %lld x %lld x %lld x %lld", (long long)agg[i].shape[0], (long long)agg[i].shape[1],
             (long long)agg[i].shape[2], (long long)agg[i].shape[3]);
    printf("\n");
  }
  return 0;
}
