/* GPT-2 training step on one CUDA GPU (issue 7's anchor: GPT-2 124M, context 1024, batch 16,
 * AdamW): forward + backward + gradient clipping + AdamW step, timed after warm-up steps with the
 * device synchronised around the timed loop. Prints one line per precision; the PyTorch peer is
 * bench/bench_cuda_gpt_torch.py, run beside it by tests/cross_backend/gpt_cuda.sh.
 *   bench_cuda_gpt [layers heads width context batch vocab steps precision...]
 * precision: fp32 | tf32 | bf16 (ct_cuda_set_autocast_bf16) | bf16o (bf16 + ct_cuda_set_autocast_bf16_outputs:
 * bfloat16 products' outputs, as torch.autocast), each optionally +graph (forward, backward and
 * clipping replayed as a CUDA graph, the AdamW step eager); default: tf32 bf16 tf32+graph bf16+graph.
 *   bench_cuda_gpt curve PATH [steps]: the first steps' losses and gradient norms in fp32, bf16 and bf16o (and
 * variants, CURVE_PRECS) from weights and a batch written to PATH for the PyTorch peer (bench_cuda_gpt_torch.py
 * curve PATH), and the gradient probe at given steps' weights (CURVE_PROBE); see bench_curve.
 *   bench_cuda_gpt attn [B H T D]: causal attention alone (bf16 tensors; float32 under bf16 autocast).
 *   bench_cuda_gpt mm: the step's matrix-product shapes alone (TF32, bf16 autocast, bfloat16 tensors).
 *   bench_cuda_gpt resnet224 [batch steps]: ResNet-18 224x224 inference (eval), eager and CUDA graph, fp32/tf32,
 * the module's forward and the folded plan (ct_cuda_resnet_infer: batch norm folded, bias+ReLU+residual fused).
 *   bench_cuda_gpt resnet [batch steps [graph] [tf32] [inplace] [cl] [reps=N]]: (cl: channels_last model and input; reps: N timed runs, the median printed) the ResNet-18 CIFAR training step (SGD momentum,
 * issue 7's second anchor), float32 (tf32: TF32 convolutions and products), eager or replayed as one CUDA graph;
 * zero_grad sets the gradients to none like PyTorch 2.x's default and the peer (inplace: zeroes them in place;
 * "none" is still accepted).
 * Build (CUDA build of the library):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -o BUILD/bench_cuda_gpt bench/bench_cuda_gpt.c BUILD/libctorch.a \
 *      -lm -lpthread -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lstdc++
 * On a GPU machine, with the PyTorch peer: tests/cross_backend/gpt_cuda.sh BUILD (after the checks). */
#include "ctorch.h"
#include "ctorch/cuda.h"
#include "ctorch/models.h"
#include "ctorch/io.h"
#include "ctorch/train.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_clock.h"

const char *ct_cuda_cudnn_info(void); /* the CUDA backend's (k_cudnn.cu) */
int64_t ct_cuda_sdpa_calls(bool backward); /* k_attention.cu: flash-attention calls so far */


#define DIE(...)                          \
  do {                                    \
    fprintf(stderr, "bench_cuda_gpt: "); \
    fprintf(stderr, __VA_ARGS__);         \
    fprintf(stderr, ": %s\n", ct_last_error()); \
    exit(1);                              \
  } while (0)

/* "+graph" precisions: forward + backward + clipping captured once as a CUDA graph and replayed
 * (as train-gpt --cuda-graph), the AdamW step eager. */
typedef struct {
  ct_gpt *m;
  ct_tensor *x, *y, *loss, **P;
  int64_t np;
} gstep;
static ct_status fwd_bwd(void *u) {
  gstep *c = u;
  ct_scope *sc = ct_scope_begin();
  ct_tensor *loss = NULL;
  ct_status st = ct_gpt_forward(c->m, c->x, c->y, true, NULL, NULL, &loss);
  if (st == CT_OK) st = ct_backward(loss, NULL, false, false);
  ct_tensor *n = st == CT_OK ? ct_clip_grad_norm_(c->np, c->P, 1.0, 2.0, false) : NULL;
  if (st == CT_OK && !n) st = ct_last_status();
  if (st == CT_OK) {
    ct_release(c->loss);
    c->loss = ct_retain(loss);
  }
  ct_scope_end(sc);
  return st;
}

/* ResNet-18 CIFAR (3x32x32, 10 classes) training step: forward, cross-entropy, backward, SGD
 * momentum. graph: after two eager steps the whole step (zero_grad in place, forward, loss,
 * backward, SGD: its learning rate is constant) is captured once as a CUDA graph and replayed
 * (test_cuda graph_cnn_step checks replays against an eager twin). */
