/* Autograd semantics against PyTorch 1.13 (expected values and messages printed by
 * PyTorch for the same programs). */
#include "test.h"
#include "autograd/autograd.h"
#include "ops/op_table.h"

static ct_tensor *vec(const double *v, int n, bool rg) {
  int64_t s = n;
  ct_tensor *t = tt_from(v, 1, &s, CT_FLOAT32);
  if (t && rg) ct_requires_grad_(t, true);
  return t;
}

TEST(autograd_accumulates_across_backwards) {
  double v[3] = {1, 2, 3};
  ct_tensor *x = vec(v, 3, true);
  for (int k = 0; k < 2; k++) {
    ct_tensor *y = ct_sum(ct_mul(x, x));
    CHECK_OK(ct_backward(y, NULL, false, false));
  }
  CHECK_NEAR(tt_at(ct_grad(x), 2), 12, 1e-6); /* 2 * (2*3) */
  CHECK(ct_is_leaf(x) && ct_requires_grad(x));
  CHECK_OK(ct_set_grad(x, NULL));
  CHECK(ct_grad(x) == NULL);
}

TEST(autograd_retain_graph_and_freed_graph_error) {
  double v[3] = {1, 2, 3};
  ct_tensor *x = vec(v, 3, true);
  ct_tensor *z = ct_sum(ct_mul(x, x));
  CHECK_OK(ct_backward(z, NULL, true, false));
  CHECK_OK(ct_backward(z, NULL, false, false)); /* the graph was retained once */
  CHECK_NEAR(tt_at(ct_grad(x), 0), 4, 1e-6);
  CHECK_ERR(ct_backward(z, NULL, false, false), "Trying to backward through the graph a second time (or directly access "
            "saved tensors after they have already been freed). Saved intermediate values of the graph are freed when "
            "you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
            "graph a second time or if you need to access saved tensors after calling backward.");
  CHECK(ct_last_status() == CT_ERR_RUNTIME);
}

TEST(autograd_double_backward_cubic) {
  double v[2] = {1.5, -2};
  ct_tensor *x = vec(v, 2, true);
  ct_tensor *y = ct_sum(ct_mul(ct_mul(x, x), x));
  ct_tensor *g = NULL, *gg = NULL;
  CHECK_OK(ct_autograd_grad(1, &y, NULL, 1, &x, &g, false, true, false));
  CHECK(g && ct_requires_grad(g));
  CHECK_NEAR(tt_at(g, 0), 3 * 1.5 * 1.5, 1e-5);
  ct_tensor *gs = ct_sum(g);
  CHECK_OK(ct_autograd_grad(1, &gs, NULL, 1, &x, &gg, false, false, false));
  CHECK_NEAR(tt_at(gg, 0), 6 * 1.5, 1e-5);
  CHECK_NEAR(tt_at(gg, 1), 6 * -2.0, 1e-5);
  CHECK(ct_grad(x) == NULL); /* autograd.grad does not touch .grad */
  /* and a third order through ct_backward with create_graph */
  ct_tensor *y2 = ct_sum(ct_mul(ct_mul(x, x), x));
  CHECK_OK(ct_backward(y2, NULL, false, true));
  CHECK(ct_grad(x) && ct_requires_grad(ct_grad(x)));
  CHECK_NEAR(tt_at(ct_grad(x), 1), 12, 1e-5);
  CHECK_OK(ct_set_grad(x, NULL)); /* breaks the x -> grad -> graph -> x cycle */
}

TEST(autograd_grad_allow_unused) {
  double v[2] = {1, 2};
  ct_tensor *x = vec(v, 2, true), *u = vec(v, 2, true);
  ct_tensor *y = ct_sum(ct_mul_scalar(x, ct_si(2)));
  ct_tensor *ins[2] = {x, u}, *g[2] = {NULL, NULL};
  CHECK_ERR(ct_autograd_grad(1, &y, NULL, 2, ins, g, true, false, false),
            "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if "
            "this is the desired behavior.");
  CHECK(g[0] == NULL && g[1] == NULL);
  CHECK_OK(ct_autograd_grad(1, &y, NULL, 2, ins, g, false, false, true));
  CHECK(g[0] && g[1] == NULL);
  CHECK_NEAR(tt_at(g[0], 1), 2, 0);
  ct_tensor *nrg = vec(v, 2, false);
  ct_tensor *y2 = ct_sum(nrg);
  CHECK_ERR(ct_backward(y2, NULL, false, false), "element 0 of tensors does not require grad and does not have a grad_fn");
  ct_tensor *e = ct_exp(x);
  CHECK_ERR(ct_backward(e, NULL, false, false), "grad can be implicitly created only for scalar outputs");
  ct_tensor *bad = vec(v, 1, false);
  CHECK_ERR(ct_backward(e, bad, false, false), "Mismatch in shape: grad_output[0] has a shape of [1] and output[0] has a shape of [2].");
}

