/* nn ops: softmax, normalisation layers, dropout, embedding, attention; entry points and
 * derivative formulas side by side. Convolutions live in conv.c, pools and interpolation in
 * pool.c. The norms compose a statistics op (norm_moments, private) and rsqrt_eps with the
 * public elementwise ops, so their gradients and double backward come from those formulas.
 * On CPU, float32/float64 layer_norm and rms_norm run fused kernels instead (kernels_norm.c;
 * the composed path stays the reference, used for other dtypes/devices and under
 * CT_REFERENCE_KERNELS=1). */
#include "nn_util.h"
#include "layout.h"
#include "reduce_util.h"
#include "../backend/cpu/simd/simd.h"
#include <math.h>

/* ---- helpers shared by the family ---- */
ct_tensor *nn_new_out(const ct_tensor *like, int nd, const int64_t *shape, ct_dtype dt) {
  return ct_tensor_new(nd, shape, dt, like->storage->device);
}

/* Dispatches a call whose outputs were allocated; on failure releases them. */
ct_status nn_dispatch(ct_call *c) {
  ct_status st = ct_dispatch(c);
  if (st != CT_OK)
    for (int j = 0; j < c->n_out; j++) {
      ct_release(c->out[j]);
      c->out[j] = NULL;
    }
  return st;
}

bool nn_is_reduced_float(ct_dtype dt) { return dt == CT_FLOAT16 || dt == CT_BFLOAT16; }

ct_status nn_not_implemented(const char *kernel, ct_dtype dt) {
  return CT_ERR(CT_ERR_RUNTIME, "\"%s\" not implemented for '%s'", kernel, ct_dtype_torch_name(dt));
}

/* Temporary-release helper: releases up to 8 handles (NULL-safe). */
void nn_release_n(int n, ...) {
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) ct_release(va_arg(ap, ct_tensor *));
  va_end(ap);
}

/* ---- softmax / log_softmax ---- */
static ct_tensor *softmax_impl(int op, const ct_tensor *x, int64_t dim, int dtype) {
  if (ct_check_tensor(x, op == CT_OP_softmax ? "softmax" : "log_softmax")) return NULL;
  int64_t d = ct_wrap_dim(dim, x->ndim > 0 ? x->ndim : 1);
  if (d < 0) return NULL;
  if (dtype >= 0 && !ct_dtype_valid(dtype)) {
    ct_set_error(CT_ERR_TYPE, "invalid dtype %d", dtype);
    return NULL;
  }
  ct_dtype dt = dtype >= 0 ? (ct_dtype)dtype : x->dtype;
  if ((!ct_dtype_is_floating(dt) || dt == CT_FLOAT16) && ct_numel(x) == 0) {
    /* PyTorch 1.13 returns an empty input before choosing a kernel, whatever its dtype */
    ct_options o = ct_opts_dtype(dt);
    o.device = x->storage->device;
    return ct_empty(x->ndim, x->shape, o);
  }
  if (!ct_dtype_is_floating(dt) || dt == CT_FLOAT16) {
    bool last = x->ndim == 0 || d == x->ndim - 1;
    nn_not_implemented(last ? (op == CT_OP_softmax ? "softmax_lastdim_kernel_impl" : "log_softmax_lastdim_kernel_impl")
                            : "softmax_kernel_impl", dt);
    return NULL;
  }
  ct_tensor *xc = ct_to_dtype(x, dt);
  if (!xc) return NULL;
  ct_attrs a = ct_attrs_zero();
  a.k[0] = x->ndim ? d : 0;
  ct_tensor *r = ct_dispatch_new(op, 1, &xc, x->ndim, x->shape, dt, &a);
  ct_release(xc);
  return r;
}

ct_tensor *ct_softmax(const ct_tensor *x, int64_t dim, int dtype) { return softmax_impl(CT_OP_softmax, x, dim, dtype); }
ct_tensor *ct_log_softmax(const ct_tensor *x, int64_t dim, int dtype) {
  return softmax_impl(CT_OP_log_softmax, x, dim, dtype);
}

/* Reduced-precision gradients are formed in float32 (PyTorch's kernels accumulate in float);
 * the engine casts the result back to the input's dtype. */
static ct_tensor *up(ct_tensor *t) { return nn_is_reduced_float(t->dtype) ? ct_to_dtype(t, CT_FLOAT32) : ct_retain(t); }

/* d softmax: y * (g - sum(g * y, dim)) */
ct_status ct_bw_softmax(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *y0 = ct_node_saved_out(n, 0);
  if (!y0) return ct_last_status();
  int64_t d = n->a.k[0];
  ct_tensor *y = up(y0), *gg = up(g[0]);
  ct_tensor *gy = (y && gg) ? ct_mul(gg, y) : NULL;
  ct_tensor *s = gy ? ct_sum_dims(gy, 1, &d, true) : NULL;
  ct_tensor *t = s ? ct_sub(gg, s) : NULL;
  gin[0] = t ? ct_mul(y, t) : NULL;
  nn_release_n(5, y, gg, gy, s, t);
  return gin[0] ? CT_OK : ct_last_status();
}

