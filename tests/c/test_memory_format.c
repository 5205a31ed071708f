/* channels_last (include/ctorch/memory_format.h): the conversions, the layouts PyTorch 1.13 gives
 * the results of pointwise ops, convolution and batch norm (checked against torch on this machine:
 * relu(cl), cl + contiguous, bias + cl, expanded + cl are channels-last; contiguous + cl is not;
 * conv2d and batch_norm of a channels-last input are), values equal to the default layout's, and on
 * CUDA the NHWC convolution / batch norm kernels and the ResNet step captured with them. */
#include "test.h"
#include "ctorch/cuda.h"
#include "ctorch/memory_format.h"
#include "ctorch/models.h"
#include "ctorch/train.h"
#include "resnet_step_fixture.h"
#include <stdlib.h>

static void check_strides(const char *what, const ct_tensor *t, const int64_t *want) {
  if (!t) {
    ct_test_fail(__FILE__, __LINE__, "%s: NULL (%s)", what, ct_last_error());
    return;
  }
  const int64_t *st = ct_strides(t);
  for (int d = 0; d < 4; d++)
    if (st[d] != want[d])
      ct_test_fail(__FILE__, __LINE__, "%s: strides (%lld, %lld, %lld, %lld), expected (%lld, %lld, %lld, %lld)", what,
                   (long long)st[0], (long long)st[1], (long long)st[2], (long long)st[3], (long long)want[0],
                   (long long)want[1], (long long)want[2], (long long)want[3]);
}

TEST(memory_format_to_channels_last) {
  ct_scope *s = ct_scope_begin();
  uint64_t rs = 11;
  int64_t sh[4] = {2, 3, 4, 5}, cl[4] = {60, 1, 15, 3}, nchw[4] = {60, 20, 5, 1};
  ct_tensor *x = tt_rand(&rs, 4, sh, CT_FLOAT32, 1, 0, false);
  CHECK(ct_is_contiguous(x) && !ct_is_channels_last(x) && !ct_suggests_channels_last(x));
  ct_tensor *y = ct_to_channels_last(x);
  check_strides("to_channels_last", y, cl);
  CHECK(y && ct_is_channels_last(y) && ct_suggests_channels_last(y) && !ct_is_contiguous(y));
  CHECK(y && tt_allclose(y, x, 0, 0));
  ct_tensor *y2 = y ? ct_to_channels_last(y) : NULL;
  CHECK(y2 == y); /* already so: the tensor itself */
  ct_release(y2);
  ct_tensor *c = y ? ct_contiguous(y) : NULL; /* .contiguous() is the default layout again */
  check_strides("contiguous", c, nchw);
  CHECK(c && tt_allclose(c, x, 0, 0));
  int64_t sh3[3] = {3, 4, 5};
  ct_tensor *z = ct_zeros(3, sh3, ct_opts());
  CHECK_ERR_PTR(ct_to_channels_last(z), "required rank 4 tensor to use channels_last format");
  /* ambiguous shapes (C == 1): both layouts at once, the default one kept */
  int64_t sh1[4] = {2, 1, 3, 3};
  ct_tensor *o = ct_zeros(4, sh1, ct_opts());
  CHECK(ct_is_channels_last(o) && !ct_suggests_channels_last(o));
  /* with a gradient: differentiable, the gradient back in x's shape */
  ct_tensor *xr = tt_rand(&rs, 4, sh, CT_FLOAT32, 1, 0, true);
  ct_tensor *yr = ct_to_channels_last(xr);
  check_strides("to_channels_last (grad)", yr, cl);
  ct_tensor *w = tt_rand(&rs, 4, sh, CT_FLOAT32, 1, 0, false);
  ct_tensor *l = yr ? ct_sum(ct_mul(yr, w)) : NULL;
  CHECK(l && ct_backward(l, NULL, false, false) == CT_OK);
  CHECK(ct_grad(xr) && tt_allclose(ct_grad(xr), w, 0, 0));
  ct_scope_end(s);
}

