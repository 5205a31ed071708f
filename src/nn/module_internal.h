/* Internals of src/nn: the module object and helpers shared by the layer files. */
#ifndef CT_NN_MODULE_INTERNAL_H
#define CT_NN_MODULE_INTERNAL_H
#include "../core/internal.h"
#include "ctorch/module.h"

typedef struct {
  char *name;
  ct_tensor *t; /* held (ct_hold) */
  bool persistent;
} ct_mod_tensor;

typedef struct {
  char *name;
  ct_module *m; /* one reference */
} ct_mod_child;

/* Hooks the built-in layers use beyond the public vtable. */
typedef struct {
  /* refuse a load_state_dict into this module (a merged LoRA layer), or NULL */
  ct_status (*pre_load)(ct_module *self);
  /* a missing key this module fills itself (BatchNorm's num_batches_tracked): true if name is one */
  bool (*optional_key)(const ct_module *self, const char *name);
} ct_mod_hooks;

struct ct_module {
  int64_t refcount;
  char *type_name;
  const ct_module_vtable *vt;
  const ct_mod_hooks *hooks; /* NULL for user modules */
  void *user;
  bool training;
  int n_params, cap_params;
  ct_mod_tensor *params;
  int n_buffers, cap_buffers;
  ct_mod_tensor *buffers;
  int n_children, cap_children;
  ct_mod_child *children;
};

/* Slot access for layers that registered their members in a known order. */
static inline ct_tensor *ct_mod_p(const ct_module *m, int i) { return i < m->n_params ? m->params[i].t : NULL; }
static inline ct_tensor *ct_mod_b(const ct_module *m, int i) { return i < m->n_buffers ? m->buffers[i].t : NULL; }
/* The slot of a named parameter, -1 if absent. */
int ct_mod_param_index(const ct_module *m, const char *name);

/* Makes a float32 (default dtype) parameter of the given shape, uninitialised, registered. */
ct_tensor *ct_mod_new_param(ct_module *m, const char *name, int ndim, const int64_t *shape);
/* Registers a tensor it creates (takes the caller's reference). */
ct_status ct_mod_add_buffer_owned(ct_module *m, const char *name, ct_tensor *t, bool persistent);

/* PyTorch's init functions (torch.nn.init), drawing from the default generator, no autograd. */
ct_status ct_init_kaiming_uniform_a(ct_tensor *w, double a);            /* fan_in, leaky_relu gain */
ct_status ct_init_fan_in_uniform(ct_tensor *b, const ct_tensor *w);     /* bias U(-1/sqrt(fan_in), ..) */
ct_status ct_init_xavier_uniform(ct_tensor *w, double gain);
/* _calculate_fan_in_and_fan_out */
ct_status ct_init_fans(const ct_tensor *w, int64_t *fan_in, int64_t *fan_out);

/* Conv configuration and its forward with explicit tensors (used by Conv layers and LoRA). */
typedef struct {
  int nd;                 /* 1 or 2 spatial dims */
  bool transposed;
  int64_t in_ch, out_ch, k[2], stride[2], padding[2], dilation[2], output_padding[2], groups;
  int pad_str;            /* 0 explicit padding, 1 "same", 2 "valid" */
  int mode;               /* 0 zeros, 1 reflect, 2 replicate, 3 circular */
  int64_t rpad[4];        /* PyTorch's _reversed_padding_repeated_twice (nd*2 entries) */
} ct_conv_cfg;
ct_tensor *ct_conv_apply(const ct_conv_cfg *c, const ct_tensor *x, const ct_tensor *w, const ct_tensor *b);
/* The layer's config if m is a (non-LoRA) Conv1d/Conv2d/ConvTranspose2d, else NULL. */
const ct_conv_cfg *ct_conv_cfg_of(const ct_module *m);
bool ct_module_is_linear(const ct_module *m);

/* Releases every non-NULL tensor of a list. */
void ct_mod_release_n(int n, ...);

#endif
