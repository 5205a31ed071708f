/* ctorch modules: torch.nn.Module in C.
 *
 * A module has a type name ("Linear"), named parameters (leaf tensors requiring grad),
 * named buffers (running_mean, num_batches_tracked, ...), named children and a training
 * flag. Names follow PyTorch exactly, so state_dict keys read `layer1.0.conv1.weight`
 * (`0.weight` inside a Sequential) and load into / from PyTorch checkpoints unchanged.
 *
 * Ownership: a constructor returns a module the caller owns (free it with ct_module_free).
 * Registering a child (ct_module_register_module, container appends, LoRA wrapping) hands
 * the caller's reference to the parent, always, even when the call fails (the child is then
 * freed), so code can chain constructors without leak checks. Modules are refcounted:
 * ct_module_retain lets one module appear in two places (PyTorch's shared modules).
 * Parameters and buffers are tensors the module holds; accessors return borrowed pointers.
 *
 * Layers take PyTorch's constructor arguments and draw their default initialisation from
 * the default generator exactly as PyTorch 1.13 does, so after ct_manual_seed(s) a layer's
 * weights are bit-identical to torch.manual_seed(s); nn.<Layer>(...).
 *
 * Writing a module in C: fill a ct_module_vtable (forward and/or forward_n, an optional
 * destroy for the user pointer) and call ct_module_new; register parameters, buffers and
 * children; read them in forward with ct_module_param / ct_module_child. */
#ifndef CTORCH_MODULE_H
#define CTORCH_MODULE_H
#include "core.h"
#include "dict.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_module ct_module;

/* ---- the module object --------------------------------------------------------- */
typedef struct ct_module_vtable {
  /* y = forward(x): a new reference, or NULL with the error set. */
  ct_tensor *(*forward)(ct_module *self, const ct_tensor *x);
  /* Several inputs/outputs: sets out[0..n) (new references, n <= max_out) and returns n,
   * or -1 on error. Inputs may be NULL where the module documents optional ones. */
  int (*forward_n)(ct_module *self, int n_in, const ct_tensor *const *in, int max_out, ct_tensor **out);
  /* Frees the user pointer (called once, when the last reference goes). */
  void (*destroy)(void *user);
  /* Called after the training flag of this module changed (optional). */
  ct_status (*on_train)(ct_module *self, bool training);
} ct_module_vtable;

/* A module of your own: type_name is copied; vt must outlive the module. */
ct_module *ct_module_new(const char *type_name, const ct_module_vtable *vt, void *user);
ct_module *ct_module_retain(ct_module *m); /* returns m; NULL-safe */
void ct_module_free(ct_module *m);         /* drops one reference; NULL-safe */
const char *ct_module_type_name(const ct_module *m);
void *ct_module_user(const ct_module *m);

/* Registration (PyTorch's register_parameter / register_buffer / add_module). Names may not
 * be empty or contain "."; a name already used by another kind of member is refused
 * ("attribute 'weight' already exists"), re-registering the same kind replaces it.
 * A parameter must be a floating leaf; it is set to require grad (nn.Parameter does that). */
ct_status ct_module_register_parameter(ct_module *m, const char *name, ct_tensor *t);
/* Buffers: persistent ones appear in state_dict. */
ct_status ct_module_register_buffer(ct_module *m, const char *name, ct_tensor *t, bool persistent);
/* Takes the caller's reference to child (see Ownership above). */
ct_status ct_module_register_module(ct_module *m, const char *name, ct_module *child);

/* Lookups by dotted path ("layer1.0.conv1.weight"); borrowed, NULL (no error set) if absent. */
ct_tensor *ct_module_param(const ct_module *m, const char *path);
ct_tensor *ct_module_buffer(const ct_module *m, const char *path);
ct_module *ct_module_child(const ct_module *m, const char *path);
/* Replaces the tensor object of an existing parameter or buffer (torch.func.functional_call's
 * view, or weight tying): the module now holds t itself (same shape required, any dtype). */
ct_status ct_module_set_tensor(ct_module *m, const char *path, ct_tensor *t);
/* Direct children in registration order. */
int ct_module_num_children(const ct_module *m);
const char *ct_module_child_name(const ct_module *m, int i);
ct_module *ct_module_child_at(const ct_module *m, int i);