TEST(memory_format_pointwise_layout) {
  ct_scope *s = ct_scope_begin();
  uint64_t rs = 12;
  int64_t sh[4] = {2, 3, 4, 5}, bs[4] = {1, 3, 1, 1}, es[4] = {2, 3, 1, 1}, cl[4] = {60, 1, 15, 3},
          nchw[4] = {60, 20, 5, 1};
  ct_tensor *a = tt_rand(&rs, 4, sh, CT_FLOAT32, 1, 0, false), *b = tt_rand(&rs, 4, sh, CT_FLOAT32, 1, 0, false);
  ct_tensor *bias = tt_rand(&rs, 4, bs, CT_FLOAT32, 1, 0, false), *e0 = tt_rand(&rs, 4, es, CT_FLOAT32, 1, 0, false);
  ct_tensor *e = ct_expand(e0, 4, sh);
  ct_tensor *acl = ct_to_channels_last(a);
  struct {
    const char *what;
    ct_tensor *got, *ref;
    const int64_t *st;
  } cs[] = {
      {"relu(cl)", ct_relu(acl), ct_relu(a), cl},
      {"cl + contiguous", ct_add(acl, b), ct_add(a, b), cl},
      {"contiguous + cl", ct_add(b, acl), ct_add(b, a), nchw},
      {"cl + bias", ct_add(acl, bias), ct_add(a, bias), cl},
      {"bias + cl", ct_add(bias, acl), ct_add(bias, a), cl},
      {"expanded + cl", ct_add(e, acl), ct_add(e, a), cl},
      {"cl * 2", ct_mul_scalar(acl, ct_sf(2)), ct_mul_scalar(a, ct_sf(2)), cl},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    check_strides(cs[i].what, cs[i].got, cs[i].st);
    if (!(cs[i].got && cs[i].ref && tt_allclose(cs[i].got, cs[i].ref, 0, 0)))
      ct_test_fail(__FILE__, __LINE__, "%s: values differ from the default layout's", cs[i].what);
  }
  /* the gradient through a channels-last relu */
  ct_tensor *xr = tt_rand(&rs, 4, sh, CT_FLOAT32, 1, 0, true), *xr2 = tt_rand(&rs, 4, sh, CT_FLOAT32, 1, 0, true);
  CHECK_OK(ct_copy_(ct_detach(xr2), xr));
  ct_tensor *l1 = ct_sum(ct_mul(ct_relu(ct_to_channels_last(xr)), b)), *l2 = ct_sum(ct_mul(ct_relu(xr2), b));
  CHECK(l1 && l2 && ct_backward(l1, NULL, false, false) == CT_OK && ct_backward(l2, NULL, false, false) == CT_OK);
  CHECK(ct_grad(xr) && ct_grad(xr2) && tt_allclose(ct_grad(xr), ct_grad(xr2), 0, 0));
  ct_scope_end(s);
}

/* Conv2d + BatchNorm2d + ReLU on the CPU: the module converted (weights channels-last) and a
 * channels-last input give channels-last outputs with the default layout's values and gradients
 * (the CPU kernels read contiguous copies: the same arithmetic, so equal to the bit). */