static ct_tensor *double_hook(ct_tensor *g, void *user) {
  (*(int *)user)++;
  return ct_mul_scalar(g, ct_si(2));
}

TEST(autograd_hooks_modify_and_remove) {
  double v[2] = {1, 2};
  int calls = 0;
  ct_tensor *x = vec(v, 2, true);
  int h = ct_register_hook(x, double_hook, &calls);
  CHECK(h >= 0);
  ct_tensor *y = ct_sum(ct_mul(x, x));
  CHECK_OK(ct_backward(y, NULL, false, false));
  CHECK(calls == 1);
  CHECK_NEAR(tt_at(ct_grad(x), 1), 8, 1e-6); /* 2 * 2x */
  CHECK_OK(ct_remove_hook(x, h));
  CHECK_ERR(ct_remove_hook(x, h), "no hook");
  CHECK_OK(ct_set_grad(x, NULL));
  ct_tensor *y2 = ct_sum(ct_mul(x, x));
  CHECK_OK(ct_backward(y2, NULL, false, false));
  CHECK(calls == 1);
  CHECK_NEAR(tt_at(ct_grad(x), 1), 4, 1e-6);
  /* a hook on a non-leaf changes what flows further back */
  CHECK_OK(ct_set_grad(x, NULL));
  ct_tensor *m = ct_mul_scalar(x, ct_si(3));
  CHECK(ct_register_hook(m, double_hook, &calls) >= 0);
  CHECK_OK(ct_backward(ct_sum(m), NULL, false, false));
  CHECK(calls == 2);
  CHECK_NEAR(tt_at(ct_grad(x), 0), 6, 1e-6);
  ct_tensor *c = vec(v, 2, false);
  CHECK(ct_register_hook(c, double_hook, &calls) == -1);
  CHECK(strstr(ct_last_error(), "cannot register a hook on a tensor that doesn't require gradient"));
}

TEST(autograd_retain_grad_non_leaf) {
  double v[2] = {1, 2};
  ct_tensor *x = vec(v, 2, true);
  ct_tensor *m = ct_mul_scalar(x, ct_si(3));
  ct_tensor *n = ct_mul_scalar(x, ct_si(3));
  CHECK_OK(ct_retain_grad(m));
  ct_tensor *y = ct_sum(ct_add(ct_mul(m, m), n));
  CHECK_OK(ct_backward(y, NULL, false, false));
  CHECK(ct_grad(m) != NULL && ct_grad(n) == NULL);
  CHECK_NEAR(tt_at(ct_grad(m), 1), 12, 1e-5); /* 2m = 2*6 */
  CHECK(!ct_is_leaf(m));
  CHECK_ERR(ct_retain_grad(vec(v, 2, false)), "can't retain_grad on Tensor that has requires_grad=False");
}

