/* The core: handles, accessors, errors on bad input (NULL, dims, shapes, overflow) with
 * PyTorch 1.13's wording and kinds, copies and conversions, version counters. */
#include "test.h"
#include <stdint.h>

TEST(core_accessors) {
  int64_t shape[3] = {2, 3, 4};
  ct_tensor *t = ct_zeros(3, shape, ct_opts_dtype(CT_INT16));
  CHECK(ct_ndim(t) == 3 && ct_numel(t) == 24 && ct_tensor_dtype(t) == CT_INT16);
  CHECK(ct_size(t, -1) == 4 && ct_stride(t, 0) == 12 && ct_storage_offset(t) == 0);
  CHECK(ct_is_contiguous(t) && !ct_is_view(t) && ct_view_base(t) == NULL);
  CHECK(ct_tensor_device(t).type == CT_DEVICE_CPU && ct_data_ptr(t) != NULL);
  ct_clear_error();
  CHECK(ct_size(t, 3) == -1);
  CHECK(strstr(ct_last_error(), "Dimension out of range (expected to be in range of [-3, 2], but got 3)"));
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK(ct_size(t, -4) == -1 && ct_last_status() == CT_ERR_INDEX);
  /* NULL handles answer safely */
  CHECK(ct_retain(NULL) == NULL);
  ct_release(NULL);
  CHECK(!ct_requires_grad(NULL) && ct_grad(NULL) == NULL);
  ct_release(t);
}

TEST(core_null_arguments) {
  int64_t two = 2;
  ct_tensor *a = ct_ones(1, &two, ct_opts());
  CHECK_ERR_PTR(ct_add(NULL, a), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_add(a, NULL), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_exp(NULL), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_sum(NULL), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_clone(NULL), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_contiguous(NULL), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_to_dtype(NULL, CT_FLOAT64), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_detach(NULL), "expected a tensor, got NULL");
  CHECK_ERR(ct_add_(NULL, a), "expected a tensor, got NULL");
  CHECK_ERR(ct_copy_(a, NULL), "expected a tensor, got NULL");
  CHECK_ERR(ct_fill_(NULL, ct_si(1)), "expected a tensor, got NULL");
  CHECK_ERR(ct_backward(NULL, NULL, false, false), "expected a tensor, got NULL");
  CHECK_ERR(ct_requires_grad_(NULL, true), "expected a tensor, got NULL");
  CHECK_ERR_PTR(ct_zeros(2, NULL, ct_opts()), "shape is NULL");
  CHECK_ERR_PTR(ct_full(1, NULL, ct_si(1), ct_opts()), "shape is NULL");
  CHECK_ERR_PTR(ct_empty(1, NULL, ct_opts()), "shape is NULL");
  CHECK_ERR_PTR(ct_from_buffer(NULL, CT_FLOAT32, 1, &two, ct_opts()), "buffer is NULL");
  CHECK_ERR(ct_copy_to_buffer(a, NULL, CT_FLOAT32, 2), "buffer is NULL");
  double d;
  CHECK_ERR(ct_item_double(NULL, &d), "expected a tensor, got NULL");
  ct_release(a);
}

