/* The fused path of optimizer.step(): one pass over a parameter's elements with the
 * whole update in a plain C loop over contiguous float32/float64 data (no tensors
 * made, no per-op dispatch), split over the thread pool for large parameters.
 *
 * Each line rounds where the reference path's op rounds, so both give the same bits:
 * the reference CPU kernels compute an op in double and round once to the tensor's
 * dtype (a float32 op with float32 operands is then exactly the float operation: the
 * double rounding is innocuous for + - * / sqrt), Python-number operands are rounded
 * to the tensor's dtype first except add's alpha (kept in double), and
 * addcmul/addcdiv compute in the tensor's own precision. The macros below spell
 * those rules out; the tests compare both paths (and PyTorch). */
#if defined(__GNUC__) && !defined(__clang__)
/* vectorize the loops (same bits: element-wise IEEE operations, no reassociation, no
 * contraction into FMA) */
#pragma GCC optimize("O3", "fp-contract=off")
#endif
#include "optim_internal.h"
#include <math.h>
#include <stdlib.h>

#define GRAIN 16384

typedef struct {
  ct_optim_kind kind;
  const ct_optim_options *o;
  bool f32;
  void *p, *g, *s1, *s2, *s3; /* param, grad, state slots 1..3 (or SGD's buffer in s1) */
  bool first;                 /* SGD: the momentum buffer is made from this step's d_p */
  double step_size, bc2_sqrt, clr;
} fctx;

/* the reference ops, element-wise, in type T */
#define MULS(x, sT) ((x) * (sT))                                    /* x.mul_(s) */
#define ADDA(T, x, y, a) ((T)((double)(x) + (a) * (double)(y)))      /* x.add(y, alpha=a) */
#define ADDCMUL(x, t1, t2, vT) ((x) + (vT) * (t1) * (t2))           /* x.addcmul(t1, t2, value=v) */
#define ADDCDIV(x, t1, t2, vT) ((x) + (vT) * (t1) / (t2))           /* x.addcdiv(t1, t2, value=v) */
#define SQRT(T, x) ((T)sqrt((double)(x)))
/* torch.maximum (the reference kernel's NaN) */
#define MAXNAN(T, a, b) (((a) != (a) || (b) != (b)) ? (T)NAN : ((a) < (b) ? (b) : (a)))

/* sqrt over a block of doubles: the loops compute sqrt's argument for a block, take the
 * square roots here with vector instructions (libm's sqrt keeps the loops scalar because
 * of errno), then finish the block. sqrtpd rounds correctly, like sqrt(). */
#define BLK 256
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
static inline __attribute__((always_inline)) void sqrtb_base(double *x, int64_t n) {
  int64_t j = 0;
  for (; j + 2 <= n; j += 2) _mm_storeu_pd(x + j, _mm_sqrt_pd(_mm_loadu_pd(x + j)));
  for (; j < n; j++) x[j] = sqrt(x[j]);
}
static inline __attribute__((always_inline, target("avx2"))) void sqrtb_avx2(double *x, int64_t n) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) _mm256_storeu_pd(x + j, _mm256_sqrt_pd(_mm256_loadu_pd(x + j)));
  for (; j < n; j++) x[j] = sqrt(x[j]);
}
#else
static inline void sqrtb_base(double *x, int64_t n) {
  for (int64_t j = 0; j < n; j++) x[j] = sqrt(x[j]);
}
#endif

/* The kernels take their options as compile-time constants (the dispatchers below call
 * them with literal flags), so every instance is a straight loop that vectorizes. A
 * maximize flag is a multiplication by -1 (exact, like neg). */
