/* The WebGPU backend (native Dawn, src/backend/webgpu) on the adapter at hand, in one run:
 * (1) the tiled GEMM: each tile shape checked against the CPU on an odd-sized product
 *     (relative Frobenius error), then float32 n^3 products timed in TFLOP/s;
 * (2) the byte-level GPT training step of issue 9 (4 layers, 256 wide, 4 heads, context
 *     256, batch 8, vocabulary 256, AdamW), written from ctorch ops (embedding, layer_norm,
 *     linear, matmul attention with a causal mask, softmax, GELU-tanh, cross-entropy,
 *     AdamW): its first loss against the CPU's, the loss falling, and the median step time.
 * Times: host clock around the work and ct_webgpu_synchronize(); medians of repeats. The
 * peer (PyTorch CUDA eager, the same step and products) is bench/bench_webgpu_torch.py,
 * run separately in the same call on the GPU machine.
 * Build: cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -o BUILD/bench_webgpu bench/bench_webgpu.c \
 *          -Isrc BUILD/libctorch.a -lm -lpthread -ldl   (a CT_CUDA=0 library; else add cudart)
 * Usage: bench_webgpu [--small] [--mm N]... [--tiles 8x8x8,4x4x16,...] [--steps N] [--parts] [--no-gpt] [--no-mm]
 *   --small: sizes for SwiftShader (a CPU emulating the GPU): mm 256, GPT 2x32, 64 wide;
 *   --parts: each op kind of the GPT step alone, forward + backward, at the step's sizes.
 * On the H200 device machine: bench/webgpu_h200.sh (builds, then runs this and the peer). */
#include "ctorch.h"
#include "ctorch/webgpu.h"
#include "backend/webgpu/webgpu_backend.h" /* ct_webgpu_get_counters */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_clock.h"

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
#define DIE(what)                                                             \
  do {                                                                        \
    fprintf(stderr, "bench_webgpu: %s failed: %s\n", what, ct_last_error()); \
    exit(1);                                                                  \
  } while (0)
