/* Session 14: forked regions through the backend-neutral entry (src/backend/stream_region.c, backend.h's
 * region_begin / region_end) and the backward of a forked region on a third stream (the autograd engine runs the
 * nodes recorded inside a forward region as a backward region; CUDA: CT_CUDA_DS_BWD_FORK, cuda_backend.cu lane 1).
 * Each against the switch-off path, equal to the bit (the same kernels on the same operands, only the ordering
 * between independent ones changes), eagerly and inside a CUDA graph; GPU tests skipped without a CUDA device. */
#include "test.h"
#include "backend/backend.h"
#include "ctorch/cuda.h"
#include "ctorch/models.h"
#include "ctorch/train.h"
#include "resnet_step_fixture.h"
#include <stdlib.h>
#include <string.h>

CT_GPU_GROUP(cuda14)
#define CUDA14_TEST(name) CT_GPU_TEST(cuda14, name)

bool ct_stream_region_begin(const ct_tensor *on); /* src/backend/stream_region.c */
void ct_stream_region_end(const ct_tensor *on, const ct_tensor *read);

#ifdef CT_HAVE_CUDA
void ct_cuda_region_counts(int64_t out[2]);
void ct_cuda_region_counts_bwd(int64_t out[2]);
int ct_cuda_side_pending(int dev);
int64_t ct_cuda_conv2s_count(void);
int64_t ct_cuda_region_waits(void);
const char *ct_cuda_cudnn_info(void);
/* forward regions ended, cut short; backward regions ended, cut short */
static void counts14(int64_t out[4]) {
  ct_cuda_region_counts(out);
  ct_cuda_region_counts_bwd(out + 2);
}
#define SIDE_PENDING() ((int64_t)ct_cuda_side_pending(0))
#define C2S_COUNT() ct_cuda_conv2s_count()
#define REGION_WAITS() ct_cuda_region_waits()
#else /* never reached: the GPU tests are skipped without CUDA */
static void counts14(int64_t out[4]) { memset(out, 0, 4 * sizeof *out); }
#define SIDE_PENDING() ((int64_t)0)
#define C2S_COUNT() ((int64_t)0)
#define REGION_WAITS() ((int64_t)0)
#endif

static bool have_cudnn14(const char *test) {
#ifdef CT_HAVE_CUDA
  if (strncmp(ct_cuda_cudnn_info(), "cuDNN 9", 7) == 0) return true;
  printf("test_cuda14 %s: no region counts checked: %s\n", test, ct_cuda_cudnn_info());
#endif
  return false;
}
/* got - before == {fwd, fwd cut, bwd, bwd cut} */
static void check_counts(int line, const char *what, const int64_t before[4], const int64_t after[4], int64_t fwd, int64_t bwd) {
  int64_t d[4];
  for (int i = 0; i < 4; i++) d[i] = after[i] - before[i];
  if (d[0] != fwd || d[1] != 0 || d[2] != bwd || d[3] != 0)
    ct_test_fail(__FILE__, line, "%s: forward regions %lld (cut %lld), backward %lld (cut %lld); expected %lld, %lld with none cut",
                 what, (long long)d[0], (long long)d[1], (long long)d[2], (long long)d[3], (long long)fwd, (long long)bwd);
}

/* Backend-neutral: the CPU and WebGPU backends have no regions, so begin answers false there and nothing is
 * tagged: a backward through ops recorded "inside" runs as before. */
TEST(cuda14_region_neutral) {
  ct_scope *s = ct_scope_begin();
  CHECK(ct_backend_for(CT_DEVICE_CPU)->region_begin == NULL && ct_backend_for(CT_DEVICE_CPU)->region_end == NULL);
  const ct_backend *wg = ct_backend_for(CT_DEVICE_WEBGPU);
  CHECK(!wg || (wg->region_begin == NULL && wg->region_end == NULL));
  uint64_t rs = 1401;
  int64_t sh[2] = {3, 4};
  ct_tensor *x = tt_rand(&rs, 2, sh, CT_FLOAT32, 1, 0, true);
  CHECK(!ct_stream_region_begin(x));
  CHECK(!ct_stream_region_begin(NULL));
  ct_tensor *y = ct_mul(x, x);
  ct_stream_region_end(x, x); /* without a begin: nothing */
  CHECK(y && ct_backward(ct_sum(y), NULL, false, false) == CT_OK);
  ct_tensor *want = ct_mul_scalar(x, ct_sf(2));
  CHECK(ct_grad(x) && want && tt_allclose(ct_grad(x), want, 0, 0));
  ct_scope_end(s);
}

