/* The pages' WebGPU switch (web/gpt.html through web/webgpu/switch.mjs): the byte-level GPT of
 * models.h trained on the WebGPU device inside the WebGPU browser module. The page's JS API
 * (web/js) is synchronous and lives in another wasm module (the CPU build); a WebGPU step has
 * to wait for the GPU, so the page calls these through ccall {async: true} (ASYNCIFY) and awaits
 * each step. The model is made exactly as the JS API makes it (ct_manual_seed, then ct_gpt_new
 * from the default generator), so the same seed gives both modules the same weights, and the
 * trained weights can be copied back into the page's model (for sampling) by name. */
#include "ctorch.h"
#include "ctorch/models.h"
#include "ctorch/webgpu.h"
#include "core/internal.h" /* ct_set_error */
#include <emscripten.h>
#include <math.h>
#include <string.h>

static struct {
  ct_gpt *m;
  ct_optim *opt;
  int64_t ctx;
} P;

EMSCRIPTEN_KEEPALIVE void ctwg_gpt_end(void) {
  ct_optim_free(P.opt);
  ct_gpt_free(P.m);
  memset(&P, 0, sizeof P);
}

/* 0 on success, else -1 with ct_last_error() set (e.g. no WebGPU adapter, a bad config) */
EMSCRIPTEN_KEEPALIVE int ctwg_gpt_begin(int webgpu, int n_layer, int n_embd, int n_head, int ctx, int seed, double lr) {
  ctwg_gpt_end();
  ct_gpt_config c = ct_gpt_config_gpt2();
  c.vocab_size = 256, c.n_positions = ctx, c.n_embd = n_embd, c.n_layer = n_layer, c.n_head = n_head;
  c.dropout = 0;
  if (ct_gpt_config_check(&c) != CT_OK) return -1;
  ct_manual_seed((uint64_t)seed);
  if (!(P.m = ct_gpt_new(&c, NULL))) return -1;
  P.ctx = ctx;
  if (webgpu && ct_gpt_to_device(P.m, ct_webgpu()) != CT_OK) {
    ctwg_gpt_end();
    return -1;
  }
  const ct_dict *ps = ct_gpt_parameters(P.m);
  int64_t n = ct_dict_len(ps);
  ct_tensor *arr[1024];
  if (n > 1024) {
    ct_set_error(CT_ERR_VALUE, "too many parameters (%lld)", (long long)n);
    ctwg_gpt_end();
    return -1;
  }
  for (int64_t i = 0; i < n; i++) arr[i] = ct_dict_tensor(ps, i);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
  o.lr = lr, o.weight_decay = 0; /* the page's torch.optim.AdamW(params, {lr, weightDecay: 0}) */
  if (!(P.opt = ct_optim_new(CT_OPTIM_ADAMW, n, arr, &o))) {
    ctwg_gpt_end();
    return -1;
  }
  return 0;
}

/* One step on the batch xs, ys (int64 [B, T], in this module's memory); returns the loss
 * before the step: the step's only read-back (NaN on error, with ct_last_error() set). */
EMSCRIPTEN_KEEPALIVE double ctwg_gpt_step(const int64_t *xs, const int64_t *ys, int B, int T) {
  if (!P.opt) {
    ct_set_error(CT_ERR_RUNTIME, "ctwg_gpt_begin was not called");
    return NAN;
  }
  if (!xs || !ys || B < 1 || T < 1 || T > P.ctx) {
    ct_set_error(CT_ERR_VALUE, "a batch of [%d, %d] tokens does not fit a context of %lld", B, T, (long long)P.ctx);
    return NAN;
  }
  ct_device dev = ct_tensor_device(ct_dict_tensor(ct_gpt_parameters(P.m), 0));
  ct_scope *sc = ct_scope_begin();
  int64_t sh[2] = {B, T};
  ct_options oi = ct_opts_dtype(CT_INT64);
  ct_tensor *x = ct_from_buffer(xs, CT_INT64, 2, sh, oi), *y = ct_from_buffer(ys, CT_INT64, 2, sh, oi);
  double v = NAN;
  ct_tensor *loss = NULL;
  if (x && y && dev.type != CT_DEVICE_CPU) x = ct_to_device(x, dev), y = x ? ct_to_device(y, dev) : NULL;
  if (x && y && ct_gpt_forward(P.m, x, y, true, NULL, NULL, &loss) == CT_OK && loss &&
      ct_optim_zero_grad(P.opt, true) == CT_OK && ct_backward(loss, NULL, false, false) == CT_OK &&
      ct_optim_step(P.opt) == CT_OK && ct_item_double(loss, &v) != CT_OK)
    v = NAN;
  ct_scope_end(sc);
  return v;
}

