/* Random ops: PyTorch's numbers for a seed (values from torch 1.13), the order of
 * non-contiguous fills, errors, edge cases. Most values are checked in
 * tests/parity/cases_random.py; these cover what parity cannot. */
#include "test.h"
#include <stdlib.h>

static float f32_at(const ct_tensor *t, int64_t i) { return (float)tt_at(t, i); }

TEST(random_rand_matches_torch_seed0) {
  ct_manual_seed(0);
  int64_t n = 3;
  ct_tensor *r = ct_rand(1, &n, ct_opts(), NULL);
  CHECK(r && ct_tensor_dtype(r) == CT_FLOAT32);
  CHECK(f32_at(r, 0) == 0x1.fc2abp-2f && f32_at(r, 1) == 0x1.89545ep-1f && f32_at(r, 2) == 0x1.6a675p-4f);
  CHECK(ct_initial_seed() == 0);
  ct_release(r);
}

TEST(random_generator_object_independent_of_default) {
  ct_generator *g = ct_generator_new(0);
  ct_manual_seed(5);
  int64_t n = 3;
  ct_tensor *a = ct_rand(1, &n, ct_opts(), g);
  CHECK(a && f32_at(a, 0) == 0x1.fc2abp-2f);
  /* get_state / set_state replays the stream */
  uint8_t st[5056];
  CHECK(ct_generator_state_size() == sizeof st);
  ct_generator_get_state(g, st);
  ct_tensor *b = ct_randn(1, &n, ct_opts(), g);
  CHECK_OK(ct_generator_set_state(g, st, sizeof st));
  ct_tensor *c = ct_randn(1, &n, ct_opts(), g);
  CHECK(tt_allclose(b, c, 0, 0));
  CHECK_ERR(ct_generator_set_state(g, st, 10), "found the input RNG state size to be 10");
  ct_release(a);
  ct_release(b);
  ct_release(c);
  ct_generator_free(g);
}

TEST(random_normal_transposed_fills_memory_order) {
  /* torch: x = torch.empty(4, 5).t(); torch.manual_seed(0); x.normal_() draws per element
   * (double Box-Muller) in memory order: x[0,0], x[1,0], x[2,0], ... */
  int64_t sh[2] = {4, 5};
  ct_tensor *base = ct_empty(2, sh, ct_opts());
  ct_tensor *x = ct_t(base);
  ct_manual_seed(0);
  uint64_t v0 = ct_version(x);
  CHECK_OK(ct_normal_(x, 0.0, 1.0, NULL));
  CHECK(ct_version(x) > v0);
  /* logical order of x (shape [5, 4]) */
  CHECK(f32_at(x, 0) == 0x1.8a7eb8p+0f);
  CHECK(f32_at(x, 1) == -0x1.660a5ap+0f);
  CHECK(f32_at(x, 4) == -0x1.2c78ap-2f);
  CHECK(f32_at(x, 19) == -0x1.8254e2p+0f);
  ct_release(x);
  ct_release(base);
}

TEST(random_uniform_strided_matches_contiguous_stream) {
  int64_t sh[2] = {4, 6}, sh2[2] = {4, 3};
  ct_tensor *buf = ct_zeros(2, sh, ct_opts());
  ct_tensor *x = ct_slice(buf, 1, 0, 6, 2);
  ct_manual_seed(3);
  CHECK_OK(ct_uniform_(x, -1, 2, NULL));
  ct_manual_seed(3);
  ct_tensor *y = ct_empty(2, sh2, ct_opts());
  CHECK_OK(ct_uniform_(y, -1, 2, NULL));
  CHECK(tt_allclose(x, y, 0, 0));
  CHECK(tt_at(buf, 1) == 0.0); /* the gaps are untouched */
  ct_release(x);
  ct_release(y);
  ct_release(buf);
}

TEST(random_ints_and_perm) {
  ct_manual_seed(3);
  int64_t n = 6;
  ct_tensor *a = ct_randint(0, 10, 1, &n, NULL, NULL);
  ct_tensor *p = ct_randperm(6, NULL, NULL);
  int64_t ea[6] = {6, 8, 7, 7, 0, 0}, ep[6] = {0, 1, 3, 4, 2, 5};
  CHECK(a && p && ct_tensor_dtype(a) == CT_INT64 && ct_tensor_dtype(p) == CT_INT64);
  for (int i = 0; i < 6; i++) CHECK(tt_at(a, i) == ea[i] && tt_at(p, i) == ep[i]);
  ct_release(a);
  ct_release(p);
}

