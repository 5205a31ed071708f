/* Parity runners of the index family (src/ops/index.c).
 * Common attrs: "dim"; "inplace" (run the in-place form on a clone of in[0]; the
 * case's fn does x.clone().op_(...)); "value" (a scalar operand). Index tensors are
 * the case's inputs. getitem/setitem take "items": a comma-separated list of
 *   int:K  slice:START:STOP:STEP (empty parts are None)  none  ellipsis  tensor:K
 *   (input K)  bool:0|1
 * mirroring the Python expression x[...] that the case's fn evaluates. */
#include "parity.h"
#include <stdlib.h>
#include <string.h>

#define RET1(expr)          \
  do {                      \
    out[0] = (expr);        \
    return out[0] ? 1 : -1; \
  } while (0)

#define INPLACE(call_on_x)          \
  do {                              \
    ct_tensor *x = ct_clone(in[0]); \
    if (!x) return -1;              \
    if ((call_on_x) != CT_OK) {     \
      ct_release(x);                \
      return -1;                    \
    }                               \
    out[0] = x;                     \
    return 1;                       \
  } while (0)

static int64_t dim_of(const pcase *c) { return pc_int(c, "dim", 0); }

PARITY_OP(index_select) { RET1(ct_index_select(in[0], dim_of(c), in[1])); }
PARITY_OP(gather) { RET1(ct_gather(in[0], dim_of(c), in[1])); }

PARITY_OP(scatter) {
  bool ip = pc_int(c, "inplace", 0);
  if (pc_has(c, "value")) {
    ct_scalar v = pc_scalar(c, "value", ct_si(0));
    if (ip) INPLACE(ct_scatter_value_(x, dim_of(c), in[1], v));
    RET1(ct_scatter_value(in[0], dim_of(c), in[1], v));
  }
  if (ip) INPLACE(ct_scatter_(x, dim_of(c), in[1], in[2]));
  RET1(ct_scatter(in[0], dim_of(c), in[1], in[2]));
}

PARITY_OP(scatter_add) {
  if (pc_int(c, "inplace", 0)) INPLACE(ct_scatter_add_(x, dim_of(c), in[1], in[2]));
  RET1(ct_scatter_add(in[0], dim_of(c), in[1], in[2]));
}

PARITY_OP(scatter_reduce) {
  const char *r = pc_str(c, "reduce", "sum");
  bool inc = pc_int(c, "include_self", 1);
  if (pc_int(c, "inplace", 0)) INPLACE(ct_scatter_reduce_(x, dim_of(c), in[1], in[2], r, inc));
  RET1(ct_scatter_reduce(in[0], dim_of(c), in[1], in[2], r, inc));
}

PARITY_OP(index_add) {
  ct_scalar alpha = pc_scalar(c, "alpha", ct_si(1));
  if (pc_int(c, "inplace", 0)) INPLACE(ct_index_add_(x, dim_of(c), in[1], in[2], alpha));
  RET1(ct_index_add(in[0], dim_of(c), in[1], in[2], alpha));
}

PARITY_OP(index_copy) {
  if (pc_int(c, "inplace", 0)) INPLACE(ct_index_copy_(x, dim_of(c), in[1], in[2]));
  RET1(ct_index_copy(in[0], dim_of(c), in[1], in[2]));
}

PARITY_OP(index_fill) {
  bool ip = pc_int(c, "inplace", 0);
  if (n_in > 2) {
    if (ip) INPLACE(ct_index_fill_tensor_(x, dim_of(c), in[1], in[2]));
    RET1(ct_index_fill_tensor(in[0], dim_of(c), in[1], in[2]));
  }
  ct_scalar v = pc_scalar(c, "value", ct_si(0));
  if (ip) INPLACE(ct_index_fill_(x, dim_of(c), in[1], v));
  RET1(ct_index_fill(in[0], dim_of(c), in[1], v));
}

PARITY_OP(masked_fill) {
  bool ip = pc_int(c, "inplace", 0);
  if (n_in > 2) {
    if (ip) INPLACE(ct_masked_fill_tensor_(x, in[1], in[2]));
    RET1(ct_masked_fill_tensor(in[0], in[1], in[2]));
  }
  ct_scalar v = pc_scalar(c, "value", ct_si(0));
  if (ip) INPLACE(ct_masked_fill_(x, in[1], v));
  RET1(ct_masked_fill(in[0], in[1], v));
}

PARITY_OP(masked_scatter) {
  if (pc_int(c, "inplace", 0)) INPLACE(ct_masked_scatter_(x, in[1], in[2]));
  RET1(ct_masked_scatter(in[0], in[1], in[2]));
}

PARITY_OP(masked_select) { RET1(ct_masked_select(in[0], in[1])); }
PARITY_OP(take) { RET1(ct_take(in[0], in[1])); }