/* The trained weights for the page's own model: the number of parameters, then for each i
 * its name, numel, and its float32 values copied into dst (numel floats). */
EMSCRIPTEN_KEEPALIVE int ctwg_gpt_num_params(void) { return P.m ? (int)ct_dict_len(ct_gpt_parameters(P.m)) : 0; }
EMSCRIPTEN_KEEPALIVE const char *ctwg_gpt_param_name(int i) {
  return P.m && i >= 0 && i < ctwg_gpt_num_params() ? ct_dict_name(ct_gpt_parameters(P.m), i) : "";
}
EMSCRIPTEN_KEEPALIVE double ctwg_gpt_param_numel(int i) {
  return P.m && i >= 0 && i < ctwg_gpt_num_params() ? (double)ct_numel(ct_dict_tensor(ct_gpt_parameters(P.m), i)) : 0;
}
EMSCRIPTEN_KEEPALIVE int ctwg_gpt_param_copy(int i, float *dst) {
  if (!P.m || i < 0 || i >= ctwg_gpt_num_params() || !dst) {
    ct_set_error(CT_ERR_INDEX, "parameter %d out of range", i);
    return -1;
  }
  ct_tensor *t = ct_dict_tensor(ct_gpt_parameters(P.m), i);
  ct_scope *sc = ct_scope_begin();
  ct_tensor *h = ct_contiguous(ct_to_device(t, ct_cpu()));
  int rc = h ? 0 : -1;
  if (h) memcpy(dst, ct_data_ptr(h), (size_t)ct_numel(h) * sizeof(float));
  ct_scope_end(sc);
  return rc;
}

/* ---- web/mnist.html's WebGPU switch: the page's CNNs (makeModel in web/pages/mnist.mjs) on the
 * WebGPU device. The page makes its model as usual and copies its initial weights in here by
 * position (the Sequential's parameter order), so both devices start from the same values;
 * steps are Adam (the page's optim.Adam(params, {lr})) on float32 batches [B, 1, 28, 28] with
 * int64 labels; the trained weights go back for evaluation and the drawing pad. ---- */
static struct {
  int kind, np;
  ct_tensor *p[8];
  ct_optim *opt;
} Q;
/* kind 0 ('small'): conv5x5x8, pool, conv5x5x16, pool, dense10; 1 ('cnn'): conv5x5x32, pool,
 * conv5x5x64, pool, dense128, dense10 */
static const int64_t cnn_shapes[2][8][4] = {
    {{8, 1, 5, 5}, {8}, {16, 8, 5, 5}, {16}, {10, 256}, {10}},
    {{32, 1, 5, 5}, {32}, {64, 32, 5, 5}, {64}, {128, 1024}, {128}, {10, 128}, {10}}};
static const int cnn_ndims[2][8] = {{4, 1, 4, 1, 2, 1}, {4, 1, 4, 1, 2, 1, 2, 1}};

