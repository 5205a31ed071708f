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
 * (3) --models: issue 9's model targets: the ResNet-18 CIFAR training step b16 (SGD momentum,
 *     eager and captured/replayed), ResNet-18 224 and ViT-Tiny/16 inference b1 (eval, eager and
 *     captured), each first checked against the CPU's output (same weights, same input).
 * Usage: bench_webgpu [--small] [--mm N]... [--tiles 8x8x8,4x4x16,...] [--steps N] [--parts] [--no-gpt] [--no-mm]
 *        [--models | --resnet-step | --infer] [--diag]
 * --dispatch: what one dispatch costs (trivial kernels: one pass, a pass / command buffer / submit each,
 *   pipelines alternating, independent buffers); --profile: each dispatch of the captured models alone;
 *   --conv-ab: the captured models again under other convolution tile/split choices.
 * --split-wait: the captured GPT step's wait for the GPU and its loss read timed apart.
 * --attn flash: the GPT's attention as causal scaled_dot_product_attention (default: the explicit
 *   masked softmax of the PyTorch peer).
 * --diag: each ResNet layer kind alone at the models' sizes, WebGPU vs CPU (values, gradients).
 *   --small: sizes for SwiftShader (a CPU emulating the GPU): mm 256, GPT 2x32, 64 wide;
 *   --parts: each op kind of the GPT step alone, forward + backward, at the step's sizes.
 * On the H200 device machine: bench/webgpu_h200.sh (builds, then runs this and the peer). */
#include "ctorch.h"
#include "ctorch/webgpu.h"
#include "ctorch/train.h" /* ct_classifier_train_step: device ops only, so a capture can record it */
#include "backend/webgpu/webgpu_backend.h" /* ct_webgpu_get_counters */
#include <math.h>
#include <sched.h> /* sched_getaffinity: the CPUs this process may use */
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
static ct_tensor *f64(const ct_tensor *t) { return nn(ct_to_dtype(t, CT_FLOAT64), "to float64"); }
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
static bool do_profile;
static void profile_graph(ct_webgpu_graph *g, double replay_s);
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
static bool gpt_unchecked; /* the loss without the host-side check of the targets (capturable) */
static bool split_wait;    /* --split-wait: time the captured step's GPU wait and loss read apart */
static bool gpt_flash;     /* --attn flash: causal scaled_dot_product_attention (WGSL FlashAttention) */
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
    ct_tensor *hs[3], *y;
    int64_t s4[4] = {B, T, H, D}, s5[5] = {B, T, 3, H, D};
    if (gpt_flash) { /* q, k, v: strided views of qkv, no copies; the same product, scale and mask */
      ct_tensor *q5 = nn(ct_view(qkv, 5, s5), "view");
      for (int j = 0; j < 3; j++) hs[j] = nn(ct_transpose(nn(ct_select(q5, 2, j), "select"), 1, 2), "tr");
      y = nn(ct_scaled_dot_product_attention(hs[0], hs[1], hs[2], NULL, 0, true, NULL, NULL), "sdpa");
    } else {
      for (int j = 0; j < 3; j++)
        hs[j] = nn(ct_transpose(nn(ct_view(nn(ct_contiguous(nn(ct_narrow(qkv, 2, j * C, C), "narrow")), "c"), 4, s4),
                                   "view"),
                                1, 2),
                   "tr");
      ct_tensor *att = nn(ct_matmul(hs[0], nn(ct_transpose(hs[1], 2, 3), "kT")), "qk");
      att = nn(ct_mul_scalar(att, ct_sf(scale)), "scale");
      att = nn(ct_masked_fill(att, mask, ct_sf(-INFINITY)), "mask");
      att = nn(ct_softmax(att, -1, -1), "softmax");
      y = nn(ct_matmul(att, hs[2]), "av");
    }
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
  if (gpt_unchecked)
    return nn(ct_cross_entropy_unchecked(nn(ct_view(logits, 2, s2), "view"), nn(ct_reshape(tgt, 1, s1), "view")), "loss");
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
  /* the same step captured once and replayed (loss read back after each replay, as the eager
   * steps and the PyTorch peer do); gradients zeroed in place so the graph keeps their buffers */
  gpt_unchecked = true;
  ct_scope *sc = ct_scope_begin();
  OK(ct_webgpu_synchronize());
  OK(ct_webgpu_capture_begin());
  ct_tensor *loss = gpt_loss(c, gpu.p, gpu.idx, gpu.tgt, gpu.pos, gpu.mask);
  /* gradients set to None (as the PyTorch peer's zero_grad): the backward's own buffers become
   * .grad and stay alive, so replays write them again; zeroing in place cost a fill and an add
   * per parameter */
  OK(ct_optim_zero_grad(gpu.opt, true));
  OK(ct_backward(loss, NULL, false, false));
  OK(ct_optim_step(gpu.opt));
  ct_retain(loss);
  ct_scope_end(sc);
  ct_webgpu_graph *gr = ct_webgpu_capture_end();
  if (!gr) DIE("capture the GPT step");
  gpt_unchecked = false;
  ct_webgpu_counters c2 = ct_webgpu_get_counters();
  double hsum = 0, *tw = calloc((size_t)steps, sizeof *tw), *ti = calloc((size_t)steps, sizeof *ti);
  for (int k = 0; k < steps; k++) {
    double t0 = now();
    OK(ct_webgpu_graph_replay(gr));
    double t1 = now();
    hsum += t1 - t0;
    if (split_wait) OK(ct_webgpu_synchronize()); /* --split-wait: the GPU's part apart from the read */
    double t2 = now();
    double l = NAN;
    OK(ct_item_double(loss, &l));
    tm[k] = now() - t0, tw[k] = t2 - t1, ti[k] = now() - t2;
    if (k == 0) first = l;
    last = l;
  }
  ct_webgpu_counters c3 = ct_webgpu_get_counters();
  med = median(tm, steps);
  if (split_wait)
    printf("webgpu captured, per step: wait for the GPU median %.2f ms, then the loss read %.2f ms\n",
           median(tw, steps) * 1e3, median(ti, steps) * 1e3);
  free(tw), free(ti);
  printf("webgpu captured (%lld dispatches): loss %.4f -> %.4f over %d replays (%s); step median %.2f ms, min %.2f ms\n",
         (long long)ct_webgpu_graph_dispatches(gr), first, last, steps, last < first ? "falls" : "DOES NOT FALL", med * 1e3,
         tm[0] * 1e3);
  printf("webgpu per replayed step: %.1f submits, %.1f downloads, %lld pipelines compiled; host (encode + submit) "
         "%.2f ms mean\n",
         (double)(c3.submits - c2.submits) / steps, (double)(c3.downloads - c2.downloads) / steps,
         (long long)(c3.pipelines - c2.pipelines), hsum / steps * 1e3);
  /* back-to-back replays, one read at the end: the GPU's rate without the per-step round trip */
  OK(ct_webgpu_synchronize());
  double tb0 = now();
  for (int k = 0; k < steps; k++) OK(ct_webgpu_graph_replay(gr));
  OK(ct_webgpu_synchronize());
  double tbb = (now() - tb0) / steps;
  printf("webgpu captured, %d replays back-to-back: %.2f ms per step\n", steps, tbb * 1e3);
  if (do_profile) profile_graph(gr, tbb);
  ct_webgpu_graph_free(gr);
  ct_release(loss);
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


