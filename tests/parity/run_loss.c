/* Parity runners of the loss functions and distance ops. Optional inputs follow the
 * required ones: weight when attr has_weight, then pos_weight when has_pos_weight. */
#include "parity.h"

static int red_of(const pcase *c, ct_reduction *r) {
  return ct_reduction_parse(pc_str(c, "reduction", "mean"), r) == CT_OK ? 0 : -1;
}
static int one(ct_tensor **out, ct_tensor *t) {
  out[0] = t;
  return t ? 1 : -1;
}
#define RED()                          \
  ct_reduction r;                      \
  if (red_of(c, &r) != 0) return -1

PARITY_OP(mse_loss) {
  RED();
  return one(out, ct_mse_loss(in[0], in[1], r));
}
PARITY_OP(l1_loss) {
  RED();
  return one(out, ct_l1_loss(in[0], in[1], r));
}
PARITY_OP(smooth_l1_loss) {
  RED();
  return one(out, ct_smooth_l1_loss(in[0], in[1], r, pc_float(c, "beta", 1.0)));
}
PARITY_OP(huber_loss) {
  RED();
  return one(out, ct_huber_loss(in[0], in[1], r, pc_float(c, "delta", 1.0)));
}
PARITY_OP(bce) {
  RED();
  return one(out, ct_binary_cross_entropy(in[0], in[1], n_in > 2 ? in[2] : NULL, r));
}
PARITY_OP(bce_logits) {
  RED();
  int k = 2;
  const ct_tensor *w = pc_int(c, "has_weight", 0) ? in[k++] : NULL;
  const ct_tensor *pw = pc_int(c, "has_pos_weight", 0) ? in[k++] : NULL;
  return one(out, ct_binary_cross_entropy_with_logits(in[0], in[1], w, pw, r));
}
PARITY_OP(kl_div) {
  RED();
  return one(out, ct_kl_div(in[0], in[1], r, pc_int(c, "log_target", 0) != 0));
}
PARITY_OP(nll_loss) {
  RED();
  return one(out, ct_nll_loss(in[0], in[1], pc_int(c, "has_weight", 0) ? in[2] : NULL, r, pc_int(c, "ignore_index", -100)));
}
PARITY_OP(cross_entropy) {
  RED();
  return one(out, ct_cross_entropy(in[0], in[1], pc_int(c, "has_weight", 0) ? in[2] : NULL, r,
                                   pc_int(c, "ignore_index", -100), pc_float(c, "label_smoothing", 0.0)));
}
PARITY_OP(cosine_similarity) {
  return one(out, ct_cosine_similarity(in[0], in[1], pc_int(c, "dim", 1), pc_float(c, "eps", 1e-8)));
}
PARITY_OP(pairwise_distance) {
  return one(out, ct_pairwise_distance(in[0], in[1], pc_float(c, "p", 2.0), pc_float(c, "eps", 1e-6),
                                       pc_int(c, "keepdim", 0) != 0));
}
PARITY_OP(one_hot) { return one(out, ct_one_hot(in[0], pc_int(c, "num_classes", -1))); }
