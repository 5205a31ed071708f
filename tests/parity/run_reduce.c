/* Parity runners of the reduction and sort-like ops (src/ops/reduce.c). sum and mean
 * use the core runners (run_core.c: "dims", "keepdim", "dtype").
 * Common attrs: "dims" (list; absent = all dims), "dim" (int; absent = None where the op
 * allows it), "keepdim", "dtype" (name), "k", "largest", "descending", "stable",
 * "correction", "unbiased", "p" (number or "fro"), "inplace". */
#include "parity.h"
#include <math.h>
#include <string.h>

#define RET1(expr)          \
  do {                      \
    out[0] = (expr);        \
    return out[0] ? 1 : -1; \
  } while (0)
#define RET2(call) return (call) == CT_OK ? 2 : -1

/* dims list: returns the count (0 with dims absent = all dims) */
#define DIMS(var, nvar)                                  \
  int64_t var[8];                                        \
  int nvar = pc_ints(c, "dims", var, 8);                 \
  if (nvar > 8) return -1;                               \
  if (nvar < 0) nvar = 0

PARITY_OP(mean_dtype) {
  DIMS(dims, nd);
  RET1(ct_mean_dtype(in[0], nd, nd ? dims : NULL, pc_int(c, "keepdim", 0), pc_dtype(c, "dtype")));
}

PARITY_OP(prod) {
  int64_t dim = pc_int(c, "dim", 0);
  RET1(ct_prod_dtype(in[0], pc_has(c, "dim") ? &dim : NULL, pc_int(c, "keepdim", 0), pc_dtype(c, "dtype")));
}

PARITY_OP(amax) {
  DIMS(dims, nd);
  RET1(ct_amax(in[0], nd, nd ? dims : NULL, pc_int(c, "keepdim", 0)));
}
PARITY_OP(amin) {
  DIMS(dims, nd);
  RET1(ct_amin(in[0], nd, nd ? dims : NULL, pc_int(c, "keepdim", 0)));
}
PARITY_OP(max_all) { RET1(ct_max(in[0])); }
PARITY_OP(min_all) { RET1(ct_min(in[0])); }
PARITY_OP(max_dim) { RET2(ct_max_dim(in[0], pc_int(c, "dim", 0), pc_int(c, "keepdim", 0), &out[0], &out[1])); }
PARITY_OP(min_dim) { RET2(ct_min_dim(in[0], pc_int(c, "dim", 0), pc_int(c, "keepdim", 0), &out[0], &out[1])); }
PARITY_OP(argmax) {
  int64_t dim = pc_int(c, "dim", 0);
  RET1(ct_argmax(in[0], pc_has(c, "dim") ? &dim : NULL, pc_int(c, "keepdim", 0)));
}
PARITY_OP(argmin) {
  int64_t dim = pc_int(c, "dim", 0);
  RET1(ct_argmin(in[0], pc_has(c, "dim") ? &dim : NULL, pc_int(c, "keepdim", 0)));
}

static double correction_of(const pcase *c) {
  if (pc_has(c, "unbiased")) return pc_int(c, "unbiased", 1) ? 1.0 : 0.0;
  return pc_float(c, "correction", 1.0);
}
PARITY_OP(var) {
  DIMS(dims, nd);
  RET1(ct_var(in[0], nd, nd ? dims : NULL, correction_of(c), pc_int(c, "keepdim", 0)));
}
PARITY_OP(std) {
  DIMS(dims, nd);
  RET1(ct_std(in[0], nd, nd ? dims : NULL, correction_of(c), pc_int(c, "keepdim", 0)));
}
PARITY_OP(var_mean) {
  DIMS(dims, nd);
  RET2(ct_var_mean(in[0], nd, nd ? dims : NULL, correction_of(c), pc_int(c, "keepdim", 0), &out[0], &out[1]));
}
PARITY_OP(std_mean) {
  DIMS(dims, nd);
  RET2(ct_std_mean(in[0], nd, nd ? dims : NULL, correction_of(c), pc_int(c, "keepdim", 0), &out[0], &out[1]));
}

/* "p": a number, "inf"/"-inf" as strings, or "fro"/"nuc"/other strings */
PARITY_OP(norm) {
  DIMS(dims, nd);
  bool keep = pc_int(c, "keepdim", 0);
  const char *ps = pc_str(c, "p", NULL);
  if (ps && strcmp(ps, "inf") && strcmp(ps, "-inf")) RET1(ct_norm_str(in[0], ps, nd, nd ? dims : NULL, keep));
  double p = ps ? (ps[0] == '-' ? -INFINITY : INFINITY) : pc_float(c, "p", 2.0);
  RET1(ct_norm(in[0], p, nd, nd ? dims : NULL, keep));
}
PARITY_OP(vector_norm) {
  DIMS(dims, nd);
  const char *ps = pc_str(c, "ord", NULL);
  double p = ps ? (ps[0] == '-' ? -INFINITY : INFINITY) : pc_float(c, "ord", 2.0);
  RET1(ct_vector_norm(in[0], p, nd, nd ? dims : NULL, pc_int(c, "keepdim", 0), pc_dtype(c, "dtype")));
}

