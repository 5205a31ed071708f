/* Template of the fused attention kernels (kernels_attention.c), included once per ISA and
 * element type with:
 *   T     float or double        TI   int32_t or int64_t (same width as T)
 *   TN    f32 or f64             SFX  avx512, avx2 or c
 *   TGT   function attribute (target) or nothing
 *   VB    vector width in bytes  VFMA(a,b,c)  a*b+c on vectors of T
 * Written with GCC/clang vector extensions like simd/fast_ew_impl.h, so one source gives
 * AVX-512, AVX2 or SSE2/WebAssembly SIMD128 code. */

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(CAT(name, TN), SFX)
#define NV ((int64_t)(VB / (int)sizeof(T))) /* elements per vector */

typedef T F(vt) __attribute__((vector_size(VB)));
typedef TI F(vti) __attribute__((vector_size(VB)));
#define vt F(vt)
#define vti F(vti)
#define INL static inline __attribute__((always_inline)) TGT

INL vt F(ld)(const T *p) { vt v; memcpy(&v, p, sizeof v); return v; }
INL void F(st)(T *p, vt v) { memcpy(p, &v, sizeof v); }
/* c - 0 folds to c (0 + c does not: -0 + 0 is +0), so a splat costs no add in the GEMM loops */
INL vt F(sp)(T c) { return c - (vt){0}; }
INL vt F(sel)(vti m, vt a, vt b) { return (vt)(((vti)a & m) | ((vti)b & ~m)); } /* m ? a : b */
/* a > b ? a : b and a < b ? a : b (b when unordered). On WebAssembly clang makes f32x4.max/min of
 * these selects, whose NaN/-0 rules V8 emulates in several instructions each; pmax/pmin are the
 * selects themselves (one maxps/minps). */
#if defined(__wasm_simd128__) && VB == 16
#include <wasm_simd128.h>
#if TI_BITS == 32
INL vt F(gtsel)(vt a, vt b) { return (vt)wasm_f32x4_pmax((v128_t)b, (v128_t)a); }
INL vt F(ltsel)(vt a, vt b) { return (vt)wasm_f32x4_pmin((v128_t)b, (v128_t)a); }
#else
INL vt F(gtsel)(vt a, vt b) { return (vt)wasm_f64x2_pmax((v128_t)b, (v128_t)a); }
INL vt F(ltsel)(vt a, vt b) { return (vt)wasm_f64x2_pmin((v128_t)b, (v128_t)a); }
#endif
#else
INL vt F(gtsel)(vt a, vt b) { return F(sel)(a > b, a, b); }
INL vt F(ltsel)(vt a, vt b) { return F(sel)(a < b, a, b); }
#endif

/* exp(x) for the arguments softmax gives (x <= ~0; -inf -> 0, NaN stays NaN):
 * x = n ln2 + r with ln2 in two parts (r exact), e^r by Taylor (degree 7 in float,
 * 12 in double: truncation below the type's epsilon), 2^n built in the exponent bits in
 * two halves so results down to the subnormals are right. The same scheme as the
 * softmax kernel's expf (simd/fast_ew_impl.h, private to that file). */
