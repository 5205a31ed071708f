/* LoRA: a fresh adapter computes the base layer, merged == unmerged, frozen base, names,
 * injection, and the refusals. */
#include "test.h"

static void fill_randn(ct_tensor *t) {
  bool prev = ct_set_grad_enabled(false);
  ct_normal_(t, 0.0, 1.0, NULL);
  ct_set_grad_enabled(prev);
}

TEST(lora_linear_starts_at_base_and_freezes_it) {
  ct_manual_seed(0);
  ct_module *base = ct_linear_new(5, 4, true);
  ct_tensor *w0 = ct_clone(ct_module_param(base, "weight")), *b0 = ct_clone(ct_module_param(base, "bias"));
  ct_module *m = ct_lora_linear_new(base, 2, 4.0, 0.0);
  CHECK(m && !strcmp(ct_module_type_name(m), "LoraLinear"));
  ct_dict *sd = ct_dict_new();
  CHECK_OK(ct_module_state_dict(m, sd));
  CHECK(ct_dict_len(sd) == 4 && !strcmp(ct_dict_name(sd, 0), "weight") && !strcmp(ct_dict_name(sd, 1), "bias") &&
        !strcmp(ct_dict_name(sd, 2), "lora_A.weight") && !strcmp(ct_dict_name(sd, 3), "lora_B.weight"));
  CHECK(ct_size(ct_dict_get(sd, "lora_A.weight"), 0) == 2 && ct_size(ct_dict_get(sd, "lora_A.weight"), 1) == 5);
  CHECK(ct_size(ct_dict_get(sd, "lora_B.weight"), 0) == 4 && ct_size(ct_dict_get(sd, "lora_B.weight"), 1) == 2);
  CHECK(!ct_requires_grad(ct_module_param(m, "weight")) && !ct_requires_grad(ct_module_param(m, "bias")));
  CHECK(ct_requires_grad(ct_module_param(m, "lora_A.weight")) && ct_requires_grad(ct_module_param(m, "lora_B.weight")));
  CHECK(ct_module_num_parameters(m, true) == 2 * 5 + 4 * 2);
  int64_t xs[2] = {3, 5};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_tensor *y = ct_module_forward(m, x), *yb = ct_linear(x, w0, b0);
  CHECK(tt_allclose(y, yb, 0, 0)); /* B = 0: exactly the base layer */
  ct_tensor *l = ct_sum(y);
  CHECK_OK(ct_backward(l, NULL, false, false));
  CHECK(ct_grad(ct_module_param(m, "weight")) == NULL && ct_grad(ct_module_param(m, "bias")) == NULL);
  ct_tensor *ga = ct_grad(ct_module_param(m, "lora_A.weight")), *gb = ct_grad(ct_module_param(m, "lora_B.weight"));
  CHECK(ga && gb);
  if (ga) CHECK(tt_at(ct_sum(ga), 0) == 0 && tt_at(ga, 3) == 0); /* dL/dA = B^T (...) = 0 while B = 0 */
  if (gb) CHECK(tt_at(gb, 0) != 0);
  ct_dict_free(sd);
  ct_release(w0);
  ct_release(b0);
  ct_release(x);
  ct_release(y);
  ct_release(yb);
  ct_release(l);
  ct_module_free(m);
}

TEST(lora_merge_unmerge_equivalence_and_refusals) {
  ct_manual_seed(1);
  ct_module *m = ct_lora_linear_new(ct_linear_new(6, 3, true), 2, 3.0, 0.25);
  fill_randn(ct_module_param(m, "lora_B.weight"));
  ct_tensor *w0 = ct_clone(ct_module_param(m, "weight"));
  int64_t xs[2] = {4, 6};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  /* training with dropout > 0: merging would lose the dropout */
  CHECK_ERR(ct_lora_merge(m), "cannot merge in training mode with lora_dropout=0.25");
  CHECK(!ct_lora_is_merged(m));
  CHECK_OK(ct_module_eval(m));
  ct_tensor *yu = ct_module_forward(m, x);
  CHECK_ERR(ct_lora_unmerge(m), "not merged");
  CHECK_OK(ct_lora_merge(m));
  CHECK(ct_lora_is_merged(m));
  CHECK_ERR(ct_lora_merge(m), "already merged");
  ct_tensor *ym = ct_module_forward(m, x);
  CHECK(tt_allclose(ym, yu, 1e-5, 1e-5));
  /* merged and then switched to training with dropout: the forward refuses */
  ct_module_train(m, true);
  CHECK_ERR_PTR(ct_module_forward(m, x), "merged and in training mode");
  ct_module_eval(m);
  /* loading into a merged layer is refused (its weight holds the update) */
  ct_dict *sd = ct_dict_new();
  ct_module_state_dict(m, sd);
  CHECK_ERR(ct_module_load_state_dict(m, sd, true), "merged LoRA layer");
  CHECK_OK(ct_lora_unmerge(m));
  CHECK(tt_allclose(ct_module_param(m, "weight"), w0, 1e-5, 1e-6));
  ct_tensor *yu2 = ct_module_forward(m, x);
  CHECK(tt_allclose(yu2, yu, 1e-5, 1e-5));
  ct_dict_free(sd);
  ct_release(w0);
  ct_release(x);
  ct_release(yu);
  ct_release(ym);
  ct_release(yu2);
  ct_module_free(m);
}