#define INL static inline __attribute__((always_inline))
#define KERNELS(T, SFX, ISA, ATTR)                                                                \
  INL ATTR void sgd_##SFX(const fctx *c, int64_t b, int64_t e, bool WD, bool MOM, bool FIRST, \
                          bool NEST) {                                                       \
    const ct_optim_options *o = c->o;                                                        \
    T *restrict p = c->p, *restrict buf = c->s1;                                             \
    const T *restrict g = c->g;                                                              \
    const T sg = o->maximize ? (T)-1 : (T)1, mom = (T)o->momentum;                           \
    const double wd = o->weight_decay, m = o->momentum, omd = 1 - o->dampening, nlr = -o->lr; \
    for (int64_t k = b; k < e; k++) {                                                        \
      T d = g[k] * sg;                                                                       \
      if (WD) d = ADDA(T, d, p[k], wd);                                                      \
      if (MOM) {                                                                             \
        T bk = FIRST ? d : ADDA(T, MULS(buf[k], mom), d, omd);                               \
        buf[k] = bk;                                                                         \
        d = NEST ? ADDA(T, d, bk, m) : bk;                                                   \
      }                                                                                      \
      p[k] = ADDA(T, p[k], d, nlr);                                                          \
    }                                                                                        \
  }                                                                                          \
  INL ATTR void adam_##SFX(const fctx *c, int64_t b, int64_t e, bool W, bool WD, bool AMS) { \
    const ct_optim_options *o = c->o;                                                        \
    T *restrict p = c->p, *restrict m = c->s1, *restrict v = c->s2, *restrict mx = c->s3;    \
    const T *restrict g = c->g;                                                              \
    const double wd = o->weight_decay, omb1 = 1 - o->beta1;                                  \
    const T sg = o->maximize ? (T)-1 : (T)1, decay = (T)(1 - o->lr * o->weight_decay),       \
            b1 = (T)o->beta1, b2 = (T)o->beta2, omb2 = (T)(1 - o->beta2),                    \
            bc2 = (T)c->bc2_sqrt, eps = (T)o->eps, nss = (T)(-c->step_size);                 \
    double tmp[BLK];                                                                         \
    for (int64_t b0 = b; b0 < e; b0 += BLK) {                                                \
      int64_t n = e - b0 < BLK ? e - b0 : BLK;                                               \
      for (int64_t j = 0; j < n; j++) {                                                      \
        int64_t k = b0 + j;                                                                  \
        T gk = g[k] * sg, pk = p[k];                                                         \
        if (!W && WD) gk = ADDA(T, gk, pk, wd);                                              \
        T mk = ADDA(T, MULS(m[k], b1), gk, omb1);                                            \
        T vk = ADDCMUL(MULS(v[k], b2), gk, gk, omb2);                                        \
        m[k] = mk;                                                                           \
        v[k] = vk;                                                                           \
        if (AMS) {                                                                           \
          T xk = MAXNAN(T, mx[k], vk);                                                       \
          mx[k] = xk;                                                                        \
          tmp[j] = (double)xk;                                                               \
        } else                                                                               \
          tmp[j] = (double)vk;                                                               \
      }                                                                                      \
      sqrtb_##ISA(tmp, n);                                                                   \
      for (int64_t j = 0; j < n; j++) {                                                      \
        int64_t k = b0 + j;                                                                  \
        T pk = W ? MULS(p[k], decay) : p[k];                                                 \
        T den = (T)tmp[j] / bc2 + eps;                                                       \
        p[k] = ADDCDIV(pk, m[k], den, nss);                                                  \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  INL ATTR void rms_##SFX(const fctx *c, int64_t b, int64_t e, bool WD, bool CEN, bool MOM) { \
    const ct_optim_options *o = c->o;                                                        \
    T *restrict p = c->p, *restrict sq = c->s1, *restrict buf = c->s2, *restrict ga = c->s3; \
    const T *restrict g = c->g;                                                              \
    const T sg = o->maximize ? (T)-1 : (T)1, al = (T)o->alpha, oma = (T)(1 - o->alpha),      \
            eps = (T)o->eps, mom = (T)o->momentum, nlr = (T)(-o->lr), one = (T)1,            \
            mone = (T)-1;                                                                    \
    const double wd = o->weight_decay, omad = 1 - o->alpha, nlrd = -o->lr;                   \
    double tmp[BLK];                                                                         \
    for (int64_t b0 = b; b0 < e; b0 += BLK) {                                                \
      int64_t n = e - b0 < BLK ? e - b0 : BLK;                                               \
      for (int64_t j = 0; j < n; j++) {                                                      \
        int64_t k = b0 + j;                                                                  \
        T gk = g[k] * sg;                                                                    \
        if (WD) gk = ADDA(T, gk, p[k], wd);                                                  \
        T sk = ADDCMUL(MULS(sq[k], al), gk, gk, oma);                                        \
        sq[k] = sk;                                                                          \
        if (CEN) {                                                                           \
          T gak = ADDA(T, MULS(ga[k], al), gk, omad);                                        \
          ga[k] = gak;                                                                       \
          tmp[j] = (double)ADDCMUL(sk, gak, gak, mone);                                      \
        } else                                                                               \
          tmp[j] = (double)sk;                                                               \
      }                                                                                      \
      sqrtb_##ISA(tmp, n);                                                                   \
      for (int64_t j = 0; j < n; j++) {                                                      \
        int64_t k = b0 + j;                                                                  \
        T gk = g[k] * sg; /* p[k] is not written yet: the same gk as above */                \
        if (WD) gk = ADDA(T, gk, p[k], wd);                                                  \
        T avg = (T)tmp[j] + eps;                                                             \
        if (MOM) {                                                                           \
          T bk = ADDCDIV(MULS(buf[k], mom), gk, avg, one);                                   \
          buf[k] = bk;                                                                       \
          p[k] = ADDA(T, p[k], bk, nlrd);                                                    \
        } else                                                                               \
          p[k] = ADDCDIV(p[k], gk, avg, nlr);                                                \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  INL ATTR void adagrad_##SFX(const fctx *c, int64_t b, int64_t e, bool WD) {                \
    const ct_optim_options *o = c->o;                                                        \
    T *restrict p = c->p, *restrict sm = c->s1;                                              \
    const T *restrict g = c->g;                                                              \
    const T sg = o->maximize ? (T)-1 : (T)1, eps = (T)o->eps, nclr = (T)(-c->clr),           \
            one = (T)1;                                                                      \
    const double wd = o->weight_decay;                                                       \
    double tmp[BLK];                                                                         \
    for (int64_t b0 = b; b0 < e; b0 += BLK) {                                                \
      int64_t n = e - b0 < BLK ? e - b0 : BLK;                                               \
      for (int64_t j = 0; j < n; j++) {                                                      \
        int64_t k = b0 + j;                                                                  \
        T gk = g[k] * sg;                                                                    \
        if (WD) gk = ADDA(T, gk, p[k], wd);                                                  \
        T sk = ADDCMUL(sm[k], gk, gk, one);                                                  \
        sm[k] = sk;                                                                          \
        tmp[j] = (double)sk;                                                                 \
      }                                                                                      \
      sqrtb_##ISA(tmp, n);                                                                   \
      for (int64_t j = 0; j < n; j++) {                                                      \
        int64_t k = b0 + j;                                                                  \
        T gk = g[k] * sg;                                                                    \
        if (WD) gk = ADDA(T, gk, p[k], wd);                                                  \
        p[k] = ADDCDIV(p[k], gk, (T)tmp[j] + eps, nclr);                                     \
      }                                                                                      \
    }                                                                                        \
  }

/* flags -> a case per combination, each calling the kernel with constants */
#define B(i, k) (((i) >> (k)) & 1)
#define C16(F, ...)                                                                        \
  case 0: F(__VA_ARGS__, 0, 0, 0, 0); break; case 1: F(__VA_ARGS__, 1, 0, 0, 0); break;    \
  case 2: F(__VA_ARGS__, 0, 1, 0, 0); break; case 3: F(__VA_ARGS__, 1, 1, 0, 0); break;    \
  case 4: F(__VA_ARGS__, 0, 0, 1, 0); break; case 5: F(__VA_ARGS__, 1, 0, 1, 0); break;    \
  case 6: F(__VA_ARGS__, 0, 1, 1, 0); break; case 7: F(__VA_ARGS__, 1, 1, 1, 0); break;    \
  case 8: F(__VA_ARGS__, 0, 0, 0, 1); break; case 9: F(__VA_ARGS__, 1, 0, 0, 1); break;    \
  case 10: F(__VA_ARGS__, 0, 1, 0, 1); break; case 11: F(__VA_ARGS__, 1, 1, 0, 1); break;  \
  case 12: F(__VA_ARGS__, 0, 0, 1, 1); break; case 13: F(__VA_ARGS__, 1, 0, 1, 1); break;  \
  case 14: F(__VA_ARGS__, 0, 1, 1, 1); break; case 15: F(__VA_ARGS__, 1, 1, 1, 1); break;
#define C8(F, ...)                                                                         \
  case 0: F(__VA_ARGS__, 0, 0, 0); break; case 1: F(__VA_ARGS__, 1, 0, 0); break;          \
  case 2: F(__VA_ARGS__, 0, 1, 0); break; case 3: F(__VA_ARGS__, 1, 1, 0); break;          \
  case 4: F(__VA_ARGS__, 0, 0, 1); break; case 5: F(__VA_ARGS__, 1, 0, 1); break;          \
  case 6: F(__VA_ARGS__, 0, 1, 1); break; case 7: F(__VA_ARGS__, 1, 1, 1); break;
#define C2(F, ...) case 0: F(__VA_ARGS__, 0); break; case 1: F(__VA_ARGS__, 1); break;

#define DISPATCH(SFX)                                                                      \
  do {                                                                                     \
    const ct_optim_options *o = c->o;                                                      \
    switch (c->kind) {                                                                     \
      case CT_OPTIM_SGD: {                                                                 \
        int f = (o->weight_decay != 0) | (o->momentum != 0) << 1 | c->first << 2 |         \
                o->nesterov << 3;                                                          \
        switch (f) { C16(sgd_##SFX, c, b, e) }                                             \
        break;                                                                             \
      }                                                                                    \
      case CT_OPTIM_ADAM:                                                                  \
      case CT_OPTIM_ADAMW: {                                                               \
        int f = (c->kind == CT_OPTIM_ADAMW) | (o->weight_decay != 0) << 1 | (c->s3 != NULL) << 2; \
        switch (f) { C8(adam_##SFX, c, b, e) }                                             \
        break;                                                                             \
      }                                                                                    \
      case CT_OPTIM_RMSPROP: {                                                             \
        int f = (o->weight_decay != 0) | (c->s3 != NULL) << 1 | (c->s2 != NULL) << 2;      \
        switch (f) { C8(rms_##SFX, c, b, e) }                                              \
        break;                                                                             \
      }                                                                                    \
      case CT_OPTIM_ADAGRAD: {                                                             \
        int f = o->weight_decay != 0;                                                      \
        switch (f) { C2(adagrad_##SFX, c, b, e) }                                          \
        break;                                                                             \
      }                                                                                    \
    }                                                                                      \
  } while (0)

/* Baseline ISA, and again for AVX2 on x86-64 (wider vectors; no FMA, so every rounding
 * is the same), chosen at run time. */
#define DEFINE_RANGE(NAME, SFXF, SFXD, ISA, ATTR)                                          \
  KERNELS(float, SFXF, ISA, ATTR)                                                          \
  KERNELS(double, SFXD, ISA, ATTR)                                                         \
  static ATTR void NAME(void *vc, int64_t b, int64_t e) {                                  \
    const fctx *c = vc;                                                                    \
    if (c->f32) DISPATCH(SFXF);                                                            \
    else DISPATCH(SFXD);                                                                   \
  }
DEFINE_RANGE(range_base, f_base, d_base, base, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
DEFINE_RANGE(range_avx2, f_avx2, d_avx2, avx2, __attribute__((target("avx2"))))
static ct_range_fn pick_range(void) {
  static int have = -1;
  if (have < 0) {
    /* CT_SIMD=portable (the fast kernels' switch) keeps the baseline loops, for testing */
    const char *env = getenv("CT_SIMD");
    bool portable = env && (!strcmp(env, "portable") || !strcmp(env, "c") || !strcmp(env, "0"));
    __builtin_cpu_init();
    have = !portable && __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  return have ? range_avx2 : range_base;
}
#else
static ct_range_fn pick_range(void) { return range_base; }
#endif

static bool usable(const ct_tensor *t, ct_dtype dt) {
  return t->dtype == dt && t->storage->device.type == CT_DEVICE_CPU && ct_is_contiguous(t);
}

/* A zero-filled state slot made by the fused path (same cases as the reference's). */
static bool make_zeros(ct_pstate *s, int slot, const ct_tensor *p) {
  if (s->t[slot]) return true;
  bool prev = ct_set_grad_enabled(false);
  ct_tensor *t = ct_zeros_like(p, NULL);
  ct_set_grad_enabled(prev);
  if (!t) return false;
  s->t[slot] = ct_own(t);
  return true;
}

#ifdef CT_HAVE_CUDA
/* Adam/AdamW on float32 CUDA parameters: one fused kernel (src/backend/cuda/k_fast.cu). */
bool ct_cuda_optim_update_fused(ct_optim *opt, ct_pgroup *gr, int64_t i);
#endif
/* Adam/AdamW on float32 WebGPU parameters: one dispatch each (src/backend/webgpu/webgpu_kernels.c). */
bool ct_webgpu_optim_update_fused(ct_optim *opt, ct_pgroup *gr, int64_t i);

#ifdef CT_HAVE_CUDA
/* SGD over a group of float32 CUDA parameters in one multi-tensor launch (k_fast.cu). */
int ct_cuda_sgd_group_fused(ct_optim *opt, ct_pgroup *gr);
#endif

/* SGD over a group of float32 WebGPU parameters, a few per dispatch (webgpu_kernels.c). */
int ct_webgpu_sgd_group_fused(ct_optim *opt, ct_pgroup *gr);

int ct_optim_group_fused(ct_optim *opt, ct_pgroup *gr) {
  if (opt->fused && opt->kind == CT_OPTIM_SGD) { /* WebGPU: every parameter with a gradient there */
    bool any = false, all = true;
    for (int64_t i = 0; i < gr->n; i++) {
      ct_tensor *p = gr->params[i];
      if (!p->grad) continue;
      any = true;
      if (p->storage->device.type != CT_DEVICE_WEBGPU) all = false;
    }
    if (any && all) {
      for (int64_t i = 0; i < gr->n; i++)
        if (gr->params[i]->grad && !gr->st[i].init && ct_optim_init_state(opt, gr, i) != CT_OK) return -1;
      return ct_webgpu_sgd_group_fused(opt, gr);
    }
  }
#ifdef CT_HAVE_CUDA
  if (!opt->fused || opt->kind != CT_OPTIM_SGD) return 0;
  bool any = false;
  for (int64_t i = 0; i < gr->n; i++) {
    ct_tensor *p = gr->params[i];
    if (!p->grad) continue;
    if (p->storage->device.type != CT_DEVICE_CUDA) return 0;
    any = true;
  }
  if (!any) return 0;
  for (int64_t i = 0; i < gr->n; i++)
    if (gr->params[i]->grad && !gr->st[i].init && ct_optim_init_state(opt, gr, i) != CT_OK) return -1;
  return ct_cuda_sgd_group_fused(opt, gr);
#else
  (void)opt;
  (void)gr;
  return 0;
#endif
}

#ifdef CT_HAVE_CUDA
/* k_fast.cu: SGD on one large float32 CUDA parameter on the second stream */
bool ct_cuda_optim_update_early(ct_optim *opt, ct_pgroup *gr, int64_t i);
#endif
bool ct_optim_update_early(ct_optim *opt, ct_pgroup *gr, int64_t i) {
#ifdef CT_HAVE_CUDA
  ct_tensor *p = gr->params[i];
  if (opt->fused && p->grad && p->storage->device.type == CT_DEVICE_CUDA) return ct_cuda_optim_update_early(opt, gr, i);
#endif
  (void)opt;
  (void)gr;
  (void)i;
  return false; /* elsewhere nothing would run beside the backward: the step does it */
}

bool ct_optim_update_fused(ct_optim *opt, ct_pgroup *gr, int64_t i) {
  ct_tensor *p = gr->params[i], *g = p->grad;
  ct_pstate *s = &gr->st[i];
  const ct_optim_options *o = &gr->o;
  ct_dtype dt = p->dtype;
#ifdef CT_HAVE_CUDA
  if (p->storage->device.type == CT_DEVICE_CUDA) return ct_cuda_optim_update_fused(opt, gr, i);
#endif
  if (p->storage->device.type == CT_DEVICE_WEBGPU) return ct_webgpu_optim_update_fused(opt, gr, i);
  if ((dt != CT_FLOAT32 && dt != CT_FLOAT64) || !usable(p, dt) || !usable(g, dt)) return false;
  if (ct_shares_storage(p, g)) return false; /* the loops assume no aliasing */
  fctx c;
  memset(&c, 0, sizeof c);
  c.kind = opt->kind;
  c.o = o;
  c.f32 = dt == CT_FLOAT32;
  c.p = ct_host_ptr(p);
  c.g = ct_host_ptr(g);
  int first_slot = opt->kind == CT_OPTIM_SGD ? 0 : 1;
  /* lazily made slots: the reference path would make them too */
  if (opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW) {
    if (o->amsgrad && !make_zeros(s, 3, p)) return false;
  } else if (opt->kind == CT_OPTIM_RMSPROP) {
    if (o->momentum > 0 && !make_zeros(s, 2, p)) return false;
    if (o->centered && !make_zeros(s, 3, p)) return false;
  }
  for (int k = first_slot; k < CT_OPTIM_NSLOT; k++)
    if (s->t[k] && (!usable(s->t[k], dt) || ct_shares_storage(s->t[k], p) || ct_shares_storage(s->t[k], g)))
      return false;
  if (opt->kind == CT_OPTIM_SGD && o->momentum != 0 && !s->t[0]) {
    /* buf = clone(d_p): written by the loop */
    ct_tensor *t = ct_empty_like(p, NULL);
    if (!t) return false;
    if (!ct_is_contiguous(t)) {
      ct_release(t);
      return false;
    }
    s->t[0] = ct_own(t);
    c.first = true;
  }
  void **dst[3] = {&c.s1, &c.s2, &c.s3};
  for (int k = first_slot, j = 0; k < CT_OPTIM_NSLOT && j < 3; k++, j++)
    *dst[j] = s->t[k] ? ct_host_ptr(s->t[k]) : NULL;
  /* RMSprop: s1 square_avg, s2 momentum_buffer or NULL, s3 grad_avg or NULL */
  if (opt->kind == CT_OPTIM_RMSPROP) {
    if (!(o->momentum > 0)) c.s2 = NULL;
    if (!o->centered) c.s3 = NULL;
  }
  if ((opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW) && !o->amsgrad) c.s3 = NULL;
  /* the scalar parts, as the reference computes them */
  if (opt->kind != CT_OPTIM_SGD) {
    double step = ct_optim_bump_step(s->t[0]);
    if (opt->kind == CT_OPTIM_ADAM || opt->kind == CT_OPTIM_ADAMW) {
      double bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
      c.step_size = o->lr / bc1;
      c.bc2_sqrt = sqrt(bc2);
    } else if (opt->kind == CT_OPTIM_ADAGRAD) {
      c.clr = o->lr / (1 + (step - 1) * o->lr_decay);
    }
  }
  ct_parallel_for(ct_numel(p), GRAIN, pick_range(), &c);
  /* in-place updates count as writes, like the reference ops */
  ct_bump_version(p);
  for (int k = first_slot; k < CT_OPTIM_NSLOT; k++)
    if (s->t[k]) ct_bump_version(s->t[k]);
  return true;
}