TEST(autograd_no_grad_and_inference_mode) {
  double v[2] = {1, 2};
  ct_tensor *x = vec(v, 2, true);
  bool prev = ct_set_grad_enabled(false);
  CHECK(prev == true && !ct_is_grad_enabled());
  ct_tensor *y = ct_exp(x);
  CHECK(y && !ct_requires_grad(y) && ct_grad_fn_name(y) == NULL && ct_is_leaf(y));
  ct_set_grad_enabled(true);
  ct_tensor *y2 = ct_exp(x);
  CHECK(ct_requires_grad(y2) && !strcmp(ct_grad_fn_name(y2), "ExpBackward0"));

  ct_set_inference_mode(true);
  CHECK(ct_is_inference_mode());
  ct_tensor *it = ct_mul(x, x);
  CHECK(it && !ct_requires_grad(it));
  ct_set_inference_mode(false);
  CHECK_ERR_PTR(ct_mul(x, it), "Inference tensors cannot be saved for backward. To work around you can make a clone to "
                "get a normal tensor and use it in autograd.");
  CHECK_ERR(ct_add_scalar_(it, ct_si(1)), "Inplace update to inference tensor outside InferenceMode is not allowed.");
  CHECK_ERR(ct_requires_grad_(it, true), "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  ct_tensor *ok = ct_add(x, it); /* add saves nothing: fine, like PyTorch */
  CHECK(ok && ct_requires_grad(ok));
  ct_tensor *cl = ct_clone(it);
  ct_tensor *ok2 = ct_mul(x, cl);
  CHECK(ok2 != NULL);
}

TEST(autograd_leaf_inplace_error) {
  double v[2] = {1, 2};
  ct_tensor *x = vec(v, 2, true);
  CHECK_ERR(ct_add_scalar_(x, ct_si(1)), "a leaf Variable that requires grad is being used in an in-place operation.");
  ct_tensor *xv = ct_select(x, 0, 0);
  CHECK_ERR(ct_mul_scalar_(xv, ct_si(2)), "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  /* fine under no_grad, as in PyTorch's optimizers */
  bool prev = ct_set_grad_enabled(false);
  CHECK_OK(ct_add_scalar_(x, ct_si(1)));
  ct_set_grad_enabled(prev);
  CHECK_NEAR(tt_at(x, 1), 3, 0);
  CHECK_ERR(ct_requires_grad_(ct_exp(x), false), "you can only change requires_grad flags of leaf variables.");
  int64_t two = 2;
  ct_tensor *i = ct_ones(1, &two, ct_opts_dtype(CT_INT64));
  CHECK_ERR(ct_requires_grad_(i, true), "only Tensors of floating point and complex dtype can require gradients");
}

TEST(autograd_saved_tensor_modified_inplace) {
  double v[3] = {1, 2, 3};
  ct_tensor *x = vec(v, 3, true);
  ct_tensor *y = ct_exp(x);
  CHECK_OK(ct_add_scalar_(y, ct_si(1)));
  ct_tensor *s = ct_sum(y);
  CHECK_ERR(ct_backward(s, NULL, false, false),
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead. "
            "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True).");
  /* the same through a detached alias: detach shares the version counter */
  ct_tensor *w = ct_exp(ct_mul_scalar(x, ct_si(2)));
  ct_tensor *d = ct_detach(w);
  CHECK(d && ct_shares_storage(d, w) && !ct_requires_grad(d) && ct_is_leaf(d));
  CHECK_OK(ct_add_scalar_(d, ct_si(1)));
  CHECK(ct_version(w) == ct_version(d));
  CHECK_ERR(ct_backward(ct_sum(w), NULL, false, false), "which is output 0 of ExpBackward0, is at version 1; expected version 0 instead.");
}

TEST(autograd_detach) {
  double v[3] = {1, 2, 3};
  ct_tensor *x = vec(v, 3, true);
  ct_tensor *d = ct_detach(x);
  CHECK(d && ct_shares_storage(d, x) && !ct_requires_grad(d));
  CHECK(!ct_is_view(d)); /* PyTorch: x.detach()._is_view() is False */
  CHECK_OK(ct_add_scalar_(d, ct_si(1))); /* allowed: d is not a view of the leaf */
  CHECK_NEAR(tt_at(x, 0), 2, 0);
  ct_tensor *m = ct_mul_scalar(x, ct_si(2));
  CHECK_OK(ct_detach_(m));
  CHECK(!ct_requires_grad(m) && ct_is_leaf(m));
}

/* b = a * 1; b[0:2].mul_(2); b.backward([1, 2, 3, 4]) -> a.grad = [2, 4, 3, 4] (PyTorch) */
TEST(autograd_inplace_on_view_copyslices) {
  double v[4] = {0, 1, 2, 3}, gv[4] = {1, 2, 3, 4};
  ct_tensor *a = vec(v, 4, true);
  ct_tensor *b = ct_mul_scalar(a, ct_si(1));
  ct_tensor *s = ct_slice(b, 0, 0, 2, 1);
  CHECK_OK(ct_mul_scalar_(s, ct_si(2)));
  CHECK(!strcmp(ct_grad_fn_name(b), "CopySlices"));
  CHECK_NEAR(tt_at(b, 1), 2, 0);
  ct_tensor *g = vec(gv, 4, false);
  CHECK_OK(ct_backward(b, g, false, false));
  double expect[4] = {2, 4, 3, 4};
  for (int i = 0; i < 4; i++) CHECK_NEAR(tt_at(ct_grad(a), i), expect[i], 1e-6);
  /* the view's own history follows the base */
  ct_tensor *a2 = vec(v, 4, true);
  ct_tensor *b2 = ct_mul_scalar(a2, ct_si(1));
  ct_tensor *s2 = ct_slice(b2, 0, 1, 3, 1);
  CHECK_OK(ct_exp_(s2));
  CHECK_OK(ct_backward(ct_sum(s2), NULL, false, false));
  CHECK_NEAR(tt_at(ct_grad(a2), 1), exp(1.0), 1e-5);
  CHECK_NEAR(tt_at(ct_grad(a2), 0), 0, 0);
}

TEST(autograd_grad_fn_names) {
  double v[2] = {1, 2};
  ct_tensor *x = vec(v, 2, true);
  CHECK(!strcmp(ct_grad_fn_name(ct_add(x, x)), "AddBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(ct_mul(x, x)), "MulBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(ct_sum(x)), "SumBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(ct_mean(x)), "MeanBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(ct_mean_dims(x, 1, (int64_t[]){0}, false)), "MeanBackward1"));
  CHECK(!strcmp(ct_grad_fn_name(ct_sum_dims(x, 1, (int64_t[]){0}, false)), "SumBackward1"));
  CHECK(!strcmp(ct_grad_fn_name(ct_clone(x)), "CloneBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(ct_to_dtype(x, CT_FLOAT64)), "ToCopyBackward0"));
  CHECK(!strcmp(ct_grad_fn_name(ct_rsub_scalar(x, ct_si(1))), "RsubBackward1"));
  CHECK(ct_grad_fn_name(x) == NULL);
}

/* Gradients come back in the input's dtype, reduced over broadcast dims. */
TEST(autograd_grad_dtype_and_broadcast) {
  double v[3] = {1, 2, 3};
  int64_t s3 = 3;
  ct_tensor *h = tt_from(v, 1, &s3, CT_FLOAT16);
  ct_requires_grad_(h, true);
  ct_tensor *f = ct_to_dtype(vec(v, 3, false), CT_FLOAT64);
  ct_tensor *m = ct_ones(2, (int64_t[]){2, 3}, ct_opts_dtype(CT_FLOAT64));
  ct_tensor *y = ct_sum(ct_mul(ct_mul(h, f), m));
  CHECK(ct_tensor_dtype(y) == CT_FLOAT64);
  CHECK_OK(ct_backward(y, NULL, false, false));
  CHECK(ct_tensor_dtype(ct_grad(h)) == CT_FLOAT16 && ct_ndim(ct_grad(h)) == 1);
  CHECK_NEAR(tt_at(ct_grad(h), 2), 6, 0);
}

/* A backward step whose error is cleared by a later successful op must not read as a zero
 * gradient: the engine notices the error raised during the formula and reports it. */
static ct_status bw_loses_error(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  (void)n;
  (void)g;
  ct_set_error(CT_ERR_RUNTIME, "no kernel for this step");
  ct_clear_error(); /* as a later op that succeeds would */
  gin[0] = NULL;
  return CT_OK;
}

TEST(autograd_cleared_error_in_backward_is_reported) {
  double v[3] = {1, 2, 3};
  ct_tensor *x = vec(v, 3, true);
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *y = ct_add(x, x);
  ct_set_grad_enabled(prev);
  CHECK(y && !ct_requires_grad(y));
  CHECK(ct_record_node(CT_OP_copy, 1, &x, 1, &y, NULL, CT_SAVE_NONE, bw_loses_error, "LosesErrorBackward") != NULL);
  ct_tensor *s = ct_sum(y);
  CHECK_ERR(ct_backward(s, NULL, false, false), "computing the gradient of input 0 failed: no kernel for this step");
  CHECK(ct_grad(x) == NULL);
  ct_release(s);
  ct_release(y);
  ct_release(x);
}