/* ---- running it ------------------------------------------------------------------ */
ct_tensor *ct_module_forward(ct_module *m, const ct_tensor *x);
/* Returns the number of outputs written to out (<= max_out), or -1. */
int ct_module_forward_n(ct_module *m, int n_in, const ct_tensor *const *in, int max_out, ct_tensor **out);
/* Module.train(mode) / eval(), recursive. */
ct_status ct_module_train(ct_module *m, bool training);
ct_status ct_module_eval(ct_module *m);
bool ct_module_is_training(const ct_module *m);

/* ---- parameters and state ---------------------------------------------------------- */
/* named_parameters / named_buffers: the tensors themselves (dict holds references), each
 * tensor once (a tied parameter keeps its first name), modules pre-order like PyTorch. */
ct_status ct_module_named_parameters(const ct_module *m, ct_dict *out);
ct_status ct_module_named_buffers(const ct_module *m, ct_dict *out);
/* state_dict: parameters then persistent buffers of each module, pre-order, every name (tied
 * tensors appear under each name), values detached and sharing storage like PyTorch's. */
ct_status ct_module_state_dict(const ct_module *m, ct_dict *out);

/* Keys a non-strict load found missing / unexpected (PyTorch's _IncompatibleKeys). */
typedef struct {
  int n_missing, n_unexpected;
  char **missing, **unexpected;
} ct_load_result;
void ct_load_result_free(ct_load_result *r); /* frees the lists (not r); NULL-safe */
/* load_state_dict(sd, strict): copies values in place without autograd (dtype converted),
 * so tensors held elsewhere (optimizers) see the new values. Errors in PyTorch's words:
 * "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\". "
 * ..., size mismatches are errors even when not strict. Nothing is copied unless the whole
 * load is valid. A missing num_batches_tracked of a BatchNorm is set to 0 without complaint
 * (PyTorch does that for state_dicts without version metadata, e.g. safetensors files). */
ct_status ct_module_load_state_dict(ct_module *m, const ct_dict *sd, bool strict);
/* Same, also reporting the missing / unexpected keys (res may be NULL). */
ct_status ct_module_load_state_dict_ex(ct_module *m, const ct_dict *sd, bool strict, ct_load_result *res);

/* zero_grad(set_to_none): PyTorch 1.13's default is set_to_none=False (grads zeroed in place). */
ct_status ct_module_zero_grad(ct_module *m, bool set_to_none);
/* Module.requires_grad_(flag): freeze or unfreeze every parameter. */
ct_status ct_module_requires_grad_(ct_module *m, bool requires_grad);
/* Number of parameter elements (each tensor once); only_trainable counts requires_grad ones. */
int64_t ct_module_num_parameters(const ct_module *m, bool only_trainable);
/* Module.to(dtype): floating parameters and buffers converted (new tensors with the same
 * requires_grad; integer buffers such as num_batches_tracked kept). Do it before handing
 * parameters to an optimizer. */
ct_status ct_module_to_dtype(ct_module *m, ct_dtype dt);
/* Module.to(device): every parameter and buffer moved (new tensors, dtypes and
 * requires_grad kept, gradients not carried; tied tensors stay tied). An error, before
 * anything moves, where the device is not available. Do it before making the optimizer. */
ct_status ct_module_to_device(ct_module *m, ct_device dev);

/* ---- containers -------------------------------------------------------------------- */
/* nn.Sequential(*mods): children "0", "1", ...; forward chains them. Takes the references. */
ct_module *ct_sequential_new(int n, ct_module *const *mods);
ct_status ct_sequential_append(ct_module *seq, ct_module *mod);
/* nn.ModuleList: no forward of its own. */
ct_module *ct_module_list_new(void);
ct_status ct_module_list_append(ct_module *list, ct_module *mod);
/* Sequential / ModuleList item i (negative counts from the end); borrowed. */
ct_module *ct_module_list_get(const ct_module *list, int64_t i);
int64_t ct_module_list_len(const ct_module *list);
/* nn.ModuleDict: children by name in insertion order; set replaces an existing entry. */
ct_module *ct_module_dict_new(void);
ct_status ct_module_dict_set(ct_module *d, const char *name, ct_module *mod);
ct_module *ct_module_dict_get(const ct_module *d, const char *name); /* KeyError if absent */

