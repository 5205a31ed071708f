/* Modules: the module object, names, state_dict and strict loading, train/eval, containers,
 * custom modules, parameter utilities (values against PyTorch are in tests/parity/cases_module.py). */
#include "test.h"
#include <stdlib.h>

/* The dict's names equal the expected list, in order. */
static int names_are(const ct_dict *d, int n, const char *const *want) {
  if (ct_dict_len(d) != n) {
    fprintf(stderr, "  dict has %lld entries, expected %d:", (long long)ct_dict_len(d), n);
    for (int64_t i = 0; i < ct_dict_len(d); i++) fprintf(stderr, " %s", ct_dict_name(d, i));
    fprintf(stderr, "\n");
    return 0;
  }
  for (int i = 0; i < n; i++)
    if (strcmp(ct_dict_name(d, i), want[i])) {
      fprintf(stderr, "  entry %d is %s, expected %s\n", i, ct_dict_name(d, i), want[i]);
      return 0;
    }
  return 1;
}

/* Sequential(Conv2d(3, 4, 3), BatchNorm2d(4), ReLU(), Flatten(), Linear(16, 5)) */
static ct_module *small_net(void) {
  ct_module *mods[5] = {ct_conv2d_new(3, 4, 3, 3, NULL), ct_batch_norm2d_new(4, 1e-5, 0.1, true, true), ct_relu_new(),
                        ct_flatten_new(1, -1), ct_linear_new(16, 5, true)};
  return ct_sequential_new(5, mods);
}

TEST(module_state_dict_names_sequential) {
  ct_module *net = small_net();
  CHECK(net);
  ct_dict *sd = ct_dict_new(), *np = ct_dict_new(), *nb = ct_dict_new();
  CHECK_OK(ct_module_state_dict(net, sd));
  CHECK_OK(ct_module_named_parameters(net, np));
  CHECK_OK(ct_module_named_buffers(net, nb));
  /* PyTorch 1.13: list(seq.state_dict().keys()) */
  const char *want_sd[] = {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                           "1.num_batches_tracked", "4.weight", "4.bias"};
  const char *want_np[] = {"0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias"};
  const char *want_nb[] = {"1.running_mean", "1.running_var", "1.num_batches_tracked"};
  CHECK(names_are(sd, 9, want_sd));
  CHECK(names_are(np, 6, want_np));
  CHECK(names_are(nb, 3, want_nb));
  /* state_dict values are detached and share storage; named_parameters are the parameters */
  ct_tensor *w = ct_module_param(net, "0.weight");
  CHECK(ct_dict_get(np, "0.weight") == w);
  ct_tensor *sw = ct_dict_get(sd, "0.weight");
  CHECK(sw != w && ct_shares_storage(sw, w) && !ct_requires_grad(sw));
  CHECK(ct_tensor_dtype(ct_dict_get(sd, "1.num_batches_tracked")) == CT_INT64);
  CHECK(ct_ndim(ct_dict_get(sd, "1.num_batches_tracked")) == 0);
  CHECK(ct_module_num_parameters(net, false) == 4 * 3 * 9 + 4 + 4 + 4 + 16 * 5 + 5);
  CHECK(strcmp(ct_module_type_name(ct_module_list_get(net, -1)), "Linear") == 0);
  ct_dict_free(sd);
  ct_dict_free(np);
  ct_dict_free(nb);
  ct_module_free(net);
}

/* A custom module (ResNet-style block) written with the vtable. */
typedef struct {
  int *destroyed;
} block_user;

static ct_tensor *block_forward(ct_module *self, const ct_tensor *x) {
  ct_tensor *a = ct_module_forward(ct_module_child(self, "conv1"), x);
  ct_tensor *b = a ? ct_module_forward(ct_module_child(self, "bn1"), a) : NULL;
  ct_tensor *c = b ? ct_module_forward(ct_module_child(self, "relu"), b) : NULL;
  ct_release(a);
  ct_release(b);
  return c;
}
static void block_destroy(void *u) {
  block_user *b = u;
  if (b->destroyed) (*b->destroyed)++;
  free(b);
}
static const ct_module_vtable block_vt = {block_forward, NULL, block_destroy, NULL};