TEST(lora_conv2d_merge_equivalence) {
  ct_manual_seed(2);
  ct_conv_opts o = ct_conv_defaults();
  o.stride[0] = 2;
  o.padding[0] = o.padding[1] = 1;
  o.dilation[1] = 2;
  o.padding_mode = "reflect";
  ct_module *m = ct_lora_conv2d_new(ct_conv2d_new(3, 4, 3, 3, &o), 2, 2.0, 0.0);
  CHECK(m != NULL);
  if (!m) return;
  CHECK(ct_ndim(ct_module_param(m, "lora_A.weight")) == 4 && ct_size(ct_module_param(m, "lora_A.weight"), 0) == 2);
  CHECK(ct_size(ct_module_param(m, "lora_B.weight"), 2) == 1);
  int64_t xs[4] = {2, 3, 7, 8};
  ct_tensor *x = ct_randn(4, xs, ct_opts(), NULL);
  ct_tensor *y0 = ct_module_forward(m, x);
  fill_randn(ct_module_param(m, "lora_B.weight"));
  ct_tensor *yu = ct_module_forward(m, x);
  CHECK(!tt_allclose(yu, y0, 1e-3, 1e-3));
  CHECK_OK(ct_lora_merge(m)); /* dropout 0: merging in training mode is fine */
  ct_tensor *ym = ct_module_forward(m, x);
  CHECK(tt_allclose(ym, yu, 1e-5, 1e-5));
  /* a grouped convolution cannot take LoRA */
  ct_conv_opts g = ct_conv_defaults();
  g.groups = 2;
  CHECK(ct_lora_conv2d_new(ct_conv2d_new(4, 4, 3, 3, &g), 2, 2.0, 0.0) == NULL &&
        strstr(ct_last_error(), "grouped convolutions (groups=2) are not supported"));
  CHECK(ct_lora_linear_new(ct_linear_new(3, 3, true), 0, 1.0, 0.0) == NULL &&
        strstr(ct_last_error(), "`r` should be a positive integer value but the value passed is 0"));
  CHECK(ct_lora_linear_new(ct_relu_new(), 2, 1.0, 0.0) == NULL && strstr(ct_last_error(), "expected a Linear module, got ReLU"));
  CHECK(ct_lora_conv2d_new(ct_linear_new(3, 3, true), 2, 1.0, 0.0) == NULL);
  CHECK_ERR(ct_lora_merge(NULL), "expected a module");
  ct_release(x);
  ct_release(y0);
  ct_release(yu);
  ct_release(ym);
  ct_module_free(m);
}

TEST(lora_inject_names_and_base_checkpoint) {
  ct_manual_seed(4);
  ct_module *mods[3] = {ct_linear_new(4, 8, true), ct_relu_new(), ct_linear_new(8, 2, true)};
  ct_module *net = ct_sequential_new(3, mods);
  ct_dict *base_sd = ct_dict_new();
  ct_module_state_dict(net, base_sd);
  int64_t xs[2] = {5, 4};
  ct_tensor *x = ct_randn(2, xs, ct_opts(), NULL);
  ct_tensor *y0 = ct_module_forward(net, x);
  const char *targets[2] = {"0", "2"};
  int n = 0;
  CHECK_OK(ct_lora_inject(net, 2, targets, 2, 4.0, 0.1, &n));
  CHECK(n == 2);
  ct_dict *sd = ct_dict_new();
  ct_module_state_dict(net, sd);
  const char *want[] = {"0.weight", "0.bias", "0.lora_A.weight", "0.lora_B.weight",
                        "2.weight", "2.bias", "2.lora_A.weight", "2.lora_B.weight"};
  CHECK(ct_dict_len(sd) == 8);
  for (int i = 0; i < 8 && i < ct_dict_len(sd); i++) CHECK(!strcmp(ct_dict_name(sd, i), want[i]));
  CHECK(ct_module_num_parameters(net, true) == 2 * (4 + 8) + 2 * (8 + 2));
  /* still the base function, in eval (no dropout) */
  ct_module_eval(net);
  ct_tensor *y1 = ct_module_forward(net, x);
  CHECK(tt_allclose(y1, y0, 0, 0));
  /* the base checkpoint loads (non-strict): only the adapters are missing */
  ct_load_result r;
  CHECK_OK(ct_module_load_state_dict_ex(net, base_sd, false, &r));
  CHECK(r.n_missing == 4 && r.n_unexpected == 0);
  CHECK(r.n_missing == 4 && !strcmp(r.missing[0], "0.lora_A.weight") && !strcmp(r.missing[3], "2.lora_B.weight"));
  ct_load_result_free(&r);
  CHECK_ERR(ct_module_load_state_dict(net, base_sd, true), "Missing key(s) in state_dict: \"0.lora_A.weight\"");
  /* targets that match nothing */
  const char *none[1] = {"q_proj"};
  CHECK_ERR(ct_lora_inject(net, 1, none, 2, 4.0, 0.0, NULL), "Target modules q_proj not found in the base model");
  /* merge / unmerge the whole model */
  CHECK_OK(ct_lora_merge(net));
  CHECK(ct_lora_is_merged(ct_module_list_get(net, 0)) && ct_lora_is_merged(ct_module_list_get(net, 2)));
  CHECK_OK(ct_lora_unmerge(net));
  CHECK_ERR(ct_lora_merge(ct_module_list_get(net, 1)), "holds no LoRA layer");
  ct_dict_free(base_sd);
  ct_dict_free(sd);
  ct_release(x);
  ct_release(y0);
  ct_release(y1);
  ct_module_free(net);
}