/* ---- --diag: the ResNets' layers alone at their sizes, WebGPU vs the CPU in float64 (values and
 * gradients) ---- */
typedef ct_tensor *(*dg_fn)(ct_tensor *const *in);
static ct_tensor *dg_conv(ct_tensor *const *in, int64_t st, int64_t pd) {
  int64_t s2[2] = {st, st}, p2[2] = {pd, pd};
  return ct_conv2d(in[0], in[1], NULL, s2, p2, NULL, 1);
}
static ct_tensor *dg_c7(ct_tensor *const *in) { return dg_conv(in, 2, 3); }
static ct_tensor *dg_c3(ct_tensor *const *in) { return dg_conv(in, 1, 1); }
static ct_tensor *dg_c3s2(ct_tensor *const *in) { return dg_conv(in, 2, 1); }
static ct_tensor *dg_c1s2(ct_tensor *const *in) { return dg_conv(in, 2, 0); }
static ct_tensor *dg_bn_train(ct_tensor *const *in) { return ct_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1, 1e-5); }
static ct_tensor *dg_bn_eval(ct_tensor *const *in) {
  /* running statistics: in[3], in[4] (not differentiated) */
  return ct_batch_norm(in[0], in[3], in[4], in[1], in[2], false, 0.1, 1e-5);
}
static ct_tensor *dg_maxpool(ct_tensor *const *in) {
  int64_t k[2] = {3, 3}, st[2] = {2, 2}, pd[2] = {1, 1};
  return ct_max_pool2d(in[0], k, st, pd, NULL, false, NULL);
}
static ct_tensor *dg_avg(ct_tensor *const *in) {
  int64_t o[2] = {1, 1};
  return ct_adaptive_avg_pool2d(in[0], o);
}
static ct_tensor *dg_relu_add(ct_tensor *const *in) { return ct_relu(ct_add(in[0], in[1])); }
static ct_tensor *dg_linear(ct_tensor *const *in) { return ct_linear(in[0], in[1], in[2]); }
typedef struct {
  const char *name;
  dg_fn f;
  int n, ngrad; /* inputs; the first ngrad get gradients */
  int64_t sh[5][4];
  int nd[5];
} dg_case;
static void diag_case(const dg_case *d) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *ci[5], *gi[5];
  for (int i = 0; i < d->n; i++) {
    ct_tensor *r = nn(ct_randn(d->nd[i], d->sh[i], ct_opts(), G), "randn");
    if (i == 4) r = nn(ct_add_scalar(nn(ct_abs(r), "abs"), ct_sf(0.5)), "var"); /* a positive running variance */
    ci[i] = nn(ct_detach(f64(r)), "d"), gi[i] = nn(ct_detach(to_gpu(r)), "d"); /* the reference in float64 */
    if (i < d->ngrad) {
      OK(ct_requires_grad_(ci[i], true));
      OK(ct_requires_grad_(gi[i], true));
    }
  }
  ct_tensor *yc = d->f(ci), *yg = d->f(gi);
  if (!yc || !yg) {
    printf("%-44s FAILED: %s\n", d->name, ct_last_error());
    ct_scope_end(sc);
    return;
  }
  double e = rel_err(yg, yc), worst = 0;
  char gbuf[160] = "";
  if (d->ngrad) {
    ct_tensor *w = nn(ct_randn(yc->ndim, yc->shape, ct_opts(), G), "w");
    OK(ct_backward(nn(ct_sum(nn(ct_mul(yc, f64(w)), "mul")), "sum"), NULL, false, false));
    OK(ct_backward(nn(ct_sum(nn(ct_mul(yg, to_gpu(w)), "mul")), "sum"), NULL, false, false));
    for (int i = 0; i < d->ngrad; i++) {
      double ge = rel_err(ct_grad(gi[i]), ct_grad(ci[i]));
      worst = ge > worst ? ge : worst;
      snprintf(gbuf + strlen(gbuf), sizeof gbuf - strlen(gbuf), " g%d %.1e", i, ge);
    }
  }
  printf("%-44s out %.1e%s %s\n", d->name, e, gbuf, e < 1e-4 && worst < 1e-4 ? "ok" : "FAIL");
  ct_scope_end(sc);
}
static void bench_diag(void) {
  printf("\n== the ResNets' layers alone, WebGPU vs CPU: relative Frobenius error of the output and gradients ==\n");
  static const dg_case C[] = {
      {"conv 7x7/2 p3 [1,3,224,224] x [64,3,7,7]", dg_c7, 2, 0, {{1, 3, 224, 224}, {64, 3, 7, 7}}, {4, 4}},
      {"conv 3x3 p1 [1,64,56,56] x [64,64,3,3]", dg_c3, 2, 0, {{1, 64, 56, 56}, {64, 64, 3, 3}}, {4, 4}},
      {"conv 3x3/2 p1 [1,64,56,56] x [128,64,3,3]", dg_c3s2, 2, 0, {{1, 64, 56, 56}, {128, 64, 3, 3}}, {4, 4}},
      {"conv 1x1/2 [1,64,56,56] x [128,64,1,1]", dg_c1s2, 2, 0, {{1, 64, 56, 56}, {128, 64, 1, 1}}, {4, 4}},
      {"conv 3x3 p1 [1,512,7,7] x [512,512,3,3]", dg_c3, 2, 0, {{1, 512, 7, 7}, {512, 512, 3, 3}}, {4, 4}},
      {"bn eval [1,64,112,112]", dg_bn_eval, 5, 0, {{1, 64, 112, 112}, {64}, {64}, {64}, {64}}, {4, 1, 1, 1, 1}},
      {"maxpool 3x3/2 p1 [1,64,112,112]", dg_maxpool, 1, 0, {{1, 64, 112, 112}}, {4}},
      {"adaptive avg 1x1 [1,512,7,7]", dg_avg, 1, 0, {{1, 512, 7, 7}}, {4}},
      {"linear [1,512] x [1000,512]", dg_linear, 3, 0, {{1, 512}, {1000, 512}, {1000}}, {2, 2, 1}},
      {"train conv 3x3 p1 [16,3,32,32] x [64,3,3,3]", dg_c3, 2, 2, {{16, 3, 32, 32}, {64, 3, 3, 3}}, {4, 4}},
      {"train conv 3x3 p1 [16,64,32,32] x [64,64,3,3]", dg_c3, 2, 2, {{16, 64, 32, 32}, {64, 64, 3, 3}}, {4, 4}},
      {"train conv 3x3/2 p1 [16,128,16,16] x [256,128,3,3]", dg_c3s2, 2, 2, {{16, 128, 16, 16}, {256, 128, 3, 3}}, {4, 4}},
      {"train conv 1x1/2 [16,64,32,32] x [128,64,1,1]", dg_c1s2, 2, 2, {{16, 64, 32, 32}, {128, 64, 1, 1}}, {4, 4}},
      {"train conv 3x3 p1 [16,512,4,4] x [512,512,3,3]", dg_c3, 2, 2, {{16, 512, 4, 4}, {512, 512, 3, 3}}, {4, 4}},
      {"train bn [16,64,32,32]", dg_bn_train, 3, 3, {{16, 64, 32, 32}, {64}, {64}}, {4, 1, 1}},
      {"train bn [16,512,4,4]", dg_bn_train, 3, 3, {{16, 512, 4, 4}, {512}, {512}}, {4, 1, 1}},
      {"train relu(a + b) [16,64,32,32]", dg_relu_add, 2, 2, {{16, 64, 32, 32}, {16, 64, 32, 32}}, {4, 4}},
      {"train adaptive avg 1x1 [16,512,4,4]", dg_avg, 1, 1, {{16, 512, 4, 4}}, {4}},
      {"train linear [16,512] x [10,512]", dg_linear, 3, 3, {{16, 512}, {10, 512}, {10}}, {2, 2, 1}},
  };
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) diag_case(&C[i]);
}

