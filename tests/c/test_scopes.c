/* Scopes: temporaries released at ct_scope_end, ct_keep moving a handle to the parent
 * scope, early release, nesting, and handles that something else still references. */
#include "test.h"

static ct_tensor *ones2(bool rg) {
  int64_t s[1] = {2};
  ct_options o = ct_opts();
  o.requires_grad = rg;
  return ct_ones(1, s, o);
}

TEST(scopes_release_temporaries) {
  int64_t live0 = ct_live_tensors();
  ct_scope *s = ct_scope_begin();
  ct_tensor *a = ones2(false);
  ct_tensor *b = ct_exp(ct_add(a, a)); /* the add result is never released by hand */
  CHECK(b && ct_live_tensors() > live0);
  CHECK_OK(ct_scope_end(s));
  CHECK(ct_live_tensors() == live0);
}

TEST(scopes_keep_moves_to_parent) {
  int64_t live0 = ct_live_tensors();
  ct_scope *outer = ct_scope_begin();
  ct_scope *inner = ct_scope_begin();
  ct_tensor *a = ones2(false);
  ct_tensor *k = ct_keep(ct_mul(a, a));
  CHECK_OK(ct_scope_end(inner));
  CHECK(ct_live_tensors() == live0 + 1); /* only k survives */
  CHECK_NEAR(tt_at(k, 1), 1, 0);
  CHECK_OK(ct_scope_end(outer));
  CHECK(ct_live_tensors() == live0);
  /* ct_keep in the outermost scope leaves all scopes: the caller releases it */
  ct_scope *s = ct_scope_begin();
  ct_tensor *free_one = ct_keep(ones2(false));
  CHECK_OK(ct_scope_end(s));
  CHECK(ct_live_tensors() == live0 + 1);
  ct_release(free_one);
  CHECK(ct_live_tensors() == live0);
  CHECK(ct_keep(NULL) == NULL);
}

TEST(scopes_early_release) {
  int64_t live0 = ct_live_tensors();
  ct_scope *s = ct_scope_begin();
  ct_tensor *a = ones2(false);
  ct_tensor *b = ct_neg(a);
  ct_release(b); /* leaves the scope; the scope must not release it again */
  ct_release(a);
  CHECK(ct_live_tensors() == live0);
  for (int i = 0; i < 1000; i++) ct_release(ct_add_scalar(ones2(false), ct_si(1))); /* the ones leak to the scope */
  CHECK_OK(ct_scope_end(s));
  CHECK(ct_live_tensors() == live0);
}

TEST(scopes_nested_and_order) {
  int64_t live0 = ct_live_tensors();
  ct_scope *s1 = ct_scope_begin();
  ct_tensor *a = ones2(false);
  ct_scope *s2 = ct_scope_begin();
  ct_tensor *b = ct_add(a, a);
  CHECK_ERR(ct_scope_end(s1), "scopes must end in the reverse order they began");
  CHECK_OK(ct_scope_end(s2));
  (void)b;
  CHECK(ct_live_tensors() == live0 + 1);
  CHECK_OK(ct_scope_end(s1));
  CHECK(ct_live_tensors() == live0);
  CHECK_ERR(ct_scope_end(NULL), "NULL scope");
}

/* A result whose graph saved temporaries of the scope (the expanded scalar of a*2, the
 * leaf x) outlives the scope through ct_keep: the saved tensors must stay valid. */
TEST(scopes_keep_graph_with_saved_temporaries) {
  int64_t live0 = ct_live_tensors();
  ct_tensor *x = ct_keep(ones2(true)); /* outside every test scope */
  ct_tensor *y;
  {
    ct_scope *s = ct_scope_begin();
    ct_tensor *two = ct_full(1, (int64_t[]){2}, ct_sf(3), ct_opts());
    y = ct_keep(ct_sum(ct_mul(ct_mul_scalar(x, ct_sf(2)), two)));
    CHECK_OK(ct_scope_end(s));
  }
  CHECK_OK(ct_backward(y, NULL, false, false));
  CHECK_NEAR(tt_at(ct_grad(x), 0), 6, 1e-6);
  ct_release(y);
  ct_release(x);
  CHECK(ct_live_tensors() == live0);
}