#define OK(x)                                  \
  do {                                         \
    if ((x) != CT_OK) DIE(#x);                 \
  } while (0)
static ct_tensor *nn(ct_tensor *t, const char *what) {
  if (!t) DIE(what);
  return t;
}

static ct_generator *G;
static ct_tensor *randn2(int64_t r, int64_t c, double scale) {
  int64_t sh[2] = {r, c};
  ct_tensor *t = nn(ct_randn(2, sh, ct_opts_dtype(CT_FLOAT32), G), "randn");
  ct_tensor *s = nn(ct_mul_scalar(t, ct_sf(scale)), "scale");
  ct_release(t);
  return s;
}
static ct_tensor *to_gpu(const ct_tensor *t) { return nn(ct_to_device(t, ct_webgpu()), "to webgpu"); }

/* ||a - b|| / ||b|| with both on the CPU, in double */
static double rel_err(const ct_tensor *got, const ct_tensor *ref) {
  ct_tensor *g = nn(ct_to_device(got, ct_cpu()), "to cpu");
  ct_tensor *d = nn(ct_sub(g, ref), "sub");
  ct_tensor *nd = nn(ct_norm(d, 2.0, 0, NULL, false), "norm"), *nr = nn(ct_norm(ref, 2.0, 0, NULL, false), "norm");
  double a = NAN, b = NAN;
  OK(ct_item_double(nd, &a));
  OK(ct_item_double(nr, &b));
  ct_release(g), ct_release(d), ct_release(nd), ct_release(nr);
  return a / b;
}

/* ---- (1) matrix products ---- */
static void bench_mm(const char *tiles, const int *sizes, int nsizes, bool small) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", tiles);
  printf("\n== float32 matmul (C = A @ B, row-major), TFLOP/s = 2 n^3 / time ==\n");
  /* correctness of each tile on an odd shape, both operand orientations */
  int64_t M = small ? 131 : 1031, N = small ? 77 : 997, K = small ? 68 : 516;
  ct_tensor *a = randn2(M, K, 1.0), *bt = randn2(N, K, 1.0), *b = nn(ct_t(bt), "t"), *bc = nn(ct_contiguous(b), "c");
  ct_tensor *ref = nn(ct_mm(a, bc), "cpu mm"), *ga = to_gpu(a), *gbt = to_gpu(bt), *gbc = to_gpu(bc);
  ct_tensor *gb = nn(ct_t(gbt), "t");
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    setenv("CT_WEBGPU_GEMM", tok, 1);
    ct_tensor *r1 = nn(ct_mm(ga, gbc), "mm"), *r2 = nn(ct_mm(ga, gb), "mm B^T");
    double e1 = rel_err(r1, ref), e2 = rel_err(r2, ref);
    printf("check %-7s %lldx%lldx%lld: rel err %.2e (B row-major), %.2e (B transposed) %s\n", tok, (long long)M,
           (long long)N, (long long)K, e1, e2, e1 < 1e-5 && e2 < 1e-5 ? "ok" : "FAIL");
    ct_release(r1), ct_release(r2);
  }
  ct_release(a), ct_release(bt), ct_release(b), ct_release(bc), ct_release(ref), ct_release(ga), ct_release(gbt),
      ct_release(gbc), ct_release(gb);
  for (int si = 0; si < nsizes; si++) {
    int64_t n = sizes[si];
    ct_tensor *x = randn2(n, n, 1.0), *y = randn2(n, n, 1.0), *gx = to_gpu(x), *gy = to_gpu(y);
    int64_t sh[2] = {n, n};
    ct_tensor *out = nn(ct_empty(2, sh, ct_opts_dtype(CT_FLOAT32)), "empty"), *gout = to_gpu(out);
    double flop = 2.0 * (double)n * n * n;
    int iters = (int)(2e12 / flop);
    if (iters < 3) iters = 3;
    if (iters > 200) iters = 200;
    snprintf(buf, sizeof buf, "%s", tiles);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
      setenv("CT_WEBGPU_GEMM", tok, 1);
      OK(ct_matmul_out(gout, gx, gy)); /* compile, warm up */
      OK(ct_webgpu_synchronize());
      double t[5];
      for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (int i = 0; i < iters; i++) OK(ct_matmul_out(gout, gx, gy));
        OK(ct_webgpu_synchronize());
        t[r] = (now() - t0) / iters;
      }
      double tm = median(t, 5);
      printf("mm %5lld^3 tile %-7s %8.3f ms  %6.2f TFLOP/s  (%d products x 5 repeats, median)\n", (long long)n, tok,
             tm * 1e3, flop / tm / 1e12, iters);
    }
    ct_release(x), ct_release(y), ct_release(gx), ct_release(gy), ct_release(out), ct_release(gout);
  }
  unsetenv("CT_WEBGPU_GEMM");
}

/* ---- (2) the GPT step ---- */
typedef struct {
  int64_t B, T, C, H, L, V;
} gcfg;
enum { P_WTE, P_WPE, P_LNF_W, P_LNF_B, P_HEAD, P_LAYER0 };
enum { L_LN1W, L_LN1B, L_QKV, L_PROJ, L_LN2W, L_LN2B, L_FC, L_FC2, L_N };
static int nparams(const gcfg *c) { return P_LAYER0 + L_N * (int)c->L; }

static ct_tensor *vec_of(int64_t n, double v) {
  int64_t sh[1] = {n};
  return nn(ct_full(1, sh, ct_sf(v), ct_opts_dtype(CT_FLOAT32)), "full");
}
static void init_params(const gcfg *c, ct_tensor **p) {
  double rs = 0.02 / sqrt(2.0 * (double)c->L);
  p[P_WTE] = randn2(c->V, c->C, 0.02), p[P_WPE] = randn2(c->T, c->C, 0.02);
  p[P_LNF_W] = vec_of(c->C, 1.0), p[P_LNF_B] = vec_of(c->C, 0.0), p[P_HEAD] = randn2(c->V, c->C, 0.02);
  for (int l = 0; l < c->L; l++) {
    ct_tensor **q = p + P_LAYER0 + L_N * l;
    q[L_LN1W] = vec_of(c->C, 1.0), q[L_LN1B] = vec_of(c->C, 0.0), q[L_QKV] = randn2(3 * c->C, c->C, 0.02);
    q[L_PROJ] = randn2(c->C, c->C, rs), q[L_LN2W] = vec_of(c->C, 1.0), q[L_LN2B] = vec_of(c->C, 0.0);
    q[L_FC] = randn2(4 * c->C, c->C, 0.02), q[L_FC2] = randn2(c->C, 4 * c->C, rs);
  }
}