/* ---- (4) --dispatch: what one dispatch costs, by how it is recorded (issue 9) ---- */
static void bench_dispatch(int n) {
  static const struct {
    const char *name;
    int mode, flags;
  } C[] = {
      {"one pass, one pipeline, one buffer (RAW chain)", 0, 0},
      {"one pass, one pipeline, one buffer, bind once", 0, CT_WG_PROBE_BIND_ONCE},
      {"one pass, one pipeline, 64 buffers (independent)", 0, CT_WG_PROBE_INDEP},
      {"one pass, 2 pipelines alternating, one buffer", 0, CT_WG_PROBE_ALT_PIPE},
      {"one pass, 2 pipelines alternating, 64 buffers", 0, CT_WG_PROBE_ALT_PIPE | CT_WG_PROBE_INDEP},
      {"one pass, read-only kernel (no storage write)", 0, CT_WG_PROBE_READ_ONLY},
      {"one pass, 256 workgroups each, one buffer", 0, CT_WG_PROBE_WIDE},
      {"one pass, 256 workgroups each, 64 buffers", 0, CT_WG_PROBE_WIDE | CT_WG_PROBE_INDEP},
      {"a pass per dispatch, one command buffer", 1, 0},
      {"a command buffer per dispatch, one submit", 3, 0},
      {"a command buffer and a submit per dispatch", 2, 0},
  };
  printf("\n== per-dispatch cost: %d trivial dispatches (64 threads, a[i] += 1) vs 1; slope = (t(n) - t(1)) / (n - 1), "
         "medians of 5 ==\n", n);
  for (size_t c = 0; c < sizeof C / sizeof C[0]; c++) {
    double t1[5], tn[5];
    for (int r = 0; r < 5; r++) {
      OK(ct_webgpu_dispatch_probe(1, C[c].mode, C[c].flags, &t1[r]));
      OK(ct_webgpu_dispatch_probe(n, C[c].mode, C[c].flags, &tn[r]));
    }
    double a = median(t1, 5), b = median(tn, 5);
    printf("dispatch %-50s %7.2f us each (1 dispatch submitted+waited: %.1f us)\n", C[c].name, (b - a) / (n - 1) * 1e6,
           a * 1e6);
  }
}

