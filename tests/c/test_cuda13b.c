/* Session 13b (issue 7): the fused cross-entropy behind ct_cross_entropy_unchecked on CUDA (CT_CUDA_CE_FUSED),
 * the elementwise kernels as programmatic dependent launches (CT_CUDA_EW_PDL) and the ResNet downsample branch's
 * forward on a second stream (CT_CUDA_DS_FORK), each against its switch-off path and the CPU. The switches are
 * read at each call, so the tests set them around each run. Skipped without a CUDA device. */
#include "test.h"
#include "ctorch/cuda.h"
#include "ctorch/models.h"
#include "ctorch/train.h"
#include "resnet_step_fixture.h"
#include <stdlib.h>
#include <string.h>

CT_GPU_GROUP(cuda13b)
#define CUDA13B_TEST(name) CT_GPU_TEST(cuda13b, name)

#ifdef CT_HAVE_CUDA
int64_t ct_cuda_ew_pdl_count(void);
void ct_cuda_region_counts(int64_t out[2]);
int ct_cuda_side_pending(int dev);
const char *ct_cuda_cudnn_info(void);
#define EW_PDL_COUNT() ct_cuda_ew_pdl_count()
static void region_counts(int64_t out[2]) { ct_cuda_region_counts(out); }
#define SIDE_PENDING() ((int64_t)ct_cuda_side_pending(0))
#else /* never reached: the GPU tests are skipped without CUDA */
#define EW_PDL_COUNT() ((int64_t)0)
static void region_counts(int64_t out[2]) { out[0] = out[1] = 0; }
#define SIDE_PENDING() ((int64_t)0)
#endif


/* ct_cross_entropy_unchecked (the classifier step's loss) on CUDA: the fused kernels (default) against the one-hot
 * form (CT_CUDA_CE_FUSED=0) and the CPU, loss and dlogits, with valid targets and with targets outside [0, C)
 * (10, -1, -100: zero rows that still count in the mean, as the one-hot form). The fused node ran (its name). */
CUDA13B_TEST(ce_fused) {
  ct_scope *s = ct_scope_begin();
  char *saved = tt_env_save("CT_CUDA_CE_FUSED");
  uint64_t rs = 1331;
  int64_t N = 16, C = 10, xs[2] = {N, C};
  ct_tensor *x0 = tt_rand(&rs, 2, xs, CT_FLOAT32, 3, 0.1, false);
  for (int bad = 0; bad < 2; bad++) {
    int64_t tv[16];
    for (int i = 0; i < N; i++) tv[i] = (i * 7 + 3) % C;
    if (bad) tv[3] = 10, tv[5] = -1, tv[9] = -100;
    ct_options io = ct_opts();
    io.dtype = CT_INT64;
    ct_tensor *t0 = ct_from_buffer(tv, CT_INT64, 1, &N, io);
    ct_tensor *loss[3] = {0}, *gx[3] = {0};
    const char *name[3] = {0};
    for (int run = 0; run < 3; run++) { /* 0: CPU, 1: CUDA one-hot form, 2: CUDA fused (default) */
      ct_device dev = run ? ct_cuda(0) : ct_cpu();
      tt_env_set("CT_CUDA_CE_FUSED", run == 1 ? "0" : NULL);
      ct_tensor *x = tt_leaf(x0, dev, false, true), *t = ct_to_device(t0, dev);
      ct_tensor *l = x && t ? ct_cross_entropy_unchecked(x, t) : NULL;
      CHECK(l && ct_backward(l, NULL, false, false) == CT_OK);
      name[run] = l ? ct_grad_fn_name(l) : NULL;
      loss[run] = l ? ct_to_device(l, ct_cpu()) : NULL;
      gx[run] = x && ct_grad(x) ? ct_to_device(ct_grad(x), ct_cpu()) : NULL;
    }
    if (!(loss[0] && loss[1] && loss[2] && gx[0] && gx[1] && gx[2])) {
      ct_test_fail(__FILE__, __LINE__, "bad %d: a result is missing", bad);
      continue;
    }
    if (!name[2] || strcmp(name[2], "NllLossBackward0") != 0 || (name[1] && strcmp(name[1], "NllLossBackward0") == 0))
      ct_test_fail(__FILE__, __LINE__, "bad %d: the fused node did not run (fused %s, one-hot %s)", bad, name[2] ? name[2] : "-",
                   name[1] ? name[1] : "-");
    tt_same_as_cpu(__FILE__, __LINE__, "cuda", "fused unchecked CE loss vs CPU", loss[0], loss[2], 1e-6, 1e-6);
    tt_same_as_cpu(__FILE__, __LINE__, "cuda", "fused unchecked CE dlogits vs CPU", gx[0], gx[2], 1e-6, 1e-7);
    tt_same_as_cpu(__FILE__, __LINE__, "cuda", "one-hot CE loss vs CPU", loss[0], loss[1], 1e-6, 1e-6);
    if (!tt_allclose(loss[2], loss[1], 1e-6, 1e-6) || !tt_allclose(gx[2], gx[1], 1e-6, 1e-7))
      ct_test_fail(__FILE__, __LINE__, "bad %d: the fused form differs from the one-hot form", bad);
  }
  tt_env_restore("CT_CUDA_CE_FUSED", saved);
  ct_scope_end(s);
}