/* A downsample-shaped block on channels-last CUDA tensors (TF32 off): relu(bn(conv3(relu(bn(conv3s2(x))))) +
 * bn(conv1s2(x))) with the shortcut inside a region, as src/models/resnet.c marks it. Runs: [0] the CPU; [1] the
 * backward fork off; [2] on; [3] on, with a hook on the shortcut's output gradient that reads it on the host (a
 * join inside the backward region: cut short, the rest on the device's stream); [4] the forward fork off and the
 * backward on (the tags are set either way). Gradients of x, the three weights and the shortcut's batch-norm
 * parameters: [1]-[4] equal to the bit, [2] within float32 tolerances of the CPU. Counts: one forward region per
 * CUDA run ([4]: none), one backward region in [2] and [4], one cut in [3]; nothing pending after a synchronize. */
static ct_tensor *host_read_hook(ct_tensor *g, void *user) {
  ct_tensor *h = ct_to_device(g, ct_cpu()); /* a download: every lane joins first */
  if (h) *(int *)user += 1;
  ct_release(h);
  return NULL;
}
CUDA14_TEST(block_bwd_fork) {
  ct_scope *s = ct_scope_begin();
  bool tf32 = ct_cuda_allow_tf32();
  ct_cuda_set_allow_tf32(false);
  char *s1 = tt_env_save("CT_CUDA_DS_FORK"), *s2 = tt_env_save("CT_CUDA_DS_BWD_FORK");
  bool cudnn = have_cudnn14("block_bwd_fork");
  uint64_t rs = 1402;
  int64_t N = 8, Ci = 16, Co = 32, H = 16, C1 = Co;
  int64_t xs[4] = {N, Ci, H, H}, w1s[4] = {Co, Ci, 3, 3}, w2s[4] = {Co, Co, 3, 3}, wds[4] = {Co, Ci, 1, 1}, rsh[4] = {N, Co, H / 2, H / 2};
  ct_tensor *x0 = tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0.1, false), *w10 = tt_rand(&rs, 4, w1s, CT_FLOAT32, 0.2, 0, false);
  ct_tensor *w20 = tt_rand(&rs, 4, w2s, CT_FLOAT32, 0.1, 0, false), *wd0 = tt_rand(&rs, 4, wds, CT_FLOAT32, 0.4, 0, false);
  ct_tensor *g0 = tt_rand(&rs, 1, &C1, CT_FLOAT32, 0.5, 1, false), *b0 = tt_rand(&rs, 1, &C1, CT_FLOAT32, 0.5, 0, false);
  ct_tensor *r0 = tt_rand(&rs, 4, rsh, CT_FLOAT32, 1, 0, false);
  enum { NR = 5, NG = 6 };
  static const char *nm[NG] = {"dx", "dw1", "dw2", "dwds", "dgamma_ds", "dbeta_ds"};
  ct_tensor *res[NR][NG];
  memset(res, 0, sizeof res);
  int hook_reads = 0;
  for (int run = 0; run < NR; run++) {
    ct_device dev = run ? ct_cuda(0) : ct_cpu();
    bool cl = run > 0;
    tt_env_set("CT_CUDA_DS_FORK", run == 4 ? "0" : NULL);
    tt_env_set("CT_CUDA_DS_BWD_FORK", run == 1 ? "0" : NULL);
    ct_tensor *x = tt_leaf(x0, dev, cl, true), *w1 = tt_leaf(w10, dev, cl, true), *w2 = tt_leaf(w20, dev, cl, true), *wd = tt_leaf(wd0, dev, cl, true);
    ct_tensor *gd = tt_leaf(g0, dev, false, true), *bd = tt_leaf(b0, dev, false, true), *rg = ct_to_device(r0, dev);
    ct_options o = ct_opts();
    o.device = dev;
    ct_tensor *rm[3], *rv[3];
    for (int k = 0; k < 3; k++) rm[k] = ct_zeros(1, &C1, o), rv[k] = ct_ones(1, &C1, o);
    int64_t c0[4], c1[4];
    counts14(c0);
    int64_t s2x[2] = {2, 2}, p1[2] = {1, 1}, p0[2] = {0, 0};
    ct_tensor *h = ct_relu(ct_batch_norm(ct_conv2d(x, w1, NULL, s2x, p1, NULL, 1), rm[0], rv[0], NULL, NULL, true, 0.1, 1e-5));
    bool region = ct_stream_region_begin(x);
    CHECK(region == (run > 0)); /* CUDA has regions (forked or not, the nodes are tagged) */
    ct_tensor *d = ct_batch_norm(ct_conv2d(x, wd, NULL, s2x, p0, NULL, 1), rm[1], rv[1], gd, bd, true, 0.1, 1e-5);
    if (region) ct_stream_region_end(x, x);
    if (run == 3 && d) CHECK(ct_register_hook(d, host_read_hook, &hook_reads) >= 0);
    ct_tensor *m = h ? ct_batch_norm(ct_conv2d(h, w2, NULL, NULL, p1, NULL, 1), rm[2], rv[2], NULL, NULL, true, 0.1, 1e-5) : NULL;
    ct_tensor *out = m && d ? ct_relu(ct_add(m, d)) : NULL;
    CHECK(out && ct_backward(ct_sum(ct_mul(out, rg)), NULL, false, false) == CT_OK);
    if (run) {
      ct_cuda_synchronize(0);
      CHECK(SIDE_PENDING() == 0);
      counts14(c1);
      if (cudnn) {
        int64_t want[4] = {run == 4 ? 0 : 1, 0, run == 2 || run == 4 ? 1 : 0, run == 3 ? 1 : 0};
        for (int i = 0; i < 4; i++)
          if (c1[i] - c0[i] != want[i])
            ct_test_fail(__FILE__, __LINE__, "run %d: region count %d is %lld, expected %lld", run, i, (long long)(c1[i] - c0[i]),
                         (long long)want[i]);
      }
    }
    const ct_tensor *all[NG] = {ct_grad(x), ct_grad(w1), ct_grad(w2), ct_grad(wd), ct_grad(gd), ct_grad(bd)};
    for (int k = 0; k < NG; k++) res[run][k] = all[k] ? ct_to_device(all[k], ct_cpu()) : NULL;
  }
  CHECK(hook_reads == 1);
  for (int k = 0; k < NG; k++) {
    bool have = true;
    for (int run = 0; run < NR; run++) have = have && res[run][k];
    if (!have) {
      ct_test_fail(__FILE__, __LINE__, "%s missing", nm[k]);
      continue;
    }
    for (int run = 2; run < NR; run++)
      if (!tt_allclose(res[run][k], res[1][k], 0, 0))
        ct_test_fail(__FILE__, __LINE__, "%s: run %d differs from the backward fork off", nm[k], run);
    tt_same_as_cpu(__FILE__, __LINE__, "cuda", nm[k], res[0][k], res[2][k], 1e-3, 1e-3);
  }
  tt_env_restore("CT_CUDA_DS_FORK", s1);
  tt_env_restore("CT_CUDA_DS_BWD_FORK", s2);
  ct_cuda_set_allow_tf32(tf32);
  ct_scope_end(s);
}

