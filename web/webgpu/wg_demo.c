/* The training demo of web/webgpu.html: an MLP (16 -> 64 -> 4, ReLU), cross-entropy, AdamW,
 * on a fixed synthetic classification task, on the WebGPU device or on the CPU (WebAssembly).
 * The same seed gives the same initial weights and data on both, so the page can compare
 * the two runs' losses step by step. Every call is made by the page through ccall with
 * {async: true}: reading the loss back from WebGPU yields to the browser (ASYNCIFY). */
#include "ctorch.h"
#include "ctorch/webgpu.h"
#include "core/internal.h" /* ct_set_error */
#include "backend/webgpu/webgpu_backend.h" /* ct_webgpu_get_counters */
#include <emscripten.h>
#include <math.h>
#include <string.h>

static struct {
  ct_tensor *p[4], *x, *t;
  ct_optim *opt;
} D;

EMSCRIPTEN_KEEPALIVE void ctwg_demo_end(void) {
  for (int k = 0; k < 4; k++) ct_release(D.p[k]);
  ct_release(D.x);
  ct_release(D.t);
  ct_optim_free(D.opt);
  memset(&D, 0, sizeof D);
}

/* 0 on success, else -1 with ct_last_error() set (e.g. no WebGPU adapter) */
EMSCRIPTEN_KEEPALIVE int ctwg_demo_begin(int webgpu, int seed, int batch) {
  ctwg_demo_end();
  if (batch < 1 || batch > 4096) {
    ct_set_error(CT_ERR_VALUE, "batch must be in [1, 4096], got %d", batch);
    return -1;
  }
  ct_device dev = webgpu ? ct_webgpu() : ct_cpu();
  ct_generator *g = ct_generator_new((uint64_t)seed);
  if (!g) return -1;
  ct_scope *sc = ct_scope_begin();
  int64_t sx[2] = {batch, 16}, sw1[2] = {64, 16}, sb1[1] = {64}, sw2[2] = {4, 64}, sb2[1] = {4}, sp[2] = {16, 4};
  ct_options f32 = ct_opts_dtype(CT_FLOAT32);
  ct_tensor *init[4] = {ct_mul_scalar(ct_randn(2, sw1, f32, g), ct_sf(0.25)), ct_zeros(1, sb1, f32),
                        ct_mul_scalar(ct_randn(2, sw2, f32, g), ct_sf(0.125)), ct_zeros(1, sb2, f32)};
  ct_tensor *x = ct_randn(2, sx, f32, g), *proj = ct_randn(2, sp, f32, g);
  int64_t one = 1;
  ct_tensor *t = ct_argmax(ct_matmul(x, proj), &one, false); /* the class a fixed projection picks */
  bool ok = t != NULL;
  for (int k = 0; k < 4 && ok; k++) {
    D.p[k] = ct_to_device(init[k], dev);
    ok = D.p[k] && ct_requires_grad_(D.p[k], true) == CT_OK;
    if (ok) ct_keep(D.p[k]);
  }
  if (ok) ok = (D.x = ct_to_device(x, dev)) != NULL && (D.t = ct_to_device(t, dev)) != NULL;
  if (ok) ct_keep(D.x), ct_keep(D.t);
  ct_scope_end(sc);
  ct_generator_free(g);
  if (ok) {
    ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
    o.lr = 0.01;
    ok = (D.opt = ct_optim_new(CT_OPTIM_ADAMW, 4, D.p, &o)) != NULL;
  }
  if (!ok) {
    ctwg_demo_end();
    return -1;
  }
  return 0;
}

/* one step; returns the loss before the step (NaN on error, with ct_last_error() set) */
EMSCRIPTEN_KEEPALIVE double ctwg_demo_step(void) {
  if (!D.opt) {
    ct_set_error(CT_ERR_RUNTIME, "ctwg_demo_begin was not called");
    return NAN;
  }
  ct_scope *sc = ct_scope_begin();
  double v = NAN;
  ct_tensor *l = ct_cross_entropy(ct_linear(ct_relu(ct_linear(D.x, D.p[0], D.p[1])), D.p[2], D.p[3]), D.t, NULL,
                                  CT_REDUCTION_MEAN, -100, 0);
  if (l && ct_optim_zero_grad(D.opt, true) == CT_OK && ct_backward(l, NULL, false, false) == CT_OK &&
      ct_optim_step(D.opt) == CT_OK && ct_item_double(l, &v) != CT_OK)
    v = NAN;
  ct_scope_end(sc);
  return v;
}

EMSCRIPTEN_KEEPALIVE const char *ctwg_last_error(void) { return ct_last_error(); }

/* The backend's counters (pipelines, dispatches, submits, uploads, downloads, buffers), for the page. */
EMSCRIPTEN_KEEPALIVE double ctwg_counter(int which) {
  ct_webgpu_counters c = ct_webgpu_get_counters();
  int64_t v[6] = {c.pipelines, c.dispatches, c.submits, c.uploads, c.downloads, c.buffers_created};
  return which >= 0 && which < 6 ? (double)v[which] : -1;
}
