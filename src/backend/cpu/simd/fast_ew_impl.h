/* Template of the fast float32 kernels, included once per ISA by fast_ew.c with:
 *   SFX   suffix of the generated functions (avx512, avx2, c)
 *   TGT   function attribute (target) or nothing
 *   VB    vector width in bytes (64, 32, 16)
 *   VFMA_F(a,b,c), VFMA_D(a,b,c)  fused multiply-add on float / double vectors
 *   VRCP_F(a)  reciprocal estimate of a float vector (>= 12 bits; exact division portably)
 *   VSTNT(p, v)  non-temporal store of a vector to a VB-aligned p (plain store on WebAssembly)
 *   VMAX_F(a, b), VMIN_F(a, b)  a > b ? a : b and a < b ? a : b (x86 maxps/minps: b when
 *                unordered, so VMAX_F(constant, x) keeps a NaN x)
 *   VBLENDS_F(s, a, b)  per lane: b where the sign bit of s is set, else a
 * Written with GCC/clang vector extensions, so the same source becomes AVX-512,
 * AVX2 or SSE2/WebAssembly SIMD128 code. Tails go through a zero-padded vector. */

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, SFX)
#define NF (VB / 4)      /* floats per vector */
#define ND (VB / 8)      /* doubles per vector */

typedef float F(vf) __attribute__((vector_size(VB)));
typedef int32_t F(vi) __attribute__((vector_size(VB)));
typedef double F(vd) __attribute__((vector_size(VB)));
typedef int64_t F(vl) __attribute__((vector_size(VB)));
typedef float F(vfh) __attribute__((vector_size(VB / 2))); /* half a vector of floats = one of doubles */
#define vf F(vf)
#define vi F(vi)
#define vd F(vd)
#define vl F(vl)
#define vfh F(vfh)
#define INL static inline __attribute__((always_inline)) TGT

