/* Parity runners of the nn family (src/ops/nn.c, conv.c, pool.c). Parameters travel as
 * attrs named like PyTorch's arguments; optional tensor inputs (bias, weight, masks) are
 * announced by flags ("has_bias", "has_w", "has_b", "has_mask") and come in PyTorch's order. */
#include "parity.h"
#include <math.h>
#include <string.h>

/* A list attr of n ints, or NULL if absent. */
static const int64_t *ints_or_null(const pcase *c, const char *key, int64_t *buf, int n) {
  int k = pc_ints(c, key, buf, n);
  if (k < 0) return NULL;
  if (k == 1)
    for (int i = 1; i < n; i++) buf[i] = buf[0];
  return buf;
}

PARITY_OP(softmax) {
  out[0] = ct_softmax(in[0], pc_int(c, "dim", -1), pc_dtype(c, "dtype"));
  return out[0] ? 1 : -1;
}

PARITY_OP(log_softmax) {
  out[0] = ct_log_softmax(in[0], pc_int(c, "dim", -1), pc_dtype(c, "dtype"));
  return out[0] ? 1 : -1;
}

PARITY_OP(conv2d) {
  int64_t s[2], p[2], d[2];
  const ct_tensor *b = pc_int(c, "has_bias", 0) ? in[2] : NULL;
  const char *mode = pc_str(c, "padding_mode", NULL);
  const int64_t *st = ints_or_null(c, "stride", s, 2), *dl = ints_or_null(c, "dilation", d, 2);
  int64_t g = pc_int(c, "groups", 1);
  if (mode) out[0] = ct_conv2d_mode(in[0], in[1], b, st, mode, dl, g);
  else out[0] = ct_conv2d(in[0], in[1], b, st, ints_or_null(c, "padding", p, 2), dl, g);
  return out[0] ? 1 : -1;
}

PARITY_OP(conv1d) {
  const ct_tensor *b = pc_int(c, "has_bias", 0) ? in[2] : NULL;
  const char *mode = pc_str(c, "padding_mode", NULL);
  int64_t s = pc_int(c, "stride", 1), d = pc_int(c, "dilation", 1), g = pc_int(c, "groups", 1);
  if (mode) out[0] = ct_conv1d_mode(in[0], in[1], b, s, mode, d, g);
  else out[0] = ct_conv1d(in[0], in[1], b, s, pc_int(c, "padding", 0), d, g);
  return out[0] ? 1 : -1;
}

PARITY_OP(conv_transpose2d) {
  int64_t s[2], p[2], op[2], d[2];
  const ct_tensor *b = pc_int(c, "has_bias", 0) ? in[2] : NULL;
  out[0] = ct_conv_transpose2d(in[0], in[1], b, ints_or_null(c, "stride", s, 2), ints_or_null(c, "padding", p, 2),
                               ints_or_null(c, "output_padding", op, 2), pc_int(c, "groups", 1),
                               ints_or_null(c, "dilation", d, 2));
  return out[0] ? 1 : -1;
}

PARITY_OP(max_pool2d) {
  int64_t k[2], s[2], p[2], d[2];
  bool ri = pc_int(c, "return_indices", 0) != 0;
  out[0] = ct_max_pool2d(in[0], ints_or_null(c, "kernel_size", k, 2), ints_or_null(c, "stride", s, 2),
                         ints_or_null(c, "padding", p, 2), ints_or_null(c, "dilation", d, 2),
                         pc_int(c, "ceil_mode", 0) != 0, ri ? &out[1] : NULL);
  return out[0] ? (ri ? 2 : 1) : -1;
}

PARITY_OP(avg_pool2d) {
  int64_t k[2], s[2], p[2];
  out[0] = ct_avg_pool2d(in[0], ints_or_null(c, "kernel_size", k, 2), ints_or_null(c, "stride", s, 2),
                         ints_or_null(c, "padding", p, 2), pc_int(c, "ceil_mode", 0) != 0,
                         pc_int(c, "count_include_pad", 1) != 0, pc_int(c, "divisor_override", 0));
  return out[0] ? 1 : -1;
}

PARITY_OP(adaptive_avg_pool2d) {
  int64_t os[2];
  out[0] = ct_adaptive_avg_pool2d(in[0], ints_or_null(c, "output_size", os, 2));
  return out[0] ? 1 : -1;
}

PARITY_OP(adaptive_max_pool2d) {
  int64_t os[2];
  bool ri = pc_int(c, "return_indices", 0) != 0;
  out[0] = ct_adaptive_max_pool2d(in[0], ints_or_null(c, "output_size", os, 2), ri ? &out[1] : NULL);
  return out[0] ? (ri ? 2 : 1) : -1;
}