/* The creator releases a temporary early while the graph still saves it, then the
 * scope ends first: the graph's reference must be the one left. */
TEST(scopes_saved_temporary_released_by_creator) {
  int64_t live0 = ct_live_tensors();
  ct_scope *s = ct_scope_begin();
  ct_tensor *x = ones2(true);
  ct_tensor *c = ct_clone(x);
  CHECK_OK(ct_mul_scalar_(c, ct_sf(3))); /* saves an expanded wrapped scalar, released by its creator */
  ct_tensor *y = ct_keep(ct_sum(c));
  ct_keep(x);
  CHECK_OK(ct_scope_end(s));
  CHECK_OK(ct_backward(y, NULL, false, false));
  CHECK_NEAR(tt_at(ct_grad(x), 1), 3, 1e-6);
  ct_release(y);
  ct_release(x);
  CHECK(ct_live_tensors() == live0);
}

/* Ops that return their input unchanged (contiguous, to() of the same dtype) still give
 * the scope a reference of its own to release. */
TEST(scopes_same_tensor_results) {
  int64_t live0 = ct_live_tensors();
  ct_tensor *p = ct_keep(ones2(true)); /* like a parameter made outside the loop's scope */
  for (int it = 0; it < 3; it++) {
    ct_scope *s = ct_scope_begin();
    ct_tensor *c = ct_contiguous(p);
    ct_tensor *d = ct_to_dtype(p, CT_FLOAT32);
    CHECK(c && d && ct_shares_storage(c, p) && ct_shares_storage(d, p));
    ct_tensor *l = ct_sum(ct_mul(c, d));
    CHECK_OK(ct_backward(l, NULL, false, false));
    CHECK_OK(ct_scope_end(s));
  }
  CHECK_NEAR(tt_at(ct_grad(p), 0), 6, 1e-6); /* 3 iterations of d(p*p)/dp = 2 */
  ct_release(p);
  CHECK(ct_live_tensors() == live0);
  /* (outside every scope the same handle comes back, as PyTorch returns self; the test
   * runner wraps each test in a scope, so that case is left to the README example) */
}

/* autograd.grad may hand back the caller's own grad_output (identity backward): the
 * caller still gets a reference of its own. */
TEST(scopes_autograd_grad_passthrough) {
  int64_t live0 = ct_live_tensors();
  ct_scope *s = ct_scope_begin();
  ct_tensor *x = ones2(true);
  ct_tensor *y = ct_add_scalar(x, ct_si(1));
  ct_tensor *go = ones2(false);
  ct_tensor *g = NULL;
  CHECK_OK(ct_autograd_grad(1, &y, &go, 1, &x, &g, false, false, false));
  CHECK(g && ct_numel(g) == 2);
  ct_release(g);
  ct_release(go); /* both released early: still balanced */
  CHECK_OK(ct_scope_end(s));
  CHECK(ct_live_tensors() == live0);
}

/* Memory comes back too, not only handles. */
TEST(scopes_memory_returns) {
  ct_memory_stats m0 = ct_memory_get_stats(ct_cpu());
  ct_scope *s = ct_scope_begin();
  int64_t shape[2] = {64, 64};
  ct_tensor *a = ct_ones(2, shape, ct_opts());
  for (int i = 0; i < 10; i++) a = ct_add(a, a);
  CHECK(ct_memory_get_stats(ct_cpu()).allocated_bytes > m0.allocated_bytes);
  CHECK_OK(ct_scope_end(s));
  CHECK(ct_memory_get_stats(ct_cpu()).allocated_bytes == m0.allocated_bytes);
}
