/* Parity runners of the nn modules (src/nn; cases in cases_module.py). A case's attrs hold
 * the module's constructor arguments; build() makes the same module as cases_module.py's
 * build(). "module": the data inputs come first (n_x), then the parameters in
 * named_parameters order, which replace the module's own (ct_module_set_tensor) so the
 * harness sees gradients for them. "module_init": the first state_dict tensors after
 * ct_manual_seed(seed), for bit-exact comparison with PyTorch's initialisation. */
#include "parity.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static int ints(const pcase *c, const char *key, int64_t *buf, int n, int64_t dflt) {
  int k = pc_ints(c, key, buf, n);
  if (k < 0) {
    for (int i = 0; i < n; i++) buf[i] = dflt;
    return 0;
  }
  if (k == 1)
    for (int i = 1; i < n; i++) buf[i] = buf[0];
  return k;
}

static ct_conv_opts conv_opts(const pcase *c) {
  ct_conv_opts o = ct_conv_defaults();
  ints(c, "stride", o.stride, 2, 1);
  ints(c, "padding", o.padding, 2, 0);
  ints(c, "dilation", o.dilation, 2, 1);
  ints(c, "output_padding", o.output_padding, 2, 0);
  o.groups = pc_int(c, "groups", 1);
  o.bias = pc_int(c, "bias", 1) != 0;
  o.padding_str = pc_str(c, "pad_str", NULL);
  o.padding_mode = pc_str(c, "padding_mode", NULL);
  return o;
}

