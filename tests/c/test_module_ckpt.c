/* Activation checkpointing (ct_checkpoint): gradients equal to the plain run with dropout
 * replayed, every parameter reached, in-place refusal, graph reuse rules, memory. */
#include "test.h"

/* Sequential(Linear(6, 8), GELU, Dropout(0.5), Linear(8, 8), ReLU, Dropout(0.3), Linear(8, 4)) */
static ct_module *mlp(void) {
  ct_module *mods[7] = {ct_linear_new(6, 8, true), ct_gelu_new(NULL),    ct_dropout_new(0.5), ct_linear_new(8, 8, true),
                        ct_relu_new(),             ct_dropout_new(0.3), ct_linear_new(8, 4, true)};
  return ct_sequential_new(7, mods);
}

/* segment: children [lo, hi) of a Sequential */
typedef struct {
  ct_module *seq;
  int lo, hi;
} seg;
static ct_status run_seg(void *user, int n_in, ct_tensor *const *in, int n_out, ct_tensor **out) {
  seg *s = user;
  ct_tensor *cur = ct_retain(in[0]);
  for (int i = s->lo; i < s->hi; i++) {
    ct_tensor *y = ct_module_forward(ct_module_list_get(s->seq, i), cur);
    ct_release(cur);
    if (!y) return ct_last_status();
    cur = y;
  }
  out[0] = cur;
  return CT_OK;
}

/* loss = sum(y * c) with a fixed c, so every output element has its own gradient */
static ct_tensor *loss_of(ct_tensor *y) {
  ct_tensor *c = ct_arange(ct_si(0), ct_si(ct_numel(y)), ct_si(1), NULL);
  ct_tensor *cf = ct_to_dtype(c, ct_tensor_dtype(y));
  ct_tensor *cr = ct_reshape(cf, ct_ndim(y), ct_shape(y));
  ct_tensor *p = ct_mul(y, cr), *l = ct_sum(p);
  ct_release(c);
  ct_release(cf);
  ct_release(cr);
  ct_release(p);
  return l;
}

/* grads of x and every parameter, cloned */
static int collect_grads(ct_module *m, ct_tensor *x, ct_tensor **g, int max) {
  int n = 0;
  g[n++] = ct_clone(ct_grad(x));
  ct_dict *d = ct_dict_new();
  ct_module_named_parameters(m, d);
  for (int64_t i = 0; i < ct_dict_len(d) && n < max; i++) {
    ct_tensor *gi = ct_grad(ct_dict_tensor(d, i));
    g[n++] = gi ? ct_clone(gi) : NULL;
  }
  ct_dict_free(d);
  return n;
}

TEST(ckpt_gradients_equal_with_dropout) {
  ct_manual_seed(3);
  ct_module *m = mlp();
  int64_t xs[2] = {5, 6};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_requires_grad_(x, true);
  /* plain */
  ct_manual_seed(100);
  ct_tensor *y = ct_module_forward(m, x), *l = loss_of(y);
  CHECK_OK(ct_backward(l, NULL, false, false));
  ct_tensor *after_plain = ct_rand(1, xs, ct_opts(), NULL);
  ct_tensor *g1[16], *g2[16];
  int n1 = collect_grads(m, x, g1, 16);
  ct_module_zero_grad(m, true);
  ct_set_grad(x, NULL);
  /* two checkpointed segments */
  ct_manual_seed(100);
  seg s1 = {m, 0, 3}, s2 = {m, 3, 7};
  ct_tensor *h = NULL, *y2 = NULL;
  CHECK_OK(ct_checkpoint(run_seg, &s1, 1, &x, 1, &h));
  CHECK_OK(ct_checkpoint(run_seg, &s2, 1, &h, 1, &y2));
  CHECK(!strcmp(ct_grad_fn_name(y2), "CheckpointFunctionBackward"));
  CHECK(tt_allclose(y2, y, 0, 0));
  ct_tensor *l2 = loss_of(y2);
  CHECK_OK(ct_backward(l2, NULL, false, false));
  /* recomputation restored the generator: the stream continues as in the plain run */
  ct_tensor *after_ckpt = ct_rand(1, xs, ct_opts(), NULL);
  CHECK(tt_allclose(after_ckpt, after_plain, 0, 0));
  int n2 = collect_grads(m, x, g2, 16);
  CHECK(n1 == n2 && n1 == 7);
  for (int i = 0; i < n1 && i < n2; i++) {
    CHECK(g1[i] && g2[i]);
    if (g1[i] && g2[i] && !tt_allclose(g2[i], g1[i], 0, 0)) ct_test_fail(__FILE__, __LINE__, "gradient %d differs", i);
  }
  for (int i = 0; i < n1; i++) ct_release(g1[i]);
  for (int i = 0; i < n2; i++) ct_release(g2[i]);
  ct_release(x);
  ct_release(y);
  ct_release(l);
  ct_release(h);
  ct_release(y2);
  ct_release(l2);
  ct_release(after_plain);
  ct_release(after_ckpt);
  ct_module_free(m);
}