INL vf F(ldf)(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
INL void F(stf)(float *p, vf v) { memcpy(p, &v, sizeof v); }
INL vf F(spf)(float c) { return (vf){0} + c; }
INL vd F(spd)(double c) { return (vd){0} + c; }
INL vf F(self)(vi m, vf a, vf b) { return (vf)(((vi)a & m) | ((vi)b & ~m)); } /* m ? a : b */
INL vd F(seld)(vl m, vd a, vd b) { return (vd)(((vl)a & m) | ((vl)b & ~m)); }

/* e^xc for xc in [-110, 100] (NaN propagates): xc = n ln2 + r, |r| <= ln2/2 (ln2 in two parts
 * so r is exact), e^r = 1 + r + r^2 q(r) with q of degree 4 (a minimax fit made for this file:
 * relative error 3.1e-9 on |r| <= ln2/2, i.e. one FMA less than the degree-7 Taylor series it
 * replaces at the same ~1 ulp), 2^n by AVX-512's scalef where there is one (one rounding,
 * subnormals right), else built in the exponent bits in two halves so results down to the
 * subnormals are right. corr (when use_corr) is added to r: a small correction of the
 * argument (e.g. the low part of x^2) at the cost of one addition. */
INL vf F(exp_core_x)(vf xc, vf corr, int use_corr) {
  const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  vf t = VFMA_F(xc, F(spf)(1.44269504088896341f), F(spf)(magic));
  vf n = t - magic;
  vf r = VFMA_F(n, F(spf)(-0.693145751953125f), xc); /* ln2 high part: exact product */
  r = VFMA_F(n, F(spf)(-1.4286068202862268e-06f), r);
  if (use_corr) r = r + corr;
  vf q = F(spf)(0.0013814539876911593f);
  q = VFMA_F(q, r, F(spf)(0.008368745127183462f));
  q = VFMA_F(q, r, F(spf)(0.04166839078971328f));
  q = VFMA_F(q, r, F(spf)(0.16666520398845902f));
  q = VFMA_F(q, r, F(spf)(0.49999993432098905f));
  vf p = VFMA_F(q, r, F(spf)(1.0f)); /* (q r + 1) r + 1 = 1 + r + q r^2 */
  p = VFMA_F(p, r, F(spf)(1.0f));
#ifdef VSCALEF_F
  return VSCALEF_F(p, n);
#else
  vi ni = (vi)t - (vi)F(spf)(magic);
  vi n1 = ni >> 1, n2 = ni - n1;
  vf s1 = (vf)((n1 + 127) << 23), s2 = (vf)((n2 + 127) << 23);
  return p * s1 * s2;
#endif
}
INL vf F(exp_core)(vf xc) { return F(exp_core_x)(xc, xc, 0); }
INL vf F(expf)(vf x) {
  /* clamp: min/max keep a NaN x, which then propagates through the arithmetic (any product
   * with the NaN polynomial is NaN whatever the exponent bits) */
  return F(exp_core)(VMAX_F(F(spf)(-110.0f), VMIN_F(F(spf)(100.0f), x)));
}

/* expm1(x) for |x| <= ~20, float: same reduction; e^r - 1 by its Taylor series
 * (no cancellation near 0), then 2^n (e^r - 1) + (2^n - 1). */
INL vf F(expm1f)(vf x) {
  const float magic = 12582912.0f;
  vf t = VFMA_F(x, F(spf)(1.44269504088896341f), F(spf)(magic));
  vf n = t - magic;
  vf r = VFMA_F(n, F(spf)(-0.693145751953125f), x);
  r = VFMA_F(n, F(spf)(-1.4286068202862268e-06f), r);
  vf p = F(spf)(1.0f / 40320);
  p = VFMA_F(p, r, F(spf)(1.0f / 5040));
  p = VFMA_F(p, r, F(spf)(1.0f / 720));
  p = VFMA_F(p, r, F(spf)(1.0f / 120));
  p = VFMA_F(p, r, F(spf)(1.0f / 24));
  p = VFMA_F(p, r, F(spf)(1.0f / 6));
  p = VFMA_F(p, r, F(spf)(0.5f));
  p = p * r * r + r; /* e^r - 1 */
  vi ni = (vi)t - (vi)F(spf)(magic);
  vf s = (vf)((ni + 127) << 23);
  return VFMA_F(s, p, s - 1.0f);
}

/* e^x for x <= 0 or -inf (softmax after subtracting the row max; NaN rows are handled by
 * the callers): the reduction of expf without its overflow/NaN selects (same degree-7
 * polynomial), 2^n in two halves so the subnormal results stay right. */
INL vf F(expnf)(vf x) { return F(exp_core)(VMAX_F(F(spf)(-104.0f), x)); }
/* sigmoid(x) = 1 / (1 + e^-|x|) for x >= 0, e^-|x| / (1 + e^-|x|) below: no overflow,
 * no cancellation. */
INL vf F(sigmoidf)(vf x) {
  vf ax = (vf)((vi)x & 0x7fffffff);
  vf e = F(expnf)(-ax); /* -|x| <= 0: no overflow selects needed; NaN stays NaN */
  vf q = 1.0f + e;      /* in [1, 2] */
  vf d = VRCP_F(q);     /* reciprocal estimate, then one Newton step: ~1 ulp */
  d = VFMA_F(d, VFMA_F(-q, d, F(spf)(1.0f)), d);
  return VBLENDS_F(x, d, e * d); /* x < 0: e d; NaN: e and d are NaN */
}

/* tanh(x) = e / (e + 2) with e = expm1(2x): accurate near 0 too; |x| > 9.1 is +-1 in float */
INL vf F(tanhf)(vf x) {
  vf xc = VMAX_F(F(spf)(-9.1f), VMIN_F(F(spf)(9.1f), x)); /* NaN stays NaN */
  vf e = F(expm1f)(xc + xc);
  return e / (e + 2.0f);
}

/* exp in double (for the erf tail): degree-12 Taylor on |r| <= ln2/2, for y in [-745, 0] */
INL vd F(expd)(vd y) {
  const double magic = 6755399441055744.0; /* 1.5 * 2^52 */
  vd t = VFMA_D(y, F(spd)(1.4426950408889634), F(spd)(magic));
  vd n = t - magic;
  vd r = VFMA_D(n, F(spd)(-6.93147180369123816490e-01), y);
  r = VFMA_D(n, F(spd)(-1.90821492927058770002e-10), r);
  vd p = F(spd)(1.0 / 479001600);
  static const double c[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,
                             1.0 / 120,      1.0 / 24,      1.0 / 6,      0.5,          1.0,        1.0};
#pragma GCC unroll 12
  for (int i = 0; i < 12; i++) p = VFMA_D(p, r, F(spd)(c[i]));
  vl ni = (vl)t - (vl)F(spd)(magic);
  return p * (vd)((ni + 1023) << 52);
}

/* Phi(x) = P(X <= x) for a standard normal, in double: erf(z)/z as a polynomial in z^2
 * for |z| < 0.8, else erfc(|z|) = e^-z^2 Q(1/(1+|z|)) with Q a Chebyshev fit (relative
 * error < 1e-9 on [0.8, 10]); beyond |z| = 10 Phi is 0 or 1 in double. Coefficients
 * fitted for this file (least squares on Chebyshev nodes). */
INL vd F(phid)(vd x) {
  vd z = x * 0.70710678118654752440;
  vd az = (vd)((vl)z & 0x7fffffffffffffffLL);
  /* small |z|: erf(z) = z * P(z^2) */
  vd s = z * z;
  vd pe = F(spd)(ERF_P7);
  pe = VFMA_D(pe, s, F(spd)(ERF_P6));
  pe = VFMA_D(pe, s, F(spd)(ERF_P5));
  pe = VFMA_D(pe, s, F(spd)(ERF_P4));
  pe = VFMA_D(pe, s, F(spd)(ERF_P3));
  pe = VFMA_D(pe, s, F(spd)(ERF_P2));
  pe = VFMA_D(pe, s, F(spd)(ERF_P1));
  pe = VFMA_D(pe, s, F(spd)(ERF_P0));
  vd phi_small = 0.5 + 0.5 * (z * pe);
  /* large |z|: erfc(|z|) */
  vd azc = F(seld)(az > 10.0, F(spd)(10.0), az);
  azc = F(seld)(azc < 0.8, F(spd)(0.8), azc);
  vd u = 1.0 / (1.0 + azc);
  vd tt = VFMA_D(u, F(spd)(ERFC_USCALE), F(spd)(ERFC_UOFF)); /* u mapped to [-1, 1] */
  vd q = F(spd)(erfc_q[ERFC_DEG]);
#pragma GCC unroll 16
  for (int i = ERFC_DEG - 1; i >= 0; i--) q = VFMA_D(q, tt, F(spd)(erfc_q[i]));
  vd ec = F(expd)(-(azc * azc)) * q;
  ec = F(seld)(az > 10.0, F(spd)(0.0), ec);
  vd phi_big = F(seld)(z > 0.0, 1.0 - 0.5 * ec, 0.5 * ec);
  return F(seld)(az < 0.8, phi_small, phi_big);
}

/* ---- unary ops over n contiguous floats ---- */
/* gelu (erf form) in float lanes: x Phi(x), Phi(x) = 1 - E/2 (x >= 0) or E/2 (x < 0) with
 * E = erfc(a), a = |x|/sqrt(2). E = e^(-a^2) t R(u): t = 1/(1 + a), u = 2.2 t - 1.2 in
 * [-1, 1] over a in [0, 10], R a degree-12 fit (GELU_Q, relative error 2.5e-7 evaluated in
 * float). a^2 = x^2/2 is split exactly (x^2 = hi + lo, below) so the exponential does
 * not inherit the rounding of a: e^(-a^2) = e^(-hi/2) (1 - lo/2). Beyond |x| = 14 Phi is
 * 0 or 1 in float (E = 0: -inf gives NaN like the reference). */
#ifdef VSCALEF_F
/* e^(xc + corr) for xc in [-110, 0] as exp_core_x, one degree lower: e^r = 1 + r + r^2 q(r), q of
 * degree 3 (a minimax fit made for this file: relative error 1.05e-7 on |r| <= ln2/2, ~1.5 ulp
 * evaluated in float), for gelu's erf form whose own error leaves room for it */
INL vf F(exp_core_d5)(vf xc, vf corr) {
  const float magic = 12582912.0f;
  vf n = VFMA_F(xc, F(spf)(1.44269504088896341f), F(spf)(magic)) - magic;
  vf r = VFMA_F(n, F(spf)(-0.693145751953125f), xc);
  r = VFMA_F(n, F(spf)(-1.4286068202862268e-06f), r) + corr;
  vf q = F(spf)(0.00831250381f);
  q = VFMA_F(q, r, F(spf)(0.0418903343f));
  q = VFMA_F(q, r, F(spf)(0.166671157f));
  q = VFMA_F(q, r, F(spf)(0.499992311f));
  vf p = VFMA_F(q, r, F(spf)(1.0f));
  p = VFMA_F(p, r, F(spf)(1.0f));
  return VSCALEF_F(p, n);
}
/* AVX-512: sum_j tab[j][k] s^j (Horner, degree 5) for the piece k given by the low 5 bits of t's
 * bits in each lane (vpermt2ps picks from the 32 entries of each row of tab): the piecewise
 * polynomials of both gelu forms (gelu_erf_vec's R, gelu_tab_vec's lower tail) */
INL vf F(tab32_poly5)(const float (*tab)[32], vf t, vf s) {
  __m512i ix = (__m512i)t;
#define GT_(j) ((vf)_mm512_permutex2var_ps(_mm512_load_ps(tab[j]), ix, _mm512_load_ps(tab[j] + 16)))
  vf q = VFMA_F(GT_(5), s, GT_(4));
  q = VFMA_F(q, s, GT_(3));
  q = VFMA_F(q, s, GT_(2));
  q = VFMA_F(q, s, GT_(1));
  return VFMA_F(q, s, GT_(0));
#undef GT_
}
/* AVX-512: the same x Phi(x) with Phi(-y) = e^(-y^2/2) R(y), y = |x| clamped to 14.5, R from a
 * table of 32 degree-5 pieces (gelu_t in fast_ew.c, relative error 1.5e-7): the piece is picked by
 * vpermt2ps from the low bits of round(2y) + 1.5 * 2^23, so no reciprocal and no degree-12
 * polynomial, and a degree-5 exponential (33 vector operations instead of 44; 0.49 -> 0.32 ns per
 * float in cache, 1 thread). -y^2/2 = hi + lo exactly (m = -y/2 is exact), lo enters the
 * exponential's reduced argument. Max error ~4 ulp over [-13, 20] (bound 6: the exponential's
 * ~1.5 ulp, R's ~2.5, three roundings). */
INL vf F(gelu_erf_vec)(vf x) {
  /* |x| clamped to 14.5 by one vrangeps (the argument of smaller magnitude, sign cleared); a NaN
   * x gives a NaN y */
  vf y = (vf)_mm512_range_ps((__m512)x, _mm512_set1_ps(14.5f), 0x0A);
  const float magic = 12582912.0f;
  vf t = VFMA_F(y, F(spf)(2.0f), F(spf)(magic)); /* its low 5 bits: k = round(2y) <= 29 */
  vf s = VFMA_F(t - magic, F(spf)(-0.5f), y);    /* y - k/2, exact */
  vf r = F(tab32_poly5)(gelu_t, t, s);
  vf m = y * -0.5f;
  vf hi = m * y;
  vf lo = VFMA_F(m, y, -hi);
  vf q = F(exp_core_d5)(hi, lo) * r; /* Phi(-y); hi >= -105.2, inside the exponential's range */
  return x * VBLENDS_F(x, 1.0f - q, q);  /* +inf: 1 - 0 = 1; -inf: 0 * -inf = NaN (as the reference) */
}
#else
INL vf F(gelu_erf_vec)(vf x) {
  vf ax = (vf)((vi)x & 0x7fffffff);
  vf xc = VMIN_F(F(spf)(14.5f), ax); /* NaN stays NaN */
  vf a = xc * 0.70710678118654752f;
  vf q = 1.0f + a, t = VRCP_F(q);
  t = VFMA_F(t, VFMA_F(-q, t, F(spf)(1.0f)), t); /* 1 / (1 + a): estimate + Newton step */
  vf u = VFMA_F(t, F(spf)(2.2f), F(spf)(-1.2f));
  vf r = F(spf)(GELU_Q12);
  r = VFMA_F(r, u, F(spf)(GELU_Q11));
  r = VFMA_F(r, u, F(spf)(GELU_Q10));
  r = VFMA_F(r, u, F(spf)(GELU_Q9));
  r = VFMA_F(r, u, F(spf)(GELU_Q8));
  r = VFMA_F(r, u, F(spf)(GELU_Q7));
  r = VFMA_F(r, u, F(spf)(GELU_Q6));
  r = VFMA_F(r, u, F(spf)(GELU_Q5));
  r = VFMA_F(r, u, F(spf)(GELU_Q4));
  r = VFMA_F(r, u, F(spf)(GELU_Q3));
  r = VFMA_F(r, u, F(spf)(GELU_Q2));
  r = VFMA_F(r, u, F(spf)(GELU_Q1));
  r = VFMA_F(r, u, F(spf)(GELU_Q0));
  /* x^2 = hi + lo exactly: one FMA where there is a fused one, else (the portable / SIMD128
   * path) Dekker's product, xh keeping the top 12 significant bits of x so every partial
   * product is exact */
  vf hi = xc * xc;
#ifdef VFMA_FUSED
  vf lo = VFMA_F(xc, xc, -hi);
#else
  vf xh = (vf)((vi)xc & (int32_t)0xfffff000), xl = xc - xh;
  vf lo = ((xh * xh - hi) + (xh + xh) * xl) + xl * xl;
#endif
  /* e^(-hi/2 - lo/2): lo/2 enters the reduced argument (|lo/2| <= 2^-24 hi/2, so e^(-lo/2)
   * = 1 - lo/2 to float precision). Past |x| = 14.4 the clamp of expnf holds the argument at
   * -104 and E is a few subnormal ulps at most */
  vf e = F(exp_core_x)(VMAX_F(F(spf)(-104.0f), hi * -0.5f), lo * -0.5f, 1);
  vf E = e * (r * t);
  vf phi = VBLENDS_F(x, 1.0f - 0.5f * E, 0.5f * E);
  return x * phi;
}
#endif

/* gelu (tanh form): 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3) */
#ifdef VSCALEF_F
/* AVX-512: x / (1 + e^w), w = -2u clamped to [-30, 200], e^w = 2^n p as in exp_core_x, so
 * x / (1 + e^w) = x (2^-n / (2^-n + p)) with both scalings exact by vscalefps (a subnormal result
 * rounded twice at most): no |x|, no select, no overflow (22 vector operations instead of 27).
 * 1 + e^-30 is 1 in float and x e^-200 is 0, so the clamp changes nothing. The reciprocal is
 * refined before the product so -0 keeps its sign. Same error bound as the sigmoid form (4 ulp
 * + u's rounding). */
INL vf F(gelu_tanh_vec)(vf x) {
  vf w = x * VFMA_F(x * x, F(spf)(-2 * 0.0356774081363001f), F(spf)(-2 * 0.7978845608028654f));
  w = VMAX_F(F(spf)(-30.0f), VMIN_F(F(spf)(200.0f), w)); /* NaN stays NaN */
  const float magic = 12582912.0f;
  vf nn = VFMA_F(w, F(spf)(-1.44269504088896341f), F(spf)(magic)) - magic; /* -n */
  vf r = VFMA_F(nn, F(spf)(0.693145751953125f), w); /* w - n ln2, ln2 in two parts */
  r = VFMA_F(nn, F(spf)(1.4286068202862268e-06f), r);
  vf q = F(spf)(0.0013814539876911593f); /* e^r: exp_core_x's polynomial */
  q = VFMA_F(q, r, F(spf)(0.008368745127183462f));
  q = VFMA_F(q, r, F(spf)(0.04166839078971328f));
  q = VFMA_F(q, r, F(spf)(0.16666520398845902f));
  q = VFMA_F(q, r, F(spf)(0.49999993432098905f));
  vf p = VFMA_F(q, r, F(spf)(1.0f));
  p = VFMA_F(p, r, F(spf)(1.0f));
  vf den = p + VSCALEF_F(F(spf)(1.0f), nn);
  vf d = VRCP_F(den); /* estimate + one Newton step */
  d = VFMA_F(d, VFMA_F(-den, d, F(spf)(1.0f)), d);
  return x * VSCALEF_F(d, nn); /* -inf: -inf * 0 = NaN, as the reference's -inf * (1 + tanh) */
}
#else
INL vf F(gelu_tanh_vec)(vf x) {
  vf u = x * VFMA_F(x * x, F(spf)(0.0356774081363001f), F(spf)(0.7978845608028654f));
  return x * F(sigmoidf)(u + u); /* NaN: the sigmoid is NaN */
}
#endif

#ifdef VSCALEF_F
/* AVX-512, both gelu forms when every lane has |x| < 31.5/8 (all but ~1e-3 of the vectors of a
 * standard-normal input; 8.2e-5 of its elements lie beyond): gelu = x (1 - q) for x >= 0, x q below,
 * q(|x|) the lower tail read from 32 degree-5 pieces (gelu_tab_erf / gelu_tab_tanh in fast_ew.c,
 * relative error 1.1e-7 evaluated in float) picked by vpermt2ps from round(8|x|): no exponential,
 * no division, 17 vector operations instead of 33 (erf) / 22 (tanh), so the loop keeps up with
 * memory. Any other lane (large, inf, NaN) takes the full forms above (lane by lane). Error:
 * q's 1.1e-7 plus three roundings, ~3 ulp at most (bounds 6 and 4 in test_fast_ulp.c). */
/* the table form for lanes with |x| < 31.5/8 (y = |x|; any other lane gets garbage) */
INL vf F(gelu_tab_near)(vf x, __m512 y, const float (*tab)[32]) {
  const float magic = 12582912.0f;
  vf t = VFMA_F((vf)y, F(spf)(8.0f), F(spf)(magic));     /* low 5 bits: k = round(8|x|) <= 31 */
  vf s = (vf)_mm512_reduce_ps(y, 0x38);                 /* |x| - k/8 (vreduceps: 3 fraction bits, to nearest), exact */
  vf q = F(tab32_poly5)(tab, t, s);
  /* x (1 - q) = x - |x| q for x >= 0 and x q = 0 - |x| q below: max(x, 0) - |x| q, one FMA and one
   * rounding instead of a select, 1 - q and a product (-0: max(+0, -0) is its second operand, -0,
   * and -0 - 0 q = -0 as the reference) */
  return VFMA_F(-(vf)y, q, VMAX_F(F(spf)(0.0f), x));
}
INL vf F(gelu_tab_vec)(vf x, const float (*tab)[32], int tanh_form) {
  __m512 y = _mm512_abs_ps((__m512)x);
  __mmask16 far = _mm512_cmp_ps_mask(y, _mm512_set1_ps(3.9375f), _CMP_NLT_UQ); /* not below, NaN */
  if (__builtin_expect(far != 0, 0)) {
    /* per lane: the table where it holds, the full form elsewhere, so that an element's value does
     * not depend on its neighbours in the vector, which move with the thread split and the output's
     * alignment (session 9: whole-vector selection gave 1-ulp differences between 1 and 2 threads) */
    vf full = tanh_form ? F(gelu_tanh_vec)(x) : F(gelu_erf_vec)(x);
    if (far == 0xffff) return full;
    return (vf)_mm512_mask_blend_ps(far, (__m512)F(gelu_tab_near)(x, y, tab), (__m512)full);
  }
  return F(gelu_tab_near)(x, y, tab);
}
#define GELU_ERF_V(v) F(gelu_tab_vec)((v), gelu_tab_erf, 0)
#define GELU_TANH_V(v) F(gelu_tab_vec)((v), gelu_tab_tanh, 1)
#else
#define GELU_ERF_V(v) F(gelu_erf_vec)(v)
#define GELU_TANH_V(v) F(gelu_tanh_vec)(v)
#endif

/* Stores of a streamed output: NT (non-temporal) stores bypass the caches, so a large output
 * that is not read back soon costs one memory write instead of a read-for-ownership plus a
 * write (what memcpy does for large copies). Used when the caller passes nt (the output is
 * larger than the caches, see ct_fast_nt_wanted); the body starts at the first VB-aligned
 * element of y, the unaligned head and the tail go through a padded vector. */
INL int64_t F(nt_head)(const float *y, int64_t n) {
  int64_t h = (int64_t)(((uintptr_t)VB - ((uintptr_t)y & (VB - 1))) & (VB - 1)) / 4;
  if ((uintptr_t)y & 3) h = n; /* not float-aligned: no vector body */
  return h < n ? h : n;
}
/* Streamed (NT) loops also prefetch their input this many floats ahead: a core keeps only a
 * few cache misses in flight on its own, and the arithmetic between loads would otherwise
 * leave memory idle (prefetching past the end of x is harmless: prefetches do not fault).
 * PF_R(p): the read prefetch of every streamed kernel here, prefetcht1 (locality 2: into L2, not
 * L1). Session 9 on the Intel Xeon VM (AVX-512 + AMX, 2 vCPUs; bench/rows_pf.c, bench/results/
 * s9_rows.md): a 16M-float NT map with prefetchnta 4 KiB ahead ran at 0.6-0.7x glibc memcpy,
 * prefetcht0 4-8 KiB at 1.1-2.0x, prefetcht1 / t2 8-16 KiB at 1.6-2.06x (best or equal-best with 0,
 * 8 and 17 FMAs per vector); on the session-8 AMD VM the hint did not matter for softmax.
 * CT_PF_LOC / CT_PF_AHEAD override them at build time (experiments). */
#ifndef CT_PF_LOC
#define CT_PF_LOC 2
#endif
#ifndef CT_PF_AHEAD
#define CT_PF_AHEAD 2048
#endif
#define PF_AHEAD CT_PF_AHEAD
#define PF_R(p) __builtin_prefetch((p), 0, CT_PF_LOC)
/* y[i0, i1) = EXPR(v) with v the input vector at x + i (tails padded with PAD) */
#define MAP1(x, y, i0, i1, PAD, EXPR)                                        \
  do {                                                                      \
    int64_t len_ = (i1) - (i0);                                             \
    if (len_ > 0) {                                                         \
      float tb_[NF];                                                        \
      for (int k_ = 0; k_ < NF; k_++) tb_[k_] = k_ < len_ ? (x)[(i0) + k_] : (PAD); \
      vf v = F(ldf)(tb_);                                                   \
      vf r_ = (EXPR);                                                       \
      F(stf)(tb_, r_);                                                      \
      memcpy((y) + (i0), tb_, sizeof(float) * (size_t)len_);                \
    }                                                                       \
  } while (0)
/* the whole of y[0, n) = EXPR(v), v = x[i..i+NF), NF at a time, NT body when nt */
#define MAP_ROW(x, y, n, nt, PAD, EXPR)                                      \
  do {                                                                      \
    int64_t i_ = 0;                                                         \
    if (nt) {                                                               \
      int64_t h_ = F(nt_head)((y), (n));                                    \
      for (; i_ + NF <= h_; i_ += NF) { vf v = F(ldf)((x) + i_); F(stf)((y) + i_, (EXPR)); } \
      MAP1(x, y, i_, h_, PAD, EXPR);                                        \
      i_ = h_;                                                              \
      /* two vectors per step: long dependency chains (gelu) overlap better */ \
      for (; i_ + 2 * NF <= (n); i_ += 2 * NF) {                            \
        PF_R((x) + i_ + PF_AHEAD);                                          \
        PF_R((x) + i_ + NF + PF_AHEAD);                                     \
        vf r0_, r1_;                                                        \
        { vf v = F(ldf)((x) + i_); r0_ = (EXPR); }                          \
        { vf v = F(ldf)((x) + i_ + NF); r1_ = (EXPR); }                     \
        VSTNT((y) + i_, r0_);                                               \
        VSTNT((y) + i_ + NF, r1_);                                          \
      }                                                                     \
      for (; i_ + NF <= (n); i_ += NF) {                                    \
        vf v = F(ldf)((x) + i_);                                            \
        vf r_ = (EXPR);                                                     \
        VSTNT((y) + i_, r_);                                                \
      }                                                                     \
    } else {                                                                \
      for (; i_ + 2 * NF <= (n); i_ += 2 * NF) {                            \
        vf r0_, r1_;                                                        \
        { vf v = F(ldf)((x) + i_); r0_ = (EXPR); }                          \
        { vf v = F(ldf)((x) + i_ + NF); r1_ = (EXPR); }                     \
        F(stf)((y) + i_, r0_);                                              \
        F(stf)((y) + i_ + NF, r1_);                                         \
      }                                                                     \
      for (; i_ + NF <= (n); i_ += NF) { vf v = F(ldf)((x) + i_); F(stf)((y) + i_, (EXPR)); } \
    }                                                                       \
    MAP1(x, y, i_, (n), PAD, EXPR);                                         \
  } while (0)

/* one loop per op (the op is not switched inside the loop) */
TGT static void F(unary)(int op, int gelu_tanh, const float *x, float *y, int64_t n, int nt) {
  switch (op) {
    case CT_OP_neg: MAP_ROW(x, y, n, nt, 0.0f, -v); break;
    case CT_OP_exp: MAP_ROW(x, y, n, nt, 0.0f, F(expf)(v)); break;
    case CT_OP_relu: MAP_ROW(x, y, n, nt, 0.0f, F(self)(v <= 0.0f, F(spf)(0.0f), v)); break;
    case CT_OP_sigmoid: MAP_ROW(x, y, n, nt, 0.0f, F(sigmoidf)(v)); break;
    case CT_OP_silu: MAP_ROW(x, y, n, nt, 0.0f, v * F(sigmoidf)(v)); break;
    case CT_OP_tanh: MAP_ROW(x, y, n, nt, 0.0f, F(tanhf)(v)); break;
    case CT_OP_gelu:
      if (gelu_tanh) MAP_ROW(x, y, n, nt, 0.0f, GELU_TANH_V(v));
      else MAP_ROW(x, y, n, nt, 0.0f, GELU_ERF_V(v));
      break;
    default: MAP_ROW(x, y, n, nt, 0.0f, v); break;
  }
}

/* ---- binary: add, sub, mul, div; sa / sb = 0 means that operand is one broadcast value ---- */
/* y = a op b; an operand with stride flag 0 is one broadcast value (loaded once) */
#define BIN_ROW(OPX)                                                                    \
  do {                                                                                  \
    if (sa && sb) {                                                                     \
      int64_t i_ = 0, h_ = nt ? F(nt_head)(y, n) : 0;                                   \
      for (; i_ < h_; i_++) { float p_ = a[i_], q_ = b[i_]; y[i_] = OPX(p_, q_); }      \
      if (nt)                                                                           \
        for (; i_ + NF <= n; i_ += NF) {                                                \
          PF_R(a + i_ + PF_AHEAD);                                                      \
          PF_R(b + i_ + PF_AHEAD);                                                      \
          vf r_ = OPX(F(ldf)(a + i_), F(ldf)(b + i_));                                  \
          VSTNT(y + i_, r_);                                                            \
        }                                                                               \
      else                                                                              \
        for (; i_ + NF <= n; i_ += NF) F(stf)(y + i_, OPX(F(ldf)(a + i_), F(ldf)(b + i_))); \
      for (; i_ < n; i_++) { float p_ = a[i_], q_ = b[i_]; y[i_] = OPX(p_, q_); }       \
    } else if (sa) {                                                                    \
      vf vb_ = F(spf)(b[0]);                                                            \
      MAP_ROW(a, y, n, nt, 1.0f, OPX(v, vb_));                                          \
    } else if (sb) {                                                                    \
      vf va_ = F(spf)(a[0]);                                                            \
      MAP_ROW(b, y, n, nt, 1.0f, OPX(va_, v));                                          \
    } else {                                                                            \
      float r_ = OPX(a[0], b[0]);                                                       \
      for (int64_t i_ = 0; i_ < n; i_++) y[i_] = r_;                                    \
    }                                                                                   \
  } while (0)
#define OP_ADD(p, q) ((p) + (q))
#define OP_SUB(p, q) ((p) - (q))
#define OP_MUL(p, q) ((p) * (q))
#define OP_DIV(p, q) ((p) / (q))
TGT static void F(binary)(int op, const float *a, int sa, const float *b, int sb, float *y, int64_t n, int nt) {
  switch (op) {
    case CT_OP_add: BIN_ROW(OP_ADD); break;
    case CT_OP_sub: BIN_ROW(OP_SUB); break;
    case CT_OP_mul: BIN_ROW(OP_MUL); break;
    default: BIN_ROW(OP_DIV); break;
  }
}
#undef OP_ADD
#undef OP_SUB
#undef OP_MUL
#undef OP_DIV
#undef BIN_ROW

/* y = a + al * b, both operands full rows, with the reference's rounding (kernels_binary.c computes
 * x + alpha y in double and rounds once to float): the same double operations, lane by lane (no
 * contraction into a fused multiply-add under -std=c11), so the bits equal the reference's. */
TGT static void F(add_alpha)(const float *a, const float *b, double al, float *y, int64_t n) {
  vd va = F(spd)(al);
  int64_t i = 0;
  for (; i + ND <= n; i += ND) {
    vfh ha, hb;
    memcpy(&ha, a + i, sizeof ha);
    memcpy(&hb, b + i, sizeof hb);
    vd prod = __builtin_convertvector(hb, vd) * va;
    vfh o = __builtin_convertvector(__builtin_convertvector(ha, vd) + prod, vfh);
    memcpy(y + i, &o, sizeof o);
  }
  for (; i < n; i++) {
    double prod = al * (double)b[i];
    y[i] = (float)((double)a[i] + prod);
  }
}

/* ---- row reductions ---- */
/* sum in double lanes (exact for any realistic count of float32 integers; ~1e-16 relative) */
TGT static double F(sum)(const float *x, int64_t n) {
  vd acc0 = F(spd)(0), acc1 = F(spd)(0);
  int64_t i = 0;
  for (; i + NF <= n; i += NF) {
    vfh h0, h1;
    memcpy(&h0, x + i, sizeof h0);
    memcpy(&h1, x + i + ND, sizeof h1);
    acc0 += __builtin_convertvector(h0, vd);
    acc1 += __builtin_convertvector(h1, vd);
  }
  acc0 += acc1;
  double s = 0;
  for (int k = 0; k < ND; k++) s += acc0[k];
  for (; i < n; i++) s += (double)x[i];
  return s;
}
/* max (sign > 0) or min of n >= 1 floats; NaN if any is NaN. Exact NaN tracking (a compare and an or
 * per vector on one chain): the fallback of minmax below. */
TGT static float F(minmax_exact)(const float *x, int64_t n, int sign) {
  vf m = F(spf)(x[0]);
  vi nan = (vi){0};
  int64_t i = 0;
  for (; i + NF <= n; i += NF) {
    vf v = F(ldf)(x + i);
    nan |= v != v;
    m = sign > 0 ? F(self)(v > m, v, m) : F(self)(v < m, v, m);
  }
  float r = m[0];
  bool any_nan = false;
  for (int k = 0; k < NF; k++) {
    any_nan = any_nan || nan[k];
    if (sign > 0 ? m[k] > r : m[k] < r) r = m[k];
  }
  for (; i < n; i++) {
    if (x[i] != x[i]) any_nan = true;
    else if (sign > 0 ? x[i] > r : x[i] < r) r = x[i];
  }
  return any_nan ? NAN : r;
}
/* The same with four independent max (min) chains that skip NaN lanes (VMAX_F(v, m) keeps m when v
 * is NaN) and one chain c += v * 0, which turns NaN when any element is NaN or +-inf: then the exact
 * loop above decides (inf inputs pay twice; the common case is two vector operations per vector
 * instead of a compare-select chain whose latency bound the old loop to ~1/3 of memory's pace). */
TGT static float F(minmax)(const float *x, int64_t n, int sign) {
  if (n < 4 * NF) return F(minmax_exact)(x, n, sign);
  vf m0 = F(ldf)(x), m1 = m0, m2 = m0, m3 = m0, c0 = F(spf)(0.0f), c1 = c0, z = c0;
  int64_t i = 0;
  if (sign > 0)
    for (; i + 4 * NF <= n; i += 4 * NF) {
      vf v0 = F(ldf)(x + i), v1 = F(ldf)(x + i + NF), v2 = F(ldf)(x + i + 2 * NF), v3 = F(ldf)(x + i + 3 * NF);
      m0 = VMAX_F(v0, m0), m1 = VMAX_F(v1, m1), m2 = VMAX_F(v2, m2), m3 = VMAX_F(v3, m3);
      c0 = VFMA_F(v0 + v1, z, c0), c1 = VFMA_F(v2 + v3, z, c1);
    }
  else
    for (; i + 4 * NF <= n; i += 4 * NF) {
      vf v0 = F(ldf)(x + i), v1 = F(ldf)(x + i + NF), v2 = F(ldf)(x + i + 2 * NF), v3 = F(ldf)(x + i + 3 * NF);
      m0 = VMIN_F(v0, m0), m1 = VMIN_F(v1, m1), m2 = VMIN_F(v2, m2), m3 = VMIN_F(v3, m3);
      c0 = VFMA_F(v0 + v1, z, c0), c1 = VFMA_F(v2 + v3, z, c1);
    }
  /* the last < 4 vectors: the final 4 vectors of the row again (max / min do not mind repeats) */
  if (i < n) {
    i = n - 4 * NF;
    vf v0 = F(ldf)(x + i), v1 = F(ldf)(x + i + NF), v2 = F(ldf)(x + i + 2 * NF), v3 = F(ldf)(x + i + 3 * NF);
    m0 = sign > 0 ? VMAX_F(v0, m0) : VMIN_F(v0, m0), m1 = sign > 0 ? VMAX_F(v1, m1) : VMIN_F(v1, m1);
    m2 = sign > 0 ? VMAX_F(v2, m2) : VMIN_F(v2, m2), m3 = sign > 0 ? VMAX_F(v3, m3) : VMIN_F(v3, m3);
    c0 = VFMA_F(v0 + v1, z, c0), c1 = VFMA_F(v2 + v3, z, c1);
  }
  vf c = c0 + c1;
  for (int k = 0; k < NF; k++)
    if (c[k] != 0.0f) return F(minmax_exact)(x, n, sign); /* NaN or inf somewhere */
  m0 = sign > 0 ? VMAX_F(m1, m0) : VMIN_F(m1, m0);
  m2 = sign > 0 ? VMAX_F(m3, m2) : VMIN_F(m3, m2);
  m0 = sign > 0 ? VMAX_F(m2, m0) : VMIN_F(m2, m0);
  float r = m0[0];
  for (int k = 1; k < NF; k++)
    if (sign > 0 ? m0[k] > r : m0[k] < r) r = m0[k];
  return r;
}

/* mean and biased variance of a contiguous row (two passes in double) */
TGT static void F(moments_row)(const float *x, int64_t n, double *mean, double *var) {
  double m = F(sum)(x, n) / (double)n;
  vd vm = F(spd)(m), acc = F(spd)(0);
  int64_t i = 0;
  for (; i + ND <= n; i += ND) {
    vfh h;
    memcpy(&h, x + i, sizeof h);
    vd d = __builtin_convertvector(h, vd) - vm;
    acc = VFMA_D(d, d, acc);
  }
  double q = 0;
  for (int k = 0; k < ND; k++) q += acc[k];
  for (; i < n; i++) q += ((double)x[i] - m) * ((double)x[i] - m);
  *mean = m;
  *var = q / (double)n;
}


/* ==== fused row kernels (norms, softmax, cross-entropy; see fast_norm.h) ====
 * Sums run in float lanes with four independent accumulators over blocks of RB elements,
 * each block's total added in double (so long rows keep ~1e-7 relative accuracy); tails
 * (< one vector) in scalar double. */
#define RB 2048
INL double F(hsum)(vf v) {
  double s = 0;
  for (int k = 0; k < NF; k++) s += (double)v[k];
  return s;
}

/* The row kernels read a row from memory once, then work on it in L1 for a pass or two:
 * while they do, the next row (pf, NULL for the last) is prefetched, so its memory traffic
 * overlaps this row's arithmetic instead of following it. One call covers 4 vectors. mode: 0 read
 * (prefetcht0: rows in L2 come on to L1), 1 write, 2 streamed read (PF_R: the rows come from memory;
 * session 9 measured prefetcht0 5-8% slower than t1 there, and t1 5-8% slower than t0 in cache) */
INL void F(pf4)(const float *pf, int64_t i, int mode) {
  if (!pf) return;
  for (int k = 0; k < NF / 4; k++) {
    if (mode == 1) __builtin_prefetch(pf + i + 16 * k, 1);
    else if (mode == 2) PF_R(pf + i + 16 * k);
    else __builtin_prefetch(pf + i + 16 * k, 0);
  }
}

/* scalar e^x (x <= 0) through the vector routine, for tails */
INL float F(expn1)(float x) {
  vf v = F(spf)(x);
  return F(expnf)(v)[0];
}
/* e^x for x <= 0 or -inf in softmax / log-sum-exp sums: expnf, at AVX-512 from a table (8 vector
 * operations instead of exp_core_d5's 10, of softmax's ~19 per vector): x = k/32 ln2 + r with
 * k = round(32 x / ln2), 2^(k/32) = 2^floor(k/32) exp2_t32[k mod 32] (vpermt2ps picks the entry
 * from the low 5 bits of t; scalef takes the floor of k/32 itself), e^r ~ 1 + r (c1 + c2 r) on
 * |r| <= ln2/64 (a minimax fit made for this file: relative error 5.3e-8). ln2 is one float, so r
 * carries |k/32| 1.9e-9 of error: in all <= 1.75 + 0.05 |x| ulp (tests/c/test_fast_rows.c checks
 * softmax within 6 + |x - max| ulp, the allowance for the rounding of x - max that PyTorch's float
 * kernel has too) */
#ifdef VSCALEF_F
INL vf F(expsm)(vf x) {
  vf xc = VMAX_F(F(spf)(-104.0f), x);                                      /* -inf: 0; NaN stays */
  const float magic = 393216.0f;                                           /* 1.5 * 2^18: rounds to 1/32 */
  vf t = VFMA_F(xc, F(spf)(1.44269504088896341f), F(spf)(magic));          /* low 5 bits: k mod 32 */
  vf kq = t - magic;                                                       /* k / 32, exact */
  vf r = VFMA_F(kq, F(spf)(-0.693147182f), xc);                            /* kq ln2f exact in the FMA */
  vf tj = (vf)_mm512_permutex2var_ps(_mm512_load_ps(exp2_t32), (__m512i)t, _mm512_load_ps(exp2_t32 + 16));
  vf p = VFMA_F(r, F(spf)(0.50000113f), F(spf)(1.0000147f));
  return VSCALEF_F(VFMA_F(tj * r, p, tj), kq); /* tj + tj r p, times 2^floor(kq) */
}
#else
INL vf F(expsm)(vf x) { return F(expnf)(x); }
#endif
INL float F(expsm1)(float x) {
  vf v = F(spf)(x);
  return F(expsm)(v)[0];
}

/* max of a row and whether it holds a NaN (compare-select chains: the exact form, see rowmax) */
INL float F(rowmax_exact)(const float *x, int64_t n, bool *nan) {
  vf m0 = F(spf)(-INFINITY), m1 = m0;
  vi bad = (vi){0};
  int64_t i = 0;
  for (; i + 2 * NF <= n; i += 2 * NF) {
    vf a = F(ldf)(x + i), b = F(ldf)(x + i + NF);
    bad |= (a != a) | (b != b);
    m0 = F(self)(a > m0, a, m0);
    m1 = F(self)(b > m1, b, m1);
  }
  for (; i + NF <= n; i += NF) {
    vf a = F(ldf)(x + i);
    bad |= a != a;
    m0 = F(self)(a > m0, a, m0);
  }
  m0 = F(self)(m1 > m0, m1, m0);
  float r = -INFINITY;
  bool any = false;
  for (int k = 0; k < NF; k++) {
    any = any || bad[k];
    if (m0[k] > r) r = m0[k];
  }
  for (; i < n; i++) {
    if (x[i] != x[i]) any = true;
    else if (x[i] > r) r = x[i];
  }
  *nan = any;
  return r;
}
/* The same as minmax does it: four max chains that skip NaN lanes and one chain c += v * 0 that turns
 * NaN when the row holds a NaN or an inf, in which case rowmax_exact decides (the compare-select
 * chains took a quarter of softmax_row2's time); the same max value */
INL float F(rowmax)(const float *x, int64_t n, bool *nan) {
  if (n < 4 * NF) return F(rowmax_exact)(x, n, nan);
  vf m0 = F(ldf)(x), m1 = m0, m2 = m0, m3 = m0, c0 = F(spf)(0.0f), c1 = c0, z = c0;
  int64_t i = 0;
  for (; i + 4 * NF <= n; i += 4 * NF) {
    vf v0 = F(ldf)(x + i), v1 = F(ldf)(x + i + NF), v2 = F(ldf)(x + i + 2 * NF), v3 = F(ldf)(x + i + 3 * NF);
    m0 = VMAX_F(v0, m0), m1 = VMAX_F(v1, m1), m2 = VMAX_F(v2, m2), m3 = VMAX_F(v3, m3);
    c0 = VFMA_F(v0 + v1, z, c0), c1 = VFMA_F(v2 + v3, z, c1);
  }
  if (i < n) { /* the last < 4 vectors: the row's final 4 vectors again */
    i = n - 4 * NF;
    vf v0 = F(ldf)(x + i), v1 = F(ldf)(x + i + NF), v2 = F(ldf)(x + i + 2 * NF), v3 = F(ldf)(x + i + 3 * NF);
    m0 = VMAX_F(v0, m0), m1 = VMAX_F(v1, m1), m2 = VMAX_F(v2, m2), m3 = VMAX_F(v3, m3);
    c0 = VFMA_F(v0 + v1, z, c0), c1 = VFMA_F(v2 + v3, z, c1);
  }
  vf c = c0 + c1;
  for (int k = 0; k < NF; k++)
    if (c[k] != 0.0f) return F(rowmax_exact)(x, n, nan);
  m0 = VMAX_F(VMAX_F(m1, m0), VMAX_F(m3, m2));
  float r = m0[0];
  for (int k = 1; k < NF; k++) r = m0[k] > r ? m0[k] : r;
  *nan = false;
  return r;
}

/* sum of x [* w] over n <= RB elements */
INL double F(bsum)(const float *x, const float *w, int64_t n) {
  vf a0 = F(spf)(0), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * NF <= n; i += 4 * NF) {
    vf x0 = F(ldf)(x + i), x1 = F(ldf)(x + i + NF), x2 = F(ldf)(x + i + 2 * NF), x3 = F(ldf)(x + i + 3 * NF);
    if (w) {
      x0 = x0 * F(ldf)(w + i), x1 = x1 * F(ldf)(w + i + NF);
      x2 = x2 * F(ldf)(w + i + 2 * NF), x3 = x3 * F(ldf)(w + i + 3 * NF);
    }
    a0 += x0, a1 += x1, a2 += x2, a3 += x3;
  }
  for (; i + NF <= n; i += NF) a0 += w ? F(ldf)(x + i) * F(ldf)(w + i) : F(ldf)(x + i);
  double s = F(hsum)((a0 + a1) + (a2 + a3));
  for (; i < n; i++) s += (double)x[i] * (w ? w[i] : 1.0f);
  return s;
}
/* sum of e^(x - m) over n <= RB elements (m finite); y != NULL also stores them; pfm: pf4's mode */
INL double F(bsumexp)(const float *x, float *y, int64_t n, float m, const float *pf, int pfm) {
  vf vm = F(spf)(m), a0 = F(spf)(0), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * NF <= n; i += 4 * NF) {
    F(pf4)(pf, i, pfm);
    vf e0 = F(expsm)(F(ldf)(x + i) - vm), e1 = F(expsm)(F(ldf)(x + i + NF) - vm);
    vf e2 = F(expsm)(F(ldf)(x + i + 2 * NF) - vm), e3 = F(expsm)(F(ldf)(x + i + 3 * NF) - vm);
    if (y) {
      F(stf)(y + i, e0);
      F(stf)(y + i + NF, e1);
      F(stf)(y + i + 2 * NF, e2);
      F(stf)(y + i + 3 * NF, e3);
    }
    a0 += e0, a1 += e1, a2 += e2, a3 += e3;
  }
  for (; i + NF <= n; i += NF) {
    vf e = F(expsm)(F(ldf)(x + i) - vm);
    if (y) F(stf)(y + i, e);
    a0 += e;
  }
  double s = F(hsum)((a0 + a1) + (a2 + a3));
  for (; i < n; i++) {
    float e = F(expsm1)(x[i] - m);
    if (y) y[i] = e;
    s += e;
  }
  return s;
}
/* sums of gw = g [* w] and of gw (x - m) r over n <= RB elements */
INL void F(bgrad)(const float *x, const float *g, const float *w, int64_t n, float m, float r, double *sa, double *sb) {
  vf vm = F(spf)(m), vr = F(spf)(r), a0 = F(spf)(0), a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 2 * NF <= n; i += 2 * NF) {
    vf g0 = F(ldf)(g + i), g1 = F(ldf)(g + i + NF);
    if (w) g0 = g0 * F(ldf)(w + i), g1 = g1 * F(ldf)(w + i + NF);
    vf h0 = (F(ldf)(x + i) - vm) * vr, h1 = (F(ldf)(x + i + NF) - vm) * vr;
    a0 += g0, a1 += g1;
    b0 = VFMA_F(g0, h0, b0), b1 = VFMA_F(g1, h1, b1);
  }
  for (; i + NF <= n; i += NF) {
    vf g0 = F(ldf)(g + i);
    if (w) g0 = g0 * F(ldf)(w + i);
    vf h0 = (F(ldf)(x + i) - vm) * vr;
    a0 += g0;
    b0 = VFMA_F(g0, h0, b0);
  }
  double ta = F(hsum)(a0 + a1), tb = F(hsum)(b0 + b1);
  for (; i < n; i++) {
    double gw = (double)g[i] * (w ? w[i] : 1.0f);
    ta += gw;
    tb += gw * (double)((x[i] - m) * r);
  }
  *sa += ta;
  *sb += tb;
}
#define BLOCKS(i0, len, n) for (int64_t i0 = 0, len; i0 < (n) && ((len = (n) - i0 < RB ? (n) - i0 : RB), 1); i0 += RB)

