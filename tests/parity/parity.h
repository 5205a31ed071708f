/* The parity harness's interface for op runners.
 *
 * Fixtures come from tests/parity/gen_fixtures.py (PyTorch 1.13 as the reference),
 * which collects CASES from every tests/parity/cases_<family>.py. For each case the
 * C harness builds the inputs (same values, dtype, requires_grad and layout), calls
 * the runner registered for the case's op, and compares outputs, gradients
 * (backward with the fixture's grad_outputs), optional double-backward values, and a
 * float64 finite-difference check, at the case's tolerances.
 *
 * A runner: PARITY_OP(add) { out[0] = ct_add(in[0], in[1]); return 1; }
 * returns the number of outputs it set (<= PARITY_MAX_OUT) or -1 on error (the
 * harness then checks the case's expected error substring, if any).
 *
 * Contract details (tests/parity/harness.c):
 * - out[k] are new references; the harness releases them. The runner runs inside a
 *   ct_scope, and the harness fails a case whose handles outlive it (ct_live_tensors).
 * - in[] are leaves built with the fixture's values, dtype, layout ("transposed":
 *   storage allocated with reversed dims and permuted back; "strided": last dim
 *   allocated doubled and sliced ::2) and requires_grad. Runners must not keep them.
 * - For fd=True cases the runner is called again on float64 copies of the floating
 *   inputs (and under no_grad on perturbed copies), so it must not assume a dtype.
 * - Outputs are compared in shape, dtype (exactly PyTorch's), requires_grad and values;
 *   with check_strides=True (cases_*.py) also strides, storage offset and storage sharing.
 *
 * Run: tests/parity/run.sh build/<you> [case-name-substring]; -v on test_parity lists
 * every passing case. Fixture format: the top of tests/parity/gen_fixtures.py. */
#ifndef CT_PARITY_H
#define CT_PARITY_H
#include "ctorch.h"

#define PARITY_MAX_IN 8
#define PARITY_MAX_OUT 4

typedef struct pcase pcase;
typedef int (*parity_runner)(const pcase *c, ct_tensor *const *in, int n_in, ct_tensor **out);

void parity_register(const char *op, parity_runner fn);
#define PARITY_OP(name)                                                              \
  static int parity_run_##name(const pcase *c, ct_tensor *const *in, int n_in, ct_tensor **out); \
  __attribute__((constructor)) static void parity_reg_##name(void) {                 \
    parity_register(#name, parity_run_##name);                                       \
  }                                                                                  \
  static int parity_run_##name(const pcase *c, ct_tensor *const *in, int n_in, ct_tensor **out)

/* The case's attributes (from the Python case's attrs dict). */
bool pc_has(const pcase *c, const char *key);
int64_t pc_int(const pcase *c, const char *key, int64_t dflt);
double pc_float(const pcase *c, const char *key, double dflt);
/* NULL if absent and dflt is NULL. "None" in Python arrives as absent. */
const char *pc_str(const pcase *c, const char *key, const char *dflt);
/* A list of ints ("dims": [0, 2]); returns the count, or -1 if absent. */
int pc_ints(const pcase *c, const char *key, int64_t *out, int max);
int pc_floats(const pcase *c, const char *key, double *out, int max);
/* Scalars keep their Python kind: int, float or bool. */
ct_scalar pc_scalar(const pcase *c, const char *key, ct_scalar dflt);
/* dtype attribute by name ("float32", "int64", ...); -1 if absent. */
int pc_dtype(const pcase *c, const char *key);
const char *pc_name(const pcase *c);
/* The device this run builds its inputs on (--device; CPU by default): runners that make
 * tensors or modules of their own put them there too. */
ct_device parity_device(void);

#endif