#if TI_BITS == 32
#define EXP_LO (-104.0f)
#define EXP_HI 88.0f
#define EXP_MAGIC 12582912.0f /* 1.5 * 2^23: adding it rounds to an integer */
#define EXP_L2E 1.44269504088896341f
#define EXP_LN2HI (-0.693145751953125f)
#define EXP_LN2LO (-1.4286068202862268e-06f)
#define EXP_BIAS 127
#define EXP_MANT 23
#else
#define EXP_LO (-746.0)
#define EXP_HI 709.0
#define EXP_MAGIC 6755399441055744.0 /* 1.5 * 2^52 */
#define EXP_L2E 1.4426950408889634
#define EXP_LN2HI (-6.93147180369123816490e-01)
#define EXP_LN2LO (-1.90821492927058770002e-10)
#define EXP_BIAS 1023
#define EXP_MANT 52
#endif
INL vt F(vexp)(vt x) {
  vt xc = F(ltsel)(F(sp)(EXP_HI), x); /* x > HI ? HI : x */
  xc = F(gtsel)(F(sp)(EXP_LO), xc);   /* xc < LO ? LO : xc */
  vt t = VFMA(xc, F(sp)(EXP_L2E), F(sp)(EXP_MAGIC));
  vt n = t - EXP_MAGIC;
  vt r = VFMA(n, F(sp)(EXP_LN2HI), xc);
  r = VFMA(n, F(sp)(EXP_LN2LO), r);
#if TI_BITS == 32
  static const T c[] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
  vt p = F(sp)(1.0f / 5040);
#pragma GCC unroll 8
  for (int i = 0; i < 7; i++) p = VFMA(p, r, F(sp)(c[i]));
#else
  static const T c[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,
                        1.0 / 120,      1.0 / 24,      1.0 / 6,      0.5,          1.0,        1.0};
  vt p = F(sp)(1.0 / 479001600);
#pragma GCC unroll 12
  for (int i = 0; i < 12; i++) p = VFMA(p, r, F(sp)(c[i]));
#endif
  vti ni = (vti)t - (vti)F(sp)(EXP_MAGIC);
  vti n1 = ni >> 1, n2 = ni - n1;
  vt s1 = (vt)((n1 + EXP_BIAS) << EXP_MANT), s2 = (vt)((n2 + EXP_BIAS) << EXP_MANT);
  vt res = p * s1 * s2;
  res = F(sel)(x < EXP_LO, F(sp)(0), res);
  return F(sel)(x != x, x, res);
}
#undef EXP_LO
#undef EXP_HI
#undef EXP_MAGIC
#undef EXP_L2E
#undef EXP_LN2HI
#undef EXP_LN2LO
#undef EXP_BIAS
#undef EXP_MANT

/* x[i] = exp(x[i] - m) for a row of n (a multiple of NV); returns the sum (lanes added in double) */
TGT static double F(exp_row)(T *x, int64_t n, T m) {
  vt vm = F(sp)(m), acc = {0};
  for (int64_t i = 0; i < n; i += NV) {
    vt e = F(vexp)(F(ld)(x + i) - vm);
    F(st)(x + i, e);
    acc += e;
  }
  double sum = 0;
  for (int l = 0; l < NV; l++) sum += acc[l];
  return sum;
}

/* s[c] = s[c] * scale (+ mask[c * mcs]) for c < lim, -inf for lim <= c < n (masked or padding);
 * returns the max over c < lim (-inf if none). The same two roundings as the composed path's
 * mul and add. */
TGT static T F(scale_row)(T *s, int64_t lim, int64_t n, T scale, const T *mk, int64_t mcs) {
  vt vs = F(sp)(scale), vmx = F(sp)(-INFINITY);
  int64_t c = 0;
  if (!mk) {
    for (; c + NV <= lim; c += NV) {
      vt x = F(ld)(s + c) * vs;
      F(st)(s + c, x);
      vmx = F(gtsel)(x, vmx);
    }
  } else if (mcs == 1) {
    for (; c + NV <= lim; c += NV) {
      vt x = F(ld)(s + c) * vs + F(ld)(mk + c);
      F(st)(s + c, x);
      vmx = F(gtsel)(x, vmx);
    }
  }
  T mx = -INFINITY;
  for (int l = 0; l < NV; l++)
    if (vmx[l] > mx) mx = vmx[l];
  for (; c < lim; c++) {
    T x = s[c] * scale;
    if (mk) x = x + mk[c * mcs];
    s[c] = x;
    if (x > mx) mx = x;
  }
  for (c = lim < 0 ? 0 : lim; c < n; c++) s[c] = -INFINITY;
  return mx;
}

/* a[e] *= f for a row of n */
TGT static void F(scale_vec)(T *a, int64_t n, T f) {
  vt vf = F(sp)(f);
  int64_t e = 0;
  for (; e + NV <= n; e += NV) F(st)(a + e, F(ld)(a + e) * vf);
  for (; e < n; e++) a[e] *= f;
}

