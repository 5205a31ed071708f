/* Optimizers (torch.optim: SGD, Adam, AdamW, RMSprop, Adagrad), learning-rate
 * schedulers (torch.optim.lr_scheduler) and gradient clipping
 * (torch.nn.utils.clip_grad_norm_ / clip_grad_value_), with PyTorch 1.13's formulas.
 *
 * An optimizer works on arrays of leaf tensors (a model hands over its parameters as
 * an array). It holds a reference to each parameter and reads the parameter's data
 * and .grad afresh at every step, so a weight written from outside between steps
 * (ct_copy_ into it) is what the next step updates. A parameter whose .grad is NULL
 * is skipped: it stays bit-for-bit unchanged and gets no state.
 *
 * Two implementations of step give the same numbers: the reference path is written
 * with ctorch ops under no_grad, op for op like PyTorch's single-tensor code; the
 * fused path (the default) makes one pass over each parameter with the arithmetic in
 * plain C loops over contiguous float32/float64 data, rounding where the reference
 * ops round. Parameters the fused loops cannot take (other dtypes, non-contiguous
 * data or state) go through the reference path.
 *
 * Where C differs from PyTorch 1.13 on purpose: a parameter listed twice is refused
 * (PyTorch warns, then keeps one state for both); Adagrad makes the state of a group
 * added later when it arrives (PyTorch raises KeyError 'sum' at the next step); a
 * state switched on after the state was made (amsgrad, RMSprop momentum/centered)
 * starts at zeros (PyTorch raises KeyError); hyper-parameters of every group are
 * validated, not only the constructor's. CUDA parameters take the reference path.
 *
 * Optimizer state_dict, flattened into a ct_dict (PyTorch's nested dict, keys joined
 * with '.'; <g> is a group index, <i> the parameter's index over all groups in order):
 *   state.<i>.step             0-dim: float32 (Adam, AdamW, Adagrad) or int64 (RMSprop)
 *   state.<i>.exp_avg, state.<i>.exp_avg_sq, state.<i>.max_exp_avg_sq   (Adam, AdamW)
 *   state.<i>.momentum_buffer                                           (SGD, RMSprop)
 *   state.<i>.square_avg, state.<i>.grad_avg                            (RMSprop)
 *   state.<i>.sum                                                       (Adagrad)
 *   param_groups.<g>.lr, .momentum, .dampening, .eps, .weight_decay, .alpha, .lr_decay,
 *     .initial_accumulator_value                        0-dim float64 (those the kind has)
 *   param_groups.<g>.betas                              float64 [2] (Adam, AdamW)
 *   param_groups.<g>.nesterov, .amsgrad, .centered, .maximize     0-dim bool
 *   param_groups.<g>.initial_lr, .max_lr, .min_lr, .max_momentum, .base_momentum
 *                                                       0-dim float64, once a scheduler set them
 *   param_groups.<g>.params                             int64 [n]: the indices <i> of the group
 * and the metadata entry "optimizer" = "SGD" | "Adam" | "AdamW" | "RMSprop" | "Adagrad".
 * The tensors are copies (a snapshot), not the live state.
 *
 * Scheduler state_dict: "last_epoch", "_step_count" (0-dim int64), "base_lrs",
 * "_last_lr" (float64 [n_groups]) and the scheduler's own numbers under PyTorch's
 * attribute names ("gamma", "step_size", "T_max", "eta_min", "milestones", ...);
 * SequentialLR/ChainedScheduler nest their children as "_schedulers.<k>.<key>";
 * metadata "scheduler" = "StepLR" | ... The *_prefixed variants put a prefix before
 * every key (e.g. "optimizer.") so several state dicts share one checkpoint.
 */
#ifndef CTORCH_OPTIM_H
#define CTORCH_OPTIM_H
#include "core.h"
#include "dict.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CT_OPTIM_SGD = 0, CT_OPTIM_ADAM, CT_OPTIM_ADAMW, CT_OPTIM_RMSPROP, CT_OPTIM_ADAGRAD } ct_optim_kind;

/* Hyper-parameters of a parameter group; fields the optimizer does not use are ignored. */
typedef struct {
  double lr;
  double momentum;                  /* SGD, RMSprop */
  double dampening;                 /* SGD */
  bool nesterov;                    /* SGD */
  double beta1, beta2;              /* Adam, AdamW: betas */
  bool amsgrad;                     /* Adam, AdamW */
  double eps;                       /* Adam, AdamW, RMSprop, Adagrad */
  double weight_decay;              /* all (AdamW: decoupled, p *= 1 - lr*wd) */
  bool maximize;                    /* all */
  double alpha;                     /* RMSprop */
  bool centered;                    /* RMSprop */
  double lr_decay;                  /* Adagrad */
  double initial_accumulator_value; /* Adagrad */
} ct_optim_options;

