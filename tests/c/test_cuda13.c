/* Session 13 (issue 7): the two-stream convolution backward (k_cudnn.cu, CT_CUDA_CONV_2STREAM) and the
 * programmatic dependent launches of the channels-last batch norm (k_bn.cu, CT_CUDA_BN_PDL), each against its
 * switch-off path (equal to the bit: the same kernels on the same operands, only the ordering between them
 * changes) and against the CPU (float32 accumulation-order tolerances), eagerly and inside a CUDA graph.
 * The switches are read at each call, so the tests set them around each run. Skipped without a CUDA device. */
#include "test.h"
#include "ctorch/cuda.h"
#include "ctorch/models.h"
#include "ctorch/train.h"
#include "resnet_step_fixture.h"
#include <stdlib.h>
#include <string.h>

CT_GPU_GROUP(cuda13)
#define CUDA13_TEST(name) CT_GPU_TEST(cuda13, name)

#ifdef CT_HAVE_CUDA
int64_t ct_cuda_conv2s_count(void);
int64_t ct_cuda_conv2s_forks(void);
int64_t ct_cuda_bn_pdl_count(void);
int64_t ct_cuda_cudnn_calls(void);
const char *ct_cuda_cudnn_info(void);
int ct_cuda_side_pending(int dev);
#define C2S_COUNT() ct_cuda_conv2s_count()
#define SIDE_PENDING() ((int64_t)ct_cuda_side_pending(0))
#define PDL_COUNT() ct_cuda_bn_pdl_count()
#define CUDNN_CALLS() ct_cuda_cudnn_calls()
#else /* never reached: the GPU tests are skipped without CUDA */
#define C2S_COUNT() ((int64_t)0)
#define SIDE_PENDING() ((int64_t)0)
#define PDL_COUNT() ((int64_t)0)
#define CUDNN_CALLS() ((int64_t)0)
#endif

/* Two convolutions with a ReLU between (the second's input gradient feeds the first's backward, so a wrong join
 * shows), default layout and channels-last, strides 1 and 2, 3x3 and 1x1: the gradients of x, w1, w2 with the
 * two-stream path equal the one-stream path's to the bit, and the CPU's within 1e-4 (sums of up to 9 C products
 * in another order); the weight gradients ran on the second stream (one per convolution whose input needs a
 * gradient: both here). */