/* d[c] = p[c] * (d[c] - di) * scale for c < n (a multiple of NV): softmax's backward, scaled */
TGT static void F(ds_row)(T *d, const T *p, int64_t n, T di, T scale) {
  vt vdi = F(sp)(di), vsc = F(sp)(scale);
  for (int64_t c = 0; c < n; c += NV) F(st)(d + c, F(ld)(p + c) * (F(ld)(d + c) - vdi) * vsc);
}

/* K^T of key block kb of head bh, zero-padded to SDPA_BC keys: [E][SDPA_BC] */
TGT static void F(pack_t)(const T *K, int64_t krs, int64_t S, int64_t E, int64_t j0, T *dst) {
  int64_t nk = S - j0 < SDPA_BC ? S - j0 : SDPA_BC;
  for (int64_t e = 0; e < E; e++) {
    T *d = dst + e * SDPA_BC;
    const T *s = K + j0 * krs + e;
    for (int64_t c = 0; c < nk; c++) d[c] = s[c * krs];
    for (int64_t c = nk; c < SDPA_BC; c++) d[c] = 0;
  }
}
TGT static void F(pack_kt)(const sdpa_geom *g, int64_t t) {
  int64_t nkb = (g->S + SDPA_BC - 1) / SDPA_BC, bh = t / nkb, kb = t % nkb;
  F(pack_t)((const T *)g->k + sdpa_off(g, 1, bh), g->rs[1], g->S, g->E, kb * SDPA_BC,
            (T *)g->kt + (bh * nkb + kb) * g->E * SDPA_BC);
}

/* Register tiles: MR rows x 2 vectors (AVX-512 has 32 vector registers: 8 x 2 accumulators;
 * the narrower ISAs have 16: 4 x 2). Fully unrolled, so the arrays live in registers. */
#if VB == 64
#define MR 8
#else
#define MR 4
#endif

/* C[m][n] = sum_k A[m*lda + k] * B[k*ldb + n] for n < N (a multiple of NV): the score
 * tile Q K^T against a packed K^T (and dO V^T against V^T). Each element sums k in
 * order with FMA, as the packed GEMM does. */
TGT static void F(mm_nt)(int64_t M, int64_t N, int64_t K, const T *A, int64_t lda, const T *B, int64_t ldb, T *C,
                         int64_t ldc) {
  int64_t m = 0;
  for (; m + MR <= M; m += MR) {
    const T *a = A + m * lda;
    T *c = C + m * ldc;
    int64_t n = 0;
    for (; n + 2 * NV <= N; n += 2 * NV) {
      vt x[MR][2];
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) x[r][0] = x[r][1] = (vt){0};
      const T *b = B + n;
      for (int64_t k = 0; k < K; k++, b += ldb) {
        vt b0 = F(ld)(b), b1 = F(ld)(b + NV);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
          vt s = F(sp)(a[r * lda + k]);
          x[r][0] = VFMA(s, b0, x[r][0]);
          x[r][1] = VFMA(s, b1, x[r][1]);
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) {
        F(st)(c + r * ldc + n, x[r][0]);
        F(st)(c + r * ldc + n + NV, x[r][1]);
      }
    }
    for (; n < N; n += NV) {
      vt x[MR];
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) x[r] = (vt){0};
      const T *b = B + n;
      for (int64_t k = 0; k < K; k++, b += ldb) {
        vt b0 = F(ld)(b);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) x[r] = VFMA(F(sp)(a[r * lda + k]), b0, x[r]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) F(st)(c + r * ldc + n, x[r]);
    }
  }
  for (; m < M; m++) {
    const T *a0 = A + m * lda;
    for (int64_t n = 0; n < N; n += NV) {
      vt x0 = {0};
      const T *b = B + n;
      for (int64_t k = 0; k < K; k++, b += ldb) x0 = VFMA(F(sp)(a0[k]), F(ld)(b), x0);
      F(st)(C + m * ldc + n, x0);
    }
  }
}

