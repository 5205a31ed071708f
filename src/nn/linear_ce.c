/* Classifier head + cross-entropy without keeping the logits (issue 6 item 5): the rows go in
 * chunks, each through activation checkpointing (src/nn/checkpoint.c), so forward keeps no
 * [chunk, V] tensor and backward recomputes one chunk's logits at a time; inside a chunk the
 * fused cross-entropy (src/ops/loss.c) runs. */
#include "ctorch.h"
#include "../core/internal.h"
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