CUDA13_TEST(conv_two_stream) {
  ct_scope *s = ct_scope_begin();
  bool tf32 = ct_cuda_allow_tf32();
  ct_cuda_set_allow_tf32(false);
  const char *old = getenv("CT_CUDA_CONV_2STREAM");
  char *saved = old ? strdup(old) : NULL;
  uint64_t rs = 1313;
  struct { int64_t N, Ci, Cm, Co, H, k, stride; } cs[3] = {{4, 8, 16, 16, 9, 3, 1}, {3, 16, 32, 8, 8, 3, 2}, {2, 64, 64, 32, 6, 1, 1}};
  bool have_cudnn = false; /* without cuDNN the direct kernels run and nothing goes to the second stream */
#ifdef CT_HAVE_CUDA
  have_cudnn = strncmp(ct_cuda_cudnn_info(), "cuDNN 9", 7) == 0;
  if (!have_cudnn) printf("test_cuda13 conv_two_stream: no second-stream counts checked: %s\n", ct_cuda_cudnn_info());
#endif
  for (int ci = 0; ci < 3; ci++)
    for (int cl = 0; cl < 2; cl++) {
      int64_t N = cs[ci].N, Ci = cs[ci].Ci, Cm = cs[ci].Cm, Co = cs[ci].Co, H = cs[ci].H, k = cs[ci].k;
      int64_t xs[4] = {N, Ci, H, H}, w1s[4] = {Cm, Ci, k, k}, w2s[4] = {Co, Cm, k, k};
      int64_t st[2] = {cs[ci].stride, cs[ci].stride}, pd[2] = {k / 2, k / 2};
      ct_tensor *x0 = tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0.2, false), *w10 = tt_rand(&rs, 4, w1s, CT_FLOAT32, 0.3, 0, false);
      ct_tensor *w20 = tt_rand(&rs, 4, w2s, CT_FLOAT32, 0.3, 0, false);
      ct_tensor *gx[4], *gw1[4], *gw2[4];
      int64_t side[4], pend[4];
      for (int run = 0; run < 4; run++) { /* 0: CPU, 1: CUDA one stream, 2: two streams joined at once, 3: left unjoined */
        ct_device dev = run ? ct_cuda(0) : ct_cpu();
        tt_env_set("CT_CUDA_CONV_2STREAM", run == 1 ? "0" : run == 2 ? "1" : "2");
        ct_tensor *x = tt_leaf(x0, dev, cl && run, true), *w1 = tt_leaf(w10, dev, cl && run, true), *w2 = tt_leaf(w20, dev, cl && run, true);
        int64_t c0 = C2S_COUNT();
        pend[run] = 0;
        /* twice without zeroing: the second backward adds dw into the existing gradients (an op reading the dw
         * that the second stream writes: the join must come first) */
        for (int rep = 0; rep < 2; rep++) {
          ct_tensor *h = ct_relu(ct_conv2d(x, w1, NULL, st, pd, NULL, 1));
          ct_tensor *y = h ? ct_conv2d(h, w2, NULL, NULL, pd, NULL, 1) : NULL;
          ct_tensor *r = y ? ct_cos(y) : NULL; /* a gradient that differs per element */
          CHECK(r && ct_backward(ct_sum(ct_mul(r, y)), NULL, false, false) == CT_OK);
          pend[run] += SIDE_PENDING();
        }
        ct_cuda_synchronize(0);
        CHECK(SIDE_PENDING() == 0);
        side[run] = C2S_COUNT() - c0;
        gx[run] = ct_grad(x) ? ct_to_device(ct_grad(x), ct_cpu()) : NULL;
        gw1[run] = ct_grad(w1) ? ct_to_device(ct_grad(w1), ct_cpu()) : NULL;
        gw2[run] = ct_grad(w2) ? ct_to_device(ct_grad(w2), ct_cpu()) : NULL;
        CHECK(gx[run] && gw1[run] && gw2[run]);
      }
      bool all = true;
      for (int run = 0; run < 4; run++) all = all && gx[run] && gw1[run] && gw2[run];
      if (!all) continue;
      if (side[1] != 0) ct_test_fail(__FILE__, __LINE__, "case %d cl %d: the switched-off path ran %lld weight gradients on the second stream", ci, cl, (long long)side[1]);
      for (int run = 2; run < 4 && have_cudnn; run++)
        if (side[run] != 4)
          ct_test_fail(__FILE__, __LINE__, "case %d cl %d mode %d: %lld weight gradients on the second stream, expected 4", ci, cl, run - 1,
                       (long long)side[run]);
      if (have_cudnn && pend[3] < 1) /* the unjoined mode left work pending at the end of each backward */
        ct_test_fail(__FILE__, __LINE__, "case %d cl %d: nothing was left pending after the backward (%lld)", ci, cl, (long long)pend[3]);
      for (int run = 2; run < 4; run++) {
        if (!tt_allclose(gx[run], gx[1], 0, 0) || !tt_allclose(gw1[run], gw1[1], 0, 0) || !tt_allclose(gw2[run], gw2[1], 0, 0))
          ct_test_fail(__FILE__, __LINE__, "case %d cl %d: two-stream (mode %d) gradients differ from the one-stream path's", ci, cl, run - 1);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", "conv2 two-stream dx", gx[0], gx[run], 1e-4, 1e-4);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", "conv2 two-stream dw1", gw1[0], gw1[run], 1e-4, 1e-4);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", "conv2 two-stream dw2", gw2[0], gw2[run], 1e-4, 1e-4);
      }
    }
  tt_env_set("CT_CUDA_CONV_2STREAM", saved);
  free(saved);
  ct_cuda_set_allow_tf32(tf32);
  ct_scope_end(s);
}

/* Channels-last batch norm (training, weight and bias, ReLU fused and not) forward and backward with the finish
 * and apply kernels as programmatic dependents (CT_CUDA_BN_PDL=1, the default) and the sums too (2): y, dx, dw,
 * db and the running statistics equal the ordinary launches' (0) to the bit and the CPU's within 1e-5; the
 * attribute was used. Shapes: ResNet's [16, 64, 8, 8] (4-wide loads) and [4, 10, 5, 5] (1-wide). */