static ct_module *block_new(int *destroyed) {
  block_user *u = malloc(sizeof *u);
  u->destroyed = destroyed;
  ct_module *m = ct_module_new("BasicBlock", &block_vt, u);
  ct_conv_opts o = ct_conv_defaults();
  o.padding[0] = o.padding[1] = 1;
  o.bias = false;
  ct_module_register_module(m, "conv1", ct_conv2d_new(2, 2, 3, 3, &o));
  ct_module_register_module(m, "bn1", ct_batch_norm2d_new(2, 1e-5, 0.1, true, true));
  ct_module_register_module(m, "relu", ct_relu_new());
  return m;
}

static ct_tensor *net_forward(ct_module *self, const ct_tensor *x) {
  ct_tensor *a = ct_module_forward(ct_module_child(self, "stem"), x);
  ct_tensor *b = a ? ct_module_forward(ct_module_child(self, "layer1"), a) : NULL;
  ct_release(a);
  return b;
}
static const ct_module_vtable net_vt = {net_forward, NULL, NULL, NULL};

TEST(module_state_dict_names_nested_custom) {
  int destroyed = 0;
  ct_module *net = ct_module_new("Net", &net_vt, NULL);
  CHECK_OK(ct_module_register_module(net, "stem", ct_conv2d_new(1, 2, 1, 1, NULL)));
  ct_module *blocks[2] = {block_new(&destroyed), block_new(&destroyed)};
  CHECK_OK(ct_module_register_module(net, "layer1", ct_sequential_new(2, blocks)));
  ct_module *heads = ct_module_dict_new();
  CHECK_OK(ct_module_dict_set(heads, "cls", ct_linear_new(2, 3, true)));
  CHECK_OK(ct_module_register_module(net, "heads", heads));
  ct_module *list = ct_module_list_new();
  CHECK_OK(ct_module_list_append(list, ct_linear_new(3, 3, true)));
  CHECK_OK(ct_module_register_module(net, "blocks", list));
  ct_dict *sd = ct_dict_new();
  CHECK_OK(ct_module_state_dict(net, sd));
  /* PyTorch 1.13, the same structure written in Python */
  const char *want[] = {"stem.weight", "stem.bias", "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias",
                        "layer1.0.bn1.running_mean", "layer1.0.bn1.running_var", "layer1.0.bn1.num_batches_tracked",
                        "layer1.1.conv1.weight", "layer1.1.bn1.weight", "layer1.1.bn1.bias",
                        "layer1.1.bn1.running_mean", "layer1.1.bn1.running_var", "layer1.1.bn1.num_batches_tracked",
                        "heads.cls.weight", "heads.cls.bias", "blocks.0.weight", "blocks.0.bias"};
  CHECK(names_are(sd, 18, want));
  CHECK(ct_module_param(net, "layer1.1.conv1.weight") == ct_module_param(ct_module_child(net, "layer1.1"), "conv1.weight"));
  CHECK(ct_module_buffer(net, "layer1.0.bn1.running_var") != NULL);
  CHECK(ct_module_param(net, "layer1.0.bn1.running_var") == NULL);
  CHECK(ct_module_param(net, "layer1.2.conv1.weight") == NULL);
  CHECK(ct_module_child(net, "heads.cls") == ct_module_dict_get(heads, "cls"));
  CHECK(ct_module_dict_get(heads, "nope") == NULL && strcmp(ct_last_error(), "'nope'") == 0);
  /* the custom forward runs */
  int64_t xs[4] = {2, 1, 4, 4};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL);
  ct_tensor *y = ct_module_forward(net, x);
  CHECK(y && ct_ndim(y) == 4 && ct_size(y, 1) == 2);
  /* ModuleList / ModuleDict have no forward */
  CHECK_ERR_PTR(ct_module_forward(list, x), "Module [ModuleList] is missing the required \"forward\" function");
  CHECK_ERR_PTR(ct_module_forward(heads, x), "Module [ModuleDict] is missing the required \"forward\" function");
  ct_release(x);
  ct_release(y);
  ct_dict_free(sd);
  ct_module_free(net);
  CHECK(destroyed == 2);
}