TEST(ckpt_many_parameters_and_autograd_grad) {
  /* 6 Linear layers: 12 parameters + the input = 13 edges, more than one node holds */
  ct_manual_seed(5);
  ct_module *mods[11];
  for (int i = 0; i < 11; i++) mods[i] = (i % 2 == 0) ? ct_linear_new(4, 4, true) : ct_tanh_new();
  ct_module *m = ct_sequential_new(11, mods);
  int64_t xs[2] = {3, 4};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_requires_grad_(x, true);
  ct_dict *d = ct_dict_new();
  ct_module_named_parameters(m, d);
  CHECK(ct_dict_len(d) == 12);
  ct_tensor *wrt[13];
  wrt[0] = x;
  for (int i = 0; i < 12; i++) wrt[i + 1] = ct_dict_tensor(d, i);
  ct_tensor *y = ct_module_forward(m, x), *l = loss_of(y);
  ct_tensor *ga[13], *gb[13];
  CHECK_OK(ct_autograd_grad(1, &l, NULL, 13, wrt, ga, false, false, false));
  ct_tensor *yc = ct_checkpoint_module(m, x), *lc = loss_of(yc);
  CHECK(tt_allclose(yc, y, 0, 0));
  CHECK_OK(ct_autograd_grad(1, &lc, NULL, 13, wrt, gb, true, false, false));
  for (int i = 0; i < 13; i++)
    if (!tt_allclose(gb[i], ga[i], 0, 0)) ct_test_fail(__FILE__, __LINE__, "autograd.grad %d differs", i);
  /* the graph was retained: backward works and accumulates the same into .grad */
  CHECK_OK(ct_backward(lc, NULL, false, false));
  for (int i = 0; i < 13; i++)
    if (!tt_allclose(ct_grad(wrt[i]), ga[i], 0, 0)) ct_test_fail(__FILE__, __LINE__, ".grad %d differs", i);
  /* and a third time it is gone */
  CHECK_ERR(ct_backward(lc, NULL, false, false), "Trying to backward through the graph a second time");
  for (int i = 0; i < 13; i++) {
    ct_release(ga[i]);
    ct_release(gb[i]);
  }
  ct_dict_free(d);
  ct_release(x);
  ct_release(y);
  ct_release(l);
  ct_release(yc);
  ct_release(lc);
  ct_module_free(m);
}

TEST(ckpt_refuses_inplace_modified_input) {
  ct_module *lin = ct_linear_new(3, 3, true);
  int64_t xs[2] = {2, 3};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_requires_grad_(x, true);
  ct_tensor *y = ct_mul_scalar(x, ct_sf(2));
  ct_tensor *out = ct_checkpoint_module(lin, y);
  ct_tensor *l = ct_sum(out);
  CHECK_OK(ct_mul_scalar_(y, ct_sf(3)));
  /* PyTorch 1.13's words (checkpoint(lin, y); y.mul_(3); backward) */
  CHECK_ERR(ct_backward(l, NULL, false, false),
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[torch.FloatTensor [2, 3]], which is output 0 of MulBackward0, is at version 1; expected version 0 "
            "instead. Hint: enable anomaly detection");
  /* a leaf changed under no_grad */
  ct_tensor *out2 = ct_checkpoint_module(lin, x), *l2 = ct_sum(out2);
  bool prev = ct_set_grad_enabled(false);
  ct_add_scalar_(x, ct_si(1));
  ct_set_grad_enabled(prev);
  CHECK_ERR(ct_backward(l2, NULL, false, false),
            "modified by an inplace operation: [torch.FloatTensor [2, 3]] is at version ");
  /* a parameter changed between forward and backward (an optimizer step) is refused too */
  ct_tensor *x3 = ct_randn(2, xs, ct_opts(), NULL);
  ct_requires_grad_(x3, true);
  ct_tensor *out3 = ct_checkpoint_module(lin, x3), *l3 = ct_sum(out3);
  prev = ct_set_grad_enabled(false);
  ct_mul_scalar_(ct_module_param(lin, "weight"), ct_sf(0.5));
  ct_set_grad_enabled(prev);
  CHECK_ERR(ct_backward(l3, NULL, false, false), "[torch.FloatTensor [3, 3]] is at version");
  ct_release(x);
  ct_release(y);
  ct_release(out);
  ct_release(l);
  ct_release(out2);
  ct_release(l2);
  ct_release(x3);
  ct_release(out3);
  ct_release(l3);
  ct_module_free(lin);
}

