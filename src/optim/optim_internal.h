/* Shared between the optimizer, its two step paths and the schedulers. */
#ifndef CT_OPTIM_INTERNAL_H
#define CT_OPTIM_INTERNAL_H
#include "core/internal.h"
#include "ctorch/optim.h"

/* State slots per parameter; which key each slot holds depends on the kind. */
#define CT_OPTIM_NSLOT 4
enum { SLOT_STEP = 0 }; /* slot 0 is "step" for Adam, AdamW, RMSprop, Adagrad */

/* Scheduler-owned group entries ("initial_lr" ...), set when has_extra bit is on. */
enum { EX_INITIAL_LR = 0, EX_MAX_LR, EX_MIN_LR, EX_MAX_MOMENTUM, EX_BASE_MOMENTUM, EX_COUNT };

typedef struct {
  ct_tensor *t[CT_OPTIM_NSLOT]; /* owned; NULL where absent */
  bool init;                    /* state created (PyTorch's len(state) != 0) */
  bool early;                   /* updated during the backward (ct_optim_backward_step): the step skips it once */
} ct_pstate;

typedef struct {
  ct_optim_options o;
  double extra[EX_COUNT];
  unsigned has_extra; /* bit EX_* */
  int64_t n;
  ct_tensor **params; /* held */
  ct_pstate *st;
} ct_pgroup;

struct ct_optim {
  ct_optim_kind kind;
  ct_optim_options defaults;
  int n_groups, cap_groups;
  ct_pgroup *g;
  bool fused;
};

/* The state keys of a kind, by slot (NULL = unused slot). */
const char *const *ct_optim_slot_keys(ct_optim_kind kind);
/* Python's repr of a float for messages ("-1.0", "1e-05", "inf", "nan"). */
const char *ct_py_float(double v, char *buf, size_t n);

/* One parameter's update; p has a grad. Per-op reference path and fused loops. */
ct_status ct_optim_update_ref(ct_optim *opt, ct_pgroup *g, int64_t i);
/* Returns true if it handled the parameter, false if the reference path must. */
bool ct_optim_update_fused(ct_optim *opt, ct_pgroup *g, int64_t i);
/* A whole group at once (CUDA SGD: one multi-tensor launch): 1 done, 0 use the per-parameter
 * loop (nothing changed), -1 failed (the error is set). */
int ct_optim_group_fused(ct_optim *opt, ct_pgroup *g);
/* One parameter's update as soon as backward has made its gradient (ct_optim_backward_step), where the backend
 * runs it beside the rest of the backward: true if it did (CUDA SGD, large parameters), false to leave it to the
 * step. */
bool ct_optim_update_early(ct_optim *opt, ct_pgroup *g, int64_t i);
/* state['step'] += 1 on a 0-dim float32 (Adam, AdamW, Adagrad: float32 arithmetic,
 * as PyTorch's tensor step) or int64 (RMSprop) tensor; returns the new value. */
double ct_optim_bump_step(ct_tensor *step);
/* Creates the parameter's state like PyTorch's first step does. */
ct_status ct_optim_init_state(ct_optim *opt, ct_pgroup *g, int64_t i);

#endif
