/* ReLU's backward from its saved output: y <= 0 ? 0 : grad, as PyTorch's threshold_backward(grad, result, 0)
 * (a NaN passes the gradient). y <= 0 exactly where x <= 0 (relu(NaN) = NaN), so saving the output gives the input's
 * gradient; and the output is what the next layer (a convolution) saves anyway, where the input
 * (a batch_norm or add result) would otherwise stay alive only for this backward.
 * Float32 on the CPU without a graph to record runs one vectorisable select loop over contiguous
 * memory; everything else (other dtypes and devices, strided gradients, create_graph) goes through the
 * generic derivative op unary_deriv, whose node gives the double backward. */
#include "pointwise.h"

#include "../backend/cpu/simd/simd.h"
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef struct {
  const float *g, *y;
  float *o;
  ct_simd_isa isa;
} relu_bw_ctx;

/* o = y <= 0 ? 0 : g without branches (the sign of y is random: a branch mispredicts half the time) */
static void relu_bw_portable(const float *restrict g, const float *restrict y, float *restrict o, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t gb;
    memcpy(&gb, &g[i], 4);
    gb &= (uint32_t)0 - (uint32_t)!(y[i] <= 0.0f);
    memcpy(&o[i], &gb, 4);
  }
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) static void relu_bw_avx2(const float *g, const float *y, float *o, int64_t n) {
  int64_t i = 0;
  const __m256 z = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i, _mm256_and_ps(_mm256_loadu_ps(g + i), _mm256_cmp_ps(_mm256_loadu_ps(y + i), z, _CMP_NLE_UQ)));
  relu_bw_portable(g + i, y + i, o + i, n - i);
}
__attribute__((target("avx512f"))) static void relu_bw_avx512(const float *g, const float *y, float *o, int64_t n) {
  int64_t i = 0;
  const __m512 z = _mm512_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    __mmask16 m = _mm512_cmp_ps_mask(_mm512_loadu_ps(y + i), z, _CMP_NLE_UQ);
    _mm512_storeu_ps(o + i, _mm512_maskz_mov_ps(m, _mm512_loadu_ps(g + i)));
  }
  relu_bw_portable(g + i, y + i, o + i, n - i);
}
#endif

static void relu_bw_range(void *vctx, int64_t begin, int64_t end) {
  const relu_bw_ctx *c = vctx;
  const float *g = c->g + begin, *y = c->y + begin;
  float *o = c->o + begin;
#if defined(__x86_64__)
  if (c->isa == CT_SIMD_AVX512) return relu_bw_avx512(g, y, o, end - begin);
  if (c->isa == CT_SIMD_AVX2) return relu_bw_avx2(g, y, o, end - begin);
#endif
  relu_bw_portable(g, y, o, end - begin);
}

static bool fast_ok(const ct_tensor *g, const ct_tensor *y, bool any_g_layout) {
  if (!ct_fast_enabled()) return false; /* CT_REFERENCE_KERNELS=1: the generic op (and a test's reference) */
  if (g->storage->device.type != CT_DEVICE_CPU || y->storage->device.type != CT_DEVICE_CPU) return false;
  if (g->dtype != CT_FLOAT32 || y->dtype != CT_FLOAT32 || g->ndim != y->ndim) return false;
  for (int i = 0; i < g->ndim; i++)
    if (g->shape[i] != y->shape[i]) return false;
  if ((!any_g_layout && !ct_is_contiguous(g)) || !ct_is_contiguous(y) || !g->storage->data || !y->storage->data)
    return false;
  /* with create_graph the result needs its node (unary_deriv) for a double backward */
  return !(ct_is_grad_enabled() && (ct_tensor_requires_grad(g) || ct_tensor_requires_grad(y)));
}

ct_status ct_bw_relu(ct_node *n, ct_tensor *const *g, ct_tensor **gin) {
  ct_tensor *y = ct_node_saved_out(n, 0);
  if (!y) return ct_last_status();
  const ct_tensor *G = g[0];
  ct_tensor *gc = NULL;
  /* a strided or expanded gradient (a mean's backward: ResNet's last ReLU before the average pool)
   * is made contiguous first: one copy is cheaper than the generic broadcasting op */
  if (!fast_ok(G, y, false) && fast_ok(G, y, true)) {
    if (!(gc = ct_contiguous(G))) return ct_last_status();
    G = gc;
  }
  if (fast_ok(G, y, false)) {
    ct_tensor *o = ct_empty(G->ndim, G->shape, ct_opts_dtype(CT_FLOAT32)); /* contiguous, on the CPU */
    if (!o) {
      ct_release(gc);
      return ct_last_status();
    }
    int64_t numel = ct_numel(o);
    relu_bw_ctx c = {(const float *)ct_cpu_ptr(G), (const float *)ct_cpu_ptr(y), (float *)ct_cpu_ptr(o), ct_simd_active()};
    ct_parallel_for(numel, 32768, relu_bw_range, &c);
    ct_release(gc);
    gin[0] = o;
    return CT_OK;
  }
  ct_attrs a = n->a;
  a.k[4] = 1;          /* first derivative */
  a.k[5] = CT_OP_relu; /* of relu, evaluated at y: the same 0/1 mask as at x */
  const ct_tensor *in[2] = {G, y};
  gin[0] = ct_pointwise(CT_OP_unary_deriv, 2, in, &a, CT_OUT_SAME);
  return gin[0] ? CT_OK : ct_last_status();
}