CUDA13_TEST(bn_pdl) {
  ct_scope *s = ct_scope_begin();
  const char *old = getenv("CT_CUDA_BN_PDL");
  char *saved = old ? strdup(old) : NULL;
  uint64_t rs = 4242;
  int64_t shapes[2][4] = {{16, 64, 8, 8}, {4, 10, 5, 5}};
  for (int si = 0; si < 2; si++) {
    int64_t C = shapes[si][1];
    ct_tensor *x0 = tt_rand(&rs, 4, shapes[si], CT_FLOAT32, 1.5, 0.3, false), *g0 = tt_rand(&rs, 4, shapes[si], CT_FLOAT32, 1, 0, false);
    ct_tensor *w0 = tt_rand(&rs, 1, &C, CT_FLOAT32, 0.5, 1, false), *b0 = tt_rand(&rs, 1, &C, CT_FLOAT32, 0.5, 0, false);
    for (int relu = 0; relu < 2; relu++) {
      ct_tensor *res[4][6];
      memset(res, 0, sizeof res);
      int64_t pdl_used[4];
      for (int run = 0; run < 4; run++) { /* 0: CPU, 1: CUDA PDL off, 2: PDL 1, 3: PDL 2 */
        ct_device dev = run ? ct_cuda(0) : ct_cpu();
        tt_env_set("CT_CUDA_BN_PDL", run == 1 ? "0" : run == 2 ? "1" : "2");
        ct_tensor *x = tt_leaf(x0, dev, run > 0, true), *w = tt_leaf(w0, dev, false, true), *b = tt_leaf(b0, dev, false, true);
        ct_tensor *g = ct_to_device(g0, dev);
        ct_options o = ct_opts();
        o.device = dev;
        ct_tensor *rm = ct_zeros(1, &C, o), *rv = ct_ones(1, &C, o);
        int64_t p0 = PDL_COUNT();
        ct_tensor *y = ct_batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
        if (y && relu) y = ct_relu(y);
        CHECK(y && ct_backward(ct_sum(ct_mul(y, g)), NULL, false, false) == CT_OK);
        ct_cuda_synchronize(0);
        pdl_used[run] = PDL_COUNT() - p0;
        const ct_tensor *all[6] = {y, ct_grad(x), ct_grad(w), ct_grad(b), rm, rv};
        for (int k = 0; k < 6; k++) res[run][k] = all[k] ? ct_to_device(all[k], ct_cpu()) : NULL;
      }
      static const char *nm[6] = {"y", "dx", "dweight", "dbias", "running_mean", "running_var"};
      if (pdl_used[1] != 0 || pdl_used[2] < 3 || pdl_used[3] < pdl_used[2] + 1)
        ct_test_fail(__FILE__, __LINE__, "shape %d relu %d: PDL launches off/1/2 = %lld/%lld/%lld", si, relu, (long long)pdl_used[1],
                     (long long)pdl_used[2], (long long)pdl_used[3]);
      for (int k = 0; k < 6; k++) {
        if (!(res[0][k] && res[1][k] && res[2][k] && res[3][k])) {
          ct_test_fail(__FILE__, __LINE__, "shape %d relu %d: %s missing", si, relu, nm[k]);
          continue;
        }
        for (int run = 2; run < 4; run++)
          if (!tt_allclose(res[run][k], res[1][k], 0, 0))
            ct_test_fail(__FILE__, __LINE__, "shape %d relu %d: %s with CT_CUDA_BN_PDL=%d differs from ordinary launches", si, relu, nm[k], run - 1);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", nm[k], res[0][k], res[2][k], 1e-5, 1e-5);
      }
    }
  }
  tt_env_set("CT_CUDA_BN_PDL", saved);
  free(saved);
  ct_scope_end(s);
}

/* The ResNet-18 CIFAR step (channels-last, SGD momentum, as the bench) four ways: [0] eager with both new paths
 * off, [1] eager with the defaults, [2] the defaults captured as a CUDA graph after one eager step and replayed,
 * [3] eager with the second stream joined at once (CT_CUDA_CONV_2STREAM=1). Losses and every weight after each
 * step equal to the bit across all four; the graph used both paths (the weight gradients on the second stream:
 * 19 of the 20 convolutions, the stem's input needing no gradient). */
