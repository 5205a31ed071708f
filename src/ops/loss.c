/* Loss functions and distance ops. Most are compositions of public ops, written in the
 * order PyTorch 1.13 composes them (so values round alike and gradients, double backward
 * included, come from those ops); the binary cross entropies have their own elementwise
 * op with PyTorch's explicit derivative formulas (written with public ops). Every entry
 * point works inside a scope: temporaries die at its end, the result is kept. */
#include "pointwise.h"
#include "autocast.h"
#include "loss_fused.h"
#include "ctorch/cuda.h"
#include "../backend/cpu/simd/simd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* evaluate a tensor expression; on NULL jump to `fail` (the scope releases the rest) */
#define TRY_T(expr)                 \
  ({                                \
    ct_tensor *_t = (expr);         \
    if (!_t) goto fail;             \
    _t;                             \
  })
#define TRY_S(expr)                 \
  do {                              \
    if ((expr) != CT_OK) goto fail; \
  } while (0)

static ct_tensor *finish(ct_scope *s, ct_tensor *r) {
  if (r) ct_keep(r);
  ct_scope_end(s);
  return r;
}
static ct_tensor *fail_scope(ct_scope *s) {
  ct_scope_end_failed(s);
  return NULL;
}

ct_status ct_reduction_parse(const char *s, ct_reduction *out) {
  if (!s) return CT_ERR(CT_ERR_VALUE, "None is not a valid value for reduction");
  if (!strcmp(s, "none")) *out = CT_REDUCTION_NONE;
  else if (!strcmp(s, "mean")) *out = CT_REDUCTION_MEAN;
  else if (!strcmp(s, "sum")) *out = CT_REDUCTION_SUM;
  else if (!strcmp(s, "batchmean")) *out = CT_REDUCTION_BATCHMEAN;
  else return CT_ERR(CT_ERR_VALUE, "%s is not a valid value for reduction", s);
  return CT_OK;
}

static ct_status check_reduction(ct_reduction r, bool batchmean_ok) {
  if (r == CT_REDUCTION_NONE || r == CT_REDUCTION_MEAN || r == CT_REDUCTION_SUM) return CT_OK;
  if (r == CT_REDUCTION_BATCHMEAN && batchmean_ok) return CT_OK;
  return CT_ERR(CT_ERR_VALUE, "%d is not a valid value for reduction", (int)r);
}

/* Inside a scope: returns a scope-owned tensor (loss itself for 'none'). */
static ct_tensor *reduce(ct_tensor *loss, ct_reduction r) {
  if (r == CT_REDUCTION_MEAN) return ct_mean(loss);
  if (r == CT_REDUCTION_SUM) return ct_sum(loss);
  return loss;
}

static ct_status check_two(const ct_tensor *a, const ct_tensor *b, const char *what) {
  CT_TRY(ct_check_tensor(a, what));
  return ct_check_tensor(b, what);
}

/* "torch.Size([3, 4])" */
static const char *torch_size(const ct_tensor *t, char *buf, size_t n) {
  char s[200];
  snprintf(buf, n, "torch.Size(%s)", CT_SHAPE_STR(t, s));
  return buf;
}

static ct_status not_differentiable(const ct_tensor *w, const char *fn, const char *arg) {
  if (w && ct_grad_mode_recording() && ct_tensor_requires_grad(w))
    return CT_ERR(CT_ERR_RUNTIME, "The function '%s' is not differentiable with respect to argument '%s'. This input "
                  "cannot have requires_grad True.", fn, arg);
  return CT_OK;
}

/* the dtype a TensorIterator kernel of two inputs runs in, which must be floating */
static ct_status check_float_kernel(const ct_tensor *a, const ct_tensor *b, const char *kernel, bool allow_bf16) {
  const ct_tensor *in[2] = {a, b};
  ct_dtype dt = ct_result_type_n(2, in);
  if (!ct_dtype_is_floating(dt) || (dt == CT_BFLOAT16 && !allow_bf16))
    return CT_ERR(CT_ERR_RUNTIME, "\"%s\" not implemented for '%s'", kernel, ct_dtype_torch_name(dt));
  return CT_OK;
}

/* ---- mse / l1 / smooth_l1 / huber ----
 * PyTorch 1.13 computes these (and nll, the binary cross entropies) with one op of its own: the
 * result's node takes that op's name (users print it), through ct_name_node. */
ct_tensor *ct_mse_loss(const ct_tensor *x, const ct_tensor *y, ct_reduction r) {
  if (check_two(x, y, "mse_loss") || check_reduction(r, false) || check_float_kernel(x, y, "mse_cpu", false)) return NULL;
  ct_scope *s = ct_scope_begin();
  ct_tensor *d = TRY_T(ct_sub(x, y));
  ct_tensor *l = TRY_T(ct_mul(d, d));
  return finish(s, ct_name_node(TRY_T(reduce(l, r)), "MseLossBackward0"));
fail:
  return fail_scope(s);
}

ct_tensor *ct_l1_loss(const ct_tensor *x, const ct_tensor *y, ct_reduction r) {
  if (check_two(x, y, "l1_loss") || check_reduction(r, false)) return NULL;
  ct_scope *s = ct_scope_begin();
  ct_tensor *d = TRY_T(ct_sub(x, y));
  ct_tensor *l = TRY_T(ct_abs(d));
  return finish(s, TRY_T(reduce(l, r)));
fail:
  return fail_scope(s);
}

/* where(z < thr, quad, lin): gradients flow only through the chosen branch */
static ct_tensor *piecewise(ct_tensor *z, double thr, ct_tensor *quad, ct_tensor *lin) {
  ct_tensor *m = ct_lt_scalar(z, ct_sf(thr));
  if (!m) return NULL;
  ct_tensor *r = ct_where(m, quad, lin);
  ct_release(m);
  return r;
}