EMSCRIPTEN_KEEPALIVE void ctwg_cnn_end(void) {
  ct_optim_free(Q.opt);
  for (int i = 0; i < Q.np; i++) ct_release(Q.p[i]);
  memset(&Q, 0, sizeof Q);
}
EMSCRIPTEN_KEEPALIVE int ctwg_cnn_begin(int kind, double lr) {
  ctwg_cnn_end();
  if (kind != 0 && kind != 1) {
    ct_set_error(CT_ERR_VALUE, "unknown CNN kind %d", kind);
    return -1;
  }
  Q.kind = kind;
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  o.device = ct_webgpu();
  for (int i = 0; i < (kind ? 8 : 6); i++) {
    if (!(Q.p[i] = ct_zeros(cnn_ndims[kind][i], cnn_shapes[kind][i], o)) || ct_requires_grad_(Q.p[i], true) != CT_OK) {
      ctwg_cnn_end();
      return -1;
    }
    Q.np = i + 1;
  }
  ct_optim_options oo = ct_optim_defaults(CT_OPTIM_ADAM);
  oo.lr = lr;
  if (!(Q.opt = ct_optim_new(CT_OPTIM_ADAM, Q.np, Q.p, &oo))) {
    ctwg_cnn_end();
    return -1;
  }
  return 0;
}
EMSCRIPTEN_KEEPALIVE int ctwg_cnn_num_params(void) { return Q.np; }
EMSCRIPTEN_KEEPALIVE double ctwg_cnn_param_numel(int i) { return i >= 0 && i < Q.np ? (double)ct_numel(Q.p[i]) : 0; }
/* Parameter i's values from (dir 0) or into (dir 1) numel floats at host */
EMSCRIPTEN_KEEPALIVE int ctwg_cnn_param_io(int i, float *host, int dir) {
  if (i < 0 || i >= Q.np || !host) {
    ct_set_error(CT_ERR_INDEX, "parameter %d out of range", i);
    return -1;
  }
  ct_scope *sc = ct_scope_begin();
  int rc = -1;
  if (dir == 0) {
    ct_tensor *h = ct_from_buffer(host, CT_FLOAT32, ct_ndim(Q.p[i]), ct_shape(Q.p[i]), ct_opts_dtype(CT_FLOAT32));
    bool prev = ct_set_grad_enabled(false);
    rc = h && ct_copy_(Q.p[i], h) == CT_OK ? 0 : -1;
    ct_set_grad_enabled(prev);
  } else {
    ct_tensor *h = ct_contiguous(ct_to_device(Q.p[i], ct_cpu()));
    if (h) memcpy(host, ct_data_ptr(h), (size_t)ct_numel(h) * sizeof(float)), rc = 0;
  }
  ct_scope_end(sc);
  return rc;
}
/* One Adam step on x [B, 1, 28, 28] (float32) and labels y [B] (int64) in this module's memory;
 * returns the loss before the step, its only read-back (NaN on error, with ct_last_error()). */
EMSCRIPTEN_KEEPALIVE double ctwg_cnn_step(const float *x, const int64_t *y, int B) {
  if (!Q.opt) {
    ct_set_error(CT_ERR_RUNTIME, "ctwg_cnn_begin was not called");
    return NAN;
  }
  if (!x || !y || B < 1) {
    ct_set_error(CT_ERR_VALUE, "a batch of %d images", B);
    return NAN;
  }
  ct_scope *sc = ct_scope_begin();
  int64_t sx[4] = {B, 1, 28, 28}, sy[1] = {B}, s1[2] = {1, 1}, z[2] = {0, 0}, k2[2] = {2, 2};
  ct_tensor *xt = ct_to_device(ct_from_buffer(x, CT_FLOAT32, 4, sx, ct_opts_dtype(CT_FLOAT32)), ct_webgpu());
  ct_tensor *yt = ct_to_device(ct_from_buffer(y, CT_INT64, 1, sy, ct_opts_dtype(CT_INT64)), ct_webgpu());
  double v = NAN;
  ct_tensor *h = xt;
  for (int l = 0; l < 2 && h; l++)
    h = ct_max_pool2d(ct_relu(ct_conv2d(h, Q.p[2 * l], Q.p[2 * l + 1], s1, z, s1, 1)), k2, NULL, NULL, NULL, false, NULL);
  if (h) h = ct_linear(ct_flatten(h, 1, -1), Q.p[4], Q.p[5]);
  if (h && Q.kind == 1) h = ct_linear(ct_relu(h), Q.p[6], Q.p[7]);
  ct_tensor *loss = h && yt ? ct_cross_entropy(h, yt, NULL, CT_REDUCTION_MEAN, -100, 0) : NULL;
  if (loss && ct_optim_zero_grad(Q.opt, true) == CT_OK && ct_backward(loss, NULL, false, false) == CT_OK &&
      ct_optim_step(Q.opt) == CT_OK && ct_item_double(loss, &v) != CT_OK)
    v = NAN;
  ct_scope_end(sc);
  return v;
}