static ct_module *build(const pcase *c) {
  const char *L = pc_str(c, "layer", "");
  int64_t k[2], s[2], p[2], d[2], shape[CT_MAX_DIMS];
  if (!strcmp(L, "Linear")) return ct_linear_new(pc_int(c, "in", 0), pc_int(c, "out", 0), pc_int(c, "bias", 1) != 0);
  if (!strcmp(L, "Conv1d") || !strcmp(L, "Conv2d") || !strcmp(L, "ConvTranspose2d") || !strcmp(L, "LoraConv2d")) {
    ct_conv_opts o = conv_opts(c);
    ints(c, "k", k, 2, 1);
    ct_module *m;
    if (!strcmp(L, "Conv1d")) return ct_conv1d_new(pc_int(c, "in", 0), pc_int(c, "out", 0), k[0], &o);
    if (!strcmp(L, "ConvTranspose2d")) return ct_conv_transpose2d_new(pc_int(c, "in", 0), pc_int(c, "out", 0), k[0], k[1], &o);
    m = ct_conv2d_new(pc_int(c, "in", 0), pc_int(c, "out", 0), k[0], k[1], &o);
    if (!strcmp(L, "Conv2d") || !m) return m;
    return ct_lora_conv2d_new(m, pc_int(c, "r", 1), pc_float(c, "lora_alpha", 1), pc_float(c, "lora_dropout", 0));
  }
  if (!strcmp(L, "LoraLinear")) {
    ct_module *m = ct_linear_new(pc_int(c, "in", 0), pc_int(c, "out", 0), pc_int(c, "bias", 1) != 0);
    if (!m) return NULL;
    return ct_lora_linear_new(m, pc_int(c, "r", 1), pc_float(c, "lora_alpha", 1), pc_float(c, "lora_dropout", 0));
  }
  if (!strcmp(L, "BatchNorm1d") || !strcmp(L, "BatchNorm2d")) {
    double mom = pc_int(c, "momentum_none", 0) ? CT_MOMENTUM_NONE : pc_float(c, "momentum", 0.1);
    ct_module *(*f)(int64_t, double, double, bool, bool) = L[9] == '1' ? ct_batch_norm1d_new : ct_batch_norm2d_new;
    return f(pc_int(c, "nf", 0), pc_float(c, "eps", 1e-5), mom, pc_int(c, "affine", 1) != 0, pc_int(c, "track", 1) != 0);
  }
  if (!strcmp(L, "LayerNorm") || !strcmp(L, "RMSNorm")) {
    int n = pc_ints(c, "shape", shape, CT_MAX_DIMS);
    bool affine = pc_int(c, "affine", 1) != 0;
    if (L[0] == 'L') return ct_layer_norm_new(n, shape, pc_float(c, "eps", 1e-5), affine);
    return ct_rms_norm_new(n, shape, pc_has(c, "eps") ? pc_float(c, "eps", 0) : -1.0, affine);
  }
  if (!strcmp(L, "GroupNorm"))
    return ct_group_norm_new(pc_int(c, "groups", 1), pc_int(c, "channels", 0), pc_float(c, "eps", 1e-5),
                             pc_int(c, "affine", 1) != 0);
  if (!strcmp(L, "Dropout")) return ct_dropout_new(pc_float(c, "p", 0.5));
  if (!strcmp(L, "Embedding")) {
    int64_t pad = pc_int(c, "padding_idx", 0);
    return ct_embedding_new(pc_int(c, "num", 0), pc_int(c, "dim", 0), pc_has(c, "padding_idx") ? &pad : NULL);
  }
  if (!strcmp(L, "MaxPool2d") || !strcmp(L, "AvgPool2d")) {
    ints(c, "k", k, 2, 1);
    bool has_s = ints(c, "stride", s, 2, 1) > 0;
    ints(c, "padding", p, 2, 0);
    ints(c, "dilation", d, 2, 1);
    bool ceil_mode = pc_int(c, "ceil_mode", 0) != 0;
    if (L[0] == 'M') return ct_max_pool2d_new(k, has_s ? s : NULL, p, d, ceil_mode);
    return ct_avg_pool2d_new(k, has_s ? s : NULL, p, ceil_mode, pc_int(c, "count_include_pad", 1) != 0,
                             pc_int(c, "divisor", 0));
  }
  if (!strcmp(L, "AdaptiveAvgPool2d")) {
    ints(c, "out_size", k, 2, 1);
    return ct_adaptive_avg_pool2d_new(k);
  }
  if (!strcmp(L, "Flatten")) return ct_flatten_new(pc_int(c, "start", 1), pc_int(c, "end", -1));
  if (!strcmp(L, "Identity")) return ct_identity_new();
  if (!strcmp(L, "MultiheadAttention"))
    return ct_multihead_attention_new(pc_int(c, "E", 0), pc_int(c, "H", 1), pc_float(c, "dropout", 0),
                                      pc_int(c, "bias", 1) != 0, pc_int(c, "batch_first", 0) != 0);
  if (!strcmp(L, "Net")) {
    ct_module *mods[5] = {ct_conv2d_new(3, 4, 3, 3, NULL), ct_batch_norm2d_new(4, 1e-5, 0.1, true, true), ct_relu_new(),
                          ct_flatten_new(1, -1), ct_linear_new(16, 5, true)};
    return ct_sequential_new(5, mods);
  }
  if (!strcmp(L, "MLP")) {
    ct_module *mods[4] = {ct_linear_new(6, 8, true), ct_gelu_new(NULL), ct_dropout_new(pc_float(c, "p", 0)),
                          ct_linear_new(8, 4, true)};
    return ct_sequential_new(4, mods);
  }
  if (!strcmp(L, "ReLU")) return ct_relu_new();
  if (!strcmp(L, "ReLU6")) return ct_relu6_new();
  if (!strcmp(L, "SiLU")) return ct_silu_new();
  if (!strcmp(L, "Mish")) return ct_mish_new();
  if (!strcmp(L, "Tanh")) return ct_tanh_new();
  if (!strcmp(L, "Sigmoid")) return ct_sigmoid_new();
  if (!strcmp(L, "Hardswish")) return ct_hardswish_new();
  if (!strcmp(L, "Hardsigmoid")) return ct_hardsigmoid_new();
  if (!strcmp(L, "SELU")) return ct_selu_new();
  if (!strcmp(L, "GELU")) return ct_gelu_new(pc_str(c, "approximate", NULL));
  if (!strcmp(L, "LeakyReLU")) return ct_leaky_relu_new(pc_float(c, "slope", 0.01));
  if (!strcmp(L, "ELU")) return ct_elu_new(pc_float(c, "alpha", 1.0));
  if (!strcmp(L, "CELU")) return ct_celu_new(pc_float(c, "alpha", 1.0));
  if (!strcmp(L, "Hardtanh")) return ct_hardtanh_new(pc_float(c, "min", -1.0), pc_float(c, "max", 1.0));
  if (!strcmp(L, "Softplus")) return ct_softplus_new(pc_float(c, "beta", 1.0), pc_float(c, "threshold", 20.0));
  if (!strcmp(L, "Softmax")) return ct_softmax_new(pc_int(c, "dim", -1));
  if (!strcmp(L, "LogSoftmax")) return ct_log_softmax_new(pc_int(c, "dim", -1));
  return NULL;
}