TEST(module_register_errors) {
  ct_module *m = ct_linear_new(2, 2, true);
  int64_t one = 1;
  ct_tensor *p = ct_zeros(1, &one, ct_opts());
  CHECK_ERR(ct_module_register_parameter(m, "a.b", p), "parameter name can't contain \".\"");
  CHECK_ERR(ct_module_register_parameter(m, "", p), "parameter name can't be empty string \"\"");
  CHECK_ERR(ct_module_register_buffer(m, "weight", p, true), "attribute 'weight' already exists");
  CHECK_ERR(ct_module_register_module(m, "a.b", ct_relu_new()), "module name can't contain \".\", got: a.b");
  CHECK_ERR(ct_module_register_module(m, "bias", ct_relu_new()), "attribute 'bias' already exists");
  ct_tensor *li = ct_zeros(1, &one, ct_opts_dtype(CT_INT64));
  CHECK_ERR(ct_module_register_parameter(m, "k", li), "Only Tensors of floating point and complex dtype can require gradients");
  ct_tensor *leaf = ct_ones(1, &one, ct_opts());
  ct_requires_grad_(leaf, true);
  ct_tensor *nonleaf = ct_mul_scalar(leaf, ct_sf(2));
  CHECK_ERR(ct_module_register_parameter(m, "nl", nonleaf), "Cannot assign non-leaf Tensor to parameter 'nl'");
  /* a fine one: becomes a parameter requiring grad, named after the existing ones */
  CHECK_OK(ct_module_register_parameter(m, "scale", p));
  CHECK(ct_requires_grad(p));
  ct_dict *d = ct_dict_new();
  CHECK_OK(ct_module_named_parameters(m, d));
  const char *want[] = {"weight", "bias", "scale"};
  CHECK(names_are(d, 3, want));
  /* a cycle is refused */
  ct_module *a = ct_sequential_new(0, NULL), *b = ct_sequential_new(0, NULL);
  CHECK_OK(ct_sequential_append(a, ct_module_retain(b)));
  CHECK_ERR(ct_module_register_module(b, "x", ct_module_retain(a)), "cycle");
  ct_module_free(a);
  ct_module_free(b);
  CHECK_ERR(ct_module_register_parameter(NULL, "x", p), "expected a module, got NULL");
  CHECK_ERR_PTR(ct_module_forward(NULL, p), "expected a module, got NULL");
  ct_dict_free(d);
  ct_release(p);
  ct_release(li);
  ct_release(leaf);
  ct_release(nonleaf);
  ct_module_free(m);
}

TEST(module_load_state_dict_strict_errors) {
  ct_module *m = ct_linear_new(4, 3, true);
  int64_t s44[2] = {4, 4}, s1 = 1;
  ct_dict *sd = ct_dict_new();
  ct_tensor *w = ct_zeros(2, s44, ct_opts()), *foo = ct_zeros(1, &s1, ct_opts());
  ct_dict_set(sd, "weight", w);
  ct_dict_set(sd, "foo", foo);
  ct_tensor *before = ct_clone(ct_module_param(m, "weight"));
  CHECK_ERR(ct_module_load_state_dict(m, sd, true),
            "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\". \n\tUnexpected "
            "key(s) in state_dict: \"foo\". \n\tsize mismatch for weight: copying a param with shape "
            "torch.Size([4, 4]) from checkpoint, the shape in current model is torch.Size([3, 4]).");
  CHECK(ct_last_status() == CT_ERR_RUNTIME);
  /* size mismatches fail even when not strict, and nothing was copied */
  CHECK_ERR(ct_module_load_state_dict(m, sd, false),
            "Error(s) in loading state_dict for Linear:\n\tsize mismatch for weight: copying a param with shape "
            "torch.Size([4, 4]) from checkpoint, the shape in current model is torch.Size([3, 4]).");
  CHECK(tt_allclose(ct_module_param(m, "weight"), before, 0, 0));
  CHECK(strstr(ct_last_error(), "Missing") == NULL);
  ct_dict_free(sd);
  ct_release(w);
  ct_release(foo);
  ct_release(before);
  ct_module_free(m);
}

