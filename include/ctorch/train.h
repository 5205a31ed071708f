/* One classifier training step, written once for every caller that replays it as a CUDA graph
 * (tools/cmd_train_cnn.c --cuda-graph, bench/bench_cuda_gpt.c resnet, tests/c/test_cuda.c):
 * every op stays on the tensors' device and nothing is read back to the host, so
 * ct_cuda_graph_capture can record it. */
#ifndef CTORCH_TRAIN_H
#define CTORCH_TRAIN_H
#include "ctorch/core.h"
#include "ctorch/module.h"
#include "ctorch/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Mean cross-entropy of logits [N, C] (floating) against int64 class indices [N], device ops only
 * (cross_entropy against ct_one_hot_unchecked's class probabilities; ct_cross_entropy with class
 * indices checks them on the host, which a capture cannot record). The targets are NOT checked:
 * one outside [0, C) contributes a zero row (check targets where they are loaded). */
ct_tensor *ct_cross_entropy_unchecked(const ct_tensor *logits, const ct_tensor *target);

/* out = m(x); loss = ct_cross_entropy_unchecked(out, y); opt.zero_grad(set_to_none); loss.backward();
 * then opt.step() when `step` (false: the caller steps outside, e.g. outside a graph). *loss, when
 * loss is not NULL, is released and replaced by a new reference to this step's loss (on failure it
 * is left unchanged). Every tensor the step makes is released before it returns. */
ct_status ct_classifier_train_step(ct_module *m, ct_optim *opt, const ct_tensor *x, const ct_tensor *y,
                                   bool set_to_none, bool step, ct_tensor **loss);

#ifdef __cplusplus
}
#endif
#endif