/* One read of a row for softmax: the row max M and sum_i e^(x_i - M) together ("online"
 * softmax). Each lane keeps its running max m and a float sum relative to it; per group of 4
 * vectors the max grows first and the sums are rescaled by e^(m_old - m_new) (one extra
 * exponential per 4 vectors, no branch). Every RB elements the float sums go into double
 * lanes (rescaled the same way), so long rows keep ~1e-7 relative accuracy. Lanes start at
 * -FLT_MAX, not -inf, so a lane that only sees -inf sums 0 instead of NaN. NaN anywhere:
 * *nan. Returns the max (-FLT_MAX if every element is -inf), *sum relative to it. */
INL float F(online_maxsum)(const float *x, int64_t n, double *sum, bool *nan) {
  vf M = F(spf)(-FLT_MAX);
  vd D0 = F(spd)(0), D1 = F(spd)(0); /* lanes [0, ND) and [ND, NF) of the double sums */
  vi bad = (vi){0};
  for (int64_t i0 = 0; i0 < n; i0 += RB) {
    int64_t i1 = n - i0 < RB ? n : i0 + RB, i = i0;
    vf M0 = M, A0 = F(spf)(0), A1 = A0, A2 = A0, A3 = A0;
    for (; i + 4 * NF <= i1; i += 4 * NF) {
      vf v0 = F(ldf)(x + i), v1 = F(ldf)(x + i + NF), v2 = F(ldf)(x + i + 2 * NF), v3 = F(ldf)(x + i + 3 * NF);
      bad |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);
      vf b01 = F(self)(v1 > v0, v1, v0), b23 = F(self)(v3 > v2, v3, v2);
      vf bm = F(self)(b23 > b01, b23, b01);
      vf Mn = F(self)(bm > M, bm, M);
      vf f = F(expsm)(M - Mn);
      M = Mn;
      A0 = VFMA_F(A0, f, F(expsm)(v0 - M));
      A1 = A1 * f + F(expsm)(v1 - M);
      A2 = A2 * f + F(expsm)(v2 - M);
      A3 = A3 * f + F(expsm)(v3 - M);
    }
    for (; i < i1; i += NF) { /* the last < 4 vectors, the final one padded with -inf */
      float tb[NF];
      for (int k = 0; k < NF; k++) tb[k] = i + k < i1 ? x[i + k] : -INFINITY;
      vf v = F(ldf)(tb);
      bad |= v != v;
      vf Mn = F(self)(v > M, v, M);
      vf f = F(expsm)(M - Mn);
      M = Mn;
      A0 = VFMA_F(A0, f, F(expsm)(v - M));
      A1 *= f, A2 *= f, A3 *= f;
    }
    /* fold the block's float sums into the double lanes (both relative to M now) */
    vf fb = F(expsm)(M0 - M), A = (A0 + A1) + (A2 + A3);
    vfh fl, fh, al, ah;
    memcpy(&fl, &fb, sizeof fl);
    memcpy(&fh, (const char *)&fb + sizeof fl, sizeof fh);
    memcpy(&al, &A, sizeof al);
    memcpy(&ah, (const char *)&A + sizeof al, sizeof ah);
    D0 = VFMA_D(D0, __builtin_convertvector(fl, vd), __builtin_convertvector(al, vd));
    D1 = VFMA_D(D1, __builtin_convertvector(fh, vd), __builtin_convertvector(ah, vd));
  }
  bool any = false;
  float mx = -FLT_MAX;
  for (int k = 0; k < NF; k++) {
    any = any || bad[k];
    if (M[k] > mx) mx = M[k];
  }
  vf g = F(expsm)(M - mx); /* each lane's sum relative to the row max */
  double s = 0;
  for (int k = 0; k < ND; k++) s += D0[k] * (double)g[k] + D1[k] * (double)g[ND + k];
  *nan = any;
  *sum = s;
  return mx;
}