TEST(module_load_state_dict_sequential_messages) {
  ct_module *net = small_net();
  int64_t s4333[4] = {4, 3, 3, 3}, s1 = 1, s3 = 3;
  ct_dict *sd = ct_dict_new();
  ct_tensor *w0 = ct_full(4, s4333, ct_sf(0.5), ct_opts()), *z1 = ct_zeros(1, &s1, ct_opts()),
            *b3 = ct_zeros(1, &s3, ct_opts());
  ct_dict_set(sd, "0.weight", w0);
  ct_dict_set(sd, "x.y", z1);
  ct_dict_set(sd, "0.z", z1);
  /* non-strict: PyTorch's _IncompatibleKeys */
  ct_load_result r;
  CHECK_OK(ct_module_load_state_dict_ex(net, sd, false, &r));
  const char *miss[] = {"0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "4.weight", "4.bias"};
  CHECK(r.n_missing == 7);
  for (int i = 0; i < r.n_missing && i < 7; i++) CHECK(strcmp(r.missing[i], miss[i]) == 0);
  CHECK(r.n_unexpected == 2 && !strcmp(r.unexpected[0], "x.y") && !strcmp(r.unexpected[1], "0.z"));
  ct_load_result_free(&r);
  CHECK_NEAR(tt_at(ct_module_param(net, "0.weight"), 7), 0.5, 0);
  /* strict, with a size mismatch too */
  ct_dict_set(sd, "4.bias", b3);
  CHECK_ERR(ct_module_load_state_dict(net, sd, true),
            "Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: \"0.bias\", \"1.weight\", "
            "\"1.bias\", \"1.running_mean\", \"1.running_var\", \"4.weight\". \n\tUnexpected key(s) in state_dict: "
            "\"x.y\", \"0.z\". \n\tsize mismatch for 4.bias: copying a param with shape torch.Size([3]) from "
            "checkpoint, the shape in current model is torch.Size([5]).");
  ct_dict_free(sd);
  ct_release(w0);
  ct_release(z1);
  ct_release(b3);
  ct_module_free(net);
}

TEST(module_load_state_dict_roundtrip_in_place) {
  ct_manual_seed(1);
  ct_module *a = small_net();
  ct_manual_seed(2);
  ct_module *b = small_net();
  ct_tensor *bw = ct_module_param(b, "4.weight");
  uint64_t v0 = ct_version(bw);
  /* a trained-looking state: run a's BatchNorm once so its buffers move */
  int64_t xs[4] = {3, 3, 4, 4};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL);
  ct_tensor *ya = ct_module_forward(a, x);
  CHECK(tt_at(ct_module_buffer(a, "1.num_batches_tracked"), 0) == 1);
  ct_dict *sd = ct_dict_new();
  CHECK_OK(ct_module_state_dict(a, sd));
  /* a float64 copy of the state loads too (values converted like copy_) */
  CHECK_OK(ct_module_load_state_dict(b, sd, true));
  CHECK(ct_module_param(b, "4.weight") == bw); /* same tensor, new values */
  CHECK(ct_version(bw) > v0);
  CHECK(ct_requires_grad(bw) && ct_is_leaf(bw));
  CHECK(tt_allclose(bw, ct_module_param(a, "4.weight"), 0, 0));
  CHECK(tt_allclose(ct_module_buffer(b, "1.running_mean"), ct_module_buffer(a, "1.running_mean"), 0, 0));
  CHECK(tt_at(ct_module_buffer(b, "1.num_batches_tracked"), 0) == 1);
  ct_module_eval(a);
  ct_module_eval(b);
  ct_tensor *ea = ct_module_forward(a, x), *eb = ct_module_forward(b, x);
  CHECK(tt_allclose(ea, eb, 0, 0));
  /* a state_dict without num_batches_tracked (safetensors files from PyTorch) still loads */
  ct_dict_remove(sd, "1.num_batches_tracked");
  CHECK_OK(ct_module_load_state_dict(b, sd, true));
  CHECK(tt_at(ct_module_buffer(b, "1.num_batches_tracked"), 0) == 0);
  ct_dict_free(sd);
  ct_release(x);
  ct_release(ya);
  ct_release(ea);
  ct_release(eb);
  ct_module_free(a);
  ct_module_free(b);
}

TEST(module_load_state_dict_0dim_compat) {
  /* PyTorch accepts a 1-element 1-D tensor for a 0-dim parameter */
  ct_module *m = ct_module_new("Scalar", &net_vt, NULL);
  ct_tensor *p = ct_zeros(0, NULL, ct_opts());
  CHECK_OK(ct_module_register_parameter(m, "s", p));
  int64_t one = 1;
  ct_tensor *v = ct_full(1, &one, ct_sf(3.0), ct_opts());
  ct_dict *sd = ct_dict_new();
  ct_dict_set(sd, "s", v);
  CHECK_OK(ct_module_load_state_dict(m, sd, true));
  CHECK_NEAR(tt_at(p, 0), 3.0, 0);
  ct_dict_free(sd);
  ct_release(v);
  ct_release(p);
  ct_module_free(m);
}