TEST(random_multinomial_and_bernoulli_values) {
  ct_manual_seed(3);
  double pv[6] = {0.1, 0.2, 0.7, 0.5, 0.5, 0.0}, p1[3] = {0.1, 0.2, 0.7};
  int64_t s2[2] = {2, 3}, s1 = 3;
  ct_tensor *P = tt_from(pv, 2, s2, CT_FLOAT32), *P1 = tt_from(p1, 1, &s1, CT_FLOAT32);
  ct_tensor *m = ct_multinomial(P, 2, false, NULL), *m1 = ct_multinomial(P1, 5, true, NULL);
  CHECK(m && m1 && ct_ndim(m) == 2 && ct_size(m, 1) == 2 && ct_ndim(m1) == 1);
  int64_t em[4] = {0, 1, 0, 1}, em1[5] = {1, 2, 2, 2, 1};
  for (int i = 0; i < 4; i++) CHECK(tt_at(m, i) == em[i]);
  for (int i = 0; i < 5; i++) CHECK(tt_at(m1, i) == em1[i]);
  double bp[4] = {0.1, 0.9, 0.5, 0.5};
  int64_t s4 = 4, s5 = 5;
  ct_tensor *B = tt_from(bp, 1, &s4, CT_FLOAT32);
  ct_manual_seed(3);
  ct_tensor *b = ct_bernoulli(B, NULL);
  ct_tensor *L = ct_empty(1, &s5, ct_opts_dtype(CT_INT64));
  CHECK_OK(ct_bernoulli_(L, 0.5, NULL));
  for (int i = 0; i < 4; i++) CHECK(tt_at(b, i) == 1.0);
  int64_t el[5] = {0, 1, 0, 0, 1};
  for (int i = 0; i < 5; i++) CHECK(tt_at(L, i) == el[i]);
  ct_release(P), ct_release(P1), ct_release(m), ct_release(m1), ct_release(B), ct_release(b), ct_release(L);
}

TEST(random_errors) {
  int64_t n = 3, neg[2] = {2, -1};
  CHECK_ERR_PTR(ct_rand(1, &n, ct_opts_dtype(CT_INT64), NULL), "\"check_uniform_bounds\" not implemented for 'Long'");
  CHECK_ERR_PTR(ct_randn(1, &n, ct_opts_dtype(CT_BOOL), NULL), "\"normal_kernel_cpu\" not implemented for 'Bool'");
  CHECK_ERR_PTR(ct_rand(2, neg, ct_opts(), NULL), "Trying to create tensor with negative dimension -1: [2, -1]");
  CHECK_ERR_PTR(ct_randint(5, 5, 1, &n, NULL, NULL), "random_ expects 'from' to be less than 'to', but got from=5 >= to=5");
  ct_options o8 = ct_opts_dtype(CT_INT8);
  CHECK_ERR_PTR(ct_randint(0, 300, 1, &n, &o8, NULL), "to - 1 is out of bounds for signed char");
  CHECK_ERR_PTR(ct_randperm(-1, NULL, NULL), "Trying to create tensor with negative dimension -1: [-1]");
  ct_options oh = ct_opts_dtype(CT_FLOAT16);
  CHECK_ERR_PTR(ct_randperm(3000, &oh, NULL), "n cannot be greater than 2049 for Half type.");
  CHECK_ERR_PTR(ct_multinomial(NULL, 1, false, NULL), "expected a tensor");
  ct_tensor *x = ct_zeros(1, &n, ct_opts());
  CHECK_ERR(ct_normal_(x, 0, -1, NULL), "normal expects std >= 0.0, but found std -1");
  CHECK_ERR(ct_uniform_(x, 2, 1, NULL), "uniform_ expects to return a [from, to) range, but found from=2 > to=1");
  CHECK_ERR(ct_bernoulli_(x, 1.5, NULL), "bernoulli_ expects p to be in [0, 1], but got p=1.5");
  CHECK_ERR(ct_exponential_(x, -1, NULL), "exponential_ expects lambda >= 0.0, but found lambda=-1");
  CHECK_ERR(ct_normal_(NULL, 0, 1, NULL), "expected a tensor");
  /* overlapping memory is refused */
  int64_t sh[2] = {2, 3};
  ct_tensor *e = ct_expand(x, 2, sh);
  CHECK_ERR(ct_uniform_(e, 0, 1, NULL), "more than one element of the written-to tensor refers to a single memory location");
  /* leaves requiring grad are refused; a non-leaf gets a zero-gradient node */
  ct_tensor *leaf = ct_ones(1, &n, ct_opts());
  ct_requires_grad_(leaf, true);
  CHECK_ERR(ct_normal_(leaf, 0, 1, NULL), "a leaf Variable that requires grad is being used in an in-place operation.");
  ct_tensor *y = ct_mul_scalar(leaf, ct_sf(2.0));
  CHECK_OK(ct_normal_(y, 0, 1, NULL));
  CHECK(ct_grad_fn_name(y) && !strcmp(ct_grad_fn_name(y), "NormalBackward0"));
  ct_tensor *s = ct_sum(y);
  CHECK_OK(ct_backward(s, NULL, false, false));
  CHECK(ct_grad(leaf) == NULL || (tt_at(ct_grad(leaf), 0) == 0 && tt_at(ct_grad(leaf), 2) == 0));
  ct_release(s), ct_release(y), ct_release(leaf), ct_release(e), ct_release(x);
}

TEST(random_empty_and_scalar) {
  int64_t z[2] = {0, 3};
  ct_manual_seed(1);
  ct_tensor *e = ct_randn(2, z, ct_opts(), NULL);
  CHECK(e && ct_numel(e) == 0);
  ct_tensor *s = ct_rand(0, NULL, ct_opts_dtype(CT_FLOAT64), NULL);
  CHECK(s && ct_ndim(s) == 0 && tt_at(s, 0) >= 0 && tt_at(s, 0) < 1);
  ct_tensor *m = ct_multinomial(e, 2, false, NULL); /* [0, 3] probabilities: empty [0, 2] result */
  CHECK(m && ct_numel(m) == 0 && ct_size(m, 1) == 2);
  ct_tensor *p0 = ct_randperm(0, NULL, NULL);
  CHECK(p0 && ct_numel(p0) == 0);
  ct_release(e), ct_release(s), ct_release(m), ct_release(p0);
}