/* softmax / log_softmax of one contiguous row, reading it from memory once and writing y once
 * (NT stores when nt). Rows of up to SM_CACHED floats stay in L1/L2 after the first pass, so
 * the max is a separate cheap pass and the exponentials are computed once: softmax keeps
 * them in a stack buffer when the row fits (SM_SCR), else recomputes them in the write
 * pass. Longer rows take the max and the sum in one read (online_maxsum), then the write
 * pass: y = e^(x - max) / sum or (x - max) - log(sum). pf: the next row (or NULL), prefetched
 * while this one is computed from the cache, so memory and arithmetic overlap. */
#define SM_CACHED 16384
#define SM_SCR 2048
TGT static void F(softmax_row2)(const float *x, float *y, int64_t n, int log, int nt, const float *pf) {
  bool nan;
  double s = 0;
  float mx;
  float scr[SM_SCR] __attribute__((aligned(64)));
  bool use_scr = !log && n <= SM_SCR;
  if (n <= SM_CACHED) {
    mx = F(rowmax)(x, n, &nan);
    if (!nan && mx != INFINITY) {
      float m0 = mx == -INFINITY ? 0.0f : mx; /* all -inf: sum 0 */
      BLOCKS(i0, len, n) s += F(bsumexp)(x + i0, use_scr ? scr + i0 : NULL, len, m0, pf ? pf + i0 : NULL, nt ? 2 : 0);
    }
  } else {
    mx = F(online_maxsum)(x, n, &s, &nan);
  }
  if (nan || mx == INFINITY) { /* PyTorch: e^(inf - inf) = NaN makes the whole row NaN */
    for (int64_t i = 0; i < n; i++) y[i] = NAN;
    return;
  }
  /* all -inf: sum 0, so softmax 0 * inf and log_softmax -inf - -inf give NaN as in PyTorch */
  vf vm = F(spf)(mx);
  if (log) {
    /* (x - max) is exact near the max; one rounding for the log of the sum */
    float lse = (float)log_d(s);
    vf vl_ = F(spf)(lse);
    MAP_ROW(x, y, n, nt, 0.0f, (v - vm) - vl_);
  } else if (use_scr) {
    vf vi_ = F(spf)((float)(1.0 / s));
    MAP_ROW(scr, y, n, nt, 0.0f, v * vi_);
  } else {
    vf vi_ = F(spf)((float)(1.0 / s));
    MAP_ROW(x, y, n, nt, 0.0f, F(expsm)(v - vm) * vi_);
  }
}
/* Rows [0, rows) of softmax / log_softmax with NT stores, for n % NF == 0, NF <= n <= SM_SCR and y
 * VB-aligned, as one three-stage pipeline: each step over a row's positions takes the max of row r
 * (read from memory), the exponentials and their sum of row r - 1 (from L1, read one step before)
 * and stores the output of row r - 2. Every loop then reads memory while it computes and stores
 * (a max pass of its own only loads, an exponential pass only computes: 4-6% more CPU time per
 * 16M floats in paired runs), and the NT stores drain under the arithmetic instead of stalling a
 * store loop of their own. Same arithmetic and order per row as softmax_row2 (max in four chains
 * skipping NaN lanes, sums in four float chains per 4 vectors, the same tails), so the same results;
 * a NaN (or an x = +inf max) makes the row's sum NaN, which is what marks the row bad. */