TEST(memory_format_module_cpu) {
  ct_scope *s = ct_scope_begin();
  uint64_t rs = 13;
  int64_t xs[4] = {2, 3, 6, 6}, ycl[4] = {144, 1, 24, 4}, wcl[4] = {27, 1, 9, 3};
  ct_module *m[2][2];
  for (int k = 0; k < 2; k++) {
    ct_manual_seed(3);
    ct_conv_opts o = ct_conv_defaults();
    o.padding[0] = o.padding[1] = 1;
    m[k][0] = ct_conv2d_new(3, 4, 3, 3, &o);
    m[k][1] = ct_batch_norm2d_new(4, 1e-5, 0.1, true, true);
    CHECK(m[k][0] && m[k][1]);
  }
  if (!m[0][0] || !m[0][1] || !m[1][0] || !m[1][1]) goto out;
  for (int j = 0; j < 2; j++) CHECK_OK(ct_module_to_channels_last(m[1][j]));
  check_strides("converted conv weight", ct_module_param(m[1][0], "weight"), wcl);
  CHECK(ct_is_contiguous(ct_module_param(m[1][0], "bias"))); /* 1-D: untouched */
  CHECK(tt_allclose(ct_module_param(m[1][0], "weight"), ct_module_param(m[0][0], "weight"), 0, 0));
  ct_tensor *x = tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0, false), *xc = ct_to_channels_last(x);
  ct_tensor *g = tt_rand(&rs, 4, (int64_t[]){2, 4, 6, 6}, CT_FLOAT32, 1, 0, false);
  ct_tensor *y[2];
  for (int k = 0; k < 2; k++) {
    ct_tensor *h = ct_module_forward(m[k][0], k ? xc : x);
    if (k) check_strides("conv2d(cl)", h, ycl);
    ct_tensor *b = h ? ct_module_forward(m[k][1], h) : NULL;
    if (k) check_strides("batch_norm(cl)", b, ycl);
    y[k] = b ? ct_relu(b) : NULL;
    CHECK(y[k] && ct_backward(ct_sum(ct_mul(y[k], g)), NULL, false, false) == CT_OK);
  }
  CHECK(y[0] && y[1] && tt_allclose(y[1], y[0], 0, 0));
  const char *ps[2] = {"weight", "bias"};
  for (int j = 0; j < 2; j++)
    for (int p = 0; p < 2; p++) {
      ct_tensor *g0 = ct_grad(ct_module_param(m[0][j], ps[p])), *g1 = ct_grad(ct_module_param(m[1][j], ps[p]));
      if (!(g0 && g1 && tt_allclose(g1, g0, 1e-6, 1e-7)))
        ct_test_fail(__FILE__, __LINE__, "module %d %s gradient differs between the layouts", j, ps[p]);
    }
out:
  for (int k = 0; k < 2; k++)
    for (int j = 0; j < 2; j++) ct_module_free(m[k][j]);
  ct_scope_end(s);
}

/* ---- CUDA ---- */
static int n_cl_gpu_tests = 3;
static bool cl_gpu(void) {
  static bool said;
  if (ct_cuda_is_available()) return true;
  if (!said) {
    printf("test_memory_format: skipping %d GPU test(s): %s\n", n_cl_gpu_tests, ct_cuda_unavailable_reason());
    said = true;
  }
  return false;
}
#ifdef CT_HAVE_CUDA
int64_t ct_cuda_cudnn_calls(void);
int64_t ct_cuda_bn_cl_count(void);
int64_t ct_cuda_sgd_multi_launches(void);
const char *ct_cuda_cudnn_info(void);
#define CUDNN_INFO() ct_cuda_cudnn_info()
#define CL_COUNTS(a, b, c) (a = ct_cuda_cudnn_calls(), b = ct_cuda_bn_cl_count(), c = ct_cuda_sgd_multi_launches())
#else
#define CL_COUNTS(a, b, c) (a = b = c = 0) /* never reached: GPU tests are skipped without CUDA */
#define CUDNN_INFO() "built without CUDA"
#endif

/* conv2d (cuDNN with NHWC descriptors) -> batch_norm (the channels-last kernels, training and
 * eval) -> relu on channels-last CUDA tensors against the CPU in the default layout: outputs and
 * the gradients of x and w keep the layout; values within float32 accumulation-order tolerances
 * (conv sums of 9 C products in another order: 1e-4; batch norm's double sums: 1e-5). Channel
 * counts 64 (4-wide loads), 10 and 3 (1-wide). */
