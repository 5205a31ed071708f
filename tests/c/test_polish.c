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