ct_tensor *ct_smooth_l1_loss(const ct_tensor *x, const ct_tensor *y, ct_reduction r, double beta) {
  if (check_two(x, y, "smooth_l1_loss") || check_reduction(r, false)) return NULL;
  if (beta < 0) {
    ct_set_error(CT_ERR_RUNTIME, "smooth_l1_loss does not support negative values for beta.");
    return NULL;
  }
  if (beta == 0) return ct_name_node(ct_l1_loss(x, y, r), "SmoothL1LossBackward0");
  if (check_float_kernel(x, y, "smooth_l1_cpu", true)) return NULL;
  ct_scope *s = ct_scope_begin();
  ct_tensor *z = TRY_T(ct_abs(TRY_T(ct_sub(x, y))));
  /* 0.5 * z * z / beta  and  z - 0.5 * beta, in PyTorch's order */
  ct_tensor *q = TRY_T(ct_div_scalar(TRY_T(ct_mul(TRY_T(ct_mul_scalar(z, ct_sf(0.5))), z)), ct_sf(beta)));
  ct_tensor *lin = TRY_T(ct_sub_scalar(z, ct_sf(0.5 * beta)));
  ct_tensor *l = TRY_T(piecewise(z, beta, q, lin));
  return finish(s, ct_name_node(TRY_T(reduce(l, r)), "SmoothL1LossBackward0"));
fail:
  return fail_scope(s);
}

ct_tensor *ct_huber_loss(const ct_tensor *x, const ct_tensor *y, ct_reduction r, double delta) {
  if (check_two(x, y, "huber_loss") || check_reduction(r, false)) return NULL;
  if (!(delta > 0)) {
    ct_set_error(CT_ERR_RUNTIME, "huber_loss does not support non-positive values for delta.");
    return NULL;
  }
  if (check_float_kernel(x, y, "huber_cpu", true)) return NULL;
  ct_scope *s = ct_scope_begin();
  ct_tensor *z = TRY_T(ct_abs(TRY_T(ct_sub(x, y))));
  /* 0.5 * z * z  and  delta * (z - 0.5 * delta) */
  ct_tensor *q = TRY_T(ct_mul(TRY_T(ct_mul_scalar(z, ct_sf(0.5))), z));
  ct_tensor *lin = TRY_T(ct_mul_scalar(TRY_T(ct_sub_scalar(z, ct_sf(0.5 * delta))), ct_sf(delta)));
  ct_tensor *l = TRY_T(piecewise(z, delta, q, lin));
  return finish(s, ct_name_node(TRY_T(reduce(l, r)), "HuberLossBackward0"));
fail:
  return fail_scope(s);
}