TEST(module_train_eval_dropout_batchnorm) {
  ct_module *mods[2] = {ct_batch_norm1d_new(3, 1e-5, 0.1, true, true), ct_dropout_new(0.5)};
  ct_module *net = ct_sequential_new(2, mods);
  CHECK(ct_module_is_training(net) && ct_module_is_training(ct_module_list_get(net, 1)));
  int64_t xs[2] = {8, 3};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_tensor *y = ct_module_forward(net, x);
  CHECK(tt_at(ct_module_buffer(net, "0.num_batches_tracked"), 0) == 1);
  /* training dropout zeroes some elements */
  int zeros = 0;
  for (int i = 0; i < 24; i++) zeros += tt_at(y, i) == 0;
  CHECK(zeros > 0);
  CHECK_OK(ct_module_eval(net));
  CHECK(!ct_module_is_training(ct_module_list_get(net, 0)) && !ct_module_is_training(ct_module_list_get(net, 1)));
  ct_tensor *rm = ct_clone(ct_module_buffer(net, "0.running_mean"));
  ct_tensor *e1 = ct_module_forward(net, x), *e2 = ct_module_forward(net, x);
  CHECK(tt_allclose(e1, e2, 0, 0));                 /* eval: deterministic, no dropout */
  CHECK(tt_at(ct_module_buffer(net, "0.num_batches_tracked"), 0) == 1); /* not counted in eval */
  CHECK(tt_allclose(ct_module_buffer(net, "0.running_mean"), rm, 0, 0));
  /* eval BatchNorm uses the running statistics: (x - rm) / sqrt(rv + eps) */
  double xv = tt_at(x, 0), rmv = tt_at(rm, 0), rvv = tt_at(ct_module_buffer(net, "0.running_var"), 0);
  CHECK_NEAR(tt_at(e1, 0), (xv - rmv) / sqrt(rvv + 1e-5), 1e-5);
  ct_module_train(net, true);
  CHECK(ct_module_is_training(ct_module_list_get(net, 1)));
  ct_release(x);
  ct_release(y);
  ct_release(rm);
  ct_release(e1);
  ct_release(e2);
  ct_module_free(net);
}

TEST(module_zero_grad_freeze_count) {
  ct_module *m = ct_linear_new(3, 2, true);
  int64_t xs[2] = {4, 3};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_tensor *y = ct_module_forward(m, x), *l = ct_sum(y);
  CHECK_OK(ct_backward(l, NULL, false, false));
  ct_tensor *g = ct_grad(ct_module_param(m, "weight"));
  CHECK(g != NULL);
  CHECK_OK(ct_module_zero_grad(m, false)); /* PyTorch 1.13's default: zeroed in place */
  CHECK(ct_grad(ct_module_param(m, "weight")) == g && tt_at(g, 0) == 0);
  CHECK_OK(ct_module_zero_grad(m, true));
  CHECK(ct_grad(ct_module_param(m, "weight")) == NULL);
  CHECK(ct_module_num_parameters(m, true) == 8);
  CHECK_OK(ct_module_requires_grad_(m, false));
  CHECK(ct_module_num_parameters(m, true) == 0 && ct_module_num_parameters(m, false) == 8);
  ct_tensor *x2 = ct_randn(2, xs, ct_opts(), NULL);
  ct_requires_grad_(x2, true);
  ct_tensor *y2 = ct_module_forward(m, x2), *l2 = ct_sum(y2);
  CHECK_OK(ct_backward(l2, NULL, false, false));
  CHECK(ct_grad(ct_module_param(m, "weight")) == NULL && ct_grad(ct_module_param(m, "bias")) == NULL);
  CHECK(ct_grad(x2) != NULL);
  ct_release(x);
  ct_release(y);
  ct_release(l);
  ct_release(x2);
  ct_release(y2);
  ct_release(l2);
  ct_module_free(m);
}