TGT static void F(softmax_rows_nt)(const float *x, float *y, int64_t rows, int64_t n, int log, int64_t ahead) {
  float scr[2][SM_SCR] __attribute__((aligned(64)));
  vf pa = F(spf)(0), pb = pa; /* row r - 2's output: softmax y = e * pa; log: y = (x - pa) - pb */
  float mx_e = 0, m_e = 0;    /* row r - 1's max and the max its exponentials subtract */
  for (int64_t r = 0; r < rows + 2; r++) {
    const float *xm = r < rows ? x + r * n : NULL;
    const float *xe = r >= 1 && r <= rows ? x + (r - 1) * n : NULL;
    const float *xo = r >= 2 ? x + (r - 2) * n : NULL;
    float *yo = r >= 2 ? y + (r - 2) * n : NULL, *se = scr[(r + 1) & 1];
    const float *so = scr[r & 1];
    const float *pf = r + ahead < rows ? x + (r + ahead) * n : NULL;
    vf q0 = F(spf)(-INFINITY), q1 = q0, q2 = q0, q3 = q0;
    vf vm = F(spf)(m_e), a0 = F(spf)(0), a1 = a0, a2 = a0, a3 = a0;
#define SR3_OUT(j)                                                                \
  do {                                                                            \
    vf o_ = log ? (F(ldf)(xo + (j)) - pa) - pb : F(ldf)(so + (j)) * pa;           \
    VSTNT(yo + (j), o_);                                                          \
  } while (0)
    int64_t i = 0;
    for (; i + 4 * NF <= n; i += 4 * NF) {
      F(pf4)(pf, i, 2);
      if (xm) {
        q0 = VMAX_F(F(ldf)(xm + i), q0), q1 = VMAX_F(F(ldf)(xm + i + NF), q1);
        q2 = VMAX_F(F(ldf)(xm + i + 2 * NF), q2), q3 = VMAX_F(F(ldf)(xm + i + 3 * NF), q3);
      }
      if (xe) {
        vf e0 = F(expsm)(F(ldf)(xe + i) - vm), e1 = F(expsm)(F(ldf)(xe + i + NF) - vm);
        vf e2 = F(expsm)(F(ldf)(xe + i + 2 * NF) - vm), e3 = F(expsm)(F(ldf)(xe + i + 3 * NF) - vm);
        if (!log) {
          F(stf)(se + i, e0);
          F(stf)(se + i + NF, e1);
          F(stf)(se + i + 2 * NF, e2);
          F(stf)(se + i + 3 * NF, e3);
        }
        a0 += e0, a1 += e1, a2 += e2, a3 += e3;
      }
      if (yo) {
        SR3_OUT(i);
        SR3_OUT(i + NF);
        SR3_OUT(i + 2 * NF);
        SR3_OUT(i + 3 * NF);
      }
    }
    for (; i < n; i += NF) {
      if (xm) q0 = VMAX_F(F(ldf)(xm + i), q0);
      if (xe) {
        vf e = F(expsm)(F(ldf)(xe + i) - vm);
        if (!log) F(stf)(se + i, e);
        a0 += e;
      }
      if (yo) SR3_OUT(i);
    }
#undef SR3_OUT
    if (xe) { /* row r - 1 done: its output factors (a NaN, or e^(inf - inf), makes the row NaN) */
      double sum = F(hsum)((a0 + a1) + (a2 + a3));
      bool bad = sum != sum || mx_e == INFINITY;
      if (log) {
        pa = F(spf)(bad ? NAN : mx_e);
        pb = F(spf)((float)log_d(sum));
      } else {
        pa = F(spf)(bad ? NAN : (float)(1.0 / sum));
      }
    }
    if (xm) { /* row r's max (NaN lanes skipped: the sum above catches them) */
      q0 = VMAX_F(VMAX_F(q0, q1), VMAX_F(q2, q3));
      float mx = -INFINITY;
      for (int k = 0; k < NF; k++) mx = q0[k] > mx ? q0[k] : mx;
      mx_e = mx;
      m_e = mx == -INFINITY || mx == INFINITY ? 0.0f : mx;
    }
  }
}
#undef SM_CACHED
#undef SM_SCR

