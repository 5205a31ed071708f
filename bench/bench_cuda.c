/* The CUDA backend against PyTorch on the same GPU, in one run: a device copy (the
 * bandwidth ceiling), elementwise add and gelu, a full sum, row softmax, float32 matrix
 * products (plain and TF32) and one AdamW step over a 32M-element parameter. ctorch is
 * timed with the host clock around N launches and a synchronize; PyTorch
 * (bench/bench_cuda_torch.py, run by $CT_BENCH_PYTHON, default python3) with CUDA
 * events the same way. Attention: PyTorch's F.scaled_dot_product_attention (its own choice
 * of kernel: flash for bfloat16, memory-efficient for float32) against our flash kernels
 * (src/backend/cuda/k_attention.cu). Each number is the median of 5 repeats; ratio > 1: ctorch faster.
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
#include "bench_clock.h"


typedef ct_tensor *(*op_fn)(void *ctx);
typedef struct {
  ct_tensor *a, *b, *m1, *m2, *rows, *bias, *ah, *bh;
  ct_optim *opt;
  ct_tensor *at[2][4]; /* attention q, k, v (leaves with grad), grad_out: float32, bfloat16 */
} bctx;

static ct_tensor *f_copy(void *c) { return ct_clone(((bctx *)c)->a); }
static ct_tensor *f_add(void *c) { return ct_add(((bctx *)c)->a, ((bctx *)c)->b); }
static ct_tensor *f_mul(void *c) { return ct_mul(((bctx *)c)->a, ((bctx *)c)->b); }
static ct_tensor *f_gelu(void *c) { return ct_gelu(((bctx *)c)->a, "none"); }
static ct_tensor *f_sum(void *c) { return ct_sum(((bctx *)c)->a); }
static ct_tensor *f_softmax(void *c) { return ct_softmax(((bctx *)c)->rows, -1, -1); }
static ct_tensor *f_log_softmax(void *c) { return ct_log_softmax(((bctx *)c)->rows, -1, -1); }
static ct_tensor *f_add_bias(void *c) { return ct_add(((bctx *)c)->rows, ((bctx *)c)->bias); }
static ct_tensor *f_sum_rows(void *c) {
  int64_t d = -1;
  return ct_sum_dims(((bctx *)c)->rows, 1, &d, false);
}
static ct_tensor *f_layer_norm(void *c) {
  int64_t n = 8192;
  return ct_layer_norm(((bctx *)c)->rows, 1, &n, NULL, NULL, 1e-5);
}
static ct_tensor *f_add_bf16(void *c) { return ct_add(((bctx *)c)->ah, ((bctx *)c)->bh); }
static ct_tensor *f_gelu_bf16(void *c) { return ct_gelu(((bctx *)c)->ah, "none"); }
static ct_tensor *f_copy_bf16(void *c) { return ct_clone(((bctx *)c)->ah); }
static ct_tensor *f_mm(void *c) { return ct_mm(((bctx *)c)->m1, ((bctx *)c)->m2); }
/* scaled_dot_product_attention, causal, [8, 12, 1024, 64]: the forward alone (no graph),
 * and forward + backward (torch.autograd.grad of q, k, v for a given grad_out) */