/* --profile: each dispatch of a captured graph run alone (10 times in a pass), by kernel kind */
static const char *kernel_kind(const char *w) {
  if (strstr(w, "fn la(m")) return "conv (implicit GEMM)";
  if (strstr(w, "fn fin(")) return "conv split-K sum";
  if (strstr(w, "var<workgroup> As") || strstr(w, "var<workgroup> Bs")) return "gemm";
  if (strstr(w, "workgroupBarrier")) return "reduction/norm";
  return "elementwise/other";
}
static void profile_graph(ct_webgpu_graph *g, double replay_s) {
  int n = (int)ct_webgpu_graph_dispatches(g);
  double *us = calloc((size_t)n, sizeof *us);
  int *ord = calloc((size_t)n, sizeof *ord);
  if (!us || !ord || ct_webgpu_graph_profile(g, 10, us) != CT_OK) {
    printf("profile failed: %s\n", ct_last_error());
    free(us), free(ord);
    return;
  }
  static const char *kinds[] = {"conv (implicit GEMM)", "conv split-K sum", "gemm", "reduction/norm", "elementwise/other"};
  double tot = 0, by[5] = {0};
  int cnt[5] = {0};
  for (int i = 0; i < n; i++) {
    uint32_t gr[3];
    const char *k = kernel_kind(ct_webgpu_graph_kernel(g, i, gr));
    for (int j = 0; j < 5; j++)
      if (k == kinds[j]) by[j] += us[i], cnt[j]++;
    tot += us[i];
    ord[i] = i;
  }
  printf("  profile: %d dispatches alone sum to %.3f ms (replay %.3f ms)\n", n, tot * 1e-3, replay_s * 1e3);
  for (int j = 0; j < 5; j++)
    if (cnt[j]) printf("    %-22s %4d dispatches %8.3f ms (%.1f us each)\n", kinds[j], cnt[j], by[j] * 1e-3, by[j] / cnt[j]);
  for (int a = 0; a < n; a++) /* the slowest first (selection of the top 12) */
    for (int b = a + 1; b < n && a < 12; b++)
      if (us[ord[b]] > us[ord[a]]) {
        int t = ord[a];
        ord[a] = ord[b], ord[b] = t;
      }
  for (int a = 0; a < n && a < 12; a++) {
    uint32_t gr[3];
    const char *k = kernel_kind(ct_webgpu_graph_kernel(g, ord[a], gr));
    printf("    #%-4d %8.1f us  %-20s grid %ux%ux%u\n", ord[a], us[ord[a]], k, gr[0], gr[1], gr[2]);
  }
  /* every dispatch in graph order (the tee'd log keeps it; the conv's op from its operand code) */
  for (int i = 0; i < n; i++) {
    uint32_t gr[3];
    const char *w = ct_webgpu_graph_kernel(g, i, gr), *k = kernel_kind(w);
    const char *sub = strstr(w, "fn la(m") ? (strstr(w, "let oo = k /") ? " dgrad" : strstr(w, "let n = k /") ? " wgrad" : " fwd") : "";
    printf("    d%-4d %8.1f us %s%s grid %ux%ux%u\n", i, us[i], k, sub, gr[0], gr[1], gr[2]);
  }
  free(us), free(ord);
}

/* --profile with --conv-ab (session 13): each A/B variant's graph profiled too, summed by convolution
 * kind (fwd / dgrad / wgrad / columns gather / other) and every convolution dispatch on one line */
static void profile_compact(ct_webgpu_graph *g, const char *lab) {
  int n = (int)ct_webgpu_graph_dispatches(g);
  double *us = calloc((size_t)n, sizeof *us);
  if (!us || ct_webgpu_graph_profile(g, 10, us) != CT_OK) {
    printf("profile failed: %s\n", ct_last_error());
    free(us);
    return;
  }
  static const char *kn[] = {"fwd", "dgrad", "wgrad", "other"};
  double by[4] = {0}, tot = 0;
  int cnt[4] = {0};
  printf("  ab-prof %s:", lab);
  for (int i = 0; i < n; i++) {
    uint32_t gr[3];
    const char *w = ct_webgpu_graph_kernel(g, i, gr);
    int k = 3;
    if (strstr(w, "fn la(m")) k = strstr(w, "let oo = k /") ? 1 : (strstr(w, "let n = k /") || strstr(w, "let hk = tid")) ? 2 : 0;
    by[k] += us[i], cnt[k]++, tot += us[i];
    if (k < 3) printf(" d%d:%s:%ux%ux%u:%.1f", i, kn[k], gr[0], gr[1], gr[2], us[i]);
  }
  printf("\n  ab-prof %s sums: total %.3f ms;", lab, tot * 1e-3);
  for (int k = 0; k < 4; k++) printf(" %s %d %.3f ms;", kn[k], cnt[k], by[k] * 1e-3);
  printf("\n");
  free(us);
}

/* ---- (3) the models of the Performance section ---- */
static ct_module *model_on(int kind, ct_device dev) {
  ct_manual_seed(0); /* the same weights on both devices */
  ct_module *m = NULL;
  if (kind == 0) m = ct_resnet18_cifar_new(10);
  else if (kind == 1) m = ct_resnet18_new(1000);
  else {
    ct_vit_config c = ct_vit_config_tiny16(1000);
    m = ct_vit_new(&c);
  }
  if (!m || ct_module_to_device(m, dev) != CT_OK) DIE("model");
  /* the CPU reference computes in float64: independent of the CPU's float32 fast paths */
  if (dev.type == CT_DEVICE_CPU && ct_module_to_dtype(m, CT_FLOAT64) != CT_OK) DIE("model to float64");
  return m;
}
static void counters_line(const char *what, ct_webgpu_counters a, ct_webgpu_counters b, int n) {
  printf("  %s per step: %.0f dispatches, %.1f submits, %.1f uploads, %.1f downloads, %lld pipelines compiled\n", what,
         (double)(b.dispatches - a.dispatches) / n, (double)(b.submits - a.submits) / n,
         (double)(b.uploads - a.uploads) / n, (double)(b.downloads - a.downloads) / n,
         (long long)(b.pipelines - a.pipelines));
}
/* median over 5 repeats of the mean time of n back-to-back calls, one synchronize per repeat;
 * *host: the same for the calls alone (encoding and submitting, before the wait) */