/* fn using a tensor from outside (with history) and a parameter also used outside */
typedef struct {
  ct_tensor *c; /* closure tensor */
  ct_tensor *w; /* shared parameter */
} closure;
static ct_status closure_fn(void *user, int n_in, ct_tensor *const *in, int n_out, ct_tensor **out) {
  closure *cl = user;
  ct_tensor *a = ct_mul(in[0], cl->c), *b = a ? ct_mul(a, cl->w) : NULL, *t = b ? ct_tanh(b) : NULL;
  ct_release(a);
  ct_release(b);
  out[0] = t;
  /* a second output: the input itself (fn may return its input) */
  out[1] = ct_retain(in[0]);
  return t ? CT_OK : ct_last_status();
}

TEST(ckpt_closure_tensors_shared_params_identity_output) {
  int64_t n = 4;
  ct_tensor *x = ct_randn(1, &n, ct_opts(), NULL), *u = ct_randn(1, &n, ct_opts(), NULL),
            *w = ct_randn(1, &n, ct_opts(), NULL);
  ct_requires_grad_(x, true);
  ct_requires_grad_(u, true);
  ct_requires_grad_(w, true);
  ct_tensor *g_plain[3], *g_ck[3];
  ct_tensor *wrt[3] = {x, u, w};
  for (int pass = 0; pass < 2; pass++) {
    ct_tensor *c = ct_exp(u);           /* history outside the segment */
    ct_tensor *pre = ct_mul(x, w);      /* w also used outside */
    closure cl = {c, w};
    ct_tensor *o[2] = {NULL, NULL};
    if (pass == 0) closure_fn(&cl, 1, &pre, 2, o);
    else CHECK_OK(ct_checkpoint(closure_fn, &cl, 1, &pre, 2, o));
    ct_tensor *l1 = loss_of(o[0]), *l2 = loss_of(o[1]), *l = ct_add(l1, l2);
    CHECK_OK(ct_autograd_grad(1, &l, NULL, 3, wrt, pass ? g_ck : g_plain, false, false, false));
    ct_release(c);
    ct_release(pre);
    ct_release(o[0]);
    ct_release(o[1]);
    ct_release(l1);
    ct_release(l2);
    ct_release(l);
  }
  for (int i = 0; i < 3; i++) {
    if (!tt_allclose(g_ck[i], g_plain[i], 1e-6, 1e-7)) ct_test_fail(__FILE__, __LINE__, "gradient %d differs", i);
    ct_release(g_ck[i]);
    ct_release(g_plain[i]);
  }
  ct_release(x);
  ct_release(u);
  ct_release(w);
}

TEST(ckpt_no_grad_mode_and_errors) {
  ct_module *lin = ct_linear_new(3, 2, true);
  int64_t xs[2] = {2, 3};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *y = ct_checkpoint_module(lin, x);
  ct_set_grad_enabled(prev);
  CHECK(y && ct_grad_fn_name(y) == NULL);
  ct_tensor *y2 = ct_checkpoint_module(lin, x); /* params require grad: the output does too */
  CHECK(y2 && ct_requires_grad(y2));
  /* double backward is refused rather than answered wrongly */
  ct_tensor *l = ct_sum(y2), *g = NULL;
  ct_tensor *w = ct_module_param(lin, "weight");
  CHECK_ERR(ct_autograd_grad(1, &l, NULL, 1, &w, &g, false, true, false), "create_graph=True");
  ct_tensor *outs[5];
  CHECK_ERR(ct_checkpoint(NULL, NULL, 1, &x, 1, outs), "function is NULL");
  CHECK_ERR(ct_checkpoint(run_seg, NULL, 1, &x, 5, outs), "n_outputs must be between 1 and 4");
  CHECK_ERR_PTR(ct_checkpoint_module(NULL, x), "expected a module");
  ct_release(x);
  ct_release(y);
  ct_release(y2);
  ct_release(l);
  ct_module_free(lin);
}