TEST(cuda_channels_last_conv_bn) {
  if (!cl_gpu()) return;
  ct_scope *s = ct_scope_begin();
  bool tf32 = ct_cuda_allow_tf32();
  ct_cuda_set_allow_tf32(false);
  uint64_t rs = 21;
  int64_t shapes[3][3] = {{3, 64, 8}, {16, 10, 5}, {6, 3, 7}};
  int64_t c0, b0, s0, c1, b1, s1;
  CL_COUNTS(c0, b0, s0);
  (void)s0;
  for (int i = 0; i < 3; i++) {
    int64_t Ci = shapes[i][0], Co = shapes[i][1], H = shapes[i][2], N = 4;
    int64_t xs[4] = {N, Ci, H, H}, ws[4] = {Co, Ci, 3, 3}, ys[4] = {N, Co, H, H};
    int64_t ycl[4] = {H * H * Co, 1, H * Co, Co}, xcl[4] = {H * H * Ci, 1, H * Ci, Ci}, wcl[4] = {9 * Ci, 1, 3 * Ci, Ci};
    ct_tensor *x = tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0.5, false), *w = tt_rand(&rs, 4, ws, CT_FLOAT32, 0.3, 0, false);
    ct_tensor *r = tt_rand(&rs, 4, ys, CT_FLOAT32, 1, 0, false);
    for (int train = 1; train >= 0; train--) {
      ct_tensor *xl[2], *wl[2], *y[2], *z[2], *rvs[2];
      int64_t C1 = Co;
      ct_tensor *rm0 = ct_zeros(1, &C1, ct_opts()), *rv0 = ct_ones(1, &C1, ct_opts());
      for (int d = 0; d < 2; d++) {
        ct_device dev = d ? ct_cuda(0) : ct_cpu();
        xl[d] = tt_leaf(x, dev, d == 1, true);
        wl[d] = tt_leaf(w, dev, d == 1, true);
        /* fresh running statistics per device (ct_to_device of a CPU tensor to the CPU is the tensor) */
        ct_tensor *rg = ct_to_device(r, dev), *rm = ct_to_device(ct_clone(rm0), dev), *rv = ct_to_device(ct_clone(rv0), dev);
        rvs[d] = rv;
        int64_t st[2] = {1, 1}, pd[2] = {1, 1}, dl[2] = {1, 1};
        y[d] = ct_conv2d(xl[d], wl[d], NULL, st, pd, dl, 1);
        z[d] = y[d] ? ct_batch_norm(y[d], rm, rv, NULL, NULL, train, 0.1, 1e-5) : NULL;
        ct_tensor *a = z[d] ? ct_relu(z[d]) : NULL;
        CHECK(a && ct_backward(ct_sum(ct_mul(a, rg)), NULL, false, false) == CT_OK);
        if (d) {
          check_strides("cuda conv2d(cl)", y[d], ycl);
          check_strides("cuda batch_norm(cl)", z[d], ycl);
          check_strides("cuda conv2d(cl) input gradient", ct_grad(xl[d]), xcl);
          check_strides("cuda conv2d(cl) weight gradient", ct_grad(wl[d]), wcl);
        }
      }
      if (rvs[0] && rvs[1]) tt_same_as_cpu(__FILE__, __LINE__, "cuda", "running_var (cl)", rvs[0], ct_to_device(rvs[1], ct_cpu()), 1e-4, 1e-6);
      if (y[0] && y[1]) tt_same_as_cpu(__FILE__, __LINE__, "cuda", "conv2d(cl)", y[0], ct_to_device(y[1], ct_cpu()), 1e-4, 1e-5);
      if (z[0] && z[1]) tt_same_as_cpu(__FILE__, __LINE__, "cuda", "batch_norm(cl)", z[0], ct_to_device(z[1], ct_cpu()), 1e-4, 1e-4);
      ct_tensor *gx0 = ct_grad(xl[0]), *gx1 = ct_grad(xl[1]), *gw0 = ct_grad(wl[0]),
                *gw1 = ct_grad(wl[1]);
      if (gx0 && gx1) tt_same_as_cpu(__FILE__, __LINE__, "cuda", "conv+bn grad x (cl)", gx0, ct_to_device(gx1, ct_cpu()), 1e-3, 1e-4);
      if (gw0 && gw1) tt_same_as_cpu(__FILE__, __LINE__, "cuda", "conv+bn grad w (cl)", gw0, ct_to_device(gw1, ct_cpu()), 1e-3, 1e-3);
      CHECK(gx0 && gx1 && gw0 && gw1);
    }
  }
  CL_COUNTS(c1, b1, s1);
  (void)s1;
  CHECK(b1 - b0 >= 12); /* 3 shapes x 2 modes x (forward + backward) on the channels-last kernels */
  if (strstr(CUDNN_INFO(), "cuDNN 9")) CHECK(c1 - c0 >= 18); /* fwd + dgrad + wgrad through cuDNN */
  else printf("test_memory_format: cuDNN call count not checked: %s\n", CUDNN_INFO());
  ct_cuda_set_allow_tf32(tf32);
  ct_scope_end(s);
}