/* C[m][n] += sum_k A[m*ars + k*acs] * B[k*ldb + n], n < N (any N): P V into the output
 * accumulator, dS K into dQ, and (A read transposed) P^T dO into dV and dS^T Q into dK.
 * A scalar loop takes the last N % NV columns. */
TGT static void F(mm_acc)(int64_t M, int64_t N, int64_t K, const T *A, int64_t ars, int64_t acs, const T *B,
                          int64_t ldb, T *C, int64_t ldc) {
  int64_t nv = N - N % NV;
  int64_t m = 0;
  for (; m + MR <= M; m += MR) {
    const T *a = A + m * ars;
    T *c = C + m * ldc;
    int64_t n = 0;
    for (; n + 2 * NV <= nv; n += 2 * NV) {
      vt x[MR][2];
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) {
        x[r][0] = F(ld)(c + r * ldc + n);
        x[r][1] = F(ld)(c + r * ldc + n + NV);
      }
      const T *b = B + n;
      for (int64_t k = 0; k < K; k++, b += ldb) {
        vt b0 = F(ld)(b), b1 = F(ld)(b + NV);
        const T *ak = a + k * acs;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
          vt s = F(sp)(ak[r * ars]);
          x[r][0] = VFMA(s, b0, x[r][0]);
          x[r][1] = VFMA(s, b1, x[r][1]);
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) {
        F(st)(c + r * ldc + n, x[r][0]);
        F(st)(c + r * ldc + n + NV, x[r][1]);
      }
    }
    for (; n < nv; n += NV) {
      vt x[MR];
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) x[r] = F(ld)(c + r * ldc + n);
      const T *b = B + n;
      for (int64_t k = 0; k < K; k++, b += ldb) {
        vt b0 = F(ld)(b);
        const T *ak = a + k * acs;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) x[r] = VFMA(F(sp)(ak[r * ars]), b0, x[r]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; r++) F(st)(c + r * ldc + n, x[r]);
    }
  }
  for (; m < M; m++) {
    const T *a0 = A + m * ars;
    T *c0 = C + m * ldc;
    for (int64_t n = 0; n < nv; n += NV) {
      vt x0 = F(ld)(c0 + n);
      const T *b = B + n;
      for (int64_t k = 0; k < K; k++, b += ldb) x0 = VFMA(F(sp)(a0[k * acs]), F(ld)(b), x0);
      F(st)(c0 + n, x0);
    }
  }
  if (nv < N)
    for (int64_t mm = 0; mm < M; mm++)
      for (int64_t n = nv; n < N; n++) {
        T acc = C[mm * ldc + n];
        for (int64_t k = 0; k < K; k++) acc += A[mm * ars + k * acs] * B[k * ldb + n];
        C[mm * ldc + n] = acc;
      }
}
#undef MR

