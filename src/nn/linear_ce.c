/* Classifier head + cross-entropy without keeping the logits (issue 6 item 5): the rows go in
 * chunks, each through activation checkpointing (src/nn/checkpoint.c), so forward keeps no
 * [chunk, V] tensor and backward recomputes one chunk's logits at a time; inside a chunk the
 * fused cross-entropy (src/ops/loss.c) runs. */
#include "ctorch.h"
#include "../core/internal.h"
#include "../autograd/autograd.h"
#include "../backend/cpu/simd/fast_ew.h"
#include "../backend/cpu/simd/simd.h"
#include "../ops/op_table.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* in: x chunk [n, D], weight [V, D], target chunk [n], ignore_index (0-dim int64),
 * reduction (0-dim int64: none or sum); out: the chunk's loss */
static ct_status lce_chunk(void *user, int n_in, ct_tensor *const *in, int n_out, ct_tensor **out) {
  (void)user;
  int64_t ign = 0, red = 0;
  if (ct_item_int64(in[3], &ign) != CT_OK || ct_item_int64(in[4], &red) != CT_OK) return ct_last_status();
  ct_tensor *wt = ct_transpose(in[1], 0, 1);
  ct_tensor *logits = wt ? ct_matmul(in[0], wt) : NULL;
  out[0] = logits ? ct_cross_entropy(logits, in[2], NULL, (ct_reduction)red, ign, 0.0) : NULL;
  ct_release(wt);
  ct_release(logits);
  return out[0] ? CT_OK : ct_last_status();
}

/* ---- the fused path: float32 CPU, reduction sum or mean ----
 * Forward goes over row chunks: logits = x_c W^T, each row's log-sum-exp and loss, and, when a
 * gradient is wanted, the gradient of the summed loss at once (softmax - one_hot, times 1/kept
 * for 'mean'), which two GEMMs turn into this chunk's rows of dx and its share of dW. The node
 * keeps only dx [N, D] and dW [V, D]; backward scales them by the incoming (scalar) gradient.
 * No logits are kept and none recomputed (the checkpointed path recomputes them). The gradient
 * it returns is not differentiable again: backward with create_graph is refused. */
typedef struct {
  ct_tensor *dx, *dw; /* owned; NULL where no gradient is wanted */
} lce_saved;

static void lce_saved_free(void *p) {
  lce_saved *s = p;
  if (!s) return;
  ct_release(s->dx);
  ct_release(s->dw);
  free(s);
}

static ct_status lce_backward(ct_node *n, ct_tensor *const *gout, ct_tensor **gin) {
  lce_saved *s = n->extra;
  if (ct_grad_mode_recording())
    return CT_ERR(CT_ERR_RUNTIME, "linear_cross_entropy: the fused float32 path does not support double backward "
                                  "(create_graph=True)");
  if (!s) return CT_ERR(CT_ERR_RUNTIME, "linear_cross_entropy: the saved gradients were freed");
  if (ct_node_needs_grad(n, 0) && s->dx && !(gin[0] = ct_mul(s->dx, gout[0]))) return ct_last_status();
  if (ct_node_needs_grad(n, 1) && s->dw && !(gin[1] = ct_mul(s->dw, gout[0]))) return ct_last_status();
  return CT_OK;
}

typedef struct {
  float *lg;          /* [n, V] logits in, gradient rows out */
  const int64_t *tgt; /* [n] */
  int64_t V, ign;
  double scale;       /* the gradient's factor: 1 or 1 / kept */
  bool grad;
  double *loss;       /* [n] per-row loss (0 for ignored rows) */
} lce_rows;

static void lce_row_range(void *vctx, int64_t r0, int64_t r1) {
  lce_rows *k = vctx;
  int64_t V = k->V;
  ct_attrs a = {0};
  int64_t st[2] = {4, 4};
  for (int64_t r = r0; r < r1; r++) {
    float *row = k->lg + r * V;
    int64_t t = k->tgt[r];
    if (t == k->ign) {
      k->loss[r] = 0;
      if (k->grad) memset(row, 0, (size_t)V * sizeof *row);
      continue;
    }
    float mx = row[0];
    for (int64_t j = 1; j < V; j++) mx = row[j] > mx ? row[j] : mx;
    float lt = row[t];
    for (int64_t j = 0; j < V; j++) row[j] -= mx;
    char *p[2] = {(char *)row, (char *)row};
    if (!ct_fast_unary_loop_f32(CT_OP_exp, &a, p, st, V))
      for (int64_t j = 0; j < V; j++) row[j] = expf(row[j]);
    double sum = 0;
    for (int64_t j = 0; j < V; j++) sum += row[j];
    k->loss[r] = log(sum) + (double)mx - (double)lt;
    if (k->grad) {
      float f = (float)(k->scale / sum);
      for (int64_t j = 0; j < V; j++) row[j] *= f;
      row[t] -= (float)k->scale;
    }
  }
}