static void both_switches(const char *v) {
  tt_env_set("CT_CUDA_CONV_2STREAM", v);
  tt_env_set("CT_CUDA_BN_PDL", v);
}
CUDA13_TEST(resnet_step_graph) {
  ct_scope *s = ct_scope_begin();
  bool tf32 = ct_cuda_allow_tf32();
  ct_cuda_set_allow_tf32(true); /* as the bench */
  const char *o1 = getenv("CT_CUDA_CONV_2STREAM"), *o2 = getenv("CT_CUDA_BN_PDL");
  char *s1 = o1 ? strdup(o1) : NULL, *s2 = o2 ? strdup(o2) : NULL;
  unsetenv("CT_CUDA_CONV_2STREAM");
  unsetenv("CT_CUDA_BN_PDL");
  enum { STEPS = 3 };
  int64_t B = 8;
  ct_tensor *bx[STEPS + 1], *by[STEPS + 1];
  rn_step_batches(1313, B, STEPS + 1, bx, by);
  rn_step r[4]; /* tests/c/resnet_step_fixture.h */
  memset(r, 0, sizeof r);
  static const char *mode[4] = {"0", NULL, NULL, "1"};
  int64_t side0 = C2S_COUNT(), pdl0 = PDL_COUNT();
  for (int d = 0; d < 4; d++) {
    both_switches(d == 0 ? "0" : NULL);
    tt_env_set("CT_CUDA_CONV_2STREAM", mode[d]);
    if (!rn_step_init(&r[d], 13, true, bx[0], by[0])) break;
    CHECK_OK(rn_step_run(&r[d]));
  }
  ct_cuda_synchronize(0);
  int64_t side1 = C2S_COUNT(), pdl1 = PDL_COUNT();
  /* three eager steps with a second stream (models 1, 2, 3): 19 weight gradients on it each */
  if (side1 - side0 != 3 * 19) ct_test_fail(__FILE__, __LINE__, "eager: %lld weight gradients on the second stream, expected 57", (long long)(side1 - side0));
  CHECK(pdl1 - pdl0 >= 3 * 40 * 2);
  CHECK(SIDE_PENDING() == 0);
  if (r[0].loss && r[1].loss)
    tt_same_as_cpu(__FILE__, __LINE__, "cuda", "first loss, switches off vs on", ct_to_device(r[0].loss, ct_cpu()), ct_to_device(r[1].loss, ct_cpu()), 0, 0);
  both_switches(NULL);
  ct_cuda_graph *g = r[2].opt ? ct_cuda_graph_capture(0, rn_step_run, &r[2]) : NULL;
  if (!g) ct_test_fail(__FILE__, __LINE__, "resnet step capture with the session-13 paths failed: %s", ct_last_error());
  int64_t side2 = C2S_COUNT(), pdl2 = PDL_COUNT();
  if (g) {
    CHECK(side2 - side1 == 19);
    CHECK(pdl2 - pdl1 >= 40 * 2);
    CHECK(ct_cuda_graph_num_nodes(g) > 100);
    for (int k = 1; k <= STEPS; k++) {
      for (int d = 0; d < 4; d++) {
        CHECK_OK(ct_copy_(r[d].x, bx[k]));
        CHECK_OK(ct_copy_(r[d].y, by[k]));
      }
      both_switches("0");
      CHECK_OK(rn_step_run(&r[0]));
      both_switches(NULL);
      CHECK_OK(rn_step_run(&r[1]));
      CHECK_OK(ct_cuda_graph_replay(g));
      tt_env_set("CT_CUDA_CONV_2STREAM", "1");
      CHECK_OK(rn_step_run(&r[3]));
      both_switches(NULL);
      ct_tensor *l0 = ct_to_device(r[0].loss, ct_cpu()), *l1 = ct_to_device(r[1].loss, ct_cpu()), *l2 = ct_to_device(r[2].loss, ct_cpu());
      ct_tensor *l3 = ct_to_device(r[3].loss, ct_cpu());
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "eager loss, switches on vs off", l0, l1, 0, 0);
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "graph replay loss vs eager", l1, l2, 0, 0);
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "eager loss, joined at once vs off", l0, l3, 0, 0);
    }
    int64_t bad01 = rn_step_weights_differ(&r[0], &r[1]), bad12 = rn_step_weights_differ(&r[1], &r[2]);
    int64_t bad03 = rn_step_weights_differ(&r[0], &r[3]);
    if (bad01 || bad12 || bad03)
      ct_test_fail(__FILE__, __LINE__, "weights after %d steps: %lld differ on vs off (eager), %lld graph vs eager, %lld joined at once vs off",
                   STEPS, (long long)bad01, (long long)bad12, (long long)bad03);
  }
  ct_cuda_graph_free(g);
  for (int d = 0; d < 4; d++) rn_step_free(&r[d]);
  tt_env_set("CT_CUDA_CONV_2STREAM", s1);
  tt_env_set("CT_CUDA_BN_PDL", s2);
  free(s1);
  free(s2);
  ct_cuda_set_allow_tf32(tf32);
  ct_scope_end(s);
}
