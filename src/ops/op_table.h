/* The op table: one entry per op, declared in src/ops/defs/<family>.def as
 *   CT_OP(id, family, n_in, n_out, cpu_kernel, backward, save, note)
 * - cpu_kernel: the CPU reference kernel (ct_no_kernel for ops composed from others or pure views)
 * - backward:   the derivative formula, written with public ops (ct_no_backward if not differentiable)
 * - save:       which inputs (CT_SAVE_IN(i)) and outputs (CT_SAVE_OUT(j)) the backward reads
 * - note:       one line for the coverage table in the README
 * Every call goes through the one door in dispatch.c (ct_dispatch): argument checks,
 * backend choice from the inputs' device, the kernel, and the autograd record. */
#ifndef CT_OP_TABLE_H
#define CT_OP_TABLE_H
#include "../core/internal.h"

#define CT_MAX_OP_IN 8
#define CT_MAX_OP_OUT 4
#define CT_MAX_ATTR_INTS 24

/* Attributes of one call. Each op documents (in its .def line or its source
 * file) which fields it uses; unused fields are zero. */
typedef struct {
  int64_t i[CT_MAX_ATTR_INTS]; /* dims, sizes, strides ... */
  int ni;
  double f[6];                 /* float params (alpha, eps, p, ...) */
  int64_t k[6];                /* small ints, flags and mode codes */
  ct_dtype dtype;              /* a dtype parameter (e.g. sum's dtype=) */
  ct_scalar s[2];              /* scalar operands that keep their kind */
  void *ptr;                   /* e.g. a generator */
} ct_attrs;

typedef struct ct_call {
  int op;
  int n_in, n_out;
  ct_tensor *in[CT_MAX_OP_IN];   /* borrowed */
  ct_tensor *out[CT_MAX_OP_OUT]; /* borrowed; allocated by the op before the door */
  ct_attrs a;
} ct_call;

struct ct_node;
typedef ct_status ct_kernel_fn_t(const ct_call *c);
typedef ct_kernel_fn_t *ct_kernel_fn;
/* gout[j]: gradient of output j (NULL = zero). gin[i]: set to a new reference for
 * each input i with ct_node_needs_grad(n, i); leave NULL for "zero". */
typedef ct_status ct_backward_fn_t(struct ct_node *n, ct_tensor *const *gout, ct_tensor **gin);
typedef ct_backward_fn_t *ct_backward_fn;

#define CT_SAVE_IN(i) (1u << (i))
#define CT_SAVE_OUT(j) (1u << (8 + (j)))
#define CT_SAVE_NONE 0u

typedef struct {
  const char *id;        /* "add" */
  const char *family;    /* "binary" */
  const char *grad_name; /* "AddBackward0" */
  int n_in, n_out;
  ct_kernel_fn cpu;
  ct_backward_fn backward;
  uint32_t save;
  const char *note;
} ct_op_info;

enum {
#define CT_OP(id, family, n_in, n_out, cpu, bw, save, note) CT_OP_##id,
#include "ops.def"
#undef CT_OP
  CT_OP_COUNT
};

extern ct_kernel_fn_t ct_no_kernel;
extern ct_backward_fn_t ct_no_backward;
const ct_op_info *ct_op_info_of(int op);

/* The one door: checks devices, runs the kernel of the inputs' backend, then
 * records the autograd node (if grad mode is on and an input requires grad). */
ct_status ct_dispatch(ct_call *c);
/* The two halves, for view ops (no kernel) and ops that run several kernels. */
ct_status ct_run_kernel(ct_call *c);
ct_status ct_record(ct_call *c);
/* Allocates c's n_out outputs (one shape, dtypes odt[j]) on the device of the first
 * input, runs the call through the door, and leaves them in c->out as new
 * references; on failure releases them and returns the error. */
ct_status ct_dispatch_alloc(ct_call *c, int nd, const int64_t *shape, const ct_dtype *odt);
/* The single-output form: returns the output, or NULL with the error set. */
ct_tensor *ct_dispatch_new(int op, int n_in, ct_tensor *const *in, int nd, const int64_t *shape, ct_dtype dt,
                           const ct_attrs *a);
/* Start a call. */
static inline ct_call ct_call_make(int op) {
  ct_call c;
  memset(&c, 0, sizeof c);
  c.op = op;
  return c;
}

#endif
