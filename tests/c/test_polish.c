/* Core fixes found by the Python binding's comparison with PyTorch 1.13: the names in the
 * "modified by an inplace operation" error, hooks that live on the graph node, out= resizing. */
#include "test.h"

static ct_tensor *pvec(int n, double first, bool rg) {
  double v[8];
  for (int i = 0; i < n; i++) v[i] = first + 0.5 * i;
  int64_t s = n;
  ct_tensor *t = tt_from(v, 1, &s, CT_FLOAT32);
  if (t && rg) ct_requires_grad_(t, true);
  return t;
}

#define INPLACE_MSG "one of the variables needed for gradient computation has been modified by an inplace operation: "
#define INPLACE_TAIL "is at version 1; expected version 0 instead. Hint: enable anomaly detection"

/* The saved tensor is named by its own producer, as PyTorch 1.13 prints it (checked with torch). */
TEST(polish_inplace_error_names_saved_tensor) {
  ct_tensor *x = pvec(3, 0.5, true);
  /* a saved input: named by its current grad_fn (the in-place op gave it a new one) */
  ct_tensor *y = ct_exp(x);
  ct_tensor *z = ct_sum(ct_sin(y));
  CHECK_OK(ct_mul_scalar_(y, ct_si(2)));
  CHECK_ERR(ct_backward(z, NULL, false, false),
            INPLACE_MSG "[torch.FloatTensor [3]], which is output 0 of MulBackward0, " INPLACE_TAIL);
  /* modified under no_grad: the history is unchanged */
  ct_tensor *y2 = ct_sin(x);
  ct_tensor *z2 = ct_sum(ct_sin(y2));
  bool prev = ct_set_grad_enabled(false);
  CHECK_OK(ct_mul_scalar_(y2, ct_si(2)));
  ct_set_grad_enabled(prev);
  CHECK_ERR(ct_backward(z2, NULL, false, false),
            INPLACE_MSG "[torch.FloatTensor [3]], which is output 0 of SinBackward0, " INPLACE_TAIL);
  /* a leaf: no "which is" part */
  ct_tensor *w = pvec(3, 1, false);
  ct_tensor *z3 = ct_sum(ct_mul(x, w));
  CHECK_OK(ct_add_scalar_(w, ct_si(1)));
  CHECK_ERR(ct_backward(z3, NULL, false, false), INPLACE_MSG "[torch.FloatTensor [3]] is at version "); /* tt_from wrote it once */
  /* a saved output: output j of the node itself */
  ct_tensor *y4 = ct_exp(x);
  ct_tensor *z4 = ct_sum(y4);
  CHECK_OK(ct_add_scalar_(y4, ct_si(1)));
  CHECK_ERR(ct_backward(z4, NULL, false, false),
            INPLACE_MSG "[torch.FloatTensor [3]], which is output 0 of ExpBackward0, " INPLACE_TAIL);
  /* a view whose base changed: PyTorch regenerates its grad_fn as AsStridedBackward0 */
  ct_tensor *b = ct_mul_scalar(x, ct_si(1));
  ct_tensor *v = ct_slice(b, 0, 1, 3, 1);
  ct_tensor *z5 = ct_sum(ct_sin(v));
  CHECK_OK(ct_mul_scalar_(b, ct_si(2)));
  CHECK_ERR(ct_backward(z5, NULL, false, false),
            INPLACE_MSG "[torch.FloatTensor [2]], which is output 0 of AsStridedBackward0, " INPLACE_TAIL);
  /* the saved input's handle was released: its history when saved names it */
  ct_tensor *y6 = ct_exp(x);
  ct_tensor *z6 = ct_sum(ct_sin(y6));
  ct_tensor *d6 = ct_detach(y6);
  ct_release(y6);
  CHECK_OK(ct_mul_scalar_(d6, ct_si(2)));
  CHECK_ERR(ct_backward(z6, NULL, false, false),
            INPLACE_MSG "[torch.FloatTensor [3]], which is output 0 of ExpBackward0, " INPLACE_TAIL);
}

typedef struct {
  int calls;
  double scale;
  double seen;
} hook_rec;

static ct_tensor *scale_hook(ct_tensor *g, void *user) {
  hook_rec *r = user;
  r->calls++;
  r->seen = tt_at(g, 0);
  return r->scale != 1 ? ct_mul_scalar(g, ct_sf(r->scale)) : NULL;
}

