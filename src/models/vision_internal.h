/* Helpers shared by the vision models (mlp.c, cnn.c, resnet.c, vit.c). */
#ifndef CT_MODELS_VISION_INTERNAL_H
#define CT_MODELS_VISION_INTERNAL_H
#include "core/internal.h"
#include "ctorch/vision.h"

/* Registers child under name; a NULL child (a failed constructor) keeps its error. */
ct_status vm_add(ct_module *m, const char *name, ct_module *child);
/* A module whose user pointer is a malloc'ed copy of cfg (freed with the module). */
ct_module *vm_new(const char *type, const ct_module_vtable *vt, const void *cfg, size_t size);
void vm_free_user(void *p);
/* torch.nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu") */
ct_status vm_kaiming_normal_fan_out(ct_tensor *w);
/* torch.nn.init.trunc_normal_(t, mean, std, a, b) (PyTorch 1.13's / timm's algorithm) */
ct_status vm_trunc_normal(ct_tensor *t, double mean, double std, double a, double b);
/* t.normal_(mean, std) / t.zero_() without autograd */
ct_status vm_normal(ct_tensor *t, double mean, double std);
ct_status vm_zero(ct_tensor *t);
/* Checks a model input: a floating [N, C, H, W] tensor. */
ct_status vm_check_image(const ct_tensor *x, const char *model, int64_t channels);
/* Consumes a (new reference) and returns f(a), releasing a; NULL-safe. */
ct_tensor *vm_then(ct_tensor *a, ct_tensor *(*f)(const ct_tensor *));
/* The same with a module: consumes a, returns m's forward of it (activations die as soon as the
 * next layer has read them, unless autograd saved them); NULL-safe. */
ct_tensor *vm_forward_then(ct_module *m, ct_tensor *a);

#endif
