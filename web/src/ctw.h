/* Shared declarations of the JavaScript glue (web/src/ctw_*.c). */
#ifndef CTW_H
#define CTW_H
#include <emscripten.h>
#include <stdint.h>
#include "ctorch.h"
#include "ctorch/models.h"
#include "core/internal.h" /* ct_set_error: glue-level argument errors use ctorch's error slot */

#define API EMSCRIPTEN_KEEPALIVE
#define CTW_NARGS 512
#define CTW_NPTRS 1024
#define CTW_NSTR 4
#define CTW_STRLEN 4096

extern double ctw_A[CTW_NARGS];
extern ct_tensor *ctw_P[CTW_NPTRS];
extern char ctw_S[CTW_NSTR][CTW_STRLEN];

/* ctw_A[off .. off+n) as int64 */
void ctw_ints(int off, int n, int64_t *out);
/* a Python-like number: kind 0 bool, 1 int, 2 float (ct_scalar_kind) */
ct_scalar ctw_scalar(double v, int kind);
int ctw_fail(int kind, const char *msg);
ct_tensor *ctw_fail_null(int kind, const char *msg);
#define ct_set_error_public(k, m) ct_set_error((k), "%s", (m))
/* ctw_S[i], or NULL when its first byte is 0 (JS passes "" for None) */
static inline const char *ctw_s(int i) { return ctw_S[i][0] ? ctw_S[i] : NULL; }
#endif