/* The elementwise fast-path kernel as a programmatic dependent: a chain of dependent elementwise ops (each reads
 * the one before, so a launch that did not wait would show), forward and backward, channels-last ResNet-sized and
 * odd-sized (scalar loop) operands: equal to the ordinary launches' to the bit and to the CPU's; the attribute was
 * used, and not with CT_CUDA_EW_PDL=0. */
CUDA13B_TEST(ew_pdl) {
  ct_scope *s = ct_scope_begin();
  char *saved = tt_env_save("CT_CUDA_EW_PDL");
  uint64_t rs = 777;
  int64_t shapes[2][4] = {{16, 64, 8, 8}, {3, 5, 7, 11}};
  for (int si = 0; si < 2; si++) {
    ct_tensor *a0 = tt_rand(&rs, 4, shapes[si], CT_FLOAT32, 1, 0.1, false), *b0 = tt_rand(&rs, 4, shapes[si], CT_FLOAT32, 1, 0, false);
    ct_tensor *res[3][3];
    memset(res, 0, sizeof res);
    int64_t used[3];
    for (int run = 0; run < 3; run++) { /* 0: CPU, 1: CUDA PDL off, 2: CUDA PDL on (default) */
      ct_device dev = run ? ct_cuda(0) : ct_cpu();
      tt_env_set("CT_CUDA_EW_PDL", run == 1 ? "0" : NULL);
      ct_tensor *a = tt_leaf(a0, dev, si == 0, true), *b = tt_leaf(b0, dev, si == 0, true);
      int64_t p0 = EW_PDL_COUNT();
      ct_tensor *y = a && b ? ct_mul(a, b) : NULL;
      for (int k = 0; k < 4 && y; k++) y = ct_relu(ct_sub(ct_add(y, a), b));
      CHECK(y && ct_backward(ct_sum(ct_mul(y, y)), NULL, false, false) == CT_OK);
      if (run) ct_cuda_synchronize(0);
      used[run] = EW_PDL_COUNT() - p0;
      const ct_tensor *all[3] = {y, a ? ct_grad(a) : NULL, b ? ct_grad(b) : NULL};
      for (int k = 0; k < 3; k++) res[run][k] = all[k] ? ct_to_device(all[k], ct_cpu()) : NULL;
    }
    if (used[1] != 0 || used[2] < 12)
      ct_test_fail(__FILE__, __LINE__, "shape %d: elementwise PDL launches off/on = %lld/%lld", si, (long long)used[1], (long long)used[2]);
    static const char *nm[3] = {"y", "da", "db"};
    for (int k = 0; k < 3; k++) {
      if (!(res[0][k] && res[1][k] && res[2][k])) {
        ct_test_fail(__FILE__, __LINE__, "shape %d: %s missing", si, nm[k]);
        continue;
      }
      if (!tt_allclose(res[2][k], res[1][k], 0, 0))
        ct_test_fail(__FILE__, __LINE__, "shape %d: %s with elementwise PDL differs from ordinary launches", si, nm[k]);
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", nm[k], res[0][k], res[2][k], 1e-6, 1e-6);
    }
  }
  tt_env_restore("CT_CUDA_EW_PDL", saved);
  ct_scope_end(s);
}