/* layer_norm (rms = 0) / rms_norm (rms = 1) of one row: y = (x - mean) * rstd [* w] [+ b]
 * (rms: mean = 0); mean and rstd out. One read for the statistics: sums of d = x - c and of
 * d^2 in double lanes, c = x[0] (layer_norm; 0 for rms), then var = (sum d^2 - (sum d)^2 / n)
 * / n. In double, d and d^2 of float inputs are exact or nearly (d has <= 25 significant
 * bits when |x - c| < 2^24 ulp(c)), and each sum has relative error <= n 2^-53; the
 * cancellation then magnifies that by 1 + (mean - c)^2 / var, i.e. the z-score^2 of x[0]
 * within its row. So |var - var_two_pass| <= n 2^-52 (var + (mean - c)^2) + O(eps^2): below
 * float's 2^-24 for any row up to 2^20 elements whose first element lies within ~2^14
 * standard deviations of the mean (tests/c/test_fast_ulp.c checks it against the
 * two-pass double reference, including shifted and constant rows). Second pass: the output,
 * NT stores when nt. */
TGT static void F(norm_fwd_row)(const float *x, const float *w, const float *b, float *y, int64_t n, double eps, int rms,
                                float *mean_out, float *rstd_out, int nt, const float *pf) {
  double c = rms ? 0.0 : (double)x[0];
  vd vc = F(spd)(c), s0 = F(spd)(0), s1 = s0, q0 = s0, q1 = s0;
  int64_t i = 0;
  for (; i + NF <= n; i += NF) {
    vfh h0, h1;
    memcpy(&h0, x + i, sizeof h0);
    memcpy(&h1, x + i + ND, sizeof h1);
    vd d0 = __builtin_convertvector(h0, vd) - vc, d1 = __builtin_convertvector(h1, vd) - vc;
    s0 += d0, s1 += d1;
    q0 = VFMA_D(d0, d0, q0), q1 = VFMA_D(d1, d1, q1);
  }
  s0 += s1, q0 += q1;
  double s = 0, q = 0;
  for (int k = 0; k < ND; k++) s += s0[k], q += q0[k];
  for (; i < n; i++) {
    double d = (double)x[i] - c;
    s += d, q += d * d;
  }
  double var, mean;
  if (rms) {
    mean = 0, var = q / (double)n;
  } else {
    double md = s / (double)n;
    mean = c + md;
    var = (q - s * md) / (double)n;
    if (var < 0) var = 0;
  }
  float mf = (float)mean;
  float rstd = (float)(1.0 / sqrt(var + eps));
  *mean_out = mf;
  *rstd_out = rstd;
  vf vm = F(spf)(mf), vr = F(spf)(rstd);
  int64_t i1 = nt ? F(nt_head)(y, n) : 0;
#define NORM_V(j)                                        \
  ({                                                     \
    vf v_ = (F(ldf)(x + (j)) - vm) * vr;                 \
    if (w) v_ = v_ * F(ldf)(w + (j));                    \
    if (b) v_ = v_ + F(ldf)(b + (j));                    \
    v_;                                                  \
  })
  /* the unaligned head and the tail go through a padded vector, so every element gets the same
   * arithmetic as the body (a scalar expression may be contracted into FMAs differently) */
#define NORM_PAD(j0, j1)                                                                        \
  do {                                                                                          \
    int64_t l_ = (j1) - (j0);                                                                   \
    if (l_ > 0) {                                                                               \
      float tx_[NF] = {0}, tw_[NF] = {0}, tb_[NF] = {0};                                        \
      memcpy(tx_, x + (j0), sizeof(float) * (size_t)l_);                                        \
      if (w) memcpy(tw_, w + (j0), sizeof(float) * (size_t)l_);                                 \
      if (b) memcpy(tb_, b + (j0), sizeof(float) * (size_t)l_);                                 \
      vf v_ = (F(ldf)(tx_) - vm) * vr;                                                          \
      if (w) v_ = v_ * F(ldf)(tw_);                                                             \
      if (b) v_ = v_ + F(ldf)(tb_);                                                             \
      F(stf)(tx_, v_);                                                                          \
      memcpy(y + (j0), tx_, sizeof(float) * (size_t)l_);                                        \
    }                                                                                           \
  } while (0)
  NORM_PAD(0, i1);
  i = i1;
  /* this pass reads x from the cache: prefetch the next row (pf) meanwhile */
  if (nt)
    for (; i + NF <= n; i += NF) {
      if (pf) PF_R(pf + i);
      vf r = NORM_V(i);
      VSTNT(y + i, r);
    }
  else
    for (; i + NF <= n; i += NF) {
      if (pf) __builtin_prefetch(pf + i, 0);
      F(stf)(y + i, NORM_V(i));
    }
  NORM_PAD(i, n);
#undef NORM_V
#undef NORM_PAD
}