TEST(module_to_dtype_and_set_tensor) {
  ct_module *m = ct_batch_norm1d_new(2, 1e-5, 0.1, true, true);
  CHECK_OK(ct_module_to_dtype(m, CT_FLOAT64));
  CHECK(ct_tensor_dtype(ct_module_param(m, "weight")) == CT_FLOAT64);
  CHECK(ct_requires_grad(ct_module_param(m, "weight")) && ct_is_leaf(ct_module_param(m, "weight")));
  CHECK(ct_tensor_dtype(ct_module_buffer(m, "running_var")) == CT_FLOAT64);
  CHECK(ct_tensor_dtype(ct_module_buffer(m, "num_batches_tracked")) == CT_INT64);
  CHECK_ERR(ct_module_to_dtype(m, CT_INT32), "only accepts floating point");
  int64_t three = 3, two = 2;
  ct_tensor *t3 = ct_ones(1, &three, ct_opts()), *t2 = ct_full(1, &two, ct_sf(2), ct_opts());
  CHECK_ERR(ct_module_set_tensor(m, "weight", t3), "set_tensor: weight has shape [2] in the module, got [3]");
  CHECK_ERR(ct_module_set_tensor(m, "nope", t2), "BatchNorm1d has no parameter or buffer `nope`");
  CHECK_OK(ct_module_set_tensor(m, "weight", t2));
  CHECK(ct_module_param(m, "weight") == t2);
  ct_release(t3);
  ct_release(t2);
  ct_module_free(m);
}

TEST(module_shared_submodule_and_tied_weights) {
  ct_module *lin = ct_linear_new(3, 3, false);
  ct_module *mods[2] = {lin, ct_module_retain(lin)}; /* the same module twice */
  ct_module *seq = ct_sequential_new(2, mods);
  ct_dict *np = ct_dict_new(), *sd = ct_dict_new();
  CHECK_OK(ct_module_named_parameters(seq, np));
  CHECK_OK(ct_module_state_dict(seq, sd));
  const char *want_np[] = {"0.weight"};
  const char *want_sd[] = {"0.weight", "1.weight"};
  CHECK(names_are(np, 1, want_np));
  CHECK(names_are(sd, 2, want_sd));
  CHECK(ct_module_num_parameters(seq, false) == 9);
  /* weight tying through set_tensor: one parameter under two names */
  ct_module *a = ct_linear_new(3, 3, false), *b = ct_linear_new(3, 3, false);
  ct_module *m2[2] = {a, b};
  ct_module *tied = ct_sequential_new(2, m2);
  CHECK_OK(ct_module_set_tensor(tied, "1.weight", ct_module_param(tied, "0.weight")));
  ct_dict *np2 = ct_dict_new();
  CHECK_OK(ct_module_named_parameters(tied, np2));
  CHECK(names_are(np2, 1, want_np));
  CHECK_OK(ct_module_to_dtype(tied, CT_FLOAT64)); /* stays tied */
  CHECK(ct_module_param(tied, "0.weight") == ct_module_param(tied, "1.weight"));
  ct_dict_free(np);
  ct_dict_free(sd);
  ct_dict_free(np2);
  ct_module_free(seq);
  ct_module_free(tied);
}

TEST(module_containers) {
  ct_module *s = ct_sequential_new(0, NULL);
  int64_t xs[2] = {2, 3};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_tensor *y = ct_module_forward(s, x); /* empty Sequential: the input */
  CHECK(y && tt_allclose(y, x, 0, 0));
  ct_release(y);
  CHECK_OK(ct_sequential_append(s, ct_relu_new()));
  CHECK_OK(ct_sequential_append(s, ct_tanh_new()));
  CHECK(ct_module_list_len(s) == 2);
  CHECK(ct_module_list_get(s, 5) == NULL && strcmp(ct_last_error(), "index 5 is out of range") == 0);
  CHECK(ct_last_status() == CT_ERR_INDEX);
  CHECK(ct_module_list_get(s, -3) == NULL);
  CHECK(!strcmp(ct_module_type_name(ct_module_list_get(s, -1)), "Tanh"));
  CHECK(!strcmp(ct_module_child_name(s, 1), "1"));
  y = ct_module_forward(s, x);
  ct_tensor *r = ct_relu(x), *t = ct_tanh(r);
  CHECK(tt_allclose(y, t, 0, 0));
  /* ModuleDict: insertion order, replacing keeps the position */
  ct_module *d = ct_module_dict_new();
  CHECK_OK(ct_module_dict_set(d, "b", ct_relu_new()));
  CHECK_OK(ct_module_dict_set(d, "a", ct_sigmoid_new()));
  CHECK_OK(ct_module_dict_set(d, "b", ct_tanh_new()));
  CHECK(ct_module_num_children(d) == 2 && !strcmp(ct_module_child_name(d, 0), "b"));
  CHECK(!strcmp(ct_module_type_name(ct_module_dict_get(d, "b")), "Tanh"));
  /* forward_n on a single-input module */
  const ct_tensor *ins[1] = {x};
  ct_tensor *outs[2];
  CHECK(ct_module_forward_n(s, 1, ins, 2, outs) == 1);
  ct_release(outs[0]);
  ct_release(x);
  ct_release(y);
  ct_release(r);
  ct_release(t);
  ct_module_free(s);
  ct_module_free(d);
}

