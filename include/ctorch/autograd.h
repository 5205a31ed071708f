/* ctorch autograd: define-by-run graph recorded by every op while grad mode is on. */
#ifndef CTORCH_AUTOGRAD_H
#define CTORCH_AUTOGRAD_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

bool ct_requires_grad(const ct_tensor *t);
/* Only leaves can change their flag; only floating tensors can require grad. */
ct_status ct_requires_grad_(ct_tensor *t, bool requires_grad);
bool ct_is_leaf(const ct_tensor *t);
/* Borrowed pointer to .grad (NULL if none). */
ct_tensor *ct_grad(const ct_tensor *t);
/* Replace .grad (NULL clears it); the tensor keeps its own reference. */
ct_status ct_set_grad(ct_tensor *t, ct_tensor *grad);
/* Make a non-leaf keep its .grad after backward. */
ct_status ct_retain_grad(ct_tensor *t);
/* Name of the node that made t ("AddBackward0"), NULL for leaves. */
const char *ct_grad_fn_name(const ct_tensor *t);
/* A new handle sharing storage, cut from the graph. */
ct_tensor *ct_detach(const ct_tensor *t);
ct_status ct_detach_(ct_tensor *t);

/* t.backward(gradient, retain_graph, create_graph). gradient may be NULL for a
 * one-element t. Accumulates into .grad of the leaves (and retained non-leaves). */
ct_status ct_backward(ct_tensor *t, const ct_tensor *gradient, bool retain_graph, bool create_graph);
/* torch.autograd.backward for several roots; grads[i] may be NULL for scalars. */
ct_status ct_backward_many(int n, ct_tensor *const *roots, ct_tensor *const *grads, bool retain_graph,
                           bool create_graph);
/* torch.autograd.grad: returns new references into grads_out[n_inputs] (NULL
 * entries only if allow_unused). Does not touch .grad. */
ct_status ct_autograd_grad(int n_outputs, ct_tensor *const *outputs, ct_tensor *const *grad_outputs,
                           int n_inputs, ct_tensor *const *inputs, ct_tensor **grads_out, bool retain_graph,
                           bool create_graph, bool allow_unused);

/* Tensor hooks: called with the gradient flowing into t; may return a new
 * reference that replaces it, or NULL to keep it (an error is signalled by
 * setting ct status and returning NULL). */
typedef ct_tensor *(*ct_tensor_hook_fn)(ct_tensor *grad, void *user);
/* Returns a handle id >= 0 for ct_remove_hook, or -1 on error. */
int ct_register_hook(ct_tensor *t, ct_tensor_hook_fn fn, void *user);
ct_status ct_remove_hook(ct_tensor *t, int handle);

#ifdef __cplusplus
}
#endif
#endif