/* ---- binary cross entropy ---- */
static bool same_shape(const ct_tensor *a, const ct_tensor *b) {
  if (a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

/* loss * weight, where weight must broadcast to loss's shape */
static ct_tensor *apply_weight(ct_tensor *loss, const ct_tensor *w) {
  if (!w) return loss; /* scope-owned, like the product */
  int nd;
  int64_t shape[CT_MAX_DIMS];
  if (ct_broadcast_shapes(w->ndim, w->shape, loss->ndim, loss->shape, &nd, shape)) return NULL;
  return ct_mul(loss, w);
}

ct_tensor *ct_binary_cross_entropy(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, ct_reduction r) {
  if (check_two(x, t, "binary_cross_entropy") || check_reduction(r, false)) return NULL;
  char b1[220], b2[220];
  if (!same_shape(x, t)) {
    ct_set_error(CT_ERR_VALUE, "Using a target size (%s) that is different to the input size (%s) is deprecated. "
                 "Please ensure they have the same size.", torch_size(t, b1, sizeof b1), torch_size(x, b2, sizeof b2));
    return NULL;
  }
  if (not_differentiable(w, "binary_cross_entropy", "weight")) return NULL;
  if (t->dtype != x->dtype) {
    ct_set_error(CT_ERR_RUNTIME, "Found dtype %s but expected %s", ct_dtype_torch_name(t->dtype),
                 ct_dtype_torch_name(x->dtype));
    return NULL;
  }
  if (!(x->dtype == CT_FLOAT32 || x->dtype == CT_FLOAT64)) {
    ct_set_error(CT_ERR_RUNTIME, "\"binary_cross_entropy\" not implemented for '%s'", ct_dtype_torch_name(x->dtype));
    return NULL;
  }
  ct_scope *s = ct_scope_begin();
  const ct_tensor *in[2] = {x, t};
  ct_tensor *l = TRY_T(ct_pointwise(CT_OP_binary_cross_entropy, 2, in, NULL, CT_OUT_SAME));
  if (l->grad_fn) l->grad_fn->name = "BinaryCrossEntropyBackward0";
  ct_tensor *lw = TRY_T(apply_weight(l, w));
  return finish(s, ct_name_node(TRY_T(reduce(lw, r)), "BinaryCrossEntropyBackward0"));
fail:
  return fail_scope(s);
}

/* PyTorch's formulas: d/dx = g (x - t) / max((1 - x) x, 1e-12);  d/dt = -g logit(x) */
ct_status ct_bw_bce(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *t = ct_node_saved_in(n, 1);
  if (!x || !t) return ct_last_status();
  ct_scope *s = ct_scope_begin();
  if (ct_node_needs_grad(n, 0)) {
    ct_tensor *den = TRY_T(ct_clamp_min(TRY_T(ct_mul(TRY_T(ct_rsub_scalar(x, ct_si(1))), x)), ct_sf(1e-12)));
    gin[0] = ct_keep(TRY_T(ct_div(TRY_T(ct_mul(g[0], TRY_T(ct_sub(x, t)))), den)));
  }
  if (ct_node_needs_grad(n, 1)) gin[1] = ct_keep(TRY_T(ct_mul(g[0], TRY_T(ct_neg(TRY_T(ct_logit(x, -1.0)))))));
  ct_scope_end(s);
  return CT_OK;
fail:
  fail_scope(s);
  return ct_last_status();
}

ct_tensor *ct_binary_cross_entropy_with_logits(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w,
                                               const ct_tensor *pw, ct_reduction r) {
  if (check_two(x, t, "binary_cross_entropy_with_logits") || check_reduction(r, false)) return NULL;
  char b1[220], b2[220];
  if (!same_shape(x, t)) {
    ct_set_error(CT_ERR_VALUE, "Target size (%s) must be the same as input size (%s)", torch_size(t, b1, sizeof b1),
                 torch_size(x, b2, sizeof b2));
    return NULL;
  }
  if (not_differentiable(w, "binary_cross_entropy_with_logits", "weight") ||
      not_differentiable(pw, "binary_cross_entropy_with_logits", "pos_weight"))
    return NULL;
  const ct_tensor *in[3] = {x, t, pw};
  int nin = pw ? 3 : 2;
  ct_dtype dt = ct_result_type_n(nin, in);
  if (!ct_dtype_is_floating(x->dtype) || !ct_dtype_is_floating(t->dtype)) {
    /* PyTorch's first step writes a float result into the integer tensor */
    ct_set_error(CT_ERR_RUNTIME, "result type Float can't be cast to the desired output type %s",
                 ct_dtype_torch_name(!ct_dtype_is_floating(t->dtype) ? t->dtype : x->dtype));
    return NULL;
  }
  (void)dt;
  ct_scope *s = ct_scope_begin();
  ct_attrs a = ct_attrs_zero();
  a.k[0] = pw != NULL;
  ct_tensor *l = TRY_T(ct_pointwise(CT_OP_binary_cross_entropy_with_logits, nin, in, &a, CT_OUT_SAME));
  if (l->grad_fn) l->grad_fn->name = "BinaryCrossEntropyWithLogitsBackward0";
  ct_tensor *lw = TRY_T(apply_weight(l, w));
  return finish(s, ct_name_node(TRY_T(reduce(lw, r)), "BinaryCrossEntropyWithLogitsBackward0"));
fail:
  return fail_scope(s);
}

/* log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)) */
static ct_tensor *log_sigmoid(ct_tensor *x) {
  ct_scope *s = ct_scope_begin();
  ct_tensor *e = TRY_T(ct_log1p(TRY_T(ct_exp(TRY_T(ct_neg(TRY_T(ct_abs(x))))))));
  return finish(s, TRY_T(ct_sub(TRY_T(ct_clamp_max(x, ct_si(0))), e)));
fail:
  return fail_scope(s);
}

/* PyTorch's formulas: d/dx = g (sigmoid(x) - t)  or  g ((pw t + 1 - t) sigmoid(x) - pw t);
 * d/dt = g (-x)  or  g (log_sigmoid(-x) - pw log_sigmoid(x)); pos_weight is not differentiable */
ct_status ct_bw_bce_logits(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *x = ct_node_saved_in(n, 0), *t = ct_node_saved_in(n, 1);
  if (!x || !t) return ct_last_status();
  bool has_pw = n->a.k[0] != 0;
  ct_tensor *pw = has_pw ? ct_node_saved_in(n, 2) : NULL;
  if (has_pw && !pw) return ct_last_status();
  ct_scope *s = ct_scope_begin();
  if (ct_node_needs_grad(n, 0)) {
    ct_tensor *sg = TRY_T(ct_sigmoid(x)), *d;
    if (has_pw) {
      ct_tensor *pt = TRY_T(ct_mul(pw, t));
      ct_tensor *c = TRY_T(ct_sub(TRY_T(ct_add_scalar(pt, ct_si(1))), t));
      d = TRY_T(ct_sub(TRY_T(ct_mul(c, sg)), pt));
    } else d = TRY_T(ct_sub(sg, t));
    gin[0] = ct_keep(TRY_T(ct_mul(g[0], d)));
  }
  if (ct_node_needs_grad(n, 1)) {
    ct_tensor *d;
    if (has_pw) {
      ct_tensor *nx = TRY_T(ct_neg(x));
      d = TRY_T(ct_sub(TRY_T(log_sigmoid(nx)), TRY_T(ct_mul(TRY_T(log_sigmoid(x)), pw))));
    } else d = TRY_T(ct_neg(x));
    gin[1] = ct_keep(TRY_T(ct_mul(g[0], d)));
  }
  if (has_pw && ct_node_needs_grad(n, 2)) {
    ct_set_error(CT_ERR_RUNTIME, "The function 'binary_cross_entropy_with_logits' is not differentiable with respect "
                 "to argument 'pos_weight'. This input cannot have requires_grad True.");
    goto fail;
  }
  ct_scope_end(s);
  return CT_OK;
fail:
  fail_scope(s);
  return ct_last_status();
}

/* ---- kl_div ---- */
ct_tensor *ct_kl_div(const ct_tensor *x, const ct_tensor *t, ct_reduction r, bool log_target) {
  if (check_two(x, t, "kl_div") || check_reduction(r, true)) return NULL;
  if (ct_dtype_is_integral(x->dtype, true) || ct_dtype_is_integral(t->dtype, true)) {
    ct_set_error(CT_ERR_RUNTIME, "kl_div: Integral inputs not supported.");
    return NULL;
  }
  ct_scope *s = ct_scope_begin();
  ct_tensor *l;
  if (log_target) l = TRY_T(ct_mul(TRY_T(ct_exp(t)), TRY_T(ct_sub(t, x))));
  else l = TRY_T(ct_sub(TRY_T(ct_xlogy(t, t)), TRY_T(ct_mul(t, x))));
  if (r == CT_REDUCTION_BATCHMEAN) {
    /* F.kl_div: the sum divided by the batch size (a 0-dim input keeps the sum) */
    ct_tensor *sm = TRY_T(ct_sum(l));
    if (x->ndim == 0) return finish(s, sm);
    return finish(s, TRY_T(ct_div_scalar(sm, ct_si(x->shape[0]))));
  }
  return finish(s, TRY_T(reduce(l, r)));
fail:
  return fail_scope(s);
}

/* ---- nll_loss ---- */
static ct_status check_weight(const ct_tensor *x, const ct_tensor *w, int64_t C, const char *fn) {
  if (!w) return CT_OK;
  if (w->ndim != 1 || ct_numel(w) != C) {
    char b[200];
    return CT_ERR(CT_ERR_RUNTIME, "weight tensor should be defined either for all %lld classes or no classes but got "
                  "weight tensor of shape: %s", (long long)C, CT_SHAPE_STR(w, b));
  }
  if (fn) CT_TRY(not_differentiable(w, fn, "weight"));
  if (w->dtype != x->dtype)
    return CT_ERR(CT_ERR_RUNTIME, "expected scalar type %s but found %s", ct_dtype_torch_name(x->dtype),
                  ct_dtype_torch_name(w->dtype));
  return CT_OK;
}

/* Shape, dtype and range checks of nll_loss_nd, in PyTorch's order. */
static ct_status check_nll(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, int64_t ignore_index) {
  char b1[200], b2[200];
  if (x->ndim < 1) return CT_ERR(CT_ERR_VALUE, "Expected 1 or more dimensions (got %d)", x->ndim);
  if (x->ndim != 1 && (t->ndim == 0 || x->shape[0] != t->shape[0]))
    return CT_ERR(CT_ERR_VALUE, "Expected input batch_size (%lld) to match target batch_size (%lld).",
                  (long long)x->shape[0], (long long)(t->ndim ? t->shape[0] : 1));
  if (x->ndim >= 3) {
    bool ok = t->ndim == x->ndim - 1;
    for (int d = 1; ok && d < t->ndim; d++) ok = t->shape[d] == x->shape[d + 1];
    if (!ok) {
      int64_t want[CT_MAX_DIMS];
      want[0] = x->shape[0];
      for (int d = 2; d < x->ndim; d++) want[d - 1] = x->shape[d];
      return CT_ERR(CT_ERR_RUNTIME, "Expected target size %s, got %s", ct_shape_str(x->ndim - 1, want, b1, sizeof b1),
                    CT_SHAPE_STR(t, b2));
    }
  } else {
    if (t->ndim > 1) return CT_ERR(CT_ERR_RUNTIME, "0D or 1D target tensor expected, multi-target not supported");
    bool no_batch = x->ndim == 1 && t->ndim == 0;
    if (!no_batch && !(t->ndim == 1 && x->shape[0] == t->shape[0]))
      return CT_ERR(CT_ERR_RUNTIME, "size mismatch (got input: %s, target: %s)", CT_SHAPE_STR(x, b1), CT_SHAPE_STR(t, b2));
  }
  if (t->dtype != CT_INT64)
    return CT_ERR(CT_ERR_RUNTIME, "expected scalar type Long but found %s", ct_dtype_torch_name(t->dtype));
  int64_t C = x->shape[x->ndim == 1 ? 0 : 1];
  CT_TRY(check_weight(x, w, C, "nll_loss_forward"));
  if (!(x->dtype == CT_FLOAT32 || x->dtype == CT_FLOAT64 || x->dtype == CT_BFLOAT16))
    return CT_ERR(CT_ERR_RUNTIME, "\"%s\" not implemented for '%s'",
                  x->ndim == 4 || x->ndim >= 3 ? "nll_loss2d_forward_out_frame" : "nll_loss_out_frame",
                  ct_dtype_torch_name(x->dtype));
  /* every non-ignored target must name a class; not inside a CUDA graph capture, which cannot read values on the
   * host (the kernels skip a target outside [0, C), the graphs' rule for bad indices: include/ctorch/cuda.h) */
  if (t->storage->device.type == CT_DEVICE_CUDA && ct_cuda_is_capturing(t->storage->device.index)) return CT_OK;
  int64_t n = ct_numel(t);
  int64_t *v = ct_xmalloc((size_t)(n ? n : 1) * sizeof(int64_t));
  if (!v) return ct_last_status();
  ct_status st = ct_copy_to_buffer(t, v, CT_INT64, n);
  for (int64_t i = 0; st == CT_OK && i < n; i++)
    if (v[i] != ignore_index && (v[i] < 0 || v[i] >= C))
      st = CT_ERR(CT_ERR_INDEX, "Target %lld is out of bounds.", (long long)v[i]);
  free(v);
  return st;
}

/* -w[t] * x[t] per target (0 where ignored) and the per-target weight w[t] * (t != ignore). */
static ct_status nll_parts(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, int64_t ignore_index,
                           ct_tensor **loss, ct_tensor **wt) {
  ct_scope *s = ct_scope_begin();
  int cd = x->ndim == 1 ? 0 : 1;
  ct_tensor *ign = TRY_T(ct_eq_scalar(t, ct_si(ignore_index)));
  ct_tensor *safe = TRY_T(ct_masked_fill(t, ign, ct_si(0)));
  ct_tensor *idx = TRY_T(t->ndim == 0 ? ct_reshape(safe, 1, (int64_t[]){1}) : ct_unsqueeze(safe, cd));
  ct_tensor *picked = TRY_T(ct_gather(x, cd, idx));
  picked = TRY_T(t->ndim == 0 ? ct_reshape(picked, 0, NULL) : ct_squeeze_dim(picked, cd));
  ct_tensor *keep = TRY_T(ct_to_dtype(TRY_T(ct_logical_not(ign)), x->dtype));
  ct_tensor *wsel = keep;
  if (w) {
    ct_tensor *flat = TRY_T(ct_reshape(safe, 1, (int64_t[]){-1}));
    ct_tensor *wf = TRY_T(ct_index_select(w, 0, flat));
    wsel = TRY_T(ct_mul(TRY_T(ct_reshape(wf, t->ndim, t->shape)), keep));
  }
  *loss = ct_keep(TRY_T(ct_neg(TRY_T(ct_mul(picked, wsel)))));
  *wt = ct_keep(wsel);
  ct_scope_end(s);
  return CT_OK;
fail:
  fail_scope(s);
  return ct_last_status();
}

static ct_tensor *nll_impl(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, ct_reduction r,
                           int64_t ignore_index) {
  ct_tensor *loss = NULL, *wt = NULL;
  if (nll_parts(x, t, w, ignore_index, &loss, &wt)) return NULL;
  ct_tensor *res = NULL;
  if (r == CT_REDUCTION_NONE) res = ct_retain(loss);
  else if (r == CT_REDUCTION_SUM) res = ct_sum(loss);
  else {
    /* the sum over the total weight of the non-ignored targets (0/0 = nan when all are ignored) */
    ct_tensor *num = ct_sum(loss), *den = num ? ct_sum(wt) : NULL;
    double dv = 1;
    if (den && ct_item_double(den, &dv) == CT_OK && dv == 0) {
      /* all targets ignored: nan, with PyTorch's zero gradient */
      ct_tensor *z = ct_mul_scalar(num, ct_sf(0.0));
      res = z ? ct_add_scalar(z, ct_sf(NAN)) : NULL;
      ct_release(z);
    } else res = den ? ct_div(num, den) : NULL;
    ct_release(num);
    ct_release(den);
  }
  ct_release(loss);
  ct_release(wt);
  /* 1.13: nll_loss for 1-D/2-D input, nll_loss2d beyond (other than 4-D, reshaped to 4-D and, unreduced,
   * viewed back) */
  return ct_name_node(res, x->ndim <= 2 ? "NllLossBackward0"
                        : (x->ndim != 4 && r == CT_REDUCTION_NONE) ? "ViewBackward0" : "NllLoss2DBackward0");
}

ct_tensor *ct_nll_loss(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, ct_reduction r, int64_t ignore_index) {
  if (check_two(x, t, "nll_loss") || check_reduction(r, false) || check_nll(x, t, w, ignore_index)) return NULL;
  return nll_impl(x, t, w, r, ignore_index);
}

/* ---- cross_entropy ---- */
static ct_tensor *weight_view(const ct_tensor *w, int ndim, int cd) {
  if (ndim <= 1) return ct_retain((ct_tensor *)w);
  int64_t shape[CT_MAX_DIMS];
  for (int d = 0; d < ndim; d++) shape[d] = 1;
  shape[cd] = w->shape[0];
  return ct_reshape(w, ndim, shape);
}

/* ---- fused cross_entropy with class indices (CPU float32/float64, input [C] or [N, C]) ----
 * One op computes log-sum-exp per row (saved, with the input) and the reduced loss; its
 * backward writes softmax - onehot, scaled and smoothed, in one pass (kernels_norm.c). With
 * grad mode on during backward (create_graph) the same gradient is built from public ops
 * (softmax of the saved input), so double backward works. Other cases take the composed
 * path below, which stays the reference (CT_REFERENCE_KERNELS=1). */
static bool ce_fusable(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, double ls) {
  /* WebGPU: float32 logits [N, C] or [C], N, C > 0; no label smoothing with class weights (webgpu_kernels.c) */
  if (x->storage->device.type == CT_DEVICE_WEBGPU && t->storage->device.type == CT_DEVICE_WEBGPU && ct_numel(x) > 0 &&
      x->ndim <= 2 && x->dtype == CT_FLOAT32)
    return !w || (w->dtype == CT_FLOAT32 && w->storage->device.type == CT_DEVICE_WEBGPU && !(ls > 0.0));
  /* CUDA: float32 / bfloat16 logits (k_fast.cu cu_ce_fused); lse and the weight total float32 */
  if (x->storage->device.type == CT_DEVICE_CUDA && t->storage->device.type == CT_DEVICE_CUDA && ct_numel(x) > 0 &&
      x->ndim <= 2 && (x->dtype == CT_FLOAT32 || x->dtype == CT_BFLOAT16))
    return !w || (w->dtype == x->dtype && w->storage->device.type == CT_DEVICE_CUDA);
  if (!ct_fast_enabled() || x->storage->device.type != CT_DEVICE_CPU || t->storage->device.type != CT_DEVICE_CPU)
    return false;
  if ((x->dtype != CT_FLOAT32 && x->dtype != CT_FLOAT64) || x->ndim > 2 || ct_numel(x) == 0) return false;
  return !w || (w->dtype == x->dtype && w->storage->device.type == CT_DEVICE_CPU);
}

static ct_tensor *ce_fused(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, ct_reduction r,
                           int64_t ignore_index, double ls, bool unchecked) {
  ct_scope *s = ct_scope_begin();
  int64_t C = x->shape[x->ndim - 1], N = x->ndim == 2 ? x->shape[0] : 1;
  ct_tensor *x2 = TRY_T(ct_contiguous(TRY_T(ct_reshape(x, 2, (int64_t[]){N, C}))));
  ct_tensor *t1 = TRY_T(ct_contiguous(TRY_T(ct_reshape(t, 1, &N))));
  ct_tensor *wc = w ? TRY_T(ct_contiguous(w)) : NULL;
  ct_call c = ct_call_make(CT_OP_cross_entropy_fused);
  c.n_in = c.n_out = 3;
  c.in[0] = x2;
  c.in[1] = t1;
  c.in[2] = wc;
  c.a.k[0] = r;
  c.a.i[0] = ignore_index;
  c.a.f[0] = ls;
  c.a.k[1] = w != NULL;
  c.a.k[2] = unchecked;
  c.out[0] = TRY_T(ct_tensor_new(r == CT_REDUCTION_NONE ? 1 : 0, &N, x->dtype, x->storage->device));
  ct_dtype sdt = x->dtype == CT_BFLOAT16 ? CT_FLOAT32 : x->dtype; /* saved lse: float32 for bfloat16 logits */
  c.out[1] = TRY_T(ct_tensor_new(1, &N, sdt, x->storage->device));
  c.out[2] = TRY_T(ct_tensor_new(0, NULL, sdt, x->storage->device));
  TRY_S(ct_dispatch(&c));
  ct_tensor *res = c.out[0];
  if (res->grad_fn) res->grad_fn->grad_unused_mask = 0x6; /* ct_bw_cross_entropy_fused reads g[0] only */
  if (r == CT_REDUCTION_NONE && x->ndim == 1) res = TRY_T(ct_reshape(res, 0, NULL));
  /* PyTorch 1.13: log_softmax + nll_loss, plus the smoothing term when label_smoothing > 0 */
  return finish(s, ct_name_node(res, ls > 0 ? "AddBackward0" : "NllLossBackward0"));
fail:
  return fail_scope(s);
}

/* dx = s_i (A_i softmax(x) - B_ic) with public ops (see kernels_norm.c for A, B) */
static ct_status ce_bw_composed(ct_node *n, ct_tensor *x, ct_tensor *t, ct_tensor *w, ct_tensor *tw, ct_tensor *g,
                                ct_tensor **gin) {
  int64_t N = x->shape[0], C = x->shape[1], ign = n->a.i[0];
  ct_reduction r = (ct_reduction)n->a.k[0];
  double ls = n->a.f[0], wsum = 0, den = 0;
  int64_t *tv = ct_xmalloc(sizeof(int64_t) * (size_t)(N ? N : 1));
  double *wv = ct_xmalloc(sizeof(double) * (size_t)(C ? C : 1));
  double *A = ct_xmalloc(sizeof(double) * (size_t)(N ? N : 1));
  double *B = N && C ? ct_xmalloc(sizeof(double) * (size_t)(N * C)) : ct_xmalloc(sizeof(double));
  ct_scope *s = ct_scope_begin();
  if (!tv || !wv || !A || !B) goto fail;
  TRY_S(ct_copy_to_buffer(t, tv, CT_INT64, N));
  if (w) TRY_S(ct_copy_to_buffer(w, wv, CT_FLOAT64, C));
  else
    for (int64_t j = 0; j < C; j++) wv[j] = 1;
  for (int64_t j = 0; j < C; j++) wsum += wv[j];
  TRY_S(ct_item_double(tw, &den));
  for (int64_t i = 0; i < N; i++) {
    bool keep = tv[i] != ign && tv[i] >= 0 && tv[i] < C;
    double wt = keep ? wv[tv[i]] : 0;
    A[i] = keep ? (1 - ls) * wt + ls / (double)C * wsum : 0;
    for (int64_t j = 0; j < C; j++) B[i * C + j] = keep ? ls / (double)C * wv[j] + (j == tv[i] ? (1 - ls) * wt : 0) : 0;
  }
  ct_options o = ct_opts_dtype(x->dtype);
  o.device = x->storage->device;
  ct_tensor *At = TRY_T(ct_from_buffer(A, CT_FLOAT64, 2, (int64_t[]){N, 1}, o));
  ct_tensor *Bt = TRY_T(ct_from_buffer(B, CT_FLOAT64, 2, (int64_t[]){N, C}, o));
  ct_tensor *sc = r == CT_REDUCTION_NONE ? TRY_T(ct_reshape(g, 2, (int64_t[]){N, 1}))
                  : r == CT_REDUCTION_MEAN ? TRY_T(ct_div_scalar(g, ct_sf(den))) : g;
  ct_tensor *p = TRY_T(ct_softmax(x, 1, -1));
  ct_tensor *d = TRY_T(ct_sub(TRY_T(ct_mul(p, At)), Bt));
  gin[0] = ct_keep(TRY_T(ct_mul(d, sc)));
  ct_scope_end(s);
  free(tv);
  free(wv);
  free(A);
  free(B);
  return CT_OK;
fail:
  fail_scope(s);
  free(tv);
  free(wv);
  free(A);
  free(B);
  return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR_RUNTIME;
}

ct_status ct_bw_cross_entropy_fused(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  if (!ct_node_needs_grad(n, 0)) return CT_OK;
  bool has_w = n->a.k[1];
  ct_tensor *x = ct_node_saved_in(n, 0), *t = ct_node_saved_in(n, 1), *w = has_w ? ct_node_saved_in(n, 2) : NULL;
  ct_tensor *lse = ct_node_saved_out(n, 1), *tw = ct_node_saved_out(n, 2);
  if (!x || !t || (has_w && !w) || !lse || !tw) return ct_last_status();
  if (ct_is_grad_enabled()) return ce_bw_composed(n, x, t, w, tw, g[0], gin);
  ct_tensor *gc = ct_contiguous(g[0]);
  if (!gc) return ct_last_status();
  ct_call c = ct_call_make(CT_OP_cross_entropy_fused_backward);
  c.n_in = 6;
  c.n_out = 1;
  c.in[0] = gc;
  c.in[1] = x;
  c.in[2] = t;
  c.in[3] = w;
  c.in[4] = lse;
  c.in[5] = tw;
  c.a = n->a;
  c.out[0] = ct_tensor_new(x->ndim, x->shape, x->dtype, x->storage->device);
  ct_status st = c.out[0] ? ct_dispatch(&c) : ct_last_status();
  ct_release(gc);
  if (st != CT_OK) {
    ct_release(c.out[0]);
    return st;
  }
  gin[0] = c.out[0];
  return CT_OK;
}

ct_tensor *ct_cross_entropy(const ct_tensor *x, const ct_tensor *t, const ct_tensor *w, ct_reduction r,
                            int64_t ignore_index, double ls) {
  if (check_two(x, t, "cross_entropy") || check_reduction(r, false)) return NULL;
  ct_tensor *up; /* bf16 autocast's float32 list (autocast.h) */
  if (ct_autocast_upcast(x, &up)) {
    ct_tensor *uw = NULL;
    bool ws = up && w && ct_autocast_upcast(w, &uw);
    ct_tensor *res = up && (!ws || uw) ? ct_cross_entropy(up, t, ws ? uw : w, r, ignore_index, ls) : NULL;
    ct_release(up);
    ct_release(uw);
    return res;
  }
  int cd = x->ndim == 1 ? 0 : 1;
  if (x->ndim == 0) {
    ct_set_error(CT_ERR_VALUE, "Expected 1 or more dimensions (got 0)");
    return NULL;
  }
  int64_t C = x->shape[cd];
  ct_scope *s = ct_scope_begin();
  if (same_shape(x, t)) {
    /* class probabilities */
    if (!ct_dtype_is_floating(t->dtype)) {
      ct_set_error(CT_ERR_RUNTIME, "Expected floating point type for target with class probabilities, got %s",
                   ct_dtype_torch_name(t->dtype));
      goto fail;
    }
    if (ignore_index >= 0) {
      ct_set_error(CT_ERR_RUNTIME, "ignore_index is not supported for floating point target");
      goto fail;
    }
    if (w && (w->ndim != 1 || ct_numel(w) != C)) {
      char b[200];
      ct_set_error(CT_ERR_RUNTIME, "cross_entropy: weight tensor should be defined either for all %lld classes or no "
                   "classes but got weight tensor of shape: %s", (long long)C, CT_SHAPE_STR(w, b));
      goto fail;
    }
    ct_tensor *lsm = TRY_T(ct_log_softmax(x, cd, -1));
    ct_tensor *tg = (ct_tensor *)t;
    if (ls > 0.0) {
      if (ls > 1.0) {
        ct_set_error(CT_ERR_RUNTIME, "label_smoothing must be between 0.0 and 1.0. Got: %g", ls);
        goto fail;
      }
      tg = TRY_T(ct_add_scalar(TRY_T(ct_mul_scalar(t, ct_sf(1 - ls))), ct_sf(ls / (double)C)));
    }
    ct_tensor *prod = TRY_T(ct_mul(lsm, tg));
    if (w) prod = TRY_T(ct_mul(prod, TRY_T(weight_view(w, x->ndim, cd))));
    ct_tensor *res;
    if (r == CT_REDUCTION_NONE) res = TRY_T(ct_neg(TRY_T(ct_sum_dims(prod, 1, (int64_t[]){cd}, false))));
    else {
      res = TRY_T(ct_neg(TRY_T(ct_sum(prod))));
      if (r == CT_REDUCTION_MEAN) {
        int64_t n = ct_numel(lsm);
        if (n == 0) res = TRY_T(ct_mul_scalar(res, ct_sf(NAN)));
        else res = ct_name_node(TRY_T(ct_div_scalar(res, ct_si(n / C))), "DivBackward1"); /* 1.13 divides by a Scalar */
      }
    }
    return finish(s, res);
  }
  /* class indices */
  if (check_nll(x, t, w, ignore_index)) goto fail;
  if (ls > 1.0) {
    ct_set_error(CT_ERR_RUNTIME, "label_smoothing must be between 0.0 and 1.0. Got: %g", ls);
    goto fail;
  }
  if (ce_fusable(x, t, w, ls)) {
    ct_scope_end(s);
    return ce_fused(x, t, w, r, ignore_index, ls > 0.0 ? ls : 0.0, false);
  }
  {
    ct_tensor *lsm = TRY_T(ct_log_softmax(x, cd, -1));
    ct_tensor *nll = TRY_T(nll_impl(lsm, t, w, r, ignore_index));
    if (!(ls > 0.0)) return finish(s, nll);
    if (ls > 1.0) {
      ct_set_error(CT_ERR_RUNTIME, "label_smoothing must be between 0.0 and 1.0. Got: %g", ls);
      goto fail;
    }
    ct_tensor *ign = TRY_T(ct_eq_scalar(t, ct_si(ignore_index)));
    ct_tensor *sm = w ? TRY_T(ct_mul(lsm, TRY_T(weight_view(w, x->ndim, cd)))) : lsm;
    ct_tensor *smooth = TRY_T(ct_neg(TRY_T(ct_sum_dims(sm, 1, (int64_t[]){cd}, false))));
    smooth = TRY_T(ct_masked_fill(smooth, ign, ct_sf(0.0)));
    ct_tensor *ret;
    if (r == CT_REDUCTION_MEAN) {
      ct_tensor *den;
      ct_tensor *keep = TRY_T(ct_logical_not(ign));
      if (w) {
        ct_tensor *sel = TRY_T(ct_masked_select(t, keep));
        den = TRY_T(ct_sum(TRY_T(ct_gather(w, 0, TRY_T(ct_reshape(sel, 1, (int64_t[]){-1}))))));
      } else den = TRY_T(ct_sum(keep));
      ret = TRY_T(ct_div(TRY_T(ct_sum(smooth)), den));
    } else if (r == CT_REDUCTION_SUM) ret = TRY_T(ct_sum(smooth));
    else ret = smooth;
    ct_tensor *a = TRY_T(ct_mul_scalar(nll, ct_sf(1 - ls)));
    ct_tensor *b = TRY_T(ct_mul_scalar(ret, ct_sf(ls / (double)C)));
    return finish(s, TRY_T(ct_add(a, b)));
  }
fail:
  return fail_scope(s);
}

/* ---- distances ---- */
ct_tensor *ct_cosine_similarity(const ct_tensor *x1, const ct_tensor *x2, int64_t dim, double eps) {
  if (check_two(x1, x2, "cosine_similarity")) return NULL;
  const ct_tensor *in[2] = {x1, x2};
  ct_dtype dt = ct_result_type_n(2, in);
  if (!ct_dtype_is_floating(dt)) {
    ct_set_error(CT_ERR_RUNTIME, "expected common dtype to be floating point, yet common dtype is %s",
                 ct_dtype_torch_name(dt));
    return NULL;
  }
  int nd;
  int64_t shape[CT_MAX_DIMS];
  if (ct_broadcast_shapes(x1->ndim, x1->shape, x2->ndim, x2->shape, &nd, shape)) return NULL;
  ct_scope *s = ct_scope_begin();
  ct_tensor *a = ct_dtype_is_floating(x1->dtype) ? (ct_tensor *)x1 : TRY_T(ct_to_dtype(x1, dt));
  ct_tensor *b = ct_dtype_is_floating(x2->dtype) ? (ct_tensor *)x2 : TRY_T(ct_to_dtype(x2, dt));
  a = TRY_T(ct_expand(a, nd, shape));
  b = TRY_T(ct_expand(b, nd, shape));
  /* each squared norm is clamped at eps^2 without grad (PyTorch 1.13), then x / sqrt(.) */
  ct_tensor *na, *nb;
  {
    ct_tensor *sa = TRY_T(ct_clone(TRY_T(ct_sum_dims(TRY_T(ct_mul(a, a)), 1, &dim, true))));
    ct_tensor *sb = TRY_T(ct_clone(TRY_T(ct_sum_dims(TRY_T(ct_mul(b, b)), 1, &dim, true))));
    bool prev = ct_set_grad_enabled(false);
    ct_scalar lo = ct_sf(eps * eps);
    ct_status st1 = ct_clamp_(sa, &lo, NULL), st2 = st1 == CT_OK ? ct_clamp_(sb, &lo, NULL) : st1;
    ct_set_grad_enabled(prev);
    if (st2 != CT_OK) goto fail;
    na = TRY_T(ct_sqrt(sa));
    nb = TRY_T(ct_sqrt(sb));
  }
  ct_tensor *p = TRY_T(ct_mul(TRY_T(ct_div(a, na)), TRY_T(ct_div(b, nb))));
  return finish(s, TRY_T(ct_sum_dims(p, 1, &dim, false)));
fail:
  return fail_scope(s);
}

ct_tensor *ct_pairwise_distance(const ct_tensor *x1, const ct_tensor *x2, double p, double eps, bool keepdim) {
  if (check_two(x1, x2, "pairwise_distance")) return NULL;
  int nd = x1->ndim > x2->ndim ? x1->ndim : x2->ndim;
  int64_t dim = nd - 1;
  if (p < 0) {
    ct_set_error(CT_ERR_RUNTIME, "linalg.vector_norm: p must be non-negative");  /* unreachable from F for p < 0? */
    return NULL;
  }
  ct_scope *s = ct_scope_begin();
  ct_tensor *d = TRY_T(ct_add_scalar(TRY_T(ct_sub(x1, x2)), ct_sf(eps)));
  int n_dims = nd ? 1 : 0;
  const int64_t *dims = nd ? &dim : NULL;
  ct_tensor *res;
  if (p == 2) res = TRY_T(ct_sqrt(TRY_T(ct_sum_dims(TRY_T(ct_mul(d, d)), n_dims, dims, keepdim))));
  else if (p == 1) res = TRY_T(ct_sum_dims(TRY_T(ct_abs(d)), n_dims, dims, keepdim));
  else if (isinf(p) || p == 0) {
    ct_set_error(CT_ERR_NOT_IMPLEMENTED, "pairwise_distance: p = %g is not implemented yet", p);
    goto fail;
  } else {
    ct_tensor *sp = TRY_T(ct_sum_dims(TRY_T(ct_pow_scalar(TRY_T(ct_abs(d)), ct_sf(p))), n_dims, dims, keepdim));
    res = TRY_T(ct_pow_scalar(sp, ct_sf(1.0 / p)));
  }
  return finish(s, ct_name_node(res, "NormBackward1")); /* 1.13 calls norm */
fail:
  return fail_scope(s);
}

/* ---- one_hot ---- */
/* PyTorch's class-range checks on the smallest and largest value */
static ct_status one_hot_classes(int64_t mn, int64_t mx, int64_t num_classes) {
  if (mn < 0) return CT_ERR(CT_ERR_RUNTIME, "Class values must be non-negative.");
  if (num_classes != -1 && !(num_classes > mx)) return CT_ERR(CT_ERR_RUNTIME, "Class values must be smaller than num_classes.");
  return CT_OK;
}
/* Device tensors (non-empty int64): the range comes from two device reductions read back
 * as scalars (PyTorch's .item()), never from device memory on the host; the result is
 * eq(t.unsqueeze(-1), arange(C)) as int64, all device ops. */
ct_tensor *ct_one_hot_unchecked(const ct_tensor *t, int64_t num_classes, ct_dtype dtype) {
  if (ct_check_tensor(t, "one_hot")) return NULL;
  if (t->dtype != CT_INT64) {
    ct_set_error(CT_ERR_RUNTIME, "one_hot is only applicable to index tensor.");
    return NULL;
  }
  if (t->ndim + 1 > CT_MAX_DIMS || num_classes < 0) {
    ct_set_error(CT_ERR_RUNTIME, "one_hot: at most %d dims and num_classes >= 0", CT_MAX_DIMS - 1);
    return NULL;
  }
  /* comparisons with arange on the tensor's own device: nothing is read back */
  ct_options o = ct_opts_dtype(CT_INT64);
  o.device = t->storage->device;
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *ar = ct_arange(ct_si(0), ct_si(num_classes), ct_si(1), &o), *u = ar ? ct_unsqueeze(t, -1) : NULL;
  ct_tensor *e = u ? ct_eq(u, ar) : NULL;
  ct_tensor *out = e ? ct_to_dtype(e, dtype) : NULL;
  ct_set_grad_enabled(prev);
  ct_release(ar);
  ct_release(u);
  ct_release(e);
  return out;
}

static ct_tensor *one_hot_device(const ct_tensor *t, int64_t num_classes) {
  int64_t mn = 0, mx = 0;
  ct_tensor *tmin = ct_min(t), *tmax = tmin ? ct_max(t) : NULL, *out = NULL;
  ct_status st = tmax ? ct_item_int64(tmin, &mn) : ct_last_status();
  if (st == CT_OK) st = ct_item_int64(tmax, &mx);
  if (st == CT_OK) st = one_hot_classes(mn, mx, num_classes);
  int64_t nc = num_classes == -1 ? mx + 1 : num_classes, total;
  if (st == CT_OK && !ct_mul_ok(ct_numel(t), nc, &total)) st = CT_ERR(CT_ERR_RUNTIME, "one_hot: size overflow");
  if (st == CT_OK) out = ct_one_hot_unchecked(t, nc, CT_INT64);
  ct_release(tmin);
  ct_release(tmax);
  return out;
}

ct_tensor *ct_one_hot(const ct_tensor *t, int64_t num_classes) {
  if (ct_check_tensor(t, "one_hot")) return NULL;
  if (t->dtype != CT_INT64) {
    ct_set_error(CT_ERR_RUNTIME, "one_hot is only applicable to index tensor.");
    return NULL;
  }
  if (t->ndim + 1 > CT_MAX_DIMS) {
    ct_set_error(CT_ERR_RUNTIME, "one_hot: at most %d dims", CT_MAX_DIMS - 1);
    return NULL;
  }
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
  int64_t n = ct_numel(t);
  if (n == 0) {
    if (num_classes <= 0) {
      ct_set_error(CT_ERR_RUNTIME, "Can not infer total number of classes from empty tensor.");
      return NULL;
    }
    shape[t->ndim] = num_classes;
    ct_options eo = ct_opts_dtype(CT_INT64);
    eo.device = t->storage->device;
    return ct_empty(t->ndim + 1, shape, eo);
  }
  if (t->storage->device.type != CT_DEVICE_CPU) return one_hot_device(t, num_classes);
  ct_tensor *c = ct_contiguous(t);
  if (!c) return NULL;
  const int64_t *v = (const int64_t *)ct_cpu_ptr(c);
  int64_t mn = v[0], mx = v[0];
  for (int64_t i = 1; i < n; i++) {
    if (v[i] < mn) mn = v[i];
    if (v[i] > mx) mx = v[i];
  }
  ct_tensor *out = NULL;
  if (one_hot_classes(mn, mx, num_classes) == CT_OK) {
    shape[t->ndim] = num_classes == -1 ? mx + 1 : num_classes;
    int64_t total;
    if (!ct_mul_ok(n, shape[t->ndim], &total)) ct_set_error(CT_ERR_RUNTIME, "one_hot: size overflow");
    else if ((out = ct_empty(t->ndim + 1, shape, ct_opts_dtype(CT_INT64)))) {
      ct_call call = ct_call_make(CT_OP_one_hot);
      call.n_in = 1;
      call.n_out = 1;
      call.in[0] = c;
      call.out[0] = out;
      if (ct_run_kernel(&call) != CT_OK) {
        ct_release(out);
        out = NULL;
      }
    }
  }
  ct_release(c);
  return out;
}

/* ct_cross_entropy_unchecked's fused form (loss_fused.h): NULL with no error set where the
 * fused kernel does not apply (the caller then builds the one-hot form). */
ct_tensor *ct_cross_entropy_fused_unchecked(const ct_tensor *x, const ct_tensor *t) {
  /* CUDA float32 too (session 13b, k_fast.cu cu_ce_fused with a.k[2] = 1: an out-of-range target is a zero row
   * counted in the mean, as here): 3 kernels instead of the one-hot form's ~20; CT_CUDA_CE_FUSED=0 keeps the one-hot
   * form. (bfloat16 logits keep the one-hot form, whose ct_cross_entropy upcasts them under autocast.) */
  const char *cu_off = x->storage->device.type == CT_DEVICE_CUDA ? getenv("CT_CUDA_CE_FUSED") : NULL;
  bool dev_ok = x->storage->device.type == CT_DEVICE_WEBGPU ||
                (x->storage->device.type == CT_DEVICE_CUDA && x->dtype == CT_FLOAT32 && !(cu_off && *cu_off == '0'));
  if (!dev_ok || x->ndim != 2 || !ce_fusable(x, t, NULL, 0.0)) return NULL;
  return ce_fused(x, t, NULL, CT_REDUCTION_MEAN, -100, 0.0, true);
}