/* the mean cross-entropy of one batch (every handle made here lives in the caller's scope) */
static ct_tensor *gpt_loss(const gcfg *c, ct_tensor *const *p, const ct_tensor *idx, const ct_tensor *tgt,
                           const ct_tensor *pos, const ct_tensor *mask) {
  int64_t B = c->B, T = c->T, C = c->C, H = c->H, D = C / H, ns[1] = {C};
  ct_tensor *x = nn(ct_add(nn(ct_embedding(idx, p[P_WTE], NULL), "emb"), nn(ct_embedding(pos, p[P_WPE], NULL), "pos")),
                    "add");
  double scale = 1.0 / sqrt((double)D);
  for (int l = 0; l < c->L; l++) {
    ct_tensor *const *q = p + P_LAYER0 + L_N * l;
    ct_tensor *h = nn(ct_layer_norm(x, 1, ns, q[L_LN1W], q[L_LN1B], 1e-5), "ln1");
    ct_tensor *qkv = nn(ct_linear(h, q[L_QKV], NULL), "qkv");
    ct_tensor *hs[3];
    int64_t s4[4] = {B, T, H, D};
    for (int j = 0; j < 3; j++)
      hs[j] = nn(ct_transpose(nn(ct_view(nn(ct_contiguous(nn(ct_narrow(qkv, 2, j * C, C), "narrow")), "c"), 4, s4),
                                 "view"),
                              1, 2),
                 "tr");
    ct_tensor *att = nn(ct_matmul(hs[0], nn(ct_transpose(hs[1], 2, 3), "kT")), "qk");
    att = nn(ct_mul_scalar(att, ct_sf(scale)), "scale");
    att = nn(ct_masked_fill(att, mask, ct_sf(-INFINITY)), "mask");
    att = nn(ct_softmax(att, -1, -1), "softmax");
    ct_tensor *y = nn(ct_matmul(att, hs[2]), "av");
    int64_t s3[3] = {B, T, C};
    y = nn(ct_reshape(nn(ct_contiguous(nn(ct_transpose(y, 1, 2), "tr")), "c"), 3, s3), "merge");
    x = nn(ct_add(x, nn(ct_linear(y, q[L_PROJ], NULL), "proj")), "res1");
    h = nn(ct_layer_norm(x, 1, ns, q[L_LN2W], q[L_LN2B], 1e-5), "ln2");
    h = nn(ct_gelu(nn(ct_linear(h, q[L_FC], NULL), "fc"), "tanh"), "gelu");
    x = nn(ct_add(x, nn(ct_linear(h, q[L_FC2], NULL), "fc2")), "res2");
  }
  x = nn(ct_layer_norm(x, 1, ns, p[P_LNF_W], p[P_LNF_B], 1e-5), "lnf");
  ct_tensor *logits = nn(ct_linear(x, p[P_HEAD], NULL), "head");
  int64_t s2[2] = {B * T, c->V}, s1[1] = {B * T};
  return nn(ct_cross_entropy(nn(ct_view(logits, 2, s2), "view"), nn(ct_reshape(tgt, 1, s1), "view"), NULL,
                             CT_REDUCTION_MEAN, -100, 0),
            "loss");
}