static double host_part;
static double time_calls(ct_status (*f)(void *), void *u, int n) {
  double t[5], h[5];
  for (int r = 0; r < 5; r++) {
    OK(ct_webgpu_synchronize());
    double t0 = now();
    for (int i = 0; i < n; i++) OK(f(u));
    h[r] = (now() - t0) / n;
    OK(ct_webgpu_synchronize());
    t[r] = (now() - t0) / n;
  }
  host_part = median(h, 5);
  return median(t, 5);
}
typedef struct {
  ct_module *m;
  ct_optim *opt;
  ct_tensor *x, *y, *loss;
  ct_webgpu_graph *g;
} mstate;
/* zero_grad(set_to_none=True), PyTorch's default and its peers' (bench_*_torch.py): the backward's
 * own buffers become .grad (a captured graph keeps writing them), where zeroing in place cost a
 * fill and an add per parameter, 124 of the step's 409 dispatches (session 11; WG_STEP_ZERO_FILL=1:
 * zeroed in place, as sessions 5-10 measured) */
static ct_status train_eager(void *u) {
  mstate *s = u;
  const char *zf = getenv("WG_STEP_ZERO_FILL");
  return ct_classifier_train_step(s->m, s->opt, s->x, s->y, !(zf && *zf == '1'), true, &s->loss);
}
static ct_status replay(void *u) { return ct_webgpu_graph_replay(((mstate *)u)->g); }
static ct_optim *sgd_of(ct_module *m, ct_dict *pd) {
  ct_module_named_parameters(m, pd);
  int64_t np = ct_dict_len(pd);
  ct_tensor **ps = malloc(sizeof *ps * (size_t)np);
  for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(pd, i);
  ct_optim *o = ct_optim_sgd(np, ps, 0.01, 0.9, 0.0);
  free(ps);
  if (!o) DIE("sgd");
  return o;
}
/* --conv-ab: the captured model again under other kernel choices (webgpu_kernels.c's k_conv:
 * session 7's tile/split policy, no prefetch, T forced to 2, T = 2 for the forward convolutions only;
 * the GEMM without session 9's short-product 32x32 tile, ResNet inference without session 9's
 * BN/residual/ReLU fold into the convolutions, ViT without its GELU fold into fc1's addmm, split-K
 * only from K >= 1024 (session 8's rule) and T = 4 for the forward convolutions (the grad-enabled
 * rule; inference takes T = 2 since session 9); session 10: split-K convolutions with the separate
 * sum pass again (CONV_FUSED_SUM=0), ResNet's head as pool + flatten + addmm (POOL_FC=0), and the
 * split's minimum slice 128 or 64 instead of 256 (CONV_SLICE), 32-deep slices per step (CONV_BK);
 * each re-captured and timed in this process */
static bool conv_ab;
static const char *const conv_ab_env[][14] = {{"CT_WEBGPU_CONV_POLICY", "7"}, {"CT_WEBGPU_CONV_PREFETCH", "0"},
                                             {"CT_WEBGPU_CONV_T", "2"},      {"CT_WEBGPU_CONV_FWD_T", "2"},
                                             {"CT_WEBGPU_GEMM_SMALL", "0"},  {"CT_WEBGPU_CONV_BN", "0"},
                                             {"CT_WEBGPU_GEMM_GELU", "0"},   {"CT_WEBGPU_SPLITK_SHORT", "0"},
                                             {"CT_WEBGPU_CONV_FWD_T", "4"},  {"CT_WEBGPU_CONV_FUSED_SUM", "0"},
                                             {"CT_WEBGPU_POOL_FC", "0"},     {"CT_WEBGPU_CONV_SLICE", "128"},
                                             {"CT_WEBGPU_CONV_SLICE", "64"},  {"CT_WEBGPU_CONV_BK", "32"},
                                             /* session 11: the convolution's layout, 8x8 workgroups (alone and
                                              * with T = 4 forward tiles), the step's zeroed gradients, strided
                                              * input gradients through columns (opt-in, unmeasured) */
                                             {"CT_WEBGPU_CONV_V2", "0"},      {"CT_WEBGPU_CONV_PAD", "0"},
                                             {"CT_WEBGPU_CONV_NT", "8"},
                                             {"CT_WEBGPU_CONV_NT", "8", "CT_WEBGPU_CONV_FWD_T", "4"},
                                             {"CT_WEBGPU_CONV_NT", "8", "CT_WEBGPU_CONV_T", "2"},
                                             {"WG_STEP_ZERO_FILL", "1"},      {"CT_WEBGPU_CONV_DGRAD_COL", "0"},
                                             /* session 12: the strided input gradients through the implicit
                                              * GEMM again (above: the columns are the default now), SGD one
                                              * dispatch per parameter again (multi-tensor off), BN's count
                                              * as its own dispatch again */
                                             {"CT_WEBGPU_SGD_MT", "0"},       {"CT_WEBGPU_BN_FOLD", "0"},
                                             {"CT_WEBGPU_SGD_MT", "0", "CT_WEBGPU_BN_FOLD", "0"},
                                             /* session 13: the weight gradient's split summed in its
                                              * dispatch again (the separate pass is the default now), the
                                              * forward's/input gradient's splits likewise (their pass from
                                              * 2^20 partials is the default), every split through the pass
                                              * (n = 2 slices), the weight gradient's T = 2, each of the hoisted
                                              * loads and B's j-walking loads off, all of session 13 off */
                                             {"CT_WEBGPU_WGRAD_SUM_PASS", "0"}, {"CT_WEBGPU_CONV_PASS_MIN", "0"},
                                             {"CT_WEBGPU_CONV_PASS_S", "2"},  {"CT_WEBGPU_WGRAD_T", "2"},
                                             {"CT_WEBGPU_WGRAD_HOIST", "0"},  {"CT_WEBGPU_CONV_HOIST", "0"},
                                             {"CT_WEBGPU_CONV_BJ", "0"},
                                             {"CT_WEBGPU_S13", "0", "CT_WEBGPU_CONV_HOIST", "0", "CT_WEBGPU_WGRAD_HOIST", "0",
                                              "CT_WEBGPU_CONV_BJ", "0", "CT_WEBGPU_WGRAD_SUM_PASS", "0", "CT_WEBGPU_CONV_PASS_MIN", "0"}};