typedef struct {
  ct_module *m;
  ct_optim *opt;
  ct_tensor *x, *y, *loss;
  bool to_none; /* zero_grad(set_to_none=True): backward makes fresh gradients (in a graph: from its pool) */
} rstep;
static ct_status resnet_step(void *u) {
  rstep *r = u;
  return ct_classifier_train_step(r->m, r->opt, r->x, r->y, r->to_none, true, &r->loss);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static int bench_resnet(int64_t B, int64_t steps, bool graph, bool to_none, bool cl, int reps) {
  ct_device dev = ct_cuda(0);
  ct_manual_seed(0);
  ct_module *m = ct_resnet18_cifar_new(10);
  if (!m || ct_module_to_device(m, dev) != CT_OK) DIE("resnet");
  /* cl: PyTorch's channels_last recipe (model and input converted once) */
  if (cl && ct_module_to_channels_last(m) != CT_OK) DIE("channels_last");
  ct_module_train(m, true);
  ct_dict *pd = ct_dict_new();
  ct_module_named_parameters(m, pd);
  int64_t np = ct_dict_len(pd);
  ct_tensor **ps = malloc(sizeof *ps * (size_t)np);
  for (int64_t i = 0; i < np; i++) ps[i] = ct_dict_tensor(pd, i);
  ct_optim *opt = ct_optim_sgd(np, ps, 0.01, 0.9, 0.0);
  if (!opt) DIE("sgd");
  int64_t xs[4] = {B, 3, 32, 32};
  ct_options fo = ct_opts();
  fo.device = dev;
  ct_options io = ct_opts_dtype(CT_INT64);
  io.device = dev;
  ct_tensor *x = ct_randn(4, xs, fo, NULL), *y = ct_randint(0, 10, 1, &B, &io, NULL);
  if (!x || !y) DIE("batch");
  if (cl) {
    ct_tensor *xc = ct_to_channels_last(x);
    ct_release(x);
    if (!(x = xc)) DIE("channels_last input");
  }
  rstep r = {m, opt, x, y, NULL, to_none};
  ct_cuda_graph *gr = NULL;
  for (int s = 0; s < 2; s++)
    if (resnet_step(&r)) DIE("resnet step");
  if (graph) {
    gr = ct_cuda_graph_capture(0, resnet_step, &r);
    if (!gr) DIE("resnet graph capture");
    printf("ctorch  resnet18-cifar CUDA graph: %lld nodes\n", (long long)ct_cuda_graph_num_nodes(gr));
  }
  /* reps timed runs of `steps` steps each (2 untimed before the first): one line each when reps > 1,
   * then the median (the number printed on the "train step" line) */
  double t0 = 0, last = 0, rms[64];
  if (reps < 1) reps = 1;
  if (reps > 64) reps = 64;
  for (int k = 0; k < reps; k++) {
    for (int64_t s = 0; s < steps + (k ? 0 : 2); s++) {
      if (s == (k ? 0 : 2)) {
        ct_cuda_synchronize(0);
        t0 = now();
      }
      if (gr ? ct_cuda_graph_replay(gr) : resnet_step(&r)) DIE("resnet step");
    }
    ct_cuda_synchronize(0);
    rms[k] = (now() - t0) * 1e3 / (double)steps;
    if (reps > 1) printf("ctorch  resnet18-cifar b%lld rep %d: %.3f ms\n", (long long)B, k, rms[k]);
  }
  qsort(rms, (size_t)reps, sizeof rms[0], cmp_dbl);
  double ms = rms[reps / 2];
  if (reps > 1) printf("ctorch  resnet18-cifar b%lld median of %d reps %.3f ms (min %.3f, max %.3f)\n", (long long)B, reps, ms, rms[0], rms[reps - 1]);
  ct_item_double(r.loss, &last);
  printf("ctorch  resnet18-cifar b%lld train step %9.2f ms  (%s, %s%s%s; last loss %.4f; convolutions: %s)\n", (long long)B, ms,
         gr ? "CUDA graph" : "eager", ct_cuda_allow_tf32() ? "tf32" : "fp32", to_none ? ", grads set to none" : "",
         cl ? ", channels_last" : "", last,
         ct_cuda_cudnn_info());
  ct_cuda_graph_free(gr);
  ct_release(r.loss);
  ct_optim_free(opt);
  ct_module_free(m);
  ct_dict_free(pd);
  free(ps);
  ct_release(x);
  ct_release(y);
  return 0;
}

/* ResNet-18 (torchvision's, 1000 classes) inference, batch 1, 3x224x224, eval mode, no autograd:
 * eager and replayed as one CUDA graph; float32 convolutions with FMA math, or TF32 (PyTorch's
 * default for cuDNN convolutions, torch.backends.cudnn.allow_tf32). Median of 5 repeats of
 * `steps` calls. */
typedef struct {
  ct_module *m;
  ct_cuda_resnet_infer *f; /* the folded/fused plan, else the module's forward */
  ct_tensor *x, *out;
} istep;
static ct_status infer_step(void *u) {
  istep *r = u;
  ct_tensor *o = r->f ? ct_cuda_resnet_infer_forward(r->f, r->x) : ct_module_forward(r->m, r->x);
  if (!o) return ct_last_status();
  ct_release(r->out);
  r->out = o;
  return CT_OK;
}
static int bench_resnet224(int64_t B, int64_t steps) {
  ct_device dev = ct_cuda(0);
  ct_manual_seed(0);
  ct_module *m = ct_resnet18_new(1000);
  if (!m || ct_module_to_device(m, dev) != CT_OK || ct_module_eval(m) != CT_OK) DIE("resnet18");
  bool prev = ct_set_grad_enabled(false);
  int64_t xs[4] = {B, 3, 224, 224};
  ct_options fo = ct_opts();
  fo.device = dev;
  ct_tensor *x = ct_randn(4, xs, fo, NULL);
  if (!x) DIE("input");
  for (int v = 0; v < 4; v++) {
    int tf = v & 1;
    bool folded = v >= 2;
    ct_cuda_set_allow_tf32(tf == 1);
    istep r = {m, folded ? ct_cuda_resnet_infer_new(m) : NULL, x, NULL};
    if (folded && !r.f) DIE("ct_cuda_resnet_infer_new");
    for (int s = 0; s < 3; s++)
      if (infer_step(&r)) DIE("resnet224 forward");
    ct_cuda_graph *gr = ct_cuda_graph_capture(0, infer_step, &r);
    if (!gr) DIE("resnet224 graph capture");
    double te[5], tg[5];
    for (int rep = 0; rep < 5; rep++) {
      ct_cuda_synchronize(0);
      double t0 = now();
      for (int64_t s = 0; s < steps; s++)
        if (infer_step(&r)) DIE("resnet224 forward");
      ct_cuda_synchronize(0);
      te[rep] = (now() - t0) * 1e3 / (double)steps;
      t0 = now();
      for (int64_t s = 0; s < steps; s++)
        if (ct_cuda_graph_replay(gr)) DIE("resnet224 replay");
      ct_cuda_synchronize(0);
      tg[rep] = (now() - t0) * 1e3 / (double)steps;
    }
    printf("ctorch  resnet18-224 b%lld inference %-4s %-6s eager %8.3f ms  CUDA graph %8.3f ms (%lld nodes; convolutions: %s)\n",
           (long long)B, tf ? "tf32" : "fp32", folded ? "folded" : "module", median5(te), median5(tg),
           (long long)ct_cuda_graph_num_nodes(gr), ct_cuda_cudnn_info());
    fflush(stdout);
    ct_cuda_graph_free(gr);
    ct_release(r.out);
    ct_cuda_resnet_infer_free(r.f);
  }
  ct_cuda_set_allow_tf32(false);
  ct_set_grad_enabled(prev);
  ct_release(x);
  ct_module_free(m);
  return 0;
}

/* bench_cuda_gpt mm: the GPT-2 124M step's matrix-product shapes one at a time (ctorch's mm on
 * CUDA: TF32; bf16 autocast, float32 operands rounded per call and a float32 result; bfloat16
 * tensors in and out, as PyTorch's autocast runs them), device-synchronised, each also with the
 * vocabulary padded to 50304: where the step's "mm" time goes. The PyTorch peer
 * (bench_cuda_gpt_torch.py mm) times torch.mm on the same shapes and layouts. Operands are
 * sin(0.37 i) (made on the device: no constant data, no host generator). */
static ct_tensor *dev_data(int64_t r, int64_t c, ct_dtype dt) {
  ct_options o = ct_opts();
  o.device = ct_cuda(0);
  int64_t s[2] = {r, c};
  ct_tensor *i = ct_arange(ct_sf(0), ct_sf((double)(r * c)), ct_sf(1), &o);
  ct_tensor *a = i ? ct_mul_scalar(i, ct_sf(0.37)) : NULL, *b = a ? ct_sin(a) : NULL;
  ct_tensor *v = b ? ct_view(b, 2, s) : NULL, *d = v && dt != CT_FLOAT32 ? ct_to_dtype(v, dt) : ct_retain(v);
  ct_release(i);
  ct_release(a);
  ct_release(b);
  ct_release(v);
  return d;
}
static int bench_mm(void) {
  struct {
    const char *name;
    int64_t M, N, K;
    int ta, tb; /* operand given transposed (a view of a contiguous [K, M] / [N, K]) */
  } sh[] = {{"qkv_fwd", 16384, 2304, 768, 0, 1},     {"qkv_dX", 16384, 768, 2304, 0, 0},
            {"qkv_dW", 2304, 768, 16384, 1, 0},      {"fc2_fwd", 16384, 768, 3072, 0, 1},
            {"fc1_fwd", 16384, 3072, 768, 0, 1},     {"fc1_dW", 3072, 768, 16384, 1, 0},
            {"lm_fwd", 16384, 50257, 768, 0, 1},     {"lm_dX", 16384, 768, 50257, 0, 0},
            {"lm_dE", 50257, 768, 16384, 1, 0},      {"lm_fwd_pad", 16384, 50304, 768, 0, 1},
            {"lm_dX_pad", 16384, 768, 50304, 0, 0},  {"lm_dE_pad", 50304, 768, 16384, 1, 0}};
  bool prev = ct_set_grad_enabled(false);
  const char *pn[3] = {"tf32", "bf16ac", "bf16"};
  for (int prec = 0; prec < 3; prec++) {
    ct_cuda_set_allow_tf32(prec == 0);
    if (ct_cuda_set_autocast_bf16(prec == 1)) DIE("autocast");
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
      ct_scope *sc = ct_scope_begin();
      ct_dtype dt = prec == 2 ? CT_BFLOAT16 : CT_FLOAT32;
      ct_tensor *a = sh[i].ta ? dev_data(sh[i].K, sh[i].M, dt) : dev_data(sh[i].M, sh[i].K, dt);
      ct_tensor *b = sh[i].tb ? dev_data(sh[i].N, sh[i].K, dt) : dev_data(sh[i].K, sh[i].N, dt);
      if (!a || !b) DIE("mm inputs");
      ct_tensor *A = sh[i].ta ? ct_transpose(a, 0, 1) : a, *Bm = sh[i].tb ? ct_transpose(b, 0, 1) : b;
      double t0 = 0;
      for (int r = 0; r < 12; r++) {
        if (r == 2) {
          ct_cuda_synchronize(0);
          t0 = now();
        }
        ct_tensor *c = ct_mm(A, Bm);
        if (!c) DIE("mm");
        ct_release(c);
      }
      ct_cuda_synchronize(0);
      double ms = (now() - t0) * 1e3 / 10;
      printf("mm ctorch %-6s %-11s %6lld x %6lld x %6lld %c%c %8.3f ms %6.1f TFLOP/s\n", pn[prec], sh[i].name,
             (long long)sh[i].M, (long long)sh[i].N, (long long)sh[i].K, sh[i].ta ? 'T' : 'N', sh[i].tb ? 'T' : 'N', ms,
             2.0 * (double)sh[i].M * (double)sh[i].N * (double)sh[i].K / (ms * 1e-3) / 1e12);
      fflush(stdout);
      ct_scope_end(sc);
    }
  }
  ct_cuda_set_autocast_bf16(false);
  ct_cuda_set_allow_tf32(false);
  ct_set_grad_enabled(prev);
  return 0;
}