/* ---- forward: one (batch*head, query block) per task; K^T packed beforehand (g->kt) ---- */
TGT static void F(fwd_block)(const sdpa_geom *g, int64_t bh, int64_t qb, T *ws) {
  const int64_t E = g->E, Ev = g->Ev, S = g->S, nkb = (S + SDPA_BC - 1) / SDPA_BC;
  const int64_t i0 = qb * g->br, nq = g->L - i0 < g->br ? g->L - i0 : g->br;
  const T *Q = (const T *)g->q + sdpa_off(g, 0, bh), *KT = (const T *)g->kt + bh * nkb * E * SDPA_BC;
  const T *V = (const T *)g->v + sdpa_off(g, 2, bh);
  const T *Mk = g->mask ? (const T *)g->mask + sdpa_off(g, 3, bh) : NULL;
  T *O = (T *)g->out + bh * g->L * Ev, *LSE = (T *)g->lse + bh * g->L; /* fresh, contiguous */
  const T scale = (T)g->scale;
  /* workspace: scores [BR][BC], output accumulator [BR][Ev] */
  T *sc = ws, *acc = sc + SDPA_BR * SDPA_BC;
  double mrow[SDPA_BR], lrow[SDPA_BR];
  for (int64_t r = 0; r < nq; r++) {
    mrow[r] = -INFINITY;
    lrow[r] = 0;
  }
  memset(acc, 0, sizeof(T) * (size_t)(nq * Ev));
  const int64_t qrs = g->rs[0], vrs = g->rs[2];
  for (int64_t j0 = 0; j0 < S; j0 += SDPA_BC) {
    if (g->causal && j0 > i0 + nq - 1) break; /* keys after the block's last query */
    int64_t nk = S - j0 < SDPA_BC ? S - j0 : SDPA_BC;
    /* scores only for nk rounded up to two vectors (ViT's 197 keys left 5 in the last block, whose
     * 64 columns made 30% more score work); the columns past nk are -inf, exp 0, as before */
    int64_t ncol = (nk + 2 * NV - 1) / (2 * NV) * (2 * NV);
    if (ncol > SDPA_BC) ncol = SDPA_BC;
    F(mm_nt)(nq, ncol, E, Q + i0 * qrs, qrs, KT + (j0 / SDPA_BC) * E * SDPA_BC, SDPA_BC, sc, SDPA_BC);
    for (int64_t r = 0; r < nq; r++) {
      int64_t i = i0 + r, lim = nk;
      if (g->causal && i - j0 + 1 < lim) lim = i - j0 + 1; /* top-left: key j <= query i */
      if (lim < 0) lim = 0;
      T *s = sc + r * SDPA_BC;
      T mx = F(scale_row)(s, lim, ncol, scale, Mk ? Mk + i * g->mrs + j0 * g->mcs : NULL, g->mcs);
      double mnew = mrow[r] > (double)mx ? mrow[r] : (double)mx;
      if (mnew == -INFINITY) { /* nothing unmasked yet: this block adds nothing */
        memset(s, 0, sizeof(T) * SDPA_BC);
        continue;
      }
      double sum = F(exp_row)(s, ncol, (T)mnew);
      if (mnew != mrow[r]) { /* rescale what the earlier blocks summed */
        double alpha = exp(mrow[r] - mnew);
        lrow[r] *= alpha;
        F(scale_vec)(acc + r * Ev, Ev, (T)alpha);
        mrow[r] = mnew;
      }
      lrow[r] += sum;
    }
    F(mm_acc)(nq, Ev, nk, sc, SDPA_BC, 1, V + j0 * vrs, vrs, acc, Ev);
  }
  for (int64_t r = 0; r < nq; r++) {
    /* a row with no unmasked key is 0/0 = nan, as softmax gives it */
    T inv = (T)(1.0 / lrow[r]);
    T *o = O + (i0 + r) * Ev, *a = acc + r * Ev;
    for (int64_t e = 0; e < Ev; e++) o[e] = a[e] * inv;
    LSE[i0 + r] = (T)(mrow[r] + log(lrow[r]));
  }
}