/* Rows [0, rows) of norm_fwd_row with NT stores, for n % NF == 0 and y VB-aligned: row r - 1's
 * output is stored while row r's statistics are summed (one vector each per step), so the
 * stores drain under the arithmetic instead of stalling a store loop of their own (see
 * softmax_rows_nt). Same arithmetic and order as norm_fwd_row, so the same results. mean
 * (may be NULL) and rstd get one float per row. */
TGT static void F(norm_fwd_rows_nt)(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t n,
                                    double eps, int rms, float *mean, float *rstd, int64_t ahead) {
  const float *xp = NULL;
  float *yp = NULL;
  vf vm = F(spf)(0), vr = vm; /* the previous row's mean and rstd */
#define NRN_OUT(j)                                \
  do {                                            \
    if (yp) {                                     \
      vf v_ = (F(ldf)(xp + (j)) - vm) * vr;       \
      if (w) v_ = v_ * F(ldf)(w + (j));           \
      if (b) v_ = v_ + F(ldf)(b + (j));           \
      VSTNT(yp + (j), v_);                        \
    }                                             \
  } while (0)
  for (int64_t r = 0; r <= rows; r++) {
    if (r == rows) {
      for (int64_t i = 0; i < n; i += NF) NRN_OUT(i);
      break;
    }
    const float *xr = x + r * n, *pf = r + ahead < rows ? x + (r + ahead) * n : NULL;
    double c = rms ? 0.0 : (double)xr[0];
    vd vc = F(spd)(c), s0 = F(spd)(0), s1 = s0, q0 = s0, q1 = s0;
    for (int64_t i = 0; i < n; i += NF) {
      if (pf) PF_R(pf + i);
      vfh h0, h1;
      memcpy(&h0, xr + i, sizeof h0);
      memcpy(&h1, xr + i + ND, sizeof h1);
      vd d0 = __builtin_convertvector(h0, vd) - vc, d1 = __builtin_convertvector(h1, vd) - vc;
      s0 += d0, s1 += d1;
      q0 = VFMA_D(d0, d0, q0), q1 = VFMA_D(d1, d1, q1);
      NRN_OUT(i);
    }
    s0 += s1, q0 += q1;
    double sm = 0, q = 0;
    for (int k = 0; k < ND; k++) sm += s0[k], q += q0[k];
    double var, mu;
    if (rms) {
      mu = 0, var = q / (double)n;
    } else {
      double md = sm / (double)n;
      mu = c + md;
      var = (q - sm * md) / (double)n;
      if (var < 0) var = 0;
    }
    float mf = (float)mu, rs = (float)(1.0 / sqrt(var + eps));
    if (mean) mean[r] = mf;
    rstd[r] = rs;
    vm = F(spf)(mf), vr = F(spf)(rs);
    xp = xr, yp = y + r * n;
  }
#undef NRN_OUT
}