/* attn [B H T D]: causal scaled_dot_product_attention as the GPT-2 step runs it ([16, 12, 1024, 64]):
 * bfloat16 tensors, and float32 tensors under bf16 autocast (what the step runs today); the forward
 * alone and forward + backward (autograd.grad of q, k, v); ms per call, median of 5 repeats of 20,
 * device synchronised. The PyTorch peer: bench_cuda_gpt_torch.py attn. */
static int bench_attn(int64_t B, int64_t H, int64_t T, int64_t D) {
  ct_generator *g = ct_generator_new(7);
  int64_t sh[4] = {B, H, T, D};
  for (int bf = 1; bf >= 0; bf--) {
    ct_cuda_set_autocast_bf16(!bf);
    ct_options o = ct_opts_dtype(bf ? CT_BFLOAT16 : CT_FLOAT32);
    o.device = ct_cuda(0);
    ct_tensor *x[4];
    for (int i = 0; i < 4; i++) {
      ct_tensor *r = ct_randn(4, sh, o, g);
      if (!r) DIE("attn inputs");
      x[i] = r;
      if (i < 3) ct_requires_grad_(x[i], true);
    }
    for (int bwd = 0; bwd < 2; bwd++) {
      double t[5];
      for (int rep = -1; rep < 5; rep++) {
        ct_cuda_synchronize(0);
        double t0 = now();
        for (int it = 0; it < 20; it++) {
          ct_scope *sc = ct_scope_begin();
          bool prev = ct_set_grad_enabled(bwd);
          ct_tensor *out = ct_scaled_dot_product_attention(x[0], x[1], x[2], NULL, 0, true, NULL, NULL);
          ct_set_grad_enabled(prev);
          if (!out) DIE("sdpa");
          if (bwd) {
            ct_tensor *gr[3] = {NULL, NULL, NULL};
            if (ct_autograd_grad(1, &out, &x[3], 3, x, gr, false, false, false) != CT_OK) DIE("sdpa backward");
            for (int i = 0; i < 3; i++) ct_release(gr[i]);
          }
          ct_release(out);
          ct_scope_end(sc);
        }
        ct_cuda_synchronize(0);
        if (rep >= 0) t[rep] = (now() - t0) * 1e3 / 20;
      }
      double ms = median5(t), fl = (bwd ? 3.5 : 1.0) * 4.0 * (double)(B * H * T * T * D) / 2;
      printf("attn ctorch %-13s %lldx%lldx%lldx%lld causal %-7s %8.3f ms %6.1f TFLOP/s (sdpa calls fwd %lld bwd %lld)\n",
             bf ? "bf16" : "f32+autocast", (long long)B, (long long)H, (long long)T, (long long)D, bwd ? "fwd+bwd" : "fwd",
             ms, fl / (ms * 1e-3) / 1e12, (long long)ct_cuda_sdpa_calls(false), (long long)ct_cuda_sdpa_calls(true));
      fflush(stdout);
    }
    for (int i = 0; i < 4; i++) ct_release(x[i]);
  }
  ct_cuda_set_autocast_bf16(false);
  ct_generator_free(g);
  return 0;
}