/* ---- layers ------------------------------------------------------------------------ */
/* nn.Linear(in, out, bias): weight [out, in] kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(in), ..). */
ct_module *ct_linear_new(int64_t in_features, int64_t out_features, bool bias);

/* Convolution options (PyTorch's keyword arguments). Arrays hold (h, w); Conv1d uses [0]. */
typedef struct {
  int64_t stride[2], padding[2], dilation[2];
  int64_t output_padding[2]; /* ConvTranspose2d only */
  const char *padding_str;   /* NULL, "same" or "valid": used instead of padding (Conv1d/2d) */
  int64_t groups;
  bool bias;
  const char *padding_mode;  /* NULL or "zeros", "reflect", "replicate", "circular" */
} ct_conv_opts;
ct_conv_opts ct_conv_defaults(void); /* stride 1, padding 0, dilation 1, groups 1, bias, zeros */
ct_module *ct_conv1d_new(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const ct_conv_opts *o);
ct_module *ct_conv2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw, const ct_conv_opts *o);
/* nn.ConvTranspose2d: weight [in, out/groups, kh, kw]; padding_mode must be zeros. */
ct_module *ct_conv_transpose2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                                   const ct_conv_opts *o);

/* momentum = CT_MOMENTUM_NONE gives PyTorch's momentum=None (cumulative moving average). */
#define CT_MOMENTUM_NONE (-1.0)
/* nn.BatchNorm1d/2d(num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True). */
ct_module *ct_batch_norm1d_new(int64_t num_features, double eps, double momentum, bool affine,
                               bool track_running_stats);
ct_module *ct_batch_norm2d_new(int64_t num_features, double eps, double momentum, bool affine,
                               bool track_running_stats);
/* nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True). */
ct_module *ct_layer_norm_new(int n, const int64_t *normalized_shape, double eps, bool elementwise_affine);
/* nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True). */
ct_module *ct_group_norm_new(int64_t num_groups, int64_t num_channels, double eps, bool affine);
/* nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True) of PyTorch 2.x; eps < 0 = None
 * (finfo(x.dtype).eps at run time). */
ct_module *ct_rms_norm_new(int n, const int64_t *normalized_shape, double eps, bool elementwise_affine);
/* nn.Dropout(p): masks from the default generator while training. */
ct_module *ct_dropout_new(double p);
/* nn.Embedding(num_embeddings, embedding_dim, padding_idx=None): weight ~ N(0, 1), padding row 0. */
ct_module *ct_embedding_new(int64_t num_embeddings, int64_t embedding_dim, const int64_t *padding_idx);
/* nn.MaxPool2d / AvgPool2d / AdaptiveAvgPool2d; arrays of 2, stride NULL = kernel_size. */
ct_module *ct_max_pool2d_new(const int64_t *kernel_size, const int64_t *stride, const int64_t *padding,
                             const int64_t *dilation, bool ceil_mode);
ct_module *ct_avg_pool2d_new(const int64_t *kernel_size, const int64_t *stride, const int64_t *padding, bool ceil_mode,
                             bool count_include_pad, int64_t divisor_override /* 0 = None */);
ct_module *ct_adaptive_avg_pool2d_new(const int64_t *output_size /* 2; -1 = None */);
/* nn.Flatten(start_dim=1, end_dim=-1), nn.Identity. */
ct_module *ct_flatten_new(int64_t start_dim, int64_t end_dim);
ct_module *ct_identity_new(void);

/* nn.MultiheadAttention(embed_dim, num_heads, dropout=0, bias=True, batch_first=False) with
 * PyTorch's parameters in_proj_weight [3E, E], in_proj_bias [3E], out_proj.weight, out_proj.bias
 * (kdim = vdim = embed_dim, no bias_kv, no zero_attn). */
ct_module *ct_multihead_attention_new(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                                      bool batch_first);
/* forward(query, key, value, key_padding_mask=NULL, need_weights, attn_mask=NULL,
 * average_attn_weights): masks are bool (True = masked out) or float (added); attn_weights
 * (may be NULL) receives the weights when need_weights, else NULL.
 * ct_module_forward(m, x) is self-attention without weights; ct_module_forward_n takes
 * (query, key, value[, key_padding_mask[, attn_mask]]) and returns (output, averaged weights). */