TEST(ckpt_keeps_no_activations) {
  /* a wide MLP: the checkpointed forward holds only its output (and the input it saves) */
  ct_manual_seed(1);
  ct_module *mods[5] = {ct_linear_new(64, 512, true), ct_gelu_new(NULL), ct_linear_new(512, 512, true),
                        ct_gelu_new(NULL), ct_linear_new(512, 8, true)};
  ct_module *m = ct_sequential_new(5, mods);
  int64_t xs[2] = {256, 64};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_requires_grad_(x, true);
  int64_t base = ct_memory_get_stats(ct_cpu()).allocated_bytes;
  ct_tensor *y = ct_module_forward(m, x);
  int64_t plain = ct_memory_get_stats(ct_cpu()).allocated_bytes - base;
  ct_release(y);
  int64_t base2 = ct_memory_get_stats(ct_cpu()).allocated_bytes;
  ct_tensor *yc = ct_checkpoint_module(m, x);
  int64_t ck = ct_memory_get_stats(ct_cpu()).allocated_bytes - base2;
  /* plain keeps ~4 activations of 256x512 floats (2 MiB); checkpointed only the 256x8 output */
  CHECK(plain > 1000000);
  CHECK(ck < 100000);
  ct_release(yc);
  ct_release(x);
  ct_module_free(m);
}

/* fn that fails, or changes shape, on its n-th call */
static ct_status ct_set_error_public_test(void) {
  /* a failing op sets the error the way user code would meet it */
  int64_t a = 2, b = 3;
  ct_tensor *t1 = ct_zeros(1, &a, ct_opts()), *t2 = ct_zeros(1, &b, ct_opts());
  ct_tensor *bad = ct_add(t1, t2);
  ct_release(t1);
  ct_release(t2);
  ct_release(bad);
  return ct_last_status();
}
typedef struct {
  int calls, fail_at, reshape_at;
} flaky;
static ct_status flaky_fn(void *user, int n_in, ct_tensor *const *in, int n_out, ct_tensor **out) {
  flaky *f = user;
  f->calls++;
  if (f->calls == f->fail_at) return ct_set_error_public_test();
  if (f->calls == f->reshape_at) {
    out[0] = ct_sum(in[0]);
    return out[0] ? CT_OK : ct_last_status();
  }
  out[0] = ct_mul(in[0], in[0]);
  return out[0] ? CT_OK : ct_last_status();
}

TEST(ckpt_function_failures) {
  int64_t n = 3;
  ct_tensor *x = ct_randn(1, &n, ct_opts(), NULL);
  ct_requires_grad_(x, true);
  ct_tensor *y = NULL;
  flaky f1 = {0, 1, 0};
  CHECK_ERR(ct_checkpoint(flaky_fn, &f1, 1, &x, 1, &y), "The size of tensor a (2) must match the size of tensor b (3)");
  CHECK(y == NULL);
  /* failing in the recomputation: the error comes out of backward, the generator is restored */
  flaky f2 = {0, 2, 0};
  CHECK_OK(ct_checkpoint(flaky_fn, &f2, 1, &x, 1, &y));
  ct_tensor *l = ct_sum(y);
  ct_manual_seed(9);
  ct_tensor *before = ct_rand(1, &n, ct_opts(), NULL);
  ct_manual_seed(9);
  CHECK_ERR(ct_backward(l, NULL, false, false), "The size of tensor a (2) must match the size of tensor b (3)");
  ct_tensor *after = ct_rand(1, &n, ct_opts(), NULL);
  CHECK(tt_allclose(after, before, 0, 0));
  /* a recomputation that does not match the forward is refused */
  flaky f3 = {0, 0, 2};
  ct_tensor *y3 = NULL;
  CHECK_OK(ct_checkpoint(flaky_fn, &f3, 1, &x, 1, &y3));
  ct_tensor *l3 = ct_sum(y3);
  CHECK_ERR(ct_backward(l3, NULL, false, false), "differs in shape or dtype from the forward pass");
  ct_release(x);
  ct_release(y);
  ct_release(l);
  ct_release(before);
  ct_release(after);
  ct_release(y3);
  ct_release(l3);
}