typedef struct ct_optim ct_optim;

/* PyTorch's defaults for the kind (SGD's lr is required: NaN until set). */
ct_optim_options ct_optim_defaults(ct_optim_kind kind);
const char *ct_optim_kind_name(ct_optim_kind kind); /* "SGD", "Adam", ... */

/* A new optimizer over n_params leaf tensors as its first parameter group, with
 * `defaults` as the hyper-parameters (NULL: ct_optim_defaults(kind)). Errors worded
 * like PyTorch ("Invalid learning rate: -1.0", "optimizer got an empty parameter list"). */
ct_optim *ct_optim_new(ct_optim_kind kind, int64_t n_params, ct_tensor *const *params,
                       const ct_optim_options *defaults);
/* Shorthands with the other hyper-parameters at PyTorch's defaults. */
ct_optim *ct_optim_sgd(int64_t n, ct_tensor *const *params, double lr, double momentum, double weight_decay);
ct_optim *ct_optim_adam(int64_t n, ct_tensor *const *params, double lr);
ct_optim *ct_optim_adamw(int64_t n, ct_tensor *const *params, double lr, double weight_decay);
void ct_optim_free(ct_optim *opt); /* NULL-safe; releases the parameters and the state */

/* optimizer.add_param_group: opts NULL = the optimizer's defaults. A parameter may be
 * in only one group ("some parameters appear in more than one parameter group"). */
ct_status ct_optim_add_param_group(ct_optim *opt, int64_t n_params, ct_tensor *const *params,
                                   const ct_optim_options *opts);

/* optimizer.step(): one update of every parameter that has a .grad. */
ct_status ct_optim_step(ct_optim *opt);
/* loss.backward() then optimizer.step(), with the same values, where each parameter's update may start as soon as
 * the backward has made its final gradient (the optimizer in backward): on CUDA, large float32 SGD parameters
 * are updated on a second stream beside the rest of the backward. Opt-in: only with CT_OPTIM_OVERLAP=1 and a
 * fused optimizer (else the two calls; on the H200 the ResNet-18 step was slower with it, 1.357 vs 1.216 ms). ct_optim_early_updates: how many updates started early so far (tests). */
ct_status ct_optim_backward_step(ct_optim *opt, ct_tensor *loss);
int64_t ct_optim_early_updates(void);
/* optimizer.zero_grad(set_to_none). */
ct_status ct_optim_zero_grad(ct_optim *opt, bool set_to_none);
/* Fused multi-tensor loops (default true) or the per-op reference path. */
ct_status ct_optim_set_fused(ct_optim *opt, bool fused);
bool ct_optim_fused(const ct_optim *opt);

ct_optim_kind ct_optim_get_kind(const ct_optim *opt);
ct_optim_options ct_optim_get_defaults(const ct_optim *opt);
int ct_optim_num_groups(const ct_optim *opt);
int64_t ct_optim_group_size(const ct_optim *opt, int group);     /* -1 with error if out of range */
ct_tensor *ct_optim_group_param(const ct_optim *opt, int group, int64_t i); /* borrowed */
ct_status ct_optim_get_group(const ct_optim *opt, int group, ct_optim_options *out);
/* Replace a group's hyper-parameters (validated as at construction). */
ct_status ct_optim_set_group(ct_optim *opt, int group, const ct_optim_options *o);
double ct_optim_get_lr(const ct_optim *opt, int group); /* NaN with error if out of range */
ct_status ct_optim_set_lr(ct_optim *opt, int group, double lr);
/* A group entry by its state_dict name: "lr", "momentum", "beta1", "beta2", "eps",
 * "weight_decay", ..., and the scheduler entries "initial_lr", "max_lr", "min_lr",
 * "max_momentum", "base_momentum" (absent until set: error). Booleans read as 0/1. */
ct_status ct_optim_group_get(const ct_optim *opt, int group, const char *key, double *out);
ct_status ct_optim_group_set(ct_optim *opt, int group, const char *key, double value);
bool ct_optim_group_has(const ct_optim *opt, int group, const char *key);

/* Borrowed state tensor of a parameter ("step", "exp_avg", ...); NULL if none. */
ct_tensor *ct_optim_state(const ct_optim *opt, const ct_tensor *param, const char *key);

/* optimizer.state_dict() / load_state_dict(): see the format above. Loading checks
 * group counts and sizes (PyTorch's messages), every state tensor's shape against its
 * parameter, casts state to the parameter's dtype (not "step"), and changes nothing
 * on error. A resumed run continues bit-identically. */