/* PyTorch keeps a non-leaf's hooks on its grad_fn: they fire after the handle is gone. */
TEST(polish_hooks_survive_released_handle) {
  int64_t live = ct_live_tensors();
  ct_scope *s = ct_scope_begin();
  ct_tensor *x = pvec(3, 1, true);
  ct_tensor *y = ct_mul_scalar(x, ct_si(2));
  hook_rec r = {0, 10, 0};
  CHECK(ct_register_hook(y, scale_hook, &r) >= 0);
  ct_tensor *z = ct_mul_scalar(y, ct_si(3));
  ct_release(y); /* the user's only handle of y */
  CHECK_OK(ct_backward(ct_sum(z), NULL, false, false));
  CHECK(r.calls == 1);
  CHECK_NEAR(r.seen, 3, 0);
  CHECK_NEAR(tt_at(ct_grad(x), 0), 60, 1e-6); /* 3 * 10 * 2 */
  ct_scope_end(s);
  CHECK(ct_live_tensors() == live);
  /* the graph (and the hooks with it) is freed without a backward too */
  s = ct_scope_begin();
  x = pvec(3, 1, true);
  y = ct_mul_scalar(x, ct_si(2));
  CHECK(ct_register_hook(y, scale_hook, &r) >= 0);
  CHECK(ct_retain_grad(y) == CT_OK);
  z = ct_mul_scalar(y, ct_si(3));
  ct_release(y);
  ct_scope_end(s);
  CHECK(ct_live_tensors() == live);
}

/* retain_grad is one of the hooks in 1.13: it sees the gradient of the hooks before it. */
TEST(polish_retain_grad_order_with_hooks) {
  ct_tensor *x = pvec(3, 1, true);
  ct_tensor *y = ct_mul_scalar(x, ct_si(2));
  hook_rec r = {0, 10, 0};
  CHECK_OK(ct_retain_grad(y));
  CHECK(ct_register_hook(y, scale_hook, &r) >= 0);
  CHECK_OK(ct_backward(ct_sum(y), NULL, false, false));
  CHECK_NEAR(tt_at(ct_grad(y), 0), 1, 0);
  CHECK_NEAR(tt_at(ct_grad(x), 0), 20, 1e-6);
  ct_tensor *x2 = pvec(3, 1, true);
  ct_tensor *y2 = ct_mul_scalar(x2, ct_si(2));
  CHECK(ct_register_hook(y2, scale_hook, &r) >= 0);
  CHECK_OK(ct_retain_grad(y2));
  CHECK_OK(ct_retain_grad(y2)); /* twice is once */
  CHECK_OK(ct_backward(ct_sum(y2), NULL, false, false));
  CHECK_NEAR(tt_at(ct_grad(y2), 0), 10, 1e-6);
  CHECK_NEAR(tt_at(ct_grad(x2), 0), 20, 1e-6);
  CHECK_ERR(ct_remove_hook(y2, -1), "no hook"); /* the retain_grad entry is not a handle */
}

/* An in-place op gives the tensor a new grad_fn; its hooks and retain_grad move with it. */
TEST(polish_hooks_follow_inplace) {
  ct_tensor *x = pvec(3, 1, true);
  ct_tensor *y = ct_mul_scalar(x, ct_si(2));
  hook_rec r1 = {0, 1, 0}, r2 = {0, 1, 0};
  int h1 = ct_register_hook(y, scale_hook, &r1);
  CHECK(h1 >= 0);
  CHECK_OK(ct_retain_grad(y));
  CHECK_OK(ct_mul_scalar_(y, ct_si(3)));
  CHECK(ct_register_hook(y, scale_hook, &r2) >= 0);
  CHECK_OK(ct_backward(ct_sum(ct_mul_scalar(y, ct_si(5))), NULL, false, false));
  CHECK(r1.calls == 1 && r2.calls == 1);
  CHECK_NEAR(r1.seen, 5, 0);
  CHECK_NEAR(r2.seen, 5, 0);
  CHECK_NEAR(tt_at(ct_grad(y), 0), 5, 0);
  CHECK_NEAR(tt_at(ct_grad(x), 0), 30, 1e-6);
  /* removing by handle still works on the moved list */
  CHECK_OK(ct_remove_hook(y, h1));
  CHECK_ERR(ct_remove_hook(y, h1), "no hook");
}

typedef struct {
  int n;
  char last[512];
} warn_rec;

static void catch_warn(const char *msg, void *user) {
  warn_rec *w = user;
  w->n++;
  snprintf(w->last, sizeof w->last, "%s", msg);
}

static bool shape_is(const ct_tensor *t, int nd, const int64_t *s) {
  if (ct_ndim(t) != nd) return false;
  for (int d = 0; d < nd; d++)
    if (ct_shape(t)[d] != s[d]) return false;
  return true;
}

/* PyTorch resizes an out= tensor of another shape in place (resize_output): it keeps its storage
 * when big enough (and so its base), grows it otherwise, and warns when out had elements. */