/* The ResNet-18 CIFAR step (channels-last, TF32, SGD momentum, as the bench): [0] eager with the downsample fork and
 * the elementwise PDL off, [1] eager with the defaults, [2] the defaults captured as a CUDA graph (after one eager
 * step) and replayed: losses and every weight after each step equal to the bit; 3 forked regions per step (the
 * three downsample branches), none cut short, nothing pending after a synchronize. [3] eager with every session-13b
 * switch off (the one-hot cross-entropy too): losses within 1e-5 of [1] (the loss alone is computed another way).
 * And the forward in training mode with the fork against the CPU's (TF32 off; 20 convolutions in float32). */
static void all_13b(const char *v, bool ce_too) {
  tt_env_set("CT_CUDA_DS_FORK", v);
  tt_env_set("CT_CUDA_EW_PDL", v);
  tt_env_set("CT_CUDA_CE_FUSED", ce_too ? v : NULL);
}
CUDA13B_TEST(resnet_step_fork) {
  ct_scope *s = ct_scope_begin();
  bool tf32 = ct_cuda_allow_tf32();
  char *s1 = tt_env_save("CT_CUDA_DS_FORK"), *s2 = tt_env_save("CT_CUDA_EW_PDL"), *s3 = tt_env_save("CT_CUDA_CE_FUSED");
  bool have_cudnn = false;
#ifdef CT_HAVE_CUDA
  have_cudnn = strncmp(ct_cuda_cudnn_info(), "cuDNN 9", 7) == 0;
  if (!have_cudnn) printf("test_cuda13b resnet_step_fork: no region counts checked: %s\n", ct_cuda_cudnn_info());
#endif
  /* the forward against the CPU (the fork on, TF32 off) */
  ct_cuda_set_allow_tf32(false);
  all_13b(NULL, false);
  {
    int64_t B = 4, xs[4] = {B, 3, 32, 32};
    uint64_t rs = 99;
    ct_tensor *xc = tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0, false);
    ct_manual_seed(7);
    ct_module *mc = ct_resnet18_cifar_new(10);
    ct_manual_seed(7);
    ct_module *mg = ct_resnet18_cifar_new(10);
    CHECK(mc && mg && ct_module_to_device(mg, ct_cuda(0)) == CT_OK);
    if (mc && mg) {
      CHECK_OK(ct_module_to_channels_last(mg));
      ct_module_train(mc, true);
      ct_module_train(mg, true);
      int64_t r0[2], r1[2];
      region_counts(r0);
      ct_tensor *xg0 = ct_to_device(xc, ct_cuda(0)), *xg = xg0 ? ct_to_channels_last(xg0) : NULL;
      ct_tensor *oc = ct_module_forward(mc, xc), *og = xg ? ct_module_forward(mg, xg) : NULL;
      ct_cuda_synchronize(0);
      region_counts(r1);
      CHECK(oc && og);
      if (have_cudnn && (r1[0] - r0[0] != 3 || r1[1] != r0[1]))
        ct_test_fail(__FILE__, __LINE__, "forward: %lld regions, %lld cut (expected 3, 0)", (long long)(r1[0] - r0[0]), (long long)(r1[1] - r0[1]));
      if (oc && og) tt_same_as_cpu(__FILE__, __LINE__, "cuda", "resnet18 forward with the downsample fork", oc, ct_to_device(og, ct_cpu()), 1e-3, 1e-3);
    }
    ct_module_free(mc);
    ct_module_free(mg);
  }
  ct_cuda_set_allow_tf32(true); /* as the bench */
  enum { STEPS = 3 };
  int64_t B = 8;
  ct_tensor *bx[STEPS + 1], *by[STEPS + 1];
  rn_step_batches(1314, B, STEPS + 1, bx, by);
  rn_step r[4]; /* tests/c/resnet_step_fixture.h */
  memset(r, 0, sizeof r);
  int64_t g0[2], g1[2], g2[2];
  region_counts(g0);
  for (int d = 0; d < 4; d++) {
    all_13b(d == 0 ? "0" : d == 3 ? "0" : NULL, d == 3);
    if (!rn_step_init(&r[d], 13, true, bx[0], by[0])) break;
    CHECK_OK(rn_step_run(&r[d]));
  }
  ct_cuda_synchronize(0);
  region_counts(g1);
  /* models 1 and 2 forked (3 regions each), 0 and 3 did not */
  if (have_cudnn && (g1[0] - g0[0] != 6 || g1[1] != g0[1]))
    ct_test_fail(__FILE__, __LINE__, "eager: %lld regions, %lld cut (expected 6, 0)", (long long)(g1[0] - g0[0]), (long long)(g1[1] - g0[1]));
  CHECK(SIDE_PENDING() == 0);
  all_13b(NULL, true);
  ct_cuda_graph *g = r[2].opt ? ct_cuda_graph_capture(0, rn_step_run, &r[2]) : NULL;
  if (!g) ct_test_fail(__FILE__, __LINE__, "resnet step capture with the session-13b paths failed: %s", ct_last_error());
  region_counts(g2);
  if (g) {
    if (have_cudnn && (g2[0] - g1[0] != 3 || g2[1] != g1[1]))
      ct_test_fail(__FILE__, __LINE__, "capture: %lld regions, %lld cut (expected 3, 0)", (long long)(g2[0] - g1[0]), (long long)(g2[1] - g1[1]));
    for (int k = 1; k <= STEPS; k++) {
      for (int d = 0; d < 4; d++) {
        CHECK_OK(ct_copy_(r[d].x, bx[k]));
        CHECK_OK(ct_copy_(r[d].y, by[k]));
      }
      all_13b("0", false);
      CHECK_OK(rn_step_run(&r[0]));
      all_13b(NULL, true);
      CHECK_OK(rn_step_run(&r[1]));
      CHECK_OK(ct_cuda_graph_replay(g));
      all_13b("0", true);
      CHECK_OK(rn_step_run(&r[3]));
      all_13b(NULL, true);
      ct_tensor *l0 = ct_to_device(r[0].loss, ct_cpu()), *l1 = ct_to_device(r[1].loss, ct_cpu()), *l2 = ct_to_device(r[2].loss, ct_cpu());
      ct_tensor *l3 = ct_to_device(r[3].loss, ct_cpu());
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "eager loss, 13b switches on vs off", l0, l1, 0, 0);
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "graph replay loss vs eager", l1, l2, 0, 0);
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "eager loss, one-hot CE and all off vs defaults", l1, l3, 1e-4, 1e-5);
    }
    int64_t bad01 = rn_step_weights_differ(&r[0], &r[1]), bad12 = rn_step_weights_differ(&r[1], &r[2]);
    if (bad01 || bad12)
      ct_test_fail(__FILE__, __LINE__, "weights after %d steps: %lld differ on vs off (eager), %lld graph vs eager", STEPS, (long long)bad01,
                   (long long)bad12);
    ct_cuda_synchronize(0);
    CHECK(SIDE_PENDING() == 0);
  }
  ct_cuda_graph_free(g);
  for (int d = 0; d < 4; d++) rn_step_free(&r[d]);
  tt_env_restore("CT_CUDA_DS_FORK", s1);
  tt_env_restore("CT_CUDA_EW_PDL", s2);
  tt_env_restore("CT_CUDA_CE_FUSED", s3);
  ct_cuda_set_allow_tf32(tf32);
  ct_scope_end(s);
}