/* inputs: x, running_mean, running_var (when "has_running"), weight ("has_w"), bias ("has_b");
 * outputs: y, then the running statistics after the call (updated in place, as PyTorch's). */
PARITY_OP(batch_norm) {
  int k = 1;
  ct_tensor *rm = NULL, *rv = NULL, *w = NULL, *b = NULL;
  if (pc_int(c, "has_running", 1)) {
    rm = in[k++];
    rv = in[k++];
  }
  if (pc_int(c, "has_w", 0)) w = in[k++];
  if (pc_int(c, "has_b", 0)) b = in[k++];
  out[0] = ct_batch_norm(in[0], rm, rv, w, b, pc_int(c, "training", 0) != 0, pc_float(c, "momentum", 0.1),
                         pc_float(c, "eps", 1e-5));
  if (!out[0]) return -1;
  if (!rm) return 1;
  out[1] = ct_alias(rm);
  out[2] = ct_alias(rv);
  return 3;
}

PARITY_OP(layer_norm) {
  int64_t ns[8];
  int n = pc_ints(c, "normalized_shape", ns, 8), k = 1;
  const ct_tensor *w = pc_int(c, "has_w", 0) ? in[k++] : NULL;
  const ct_tensor *b = pc_int(c, "has_b", 0) ? in[k++] : NULL;
  out[0] = ct_layer_norm(in[0], n < 0 ? 0 : n, ns, w, b, pc_float(c, "eps", 1e-5));
  return out[0] ? 1 : -1;
}

PARITY_OP(group_norm) {
  int k = 1;
  const ct_tensor *w = pc_int(c, "has_w", 0) ? in[k++] : NULL;
  const ct_tensor *b = pc_int(c, "has_b", 0) ? in[k++] : NULL;
  out[0] = ct_group_norm(in[0], pc_int(c, "num_groups", 1), w, b, pc_float(c, "eps", 1e-5));
  return out[0] ? 1 : -1;
}

PARITY_OP(rms_norm) {
  int64_t ns[8];
  int n = pc_ints(c, "normalized_shape", ns, 8);
  const ct_tensor *w = pc_int(c, "has_w", 0) ? in[1] : NULL;
  out[0] = ct_rms_norm(in[0], n < 0 ? 0 : n, ns, w, pc_float(c, "eps", -1));
  return out[0] ? 1 : -1;
}

/* The fixture's fn calls torch.manual_seed(seed) first; so does the runner (every run, so
 * the finite-difference re-runs draw the same mask). */
PARITY_OP(dropout) {
  if (pc_has(c, "seed")) ct_generator_manual_seed(ct_default_generator(), (uint64_t)pc_int(c, "seed", 0));
  out[0] = ct_dropout(in[0], pc_float(c, "p", 0.5), pc_int(c, "training", 1) != 0, NULL);
  return out[0] ? 1 : -1;
}

/* inputs: indices, weight */
PARITY_OP(embedding) {
  int64_t pad = pc_int(c, "padding_idx", 0);
  out[0] = ct_embedding(in[0], in[1], pc_has(c, "padding_idx") ? &pad : NULL);
  return out[0] ? 1 : -1;
}

PARITY_OP(interpolate) {
  int64_t sz[2];
  double sf[2];
  int ns = pc_ints(c, "size", sz, 2), nf = pc_floats(c, "scale_factor", sf, 2);
  if (ns == 1) sz[1] = sz[0];
  if (nf == 1) sf[1] = sf[0];
  out[0] = ct_interpolate(in[0], ns > 0 ? sz : NULL, nf > 0 ? sf : NULL, pc_str(c, "mode", "nearest"),
                          pc_has(c, "align_corners") ? (int)pc_int(c, "align_corners", 0) : -1);
  return out[0] ? 1 : -1;
}

/* inputs: q, k, v, attn_mask (when "has_mask") */
PARITY_OP(sdpa) {
  if (pc_has(c, "seed")) ct_generator_manual_seed(ct_default_generator(), (uint64_t)pc_int(c, "seed", 0));
  double scale = pc_float(c, "scale", 0);
  out[0] = ct_scaled_dot_product_attention(in[0], in[1], in[2], pc_int(c, "has_mask", 0) ? in[3] : NULL,
                                           pc_float(c, "dropout_p", 0), pc_int(c, "is_causal", 0) != 0,
                                           pc_has(c, "scale") ? &scale : NULL, NULL);
  return out[0] ? 1 : -1;
}