typedef struct {
  ct_tensor **p;
  ct_optim *opt;
  ct_tensor *idx, *tgt, *pos, *mask;
} gstate;
static void gstate_make(const gcfg *c, ct_tensor *const *init, ct_device dev, gstate *s) {
  int n = nparams(c);
  s->p = calloc((size_t)n, sizeof *s->p);
  for (int i = 0; i < n; i++) {
    /* a detached copy per device: a leaf of its own */
    ct_tensor *t = nn(dev.type == CT_DEVICE_CPU ? ct_clone(init[i]) : ct_to_device(init[i], dev), "param");
    s->p[i] = nn(ct_detach(t), "detach");
    ct_release(t);
    OK(ct_requires_grad_(s->p[i], true));
  }
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
  o.lr = 1e-3;
  s->opt = ct_optim_new(CT_OPTIM_ADAMW, n, s->p, &o);
  if (!s->opt) DIE("optim");
}
/* one step; verbose: prints the forward (to the loss read back), backward and optimizer times */
static double gpt_step(const gcfg *c, gstate *s, bool verbose) {
  ct_scope *sc = ct_scope_begin();
  double t0 = now();
  ct_tensor *loss = gpt_loss(c, s->p, s->idx, s->tgt, s->pos, s->mask);
  double v = NAN;
  if (verbose) OK(ct_item_double(loss, &v));
  double t1 = now();
  OK(ct_optim_zero_grad(s->opt, true));
  OK(ct_backward(loss, NULL, false, false));
  if (verbose && s->p[0] && ct_tensor_device(s->p[0]).type == CT_DEVICE_WEBGPU) OK(ct_webgpu_synchronize());
  double t2 = now();
  OK(ct_optim_step(s->opt));
  OK(ct_item_double(loss, &v)); /* the only read back: the loss */
  if (verbose)
    printf("  %s step: forward %.1f ms, backward %.1f ms, AdamW + read %.1f ms\n",
           ct_device_type_name(ct_tensor_device(s->p[0]).type), (t1 - t0) * 1e3, (t2 - t1) * 1e3, (now() - t2) * 1e3);
  ct_scope_end(sc);
  return v;
}

static void bench_gpt(const gcfg *c, int steps) {
  printf("\n== byte-level GPT training step: %lld layers, %lld wide, %lld heads, context %lld, batch %lld, "
         "vocabulary %lld, AdamW (lr 1e-3) ==\n",
         (long long)c->L, (long long)c->C, (long long)c->H, (long long)c->T, (long long)c->B, (long long)c->V);
  int n = nparams(c);
  ct_tensor **init = calloc((size_t)n, sizeof *init);
  init_params(c, init);
  int64_t sbt[2] = {c->B, c->T}, st[2] = {c->T, c->T};
  ct_options oi = ct_opts_dtype(CT_INT64);
  ct_tensor *idx = nn(ct_randint(0, c->V, 2, sbt, &oi, G), "randint");
  /* targets: the next byte of a fixed pattern of idx, so the loss can fall */
  ct_tensor *tgt = nn(ct_remainder_scalar(nn(ct_add_scalar(idx, ct_si(1)), "add"), ct_si(c->V)), "tgt");
  ct_tensor *pos = nn(ct_arange(ct_si(0), ct_si(c->T), ct_si(1), &oi), "arange");
  ct_tensor *ones = nn(ct_ones(2, st, ct_opts_dtype(CT_BOOL)), "ones"), *mask = nn(ct_triu(ones, 1), "triu");
  gstate cpu = {0}, gpu = {0};
  gstate_make(c, init, ct_cpu(), &cpu);
  gstate_make(c, init, ct_webgpu(), &gpu);
  cpu.idx = idx, cpu.tgt = tgt, cpu.pos = pos, cpu.mask = mask;
  gpu.idx = to_gpu(idx), gpu.tgt = to_gpu(tgt), gpu.pos = to_gpu(pos), gpu.mask = to_gpu(mask);
  /* the first two steps on both devices: the losses agree */
  for (int k = 0; k < 2; k++) {
    double t0 = now();
    double lc = gpt_step(c, &cpu, true);
    double t1 = now();
    double lg = gpt_step(c, &gpu, true);
    double t2 = now();
    printf("step %d: loss cpu %.6f webgpu %.6f, rel diff %.1e %s (cpu %.1f ms, webgpu %.1f ms incl. compiles)\n", k,
           lc, lg, fabs(lg - lc) / fabs(lc), fabs(lg - lc) <= 1e-3 * fabs(lc) ? "ok" : "FAIL", (t1 - t0) * 1e3,
           (t2 - t1) * 1e3);
  }
  double first = NAN, last = NAN, *tm = calloc((size_t)steps, sizeof *tm);
  ct_webgpu_counters c0 = ct_webgpu_get_counters();
  for (int k = 0; k < steps; k++) {
    double t0 = now();
    double l = gpt_step(c, &gpu, k < 2);
    tm[k] = now() - t0;
    if (k == 0) first = l;
    last = l;
  }
  ct_webgpu_counters c1 = ct_webgpu_get_counters();
  double med = median(tm, steps); /* sorts: tm[0] is the fastest step */
  printf("webgpu: loss %.4f -> %.4f over %d more steps (%s); step median %.2f ms, min %.2f ms (%d steps)\n", first,
         last, steps, last < first ? "falls" : "DOES NOT FALL", med * 1e3, tm[0] * 1e3, steps);
  printf("webgpu per step: %.0f dispatches, %.1f submits, %.1f uploads, %.1f downloads; pipelines compiled in the "
         "timed steps: %lld\n",
         (double)(c1.dispatches - c0.dispatches) / steps, (double)(c1.submits - c0.submits) / steps,
         (double)(c1.uploads - c0.uploads) / steps, (double)(c1.downloads - c0.downloads) / steps,
         (long long)(c1.pipelines - c0.pipelines));
  free(tm);
  for (int i = 0; i < n; i++) ct_release(init[i]);
  free(init);
  ct_optim_free(cpu.opt), ct_optim_free(gpu.opt);
  free(cpu.p), free(gpu.p);
  ct_release(idx), ct_release(tgt), ct_release(pos), ct_release(ones), ct_release(mask);
  ct_release(gpu.idx), ct_release(gpu.tgt), ct_release(gpu.pos), ct_release(gpu.mask);
}