/* d log_softmax: g - exp(y) * sum(g, dim) */
ct_status ct_bw_log_softmax(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *y0 = ct_node_saved_out(n, 0);
  if (!y0) return ct_last_status();
  int64_t d = n->a.k[0];
  ct_tensor *y = up(y0), *gg = up(g[0]);
  ct_tensor *e = y ? ct_exp(y) : NULL;
  ct_tensor *s = (e && gg) ? ct_sum_dims(gg, 1, &d, true) : NULL;
  ct_tensor *t = s ? ct_mul(e, s) : NULL;
  gin[0] = t ? ct_sub(gg, t) : NULL;
  nn_release_n(5, y, gg, e, s, t);
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- statistics: mean and biased variance over mask (keepdim) ---- */
ct_status nn_moments(const ct_tensor *x, uint32_t mask, ct_tensor **mean, ct_tensor **var) {
  int nd;
  int64_t shape[CT_MAX_DIMS];
  ct_reduced_shape(x, mask, true, &nd, shape);
  ct_call c = ct_call_make(CT_OP_norm_moments);
  c.n_in = 1;
  c.n_out = 2;
  c.in[0] = (ct_tensor *)x;
  c.out[0] = nn_new_out(x, nd, shape, x->dtype);
  c.out[1] = nn_new_out(x, nd, shape, x->dtype);
  c.a.k[0] = mask;
  if (!c.out[0] || !c.out[1]) {
    ct_release(c.out[0]);
    ct_release(c.out[1]);
    return ct_last_status();
  }
  CT_TRY(nn_dispatch(&c));
  *mean = c.out[0];
  *var = c.out[1];
  return CT_OK;
}

/* d mean = 1/N, d var = 2 (x - mean) / N */
ct_status ct_bw_norm_moments(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *mean = ct_node_saved_out(n, 0);
  if (!x || !mean) return ct_last_status();
  int64_t N = 1;
  for (int d = 0; d < n->in_meta[0].ndim; d++)
    if ((n->a.k[0] >> d) & 1) N *= n->in_meta[0].shape[d];
  ct_tensor *dx = ct_sub(x, mean);
  ct_tensor *t = dx ? ct_mul(dx, g[1]) : NULL;
  ct_tensor *t2 = t ? ct_mul_scalar(t, ct_sf(2.0 / (double)N)) : NULL;
  ct_tensor *gm = t2 ? ct_div_scalar(g[0], ct_sf((double)N)) : NULL;
  gin[0] = gm ? ct_add(t2, gm) : NULL;
  nn_release_n(4, dx, t, t2, gm);
  return gin[0] ? CT_OK : ct_last_status();
}

/* 1/sqrt(v + eps) */
ct_tensor *nn_rsqrt_eps(const ct_tensor *v, double eps) {
  ct_attrs a = ct_attrs_zero();
  a.f[0] = eps;
  return ct_dispatch_new(CT_OP_rsqrt_eps, 1, (ct_tensor *const *)&v, v->ndim, v->shape, v->dtype, &a);
}

/* d rsqrt(v + eps) = -y^3 / 2 */
ct_status ct_bw_rsqrt_eps(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *y = ct_node_saved_out(n, 0);
  if (!y) return ct_last_status();
  ct_tensor *y2 = ct_mul(y, y), *y3 = y2 ? ct_mul(y2, y) : NULL, *h = y3 ? ct_mul_scalar(y3, ct_sf(-0.5)) : NULL;
  gin[0] = h ? ct_mul(g[0], h) : NULL;
  nn_release_n(3, y2, y3, h);
  return gin[0] ? CT_OK : ct_last_status();
}

/* (x - mean) * rstd, then * weight + bias (either may be NULL; already shaped to broadcast). */
static ct_tensor *normalize(const ct_tensor *x, const ct_tensor *mean, const ct_tensor *rstd, const ct_tensor *w,
                            const ct_tensor *b) {
  ct_tensor *d = mean ? ct_sub(x, mean) : ct_retain((ct_tensor *)x);
  ct_tensor *y = d && rstd ? ct_mul(d, rstd) : ct_retain(d);
  ct_release(d);
  if (y && w) {
    ct_tensor *t = ct_mul(y, w);
    ct_release(y);
    y = t;
  }
  if (y && b) {
    ct_tensor *t = ct_add(y, b);
    ct_release(y);
    y = t;
  }
  return y;
}

/* The dtype the norms compute in: float32 for half types (PyTorch accumulates in float). */
static ct_tensor *compute_view(const ct_tensor *t, ct_dtype dt) { return t ? ct_to_dtype(t, dt) : NULL; }

static ct_status check_norm_dtype(const ct_tensor *x, const char *kernel) {
  if (!ct_dtype_is_floating(x->dtype) || x->dtype == CT_FLOAT16) return nn_not_implemented(kernel, x->dtype);
  return CT_OK;
}

/* ---- fused layer_norm / rms_norm (CPU float32/float64) ----
 * Forward: one op writing y and the per-row mean / rstd it saves. Backward: one op writing
 * dx, dweight, dbias, unless grad mode is on (create_graph): then the same gradient is
 * formed from public ops, recomputing the statistics from x, so double backward sees every
 * dependence on x. attrs: i0 normalized numel, f0 eps, k0 rms, k1 has weight, k2 has bias,
 * k3 number of normalized dims. */
static bool norm_fusable(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b) {
  /* CPU, CUDA (src/backend/cuda/k_fast.cu has the three fused kernels) and WebGPU (float32:
   * src/backend/webgpu/webgpu_kernels.c) */
  ct_device_type dt = x->storage->device.type;
  if (!ct_fast_enabled() || (dt != CT_DEVICE_CPU && dt != CT_DEVICE_CUDA && dt != CT_DEVICE_WEBGPU) || ct_numel(x) == 0)
    return false;
  if (x->dtype != CT_FLOAT32 && (x->dtype != CT_FLOAT64 || dt == CT_DEVICE_WEBGPU)) return false;
  const ct_tensor *o[2] = {w, b};
  for (int k = 0; k < 2; k++)
    if (o[k] && (o[k]->dtype != x->dtype || o[k]->storage->device.type != dt ||
                 o[k]->storage->device.index != x->storage->device.index))
      return false;
  return true;
}

static ct_tensor *fused_norm(bool rms, const ct_tensor *x, int n, const ct_tensor *w, const ct_tensor *b, double eps) {
  int64_t N = 1, sshape[CT_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) {
    bool red = d >= x->ndim - n;
    if (red) N *= x->shape[d];
    sshape[d] = red ? 1 : x->shape[d];
  }
  ct_tensor *xc = ct_contiguous(x), *wc = w ? ct_contiguous(w) : NULL, *bc = b ? ct_contiguous(b) : NULL;
  ct_call c = ct_call_make(rms ? CT_OP_native_rms_norm : CT_OP_native_layer_norm);
  c.n_in = c.n_out = rms ? 2 : 3;
  c.in[0] = xc;
  c.in[1] = wc;
  if (!rms) c.in[2] = bc;
  c.a.i[0] = N;
  c.a.f[0] = eps;
  c.a.k[0] = rms;
  c.a.k[1] = w != NULL;
  c.a.k[2] = b != NULL;
  c.a.k[3] = n;
  if (xc && (!w || wc) && (!b || bc)) {
    bool ok = (c.out[0] = nn_new_out(x, x->ndim, x->shape, x->dtype)) != NULL;
    for (int j = 1; j < c.n_out; j++) ok = (c.out[j] = nn_new_out(x, x->ndim, sshape, x->dtype)) != NULL && ok;
    if (ok) nn_dispatch(&c);
    else
      for (int j = 0; j < c.n_out; j++) {
        ct_release(c.out[j]);
        c.out[j] = NULL;
      }
  }
  nn_release_n(3, xc, wc, bc);
  for (int j = 1; j < c.n_out; j++) ct_release(c.out[j]); /* the node keeps what it saved */
  /* ct_bw_native_norm reads g[0] only: no zero-filled gradients for mean / rstd */
  if (c.out[0] && c.out[0]->grad_fn) c.out[0]->grad_fn->grad_unused_mask = rms ? 0x2 : 0x6;
  return c.out[0];
}

/* Failure path of the composed norm gradients: drop the partial results, keep the error. */
static ct_status norm_bw_fail(ct_scope *s, ct_tensor **gin) {
  for (int i = 0; i < 3; i++) {
    ct_release(gin[i]);
    gin[i] = NULL;
  }
  return ct_scope_end_failed(s);
}

/* Gradient with public ops (grad mode on): xh = (x - mean) rstd, gw = g w,
 * dx = rstd (gw - mean(gw) - xh mean(gw xh)) (rms: mean 0, no mean(gw) term),
 * dw = sum(g xh), db = sum(g) over the batch dims. */
static ct_status norm_bw_composed(ct_node *n, ct_tensor *x, ct_tensor *w, ct_tensor *g, ct_tensor **gin) {
  bool rms = n->a.k[0];
  int nd = (int)n->a.k[3];
  double eps = n->a.f[0];
  int64_t dims[CT_MAX_DIMS];
  uint32_t mask = 0;
  for (int i = 0; i < nd; i++) {
    dims[i] = x->ndim - nd + i;
    mask |= 1u << dims[i];
  }
  ct_scope *s = ct_scope_begin();
  ct_tensor *mean = NULL, *var = NULL, *xh = NULL, *rstd = NULL;
  if (rms) {
    ct_tensor *sq = ct_mul(x, x);
    var = sq ? ct_mean_dims(sq, nd, dims, true) : NULL;
  } else if (nn_moments(x, mask, &mean, &var) != CT_OK) {
    var = NULL;
  }
  if (var) rstd = nn_rsqrt_eps(var, eps);
  if (rstd) {
    ct_tensor *d = rms ? x : ct_sub(x, mean);
    xh = d ? ct_mul(d, rstd) : NULL;
  }
  if (!xh) goto fail;
  if (ct_node_needs_grad(n, 0)) {
    ct_tensor *gw = w ? ct_mul(g, w) : g;
    ct_tensor *gx = gw ? ct_mul(gw, xh) : NULL;
    ct_tensor *mb = gx ? ct_mean_dims(gx, nd, dims, true) : NULL;
    ct_tensor *t = mb ? ct_mul(xh, mb) : NULL;
    ct_tensor *u = NULL;
    if (t && !rms) {
      ct_tensor *ma = ct_mean_dims(gw, nd, dims, true);
      ct_tensor *v = ma ? ct_sub(gw, ma) : NULL;
      u = v ? ct_sub(v, t) : NULL;
    } else if (t) {
      u = ct_sub(gw, t);
    }
    if (!u || !(gin[0] = ct_mul(rstd, u))) goto fail;
    ct_keep(gin[0]);
  }
  if (w && ct_node_needs_grad(n, 1)) {
    ct_tensor *p = ct_mul(g, xh);
    if (!p || !(gin[1] = ct_sum_to_size(p, w->ndim, w->shape))) goto fail;
    ct_keep(gin[1]);
  }
  if (!rms && n->a.k[2] && ct_node_needs_grad(n, 2)) {
    if (!(gin[2] = ct_sum_to_size(g, n->in_meta[2].ndim, n->in_meta[2].shape))) goto fail;
    ct_keep(gin[2]);
  }
  ct_scope_end(s);
  return CT_OK;
fail:
  return norm_bw_fail(s, gin);
}

/* The fused norm backward kernels' call: inputs (g, x, w, mean, rstd) and the node's arguments; the
 * caller allocates the outputs it needs. */
static ct_call norm_bw_call(int op, const ct_node *n, ct_tensor *gc, ct_tensor *x, ct_tensor *w, ct_tensor *mean,
                            ct_tensor *rstd) {
  ct_call c = ct_call_make(op);
  c.n_in = 5;
  c.n_out = 3;
  c.in[0] = gc;
  c.in[1] = x;
  c.in[2] = w;
  c.in[3] = mean;
  c.in[4] = rstd;
  c.a = n->a;
  return c;
}
/* Runs it when the outputs were allocated (ok); releases gc, and the outputs on failure. */
static ct_status norm_bw_dispatch(ct_call *c, bool ok, ct_tensor *gc) {
  ct_status st = ok ? nn_dispatch(c) : ct_last_status();
  ct_release(gc);
  if (!ok || st != CT_OK) {
    for (int j = 0; j < 3; j++) ct_release(c->out[j]);
    return st != CT_OK ? st : CT_ERR_RUNTIME; /* an allocation failed: never report success */
  }
  return CT_OK;
}

ct_status ct_bw_native_norm(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  bool rms = n->a.k[0], has_w = n->a.k[1];
  ct_tensor *x = ct_node_saved_in(n, 0), *w = has_w ? ct_node_saved_in(n, 1) : NULL;
  if (!x || (has_w && !w)) return ct_last_status();
  if (ct_is_grad_enabled()) return norm_bw_composed(n, x, w, g[0], gin);
  ct_tensor *mean = rms ? NULL : ct_node_saved_out(n, 1), *rstd = ct_node_saved_out(n, rms ? 1 : 2);
  if ((!rms && !mean) || !rstd) return ct_last_status();
  ct_tensor *gc = ct_contiguous(g[0]);
  if (!gc) return ct_last_status();
  ct_call c = norm_bw_call(CT_OP_native_norm_backward, n, gc, x, w, mean, rstd);
  bool ok = (c.out[0] = nn_new_out(x, x->ndim, x->shape, x->dtype)) != NULL;
  if (ok && has_w && ct_node_needs_grad(n, 1)) ok = (c.out[1] = nn_new_out(x, w->ndim, w->shape, x->dtype)) != NULL;
  if (ok && !rms && n->a.k[2] && ct_node_needs_grad(n, 2))
    ok = (c.out[2] = nn_new_out(x, n->in_meta[2].ndim, n->in_meta[2].shape, x->dtype)) != NULL;
  ct_status st = norm_bw_dispatch(&c, ok, gc);
  if (st != CT_OK) return st;
  if (ct_node_needs_grad(n, 0)) gin[0] = c.out[0];
  else ct_release(c.out[0]);
  gin[1] = c.out[1];
  gin[2] = c.out[2];
  return CT_OK;
}

/* ---- layer_norm ---- */
ct_tensor *ct_layer_norm(const ct_tensor *x, int n, const int64_t *nshape, const ct_tensor *weight,
                         const ct_tensor *bias, double eps) {
  if (ct_check_tensor(x, "layer_norm")) return NULL;
  char a[160], b[160];
  if (n < 1 || !nshape) {
    ct_set_error(CT_ERR_RUNTIME, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                 "element, but got normalized_shape = []");
    return NULL;
  }
  bool ok = n <= x->ndim;
  for (int i = 0; ok && i < n; i++) ok = x->shape[x->ndim - n + i] == nshape[i];
  if (!ok) {
    char star[200];
    snprintf(star, sizeof star, "[*, %s", ct_shape_str(n, nshape, b, sizeof b) + 1);
    ct_set_error(CT_ERR_RUNTIME, "Given normalized_shape=%s, expected input with shape %s, but got input of size%s",
                 ct_shape_str(n, nshape, a, sizeof a), star, CT_SHAPE_STR(x, b));
    return NULL;
  }
  const ct_tensor *wb[2] = {weight, bias};
  const char *names[2] = {"weight", "bias"};
  for (int k = 0; k < 2; k++) {
    const ct_tensor *t = wb[k];
    if (!t) continue;
    bool same = t->ndim == n;
    for (int i = 0; same && i < n; i++) same = t->shape[i] == nshape[i];
    if (!same) {
      ct_set_error(CT_ERR_RUNTIME, "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and "
                   "normalized_shape = %s", names[k], names[k], CT_SHAPE_STR(t, a), ct_shape_str(n, nshape, b, sizeof b));
      return NULL;
    }
  }
  if (check_norm_dtype(x, "LayerNormKernelImpl")) return NULL;
  if (norm_fusable(x, weight, bias)) return ct_name_node(fused_norm(false, x, n, weight, bias, eps), "NativeLayerNormBackward0");
  ct_dtype cdt = nn_is_reduced_float(x->dtype) ? CT_FLOAT32 : x->dtype;
  ct_tensor *xc = compute_view(x, cdt), *w = compute_view(weight, cdt), *bb = compute_view(bias, cdt);
  ct_tensor *mean = NULL, *var = NULL, *rstd = NULL, *y = NULL;
  uint32_t mask = 0;
  for (int i = 0; i < n; i++) mask |= 1u << (x->ndim - n + i);
  if (xc && (!weight || w) && (!bias || bb) && nn_moments(xc, mask, &mean, &var) == CT_OK) {
    rstd = nn_rsqrt_eps(var, eps);
    if (rstd) y = normalize(xc, mean, rstd, w, bb);
  }
  nn_release_n(6, xc, w, bb, mean, var, rstd);
  if (y && y->dtype != x->dtype) {
    ct_tensor *t = ct_to_dtype(y, x->dtype);
    ct_release(y);
    y = t;
  }
  /* PyTorch 1.13 runs one native op: its name on the result's node (users print it) */
  if (y && y->grad_fn) y->grad_fn->name = "NativeLayerNormBackward0";
  return y;
}

/* weight [C] viewed as [1, C, 1, ...] for an input of nd dims. */
static ct_tensor *channel_view(const ct_tensor *t, int nd, ct_dtype dt) {
  if (!t) return NULL;
  int64_t shape[CT_MAX_DIMS];
  for (int d = 0; d < nd; d++) shape[d] = 1;
  shape[1] = t->shape[0];
  ct_tensor *c = ct_to_dtype(t, dt);
  if (!c) return NULL;
  ct_tensor *v = ct_reshape(c, nd, shape);
  ct_release(c);
  return v;
}

/* ---- group_norm ---- */
ct_tensor *ct_group_norm(const ct_tensor *x, int64_t G, const ct_tensor *weight, const ct_tensor *bias, double eps) {
  if (ct_check_tensor(x, "group_norm")) return NULL;
  char a[160], b[160];
  if (x->ndim < 2) {
    ct_set_error(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    return NULL;
  }
  int64_t N = x->shape[0], C = x->shape[1];
  if (G <= 0) {
    ct_set_error(CT_ERR_VALUE, "integer division or modulo by zero");
    return NULL;
  }
  if (C % G) {
    ct_set_error(CT_ERR_RUNTIME, "Expected number of channels in input to be divisible by num_groups, but got input of "
                 "shape %s and num_groups=%lld", CT_SHAPE_STR(x, a), (long long)G);
    return NULL;
  }
  const ct_tensor *wb[2] = {weight, bias};
  const char *names[2] = {"weight", "bias"};
  for (int k = 0; k < 2; k++)
    if (wb[k] && (wb[k]->ndim != 1 || wb[k]->shape[0] != C)) {
      ct_set_error(CT_ERR_RUNTIME, "Expected %s to be a vector of size equal to the number of channels in input, but "
                   "got %s of shape %s and input of shape %s", names[k], names[k], CT_SHAPE_STR(wb[k], a), CT_SHAPE_STR(x, b));
      return NULL;
    }
  if (check_norm_dtype(x, "GroupNormKernelImpl")) return NULL;
  ct_dtype cdt = nn_is_reduced_float(x->dtype) ? CT_FLOAT32 : x->dtype;
  ct_tensor *xc = compute_view(x, cdt);
  int64_t gshape[3] = {N, G, (N != 0 && G != 0) ? ct_numel(x) / (N * G) : 0};
  ct_tensor *xg = xc ? ct_reshape(xc, 3, gshape) : NULL;
  ct_tensor *mean = NULL, *var = NULL, *rstd = NULL, *yg = NULL, *y = NULL;
  if (xg && nn_moments(xg, 1u << 2, &mean, &var) == CT_OK && (rstd = nn_rsqrt_eps(var, eps)) != NULL)
    yg = normalize(xg, mean, rstd, NULL, NULL);
  ct_tensor *yr = yg ? ct_reshape(yg, x->ndim, x->shape) : NULL;
  ct_tensor *w = channel_view(weight, x->ndim, cdt), *bb = channel_view(bias, x->ndim, cdt);
  if (yr && (!weight || w) && (!bias || bb)) y = normalize(yr, NULL, NULL, w, bb);
  nn_release_n(8, xc, xg, mean, var, rstd, yg, yr, w);
  ct_release(bb);
  if (y && y->dtype != x->dtype) {
    ct_tensor *t = ct_to_dtype(y, x->dtype);
    ct_release(y);
    y = t;
  }
  /* PyTorch 1.13 runs one native op: its name on the result's node (users print it) */
  if (y && y->grad_fn) y->grad_fn->name = "NativeGroupNormBackward0";
  return y;
}

/* ---- batch_norm ---- */
#ifdef CT_HAVE_CUDA
/* src/backend/cuda/k_bn.cu: 1 done, 0 not applicable (compose it), -1 failed */
int ct_cuda_bn_update_running(ct_tensor *rm, const ct_tensor *mean, ct_tensor *rv, const ct_tensor *var,
                              double momentum, double factor);
#endif
/* src/backend/webgpu/webgpu_kernels.c: the same contract */
int ct_webgpu_bn_update_running(ct_tensor *rm, const ct_tensor *mean, ct_tensor *rv, const ct_tensor *var,
                                double momentum, double factor);
static ct_status update_running(ct_tensor *running, const ct_tensor *stat, double momentum, double factor) {
  int64_t C = ct_numel(running);
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *flat = ct_reshape(stat, 1, &C);
  ct_tensor *s = flat ? ct_mul_scalar(flat, ct_sf(momentum * factor)) : NULL;
  ct_tensor *r = s ? ct_mul_scalar(running, ct_sf(1.0 - momentum)) : NULL;
  ct_tensor *sum = r ? ct_add(r, s) : NULL;
  ct_status st = sum ? ct_copy_(running, sum) : ct_last_status();
  nn_release_n(4, flat, s, r, sum);
  ct_set_grad_enabled(prev);
  return st;
}

/* Fused batch_norm (CPU float32/float64; kernels_bn.c): one op for y and the per-channel
 * statistics, one for the gradients, in place of the composed statistics + elementwise ops
 * below (which stay the reference: other dtypes/devices, CT_REFERENCE_KERNELS=1, running stats
 * that require grad). A backward taken with create_graph forms the same gradient from public
 * ops (bn_bw_composed), recomputing the statistics from x so double backward sees them. */
static bool bn_fusable(const ct_tensor *x, const ct_tensor *const *others) {
  /* CPU, and CUDA (src/backend/cuda/k_bn.cu has the same two ops), and WebGPU in float32 (webgpu_kernels.c) */
  ct_device_type dv = x->storage->device.type;
  if (!ct_fast_enabled() || (dv != CT_DEVICE_CPU && dv != CT_DEVICE_CUDA && dv != CT_DEVICE_WEBGPU) || ct_numel(x) == 0)
    return false;
  if (x->dtype != CT_FLOAT32 && x->dtype != CT_FLOAT64) return false;
  if (dv == CT_DEVICE_WEBGPU && x->dtype != CT_FLOAT32) return false;
  for (int k = 0; k < 4; k++) {
    const ct_tensor *t = others[k];
    if (t && (t->dtype != x->dtype || t->storage->device.type != dv || (k >= 2 && ct_requires_grad(t))))
      return false;
  }
  return true;
}

/* t (numel C) as a contiguous [C] tensor (a view where possible, so gradients reach t) */
static ct_tensor *bn_flat(const ct_tensor *t) {
  if (!t) return NULL;
  /* already [C] contiguous (BatchNorm's own parameters): the tensor itself, so no view node sits
   * between the op and the parameter and its gradient is stored without a copy */
  if (t->ndim == 1 && ct_is_contiguous(t)) return ct_retain((ct_tensor *)t);
  int64_t C = ct_numel(t);
  ct_tensor *r = ct_reshape(t, 1, &C);
  ct_tensor *c = r ? ct_contiguous(r) : NULL;
  ct_release(r);
  return c;
}

/* The op with a ReLU fused behind it (kernels_bn.c, k3): the node also saves the output (relu(y)),
 * whose sign is the ReLU's mask in the backward. restride: the kernel wrote a contiguous y for a
 * channels-last x (CPU), given x's layout before autograd records (what the separate ops return). */
static ct_status bn_relu_dispatch(ct_call *c, bool restride) {
  ct_status st = ct_run_kernel(c);
  if (st == CT_OK && restride) st = ct_restride_out0_channels_last(c);
  if (st == CT_OK) {
    ct_clear_error();
    uint32_t save = ct_op_info_of(c->op)->save | CT_SAVE_OUT(0);
    if (!ct_record_node(c->op, c->n_in, c->in, c->n_out, c->out, &c->a, save, NULL, NULL) && ct_last_status() != CT_OK)
      st = ct_last_status();
  }
  if (st != CT_OK)
    for (int j = 0; j < c->n_out; j++) {
      ct_release(c->out[j]);
      c->out[j] = NULL;
    }
  return st;
}

/* res in xc's layout (the kernels read both as one flat array): itself, or a differentiable copy */
static ct_tensor *bn_res_like(const ct_tensor *res, const ct_tensor *xc) {
  if (ct_dense_same_layout(res, xc)) return ct_retain((ct_tensor *)res);
  return ct_is_contiguous(xc) ? ct_contiguous(res) : ct_to_channels_last(res);
}

/* res: NULL, or (with relu) the residual added before the ReLU (k4, in[5]; ct_batch_norm_add_relu) */
static ct_tensor *bn_fused(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var, const ct_tensor *weight,
                           const ct_tensor *bias, bool training, double momentum, double eps, bool relu,
                           const ct_tensor *res) {
  int64_t C = x->shape[1], per_channel = ct_numel(x) / C;
  /* channels-last float32 on CUDA: the kernels read NHWC as it is and write the output so */
  bool cl = ct_suggests_channels_last(x) && x->storage->device.type == CT_DEVICE_CUDA && x->dtype == CT_FLOAT32;
  ct_tensor *xc = cl ? ct_retain((ct_tensor *)x) : ct_contiguous(x), *wc = bn_flat(weight), *bc = bn_flat(bias);
  ct_tensor *rm = training ? NULL : bn_flat(running_mean), *rv = training ? NULL : bn_flat(running_var);
  ct_tensor *rc = res && xc ? bn_res_like(res, xc) : NULL;
  ct_call c = ct_call_make(CT_OP_native_batch_norm);
  c.n_in = res ? 6 : 5;
  c.n_out = 4;
  c.in[0] = xc;
  c.in[1] = wc;
  c.in[2] = bc;
  c.in[3] = rm;
  c.in[4] = rv;
  c.in[5] = rc;
  c.a.k[0] = training;
  c.a.k[1] = weight != NULL;
  c.a.k[2] = bias != NULL;
  c.a.k[3] = relu; /* only for devices whose kernels read it (batch_norm_impl decides) */
  c.a.k[4] = res != NULL; /* CPU and CUDA only (batch_norm_impl decides) */
  c.a.f[0] = eps;
  ct_status st = CT_ERR_RUNTIME;
  if (xc && (!weight || wc) && (!bias || bc) && (training || (rm && rv)) && (!res || rc)) {
    bool ok = (c.out[0] = cl ? ct_new_channels_last(x->shape, x->dtype, x->storage->device)
                             : nn_new_out(x, x->ndim, x->shape, x->dtype)) != NULL;
    for (int j = 1; j < 4; j++) ok = (c.out[j] = nn_new_out(x, 1, &C, x->dtype)) != NULL && ok;
    /* other backends: a channels-last x still gives a channels-last y (PyTorch's layout; the ReLU-only
     * form keeps the contiguous y it always gave) */
    if (ok) st = relu ? bn_relu_dispatch(&c, res && !cl && ct_suggests_channels_last(x))
                 : !cl && ct_suggests_channels_last(x) ? ct_dispatch_channels_last_out0(&c)
                                                       : nn_dispatch(&c);
    else
      for (int j = 0; j < 4; j++) {
        ct_release(c.out[j]);
        c.out[j] = NULL;
      }
  }
  if (st == CT_OK && training) {
    double fvar = per_channel > 1 ? (double)per_channel / (double)(per_channel - 1) : INFINITY;
    int done = 0;
#ifdef CT_HAVE_CUDA
    /* both statistics in one kernel, the composed update's roundings (a graph node, not eight) */
    if (x->storage->device.type == CT_DEVICE_CUDA) {
      done = ct_cuda_bn_update_running(running_mean, c.out[1], running_var, c.out[3], momentum, fvar);
      if (done < 0) st = ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_RUNTIME;
    }
#endif
    if (x->storage->device.type == CT_DEVICE_WEBGPU) { /* the same in one dispatch (webgpu_kernels.c) */
      done = ct_webgpu_bn_update_running(running_mean, c.out[1], running_var, c.out[3], momentum, fvar);
      if (done < 0) st = ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_RUNTIME;
    }
    if (!done && running_mean) st = update_running(running_mean, c.out[1], momentum, 1.0);
    if (!done && st == CT_OK && running_var) st = update_running(running_var, c.out[3], momentum, fvar);
    if (st != CT_OK) {
      ct_release(c.out[0]);
      c.out[0] = NULL;
    }
  }
  nn_release_n(6, xc, wc, bc, rm, rv, rc);
  for (int j = 1; j < 4; j++) ct_release(c.out[j]); /* the node keeps what it saved */
  if (c.out[0] && c.out[0]->grad_fn) {
    c.out[0]->grad_fn->name = relu ? "ReluBackward0" : "NativeBatchNormBackward0"; /* the output's last op */
    c.out[0]->grad_fn->grad_unused_mask = 0xe; /* ct_bw_native_batch_norm reads g[0] only */
  }
  return c.out[0];
}

/* The gradient from public ops (grad mode on), with the statistics recomputed from x in training:
 * xh = (x - mean) rstd, gw = g w, dx = rstd (gw - mean(gw) - xh mean(gw xh)) (eval: gw rstd),
 * dw = sum(g xh), db = sum(g) over every dim but 1. */
static ct_status bn_bw_composed(ct_node *n, ct_tensor *x, ct_tensor *w, ct_tensor *g, ct_tensor **gin) {
  bool training = n->a.k[0];
  int nd = x->ndim, nr = 0;
  int64_t dims[CT_MAX_DIMS], cshape[CT_MAX_DIMS];
  uint32_t mask = 0;
  for (int d = 0; d < nd; d++) {
    cshape[d] = d == 1 ? x->shape[1] : 1;
    if (d != 1) {
      dims[nr++] = d;
      mask |= 1u << d;
    }
  }
  ct_scope *s = ct_scope_begin();
  ct_tensor *mean = NULL, *var = NULL, *rstd = NULL, *xh = NULL;
  if (training) {
    if (nn_moments(x, mask, &mean, &var) == CT_OK) rstd = nn_rsqrt_eps(var, n->a.f[0]);
  } else {
    ct_tensor *sm = ct_node_saved_out(n, 1), *sr = ct_node_saved_out(n, 2);
    mean = sm ? ct_reshape(sm, nd, cshape) : NULL;
    rstd = sr ? ct_reshape(sr, nd, cshape) : NULL;
  }
  if (mean && rstd) {
    ct_tensor *d = ct_sub(x, mean);
    xh = d ? ct_mul(d, rstd) : NULL;
  }
  ct_tensor *wv = w ? ct_reshape(w, nd, cshape) : NULL;
  if (!xh || (w && !wv)) goto fail;
  if (ct_node_needs_grad(n, 0)) {
    ct_tensor *gw = wv ? ct_mul(g, wv) : g;
    ct_tensor *u = NULL;
    if (gw && training) {
      ct_tensor *gx = ct_mul(gw, xh);
      ct_tensor *mb = gx ? ct_mean_dims(gx, nr, dims, true) : NULL;
      ct_tensor *t = mb ? ct_mul(xh, mb) : NULL;
      ct_tensor *ma = t ? ct_mean_dims(gw, nr, dims, true) : NULL;
      ct_tensor *v = ma ? ct_sub(gw, ma) : NULL;
      u = v ? ct_sub(v, t) : NULL;
    } else u = gw;
    if (!u || !(gin[0] = ct_mul(u, rstd))) goto fail;
    ct_keep(gin[0]);
  }
  if (w && ct_node_needs_grad(n, 1)) {
    ct_tensor *p = ct_mul(g, xh);
    if (!p || !(gin[1] = ct_sum_dims(p, nr, dims, false))) goto fail;
    ct_keep(gin[1]);
  }
  if (n->a.k[2] && ct_node_needs_grad(n, 2)) {
    if (!(gin[2] = ct_sum_dims(g, nr, dims, false))) goto fail;
    ct_keep(gin[2]);
  }
  ct_scope_end(s);
  return CT_OK;
fail:
  return norm_bw_fail(s, gin);
}

/* ReluBackward0's gradient at the saved output r: threshold_backward (r <= 0 -> 0), the ReLU's own op */
static ct_tensor *bn_relu_grad(const ct_tensor *g, const ct_tensor *r) {
  ct_attrs a;
  memset(&a, 0, sizeof a);
  a.k[4] = 1;
  a.k[5] = CT_OP_relu;
  const ct_tensor *in[2] = {g, r};
  return ct_pointwise(CT_OP_unary_deriv, 2, in, &a, CT_OUT_SAME);
}

/* t in x's layout for the kernels: contiguous, or x's channels-last layout (CUDA) */
static ct_tensor *bn_bw_like(const ct_tensor *t, const ct_tensor *x, bool cl) {
  return !cl ? ct_contiguous(t) : ct_dense_same_layout(t, x) ? ct_retain((ct_tensor *)t) : ct_to_channels_last(t);
}

/* With a residual (k4, ct_batch_norm_add_relu) the node's input 5 is the residual, whose gradient is
 * g' = relu's gradient of g, exactly what ReluBackward0 then AddBackward0 hand it: the backward kernel
 * writes g' (out[3]) in its sums pass and reads it back for dx, so g' costs no pass of its own. */
ct_status ct_bw_native_batch_norm(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  bool has_w = n->a.k[1], relu = n->a.k[3], add = relu && n->a.k[4];
  ct_tensor *x = ct_node_saved_in(n, 0), *w = has_w ? ct_node_saved_in(n, 1) : NULL;
  if (!x || (has_w && !w)) return ct_last_status();
  if (!g[0]) return CT_OK; /* only the statistics were used: they carry no gradient here */
  ct_tensor *r = relu ? ct_node_saved_out(n, 0) : NULL; /* the fused ReLU's output */
  if (relu && !r) return ct_last_status();
  bool need[3];
  for (int j = 0; j < 3; j++)
    need[j] = ct_node_needs_grad(n, j) && (j == 0 || (j == 1 && has_w) || (j == 2 && n->a.k[2]));
  bool need_bn = need[0] || need[1] || need[2], need_res = add && ct_node_needs_grad(n, 5);
  if (ct_is_grad_enabled()) {
    if (!relu) return bn_bw_composed(n, x, w, g[0], gin);
    /* the ReLU's gradient first, as ReluBackward0 forms it (threshold_backward at its output) */
    ct_tensor *gr = bn_relu_grad(g[0], r);
    if (!gr) return ct_last_status();
    ct_status st = need_bn || !add ? bn_bw_composed(n, x, w, gr, gin) : CT_OK;
    if (st == CT_OK && need_res) gin[5] = gr;
    else ct_release(gr);
    return st;
  }
  ct_tensor *mean = ct_node_saved_out(n, 1), *rstd = ct_node_saved_out(n, 2);
  if (!mean || !rstd) return ct_last_status();
  /* a channels-last x (CUDA, bn_fused): the gradient in x's layout, dx written so */
  bool cl = ct_suggests_channels_last(x);
  ct_tensor *gc = bn_bw_like(g[0], x, cl);
  if (!gc) return ct_last_status();
  ct_tensor *rc = r ? bn_bw_like(r, x, cl) : NULL; /* a CPU add op re-strided its output to x's user layout */
  if (r && !rc) {
    ct_release(gc);
    return ct_last_status();
  }
  ct_tensor *gp = NULL;
  /* the kernels write g' in their sums pass: without one (eval dx alone, or only the residual's gradient) g' comes
   * from the ReLU's gradient op and the plain backward runs on it */
  bool sums = need[1] || need[2] || (need[0] && n->a.k[0]);
  if (add && !sums) {
    gp = bn_relu_grad(gc, rc);
    ct_release(gc);
    ct_release(rc);
    if (!gp) return ct_last_status();
    if (need_res) gin[5] = ct_retain(gp);
    if (!need_bn) {
      ct_release(gp);
      return CT_OK;
    }
    gc = gp; /* the call below takes it */
    rc = NULL;
    relu = add = false;
  }
  ct_call c = norm_bw_call(CT_OP_native_batch_norm_backward, n, gc, x, w, mean, rstd);
  c.a.k[3] = relu;
  c.a.k[4] = add;
  if (relu) {
    c.n_in = 6;
    c.in[5] = rc;
  }
  bool ok = true;
  for (int j = 0; j < 3 && ok; j++)
    if (need[j])
      ok = (c.out[j] = j == 0 && cl ? ct_new_channels_last(x->shape, x->dtype, x->storage->device)
                                    : nn_new_out(x, n->in_meta[j].ndim, n->in_meta[j].shape, x->dtype)) != NULL;
  if (ok && add) {
    c.n_out = 4;
    ok = (c.out[3] = cl ? ct_new_channels_last(x->shape, x->dtype, x->storage->device)
                        : nn_new_out(x, x->ndim, x->shape, x->dtype)) != NULL;
  }
  ct_status st = norm_bw_dispatch(&c, ok, gc);
  ct_release(rc);
  if (st != CT_OK) {
    ct_release(c.out[3]);
    ct_release(gin[5]);
    gin[5] = NULL;
    return st;
  }
  for (int j = 0; j < 3; j++) gin[j] = c.out[j];
  if (add && need_res) gin[5] = c.out[3];
  else if (add) ct_release(c.out[3]);
  return CT_OK;
}

static ct_tensor *batch_norm_impl(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                                  const ct_tensor *weight, const ct_tensor *bias, bool training, double momentum,
                                  double eps, bool relu, const ct_tensor *res);
/* y (+ res) (-> relu) as the separate ops, y released */
static ct_tensor *bn_add_relu_then(ct_tensor *y, const ct_tensor *res, bool relu) {
  if (y && res) {
    ct_tensor *t = ct_add(y, res);
    ct_release(y);
    y = t;
  }
  ct_tensor *r = y && relu ? ct_relu(y) : y;
  if (relu) ct_release(y);
  return r;
}

ct_tensor *ct_batch_norm(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var, const ct_tensor *weight,
                         const ct_tensor *bias, bool training, double momentum, double eps) {
  return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, false, NULL);
}

/* relu(batch_norm(...)) (ResNet's bn -> relu pairs, src/nn/layers.c): on the CPU one fused op whose
 * values and gradients are those of the two ops apart; elsewhere the two ops. */
ct_tensor *ct_batch_norm_relu(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                              const ct_tensor *weight, const ct_tensor *bias, bool training, double momentum, double eps) {
  return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, true, NULL);
}

