/* Parity runners of the shape family (src/ops/shape.c).
 * Attrs: "dim", "dims", "shifts", "size"/"sizes" (split), "chunks", "sections"/"indices",
 * "repeats"/"reps", "diagonal", "pad"/"mode"/"value", "indexing", "k", "out" (out= into an
 * empty float32 tensor), "inplace" (the in-place form on a clone), "index"
 * (repeat_interleave(repeats) alone). */
#include "parity.h"

#define RET1(expr)          \
  do {                      \
    out[0] = (expr);        \
    return out[0] ? 1 : -1; \
  } while (0)

/* List results: at most PARITY_MAX_OUT are compared; the rest are released. */
static int list_ret(ct_status st, int n, ct_tensor **tmp, ct_tensor **out) {
  if (st != CT_OK) return -1;
  for (int i = 0; i < n; i++) {
    if (i < PARITY_MAX_OUT) out[i] = tmp[i];
    else ct_release(tmp[i]);
  }
  return n < PARITY_MAX_OUT ? n : PARITY_MAX_OUT;
}

PARITY_OP(cat) {
  int64_t dim = pc_int(c, "dim", 0);
  if (pc_int(c, "out", 0)) {
    ct_tensor *o = ct_empty(1, (int64_t[]){0}, ct_opts());
    if (!o) return -1;
    if (ct_cat_out(o, n_in, (const ct_tensor *const *)in, dim) != CT_OK) {
      ct_release(o);
      return -1;
    }
    out[0] = o;
    return 1;
  }
  RET1(ct_cat(n_in, (const ct_tensor *const *)in, dim));
}
PARITY_OP(stack) { RET1(ct_stack(n_in, (const ct_tensor *const *)in, pc_int(c, "dim", 0))); }
PARITY_OP(hstack) { RET1(ct_hstack(n_in, (const ct_tensor *const *)in)); }
PARITY_OP(vstack) { RET1(ct_vstack(n_in, (const ct_tensor *const *)in)); }
PARITY_OP(dstack) { RET1(ct_dstack(n_in, (const ct_tensor *const *)in)); }

PARITY_OP(split) {
  ct_tensor *tmp[64];
  int n = 0;
  int64_t sizes[32];
  int ns = pc_ints(c, "sizes", sizes, 32);
  ct_status st = ns >= 0 ? ct_split_sizes(in[0], ns, sizes, pc_int(c, "dim", 0), &n, tmp, 64)
                         : ct_split(in[0], pc_int(c, "size", 1), pc_int(c, "dim", 0), &n, tmp, 64);
  return list_ret(st, n, tmp, out);
}

PARITY_OP(chunk) {
  ct_tensor *tmp[64];
  int n = 0;
  ct_status st = ct_chunk(in[0], pc_int(c, "chunks", 1), pc_int(c, "dim", 0), &n, tmp, 64);
  return list_ret(st, n, tmp, out);
}

PARITY_OP(tensor_split) {
  ct_tensor *tmp[64];
  int n = 0;
  int64_t idx[32];
  int ni = pc_ints(c, "indices", idx, 32);
  ct_status st = ni >= 0 ? ct_tensor_split_indices(in[0], ni, idx, pc_int(c, "dim", 0), &n, tmp, 64)
                         : ct_tensor_split(in[0], pc_int(c, "sections", 1), pc_int(c, "dim", 0), &n, tmp, 64);
  return list_ret(st, n, tmp, out);
}

PARITY_OP(unbind) {
  ct_tensor *tmp[64];
  int n = 0;
  ct_status st = ct_unbind(in[0], pc_int(c, "dim", 0), &n, tmp, 64);
  return list_ret(st, n, tmp, out);
}

PARITY_OP(flip) {
  int64_t dims[8];
  int nd = pc_ints(c, "dims", dims, 8);
  RET1(ct_flip(in[0], nd < 0 ? 0 : nd, dims));
}

PARITY_OP(roll) {
  int64_t sh[8], dims[8];
  int ns = pc_ints(c, "shifts", sh, 8), nd = pc_ints(c, "dims", dims, 8);
  RET1(ct_roll(in[0], ns < 0 ? 0 : ns, sh, nd < 0 ? 0 : nd, dims));
}

PARITY_OP(rot90) {
  int64_t dims[8];
  int nd = pc_ints(c, "dims", dims, 8);
  RET1(ct_rot90(in[0], pc_int(c, "k", 1), nd, dims));
}

PARITY_OP(repeat) {
  int64_t r[8];
  int n = pc_ints(c, "repeats", r, 8);
  RET1(ct_repeat(in[0], n < 0 ? 0 : n, r));
}

PARITY_OP(tile) {
  int64_t r[8];
  int n = pc_ints(c, "reps", r, 8);
  RET1(ct_tile(in[0], n < 0 ? 0 : n, r));
}

PARITY_OP(repeat_interleave) {
  if (pc_int(c, "index", 0)) RET1(ct_repeat_interleave_index(in[0]));
  int64_t dim = pc_has(c, "dim") ? pc_int(c, "dim", 0) : CT_NO_DIM;
  if (n_in > 1) RET1(ct_repeat_interleave_tensor(in[0], in[1], dim));
  RET1(ct_repeat_interleave(in[0], pc_int(c, "repeats", 1), dim));
}

static int tri_run(const pcase *c, ct_tensor *const *in, ct_tensor **out, bool lower) {
  int64_t k = pc_int(c, "diagonal", 0);
  if (pc_int(c, "inplace", 0)) {
    ct_tensor *x = ct_clone(in[0]);
    if (!x) return -1;
    if ((lower ? ct_tril_(x, k) : ct_triu_(x, k)) != CT_OK) {
      ct_release(x);
      return -1;
    }
    out[0] = x;
    return 1;
  }
  RET1(lower ? ct_tril(in[0], k) : ct_triu(in[0], k));
}
PARITY_OP(tril) { return tri_run(c, in, out, true); }
PARITY_OP(triu) { return tri_run(c, in, out, false); }

PARITY_OP(pad) {
  int64_t p[16];
  int n = pc_ints(c, "pad", p, 16);
  RET1(ct_pad(in[0], n < 0 ? 0 : n, p, pc_str(c, "mode", NULL), pc_float(c, "value", 0)));
}

PARITY_OP(meshgrid) {
  ct_tensor *tmp[8];
  int n = 0;
  ct_status st = ct_meshgrid(n_in, (const ct_tensor *const *)in, pc_str(c, "indexing", "ij"), &n, tmp, 8);
  return list_ret(st, n, tmp, out);
}

PARITY_OP(broadcast_tensors) {
  ct_tensor *tmp[8];
  int n = 0;
  ct_status st = ct_broadcast_tensors(n_in, (const ct_tensor *const *)in, &n, tmp, 8);
  return list_ret(st, n, tmp, out);
}