/* --parts: the backward of each kind of op of the GPT step alone, at the step's sizes, timed
 * with a synchronize (finds the op whose backward dominates) */
static double part_time(ct_tensor *(*f)(ct_tensor *, void *), ct_tensor *leaf, void *u) {
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    ct_scope *sc = ct_scope_begin();
    double t0 = now();
    ct_tensor *l = nn(ct_sum(nn(f(leaf, u), "part")), "sum");
    OK(ct_backward(l, NULL, false, false));
    OK(ct_webgpu_synchronize());
    double t = now() - t0;
    if (r > 0 && t < best) best = t;
    OK(ct_set_grad(leaf, NULL));
    ct_scope_end(sc);
  }
  return best;
}
static ct_tensor *pf_emb(ct_tensor *w, void *u) { return ct_embedding((ct_tensor *)u, w, NULL); }
static ct_tensor *pf_ln(ct_tensor *x, void *u) {
  int64_t ns[1] = {x->shape[2]};
  (void)u;
  return ct_layer_norm(x, 1, ns, NULL, NULL, 1e-5);
}
static ct_tensor *pf_softmax(ct_tensor *x, void *u) { return ct_softmax(ct_masked_fill(x, (ct_tensor *)u, ct_sf(-INFINITY)), -1, -1); }
static ct_tensor *pf_ce(ct_tensor *x, void *u) { return ct_cross_entropy(x, (ct_tensor *)u, NULL, CT_REDUCTION_MEAN, -100, 0); }
static ct_tensor *pf_gelu(ct_tensor *x, void *u) { (void)u; return ct_gelu(x, "tanh"); }
static ct_tensor *pf_linear(ct_tensor *x, void *u) { return ct_linear(x, (ct_tensor *)u, NULL); }
static ct_tensor *pf_attn(ct_tensor *x, void *u) {
  (void)u;
  return ct_matmul(x, ct_transpose(x, 2, 3));
}
static ct_tensor *pf_split(ct_tensor *x, void *u) {
  (void)u;
  int64_t s4[4] = {8, 256, 4, 64};
  return ct_transpose(ct_view(ct_contiguous(ct_narrow(x, 2, 256, 256)), 4, s4), 1, 2);
}
static void bench_parts(void) {
  printf("\n== backward of each op kind alone (GPT sizes), best of 2 after a warm-up ==\n");
  ct_options oi = ct_opts_dtype(CT_INT64), ob = ct_opts_dtype(CT_BOOL);
  int64_t sbt[2] = {8, 256}, sx[3] = {8, 256, 256}, sq[3] = {8, 256, 768}, sa[4] = {8, 4, 256, 256}, sh[4] = {8, 4, 256, 64},
          sl[2] = {2048, 256}, st[1] = {2048}, sm[2] = {256, 256};
  ct_tensor *idx = to_gpu(nn(ct_randint(0, 256, 2, sbt, &oi, G), "idx")), *tg = to_gpu(nn(ct_randint(0, 256, 1, st, &oi, G), "t"));
  ct_tensor *mask = to_gpu(nn(ct_triu(nn(ct_ones(2, sm, ob), "ones"), 1), "triu"));
  ct_tensor *w = to_gpu(randn2(256, 256, 1.0)), *w4 = to_gpu(randn2(1024, 256, 0.1));
  struct { const char *name; ct_tensor *(*f)(ct_tensor *, void *); int nd; const int64_t *shape; void *u; } P[] = {
      {"embedding [256,256] <- 2048 ids", pf_emb, 2, (const int64_t[]){256, 256}, idx},
      {"layer_norm [8,256,256]", pf_ln, 3, sx, NULL},
      {"masked softmax [8,4,256,256]", pf_softmax, 4, sa, mask},
      {"cross_entropy [2048,256]", pf_ce, 2, sl, tg},
      {"gelu [8,256,1024]", pf_gelu, 3, (const int64_t[]){8, 256, 1024}, NULL},
      {"linear [8,256,256] x [1024,256]^T", pf_linear, 3, sx, w4},
      {"linear [8,256,256] x [256,256]^T", pf_linear, 3, sx, w},
      {"q @ k^T [8,4,256,64]", pf_attn, 4, sh, NULL},
      {"narrow/view/transpose of qkv", pf_split, 3, sq, NULL},
  };
  for (size_t i = 0; i < sizeof P / sizeof *P; i++) {
    ct_tensor *x = nn(ct_randn(P[i].nd, P[i].shape, ct_opts_dtype(CT_FLOAT32), G), "x"), *gx = nn(ct_detach(to_gpu(x)), "d");
    OK(ct_requires_grad_(gx, true));
    printf("%-40s forward+backward %9.2f ms\n", P[i].name, part_time(P[i].f, gx, P[i].u) * 1e3);
    ct_release(x), ct_release(gx);
  }
  ct_release(idx), ct_release(tg), ct_release(mask), ct_release(w), ct_release(w4);
}