static ct_webgpu_graph *ab_graph;
static ct_status ab_replay(void *u) {
  (void)u;
  return ct_webgpu_graph_replay(ab_graph);
}
static const ct_tensor *ab_ref; /* inference: each variant's replayed output is checked against it */
static ct_tensor *const *ab_out;
static void conv_ab_step(void *ms, ct_status (*step)(void *), int steps) {
  const char *only = getenv("WG_AB_ONLY"); /* a comma list of the variables to run (device time) */
  for (size_t v = 0; v < sizeof conv_ab_env / sizeof conv_ab_env[0]; v++) {
    if (only && *only && !strstr(only, conv_ab_env[v][0])) continue;
    setenv(conv_ab_env[v][0], conv_ab_env[v][1], 1);
    if (conv_ab_env[v][2]) setenv(conv_ab_env[v][2], conv_ab_env[v][3], 1);
    for (int q = 4; q < 14; q += 2)
      if (conv_ab_env[v][q]) setenv(conv_ab_env[v][q], conv_ab_env[v][q + 1], 1);
    OK(ct_webgpu_synchronize());
    OK(ct_webgpu_capture_begin());
    OK(step(ms));
    if (!(ab_graph = ct_webgpu_capture_end())) DIE("capture (conv A/B)");
    if (ab_out && *ab_out) { /* the check below sees the replays' values */
      ct_tensor *z = nn(ct_zeros_like(*ab_out, NULL), "zeros");
      OK(ct_copy_(*ab_out, z));
      ct_release(z);
    }
    OK(ab_replay(NULL));
    double t = time_calls(ab_replay, NULL, steps);
    char lab[400];
    snprintf(lab, sizeof lab, "%s=%s", conv_ab_env[v][0], conv_ab_env[v][1]);
    if (conv_ab_env[v][2]) snprintf(lab + strlen(lab), sizeof lab - strlen(lab), " %s=%s", conv_ab_env[v][2], conv_ab_env[v][3]);
    for (int q = 4; q < 14; q += 2)
      if (conv_ab_env[v][q]) snprintf(lab + strlen(lab), sizeof lab - strlen(lab), " %s=%s", conv_ab_env[v][q], conv_ab_env[v][q + 1]);
    printf("  conv A/B %s: replay %.3f ms (%lld dispatches)", lab, t * 1e3, (long long)ct_webgpu_graph_dispatches(ab_graph));
    if (ab_ref && ab_out && *ab_out) {
      double e = rel_err(*ab_out, ab_ref);
      printf("; output vs cpu rel err %.2e %s", e, e < 1e-4 ? "ok" : "FAIL");
    }
    printf("\n");
    if (do_profile && ab_ref == NULL) profile_compact(ab_graph, lab);
    ct_webgpu_graph_free(ab_graph);
    ab_graph = NULL;
    unsetenv(conv_ab_env[v][0]);
    if (conv_ab_env[v][2]) unsetenv(conv_ab_env[v][2]);
    for (int q = 4; q < 14; q += 2)
      if (conv_ab_env[v][q]) unsetenv(conv_ab_env[v][q]);
  }
}