PARITY_OP(logsumexp) {
  DIMS(dims, nd);
  RET1(ct_logsumexp(in[0], nd, nd ? dims : NULL, pc_int(c, "keepdim", 0)));
}

PARITY_OP(all) {
  if (!pc_has(c, "dim")) RET1(ct_all(in[0]));
  RET1(ct_all_dim(in[0], pc_int(c, "dim", 0), pc_int(c, "keepdim", 0)));
}
PARITY_OP(any) {
  if (!pc_has(c, "dim")) RET1(ct_any(in[0]));
  RET1(ct_any_dim(in[0], pc_int(c, "dim", 0), pc_int(c, "keepdim", 0)));
}
PARITY_OP(count_nonzero) {
  DIMS(dims, nd);
  RET1(ct_count_nonzero(in[0], nd, nd ? dims : NULL));
}

/* cumsum/cumprod; "inplace": the in-place form on a clone */
static int cum_run(const pcase *c, ct_tensor *const *in, ct_tensor **out, bool prod) {
  int64_t dim = pc_int(c, "dim", 0);
  if (pc_int(c, "inplace", 0)) {
    ct_tensor *x = ct_clone(in[0]);
    if (!x) return -1;
    if ((prod ? ct_cumprod_(x, dim) : ct_cumsum_(x, dim)) != CT_OK) {
      ct_release(x);
      return -1;
    }
    out[0] = x;
    return 1;
  }
  RET1(prod ? ct_cumprod(in[0], dim, pc_dtype(c, "dtype")) : ct_cumsum(in[0], dim, pc_dtype(c, "dtype")));
}
PARITY_OP(cumsum) { return cum_run(c, in, out, false); }
PARITY_OP(cumprod) { return cum_run(c, in, out, true); }
PARITY_OP(cummax) { RET2(ct_cummax(in[0], pc_int(c, "dim", 0), &out[0], &out[1])); }
PARITY_OP(cummin) { RET2(ct_cummin(in[0], pc_int(c, "dim", 0), &out[0], &out[1])); }

PARITY_OP(sort) {
  RET2(ct_sort(in[0], pc_int(c, "dim", -1), pc_int(c, "descending", 0), pc_int(c, "stable", 0), &out[0], &out[1]));
}
PARITY_OP(argsort) {
  RET1(ct_argsort(in[0], pc_int(c, "dim", -1), pc_int(c, "descending", 0), pc_int(c, "stable", 0)));
}
PARITY_OP(msort) { RET1(ct_msort(in[0])); }
PARITY_OP(topk) {
  RET2(ct_topk(in[0], pc_int(c, "k", 1), pc_int(c, "dim", -1), pc_int(c, "largest", 1), pc_int(c, "sorted", 1), &out[0],
               &out[1]));
}
PARITY_OP(kthvalue) {
  RET2(ct_kthvalue(in[0], pc_int(c, "k", 1), pc_int(c, "dim", -1), pc_int(c, "keepdim", 0), &out[0], &out[1]));
}
PARITY_OP(median) {
  if (!pc_has(c, "dim")) RET1(ct_median(in[0]));
  RET2(ct_median_dim(in[0], pc_int(c, "dim", 0), pc_int(c, "keepdim", 0), &out[0], &out[1]));
}
PARITY_OP(nanmedian) {
  if (!pc_has(c, "dim")) RET1(ct_nanmedian(in[0]));
  RET2(ct_nanmedian_dim(in[0], pc_int(c, "dim", 0), pc_int(c, "keepdim", 0), &out[0], &out[1]));
}
PARITY_OP(mode) { RET2(ct_mode(in[0], pc_int(c, "dim", -1), pc_int(c, "keepdim", 0), &out[0], &out[1])); }

/* unique: outputs in PyTorch's order (values, [inverse], [counts]) */
PARITY_OP(unique) {
  bool ri = pc_int(c, "return_inverse", 0), rc = pc_int(c, "return_counts", 0);
  ct_tensor *u = NULL, *inv = NULL, *cnt = NULL;
  if (ct_unique(in[0], pc_int(c, "sorted", 1), ri, rc, &u, ri ? &inv : NULL, rc ? &cnt : NULL) != CT_OK) return -1;
  int k = 0;
  out[k++] = u;
  if (ri) out[k++] = inv;
  if (rc) out[k++] = cnt;
  return k;
}