int main(int argc, char **argv) {
  bool small = false, do_mm = true, do_gpt = true, parts = false;
  const char *tiles = "8x8x8,4x4x16,8x4x16,4x8x8,8x8x16";
  int sizes[8], ns = 0, steps = 30;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--small")) small = true;
    else if (!strcmp(argv[i], "--no-mm")) do_mm = false;
    else if (!strcmp(argv[i], "--no-gpt")) do_gpt = false;
    else if (!strcmp(argv[i], "--parts")) parts = true;
    else if (!strcmp(argv[i], "--mm") && i + 1 < argc && ns < 8) sizes[ns++] = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tiles") && i + 1 < argc) tiles = argv[++i];
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_webgpu [--small] [--mm N]... [--tiles T,...] [--steps N] [--no-mm] [--no-gpt]\n");
      return 2;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a timeout through a pipe */
  if (!ct_webgpu_is_available()) {
    printf("bench_webgpu: WebGPU unavailable: %s\n", ct_webgpu_unavailable_reason());
    return 1;
  }
  printf("bench_webgpu: adapter %s\n", ct_webgpu_adapter_name());
  G = ct_generator_new(1234);
  if (!ns) {
    if (small) sizes[ns++] = 256;
    else sizes[ns++] = 1024, sizes[ns++] = 2048, sizes[ns++] = 4096;
  }
  if (steps < 1) steps = 1;
  if (parts) bench_parts();
  if (do_mm) bench_mm(tiles, sizes, ns, small);
  if (do_gpt) {
    gcfg c = small ? (gcfg){2, 32, 64, 4, 2, 256} : (gcfg){8, 256, 256, 4, 4, 256};
    bench_gpt(&c, small ? 3 : steps);
  }
  ct_generator_free(G);
  return 0;
}
