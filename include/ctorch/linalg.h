/* ctorch linalg ops: matrix products with PyTorch's shapes, dtypes and errors.
 * Operands of a product must share one dtype (PyTorch: "expected scalar type
 * Float but found Double"); integer products are exact (wrapping like C++),
 * float16/bfloat16 accumulate in float32. Bool is refused like PyTorch's CPU. */
#ifndef CTORCH_LINALG_H
#define CTORCH_LINALG_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

/* torch.matmul: 1-D.1-D dot, 2-D.1-D mv, 1-D.2-D, 2-D.2-D mm, batched with broadcast batch dims. */
ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b);
/* [M,K] @ [K,N] */
ct_tensor *ct_mm(const ct_tensor *a, const ct_tensor *b);
/* [B,M,K] @ [B,K,N] (no broadcasting) */
ct_tensor *ct_bmm(const ct_tensor *a, const ct_tensor *b);
/* [M,K] @ [K] */
ct_tensor *ct_mv(const ct_tensor *a, const ct_tensor *v);
/* 1-D . 1-D -> 0-dim */
ct_tensor *ct_dot(const ct_tensor *a, const ct_tensor *b);
/* beta * self + alpha * (m1 @ m2); self broadcasts to [M,N]. */
ct_tensor *ct_addmm(const ct_tensor *self, const ct_tensor *m1, const ct_tensor *m2, ct_scalar beta, ct_scalar alpha);
/* beta * self + alpha * (mat @ vec) */
ct_tensor *ct_addmv(const ct_tensor *self, const ct_tensor *mat, const ct_tensor *vec, ct_scalar beta, ct_scalar alpha);
/* beta * self + alpha * bmm(b1, b2) */
ct_tensor *ct_baddbmm(const ct_tensor *self, const ct_tensor *b1, const ct_tensor *b2, ct_scalar beta,
                      ct_scalar alpha);
/* out = a @ b written into an existing tensor (resized like PyTorch's out= when its shape differs). */
ct_status ct_matmul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* In place: self = beta * self + alpha * (m1 @ m2). */
ct_status ct_addmm_(ct_tensor *self, const ct_tensor *m1, const ct_tensor *m2, ct_scalar beta, ct_scalar alpha);
/* a[:, None] * b (promotes dtypes like mul). */
ct_tensor *ct_outer(const ct_tensor *a, const ct_tensor *b);
/* x @ w^T + b; bias may be NULL. w is [out, in] (or [in] for a 1-D weight). */
ct_tensor *ct_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias);
/* torch.einsum(equation, operands): subscripts [a-zA-Z], '...', implicit or explicit ('->') output. */
ct_tensor *ct_einsum(const char *equation, int n, const ct_tensor *const *operands);

#ifdef __cplusplus
}
#endif
#endif