/* ---- backward: one batch*head per task (dQ sums over key blocks, dK/dV over query blocks) ---- */
TGT static void F(bwd_head)(const sdpa_geom *g, int64_t bh, T *ws, double *drow) {
  const int64_t E = g->E, Ev = g->Ev, S = g->S, L = g->L;
  const T *Q = (const T *)g->q + sdpa_off(g, 0, bh), *K = (const T *)g->k + sdpa_off(g, 1, bh);
  const T *V = (const T *)g->v + sdpa_off(g, 2, bh);
  const T *Mk = g->mask ? (const T *)g->mask + sdpa_off(g, 3, bh) : NULL;
  const T *O = (const T *)g->out + sdpa_off(g, 4, bh), *dO = (const T *)g->gout + sdpa_off(g, 5, bh);
  const T *LSE = (const T *)g->lse + sdpa_off(g, 6, bh);
  T *dQ = (T *)g->dq + bh * L * E, *dK = (T *)g->dk + bh * S * E, *dV = (T *)g->dv + bh * S * Ev;
  const int64_t qrs = g->rs[0], krs = g->rs[1], vrs = g->rs[2], ors = g->rs[4], grs = g->rs[5], lcs = g->rs[6];
  const T scale = (T)g->scale;
  /* workspace: K^T [E][BC], V^T [Ev][BC], P [BR][BC], dP/dS [BR][BC], dK acc [BC][E], dV acc [BC][Ev] */
  T *kt = ws, *vt_ = kt + E * SDPA_BC, *p = vt_ + Ev * SDPA_BC, *ds = p + SDPA_BR * SDPA_BC;
  T *dka = ds + SDPA_BR * SDPA_BC, *dva = dka + SDPA_BC * E;
  /* D_i = dO_i . O_i = sum_j P_ij dP_ij: softmax's backward term */
  for (int64_t i = 0; i < L; i++) {
    double s = 0;
    for (int64_t e = 0; e < Ev; e++) s += (double)dO[i * grs + e] * (double)O[i * ors + e];
    drow[i] = s;
  }
  memset(dQ, 0, sizeof(T) * (size_t)(L * E));
  for (int64_t j0 = 0; j0 < S; j0 += SDPA_BC) {
    int64_t nk = S - j0 < SDPA_BC ? S - j0 : SDPA_BC;
    F(pack_t)(K, krs, S, E, j0, kt);
    F(pack_t)(V, vrs, S, Ev, j0, vt_);
    memset(dka, 0, sizeof(T) * (size_t)(nk * E));
    memset(dva, 0, sizeof(T) * (size_t)(nk * Ev));
    int64_t first = g->causal ? (j0 / SDPA_BR) * SDPA_BR : 0; /* queries before j0 see none of these keys */
    for (int64_t i0 = first; i0 < L; i0 += SDPA_BR) {
      int64_t nq = L - i0 < SDPA_BR ? L - i0 : SDPA_BR;
      F(mm_nt)(nq, SDPA_BC, E, Q + i0 * qrs, qrs, kt, SDPA_BC, p, SDPA_BC);
      for (int64_t r = 0; r < nq; r++) {
        int64_t i = i0 + r, lim = nk;
        if (g->causal && i - j0 + 1 < lim) lim = i - j0 + 1;
        if (lim < 0) lim = 0;
        T *s = p + r * SDPA_BC;
        F(scale_row)(s, lim, SDPA_BC, scale, Mk ? Mk + i * g->mrs + j0 * g->mcs : NULL, g->mcs);
        /* P = exp(s - lse); a row whose lse is -inf (nothing unmasked) gives nan, as the
         * composed softmax does */
        T l = LSE[i * lcs];
        if (l == -INFINITY) {
          for (int64_t c = 0; c < SDPA_BC; c++) s[c] = c < lim ? (T)NAN : 0;
        } else {
          F(exp_row)(s, SDPA_BC, l);
        }
      }
      /* dV += P^T dO */
      F(mm_acc)(nk, Ev, nq, p, 1, SDPA_BC, dO + i0 * grs, grs, dva, Ev);
      /* dP = dO V^T */
      F(mm_nt)(nq, SDPA_BC, Ev, dO + i0 * grs, grs, vt_, SDPA_BC, ds, SDPA_BC);
      for (int64_t r = 0; r < nq; r++) F(ds_row)(ds + r * SDPA_BC, p + r * SDPA_BC, SDPA_BC, (T)drow[i0 + r], scale);
      /* dK += dS^T Q, dQ += dS K */
      F(mm_acc)(nk, E, nq, ds, 1, SDPA_BC, Q + i0 * qrs, qrs, dka, E);
      F(mm_acc)(nq, E, nk, ds, SDPA_BC, 1, K + j0 * krs, krs, dQ + i0 * E, E);
    }
    memcpy(dK + j0 * E, dka, sizeof(T) * (size_t)(nk * E));
    memcpy(dV + j0 * Ev, dva, sizeof(T) * (size_t)(nk * Ev));
  }
}

#undef CAT_
#undef CAT
#undef F
#undef NV
#undef vt
#undef vti
#undef INL