/* Backward of one row: with xh = (x - mean) * rstd and gw = g [* w],
 * dx = rstd (gw - mean(gw) - xh mean(gw xh)) (rms: no mean(gw) term);
 * dw += g xh, db += g (any of dx, dw, db may be NULL). */
TGT static void F(norm_bwd_row)(const float *x, const float *g, const float *w, float mean, float rstd, float *dx,
                                float *dw, float *db, int64_t n, int rms, int nt) {
  vf vm = F(spf)(mean), vr = F(spf)(rstd);
  float ma = 0, mb = 0;
  if (dx) {
    double sa = 0, sb = 0;
    BLOCKS(i0, len, n) F(bgrad)(x + i0, g + i0, w ? w + i0 : NULL, len, mean, rstd, &sa, &sb);
    ma = rms ? 0.0f : (float)(sa / (double)n);
    mb = (float)(sb / (double)n);
  }
  vf va = F(spf)(ma), vb = F(spf)(mb);
#define BWD_S(j)                                    \
  do {                                              \
    float hj = (x[j] - mean) * rstd, gj = g[j];     \
    if (dw) dw[j] += gj * hj;                       \
    if (db) db[j] += gj;                            \
    if (dx) {                                       \
      if (w) gj *= w[j];                            \
      dx[j] = rstd * ((gj - ma) - hj * mb);         \
    }                                               \
  } while (0)
  if (!dx) nt = 0;
  int64_t i = 0, head = nt ? F(nt_head)(dx, n) : 0; /* NT stores start at an aligned dx */
  for (; i < head; i++) BWD_S(i);
  for (; i + NF <= n; i += NF) {
    vf g0 = F(ldf)(g + i);
    vf h0 = (F(ldf)(x + i) - vm) * vr;
    if (dw) F(stf)(dw + i, VFMA_F(g0, h0, F(ldf)(dw + i)));
    if (db) F(stf)(db + i, F(ldf)(db + i) + g0);
    if (dx) {
      if (w) g0 = g0 * F(ldf)(w + i);
      vf r = vr * ((g0 - va) - h0 * vb);
      if (nt) VSTNT(dx + i, r);
      else F(stf)(dx + i, r);
    }
  }
  for (; i < n; i++) BWD_S(i);
#undef BWD_S
}

/* log-sum-exp of a row (NaN row: NaN; all -inf: -inf) and, when sx != NULL, sum(x [* w]) */
TGT static double F(lse_row)(const float *x, const float *w, int64_t n, double *sx) {
  bool nan;
  float mx = F(rowmax)(x, n, &nan);
  if (sx) {
    double t = 0;
    BLOCKS(i0, len, n) t += F(bsum)(x + i0, w ? w + i0 : NULL, len);
    *sx = t;
  }
  if (nan) return NAN;
  if (mx == -INFINITY || mx == INFINITY) return mx;
  double s = 0;
  BLOCKS(i0, len, n) s += F(bsumexp)(x + i0, NULL, len, mx, NULL, 0);
  return (double)mx + log_d(s);
}

/* dx = ca e^(x - lse) - cb [* w] over a row */
TGT static void F(ce_bwd_row)(const float *x, const float *w, float *dx, int64_t n, float lse, float ca, float cb) {
  vf vl_ = F(spf)(lse), va = F(spf)(ca), vb = F(spf)(cb);
  int64_t i = 0;
  for (; i + NF <= n; i += NF) {
    vf e = F(expnf)(F(ldf)(x + i) - vl_);
    vf s = w ? vb * F(ldf)(w + i) : vb;
    F(stf)(dx + i, VFMA_F(va, e, -s));
  }
  for (; i < n; i++) dx[i] = ca * F(expn1)(x[i] - lse) - cb * (w ? w[i] : 1.0f);
}
#undef BLOCKS
#undef RB
#undef GELU_ERF_V
#undef GELU_TANH_V
#undef MAP_ROW
#undef PF_AHEAD
#undef MAP1

#undef vf
#undef vi
#undef vd
#undef vl
#undef vfh
#undef INL
#undef NF
#undef ND
#undef F
#undef CAT
#undef CAT_
