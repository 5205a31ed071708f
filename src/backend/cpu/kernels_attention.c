/* Fused scaled_dot_product_attention on the CPU (float32, float64): the forward runs an
 * online softmax over blocks of SDPA_BC keys for each block of SDPA_BR queries, so the
 * L x S score matrix never exists, and saves each query row's log-sum-exp; the backward
 * recomputes P block by block from that log-sum-exp. Inner products are vector FMAs
 * (kernels_attention_impl.h, one instance per ISA like simd/fast_ew.c); threads split
 * batch*heads*query blocks (forward) and batch*heads (backward, where dQ sums over key
 * blocks within one task), so results do not depend on the thread count.
 *
 * ops (src/ops/defs/nn.def; the entry point and formulas are in src/ops/nn.c):
 *   sdpa_flash(q [B.., L, E], k [B.., S, E], v [B.., S, Ev] [, additive mask [B.., L, S]])
 *       -> out [B.., L, Ev], lse [B.., L] [, a copy of out]: contiguous; f0 scale, k0 is_causal
 *   sdpa_flash_backward(q, k, v, out, lse, grad_out [, mask]) -> dq, dk, dv (contiguous)
 * The entry point guarantees: equal batch dims (expanded views may have stride 0), last dim
 * of q/k/v/out/grad_out contiguous (stride 1), L, S >= 1. The kernels recheck the layout. */
#include "kernels_attention.h"
#include "cpu_iter.h"
#include "simd/simd.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define SDPA_BR 64 /* queries per block */
#define SDPA_BC 64 /* keys per block: a multiple of two vectors of every ISA */
#define SDPA_NT 7  /* tensors a geometry describes */

static bool fused_on = true;
static int fused_env = -1;

bool ct_sdpa_fused_enabled(void) {
  return fused_on && ct_env_switch("CT_SDPA_FUSED", &fused_env) && ct_fast_enabled();
}
void ct_sdpa_fused_set_enabled(bool on) { fused_on = on; }

static int64_t n_fwd, n_bwd;
int64_t ct_sdpa_fused_calls(bool backward) { return __atomic_load_n(backward ? &n_bwd : &n_fwd, __ATOMIC_RELAXED); }

typedef struct {
  int nb;                                 /* batch dims */
  int64_t bshape[CT_MAX_DIMS];            /* their sizes */
  int64_t bstride[SDPA_NT][CT_MAX_DIMS];  /* q, k, v, mask, out, grad_out, lse */
  int64_t rs[SDPA_NT];                    /* row stride (dim -2; lse: dim -1) */
  int64_t mrs, mcs;                       /* mask strides over L and S */
  int64_t L, S, E, Ev, BH;
  int64_t br;                             /* forward: queries per block (<= SDPA_BR) */
  const void *q, *k, *v, *mask, *gout;
  void *kt;                               /* forward: K^T packed per key block */
  void *out, *lse, *dq, *dk, *dv;
  double scale;
  bool causal;
  ct_dtype dt;
  int failed;                             /* a task could not allocate its workspace */
} sdpa_geom;

/* element offset of batch*head index bh in tensor t */
static inline int64_t sdpa_off(const sdpa_geom *g, int t, int64_t bh) {
  int64_t off = 0;
  for (int d = g->nb - 1; d >= 0; d--) {
    int64_t i = bh % g->bshape[d];
    bh /= g->bshape[d];
    off += i * g->bstride[t][d];
  }
  return off;
}

/* ---- instantiations ---- */
#if defined(__x86_64__)
#define SFX avx512
#define TGT __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define VB 64
#define T float
#define TI int32_t
#define TI_BITS 32
#define TN f32
#define VFMA(a, b, c) ((__typeof__(a))_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#include "kernels_attention_impl.h"
#undef T
#undef TI
#undef TI_BITS
#undef TN
#undef VFMA
#define T double
#define TI int64_t
#define TI_BITS 64
#define TN f64
#define VFMA(a, b, c) ((__typeof__(a))_mm512_fmadd_pd((__m512d)(a), (__m512d)(b), (__m512d)(c)))
#include "kernels_attention_impl.h"
#undef T
#undef TI
#undef TI_BITS
#undef TN
#undef VFMA
#undef SFX
#undef TGT
#undef VB