/* The ResNet-18 CIFAR step with the model and input channels-last: its first loss equals the
 * default layout's (float32 convolutions in other algorithms and orders: 1e-4), its weights stay
 * channels-last through SGD (one multi-tensor launch), and the step captured as a CUDA graph
 * replays equal to the bit to an eager channels-last twin. */
TEST(cuda_channels_last_resnet_step) {
  if (!cl_gpu()) return;
  ct_scope *s = ct_scope_begin();
  bool tf32 = ct_cuda_allow_tf32();
  ct_cuda_set_allow_tf32(false);
  enum { STEPS = 3 };
  int64_t B = 4;
  ct_tensor *bx[STEPS + 1], *by[STEPS + 1];
  rn_step_batches(78, B, STEPS + 1, bx, by);
  rn_step r[3]; /* 0: default layout, 1: channels-last eager, 2: channels-last graph (tests/c/resnet_step_fixture.h) */
  memset(r, 0, sizeof r);
  int64_t c0, b0, s0, c1, b1, s1;
  CL_COUNTS(c0, b0, s0);
  for (int d = 0; d < 3; d++) {
    if (!rn_step_init(&r[d], 6, d > 0, bx[0], by[0])) break;
    CHECK_OK(rn_step_run(&r[d]));
  }
  CL_COUNTS(c1, b1, s1);
  CHECK(b1 > b0 && s1 - s0 >= 3); /* the channels-last batch norm ran; every model's SGD is one launch */
  (void)c0, (void)c1;
  if (r[0].loss && r[1].loss) tt_same_as_cpu(__FILE__, __LINE__, "cuda", "first loss, cl vs default", ct_to_device(r[0].loss, ct_cpu()), ct_to_device(r[1].loss, ct_cpu()), 1e-4, 1e-5);
  ct_tensor *w1 = r[1].m ? ct_module_param(r[1].m, "layer1.0.conv1.weight") : NULL;
  CHECK(w1 && ct_suggests_channels_last(w1) && ct_grad(w1) && ct_suggests_channels_last(ct_grad(w1)));
  ct_cuda_graph *g = r[2].opt ? ct_cuda_graph_capture(0, rn_step_run, &r[2]) : NULL;
  if (!g) ct_test_fail(__FILE__, __LINE__, "channels-last resnet step capture failed: %s", ct_last_error());
  if (g) {
    CHECK(ct_cuda_graph_num_nodes(g) > 100);
    for (int k = 1; k <= STEPS; k++) {
      for (int d = 1; d < 3; d++) {
        CHECK_OK(ct_copy_(r[d].x, bx[k]));
        CHECK_OK(ct_copy_(r[d].y, by[k]));
      }
      CHECK_OK(rn_step_run(&r[1]));
      CHECK_OK(ct_cuda_graph_replay(g));
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "cl graph replay loss", ct_to_device(r[1].loss, ct_cpu()), ct_to_device(r[2].loss, ct_cpu()), 0, 0);
    }
    for (int64_t i = 0; i < ct_dict_len(r[1].pd); i++)
      tt_same_as_cpu(__FILE__, __LINE__, "cuda", "cl graph replay weights", ct_to_device(ct_dict_tensor(r[1].pd, i), ct_cpu()),
                     ct_to_device(ct_dict_tensor(r[2].pd, i), ct_cpu()), 0, 0);
  }
  ct_cuda_graph_free(g);
  for (int d = 0; d < 3; d++) rn_step_free(&r[d]);
  ct_cuda_set_allow_tf32(tf32);
  ct_scope_end(s);
}