/* relu(batch_norm(x) + residual) (ResNet's block tails, src/nn/layers.c ct_module_forward_bn_add_relu): where the
 * fused batch norm runs on the CPU or CUDA and the residual has x's shape, dtype and device, one op (k3 + k4) whose
 * values, gradients (x, residual, weight, bias) and running statistics are the three ops' to the bit; otherwise
 * (WebGPU, other dtypes, broadcasting, CT_CUDA_BN_ADD_RELU=0 on CUDA, CT_BN_ADD_RELU=0 anywhere) the three ops. */
ct_tensor *ct_batch_norm_add_relu(const ct_tensor *x, const ct_tensor *residual, ct_tensor *running_mean,
                                  ct_tensor *running_var, const ct_tensor *weight, const ct_tensor *bias, bool training,
                                  double momentum, double eps) {
  if (ct_check_tensor(residual, "batch_norm_add_relu")) return NULL;
  return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, true, residual);
}

/* the residual in the fused op: x's shape, dtype and device, on a backend whose kernels read k4 */
static bool bn_add_fusable(const ct_tensor *x, const ct_tensor *res) {
  const char *all = getenv("CT_BN_ADD_RELU"), *cu = getenv("CT_CUDA_BN_ADD_RELU"); /* "0": the separate ops */
  ct_device_type dv = x->storage->device.type;
  if ((all && !strcmp(all, "0")) || (dv != CT_DEVICE_CPU && dv != CT_DEVICE_CUDA) ||
      (dv == CT_DEVICE_CUDA && cu && !strcmp(cu, "0")))
    return false;
  if (res->dtype != x->dtype || res->ndim != x->ndim || res->storage->device.type != dv ||
      res->storage->device.index != x->storage->device.index)
    return false;
  for (int d = 0; d < x->ndim; d++)
    if (res->shape[d] != x->shape[d]) return false;
  return true;
}