#define SFX avx2
#define TGT __attribute__((target("avx2,fma")))
#define VB 32
#define T float
#define TI int32_t
#define TI_BITS 32
#define TN f32
#define VFMA(a, b, c) ((__typeof__(a))_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#include "kernels_attention_impl.h"
#undef T
#undef TI
#undef TI_BITS
#undef TN
#undef VFMA
#define T double
#define TI int64_t
#define TI_BITS 64
#define TN f64
#define VFMA(a, b, c) ((__typeof__(a))_mm256_fmadd_pd((__m256d)(a), (__m256d)(b), (__m256d)(c)))
#include "kernels_attention_impl.h"
#undef T
#undef TI
#undef TI_BITS
#undef TN
#undef VFMA
#undef SFX
#undef TGT
#undef VB
#endif

/* portable: plain multiply-add (what WebAssembly SIMD128 and non-x86 builds get) */
#define SFX c
#define TGT
#define VB 16
#define T float
#define TI int32_t
#define TI_BITS 32
#define TN f32
#define VFMA(a, b, c) ((a) * (b) + (c))
#include "kernels_attention_impl.h"
#undef T
#undef TI
#undef TI_BITS
#undef TN
#define T double
#define TI int64_t
#define TI_BITS 64
#define TN f64
#include "kernels_attention_impl.h"
#undef T
#undef TI
#undef TI_BITS
#undef TN
#undef VFMA
#undef SFX
#undef TGT
#undef VB

/* ---- dispatch ---- */
typedef void (*fwd_fn)(const sdpa_geom *, int64_t, int64_t, void *);
typedef void (*pack_fn)(const sdpa_geom *, int64_t);
typedef void (*bwd_fn)(const sdpa_geom *, int64_t, void *, double *);