PARITY_OP(put) {
  bool acc = pc_int(c, "accumulate", 0);
  if (pc_int(c, "inplace", 0)) INPLACE(ct_put_(x, in[1], in[2], acc));
  RET1(ct_put(in[0], in[1], in[2], acc));
}

PARITY_OP(take_along_dim) {
  bool has = pc_has(c, "dim");
  RET1(ct_take_along_dim(in[0], in[1], has, dim_of(c)));
}

PARITY_OP(nonzero) {
  if (!pc_int(c, "as_tuple", 0)) RET1(ct_nonzero(in[0]));
  ct_tensor *cols[CT_MAX_DIMS];
  int k = ct_nonzero_tuple(in[0], cols);
  if (k < 0) return -1;
  if (k > PARITY_MAX_OUT) {
    for (int i = 0; i < k; i++) ct_release(cols[i]);
    return -1;
  }
  for (int i = 0; i < k; i++) out[i] = cols[i];
  return k;
}

/* aten::index / index_put: "present" lists which dims have an index tensor (the others
 * are None); the index tensors are in[1..], in order; index_put's values come last. */
static int tensor_list(const pcase *c, ct_tensor *const *in, int first, int n_tensors, const ct_tensor **list) {
  int64_t present[CT_MAX_DIMS];
  int np = pc_ints(c, "present", present, CT_MAX_DIMS);
  if (np < 0) {
    for (int i = 0; i < n_tensors; i++) list[i] = in[first + i];
    return n_tensors;
  }
  int k = first;
  for (int i = 0; i < np; i++) list[i] = present[i] ? in[k++] : NULL;
  return np;
}

PARITY_OP(index_tensors) {
  const ct_tensor *list[CT_MAX_DIMS];
  int n = tensor_list(c, in, 1, n_in - 1, list);
  RET1(ct_index_tensors(in[0], n, list));
}

PARITY_OP(index_put_tensors) {
  const ct_tensor *list[CT_MAX_DIMS];
  int n = tensor_list(c, in, 1, n_in - 2, list);
  bool acc = pc_int(c, "accumulate", 0);
  if (pc_int(c, "inplace", 0)) INPLACE(ct_index_put_tensors_(x, n, list, in[n_in - 1], acc));
  RET1(ct_index_put_tensors(in[0], n, list, in[n_in - 1], acc));
}

/* Parses the "items" attr; returns the count or -1. */
static int parse_items(const pcase *c, ct_tensor *const *in, int n_in, ct_index_item *items, int max) {
  const char *s = pc_str(c, "items", "");
  char buf[512];
  strncpy(buf, s, sizeof buf - 1);
  buf[sizeof buf - 1] = 0;
  int n = 0;
  if (!buf[0]) return 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (n >= max) return -1;
    if (!strncmp(tok, "int:", 4)) items[n++] = ct_ii(strtoll(tok + 4, NULL, 10));
    else if (!strcmp(tok, "none")) items[n++] = ct_inone();
    else if (!strcmp(tok, "ellipsis")) items[n++] = ct_iellipsis();
    else if (!strncmp(tok, "bool:", 5)) items[n++] = ct_ibool(tok[5] == '1');
    else if (!strncmp(tok, "tensor:", 7)) {
      int k = atoi(tok + 7);
      if (k < 0 || k >= n_in) return -1;
      items[n++] = ct_itensor(in[k]);
    } else if (!strncmp(tok, "slice:", 6)) {
      /* START:STOP:STEP with empty parts */
      char *p = tok + 6;
      bool has[3] = {false, false, false};
      int64_t v[3] = {0, 0, 1};
      for (int part = 0; part < 3; part++) {
        char *end = strchr(p, ':');
        if (end) *end = 0;
        if (*p) {
          has[part] = true;
          v[part] = strtoll(p, NULL, 10);
        }
        if (!end) break;
        p = end + 1;
      }
      items[n++] = ct_is(has[0], v[0], has[1], v[1], has[2], v[2]);
    } else return -1;
  }
  return n;
}

PARITY_OP(getitem) {
  ct_index_item items[16];
  int n = parse_items(c, in, n_in, items, 16);
  if (n < 0) return -1;
  RET1(ct_index(in[0], n, items));
}

/* y = x.clone(); y[items] = in["value_input"] (or the scalar "scalar"); accumulate via index_put_ */
PARITY_OP(setitem) {
  ct_index_item items[16];
  int n = parse_items(c, in, n_in, items, 16);
  if (n < 0) return -1;
  ct_tensor *y = ct_clone(in[0]);
  if (!y) return -1;
  ct_status st;
  if (pc_has(c, "scalar")) st = ct_index_put_scalar_(y, n, items, pc_scalar(c, "scalar", ct_si(0)));
  else {
    int64_t k = pc_int(c, "value_input", n_in - 1);
    st = ct_index_put_(y, n, items, in[k], pc_int(c, "accumulate", 0));
  }
  if (st != CT_OK) {
    ct_release(y);
    return -1;
  }
  out[0] = y;
  return 1;
}