static ct_tensor *batch_norm_impl(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                                  const ct_tensor *weight, const ct_tensor *bias, bool training, double momentum,
                                  double eps, bool relu, const ct_tensor *res) {
  if (ct_check_tensor(x, "batch_norm")) return NULL;
  char a[160];
  if (x->ndim < 2) {
    ct_set_error(CT_ERR_INDEX, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    return NULL;
  }
  int64_t C = x->shape[1], per_channel = C ? ct_numel(x) / C : 0;
  if (training && per_channel == 1) {
    ct_set_error(CT_ERR_VALUE, "Expected more than 1 value per channel when training, got input size torch.Size(%s)",
                 CT_SHAPE_STR(x, a));
    return NULL;
  }
  const ct_tensor *ts[4] = {running_mean, running_var, weight, bias};
  const char *names[4] = {"running_mean", "running_var", "weight", "bias"};
  for (int k = 0; k < 4; k++)
    if (ts[k] && ct_numel(ts[k]) != C) {
      ct_set_error(CT_ERR_RUNTIME, "%s should contain %lld elements not %lld", names[k], (long long)C,
                   (long long)ct_numel(ts[k]));
      return NULL;
    }
  if (!training && (!running_mean || !running_var)) {
    ct_set_error(CT_ERR_RUNTIME, "%s must be defined in evaluation mode", running_mean ? "running_var" : "running_mean");
    return NULL;
  }
  if (res) { /* the add's own checks first, so a refused residual changes no running statistics */
    int nb;
    int64_t bshape[CT_MAX_DIMS];
    const ct_tensor *pair[2] = {x, res};
    if (ct_broadcast_shapes(x->ndim, x->shape, res->ndim, res->shape, &nb, bshape) ||
        ct_check_same_device("add", 2, pair))
      return NULL;
  }
  if (check_norm_dtype(x, "batch_norm")) return NULL;
  const ct_tensor *bn_others[4] = {weight, bias, running_mean, running_var};
  if (bn_fusable(x, bn_others)) {
    /* the ReLU fused into the op: CPU, WebGPU (webgpu_kernels.c's k_native_bn, k3) and CUDA (k_bn.cu;
     * CT_CUDA_BN_RELU=0: the two ops, for A/B and the tests); a residual before it (k4): CPU and CUDA */
    const char *cu_off = getenv("CT_CUDA_BN_RELU");
    bool cpu = x->storage->device.type == CT_DEVICE_CPU || x->storage->device.type == CT_DEVICE_WEBGPU ||
               (x->storage->device.type == CT_DEVICE_CUDA && !(cu_off && !strcmp(cu_off, "0")));
    bool add = res && relu && cpu && bn_add_fusable(x, res), fuse_relu = relu && cpu && (!res || add);
    ct_tensor *y = bn_fused(x, running_mean, running_var, weight, bias, training, momentum, eps, fuse_relu,
                            add ? res : NULL);
    return fuse_relu ? y : bn_add_relu_then(y, res, relu);
  }
  ct_dtype cdt = nn_is_reduced_float(x->dtype) ? CT_FLOAT32 : x->dtype;
  ct_tensor *xc = compute_view(x, cdt);
  ct_tensor *w = channel_view(weight, x->ndim, cdt), *bb = channel_view(bias, x->ndim, cdt);
  ct_tensor *mean = NULL, *var = NULL, *rstd = NULL, *y = NULL;
  if (!xc || (weight && !w) || (bias && !bb)) goto done;
  if (training) {
    uint32_t mask = ((1u << x->ndim) - 1) & ~2u;
    if (nn_moments(xc, mask, &mean, &var)) goto done;
    if (!(rstd = nn_rsqrt_eps(var, eps))) goto done;
    y = normalize(xc, mean, rstd, w, bb);
    if (!y) goto done;
    if (running_mean && update_running(running_mean, mean, momentum, 1.0)) goto fail;
    if (running_var &&
        update_running(running_var, var, momentum, per_channel > 1 ? (double)per_channel / (double)(per_channel - 1) : INFINITY))
      goto fail;
  } else {
    mean = channel_view(running_mean, x->ndim, cdt);
    var = channel_view(running_var, x->ndim, cdt);
    if (!mean || !var || !(rstd = nn_rsqrt_eps(var, eps))) goto done;
    y = normalize(xc, mean, rstd, w, bb);
  }
  goto done;
fail:
  ct_release(y);
  y = NULL;
done:
  nn_release_n(6, xc, w, bb, mean, var, rstd);
  if (y && y->dtype != x->dtype) {
    ct_tensor *t = ct_to_dtype(y, x->dtype);
    ct_release(y);
    y = t;
  }
  /* PyTorch 1.13 runs one native op: its name on the result's node (users print it) */
  if (y && y->grad_fn) y->grad_fn->name = "NativeBatchNormBackward0";
  return bn_add_relu_then(y, res, relu);
}

/* ---- rms_norm ---- */
ct_tensor *ct_rms_norm(const ct_tensor *x, int n, const int64_t *nshape, const ct_tensor *weight, double eps) {
  if (ct_check_tensor(x, "rms_norm")) return NULL;
  char a[160], b[160];
  bool ok = n >= 1 && nshape && n <= x->ndim;
  for (int i = 0; ok && i < n; i++) ok = x->shape[x->ndim - n + i] == nshape[i];
  if (!ok) {
    char star[200];
    if (n < 1 || !nshape) {
      ct_set_error(CT_ERR_RUNTIME, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
                   "one element, but got normalized_shape = []");
      return NULL;
    }
    snprintf(star, sizeof star, "[*, %s", ct_shape_str(n, nshape, b, sizeof b) + 1);
    ct_set_error(CT_ERR_RUNTIME, "Given normalized_shape=%s, expected input with shape %s, but got input of size%s",
                 ct_shape_str(n, nshape, a, sizeof a), star, CT_SHAPE_STR(x, b));
    return NULL;
  }
  if (weight) {
    bool same = weight->ndim == n;
    for (int i = 0; same && i < n; i++) same = weight->shape[i] == nshape[i];
    if (!same) {
      ct_set_error(CT_ERR_RUNTIME, "Expected weight to be of same shape as normalized_shape, but got weight of shape %s "
                   "and normalized_shape = %s", CT_SHAPE_STR(weight, a), ct_shape_str(n, nshape, b, sizeof b));
      return NULL;
    }
  }
  if (!ct_dtype_is_floating(x->dtype)) {
    nn_not_implemented("rms_norm", x->dtype);
    return NULL;
  }
  if (eps < 0) eps = x->dtype == CT_FLOAT64 ? 2.220446049250313e-16
                   : x->dtype == CT_FLOAT16 ? 0.0009765625 : x->dtype == CT_BFLOAT16 ? 0.0078125 : 1.1920928955078125e-07;
  /* PyTorch (2.4+, where rms_norm exists) composes it: its last node is a MulBackward0 */
  if (norm_fusable(x, weight, NULL)) return ct_name_node(fused_norm(true, x, n, weight, NULL, eps), "MulBackward0");
  int64_t dims[CT_MAX_DIMS];
  for (int i = 0; i < n; i++) dims[i] = x->ndim - n + i;
  ct_tensor *sq = ct_mul(x, x);
  ct_tensor *ms = sq ? ct_mean_dims(sq, n, dims, true) : NULL;
  ct_tensor *r = ms ? nn_rsqrt_eps(ms, eps) : NULL;
  ct_tensor *y = r ? ct_mul(x, r) : NULL;
  if (y && weight) {
    ct_tensor *t = ct_mul(y, weight);
    ct_release(y);
    y = t;
  }
  nn_release_n(3, sq, ms, r);
  return y;
}

/* ---- dropout ---- */
ct_tensor *ct_dropout(const ct_tensor *x, double p, bool training, ct_generator *gen) {
  if (ct_check_tensor(x, "dropout")) return NULL;
  if (!(p >= 0 && p <= 1)) {
    ct_set_error(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %g", p);
    return NULL;
  }
  if (p == 0 || !training || ct_numel(x) == 0) return ct_same(x); /* x itself, owned like any result in a scope */
  if (!ct_dtype_is_floating(x->dtype)) {
    ct_set_error(CT_ERR_RUNTIME, "result type Float can't be cast to the desired output type %s",
                 ct_dtype_torch_name(x->dtype));
    return NULL;
  }
  if (x->dtype == CT_FLOAT16) {
    nn_not_implemented("bernoulli_scalar_cpu_", x->dtype);
    return NULL;
  }
  ct_tensor *noise;
  if (p == 1) {
    ct_options o = ct_opts_dtype(x->dtype);
    o.device = x->storage->device;
    noise = ct_zeros(0, NULL, o);
  } else {
    ct_attrs a = ct_attrs_zero();
    a.f[0] = p;
    a.ptr = gen;
    noise = ct_dispatch_new(CT_OP_dropout_noise, 1, (ct_tensor *const *)&x, x->ndim, x->shape, x->dtype, &a);
  }
  if (!noise) return NULL;
  ct_tensor *y = ct_mul(x, noise);
  ct_release(noise);
  return y;
}

/* ---- embedding ---- */
ct_tensor *ct_embedding(const ct_tensor *indices, const ct_tensor *weight, const int64_t *padding_idx) {
  if (ct_check_tensor(indices, "embedding") || ct_check_tensor(weight, "embedding")) return NULL;
  if (weight->ndim != 2) {
    ct_set_error(CT_ERR_RUNTIME, "'weight' must be 2-D");
    return NULL;
  }
  if (indices->dtype != CT_INT64 && indices->dtype != CT_INT32) {
    ct_set_error(CT_ERR_RUNTIME, "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                 "Long, Int; but got %s instead (while checking arguments for embedding)",
                 ct_dtype_legacy_name(indices->dtype));
    return NULL;
  }
  int64_t V = weight->shape[0], pad = 0;
  bool has_pad = padding_idx != NULL;
  if (has_pad) {
    pad = *padding_idx;
    if (pad >= V || pad < -V) {
      ct_set_error(CT_ERR_VALUE, "Padding_idx must be within num_embeddings");
      return NULL;
    }
    if (pad < 0) pad += V;
  }
  if (indices->ndim + 1 > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "embedding: indices have too many dims");
    return NULL;
  }
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
  shape[indices->ndim] = weight->shape[1];
  ct_attrs a = ct_attrs_zero();
  a.k[0] = has_pad;
  a.i[0] = pad;
  ct_tensor *in[2] = {(ct_tensor *)weight, (ct_tensor *)indices};
  return ct_dispatch_new(CT_OP_embedding, 2, in, indices->ndim + 1, shape, weight->dtype, &a);
}

static ct_tensor *embedding_dense_backward(const ct_tensor *g, const ct_tensor *idx, int64_t V, const ct_attrs *a) {
  int64_t shape[2] = {V, g->shape[g->ndim - 1]};
  ct_tensor *in[2] = {(ct_tensor *)g, (ct_tensor *)idx};
  return ct_dispatch_new(CT_OP_embedding_dense_backward, 2, in, 2, shape, g->dtype, a);
}

ct_status ct_bw_embedding(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  gin[0] = embedding_dense_backward(g[0], idx, n->in_meta[0].shape[0], &n->a);
  return gin[0] ? CT_OK : ct_last_status();
}

/* the adjoint of embedding_dense_backward is embedding itself (padding rows get no gradient
 * into the weight, so their gathered gradient is zero: gather then mask). */
ct_status ct_bw_embedding_backward(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *idx = ct_node_saved_in(n, 1);
  if (!idx) return ct_last_status();
  if (!ct_node_needs_grad(n, 0)) return CT_OK;
  if (n->a.k[0]) {
    /* zero the padding row of the incoming gradient before gathering */
    int64_t V = g[0]->shape[0], D = g[0]->shape[1];
    double *m = calloc((size_t)(V ? V : 1), sizeof *m);
    if (!m) return CT_ERR(CT_ERR_OOM, "out of memory");
    for (int64_t i = 0; i < V; i++) m[i] = i == n->a.i[0] ? 0.0 : 1.0;
    int64_t ms[2] = {V, 1};
    ct_options o = ct_opts_dtype(g[0]->dtype);
    o.device = g[0]->storage->device;
    ct_tensor *mt = ct_from_buffer(m, CT_FLOAT64, 2, ms, o);
    free(m);
    (void)D;
    ct_tensor *gm = mt ? ct_mul(g[0], mt) : NULL;
    gin[0] = gm ? ct_embedding(idx, gm, NULL) : NULL;
    nn_release_n(2, mt, gm);
  } else {
    gin[0] = ct_embedding(idx, g[0], NULL);
  }
  return gin[0] ? CT_OK : ct_last_status();
}

/* ---- scaled_dot_product_attention: softmax(q k^T * scale + mask) v, composed ---- */
#include "../backend/cpu/kernels_attention.h"
#include "../backend/webgpu/webgpu_attention.h"
static ct_tensor *bool_mask_additive(const ct_tensor *m, ct_dtype dt) {
  return ct_dispatch_new(CT_OP_attn_bool_mask, 1, (ct_tensor *const *)&m, m->ndim, m->shape, dt, NULL);
}

/* is_causal's mask, PyTorch's top-left convention (query i sees keys j <= i), additive 0/-inf */
static ct_tensor *causal_additive(int64_t L, int64_t S, ct_dtype dt, ct_device dev) {
  bool *m = malloc((size_t)(L * S > 0 ? L * S : 1));
  if (!m) {
    ct_set_error(CT_ERR_OOM, "out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < L; i++)
    for (int64_t j = 0; j < S; j++) m[i * S + j] = j <= i;
  int64_t ms[2] = {L, S};
  ct_options o = ct_opts_dtype(CT_BOOL);
  o.device = dev;
  ct_tensor *mt = ct_from_buffer(m, CT_BOOL, 2, ms, o);
  free(m);
  ct_tensor *add = mt ? bool_mask_additive(mt, dt) : NULL;
  ct_release(mt);
  return add;
}

/* ---- the fused CPU path (src/backend/cpu/kernels_attention.c): op sdpa_flash ----
 * Taken when it gives what the composed path gives: CPU, float32/float64, no dropout
 * (the composed path draws an L x S dropout mask from the generator; matching that stream
 * would need the L x S mask, so dropout stays composed), no empty dim, batch dims that
 * broadcast, a mask that broadcasts to [batch.., L, S] without growing the result and does
 * not require grad. Everything else (and every error) goes the composed way. */
static bool sdpa_fused_applies(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v, const ct_tensor *mask,
                               double dropout_p, int *nb, int64_t *bshape) {
  if (dropout_p != 0 || !ct_sdpa_fused_enabled()) return false;
  /* CUDA (src/backend/cuda/k_attention.cu): float32/float16/bfloat16 of one dtype, no mask,
   * E == Ev in {64, 128}; everything else there stays composed */
  bool cuda = q->storage->device.type == CT_DEVICE_CUDA;
  if (cuda) {
    int64_t E = q->shape[q->ndim - 1];
    if ((q->dtype != CT_FLOAT32 && q->dtype != CT_FLOAT16 && q->dtype != CT_BFLOAT16) || mask ||
        k->dtype != q->dtype || v->dtype != q->dtype || (E != 64 && E != 128) || v->shape[v->ndim - 1] != E)
      return false;
  } else if (q->dtype != CT_FLOAT32 && q->dtype != CT_FLOAT64) return false;
  /* WebGPU (src/backend/webgpu/webgpu_attention.c): float32, no mask; checked below */
  bool wgpu = q->storage->device.type == CT_DEVICE_WEBGPU;
  const ct_tensor *ts[4] = {q, k, v, mask};
  for (int i = 0; i < 4; i++)
    if (ts[i] && (ts[i]->storage->device.type != q->storage->device.type ||
                  ts[i]->storage->device.index != q->storage->device.index || ct_numel(ts[i]) == 0 ||
                  (!cuda && !wgpu && ts[i]->storage->device.type != CT_DEVICE_CPU)))
      return false;
  if (q->shape[q->ndim - 1] != k->shape[k->ndim - 1] || k->shape[k->ndim - 2] != v->shape[v->ndim - 2]) return false;
  int n1, n2;
  int64_t b1[CT_MAX_DIMS], b2[CT_MAX_DIMS];
  if (ct_broadcast_shapes(q->ndim - 2, q->shape, k->ndim - 2, k->shape, &n1, b1) != CT_OK ||
      ct_broadcast_shapes(n1, b1, v->ndim - 2, v->shape, &n2, b2) != CT_OK) {
    ct_clear_error();
    return false;
  }
  if (n2 + 2 > CT_MAX_DIMS) return false;
  if (mask) {
    if (ct_grad_mode_recording() && ct_tensor_requires_grad(mask)) return false; /* the mask's gradient: composed */
    int64_t full[CT_MAX_DIMS], got[CT_MAX_DIMS];
    memcpy(full, b2, sizeof(int64_t) * (size_t)n2);
    full[n2] = q->shape[q->ndim - 2];
    full[n2 + 1] = k->shape[k->ndim - 2];
    int ng;
    if (ct_broadcast_shapes(mask->ndim, mask->shape, n2 + 2, full, &ng, got) != CT_OK) {
      ct_clear_error();
      return false;
    }
    if (ng != n2 + 2 || memcmp(got, full, sizeof(int64_t) * (size_t)ng) != 0) return false;
  }
  if (wgpu && !ct_webgpu_sdpa_fits(q, k, v, mask, n2, b2)) return false;
  *nb = n2;
  memcpy(bshape, b2, sizeof(int64_t) * (size_t)n2);
  return true;
}

/* x expanded to batch shape b (nb dims) + its own last two dims, last dim contiguous */
static ct_tensor *sdpa_prep(const ct_tensor *x, int nb, const int64_t *b, int64_t r, int64_t c) {
  int64_t sh[CT_MAX_DIMS];
  memcpy(sh, b, sizeof(int64_t) * (size_t)nb);
  sh[nb] = r;
  sh[nb + 1] = c;
  ct_tensor *xc = (x->stride[x->ndim - 1] == 1 || x->shape[x->ndim - 1] == 1) ? ct_same(x) : ct_contiguous(x);
  ct_tensor *e = xc ? ct_expand(xc, nb + 2, sh) : NULL;
  ct_release(xc);
  return e;
}

static ct_tensor *sdpa_fused(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v, const ct_tensor *mask,
                             bool is_causal, double sc, int nb, const int64_t *b) {
  int64_t L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2], E = q->shape[q->ndim - 1];
  int64_t Ev = v->shape[v->ndim - 1];
  ct_call c = ct_call_make(CT_OP_sdpa_flash);
  c.in[0] = sdpa_prep(q, nb, b, L, E);
  c.in[1] = sdpa_prep(k, nb, b, S, E);
  c.in[2] = sdpa_prep(v, nb, b, S, Ev);
  c.n_in = 3;
  if (mask) {
    ct_tensor *add = mask->dtype == CT_BOOL ? bool_mask_additive(mask, q->dtype) : ct_same(mask);
    int64_t sh[CT_MAX_DIMS];
    memcpy(sh, b, sizeof(int64_t) * (size_t)nb);
    sh[nb] = L;
    sh[nb + 1] = S;
    c.in[3] = add ? ct_expand(add, nb + 2, sh) : NULL;
    ct_release(add);
    c.n_in = 4;
  }
  ct_tensor *out = NULL;
  bool ok = true;
  for (int i = 0; i < c.n_in; i++) ok = ok && c.in[i];
  if (ok) {
    int64_t osh[CT_MAX_DIMS];
    memcpy(osh, b, sizeof(int64_t) * (size_t)nb);
    osh[nb] = L;
    osh[nb + 1] = Ev;
    c.a.f[0] = sc;
    c.a.k[0] = is_causal;
    /* out[2] is the backward's copy of the output: the composed path does not save its
     * output, so an in-place change of the result must not break backward here either */
    c.n_out = 3;
    c.out[0] = nn_new_out(q, nb + 2, osh, q->dtype);
    /* the CUDA kernels keep the log-sum-exp in float32 for every input dtype */
    c.out[1] = nn_new_out(q, nb + 1, osh, q->storage->device.type == CT_DEVICE_CUDA ? CT_FLOAT32 : q->dtype);
    c.out[2] = nn_new_out(q, nb + 2, osh, q->dtype);
    if (!c.out[0] || !c.out[1] || !c.out[2]) {
      nn_release_n(3, c.out[0], c.out[1], c.out[2]);
    } else if (nn_dispatch(&c) == CT_OK) {
      out = c.out[0];
      nn_release_n(2, c.out[1], c.out[2]); /* the node keeps the log-sum-exp and the copy */
      if (out->grad_fn) out->grad_fn->grad_unused_mask = 0x6; /* ct_bw_sdpa_flash reads g[0] only */
      /* the name the composed path's last op (matmul) gives its node, as PyTorch 1.13 */
      ct_name_node(out, nb == 0 ? "MmBackward0" : "UnsafeViewBackward0");
    }
  }
  for (int i = 0; i < c.n_in; i++) ct_release(c.in[i]);
  return out;
}

/* d sdpa_flash. Without grad mode: the fused backward (sdpa_flash_backward) recomputes P
 * blockwise from the saved log-sum-exp: dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO O)),
 * dQ = scale dS K, dK = scale dS^T Q. With grad mode (create_graph, double backward) the
 * same formula in public ops, P recomputed by softmax, so it is differentiable again. */
ct_status ct_bw_sdpa_flash(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *q = ct_node_saved_in(n, 0), *k = q ? ct_node_saved_in(n, 1) : NULL;
  ct_tensor *v = k ? ct_node_saved_in(n, 2) : NULL;
  ct_tensor *m = (v && n->n_in > 3) ? ct_node_saved_in(n, 3) : NULL;
  if (!v || (n->n_in > 3 && !m)) return ct_last_status();
  double sc = n->a.f[0];
  bool causal = n->a.k[0] != 0;
  if (!ct_is_grad_enabled()) {
    ct_tensor *o = ct_node_saved_out(n, 2), *lse = o ? ct_node_saved_out(n, 1) : NULL;
    if (!lse) return ct_last_status();
    ct_call c = ct_call_make(CT_OP_sdpa_flash_backward);
    c.a = n->a;
    c.n_in = m ? 7 : 6;
    c.in[0] = q;
    c.in[1] = k;
    c.in[2] = v;
    c.in[3] = o;
    c.in[4] = lse;
    c.in[5] = g[0]->stride[g[0]->ndim - 1] == 1 ? ct_same(g[0]) : ct_contiguous(g[0]);
    c.in[6] = m;
    if (!c.in[5]) return ct_last_status();
    c.n_out = 3;
    for (int i = 0; i < 3; i++) c.out[i] = nn_new_out(q, c.in[i]->ndim, c.in[i]->shape, q->dtype);
    ct_status st = (c.out[0] && c.out[1] && c.out[2]) ? nn_dispatch(&c) : ct_last_status();
    if (st != CT_OK) {
      for (int i = 0; i < 3; i++) ct_release(c.out[i]);
      ct_release(c.in[5]);
      return st;
    }
    ct_release(c.in[5]);
    for (int i = 0; i < 3; i++) {
      if (ct_node_needs_grad(n, i)) gin[i] = c.out[i];
      else ct_release(c.out[i]);
    }
    return CT_OK;
  }
  int64_t L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2];
  ct_tensor *kt = ct_mT(k);
  ct_tensor *qk = kt ? ct_matmul(q, kt) : NULL;
  ct_tensor *s = qk ? ct_mul_scalar(qk, ct_sf(sc)) : NULL;
  nn_release_n(2, kt, qk);
  if (s && (causal || m)) {
    ct_tensor *add = causal ? causal_additive(L, S, q->dtype, q->storage->device) : ct_retain(m);
    ct_tensor *t = add ? ct_add(s, add) : NULL;
    nn_release_n(2, s, add);
    s = t;
  }
  ct_tensor *p = s ? ct_softmax(s, -1, -1) : NULL;
  ct_release(s);
  if (!p) return ct_last_status();
  ct_status st = CT_OK;
  if (ct_node_needs_grad(n, 2)) {
    ct_tensor *pt = ct_mT(p);
    gin[2] = pt ? ct_matmul(pt, g[0]) : NULL;
    ct_release(pt);
    if (!gin[2]) st = ct_last_status();
  }
  if (st == CT_OK && (ct_node_needs_grad(n, 0) || ct_node_needs_grad(n, 1))) {
    int64_t last = -1;
    ct_tensor *vt = ct_mT(v);
    ct_tensor *dp = vt ? ct_matmul(g[0], vt) : NULL;
    ct_tensor *dpp = dp ? ct_mul(dp, p) : NULL;
    ct_tensor *rs = dpp ? ct_sum_dims(dpp, 1, &last, true) : NULL;
    ct_tensor *dd = rs ? ct_sub(dp, rs) : NULL;
    ct_tensor *ds0 = dd ? ct_mul(p, dd) : NULL;
    ct_tensor *ds = ds0 ? ct_mul_scalar(ds0, ct_sf(sc)) : NULL;
    nn_release_n(6, vt, dp, dpp, rs, dd, ds0);
    if (!ds) st = ct_last_status();
    if (st == CT_OK && ct_node_needs_grad(n, 0) && !(gin[0] = ct_matmul(ds, k))) st = ct_last_status();
    if (st == CT_OK && ct_node_needs_grad(n, 1)) {
      ct_tensor *dst = ct_mT(ds);
      gin[1] = dst ? ct_matmul(dst, q) : NULL;
      ct_release(dst);
      if (!gin[1]) st = ct_last_status();
    }
    ct_release(ds);
  }
  ct_release(p);
  return st;
}

ct_tensor *ct_scaled_dot_product_attention(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                                           const ct_tensor *attn_mask, double dropout_p, bool is_causal,
                                           const double *scale, ct_generator *gen) {
  const char *nm = "scaled_dot_product_attention";
  if (ct_check_tensor(q, nm) || ct_check_tensor(k, nm) || ct_check_tensor(v, nm)) return NULL;
  if (attn_mask && ct_check_tensor(attn_mask, nm)) return NULL;
  if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2) {
    ct_set_error(CT_ERR_RUNTIME, "scaled_dot_product_attention: query, key and value must be at least 2-dimensional");
    return NULL;
  }
  if (q->dtype != k->dtype || q->dtype != v->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "Expected query, key, and value to have the same dtype, but got query.dtype: %s key.dtype: "
                 "%s and value.dtype: %s instead.", ct_dtype_name(q->dtype), ct_dtype_name(k->dtype), ct_dtype_name(v->dtype));
    return NULL;
  }
  if (!ct_dtype_is_floating(q->dtype)) {
    nn_not_implemented("scaled_dot_product_attention", q->dtype);
    return NULL;
  }
  if (is_causal && attn_mask) {
    ct_set_error(CT_ERR_RUNTIME, "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
    return NULL;
  }
  if (!(dropout_p >= 0 && dropout_p <= 1)) {
    ct_set_error(CT_ERR_VALUE, "dropout probability has to be between 0 and 1, but got %g", dropout_p);
    return NULL;
  }
  if (attn_mask && attn_mask->dtype != CT_BOOL && attn_mask->dtype != q->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: %s "
                 "and  query.dtype: %s instead.", ct_dtype_name(attn_mask->dtype), ct_dtype_name(q->dtype));
    return NULL;
  }
  int64_t L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2], E = q->shape[q->ndim - 1];
  double sc = scale ? *scale : 1.0 / sqrt((double)E);
  int fnb;
  int64_t fb[CT_MAX_DIMS];
  if (sdpa_fused_applies(q, k, v, attn_mask, dropout_p, &fnb, fb))
    return sdpa_fused(q, k, v, attn_mask, is_causal, sc, fnb, fb);
  ct_tensor *kt = ct_mT(k);
  ct_tensor *qk = kt ? ct_matmul(q, kt) : NULL;
  ct_tensor *s = qk ? ct_mul_scalar(qk, ct_sf(sc)) : NULL;
  nn_release_n(2, kt, qk);
  if (!s) return NULL;
  ct_tensor *add = NULL;
  if (is_causal) {
    add = causal_additive(L, S, q->dtype, q->storage->device);
    if (!add) {
      ct_release(s);
      return NULL;
    }
  } else if (attn_mask) {
    add = attn_mask->dtype == CT_BOOL ? bool_mask_additive(attn_mask, q->dtype) : ct_retain((ct_tensor *)attn_mask);
    if (!add) {
      ct_release(s);
      return NULL;
    }
  }
  if (add) {
    ct_tensor *t = ct_add(s, add);
    nn_release_n(2, s, add);
    if (!(s = t)) return NULL;
  }
  ct_tensor *p = ct_softmax(s, -1, -1);
  ct_release(s);
  if (p && dropout_p > 0) {
    ct_tensor *t = ct_dropout(p, dropout_p, true, gen);
    ct_release(p);
    p = t;
  }
  ct_tensor *out = p ? ct_matmul(p, v) : NULL;
  ct_release(p);
  return out;
}