/* curve PATH [steps]: the first steps' losses of GPT-2 124M (batch 16, context 1024) in fp32, bf16 and bf16o,
 * against PyTorch from the same weights and batch: the initial parameters (HF names, Conv1D layout)
 * and the batch (x, y) are written to PATH (safetensors) for `bench_cuda_gpt_torch.py curve PATH`; the
 * same optimizer (AdamW lr 6e-4, weight decay 0.1, clip 1.0) on one fixed batch. Each step prints its loss
 * and the pre-clip gradient norm.
 * CURVE_PRECS: the runs after fp32 (always first: it writes PATH), space-separated, default "bf16 bf16o";
 * a run is a precision with optional environment settings for it alone, e.g. "bf16o,CT_BF16O_LOSS=ce"
 * (set before the run, unset after; the name is printed as given). CURVE_LR: another learning rate.
 * CURVE_PROBE (e.g. "3 8"): the weights the fp32 run reaches before those steps are written to PATH.p<step>
 * (HF names, for the PyTorch peer) and every run's gradient at those same weights is compared with the
 * fp32 one: "probe ctorch RUN step S loss L grad_norm N err E" (E = |g - g_fp32| / |g_fp32|, L2 over all
 * parameters) and one line per parameter group (the name without "transformer." and "h.<layer>.").
 * CURVE_DEVICE=cpu and CURVE_CFG="layers heads width context batch vocab": the plumbing on a small model
 * without a GPU (the precisions then all run float32 on the CPU). Without a CUDA device (and CURVE_DEVICE
 * unset) it fails with exit status 2. */
#define PG_MAX 40
typedef struct {
  char name[48];
  double g2, d2, r2;
} pgroup;

static double sq_norm(const ct_tensor *t) {
  ct_tensor *n = ct_norm(t, 2.0, 0, NULL, false);
  double v = 0;
  if (!n || ct_item_double(n, &v) != CT_OK) DIE("norm");
  ct_release(n);
  return v * v;
}

/* the group of an HF parameter name: "transformer.h.3.attn.c_attn.bias" -> "attn.c_attn.bias" */
static void group_of(const char *name, char *buf, size_t cap) {
  const char *k = strncmp(name, "transformer.", 12) ? name : name + 12;
  if (!strncmp(k, "h.", 2)) {
    const char *d = strchr(k + 2, '.');
    if (d) k = d + 1;
  }
  snprintf(buf, cap, "%s", k);
}

/* one forward + backward of m (in the current mode) at the weights W; prints the probe lines with each
 * gradient compared with Gref[i] (keep: the reference run, which fills Gref with clones of its own
 * gradients instead) and leaves the gradients none */
