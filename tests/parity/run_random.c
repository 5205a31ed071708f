/* Parity runners of the random ops: each seeds ctorch's default generator with the
 * case's "seed" (the Python side calls torch.manual_seed with the same value). */
#include "parity.h"

static void seed(const pcase *c) { ct_manual_seed((uint64_t)pc_int(c, "seed", 0)); }

static int shape_of(const pcase *c, int64_t *shape) {
  int n = pc_ints(c, "shape", shape, CT_MAX_DIMS);
  return n < 0 ? 0 : n;
}
static ct_options opts_of(const pcase *c, ct_dtype dflt) {
  int d = pc_dtype(c, "dtype");
  return ct_opts_dtype(d < 0 ? dflt : (ct_dtype)d);
}
static int one(ct_tensor **out, ct_tensor *t) {
  out[0] = t;
  return t ? 1 : -1;
}
/* in-place ops return their input, whose new values are compared */
static int inplace_result(ct_tensor **out, ct_tensor *x, ct_status st) {
  if (st != CT_OK) return -1;
  out[0] = ct_retain(x);
  return 1;
}

PARITY_OP(rand) {
  int64_t shape[CT_MAX_DIMS];
  int nd = shape_of(c, shape);
  seed(c);
  return one(out, ct_rand(nd, shape, opts_of(c, CT_FLOAT32), NULL));
}
PARITY_OP(randn) {
  int64_t shape[CT_MAX_DIMS];
  int nd = shape_of(c, shape);
  seed(c);
  return one(out, ct_randn(nd, shape, opts_of(c, CT_FLOAT32), NULL));
}
PARITY_OP(randint) {
  int64_t shape[CT_MAX_DIMS];
  int nd = shape_of(c, shape);
  ct_options o = opts_of(c, CT_INT64);
  seed(c);
  return one(out, ct_randint(pc_int(c, "low", 0), pc_int(c, "high", 1), nd, shape, &o, NULL));
}
PARITY_OP(randperm) {
  ct_options o = opts_of(c, CT_INT64);
  seed(c);
  return one(out, ct_randperm(pc_int(c, "n", 0), &o, NULL));
}
PARITY_OP(rand_like) {
  seed(c);
  return one(out, ct_rand_like(in[0], NULL, NULL));
}
PARITY_OP(randn_like) {
  seed(c);
  return one(out, ct_randn_like(in[0], NULL, NULL));
}
PARITY_OP(randint_like) {
  seed(c);
  return one(out, ct_randint_like(in[0], pc_int(c, "low", 0), pc_int(c, "high", 1), NULL, NULL));
}
PARITY_OP(normal_) {
  seed(c);
  return inplace_result(out, in[0], ct_normal_(in[0], pc_float(c, "mean", 0), pc_float(c, "std", 1), NULL));
}
PARITY_OP(uniform_) {
  seed(c);
  return inplace_result(out, in[0], ct_uniform_(in[0], pc_float(c, "from", 0), pc_float(c, "to", 1), NULL));
}
PARITY_OP(exponential_) {
  seed(c);
  return inplace_result(out, in[0], ct_exponential_(in[0], pc_float(c, "lambd", 1), NULL));
}
PARITY_OP(random_) {
  seed(c);
  return inplace_result(out, in[0], ct_random_(in[0], pc_int(c, "from", 0), pc_int(c, "to", 1), NULL));
}
PARITY_OP(bernoulli_) {
  seed(c);
  return inplace_result(out, in[0], ct_bernoulli_(in[0], pc_float(c, "p", 0.5), NULL));
}
PARITY_OP(bernoulli_t) {
  seed(c);
  return inplace_result(out, in[0], ct_bernoulli_tensor_(in[0], in[1], NULL));
}
PARITY_OP(bernoulli) {
  seed(c);
  return one(out, ct_bernoulli(in[0], NULL));
}
PARITY_OP(bernoulli_p) {
  seed(c);
  return one(out, ct_bernoulli_p(in[0], pc_float(c, "p", 0.5), NULL));
}
PARITY_OP(multinomial) {
  seed(c);
  return one(out, ct_multinomial(in[0], pc_int(c, "num_samples", 1), pc_int(c, "replacement", 0) != 0, NULL));
}