/* One forward of the case's module (MultiheadAttention takes its optional inputs by flags). */
static int forward(const pcase *c, ct_module *m, ct_tensor *const *x, int n_x, ct_tensor **out, int max_out) {
  if (!strcmp(pc_str(c, "layer", ""), "MultiheadAttention")) {
    bool cross = pc_int(c, "cross", 0) != 0, has_kpm = pc_int(c, "has_kpm", 0) != 0;
    int i = cross ? 3 : 1;
    const ct_tensor *q = x[0], *k = cross ? x[1] : x[0], *v = cross ? x[2] : x[0];
    const ct_tensor *kpm = has_kpm ? x[i] : NULL;
    if (has_kpm) i++;
    const ct_tensor *mask = pc_int(c, "has_mask", 0) ? x[i] : NULL;
    bool nw = pc_int(c, "need_weights", 0) != 0;
    ct_tensor *w = NULL;
    if (pc_int(c, "checkpoint", 0)) {
      /* checkpoint the self-attention forward (no masks in these cases) */
      out[0] = ct_checkpoint_module(m, q);
      return out[0] ? 1 : -1;
    }
    out[0] = ct_multihead_attention_forward(m, q, k, v, kpm, nw, mask, pc_int(c, "average", 1) != 0, nw ? &w : NULL);
    if (!out[0]) return -1;
    if (nw) {
      if (max_out < 2) {
        ct_release(w);
        return 1;
      }
      out[1] = w;
      return 2;
    }
    return 1;
  }
  if (n_x != 1) return -1;
  out[0] = pc_int(c, "checkpoint", 0) ? ct_checkpoint_module(m, x[0]) : ct_module_forward(m, x[0]);
  return out[0] ? 1 : -1;
}

PARITY_OP(module) {
  int n_x = (int)pc_int(c, "n_x", 1);
  if (n_x > n_in) return -1;
  ct_manual_seed(0);
  ct_module *m = build(c);
  if (!m) return -1;
  int n = 0;
  ct_dict *names = ct_dict_new();
  /* --device runs: buffers (BatchNorm's running stats) go where the inputs are, as .cuda() */
  if (parity_device().type != CT_DEVICE_CPU && ct_module_to_device(m, parity_device())) goto fail;
  if (!names || ct_module_named_parameters(m, names)) goto fail;
  if (n_in > n_x) {
    if (ct_dict_len(names) != n_in - n_x) {
      fprintf(stderr, "module runner: %lld parameters, %d parameter inputs\n", (long long)ct_dict_len(names), n_in - n_x);
      goto fail;
    }
    if (ct_module_to_dtype(m, ct_tensor_dtype(in[n_x]))) goto fail;
    for (int i = n_x; i < n_in; i++)
      if (ct_module_set_tensor(m, ct_dict_name(names, i - n_x), in[i])) goto fail;
  }
  int64_t steps[8];
  int n_steps = pc_ints(c, "steps", steps, 8);
  if (n_steps < 0) {
    steps[0] = pc_int(c, "train", 1);
    n_steps = 1;
  }
  for (int st = 0; st < n_steps; st++) {
    if (ct_module_train(m, steps[st] != 0)) goto fail;
    if (pc_has(c, "seed")) ct_manual_seed((uint64_t)(pc_int(c, "seed", 0) + st));
    int k = forward(c, m, in, n_x, out + n, PARITY_MAX_OUT - n);
    if (k < 0) goto fail;
    n += k;
  }
  if (pc_int(c, "buffers", 0)) {
    ct_dict *b = ct_dict_new();
    if (!b || ct_module_named_buffers(m, b)) {
      ct_dict_free(b);
      goto fail;
    }
    for (int64_t i = 0; i < ct_dict_len(b) && n < PARITY_MAX_OUT; i++) {
      ct_tensor *t = ct_dict_tensor(b, i);
      if (ct_dtype_is_floating(ct_tensor_dtype(t))) out[n++] = ct_clone(t);
    }
    ct_dict_free(b);
  }
  ct_dict_free(names);
  ct_module_free(m);
  return n;
fail:
  for (int i = 0; i < n; i++) {
    ct_release(out[i]);
    out[i] = NULL;
  }
  ct_dict_free(names);
  ct_module_free(m);
  return -1;
}

PARITY_OP(module_init) {
  ct_manual_seed((uint64_t)pc_int(c, "seed", 0));
  ct_module *m = build(c);
  if (!m) return -1;
  ct_dict *sd = ct_dict_new();
  int n = 0;
  if (sd && ct_module_state_dict(m, sd) == CT_OK)
    for (int64_t i = 0; i < ct_dict_len(sd) && n < PARITY_MAX_OUT; i++) out[n++] = ct_clone(ct_dict_tensor(sd, i));
  ct_dict_free(sd);
  ct_module_free(m);
  return n > 0 ? n : -1;
}