/* NULL with no error set: not this path's case (the caller takes the general one) */
static ct_tensor *lce_fused(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *target, ct_reduction r,
                            int64_t ignore_index, int64_t chunk) {
  if (r == CT_REDUCTION_NONE || !ct_fast_enabled() || x->dtype != CT_FLOAT32 || weight->dtype != CT_FLOAT32 ||
      target->dtype != CT_INT64 || x->storage->device.type != CT_DEVICE_CPU ||
      weight->storage->device.type != CT_DEVICE_CPU || target->storage->device.type != CT_DEVICE_CPU ||
      !ct_is_contiguous(target))
    return NULL;
  int64_t N = x->shape[0], D = x->shape[1], V = weight->shape[0];
  if (N == 0 || V == 0 || D == 0) return NULL;
  uint64_t e0 = ct_error_serial();
  const int64_t *tg = (const int64_t *)ct_cpu_ptr(target);
  int64_t kept = 0;
  for (int64_t i = 0; i < N; i++) {
    if (tg[i] == ignore_index) continue;
    if (tg[i] < 0 || tg[i] >= V) return NULL; /* the general path reports it */
    kept++;
  }
  bool grad = ct_grad_mode_recording() && (ct_tensor_requires_grad(x) || ct_tensor_requires_grad(weight));
  bool want_dx = grad && ct_tensor_requires_grad(x), want_dw = grad && ct_tensor_requires_grad(weight);
  /* rows per chunk: the caller's, else about 8M logits at a time */
  if (chunk <= 0) {
    chunk = (INT64_C(8) << 20) / V;
    if (chunk < 1) chunk = 1;
  }
  if (chunk > N) chunk = N;
  double *loss = malloc((size_t)chunk * sizeof *loss);
  lce_saved *sv = calloc(1, sizeof *sv);
  ct_tensor *loss_t = NULL, *wd = NULL, *xd = NULL;
  bool prev = ct_set_grad_enabled(false), ok = loss && sv;
  if (!ok) ct_set_error(CT_ERR_OOM, "out of memory");
  xd = ok ? ct_detach(x) : NULL;
  wd = xd ? ct_detach(weight) : NULL;
  ct_tensor *wt = wd ? ct_transpose(wd, 0, 1) : NULL;
  ok = wt != NULL;
  if (ok && want_dx) ok = (sv->dx = ct_empty(2, x->shape, ct_opts_dtype(CT_FLOAT32))) != NULL;
  double total = 0;
  for (int64_t c0 = 0; ok && c0 < N; c0 += chunk) {
    int64_t n = N - c0 < chunk ? N - c0 : chunk;
    ct_tensor *xc = ct_narrow(xd, 0, c0, n), *lg = xc ? ct_mm(xc, wt) : NULL;
    ok = lg && ct_is_contiguous(lg);
    if (ok) {
      lce_rows k = {(float *)ct_cpu_ptr(lg), tg + c0, V, ignore_index, r == CT_REDUCTION_MEAN ? 1.0 / (double)kept : 1.0,
                    grad, loss};
      ct_parallel_for(n, (4096 + V - 1) / V, lce_row_range, &k);
      for (int64_t i = 0; i < n; i++) total += loss[i];
    }
    if (ok && want_dx) { /* dx rows = dlogits @ W */
      ct_tensor *d = ct_mm(lg, wd), *dst = d ? ct_narrow(sv->dx, 0, c0, n) : NULL;
      ok = dst && ct_copy_(dst, d) == CT_OK;
      ct_release(d);
      ct_release(dst);
    }
    if (ok && want_dw) { /* dW += dlogits^T @ x_c */
      ct_tensor *lt = ct_transpose(lg, 0, 1), *d = lt ? ct_mm(lt, xc) : NULL;
      ok = d != NULL;
      if (ok && !sv->dw) sv->dw = ct_retain(d);
      else if (ok) ok = ct_add_(sv->dw, d) == CT_OK;
      ct_release(lt);
      ct_release(d);
    }
    ct_release(xc);
    ct_release(lg);
  }
  ct_release(wt);
  ct_release(wd);
  ct_release(xd);
  ct_set_grad_enabled(prev);
  if (ok) {
    double v = r == CT_REDUCTION_MEAN ? (kept ? total / (double)kept : NAN) : total;
    loss_t = ct_scalar_tensor(ct_sf(v), ct_opts_dtype(CT_FLOAT32));
    ok = loss_t != NULL;
  }
  if (ok && grad) {
    if (sv->dx) ct_own(sv->dx);
    if (sv->dw) ct_own(sv->dw);
    ct_tensor *in[2] = {(ct_tensor *)x, (ct_tensor *)weight};
    ct_node *nd = ct_record_node(-1, 2, in, 1, &loss_t, NULL, CT_SAVE_NONE, lce_backward, "LinearCrossEntropyBackward");
    if (nd) {
      nd->extra = sv;
      nd->extra_free = lce_saved_free;
      sv = NULL;
    } else if (ct_last_status() != CT_OK) {
      ok = false;
    }
  }
  lce_saved_free(sv);
  free(loss);
  if (!ok) {
    ct_release(loss_t);
    if (ct_error_serial() == e0) ct_set_error(CT_ERR_RUNTIME, "linear_cross_entropy failed");
    return NULL;
  }
  return loss_t;
}