/* The ResNet-18 CIFAR b16 step (channels-last, TF32, SGD momentum: the bench's; tests/c/resnet_step_fixture.h):
 * [0] eager with the backward fork off, [1] eager with the defaults, [2] the defaults captured as a CUDA graph
 * (after one eager step) and replayed, [3] the backward fork off captured and replayed, [4] eager with the forward
 * fork off (the backward fork on). Over 3 steps the losses and every weight equal [0]'s to the bit. Regions: 3
 * forward per step where the forward fork is on, 3 backward where the backward fork is on, none cut short, eagerly
 * and in each capture; the weight gradients still on the second stream (19 per step: the downsample convolutions'
 * from inside the backward regions); nothing pending after a synchronize. */
static void fork_switches(const char *fwd, const char *bwd) {
  tt_env_set("CT_CUDA_DS_FORK", fwd);
  tt_env_set("CT_CUDA_DS_BWD_FORK", bwd);
}
CUDA14_TEST(resnet_step_bwd_fork) {
  ct_scope *s = ct_scope_begin();
  bool tf32 = ct_cuda_allow_tf32();
  ct_cuda_set_allow_tf32(true); /* as the bench */
  char *s1 = tt_env_save("CT_CUDA_DS_FORK"), *s2 = tt_env_save("CT_CUDA_DS_BWD_FORK"), *s3 = tt_env_save("CT_CUDA_CONV_2STREAM");
  tt_env_set("CT_CUDA_CONV_2STREAM", NULL);
  bool cudnn = have_cudnn14("resnet_step_bwd_fork");
  enum { STEPS = 3, NM = 5 };
  static const char *fwd[NM] = {NULL, NULL, NULL, NULL, "0"}, *bwd[NM] = {"0", NULL, NULL, "0", NULL};
  int64_t B = 16;
  ct_tensor *bx[STEPS + 1], *by[STEPS + 1];
  rn_step_batches(1414, B, STEPS + 1, bx, by);
  rn_step r[NM];
  memset(r, 0, sizeof r);
  int64_t c0[4], c1[4], c2[4], c3[4];
  int64_t side0 = C2S_COUNT(), waits0 = REGION_WAITS();
  counts14(c0);
  bool made = true;
  for (int d = 0; d < NM && made; d++) {
    fork_switches(fwd[d], bwd[d]);
    made = rn_step_init(&r[d], 14, true, bx[0], by[0]);
    if (made) CHECK_OK(rn_step_run(&r[d]));
  }
  fork_switches(NULL, NULL);
  ct_cuda_synchronize(0);
  CHECK(SIDE_PENDING() == 0);
  counts14(c1);
  int64_t side1 = C2S_COUNT();
  if (cudnn && made) {
    check_counts(__LINE__, "eager first steps", c0, c1, 4 * 3, 3 * 3); /* forward: 0-3; backward: 1, 2, 4 */
    if (side1 - side0 != NM * 19)
      ct_test_fail(__FILE__, __LINE__, "eager: %lld weight gradients on the second stream, expected %d", (long long)(side1 - side0), NM * 19);
  }
  ct_cuda_graph *g[NM] = {0};
  for (int d = 2; d < 4 && made; d++) {
    fork_switches(fwd[d], bwd[d]);
    int64_t a[4], b[4];
    counts14(a);
    g[d] = ct_cuda_graph_capture(0, rn_step_run, &r[d]);
    counts14(b);
    if (!g[d]) ct_test_fail(__FILE__, __LINE__, "capture %d failed: %s", d, ct_last_error());
    else if (cudnn) check_counts(__LINE__, d == 2 ? "capture, fork on" : "capture, backward fork off", a, b, 3, d == 2 ? 3 : 0);
    CHECK(SIDE_PENDING() == 0);
  }
  fork_switches(NULL, NULL);
  if (g[2] && g[3]) /* information: the nodes, and how often a region's stream waited for another lane */
    printf("test_cuda14 resnet_step_bwd_fork: graph nodes %lld (backward fork on), %lld (off); region waits %lld\n",
           (long long)ct_cuda_graph_num_nodes(g[2]), (long long)ct_cuda_graph_num_nodes(g[3]), (long long)(REGION_WAITS() - waits0));
  if (g[2] && g[3]) {
    counts14(c2);
    for (int k = 1; k <= STEPS; k++) {
      for (int d = 0; d < NM; d++) {
        CHECK_OK(ct_copy_(r[d].x, bx[k]));
        CHECK_OK(ct_copy_(r[d].y, by[k]));
      }
      for (int d = 0; d < NM; d++) {
        fork_switches(fwd[d], bwd[d]);
        if (g[d]) CHECK_OK(ct_cuda_graph_replay(g[d]));
        else CHECK_OK(rn_step_run(&r[d]));
      }
      fork_switches(NULL, NULL);
      ct_tensor *l0 = ct_to_device(r[0].loss, ct_cpu());
      for (int d = 1; d < NM; d++) {
        char what[64];
        snprintf(what, sizeof what, "step %d loss, model %d vs the backward fork off", k, d);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", what, l0, ct_to_device(r[d].loss, ct_cpu()), 0, 0);
      }
    }
    ct_cuda_synchronize(0);
    CHECK(SIDE_PENDING() == 0);
    counts14(c3);
    /* eager, per step: 3 forward regions in [0] and [1] each, 3 backward in [1] and [4] (replays count nothing) */
    if (cudnn) check_counts(__LINE__, "eager steps", c2, c3, 6 * STEPS, 6 * STEPS);
    for (int d = 1; d < NM; d++) {
      int64_t bad = rn_step_weights_differ(&r[0], &r[d]);
      if (bad) ct_test_fail(__FILE__, __LINE__, "weights after %d steps: %lld differ between model %d and the backward fork off", STEPS, (long long)bad, d);
    }
  }
  for (int d = 0; d < NM; d++) ct_cuda_graph_free(g[d]);
  for (int d = 0; d < NM; d++) rn_step_free(&r[d]);
  tt_env_restore("CT_CUDA_DS_FORK", s1);
  tt_env_restore("CT_CUDA_DS_BWD_FORK", s2);
  tt_env_restore("CT_CUDA_CONV_2STREAM", s3);
  ct_cuda_set_allow_tf32(tf32);
  ct_scope_end(s);
}