TEST(core_bad_shapes_and_overflow) {
  int64_t huge[2] = {(int64_t)1 << 62, 4};
  CHECK_ERR_PTR(ct_empty(2, huge, ct_opts()), "Storage size calculation overflowed with sizes=[4611686018427387904, 4]");
  int64_t huge2[2] = {(int64_t)1 << 61, 2}; /* 2^62 elements: the byte count overflows */
  CHECK_ERR_PTR(ct_zeros(2, huge2, ct_opts()), "Storage size calculation overflowed");
  int64_t big[1] = {(int64_t)1 << 55}; /* representable, but no machine has that memory */
  CHECK_ERR_PTR(ct_empty(1, big, ct_opts()), "");
  CHECK(ct_last_status() == CT_ERR_OOM);
  int64_t neg[2] = {-1, 3};
  CHECK_ERR_PTR(ct_zeros(2, neg, ct_opts()), "Trying to create tensor with negative dimension -1: [-1, 3]");
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_ERR_PTR(ct_zeros(9, nine, ct_opts()), "");
  CHECK_ERR_PTR(ct_zeros(-1, nine, ct_opts()), "");
  CHECK_ERR_PTR(ct_zeros(1, nine, ct_opts_dtype((ct_dtype)42)), "invalid dtype");
  CHECK_ERR_PTR(ct_ones(1, nine, (ct_options){CT_INT64, {CT_DEVICE_CPU, 0}, true}),
                "Only Tensors of floating point and complex dtype can require gradients");
  /* broadcasting mismatch, PyTorch's message */
  int64_t s23[2] = {2, 3}, s4 = 4;
  ct_tensor *a = ct_ones(2, s23, ct_opts()), *b = ct_ones(1, &s4, ct_opts());
  CHECK_ERR_PTR(ct_mul(a, b), "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
  CHECK_ERR(ct_copy_(a, b), "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
  CHECK_ERR_PTR(ct_sum_dims(a, 1, (int64_t[]){2}, false), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK_ERR_PTR(ct_sum_dims(a, 2, (int64_t[]){0, -2}, false), "dim 0 appears multiple times in the list of dims");
  CHECK_ERR_PTR(ct_sum_to_size(a, 1, (int64_t[]){2}), "size {[2]} is not expandable to size {[2, 3]}.");
  ct_release(a);
  ct_release(b);
}

TEST(core_items_and_buffers) {
  ct_tensor *s = ct_scalar_tensor(ct_sf(2.5), ct_opts_dtype(CT_FLOAT64));
  double d = 0;
  int64_t i = 0;
  CHECK_OK(ct_item_double(s, &d));
  CHECK(d == 2.5);
  CHECK_OK(ct_item_int64(s, &i));
  CHECK(i == 2);
  ct_scalar sc = ct_item(s);
  CHECK(sc.kind == CT_SCALAR_FLOAT && sc.f == 2.5);
  int64_t two = 2;
  ct_tensor *v = ct_ones(1, &two, ct_opts_dtype(CT_BOOL));
  CHECK_ERR(ct_item_double(v, &d), "a Tensor with 2 elements cannot be converted to Scalar");
  CHECK(ct_item(ct_select(v, 0, 1)).kind == CT_SCALAR_BOOL);
  float buf[3];
  CHECK_ERR(ct_copy_to_buffer(v, buf, CT_FLOAT32, 3), "buffer holds 3 elements but the tensor has 2");
  CHECK_OK(ct_copy_to_buffer(v, buf, CT_FLOAT32, 2));
  CHECK(buf[0] == 1.0f && buf[1] == 1.0f);
  /* non-contiguous reads come out in logical order */
  double vals[6] = {0, 1, 2, 3, 4, 5};
  ct_tensor *m = tt_from(vals, 2, (int64_t[]){2, 3}, CT_INT32);
  ct_tensor *mt = ct_t(m);
  int64_t out[6];
  CHECK_OK(ct_copy_to_buffer(mt, out, CT_INT64, 6));
  CHECK(out[0] == 0 && out[1] == 3 && out[2] == 1 && out[5] == 5);
  ct_release(mt);
  ct_release(m);
  ct_release(v);
  ct_release(s);
}

TEST(core_conversions) {
  double vals[5] = {1.9, -1.9, 300, -0.0, 0.5};
  int64_t five = 5;
  ct_tensor *f = tt_from(vals, 1, &five, CT_FLOAT64);
  ct_tensor *i = ct_to_dtype(f, CT_INT32);
  CHECK(tt_at(i, 0) == 1 && tt_at(i, 1) == -1 && tt_at(i, 2) == 300); /* truncation, like C++ */
  ct_tensor *b = ct_to_dtype(f, CT_BOOL);
  CHECK(tt_at(b, 3) == 0 && tt_at(b, 4) == 1);
  ct_tensor *h = ct_to_dtype(f, CT_FLOAT16);
  CHECK(ct_tensor_dtype(h) == CT_FLOAT16 && tt_at(h, 2) == 300);
  ct_tensor *same = ct_to_dtype(f, CT_FLOAT64);
  CHECK(same && ct_shares_storage(same, f));
  CHECK_ERR_PTR(ct_to_dtype(f, (ct_dtype)99), "invalid dtype");
  /* clone of a non-contiguous tensor is contiguous with the same values */
  ct_tensor *m = tt_from(vals, 1, &five, CT_FLOAT32);
  ct_tensor *sl = ct_slice(m, 0, 0, 5, 2);
  ct_tensor *c = ct_clone(sl);
  CHECK(c && ct_is_contiguous(c) && !ct_shares_storage(c, m) && ct_numel(c) == 3);
  CHECK_NEAR(tt_at(c, 1), 300, 0);
  ct_tensor *cc = ct_contiguous(sl);
  CHECK(cc && ct_is_contiguous(cc) && !ct_shares_storage(cc, m));
  ct_release(cc);
  ct_release(c);
  ct_release(sl);
  ct_release(m);
  ct_release(same);
  ct_release(h);
  ct_release(b);
  ct_release(i);
  ct_release(f);
}

TEST(core_copy_fill_versions) {
  int64_t s23[2] = {2, 3};
  ct_tensor *a = ct_zeros(2, s23, ct_opts());
  uint64_t v0 = ct_version(a);
  CHECK_OK(ct_fill_(a, ct_sf(1.5)));
  CHECK(ct_version(a) == v0 + 1);
  double r[3] = {1, 2, 3};
  int64_t three = 3;
  ct_tensor *row = tt_from(r, 1, &three, CT_INT64);
  CHECK_OK(ct_copy_(a, row)); /* broadcasts and converts */
  CHECK(ct_version(a) == v0 + 2);
  CHECK_NEAR(tt_at(a, 5), 3, 0);
  CHECK_OK(ct_zero_(a));
  CHECK_NEAR(tt_at(a, 4), 0, 0);
  /* arithmetic into an expanded tensor is refused, as in PyTorch (fill_ is allowed: test_py_sweep_fixes.c) */
  ct_tensor *e = ct_expand(row, 2, s23);
  CHECK_ERR(ct_add_scalar_(e, ct_si(1)), "unsupported operation: more than one element of the written-to tensor refers to a single memory location.");
  /* add_ into a slice writes through to the base */
  ct_tensor *sl = ct_select(a, 0, 1);
  CHECK_OK(ct_add_scalar_(sl, ct_si(4)));
  CHECK_NEAR(tt_at(a, 3), 4, 0);
  CHECK_NEAR(tt_at(a, 0), 0, 0);
  ct_release(sl);
  ct_release(e);
  ct_release(row);
  ct_release(a);
}

TEST(core_zero_dim_and_empty_ops) {
  ct_tensor *s = ct_scalar_tensor(ct_sf(2), ct_opts());
  int64_t z[2] = {0, 3};
  ct_tensor *e = ct_zeros(2, z, ct_opts());
  ct_tensor *r = ct_add(s, e);
  CHECK(r && ct_numel(r) == 0 && ct_size(r, 1) == 3);
  ct_tensor *sm = ct_sum(e);
  CHECK(sm && ct_ndim(sm) == 0 && tt_at(sm, 0) == 0);
  ct_tensor *mn = ct_mean(e);
  CHECK(mn && isnan(tt_at(mn, 0))); /* mean of nothing is nan, as PyTorch */
  ct_tensor *ex = ct_exp(s);
  CHECK(ex && ct_ndim(ex) == 0);
  CHECK_NEAR(tt_at(ex, 0), exp(2.0), 1e-5);
  ct_release(ex);
  ct_release(mn);
  ct_release(sm);
  ct_release(r);
  ct_release(e);
  ct_release(s);
}

TEST(core_threads_and_devices) {
  int n = ct_get_num_threads();
  CHECK(n >= 1);
  CHECK_ERR(ct_set_num_threads(0), "");
  CHECK_OK(ct_set_num_threads(n));
  CHECK(ct_device_available(ct_cpu()));
  CHECK(strstr(ct_backends_compiled(), "cpu") != NULL);
  int64_t two = 2;
  ct_tensor *a = ct_ones(1, &two, ct_opts());
  ct_device bad = {CT_DEVICE_CUDA, 7};
  CHECK_ERR_PTR(ct_to_device(a, bad), "");
  ct_release(a);
}

/* ct_memory_reset_peak: the CPU allocator's peak follows a large tensor, then restarts from what is allocated */
TEST(memory_reset_peak_cpu) {
  int64_t n[1] = {1 << 20};
  ct_memory_reset_peak(ct_cpu());
  ct_memory_stats s0 = ct_memory_get_stats(ct_cpu());
  CHECK(s0.peak_allocated_bytes == s0.allocated_bytes);
  ct_tensor *t = ct_zeros(1, n, ct_opts());
  CHECK(t != NULL);
  ct_memory_stats s1 = ct_memory_get_stats(ct_cpu());
  CHECK(s1.allocated_bytes - s0.allocated_bytes >= (int64_t)(4 << 20));
  CHECK(s1.peak_allocated_bytes >= s1.allocated_bytes);
  ct_release(t);
  ct_memory_stats s2 = ct_memory_get_stats(ct_cpu());
  CHECK(s2.allocated_bytes == s0.allocated_bytes && s2.peak_allocated_bytes >= s1.allocated_bytes);
  ct_memory_reset_peak(ct_cpu());
  CHECK(ct_memory_get_stats(ct_cpu()).peak_allocated_bytes == s0.allocated_bytes);
  ct_memory_reset_peak((ct_device){CT_DEVICE_WEBGPU, 0}); /* no device: nothing to do, no crash */
}
