/* The graph-safe classifier step (include/ctorch/train.h). */
#include "ctorch/train.h"
#include "ctorch.h"
#include "../core/internal.h"
#include "../ops/loss_fused.h"

ct_tensor *ct_cross_entropy_unchecked(const ct_tensor *logits, const ct_tensor *target) {
  if (ct_check_tensor(logits, "cross_entropy") || ct_check_tensor(target, "cross_entropy")) return NULL;
  if (logits->ndim != 2 || !ct_dtype_is_floating(logits->dtype)) {
    ct_set_error(CT_ERR_VALUE, "cross_entropy_unchecked: expected floating logits of shape [N, C], got %d dims of %s",
                 logits->ndim, ct_dtype_torch_name(logits->dtype));
    return NULL;
  }
  if (target->dtype != CT_INT64 || target->ndim != 1) {
    ct_set_error(CT_ERR_RUNTIME, "cross_entropy_unchecked: expected int64 class indices of shape [N]");
    return NULL;
  }
  if (ct_size(logits, 0) != ct_size(target, 0)) {
    ct_set_error(CT_ERR_VALUE, "Expected input batch_size (%lld) to match target batch_size (%lld).",
                 (long long)ct_size(logits, 0), (long long)ct_size(target, 0));
    return NULL;
  }
  ct_clear_error();
  ct_tensor *fl = ct_cross_entropy_fused_unchecked(logits, target); /* WebGPU: 3 dispatches, no one-hot */
  if (fl || ct_last_status() != CT_OK) return fl;
  ct_tensor *oh = ct_one_hot_unchecked(target, ct_size(logits, 1), logits->dtype);
  ct_tensor *loss = oh ? ct_cross_entropy(logits, oh, NULL, CT_REDUCTION_MEAN, -100, 0.0) : NULL;
  ct_release(oh);
  return loss;
}

ct_status ct_classifier_train_step(ct_module *m, ct_optim *opt, const ct_tensor *x, const ct_tensor *y,
                                   bool set_to_none, bool step, ct_tensor **loss) {
  if (!m || !opt) return CT_ERR(CT_ERR_VALUE, "classifier_train_step: module and optimizer are required");
  ct_scope *sc = ct_scope_begin();
  ct_tensor *out = ct_module_forward(m, x);
  ct_tensor *l = out ? ct_cross_entropy_unchecked(out, y) : NULL;
  ct_status st = l ? ct_optim_zero_grad(opt, set_to_none) : ct_last_status();
  /* with the step: each large parameter's update beside the rest of the backward where the backend can */
  if (st == CT_OK) st = step ? ct_optim_backward_step(opt, l) : ct_backward(l, NULL, false, false);
  if (st == CT_OK && loss) {
    ct_release(*loss);
    *loss = ct_retain(l);
  }
  ct_scope_end(sc);
  return st;
}
