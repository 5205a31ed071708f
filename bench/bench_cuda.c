/* The CUDA backend against PyTorch on the same GPU, in one run: a device copy (the
 * bandwidth ceiling), elementwise add and gelu, a full sum, row softmax, float32 matrix
 * products (plain and TF32) and one AdamW step over a 32M-element parameter. ctorch is
 * timed with the host clock around N launches and a synchronize; PyTorch
 * (bench/bench_cuda_torch.py, run by $CT_BENCH_PYTHON, default python3) with CUDA
 * events the same way. Each number is the median of 5 repeats; ratio > 1: ctorch faster.
 * Build (CUDA build of the library):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -o BUILD/bench_cuda bench/bench_cuda.c BUILD/libctorch.a \
 *      -lm -lpthread -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lstdc++
 * Usage: bench_cuda [--no-torch] */
#include "ctorch.h"
#include "ctorch/cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef ct_tensor *(*op_fn)(void *ctx);
typedef struct {
  ct_tensor *a, *b, *m1, *m2, *rows;
  ct_optim *opt;
} bctx;

static ct_tensor *f_copy(void *c) { return ct_clone(((bctx *)c)->a); }
static ct_tensor *f_add(void *c) { return ct_add(((bctx *)c)->a, ((bctx *)c)->b); }
static ct_tensor *f_gelu(void *c) { return ct_gelu(((bctx *)c)->a, "none"); }
static ct_tensor *f_sum(void *c) { return ct_sum(((bctx *)c)->a); }
static ct_tensor *f_softmax(void *c) { return ct_softmax(((bctx *)c)->rows, -1, -1); }
static ct_tensor *f_mm(void *c) { return ct_mm(((bctx *)c)->m1, ((bctx *)c)->m2); }
static ct_tensor *f_adamw(void *c) {
  return ct_optim_step(((bctx *)c)->opt) == CT_OK ? ct_ones(0, NULL, ct_opts()) : NULL;
}

/* median ms per call over 5 repeats of n calls (after 2 warm-up calls) */
static double time_op(op_fn f, void *ctx, int n) {
  double t[5];
  for (int w = 0; w < 2; w++) ct_release(f(ctx));
  ct_cuda_synchronize(0);
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int i = 0; i < n; i++) {
      ct_tensor *o = f(ctx);
      if (!o) {
        fprintf(stderr, "bench_cuda: %s\n", ct_last_error());
        exit(1);
      }
      ct_release(o);
    }
    if (ct_cuda_synchronize(0) != CT_OK) {
      fprintf(stderr, "bench_cuda: %s\n", ct_last_error());
      exit(1);
    }
    t[r] = (now() - t0) * 1e3 / n;
  }
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      if (t[j] < t[i]) {
        double x = t[i];
        t[i] = t[j];
        t[j] = x;
      }
  return t[2];
}

typedef struct {
  const char *name;
  op_fn f;
  int n;
  double bytes, flops; /* per call, for GB/s and TFLOP/s */
  bool tf32;
} bench;

int main(int argc, char **argv) {
  bool torch = !(argc > 1 && !strcmp(argv[1], "--no-torch"));
  if (!ct_cuda_is_available()) {
    printf("bench_cuda: no GPU: %s\n", ct_cuda_unavailable_reason());
    return 0;
  }
  printf("bench_cuda: %s\n", ct_cuda_device_name(0));
  ct_generator *g = ct_generator_new(0);
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  o.device = ct_cuda(0);
  int64_t n = (int64_t)64 << 20, rs[2] = {8192, 8192}, ms[2] = {4096, 4096}, pn = (int64_t)32 << 20;
  bctx c = {ct_randn(1, &n, o, g), ct_randn(1, &n, o, g), ct_randn(2, ms, o, g), ct_randn(2, ms, o, g),
            ct_randn(2, rs, o, g), NULL};
  ct_tensor *p = ct_randn(1, &pn, o, g);
  ct_optim_options ao = ct_optim_defaults(CT_OPTIM_ADAMW);
  c.opt = p ? ct_optim_new(CT_OPTIM_ADAMW, 1, &p, &ao) : NULL;
  ct_tensor *pg = ct_randn(1, &pn, o, g);
  if (!c.a || !c.b || !c.m1 || !c.m2 || !c.rows || !c.opt || !pg || ct_set_grad(p, pg)) {
    fprintf(stderr, "bench_cuda: setup failed: %s\n", ct_last_error());
    return 1;
  }
  double f4 = 4.0, mmf = 2.0 * 4096.0 * 4096.0 * 4096.0;
  bench bs[] = {
      {"copy_64M_f32", f_copy, 20, 2 * f4 * n, 0, false},
      {"add_64M_f32", f_add, 20, 3 * f4 * n, 0, false},
      {"gelu_64M_f32", f_gelu, 20, 2 * f4 * n, 0, false},
      {"sum_64M_f32", f_sum, 20, f4 * n, 0, false},
      {"softmax_8192x8192_f32", f_softmax, 20, 2 * f4 * 8192 * 8192, 0, false},
      {"mm_4096_f32", f_mm, 10, 0, mmf, false},
      {"mm_4096_tf32", f_mm, 10, 0, mmf, true},
      /* AdamW reads p, g, m, v and writes p, m, v: 7 passes at the least */
      {"adamw_step_32M_f32", f_adamw, 10, 7 * f4 * pn, 0, false},
  };
  int nb = sizeof bs / sizeof bs[0];
  double ours[16];
  for (int i = 0; i < nb; i++) {
    ct_cuda_set_allow_tf32(bs[i].tf32);
    ours[i] = time_op(bs[i].f, &c, bs[i].n);
  }
  ct_cuda_set_allow_tf32(false);
  double theirs[16];
  for (int i = 0; i < nb; i++) theirs[i] = -1;
  if (torch) {
    const char *py = getenv("CT_BENCH_PYTHON");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s bench/bench_cuda_torch.py", py && *py ? py : "python3");
    FILE *f = popen(cmd, "r");
    char line[256], name[128];
    double ms;
    while (f && fgets(line, sizeof line, f)) {
      if (sscanf(line, "%127s %lf", name, &ms) != 2) {
        fputs(line, stdout);
        continue;
      }
      for (int i = 0; i < nb; i++)
        if (!strcmp(name, bs[i].name)) theirs[i] = ms;
    }
    if (f) pclose(f);
  }
  printf("%-24s %11s %11s %7s %14s\n", "op", "ctorch ms", "torch ms", "ratio", "ctorch rate");
  for (int i = 0; i < nb; i++) {
    char rate[32] = "";
    if (bs[i].bytes > 0) snprintf(rate, sizeof rate, "%.0f GB/s", bs[i].bytes / ours[i] / 1e6);
    else snprintf(rate, sizeof rate, "%.1f TFLOP/s", bs[i].flops / ours[i] / 1e9);
    if (theirs[i] > 0)
      printf("%-24s %11.3f %11.3f %7.2f %14s\n", bs[i].name, ours[i], theirs[i], theirs[i] / ours[i], rate);
    else
      printf("%-24s %11.3f %11s %7s %14s\n", bs[i].name, ours[i], "-", "-", rate);
  }
  ct_optim_free(c.opt);
  ct_release(p);
  ct_release(pg);
  ct_release(c.a);
  ct_release(c.b);
  ct_release(c.m1);
  ct_release(c.m2);
  ct_release(c.rows);
  ct_generator_free(g);
  return 0;
}