ct_tensor *ct_multihead_attention_forward(ct_module *m, const ct_tensor *query, const ct_tensor *key,
                                          const ct_tensor *value, const ct_tensor *key_padding_mask,
                                          bool need_weights, const ct_tensor *attn_mask, bool average_attn_weights,
                                          ct_tensor **attn_weights);

/* Activations as modules. */
ct_module *ct_relu_new(void);
ct_module *ct_relu6_new(void);
ct_module *ct_gelu_new(const char *approximate /* NULL or "none", "tanh" */);
ct_module *ct_silu_new(void);
ct_module *ct_mish_new(void);
ct_module *ct_tanh_new(void);
ct_module *ct_sigmoid_new(void);
ct_module *ct_hardswish_new(void);
ct_module *ct_hardsigmoid_new(void);
ct_module *ct_selu_new(void);
ct_module *ct_leaky_relu_new(double negative_slope /* 0.01 */);
ct_module *ct_elu_new(double alpha /* 1.0 */);
ct_module *ct_celu_new(double alpha /* 1.0 */);
ct_module *ct_hardtanh_new(double min_val, double max_val);
ct_module *ct_softplus_new(double beta, double threshold);
ct_module *ct_softmax_new(int64_t dim);
ct_module *ct_log_softmax_new(int64_t dim);

/* ---- LoRA ------------------------------------------------------------------------------ */
/* Wraps a Linear or Conv2d (takes the reference to base): y = base(x) + B(A(dropout(x))) * alpha/r.
 * State_dict names (the layout of peft's saved adapters, base names unchanged so a base
 * checkpoint still loads): "weight", "bias" (the frozen base), "lora_A.weight" [r, in] (or
 * [r, in, kh, kw]: a conv with the base's kernel, stride, padding, dilation and padding mode),
 * "lora_B.weight" [out, r] (or [out, r, 1, 1]). lora_A is kaiming_uniform_(a=sqrt(5)) like peft,
 * lora_B zeros, so a fresh wrapper computes exactly the base layer. Grouped convolutions are
 * refused. */
ct_module *ct_lora_linear_new(ct_module *base, int64_t r, double alpha, double dropout);
ct_module *ct_lora_conv2d_new(ct_module *base, int64_t r, double alpha, double dropout);
/* Merge W += (B @ A) * alpha/r (and unmerge) in place, for m itself or every LoRA layer below it.
 * Refused: merging a merged layer, unmerging an unmerged one, merging in training mode with
 * dropout > 0 (the merged layer could not drop the LoRA path), and a forward in that state. */
ct_status ct_lora_merge(ct_module *m);
ct_status ct_lora_unmerge(ct_module *m);
bool ct_lora_is_merged(const ct_module *m);
/* peft's get_peft_model: wraps every Linear / Conv2d whose dotted name equals a target or ends
 * with "." + target, then freezes every parameter except the LoRA ones. *n_wrapped may be NULL. */
ct_status ct_lora_inject(ct_module *root, int n_targets, const char *const *targets, int64_t r, double alpha,
                         double dropout, int *n_wrapped);

/* ---- activation checkpointing -------------------------------------------------------- */
/* The segment: reads in[0..n_in), writes n_out new references to out. Must be deterministic
 * given the default generator's state (dropout may draw from it: it replays). */
typedef ct_status (*ct_checkpoint_fn)(void *user, int n_in, ct_tensor *const *in, int n_out, ct_tensor **out);
/* torch.utils.checkpoint: runs fn keeping none of its intermediate tensors; backward runs it
 * again under the default generator's saved state and differentiates that. Gradients reach
 * the inputs and every tensor requiring grad fn uses (module parameters), equal to the ones
 * without checkpointing; works with ct_backward and ct_autograd_grad (not create_graph).
 * An input modified in place before backward is refused with PyTorch's message.
 * n_out <= 4. Without grad mode this is just fn. user must stay valid until the outputs' graph
 * is freed (backward may call fn again). */
ct_status ct_checkpoint(ct_checkpoint_fn fn, void *user, int n_inputs, ct_tensor *const *inputs, int n_outputs,
                        ct_tensor **outputs);
/* ct_module_forward(m, x) checkpointed (the graph keeps a reference to m). */
ct_tensor *ct_checkpoint_module(ct_module *m, const ct_tensor *x);

#ifdef __cplusplus
}
#endif
#endif