TEST(polish_out_resize_like_pytorch) {
  warn_rec w = {0, ""};
  ct_warn_fn prev = ct_set_warn_handler(catch_warn, &w);
  int64_t s22[2] = {2, 2}, s32[2] = {3, 2}, s3 = 3, s20 = 20, s30 = 30, s5 = 5, s0 = 0;
  ct_tensor *a = ct_ones(2, s22, ct_opts());
  /* a non-empty out keeps its storage when it is big enough */
  ct_tensor *out = ct_zeros(1, &s20, ct_opts());
  void *p0 = ct_data_ptr(out);
  CHECK_OK(ct_add_out(out, a, a));
  CHECK(shape_is(out, 2, s22) && ct_stride(out, 0) == 2 && ct_stride(out, 1) == 1);
  CHECK(ct_data_ptr(out) == p0 && tt_at(out, 3) == 2);
  CHECK(w.n == 1);
  CHECK(strstr(w.last, "An output with one or more elements was resized since it had shape [20], which does not match "
                       "the required output shape [2, 2]. This behavior is deprecated"));
  /* an empty out is resized without a warning */
  ct_tensor *e = ct_zeros(1, &s0, ct_opts());
  CHECK_OK(ct_mul_out(e, a, a));
  CHECK(shape_is(e, 2, s22) && tt_at(e, 0) == 1 && w.n == 1);
  /* a view: resized over its base's memory from its own offset */
  ct_tensor *base = ct_zeros(1, &s30, ct_opts());
  ct_tensor *v = ct_slice(base, 0, 2, 5, 1);
  CHECK_OK(ct_add_out(v, a, a));
  CHECK(shape_is(v, 2, s22) && ct_storage_offset(v) == 2);
  CHECK(tt_at(base, 1) == 0 && tt_at(base, 2) == 2 && tt_at(base, 5) == 2 && tt_at(base, 6) == 0);
  /* too small: the shared storage grows (the base keeps its shape and values) */
  ct_tensor *b5 = ct_full(1, &s5, ct_sf(7), ct_opts());
  ct_tensor *v2 = ct_slice(b5, 0, 2, 5, 1);
  ct_tensor *a32 = ct_ones(2, s32, ct_opts());
  CHECK_OK(ct_add_out(v2, a32, a32));
  CHECK(shape_is(v2, 2, s32) && ct_storage_offset(v2) == 2 && tt_at(v2, 5) == 2);
  CHECK(shape_is(b5, 1, &s5) && tt_at(b5, 0) == 7 && tt_at(b5, 1) == 7 && tt_at(b5, 2) == 2);
  /* unary, matmul and cat out= take the same path */
  ct_tensor *o1 = ct_zeros(1, &s3, ct_opts());
  CHECK_OK(ct_exp_out(o1, a));
  CHECK(shape_is(o1, 2, s22) && fabs(tt_at(o1, 0) - exp(1.0)) < 1e-6);
  ct_tensor *o2 = ct_zeros(1, &s3, ct_opts());
  CHECK_OK(ct_matmul_out(o2, a, a));
  CHECK(shape_is(o2, 2, s22) && tt_at(o2, 3) == 2);
  ct_tensor *o3 = ct_zeros(1, &s3, ct_opts());
  CHECK_OK(ct_cat_out(o3, 2, (const ct_tensor *[]){a, a32}, 0));
  CHECK(shape_is(o3, 2, (int64_t[]){5, 2}) && tt_at(o3, 9) == 1);
  /* still refused: an out dtype the result cannot be cast to */
  ct_tensor *oi = ct_zeros(1, &s3, (ct_options){CT_INT64, ct_cpu(), false});
  CHECK_ERR(ct_exp_out(oi, a), "result type Float can't be cast to the desired output type Long");
  CHECK(shape_is(oi, 1, &s3));
  ct_set_warn_handler(prev, NULL);
}

/* Ops that return their input unchanged give the scope a reference of its own (ct_same). */
TEST(polish_dropout_eval_in_scope) {
  int64_t live = ct_live_tensors(), s3 = 3;
  ct_scope *s = ct_scope_begin();
  ct_tensor *x = ct_ones(1, &s3, ct_opts());
  ct_tensor *y = ct_dropout(x, 0.5, false, NULL);
  ct_tensor *z = ct_dropout(x, 0.0, true, NULL);
  CHECK(y && z && ct_data_ptr(y) == ct_data_ptr(x) && ct_data_ptr(z) == ct_data_ptr(x));
  ct_scope_end(s);
  CHECK(ct_live_tensors() == live);
}