/* BN + ReLU fused on CUDA (k_bn.cu: relu(y) in the forward kernels, the backward masks g by the
 * saved output) against the two ops apart (CT_CUDA_BN_RELU=0): the same float expressions and the
 * same double sums of the same masked gradient, so equal to the bit; default layout (4-wide and
 * 1-wide loads) and channels-last, training and eval. */
ct_tensor *ct_batch_norm_relu(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                              const ct_tensor *weight, const ct_tensor *bias, bool training, double momentum, double eps);
TEST(cuda_bn_relu_fused) {
  if (!cl_gpu()) return;
  ct_scope *s = ct_scope_begin();
  uint64_t rs = 31;
  int64_t shapes[2][4] = {{4, 64, 8, 8}, {3, 6, 5, 7}};
  for (int i = 0; i < 2; i++)
    for (int cl = 0; cl < 2; cl++)
      for (int train = 1; train >= 0; train--) {
        int64_t C = shapes[i][1];
        ct_tensor *x = tt_rand(&rs, 4, shapes[i], CT_FLOAT32, 1, 0.2, false), *g = tt_rand(&rs, 4, shapes[i], CT_FLOAT32, 1, 0, false);
        ct_tensor *w = tt_rand(&rs, 1, &C, CT_FLOAT32, 0.5, 1, false), *b = tt_rand(&rs, 1, &C, CT_FLOAT32, 0.5, 0, false);
        ct_tensor *y[2], *xl[2], *wl[2], *bl[2], *rv[2];
        for (int f = 0; f < 2; f++) { /* 0: two ops, 1: fused */
          xl[f] = tt_leaf(x, ct_cuda(0), cl, true);
          wl[f] = tt_leaf(w, ct_cuda(0), false, true);
          bl[f] = tt_leaf(b, ct_cuda(0), false, true);
          ct_tensor *gg = ct_to_device(g, ct_cuda(0));
          ct_tensor *rm = ct_to_device(ct_zeros(1, &C, ct_opts()), ct_cuda(0));
          rv[f] = ct_to_device(ct_ones(1, &C, ct_opts()), ct_cuda(0));
          if (!f) setenv("CT_CUDA_BN_RELU", "0", 1);
          y[f] = ct_batch_norm_relu(xl[f], rm, rv[f], wl[f], bl[f], train, 0.1, 1e-5);
          unsetenv("CT_CUDA_BN_RELU");
          CHECK(y[f] && ct_backward(ct_sum(ct_mul(y[f], gg)), NULL, false, false) == CT_OK);
        }
        if (!y[0] || !y[1]) continue;
        CHECK(!memcmp(ct_strides(y[0]), ct_strides(y[1]), 4 * sizeof(int64_t)) && ct_suggests_channels_last(y[1]) == (cl == 1));
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", "bn+relu fused: y", ct_to_device(y[0], ct_cpu()), ct_to_device(y[1], ct_cpu()), 0, 0);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", "bn+relu fused: dx", ct_to_device(ct_grad(xl[0]), ct_cpu()), ct_to_device(ct_grad(xl[1]), ct_cpu()), 0, 0);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", "bn+relu fused: dw", ct_to_device(ct_grad(wl[0]), ct_cpu()), ct_to_device(ct_grad(wl[1]), ct_cpu()), 0, 0);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", "bn+relu fused: db", ct_to_device(ct_grad(bl[0]), ct_cpu()), ct_to_device(ct_grad(bl[1]), ct_cpu()), 0, 0);
        tt_same_as_cpu(__FILE__, __LINE__, "cuda", "bn+relu fused: running_var", ct_to_device(rv[0], ct_cpu()), ct_to_device(rv[1], ct_cpu()), 0, 0);
        CHECK(ct_grad_fn_name(y[1]) && !strcmp(ct_grad_fn_name(y[1]), "ReluBackward0"));
      }
  ct_scope_end(s);
}