static void curve_probe(const char *run, ct_gpt *m, ct_optim *opt, ct_tensor **P, int64_t np, ct_tensor **W,
                        ct_tensor **Gref, bool keep, ct_tensor *x, ct_tensor *y, int64_t step) {
  const ct_dict *pd = ct_gpt_parameters(m);
  bool prev = ct_set_grad_enabled(false);
  for (int64_t i = 0; i < np; i++)
    if (ct_copy_(P[i], W[i]) != CT_OK) DIE("probe weights");
  ct_set_grad_enabled(prev);
  if (ct_optim_zero_grad(opt, true) != CT_OK) DIE("probe zero_grad");
  ct_scope *sc = ct_scope_begin();
  ct_tensor *loss = NULL;
  double l = 0;
  if (ct_gpt_forward(m, x, y, true, NULL, NULL, &loss) != CT_OK || ct_item_double(loss, &l) != CT_OK) DIE("probe forward");
  if (ct_backward(loss, NULL, false, false) != CT_OK) DIE("probe backward");
  pgroup grp[PG_MAX];
  int ng = 0;
  double g2 = 0, d2 = 0, r2 = 0;
  for (int64_t i = 0; i < np; i++) {
    ct_tensor *g = ct_grad(P[i]);
    if (!g) DIE("probe: parameter %s has no gradient", ct_dict_name(pd, i));
    char gn[48];
    group_of(ct_dict_name(pd, i), gn, sizeof gn);
    int k = 0;
    while (k < ng && strcmp(grp[k].name, gn)) k++;
    if (k == ng) {
      if (ng == PG_MAX) DIE("probe: more than %d parameter groups", PG_MAX);
      snprintf(grp[ng].name, sizeof grp[ng].name, "%s", gn);
      grp[ng].g2 = grp[ng].d2 = grp[ng].r2 = 0;
      ng++;
    }
    double a = sq_norm(g), d = 0, r = 0;
    if (keep) {
      bool pv = ct_set_grad_enabled(false);
      Gref[i] = ct_keep(ct_clone(g)); /* out of this scope: kept for the other runs */
      ct_set_grad_enabled(pv);
      if (!Gref[i]) DIE("probe: keep gradient");
      r = a;
    } else {
      ct_tensor *df = ct_sub(g, Gref[i]);
      if (!df) DIE("probe: difference");
      d = sq_norm(df);
      ct_release(df);
      r = sq_norm(Gref[i]);
    }
    grp[k].g2 += a, grp[k].d2 += d, grp[k].r2 += r;
    g2 += a, d2 += d, r2 += r;
  }
  printf("probe ctorch %s step %lld loss %.6f grad_norm %.4f err %.3e\n", run, (long long)step, l, sqrt(g2),
         r2 > 0 ? sqrt(d2 / r2) : 0.0);
  for (int k = 0; k < ng; k++)
    printf("probe ctorch %s step %lld group %s norm %.5g err %.3e\n", run, (long long)step, grp[k].name, sqrt(grp[k].g2),
           grp[k].r2 > 0 ? sqrt(grp[k].d2 / grp[k].r2) : 0.0);
  fflush(stdout);
  ct_release(loss);
  ct_scope_end(sc);
  if (ct_optim_zero_grad(opt, true) != CT_OK) DIE("probe zero_grad");
}