#define PICK(name, dt)                                                                                     \
  do {                                                                                                     \
    ct_simd_isa l_ = ct_simd_active();                                                                     \
    (void)l_;                                                                                              \
    if ((dt) == CT_FLOAT32) {                                                                              \
      PICK_ISA(name##_f32);                                                                                \
    } else {                                                                                               \
      PICK_ISA(name##_f64);                                                                                \
    }                                                                                                      \
  } while (0)
#if defined(__x86_64__)
#define PICK_ISA(base)                                                                                     \
  fn = l_ == CT_SIMD_AVX512 ? (void *)base##_avx512 : l_ == CT_SIMD_AVX2 ? (void *)base##_avx2 : (void *)base##_c
#else
#define PICK_ISA(base) fn = (void *)base##_c
#endif

static fwd_fn pick_fwd(ct_dtype dt) {
  void *fn;
  PICK(fwd_block, dt);
  return (fwd_fn)fn;
}
static pack_fn pick_pack(ct_dtype dt) {
  void *fn;
  PICK(pack_kt, dt);
  return (pack_fn)fn;
}
static bwd_fn pick_bwd(ct_dtype dt) {
  void *fn;
  PICK(bwd_head, dt);
  return (bwd_fn)fn;
}

/* Fills geometry slot t from tensor x (batch dims first, then rows, then the last dim). */
static bool geom_take(sdpa_geom *g, int t, const ct_tensor *x, int64_t rows, int64_t cols, bool last_contig) {
  int nd = x->ndim;
  int row_dims = t == 6 ? 1 : 2; /* lse: [B.., L] */
  if (nd != g->nb + row_dims || x->dtype != g->dt) return false;
  for (int d = 0; d < g->nb; d++) {
    if (x->shape[d] != g->bshape[d]) return false;
    g->bstride[t][d] = x->stride[d];
  }
  if (t == 6) {
    if (x->shape[nd - 1] != rows) return false;
    g->rs[t] = x->stride[nd - 1];
    return true;
  }
  if (x->shape[nd - 2] != rows || x->shape[nd - 1] != cols) return false;
  if (last_contig && cols > 1 && x->stride[nd - 1] != 1) return false;
  g->rs[t] = x->stride[nd - 2];
  return true;
}

static ct_status geom_init(sdpa_geom *g, const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                           const ct_tensor *mask, const ct_attrs *a) {
  memset(g, 0, sizeof *g);
  g->dt = q->dtype;
  if (g->dt != CT_FLOAT32 && g->dt != CT_FLOAT64) return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: float32 or float64 only");
  g->nb = q->ndim - 2;
  if (g->nb < 0 || k->ndim != q->ndim) return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: unexpected layout");
  memcpy(g->bshape, q->shape, sizeof(int64_t) * (size_t)g->nb);
  g->L = q->shape[q->ndim - 2];
  g->E = q->shape[q->ndim - 1];
  g->S = k->shape[k->ndim - 2];
  g->Ev = v->ndim == q->ndim ? v->shape[v->ndim - 1] : -1;
  g->BH = 1;
  for (int d = 0; d < g->nb; d++) g->BH *= g->bshape[d];
  bool ok = geom_take(g, 0, q, g->L, g->E, true) && geom_take(g, 1, k, g->S, g->E, true) &&
            geom_take(g, 2, v, g->S, g->Ev, true);
  if (ok && mask) {
    ok = geom_take(g, 3, mask, g->L, g->S, false);
    g->mrs = mask->stride[mask->ndim - 2];
    g->mcs = mask->stride[mask->ndim - 1];
  }
  if (!ok || g->L < 1 || g->S < 1) return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: unexpected layout");
  g->q = ct_cpu_ptr(q);
  g->k = ct_cpu_ptr(k);
  g->v = ct_cpu_ptr(v);
  g->mask = mask ? ct_cpu_ptr(mask) : NULL;
  g->scale = a->f[0];
  g->causal = a->k[0] != 0;
  return CT_OK;
}

typedef struct {
  const sdpa_geom *g;
  int64_t nqb;
  fwd_fn fwd;
  bwd_fn bwd;
  pack_fn pack;
  size_t ws;
} sdpa_job;

static void pack_range(void *vctx, int64_t begin, int64_t end) {
  sdpa_job *j = vctx;
  for (int64_t t = begin; t < end; t++) j->pack(j->g, t);
}

static void fwd_range(void *vctx, int64_t begin, int64_t end) {
  sdpa_job *j = vctx;
  void *ws = malloc(j->ws);
  if (!ws) {
    __atomic_store_n(&((sdpa_geom *)j->g)->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t t = begin; t < end; t++) j->fwd(j->g, t / j->nqb, t % j->nqb, ws);
  free(ws);
}

static void bwd_range(void *vctx, int64_t begin, int64_t end) {
  sdpa_job *j = vctx;
  void *ws = malloc(j->ws);
  double *drow = malloc(sizeof(double) * (size_t)j->g->L);
  if (!ws || !drow) {
    __atomic_store_n(&((sdpa_geom *)j->g)->failed, 1, __ATOMIC_RELAXED);
  } else {
    for (int64_t t = begin; t < end; t++) j->bwd(j->g, t, ws, drow);
  }
  free(ws);
  free(drow);
}

static bool out_ok(const ct_tensor *t, ct_dtype dt) { return t->dtype == dt && ct_is_contiguous(t); }

ct_status ct_cpu_sdpa_flash(const ct_call *c) {
  sdpa_geom g;
  ct_status st = geom_init(&g, c->in[0], c->in[1], c->in[2], c->n_in > 3 ? c->in[3] : NULL, &c->a);
  if (st != CT_OK) return st;
  const ct_tensor *o = c->out[0], *l = c->out[1];
  if (!out_ok(o, g.dt) || !out_ok(l, g.dt) || ct_numel(o) != g.BH * g.L * g.Ev || ct_numel(l) != g.BH * g.L)
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: unexpected output layout");
  g.out = ct_cpu_ptr(o);
  g.lse = ct_cpu_ptr(l);
  const ct_tensor *o2 = c->n_out > 2 ? c->out[2] : NULL;
  if (o2 && (!out_ok(o2, g.dt) || ct_numel(o2) != ct_numel(o)))
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: unexpected output layout");
  size_t es = ct_dtype_size(g.dt);
  if (g.BH == 0) return CT_OK;
  if (g.Ev == 0) /* nothing to write but the log-sum-exp; the entry point keeps it composed */
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash: empty value dim");
  /* query blocks of equal size (a multiple of 4 rows, the narrow ISAs' register tile): 197 queries
   * as 52+52+52+41 rather than 64+64+64+5, so the tasks of a head weigh alike on a few threads;
   * each row's result does not depend on its block */
  int64_t nqb = (g.L + SDPA_BR - 1) / SDPA_BR;
  g.br = ((g.L + nqb - 1) / nqb + 3) / 4 * 4;
  if (g.br > SDPA_BR) g.br = SDPA_BR;
  sdpa_job j = {&g, (g.L + g.br - 1) / g.br, pick_fwd(g.dt), NULL, pick_pack(g.dt), 0};
  j.ws = es * (size_t)(SDPA_BR * SDPA_BC + SDPA_BR * g.Ev);
  /* K^T once per head (not once per query block): [BH][key blocks][E][BC], O(S E) memory */
  int64_t nkb = (g.S + SDPA_BC - 1) / SDPA_BC;
  /* a tensor, so the caching allocator recycles it (no fresh pages per call) */
  int64_t ktn = g.BH * nkb * (g.E > 0 ? g.E : 1) * SDPA_BC;
  ct_tensor *ktt = ct_tensor_new(1, &ktn, g.dt, ct_cpu());
  if (!ktt) return ct_last_status();
  g.kt = ct_cpu_ptr(ktt);
  ct_parallel_for(g.BH * nkb, 1, pack_range, &j);
  ct_parallel_for(g.BH * j.nqb, 1, fwd_range, &j);
  ct_release(ktt);
  if (g.failed) return CT_ERR(CT_ERR_OOM, "CPU out of memory: tried to allocate %zu bytes", j.ws);
  if (o2) memcpy(ct_cpu_ptr(o2), g.out, ct_dtype_size(g.dt) * (size_t)ct_numel(o));
  __atomic_add_fetch(&n_fwd, 1, __ATOMIC_RELAXED);
  return CT_OK;
}

/* inputs: q, k, v, out, lse, grad_out [, mask]; outputs dq, dk, dv */
ct_status ct_cpu_sdpa_flash_backward(const ct_call *c) {
  sdpa_geom g;
  ct_status st = geom_init(&g, c->in[0], c->in[1], c->in[2], c->n_in > 6 ? c->in[6] : NULL, &c->a);
  if (st != CT_OK) return st;
  if (!geom_take(&g, 4, c->in[3], g.L, g.Ev, true) || !geom_take(&g, 5, c->in[5], g.L, g.Ev, true) ||
      !geom_take(&g, 6, c->in[4], g.L, 1, false))
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash_backward: unexpected layout");
  g.out = ct_cpu_ptr(c->in[3]);
  g.lse = ct_cpu_ptr(c->in[4]);
  g.gout = ct_cpu_ptr(c->in[5]);
  const ct_tensor *dq = c->out[0], *dk = c->out[1], *dv = c->out[2];
  if (!out_ok(dq, g.dt) || !out_ok(dk, g.dt) || !out_ok(dv, g.dt) || ct_numel(dq) != g.BH * g.L * g.E ||
      ct_numel(dk) != g.BH * g.S * g.E || ct_numel(dv) != g.BH * g.S * g.Ev)
    return CT_ERR(CT_ERR_RUNTIME, "sdpa_flash_backward: unexpected output layout");
  g.dq = ct_cpu_ptr(dq);
  g.dk = ct_cpu_ptr(dk);
  g.dv = ct_cpu_ptr(dv);
  size_t es = ct_dtype_size(g.dt);
  sdpa_job j = {&g, 0, NULL, pick_bwd(g.dt), NULL, 0};
  j.ws = es * (size_t)((g.E + g.Ev) * SDPA_BC + 2 * SDPA_BR * SDPA_BC + SDPA_BC * (g.E + g.Ev) + 1);
  if (g.BH > 0) ct_parallel_for(g.BH, 1, bwd_range, &j);
  if (g.failed) return CT_ERR(CT_ERR_OOM, "CPU out of memory: tried to allocate %zu bytes", j.ws);
  __atomic_add_fetch(&n_bwd, 1, __ATOMIC_RELAXED);
  return CT_OK;
}