TEST(module_layer_constructor_errors) {
  ct_conv_opts o = ct_conv_defaults();
  o.groups = 2;
  CHECK(ct_conv2d_new(3, 4, 3, 3, &o) == NULL && strstr(ct_last_error(), "in_channels must be divisible by groups"));
  CHECK(ct_last_status() == CT_ERR_VALUE);
  o = ct_conv_defaults();
  o.padding_mode = "foo";
  CHECK(ct_conv2d_new(3, 4, 3, 3, &o) == NULL && strstr(ct_last_error(), "but got padding_mode='foo'"));
  o = ct_conv_defaults();
  o.padding_mode = "reflect";
  CHECK(ct_conv_transpose2d_new(3, 4, 3, 3, &o) == NULL &&
        strstr(ct_last_error(), "Only \"zeros\" padding mode is supported for ConvTranspose2d"));
  CHECK(ct_dropout_new(-0.1) == NULL && !strcmp(ct_last_error(), "dropout probability has to be between 0 and 1, but got -0.1"));
  CHECK(ct_dropout_new(2) == NULL && !strcmp(ct_last_error(), "dropout probability has to be between 0 and 1, but got 2.0"));
  int64_t pad = -7;
  CHECK(ct_embedding_new(6, 2, &pad) == NULL && strstr(ct_last_error(), "Padding_idx must be within num_embeddings"));
  CHECK(ct_group_norm_new(3, 4, 1e-5, true) == NULL);
  CHECK(ct_multihead_attention_new(6, 4, 0, true, false) == NULL && strstr(ct_last_error(), "embed_dim must be divisible by num_heads"));
  CHECK(ct_gelu_new("fast") == NULL);
  CHECK(ct_linear_new(-1, 3, true) == NULL);
  CHECK(ct_max_pool2d_new(NULL, NULL, NULL, NULL, false) == NULL);
  int64_t s33[2] = {3, 3};
  /* a negative padding_idx counts from the end; that row starts at zero */
  pad = -2;
  ct_module *e = ct_embedding_new(6, 3, &pad);
  ct_tensor *w = ct_module_param(e, "weight");
  for (int j = 0; j < 3; j++) CHECK(tt_at(w, 4 * 3 + j) == 0);
  CHECK(tt_at(w, 0) != 0);
  ct_module_free(e);
  ct_module *mp = ct_max_pool2d_new(s33, NULL, NULL, NULL, false);
  CHECK(mp != NULL);
  ct_module_free(mp);
}

TEST(module_init_matches_torch_fixed_values) {
  /* torch.manual_seed(0); nn.Linear(2, 2): weight [[-0.0053, 0.3793], [-0.5820, -0.5204]], bias [-0.2723, 0.1896] */
  ct_manual_seed(0);
  ct_module *m = ct_linear_new(2, 2, true);
  float want_w[4] = {-0.005293981172144413f, 0.37932288646698f, -0.5819807648658752f, -0.5203874707221985f};
  float want_b[2] = {-0.27234524488449097f, 0.1896158903837204f};
  for (int i = 0; i < 4; i++) CHECK((float)tt_at(ct_module_param(m, "weight"), i) == want_w[i]);
  for (int i = 0; i < 2; i++) CHECK((float)tt_at(ct_module_param(m, "bias"), i) == want_b[i]);
  ct_module_free(m);
}