/* "[+12.3 s] what": where a run that times out stopped (seconds since the section began) */
static double stamp0;
static void stamp(const char *what) { printf("  [+%.1f s] %s\n", now() - stamp0, what); }
static int64_t step_hw = 32; /* --step-hw N: the CIFAR step's input size (smaller for SwiftShader) */
static void bench_resnet_step(int64_t B, int steps) {
  printf("\n== ResNet-18 CIFAR training step, batch %lld, SGD momentum 0.9 lr 0.01, float32 ==\n", (long long)B);
  stamp0 = now();
  ct_module *mc = model_on(0, ct_cpu()), *mg = model_on(0, ct_webgpu());
  ct_module_train(mc, true), ct_module_train(mg, true);
  ct_dict *pc = ct_dict_new(), *pg = ct_dict_new();
  ct_optim *oc = sgd_of(mc, pc), *og = sgd_of(mg, pg);
  int64_t hw = step_hw, xs[4] = {B, 3, hw, hw};
  if (hw != 32) printf("(input %lldx%lld)\n", (long long)hw, (long long)hw);
  ct_options io = ct_opts_dtype(CT_INT64);
  ct_tensor *x = nn(ct_randn(4, xs, ct_opts(), G), "x"), *y = nn(ct_randint(0, 10, 1, &B, &io, G), "y");
  mstate c = {mc, oc, f64(x), y, NULL, NULL}, g = {mg, og, to_gpu(x), to_gpu(y), NULL, NULL};
  stamp("models built (the cpu reference in float64)");
  /* steps 0-1 eager on both, step 2 eager while captured, step 3 a replay: the losses agree */
  double worst = 0;
  for (int k = 0; k < 4; k++) {
    double t0 = now();
    OK(train_eager(&c));
    double t1 = now();
    if (k == 2) OK(ct_webgpu_capture_begin());
    if (k < 3) OK(train_eager(&g));
    if (k == 2 && !(g.g = ct_webgpu_capture_end())) DIE("capture");
    if (k == 3) OK(replay(&g));
    double lc = NAN, lg = NAN;
    OK(ct_item_double(c.loss, &lc));
    OK(ct_item_double(g.loss, &lg));
    double d = fabs(lg - lc) / fabs(lc);
    worst = d > worst ? d : worst;
    printf("  [+%.1f s] step %d (%s): loss cpu %.6f webgpu %.6f rel diff %.1e (cpu %.0f ms, webgpu %.1f ms)\n", now() - stamp0, k,
           k < 2 ? "eager" : k == 2 ? "eager, captured" : "replay", lc, lg, d, (t1 - t0) * 1e3, (now() - t1) * 1e3);
  }
  printf("check vs cpu over 4 steps: worst rel loss diff %.1e %s; graph of %lld dispatches\n", worst,
         worst <= 1e-3 ? "ok" : "FAIL", (long long)ct_webgpu_graph_dispatches(g.g));
  stamp("checks done; timing the eager steps");
  int ne = steps < 5 ? 1 : 5; /* --small: 5 eager steps, else 25 */
  ct_webgpu_counters a = ct_webgpu_get_counters();
  double te = time_calls(train_eager, &g, ne);
  ct_webgpu_counters b = ct_webgpu_get_counters();
  counters_line("eager", a, b, 5 * ne);
  stamp("eager timed; timing the replays");
  double tr = time_calls(replay, &g, steps);
  ct_webgpu_counters d = ct_webgpu_get_counters();
  counters_line("replay", b, d, 5 * steps);
  printf("  replay: host (encode + submit) %.2f ms of %.2f ms per step\n", host_part * 1e3, tr * 1e3);
  double lg = NAN;
  OK(ct_item_double(g.loss, &lg));
  printf("webgpu resnet18-cifar b%lld train step: eager %.2f ms, captured (replay) %.2f ms (mean of %d back-to-back, "
         "median of 5); loss now %.4f\n",
         (long long)B, te * 1e3, tr * 1e3, steps, lg);
  stamp("replays timed");
  if (do_profile) profile_graph(g.g, tr);
  ct_webgpu_graph_free(g.g);
  g.g = NULL;
  if (conv_ab) conv_ab_step(&g, train_eager, steps);
  stamp("done");
  ct_release(c.loss), ct_release(c.x), ct_release(g.loss), ct_release(g.x), ct_release(g.y), ct_release(x), ct_release(y);
  ct_optim_free(oc), ct_optim_free(og);
  ct_dict_free(pc), ct_dict_free(pg);
  ct_module_free(mc), ct_module_free(mg);
}
typedef struct {
  ct_module *m;
  ct_tensor *x;
} istate;
static ct_status infer_once(void *u) {
  istate *s = u;
  ct_scope *sc = ct_scope_begin();
  ct_tensor *o = ct_module_forward(s->m, s->x);
  ct_scope_end(sc);
  return o ? CT_OK : ct_last_status();
}
typedef struct {
  ct_module *m;
  ct_tensor *x, *out;
} abstate;
static ct_status forward_kept(void *u) { /* one forward whose output stays alive for the replays */
  abstate *a = u;
  ct_release(a->out);
  ct_scope *sc = ct_scope_begin();
  a->out = ct_module_forward(a->m, a->x);
  if (a->out) ct_retain(a->out);
  ct_scope_end(sc);
  return a->out ? CT_OK : ct_last_status();
}
static int infer_vit = 1;
static int infer_hw = 224; /* --hw N: the ResNet's input size (smaller for SwiftShader's functional runs) */
static void bench_infer(int kind, int iters) {
  const char *name = kind == 1 ? "resnet18-224" : "vit-tiny16";
  printf("\n== %s inference, batch 1, eval, no grad, float32 ==\n", name);
  bool prev = ct_set_grad_enabled(false);
  ct_module *mc = model_on(kind, ct_cpu()), *mg = model_on(kind, ct_webgpu());
  ct_module_eval(mc), ct_module_eval(mg);
  int64_t hw = kind == 1 ? infer_hw : 224, xs[4] = {1, 3, hw, hw};
  if (hw != 224) printf("(input %lldx%lld)\n", (long long)hw, (long long)hw);
  ct_tensor *x = nn(ct_randn(4, xs, ct_opts(), G), "x");
  istate s = {mg, to_gpu(x)};
  ct_tensor *x64 = f64(x), *rc = nn(ct_module_forward(mc, x64), "cpu forward");
  ct_release(x64);
  double t0 = now();
  ct_tensor *rg = nn(ct_module_forward(mg, s.x), "webgpu forward");
  double e = rel_err(rg, rc);
  printf("check vs cpu: rel err %.2e %s (first webgpu forward incl. compiles %.0f ms)\n", e, e < 1e-4 ? "ok" : "FAIL",
         (now() - t0) * 1e3);
  ct_webgpu_counters a = ct_webgpu_get_counters();
  double te = time_calls(infer_once, &s, iters);
  ct_webgpu_counters b = ct_webgpu_get_counters();
  counters_line("eager", a, b, 5 * iters);
  /* capture one forward: its output stays alive (retained) while the graph replays */
  OK(ct_webgpu_synchronize());
  OK(ct_webgpu_capture_begin());
  ct_scope *sc = ct_scope_begin();
  ct_tensor *out = ct_module_forward(mg, s.x);
  if (out) ct_retain(out);
  ct_scope_end(sc);
  ct_webgpu_graph *gr = ct_webgpu_capture_end();
  if (!out || !gr) DIE("capture forward");
  mstate ms = {0};
  ms.g = gr;
  ct_tensor *z = nn(ct_zeros_like(out, NULL), "zeros");
  OK(ct_copy_(out, z)); /* so the check below sees the replay's values */
  ct_release(z);
  OK(replay(&ms));
  double e2 = rel_err(out, rc);
  printf("replay check vs cpu: rel err %.2e %s; graph of %lld dispatches\n", e2, e2 < 1e-4 ? "ok" : "FAIL",
         (long long)ct_webgpu_graph_dispatches(gr));
  double tr = time_calls(replay, &ms, iters);
  printf("  replay: host (encode + submit) %.3f ms of %.3f ms per forward\n", host_part * 1e3, tr * 1e3);
  printf("webgpu %s b1 inference: eager %.3f ms, captured (replay) %.3f ms (mean of %d back-to-back, median of 5)\n",
         name, te * 1e3, tr * 1e3, iters);
  if (conv_ab) {
    abstate ab = {mg, s.x, NULL};
    ab_ref = rc, ab_out = &ab.out;
    conv_ab_step(&ab, forward_kept, iters);
    ab_ref = NULL, ab_out = NULL;
    ct_release(ab.out);
  }
  if (do_profile) profile_graph(gr, tr);
  ct_webgpu_graph_free(gr);
  ct_release(out), ct_release(rc), ct_release(rg), ct_release(x), ct_release(s.x);
  ct_module_free(mc), ct_module_free(mg);
  ct_set_grad_enabled(prev);
}