#define CURVE_MAXRUN 16
#define CURVE_MAXPROBE 8
static int bench_curve(const char *path, int64_t steps) {
  const char *dvs = getenv("CURVE_DEVICE");
  bool cpu = dvs && !strcmp(dvs, "cpu");
  if (dvs && !cpu) {
    fprintf(stderr, "bench_cuda_gpt curve: CURVE_DEVICE must be unset or \"cpu\", got \"%s\"\n", dvs);
    return 2;
  }
  if (!cpu && !ct_cuda_is_available()) {
    fprintf(stderr, "bench_cuda_gpt curve: no CUDA device (%s); CURVE_DEVICE=cpu runs the plumbing on the CPU\n",
            ct_cuda_unavailable_reason());
    return 2;
  }
  ct_device dev = cpu ? ct_cpu() : ct_cuda(0);
  ct_gpt_config cfg = {50257, 1024, 768, 12, 12, 0.0, 1e-5};
  int64_t shape[2] = {16, 1024};
  const char *cc = getenv("CURVE_CFG");
  if (cc) {
    long long v[6];
    if (sscanf(cc, "%lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6 || v[0] < 1 ||
        v[1] < 1 || v[2] < 1 || v[2] % v[1] || v[3] < 1 || v[4] < 1 || v[5] < 2) {
      fprintf(stderr, "bench_cuda_gpt curve: CURVE_CFG must be \"layers heads width context batch vocab\", got \"%s\"\n", cc);
      return 2;
    }
    cfg.n_layer = v[0], cfg.n_head = v[1], cfg.n_embd = v[2], cfg.n_positions = v[3], cfg.vocab_size = v[5];
    shape[0] = v[4], shape[1] = v[3];
  }
  /* the runs: fp32 first, then CURVE_PRECS */
  char runs[CURVE_MAXRUN][160];
  int nrun = 0;
  snprintf(runs[nrun++], sizeof runs[0], "fp32");
  {
    const char *want = getenv("CURVE_PRECS");
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", want ? want : "bf16 bf16o");
    for (char *sv = NULL, *t = strtok_r(buf, " \t", &sv); t; t = strtok_r(NULL, " \t", &sv)) {
      if (nrun == CURVE_MAXRUN || strlen(t) >= sizeof runs[0]) {
        fprintf(stderr, "bench_cuda_gpt curve: too many runs or a run name too long in CURVE_PRECS\n");
        return 2;
      }
      if (!strcmp(t, "fp32")) continue; /* always the first run */
      size_t bl = strcspn(t, ",");
      if (!((bl == 4 && !strncmp(t, "bf16", 4)) || (bl == 5 && !strncmp(t, "bf16o", 5)))) {
        fprintf(stderr, "bench_cuda_gpt curve: a run is bf16 or bf16o with optional ,VAR=VALUE settings, got \"%s\"\n", t);
        return 2;
      }
      int nset = 0;
      for (const char *q = t + bl; *q == ','; q += 1 + strcspn(q + 1, ",")) {
        size_t len = strcspn(q + 1, ","), eq = strcspn(q + 1, "=");
        if (eq == 0 || eq >= len || ++nset > 8) {
          fprintf(stderr, "bench_cuda_gpt curve: up to 8 settings VAR=VALUE after the precision, in \"%s\"\n", t);
          return 2;
        }
      }
      snprintf(runs[nrun++], sizeof runs[0], "%s", t);
    }
  }
  int64_t probe[CURVE_MAXPROBE];
  int npr = 0;
  {
    const char *pe = getenv("CURVE_PROBE");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", pe ? pe : "");
    for (char *sv = NULL, *t = strtok_r(buf, " \t,", &sv); t; t = strtok_r(NULL, " \t,", &sv)) {
      char *end;
      long long v = strtoll(t, &end, 10);
      if (*end || v < 0 || v >= steps || npr == CURVE_MAXPROBE) {
        fprintf(stderr, "bench_cuda_gpt curve: CURVE_PROBE holds up to %d steps in [0, %lld), got \"%s\"\n",
                CURVE_MAXPROBE, (long long)steps, pe);
        return 2;
      }
      probe[npr++] = v;
    }
  }
  const char *lre = getenv("CURVE_LR");
  ct_generator *gd = ct_generator_new(7);
  ct_options oi = ct_opts_dtype(CT_INT64);
  ct_tensor *xc = ct_randint(0, cfg.vocab_size, 2, shape, &oi, gd),
            *yc = ct_randint(0, cfg.vocab_size, 2, shape, &oi, gd);
  if (!xc || !yc) DIE("batch");
  ct_tensor **W[CURVE_MAXPROBE] = {0}, **Gref[CURVE_MAXPROBE] = {0}; /* per probe: fp32 weights, fp32 gradients */
  ct_tensor **P = NULL, **W0 = NULL;
  ct_gpt *m = NULL;
  const ct_dict *pd = NULL;
  int64_t np = 0;
  for (int ri = 0; ri < nrun; ri++) {
    /* the run's settings: "bf16o,CT_X=1,CT_Y=2" */
    char rb[160], *set[8];
    int nset = 0;
    snprintf(rb, sizeof rb, "%s", runs[ri]);
    char *sv = NULL, *base = strtok_r(rb, ",", &sv);
    for (char *t = strtok_r(NULL, ",", &sv); t && nset < 8; t = strtok_r(NULL, ",", &sv)) {
      char *eq = strchr(t, '=');
      *eq = 0;
      if (setenv(t, eq + 1, 1)) DIE("setenv %s", t);
      set[nset++] = t;
    }
    bool bf = ri > 0, outs = !strcmp(base, "bf16o");
    if (ri == 0) { /* one model for every run: the initial weights kept (W0) and copied in before each */
      ct_generator *g = ct_generator_new(1337);
      m = ct_gpt_new_variant(&cfg, true, "tanh", g);
      ct_generator_free(g);
      if (!m) DIE("model");
      pd = ct_gpt_parameters(m);
      np = ct_dict_len(pd);
      /* the initial weights and the batch, for the PyTorch peer */
      ct_dict *d = ct_dict_new();
      for (int64_t i = 0; i < np; i++) ct_dict_set(d, ct_dict_name(pd, i), ct_dict_tensor(pd, i));
      ct_dict_set(d, "x", xc);
      ct_dict_set(d, "y", yc);
      if (ct_safetensors_save(path, d) != CT_OK) DIE("save %s", path);
      ct_dict_free(d);
      if (ct_gpt_to_device(m, dev) != CT_OK) DIE("to device");
      P = calloc((size_t)np, sizeof *P);
      W0 = calloc((size_t)np, sizeof *W0);
      bool pv = ct_set_grad_enabled(false);
      for (int64_t i = 0; i < np; i++)
        if (!(P[i] = ct_dict_tensor(pd, i)) || !(W0[i] = ct_clone(P[i]))) DIE("initial weights");
      ct_set_grad_enabled(pv);
    } else {
      bool pv = ct_set_grad_enabled(false);
      for (int64_t i = 0; i < np; i++)
        if (ct_copy_(P[i], W0[i]) != CT_OK) DIE("initial weights");
      ct_set_grad_enabled(pv);
    }
    ct_cuda_set_allow_tf32(false);
    ct_cuda_set_autocast_bf16(bf);
    ct_cuda_set_autocast_bf16_outputs(outs);
    ct_optim_options oo = ct_optim_defaults(CT_OPTIM_ADAMW);
    oo.lr = lre ? atof(lre) : 6e-4;
    oo.weight_decay = 0.1;
    ct_optim *opt = ct_optim_new(CT_OPTIM_ADAMW, np, P, &oo);
    ct_tensor *x = ct_to_device(xc, dev), *y = ct_to_device(yc, dev);
    if (!opt || !x || !y) DIE("optimizer");
    for (int64_t s = 0; s < steps; s++) {
      for (int k = 0; k < npr && ri == 0; k++)
        if (probe[k] == s && !W[k]) { /* the fp32 weights before step s: kept, and written for the peer */
          W[k] = calloc((size_t)np, sizeof *W[k]);
          Gref[k] = calloc((size_t)np, sizeof *Gref[k]);
          ct_dict *d = ct_dict_new();
          bool pv = ct_set_grad_enabled(false);
          for (int64_t i = 0; i < np; i++) {
            if (!(W[k][i] = ct_clone(P[i]))) DIE("probe snapshot");
            ct_tensor *h = ct_to_device(W[k][i], ct_cpu());
            if (!h) DIE("probe snapshot to host");
            ct_dict_set(d, ct_dict_name(pd, i), h);
            ct_release(h);
          }
          ct_set_grad_enabled(pv);
          char pp[4096];
          snprintf(pp, sizeof pp, "%s.p%lld", path, (long long)s);
          if (ct_safetensors_save(pp, d) != CT_OK) DIE("save %s", pp);
          ct_dict_free(d);
        }
      ct_scope *sc = ct_scope_begin();
      ct_tensor *loss = NULL;
      double l = 0;
      if (ct_gpt_forward(m, x, y, true, NULL, NULL, &loss) != CT_OK || ct_item_double(loss, &l) != CT_OK) DIE("forward");
      if (ct_backward(loss, NULL, false, false) != CT_OK) DIE("backward");
      ct_tensor *n = ct_clip_grad_norm_(np, P, 1.0, 2.0, false);
      double gn = 0;
      if (!n || ct_item_double(n, &gn) != CT_OK) DIE("clip");
      ct_release(n);
      if (ct_optim_step(opt) != CT_OK || ct_optim_zero_grad(opt, true) != CT_OK) DIE("step");
      printf("curve ctorch %s step %lld loss %.6f grad_norm %.4f\n", runs[ri], (long long)s, l, gn);
      ct_release(loss);
      ct_scope_end(sc);
    }
    fflush(stdout);
    for (int k = 0; k < npr; k++)
      if (W[k]) curve_probe(runs[ri], m, opt, P, np, W[k], Gref[k], ri == 0, x, y, probe[k]);
    ct_cuda_set_autocast_bf16(false);
    ct_cuda_set_autocast_bf16_outputs(false);
    for (int k = 0; k < nset; k++) unsetenv(set[k]);
    ct_release(x);
    ct_release(y);
    ct_optim_free(opt);
  }
  for (int64_t i = 0; i < np; i++) ct_release(W0[i]);
  free(W0);
  free(P);
  ct_gpt_free(m);
  for (int k = 0; k < npr; k++) {
    for (int64_t i = 0; W[k] && i < np; i++) {
      ct_release(W[k][i]);
      ct_release(Gref[k][i]);
    }
    free(W[k]);
    free(Gref[k]);
  }
  ct_release(xc);
  ct_release(yc);
  ct_generator_free(gd);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "mm")) return ct_cuda_is_available() ? bench_mm() : 0;
  if (argc >= 3 && !strcmp(argv[1], "curve")) return bench_curve(argv[2], argc > 3 ? atoll(argv[3]) : 10);
  if (argc >= 2 && !strcmp(argv[1], "attn"))
    return ct_cuda_is_available() ? bench_attn(argc > 2 ? atoll(argv[2]) : 16, argc > 3 ? atoll(argv[3]) : 12,
                                               argc > 4 ? atoll(argv[4]) : 1024, argc > 5 ? atoll(argv[5]) : 64)
                                  : 0;
  if (argc >= 2 && !strcmp(argv[1], "resnet224")) {
    if (!ct_cuda_is_available()) {
      printf("bench_cuda_gpt: skipped: %s\n", ct_cuda_unavailable_reason());
      return 0;
    }
    return bench_resnet224(argc > 2 ? atoll(argv[2]) : 1, argc > 3 ? atoll(argv[3]) : 50);
  }
  if (argc >= 2 && !strcmp(argv[1], "resnet")) {
    if (!ct_cuda_is_available()) {
      printf("bench_cuda_gpt: skipped: %s\n", ct_cuda_unavailable_reason());
      return 0;
    }
    bool tf32 = false, graph = false, none = true, cl = false;
    int reps = 1;
    for (int i = 4; i < argc; i++) {
      if (!strncmp(argv[i], "reps=", 5)) reps = atoi(argv[i] + 5);
      cl |= !strcmp(argv[i], "cl");
      graph |= !strcmp(argv[i], "graph");
      tf32 |= !strcmp(argv[i], "tf32");
      if (!strcmp(argv[i], "inplace")) none = false;
    }
    ct_cuda_set_allow_tf32(tf32); /* TF32 convolutions: PyTorch's default (cudnn.allow_tf32) */
    return bench_resnet(argc > 2 ? atoll(argv[2]) : 16, argc > 3 ? atoll(argv[3]) : 20, graph, none, cl, reps);
  }
  int64_t L = 12, H = 12, C = 768, T = 1024, B = 16, V = 50257, steps = 10;
  if (argc >= 8) {
    L = atoll(argv[1]);
    H = atoll(argv[2]);
    C = atoll(argv[3]);
    T = atoll(argv[4]);
    B = atoll(argv[5]);
    V = atoll(argv[6]);
    steps = atoll(argv[7]);
  }
  const char *def[4] = {"tf32", "bf16", "tf32+graph", "bf16+graph"};
  int np_ = argc > 8 ? argc - 8 : 4;
  const char **prec = argc > 8 ? (const char **)argv + 8 : def;
  if (!ct_cuda_is_available()) {
    printf("bench_cuda_gpt: skipped: %s\n", ct_cuda_unavailable_reason());
    return 0;
  }
  ct_device dev = ct_cuda(0);
  ct_gpt_config cfg = {V, T, C, L, H, 0.0, 1e-5};
  ct_generator *g = ct_generator_new(1337);
  ct_gpt *m = ct_gpt_new_variant(&cfg, true, "tanh", g);
  if (!m || ct_gpt_to_device(m, dev) != CT_OK) DIE("model");
  const ct_dict *pd = ct_gpt_parameters(m);
  int64_t np = ct_dict_len(pd);
  ct_tensor **P = calloc((size_t)np, sizeof *P);
  for (int64_t i = 0; i < np; i++) P[i] = ct_dict_tensor(pd, i);
  ct_optim_options oo = ct_optim_defaults(CT_OPTIM_ADAMW);
  oo.lr = 6e-4;
  oo.weight_decay = 0.1;
  ct_optim *opt = ct_optim_new(CT_OPTIM_ADAMW, np, P, &oo);
  if (!opt) DIE("optimizer");
  int64_t shape[2] = {B, T};
  ct_options io = ct_opts_dtype(CT_INT64);
  io.device = dev;
  ct_tensor *x = ct_randint(0, V, 2, shape, &io, g), *y = ct_randint(0, V, 2, shape, &io, g);
  if (!x || !y) DIE("batch");
  printf("GPT: %lld layers, %lld heads, width %lld, context %lld, batch %lld, vocab %lld: %.1fM parameters on %s\n",
         (long long)L, (long long)H, (long long)C, (long long)T, (long long)B, (long long)V,
         (double)ct_gpt_num_params(m) / 1e6, ct_cuda_device_name(0));
  for (int pi = 0; pi < np_; pi++) {
    const char *p = prec[pi];
    ct_cuda_set_allow_tf32(!strncmp(p, "tf32", 4));
    ct_cuda_set_autocast_bf16(!strncmp(p, "bf16", 4));
    ct_cuda_set_autocast_bf16_outputs(!strncmp(p, "bf16o", 5)); /* PyTorch-style: bfloat16 activations */
    double t0 = 0, last = 0;
    if (strstr(p, "graph")) {
      gstep c = {m, x, y, NULL, P, np};
      ct_cuda_graph *gr = NULL;
      if (fwd_bwd(&c) != CT_OK || ct_optim_step(opt) != CT_OK || ct_optim_zero_grad(opt, false) != CT_OK) DIE("warm-up");
      if (!(gr = ct_cuda_graph_capture(0, fwd_bwd, &c))) DIE("capture (%s)", p);
      for (int64_t s = 0; s < steps + 1; s++) {
        if (s == 1) {
          ct_cuda_synchronize(0);
          t0 = now();
        }
        if (ct_cuda_graph_replay(gr) != CT_OK || ct_optim_step(opt) != CT_OK || ct_optim_zero_grad(opt, false) != CT_OK)
          DIE("replay");
      }
      ct_cuda_synchronize(0);
      ct_item_double(c.loss, &last);
      double ms = (now() - t0) * 1e3 / (double)steps;
      printf("ctorch  %-10s train step %9.2f ms  (%.0f tokens/s, last loss %.4f; %lld graph nodes)\n", p, ms,
             (double)(B * T) / ms * 1e3, last, (long long)ct_cuda_graph_num_nodes(gr));
      fflush(stdout);
      ct_cuda_graph_free(gr);
      ct_release(c.loss);
      continue;
    }
    /* "+parts": the device synchronised after each phase (forward, backward, clipping, AdamW +
     * zero_grad) and each phase timed; "+fwd": forward (with autograd) alone, for a per-op
     * profile (CT_CUDA_OP_PROFILE=1) of the forward that the full step's profile minus it splits */
    bool parts = strstr(p, "+parts") != NULL, fwd_only = strstr(p, "+fwd") != NULL;
    double ph[4] = {0, 0, 0, 0}, tp = 0;
    for (int64_t s = 0; s < steps + 2; s++) {
      if (s == 2) {
        ct_cuda_synchronize(0);
        t0 = now();
        memset(ph, 0, sizeof ph);
      }
      if (parts) tp = now();
#define PHASE(i)               \
  if (parts) {                 \
    ct_cuda_synchronize(0);    \
    double t_ = now();         \
    ph[i] += t_ - tp;          \
    tp = t_;                   \
  }
      ct_scope *sc = ct_scope_begin();
      ct_tensor *loss = NULL;
      if (ct_gpt_forward(m, x, y, true, NULL, NULL, &loss) != CT_OK) DIE("forward (%s)", p);
      PHASE(0)
      if (!fwd_only) {
        if (ct_backward(loss, NULL, false, false) != CT_OK) DIE("backward (%s)", p);
        PHASE(1)
        ct_tensor *n = ct_clip_grad_norm_(np, P, 1.0, 2.0, false);
        if (!n) DIE("clip");
        ct_release(n);
        PHASE(2)
        if (ct_optim_step(opt) != CT_OK || ct_optim_zero_grad(opt, true) != CT_OK) DIE("step");
        PHASE(3)
      }
#undef PHASE
      if (s == steps + 1) ct_item_double(loss, &last);
      ct_release(loss);
      ct_scope_end(sc);
    }
    ct_cuda_synchronize(0);
    double ms = (now() - t0) * 1e3 / (double)steps;
    printf("ctorch  %-5s train step %9.2f ms  (%.0f tokens/s, last loss %.4f)\n", p, ms, (double)(B * T) / ms * 1e3, last);
    if (parts)
      printf("ctorch  %-5s parts (synchronised): forward %.2f ms, backward %.2f ms, clip %.2f ms, AdamW+zero_grad %.2f ms\n",
             p, ph[0] * 1e3 / (double)steps, ph[1] * 1e3 / (double)steps, ph[2] * 1e3 / (double)steps,
             ph[3] * 1e3 / (double)steps);
    fflush(stdout);
  }
  ct_memory_stats ms = ct_memory_get_stats(dev);
  printf("ctorch  peak device memory %.2f GB\n", (double)ms.peak_allocated_bytes / 1e9);
  ct_optim_free(opt);
  ct_gpt_free(m);
  ct_generator_free(g);
  free(P);
  return 0;
}