ct_tensor *ct_linear_cross_entropy(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *target, ct_reduction r,
                                   int64_t ignore_index, int64_t chunk) {
  if (!x || !weight || !target) {
    ct_set_error(CT_ERR_TYPE, "linear_cross_entropy(): expected tensors, got None");
    return NULL;
  }
  if (r != CT_REDUCTION_NONE && r != CT_REDUCTION_SUM && r != CT_REDUCTION_MEAN) {
    ct_set_error(CT_ERR_VALUE, "%d is not a valid value for reduction", (int)r);
    return NULL;
  }
  if (ct_ndim(x) != 2 || ct_ndim(weight) != 2 || ct_shape(x)[1] != ct_shape(weight)[1]) {
    ct_set_error(CT_ERR_RUNTIME, "linear_cross_entropy: expected x [N, D] and weight [V, D] with the same D");
    return NULL;
  }
  int64_t N = ct_shape(x)[0];
  if (ct_ndim(target) != 1 || ct_shape(target)[0] != N) {
    ct_set_error(CT_ERR_VALUE, "Expected input batch_size (%lld) to match target batch_size (%lld).", (long long)N,
                 (long long)(ct_ndim(target) ? ct_shape(target)[0] : 1));
    return NULL;
  }
  uint64_t err0 = ct_error_serial();
  ct_tensor *fast = lce_fused(x, weight, target, r, ignore_index, chunk);
  if (fast || ct_error_serial() != err0) return fast;
  if (chunk <= 0) chunk = 1024;
  /* the kept-target count for 'mean' (validity of the targets is checked by cross_entropy) */
  int64_t kept = 0;
  if (r == CT_REDUCTION_MEAN && N > 0) {
    ct_tensor *eq = ct_ne_scalar(target, ct_si(ignore_index)), *s = eq ? ct_sum(eq) : NULL;
    ct_status st = s ? ct_item_int64(s, &kept) : ct_last_status();
    ct_release(eq);
    ct_release(s);
    if (st != CT_OK) return NULL;
  }
  ct_tensor *ign = ct_scalar_tensor(ct_si(ignore_index), ct_opts_dtype(CT_INT64));
  ct_tensor *red = ct_scalar_tensor(ct_si(r == CT_REDUCTION_NONE ? CT_REDUCTION_NONE : CT_REDUCTION_SUM),
                                    ct_opts_dtype(CT_INT64));
  int64_t nch = N > 0 ? (N + chunk - 1) / chunk : 1;
  ct_tensor **parts = calloc((size_t)nch, sizeof *parts);
  ct_tensor *res = NULL;
  bool ok = ign && red && parts;
  for (int64_t c = 0; ok && c < nch; c++) {
    int64_t c0 = c * chunk, len = N - c0 < chunk ? N - c0 : chunk;
    ct_tensor *xc = ct_narrow(x, 0, c0, len), *tc = ct_narrow(target, 0, c0, len);
    ct_tensor *ins[5] = {xc, (ct_tensor *)weight, tc, ign, red};
    ok = xc && tc && ct_checkpoint(lce_chunk, NULL, 5, ins, 1, &parts[c]) == CT_OK;
    ct_release(xc);
    ct_release(tc);
  }
  if (ok && r == CT_REDUCTION_NONE) {
    res = ct_cat((int)nch, (const ct_tensor *const *)parts, 0);
  } else if (ok) {
    ct_tensor *total = parts[0]; /* ownership moves to total */
    parts[0] = NULL;
    for (int64_t c = 1; total && c < nch; c++) {
      ct_tensor *t = ct_add(total, parts[c]);
      ct_release(total);
      total = t;
    }
    if (total && r == CT_REDUCTION_MEAN) {
      if (kept == 0) { /* all ignored: nan, with a zero gradient (as cross_entropy) */
        ct_tensor *z = ct_mul_scalar(total, ct_sf(0.0));
        res = z ? ct_add_scalar(z, ct_sf(NAN)) : NULL;
        ct_release(z);
      } else {
        res = ct_div_scalar(total, ct_si(kept));
      }
      ct_release(total);
    } else {
      res = total;
    }
  }
  for (int64_t c = 0; parts && c < nch; c++) ct_release(parts[c]);
  free(parts);
  ct_release(ign);
  ct_release(red);
  return res;
}