ct_status ct_optim_state_dict(const ct_optim *opt, ct_dict *out);
ct_status ct_optim_load_state_dict(ct_optim *opt, const ct_dict *sd);
ct_status ct_optim_state_dict_prefixed(const ct_optim *opt, ct_dict *out, const char *prefix);
ct_status ct_optim_load_state_dict_prefixed(ct_optim *opt, const ct_dict *sd, const char *prefix);

/* ---- learning-rate schedulers ------------------------------------------------------
 * Each constructor performs PyTorch's initial step (last_epoch becomes 0 and the group
 * lrs get their epoch-0 values; "initial_lr" is set in every group if absent). The
 * scheduler borrows the optimizer, which must outlive it. */
typedef struct ct_sched ct_sched;

ct_sched *ct_sched_step_lr(ct_optim *opt, int64_t step_size, double gamma);
ct_sched *ct_sched_multistep_lr(ct_optim *opt, int n_milestones, const int64_t *milestones, double gamma);
ct_sched *ct_sched_exponential_lr(ct_optim *opt, double gamma);
ct_sched *ct_sched_cosine_annealing_lr(ct_optim *opt, int64_t T_max, double eta_min);
ct_sched *ct_sched_linear_lr(ct_optim *opt, double start_factor, double end_factor, int64_t total_iters);
ct_sched *ct_sched_constant_lr(ct_optim *opt, double factor, int64_t total_iters);
ct_sched *ct_sched_polynomial_lr(ct_optim *opt, int64_t total_iters, double power);
/* LambdaLR: lr = base_lr * fn(last_epoch, group, user). */
typedef double (*ct_lr_lambda_fn)(int64_t epoch, int group, void *user);
ct_sched *ct_sched_lambda_lr(ct_optim *opt, ct_lr_lambda_fn fn, void *user);

typedef struct {
  double max_lr;          /* used when max_lrs is NULL */
  const double *max_lrs;  /* one per group, or NULL */
  int64_t total_steps;    /* > 0, or 0 to use epochs * steps_per_epoch */
  int64_t epochs, steps_per_epoch;
  double pct_start;       /* 0.3 */
  const char *anneal_strategy; /* "cos" (default, NULL) or "linear" */
  bool cycle_momentum;    /* true: cycles SGD/RMSprop momentum or Adam/AdamW beta1 */
  double base_momentum, max_momentum; /* 0.85, 0.95 */
  double div_factor, final_div_factor; /* 25, 1e4 */
  bool three_phase;
} ct_onecycle_options;
ct_onecycle_options ct_onecycle_defaults(double max_lr, int64_t total_steps);
ct_sched *ct_sched_onecycle_lr(ct_optim *opt, const ct_onecycle_options *o);

/* SequentialLR(opt, schedulers, milestones): takes ownership of the n schedulers on
 * success (ct_sched_free frees them); on failure the caller still owns them. */
ct_sched *ct_sched_sequential_lr(ct_optim *opt, int n, ct_sched *const *schedulers, const int64_t *milestones);
/* ChainedScheduler(schedulers): steps all of them each step; owns them on success. */
ct_sched *ct_sched_chained(int n, ct_sched *const *schedulers);

void ct_sched_free(ct_sched *s);
ct_status ct_sched_step(ct_sched *s);
/* get_last_lr(): writes min(n, groups) values; returns the group count (-1 on error). */
int ct_sched_get_last_lr(const ct_sched *s, double *lrs, int n);
int64_t ct_sched_last_epoch(const ct_sched *s);
const char *ct_sched_name(const ct_sched *s); /* "StepLR", ... */
ct_status ct_sched_state_dict(const ct_sched *s, ct_dict *out);
ct_status ct_sched_load_state_dict(ct_sched *s, const ct_dict *sd);
ct_status ct_sched_state_dict_prefixed(const ct_sched *s, ct_dict *out, const char *prefix);
ct_status ct_sched_load_state_dict_prefixed(ct_sched *s, const ct_dict *sd, const char *prefix);

/* ---- gradient clipping -------------------------------------------------------------- */
/* torch.nn.utils.clip_grad_norm_: the total norm of all .grads (as one vector) as a new
 * 0-dim tensor (float32 0 if no parameter has a grad); grads are scaled in place by
 * clamp(max_norm / (total_norm + 1e-6), max=1). norm_type may be INFINITY. */
ct_tensor *ct_clip_grad_norm_(int64_t n, ct_tensor *const *params, double max_norm, double norm_type,
                              bool error_if_nonfinite);
/* torch.nn.utils.clip_grad_value_: clamp every .grad to [-clip_value, clip_value]. */
ct_status ct_clip_grad_value_(int64_t n, ct_tensor *const *params, double clip_value);

#ifdef __cplusplus
}
#endif
#endif