/* The CPU reference's threads: ctorch's pool takes sysconf's online CPUs, the whole host's where a
 * container gives this process fewer (a cpuset, a CFS quota): then 10x more workers than cores spin
 * and wait for each other at every op's fork/join, and the ResNet step's four float64 reference
 * steps can take minutes (session 9's H200 call: the step's row timed out). Bounded here to the
 * affinity mask and the cgroup quota (WG_CPU_THREADS=N forces N). */
static void bound_cpu_threads(void) {
  int online = ct_get_num_threads(), n = 0;
  cpu_set_t cs;
  if (sched_getaffinity(0, sizeof cs, &cs) == 0) n = CPU_COUNT(&cs);
  FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
  if (f) {
    char q[64];
    long per = 0;
    if (fscanf(f, "%63s %ld", q, &per) == 2 && strcmp(q, "max") != 0 && per > 0) {
      int c = (int)((atol(q) + per - 1) / per);
      if (c > 0 && (n <= 0 || c < n)) n = c;
    }
    fclose(f);
  }
  const char *e = getenv("WG_CPU_THREADS");
  if (e && atoi(e) > 0) n = atoi(e);
  if (n > 0 && n != online) OK(ct_set_num_threads(n));
  printf("bench_webgpu: cpu reference on %d threads (the pool's default here: %d)\n", ct_get_num_threads(), online);
}

int main(int argc, char **argv) {
  bool small = false, do_mm = true, do_gpt = true, parts = false, resnet = false, infer = false, diag = false;
  const char *tiles = "8x8x8,4x4x16,8x4x16,4x8x8,8x8x16";
  int sizes[8], ns = 0, steps = 30, dispatch_n = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--small")) small = true;
    else if (!strcmp(argv[i], "--no-mm")) do_mm = false;
    else if (!strcmp(argv[i], "--no-gpt")) do_gpt = false;
    else if (!strcmp(argv[i], "--parts")) parts = true;
    else if (!strcmp(argv[i], "--models")) resnet = infer = true;
    else if (!strcmp(argv[i], "--resnet-step")) resnet = true;
    else if (!strcmp(argv[i], "--infer")) infer = true;
    else if (!strcmp(argv[i], "--diag")) diag = true;
    else if (!strcmp(argv[i], "--dispatch")) dispatch_n = 2000;
    else if (!strcmp(argv[i], "--profile")) do_profile = true;
    else if (!strcmp(argv[i], "--conv-ab")) conv_ab = true;
    else if (!strcmp(argv[i], "--split-wait")) split_wait = true;
    else if (!strcmp(argv[i], "--attn") && i + 1 < argc) gpt_flash = !strcmp(argv[++i], "flash");
    else if (!strcmp(argv[i], "--mm") && i + 1 < argc && ns < 8) sizes[ns++] = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tiles") && i + 1 < argc) tiles = argv[++i];
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--hw") && i + 1 < argc) infer_hw = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--step-hw") && i + 1 < argc) step_hw = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--vit") && i + 1 < argc) infer_vit = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_webgpu [--small] [--mm N]... [--tiles T,...] [--steps N] [--no-mm] [--no-gpt] [--parts] [--models | --resnet-step | --infer] [--diag] [--split-wait] [--dispatch] [--profile] [--conv-ab] [--hw N] [--vit 0] [--step-hw N]\n");
      return 2;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a timeout through a pipe */
  if (!ct_webgpu_is_available()) {
    printf("bench_webgpu: WebGPU unavailable: %s\n", ct_webgpu_unavailable_reason());
    return 1;
  }
  printf("bench_webgpu: adapter %s\n", ct_webgpu_adapter_name());
  wg_lock(); /* the storage-buffer limit decides which folds fit (the split-K sum in the conv: 9-10 bindings) */
  if (wg_ready() == CT_OK) printf("bench_webgpu: %u storage buffers per shader stage\n", wg_max_storage_buffers());
  wg_unlock();
  bound_cpu_threads();
  G = ct_generator_new(1234);
  if (!ns) {
    if (small) sizes[ns++] = 256;
    else sizes[ns++] = 1024, sizes[ns++] = 2048, sizes[ns++] = 4096;
  }
  if (steps < 1) steps = 1;
  if (dispatch_n) bench_dispatch(small ? 200 : dispatch_n);
  if (diag) bench_diag();
  if (parts) bench_parts();
  if (do_mm) bench_mm(tiles, sizes, ns, small);
  if (do_gpt) {
    gcfg c = small ? (gcfg){2, 32, 64, 4, 2, 256} : (gcfg){8, 256, 256, 4, 4, 256};
    bench_gpt(&c, small ? 3 : steps);
  }
  if (resnet) bench_resnet_step(small ? 2 : 16, small ? 2 : 20);
  if (infer) { /* --small: a functional run (SwiftShader); --vit 0: the ResNet only */
    bench_infer(1, small ? 1 : 20);
    if (infer_vit) bench_infer(2, small ? 1 : 20);
  }
  ct_generator_free(G);
  return 0;
}