static ct_tensor *sdpa_f(bctx *c, int t, bool bwd) {
  ct_tensor **x = c->at[t];
  bool prev = ct_set_grad_enabled(bwd);
  ct_tensor *o = ct_scaled_dot_product_attention(x[0], x[1], x[2], NULL, 0, true, NULL, NULL);
  ct_set_grad_enabled(prev);
  if (!o || !bwd) return o;
  ct_tensor *gr[3] = {NULL, NULL, NULL};
  ct_status st = ct_autograd_grad(1, &o, &x[3], 3, x, gr, false, false, false);
  for (int i = 0; i < 3; i++) ct_release(gr[i]);
  if (st != CT_OK) {
    ct_release(o);
    return NULL;
  }
  return o;
}
static ct_tensor *f_sdpa_f32(void *c) { return sdpa_f(c, 0, false); }
static ct_tensor *f_sdpa_f32_bwd(void *c) { return sdpa_f(c, 0, true); }
static ct_tensor *f_sdpa_bf16(void *c) { return sdpa_f(c, 1, false); }
static ct_tensor *f_sdpa_bf16_bwd(void *c) { return sdpa_f(c, 1, true); }
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
  return median5(t);
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
  int64_t bn = 8192;
  bctx c = {ct_randn(1, &n, o, g), ct_randn(1, &n, o, g), ct_randn(2, ms, o, g), ct_randn(2, ms, o, g),
            ct_randn(2, rs, o, g), ct_randn(1, &bn, o, g), NULL, NULL, NULL, {{NULL}}};
  int64_t ash[4] = {8, 12, 1024, 64};
  for (int i = 0; i < 4; i++) {
    c.at[0][i] = ct_randn(4, ash, o, g);
    c.at[1][i] = c.at[0][i] ? ct_to_dtype(c.at[0][i], CT_BFLOAT16) : NULL;
    for (int t = 0; t < 2; t++)
      if (!c.at[t][i] || (i < 3 && ct_requires_grad_(c.at[t][i], true) != CT_OK)) {
        fprintf(stderr, "bench_cuda: setup failed: %s\n", ct_last_error());
        return 1;
      }
  }
  c.ah = c.a ? ct_to_dtype(c.a, CT_BFLOAT16) : NULL;
  c.bh = c.b ? ct_to_dtype(c.b, CT_BFLOAT16) : NULL;
  ct_tensor *p = ct_randn(1, &pn, o, g);
  ct_optim_options ao = ct_optim_defaults(CT_OPTIM_ADAMW);
  c.opt = p ? ct_optim_new(CT_OPTIM_ADAMW, 1, &p, &ao) : NULL;
  ct_tensor *pg = ct_randn(1, &pn, o, g);
  if (!c.a || !c.b || !c.m1 || !c.m2 || !c.rows || !c.bias || !c.ah || !c.bh || !c.opt || !pg || ct_set_grad(p, pg)) {
    fprintf(stderr, "bench_cuda: setup failed: %s\n", ct_last_error());
    return 1;
  }
  double f4 = 4.0, mmf = 2.0 * 4096.0 * 4096.0 * 4096.0;
  /* causal: half of 4 B H T^2 D forward; the backward does 2.5x the forward's products */
  double saf = 2.0 * 8 * 12 * 1024.0 * 1024.0 * 64, sab = 3.5 * saf;
  bench bs[] = {
      {"copy_64M_f32", f_copy, 20, 2 * f4 * n, 0, false},
      {"add_64M_f32", f_add, 20, 3 * f4 * n, 0, false},
      {"mul_64M_f32", f_mul, 20, 3 * f4 * n, 0, false},
      {"gelu_64M_f32", f_gelu, 20, 2 * f4 * n, 0, false},
      {"sum_64M_f32", f_sum, 20, f4 * n, 0, false},
      {"softmax_8192x8192_f32", f_softmax, 20, 2 * f4 * 8192 * 8192, 0, false},
      {"log_softmax_8192x8192_f32", f_log_softmax, 20, 2 * f4 * 8192 * 8192, 0, false},
      {"add_bias_8192x8192_f32", f_add_bias, 20, 2 * f4 * 8192 * 8192, 0, false},
      {"sum_rows_8192x8192_f32", f_sum_rows, 20, f4 * 8192 * 8192, 0, false},
      {"layer_norm_8192x8192_f32", f_layer_norm, 20, 2 * f4 * 8192 * 8192, 0, false},
      {"copy_64M_bf16", f_copy_bf16, 20, 2 * 2.0 * n, 0, false},
      {"add_64M_bf16", f_add_bf16, 20, 3 * 2.0 * n, 0, false},
      {"gelu_64M_bf16", f_gelu_bf16, 20, 2 * 2.0 * n, 0, false},
      {"mm_4096_f32", f_mm, 10, 0, mmf, false},
      {"mm_4096_tf32", f_mm, 10, 0, mmf, true},
      /* AdamW reads p, g, m, v and writes p, m, v: 7 passes at the least */
      {"adamw_step_32M_f32", f_adamw, 10, 7 * f4 * pn, 0, false},
      /* the same step against PyTorch's fused=True AdamW */
      {"adamw_step_32M_f32_vs_fused", f_adamw, 10, 7 * f4 * pn, 0, false},
      {"sdpa_causal_8x12x1024x64_f32_fwd", f_sdpa_f32, 10, 0, saf, false},
      {"sdpa_causal_8x12x1024x64_f32_fwdbwd", f_sdpa_f32_bwd, 5, 0, sab, false},
      {"sdpa_causal_8x12x1024x64_bf16_fwd", f_sdpa_bf16, 10, 0, saf, false},
      {"sdpa_causal_8x12x1024x64_bf16_fwdbwd", f_sdpa_bf16_bwd, 5, 0, sab, false},
  };
  int nb = sizeof bs / sizeof bs[0];
  double ours[32];
  for (int i = 0; i < nb; i++) {
    ct_cuda_set_allow_tf32(bs[i].tf32);
    ours[i] = time_op(bs[i].f, &c, bs[i].n);
  }
  ct_cuda_set_allow_tf32(false);
  double theirs[32];
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
  /* the copy ceiling of this run: the faster of the two 64M float32 copies (bench 0) */
  double copy_ms = theirs[0] > 0 && theirs[0] < ours[0] ? theirs[0] : ours[0];
  double copy_rate = bs[0].bytes / copy_ms / 1e6;
  printf("copy ceiling of this run: %.0f GB/s (read + write)\n", copy_rate);
  printf("%-30s %11s %11s %7s %14s %8s\n", "op", "ctorch ms", "torch ms", "ratio", "ctorch rate", "of copy");
  for (int i = 0; i < nb; i++) {
    char rate[32] = "", frac[16] = "";
    if (bs[i].bytes > 0) {
      snprintf(rate, sizeof rate, "%.0f GB/s", bs[i].bytes / ours[i] / 1e6);
      snprintf(frac, sizeof frac, "%.0f%%", 100.0 * bs[i].bytes / ours[i] / 1e6 / copy_rate);
    } else snprintf(rate, sizeof rate, "%.1f TFLOP/s", bs[i].flops / ours[i] / 1e9);
    if (theirs[i] > 0)
      printf("%-30s %11.3f %11.3f %7.2f %14s %8s\n", bs[i].name, ours[i], theirs[i], theirs[i] / ours[i], rate, frac);
    else
      printf("%-30s %11.3f %11s %7s %14s %8s\n", bs[i].name, ours[i], "-", "-", rate, frac);
  }
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 4; i++) ct_release(c.at[t][i]);
  ct_optim_free(c.opt);
  ct_release(p);
  ct_release(pg);
  ct_release(c.a);
  ct_release(c.b);
  ct_release(c.m1);
  ct_release(c.m2);
  ct_release(c.rows);
  ct_release(c.bias);
  ct_release(c.ah);
  ct_release(c.bh);
  ct_generator_free(g);
  return 0;
}
