/* Template of the fast float32 kernels, included once per ISA by fast_ew.c with:
 *   SFX   suffix of the generated functions (avx512, avx2, c)
 *   TGT   function attribute (target) or nothing
 *   VB    vector width in bytes (64, 32, 16)
 *   VFMA_F(a,b,c), VFMA_D(a,b,c)  fused multiply-add on float / double vectors
 *   VRCP_F(a)  reciprocal estimate of a float vector (>= 12 bits; exact division portably)
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

/* exp(x), float: x = n ln2 + r, |r| <= ln2/2 (ln2 in two parts so r is exact),
 * e^r by a degree-7 Taylor polynomial (truncation < 1e-8 relative), 2^n built in the
 * exponent bits in two halves so results down to the subnormals are right. ~1-2 ulp. */
INL vf F(expf)(vf x) {
  vf xc = F(self)(x > 100.0f, F(spf)(100.0f), x);
  xc = F(self)(xc < -110.0f, F(spf)(-110.0f), xc);
  const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  vf t = VFMA_F(xc, F(spf)(1.44269504088896341f), F(spf)(magic));
  vf n = t - magic;
  vf r = VFMA_F(n, F(spf)(-0.693145751953125f), xc); /* ln2 high part: exact product */
  r = VFMA_F(n, F(spf)(-1.4286068202862268e-06f), r);
  vf p = F(spf)(1.0f / 5040);
  p = VFMA_F(p, r, F(spf)(1.0f / 720));
  p = VFMA_F(p, r, F(spf)(1.0f / 120));
  p = VFMA_F(p, r, F(spf)(1.0f / 24));
  p = VFMA_F(p, r, F(spf)(1.0f / 6));
  p = VFMA_F(p, r, F(spf)(0.5f));
  p = VFMA_F(p, r, F(spf)(1.0f));
  p = VFMA_F(p, r, F(spf)(1.0f));
  vi ni = (vi)t - (vi)F(spf)(magic);
  vi n1 = ni >> 1, n2 = ni - n1;
  vf s1 = (vf)((n1 + 127) << 23), s2 = (vf)((n2 + 127) << 23);
  vf res = p * s1 * s2;
  return F(self)(x != x, x, res); /* NaN stays NaN */
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
INL vf F(expnf)(vf x) {
  vf xc = F(self)(x < -104.0f, F(spf)(-104.0f), x);
  const float magic = 12582912.0f;
  vf t = VFMA_F(xc, F(spf)(1.44269504088896341f), F(spf)(magic));
  vf n = t - magic;
  vf r = VFMA_F(n, F(spf)(-0.693145751953125f), xc);
  r = VFMA_F(n, F(spf)(-1.4286068202862268e-06f), r);
  vf p = F(spf)(1.0f / 5040);
  p = VFMA_F(p, r, F(spf)(1.0f / 720));
  p = VFMA_F(p, r, F(spf)(1.0f / 120));
  p = VFMA_F(p, r, F(spf)(1.0f / 24));
  p = VFMA_F(p, r, F(spf)(1.0f / 6));
  p = VFMA_F(p, r, F(spf)(0.5f));
  p = VFMA_F(p, r, F(spf)(1.0f));
  p = VFMA_F(p, r, F(spf)(1.0f));
  vi ni = (vi)t - (vi)F(spf)(magic);
  vi n1 = ni >> 1, n2 = ni - n1;
  return p * (vf)((n1 + 127) << 23) * (vf)((n2 + 127) << 23);
}
/* sigmoid(x) = 1 / (1 + e^-|x|) for x >= 0, e^-|x| / (1 + e^-|x|) below: no overflow,
 * no cancellation. */
INL vf F(sigmoidf)(vf x) {
  vf ax = (vf)((vi)x & 0x7fffffff);
  vf e = F(expnf)(-ax); /* -|x| <= 0: no overflow selects needed; NaN stays NaN */
  vf q = 1.0f + e;      /* in [1, 2] */
  vf d = VRCP_F(q);     /* reciprocal estimate, then one Newton step: ~1 ulp */
  d = VFMA_F(d, VFMA_F(-q, d, F(spf)(1.0f)), d);
  return F(self)(x >= 0.0f, d, e * d); /* NaN: e and d are NaN */
}

/* tanh(x) = e / (e + 2) with e = expm1(2x): accurate near 0 too; |x| > 9.1 is +-1 in float */
INL vf F(tanhf)(vf x) {
  vf xc = F(self)(x > 9.1f, F(spf)(9.1f), x);
  xc = F(self)(xc < -9.1f, F(spf)(-9.1f), xc);
  vf e = F(expm1f)(xc + xc);
  vf r = e / (e + 2.0f);
  return F(self)(x != x, x, r);
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
INL vf F(unary_vec)(int op, int gelu_tanh, vf x) {
  switch (op) {
    case CT_OP_neg: return -x;
    case CT_OP_exp: return F(expf)(x);
    case CT_OP_relu: return F(self)(x <= 0.0f, F(spf)(0.0f), x);
    case CT_OP_sigmoid: return F(sigmoidf)(x);
    case CT_OP_silu: return x * F(sigmoidf)(x);
    case CT_OP_tanh: return F(tanhf)(x);
    case CT_OP_gelu:
      if (gelu_tanh) { /* 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3) */
        vf u = x * VFMA_F(x * x, F(spf)(0.0356774081363001f), F(spf)(0.7978845608028654f));
        vf r = x * F(sigmoidf)(u + u);
        return F(self)(x != x, x, r);
      }
      return x; /* the erf form is done in double by unary_gelu_erf */
    default: return x;
  }
}

/* gelu (erf form) in float lanes: x Phi(x), Phi(x) = 1 - E/2 (x >= 0) or E/2 (x < 0) with
 * E = erfc(a), a = |x|/sqrt(2). E = e^(-a^2) t R(u): t = 1/(1 + a), u = 2.2 t - 1.2 in
 * [-1, 1] over a in [0, 10], R a degree-12 fit (GELU_Q, relative error 2.5e-7 evaluated in
 * float). a^2 = x^2/2 is split exactly with an FMA (x^2 = hi + lo) so the exponential does
 * not inherit the rounding of a: e^(-a^2) = e^(-hi/2) (1 - lo/2). Beyond |x| = 14 Phi is
 * 0 or 1 in float (E = 0: -inf gives NaN like the reference). */
INL vf F(gelu_erf_vec)(vf x) {
  vf ax = (vf)((vi)x & 0x7fffffff);
  vf xc = F(self)(ax > 14.0f, F(spf)(14.0f), ax);
  vf a = xc * 0.70710678118654752f;
  vf t = 1.0f / (1.0f + a);
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
  vf hi = xc * xc, lo = VFMA_F(xc, xc, -hi);
  vf e = F(expf)(hi * -0.5f) * VFMA_F(lo, F(spf)(-0.5f), F(spf)(1.0f));
  vf E = e * (r * t);
  E = F(self)(ax >= 14.0f, F(spf)(0.0f), E);
  vf phi = F(self)(x >= 0.0f, 1.0f - 0.5f * E, 0.5f * E);
  return F(self)(x != x, x, x * phi);
}

TGT static void F(unary_gelu_erf)(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + NF <= n; i += NF) F(stf)(y + i, F(gelu_erf_vec)(F(ldf)(x + i)));
  if (i < n) {
    float tb[NF] = {0};
    memcpy(tb, x + i, sizeof(float) * (size_t)(n - i));
    F(stf)(tb, F(gelu_erf_vec)(F(ldf)(tb)));
    memcpy(y + i, tb, sizeof(float) * (size_t)(n - i));
  }
}

TGT static void F(unary)(int op, int gelu_tanh, const float *x, float *y, int64_t n) {
  if (op == CT_OP_gelu && !gelu_tanh) {
    F(unary_gelu_erf)(x, y, n);
    return;
  }
  int64_t i = 0;
  for (; i + NF <= n; i += NF) F(stf)(y + i, F(unary_vec)(op, gelu_tanh, F(ldf)(x + i)));
  if (i < n) {
    float tb[NF] = {0};
    memcpy(tb, x + i, sizeof(float) * (size_t)(n - i));
    F(stf)(tb, F(unary_vec)(op, gelu_tanh, F(ldf)(tb)));
    memcpy(y + i, tb, sizeof(float) * (size_t)(n - i));
  }
}

/* ---- binary: add, sub, mul, div; sa / sb = 0 means that operand is one broadcast value ---- */
INL vf F(binary_vec)(int op, vf a, vf b) {
  switch (op) {
    case CT_OP_add: return a + b;
    case CT_OP_sub: return a - b;
    case CT_OP_mul: return a * b;
    default: return a / b;
  }
}
TGT static void F(binary)(int op, const float *a, int sa, const float *b, int sb, float *y, int64_t n) {
  int64_t i = 0;
  vf va = sa ? F(spf)(0) : F(spf)(a[0]), vb = sb ? F(spf)(0) : F(spf)(b[0]);
  for (; i + NF <= n; i += NF) {
    vf x = sa ? F(ldf)(a + i) : va, z = sb ? F(ldf)(b + i) : vb;
    F(stf)(y + i, F(binary_vec)(op, x, z));
  }
  if (i < n) {
    float ta[NF], tb[NF];
    for (int k = 0; k < NF; k++) {
      ta[k] = i + k < n ? a[sa ? i + k : 0] : 1.0f;
      tb[k] = i + k < n ? b[sb ? i + k : 0] : 1.0f;
    }
    F(stf)(ta, F(binary_vec)(op, F(ldf)(ta), F(ldf)(tb)));
    memcpy(y + i, ta, sizeof(float) * (size_t)(n - i));
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
/* max (sign > 0) or min of n >= 1 floats; NaN if any is NaN */
TGT static float F(minmax)(const float *x, int64_t n, int sign) {
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
 * overlaps this row's arithmetic instead of following it. One call covers 4 vectors. */
INL void F(pf4)(const float *pf, int64_t i, int wr) {
  if (!pf) return;
  for (int k = 0; k < NF / 4; k++) {
    if (wr) __builtin_prefetch(pf + i + 16 * k, 1);
    else __builtin_prefetch(pf + i + 16 * k, 0);
  }
}

/* scalar e^x (x <= 0) through the vector routine, for tails */
INL float F(expn1)(float x) {
  vf v = F(spf)(x);
  return F(expnf)(v)[0];
}

/* max of a row and whether it holds a NaN */
INL float F(rowmax)(const float *x, int64_t n, bool *nan) {
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
/* sum of (x - m)^2 over n <= RB elements */
INL double F(bsqdev)(const float *x, int64_t n, float m, const float *pf) {
  vf vm = F(spf)(m), q0 = F(spf)(0), q1 = q0, q2 = q0, q3 = q0;
  int64_t i = 0;
  for (; i + 4 * NF <= n; i += 4 * NF) {
    F(pf4)(pf, i, 0);
    vf d0 = F(ldf)(x + i) - vm, d1 = F(ldf)(x + i + NF) - vm;
    vf d2 = F(ldf)(x + i + 2 * NF) - vm, d3 = F(ldf)(x + i + 3 * NF) - vm;
    q0 = VFMA_F(d0, d0, q0), q1 = VFMA_F(d1, d1, q1), q2 = VFMA_F(d2, d2, q2), q3 = VFMA_F(d3, d3, q3);
  }
  for (; i + NF <= n; i += NF) {
    vf d = F(ldf)(x + i) - vm;
    q0 = VFMA_F(d, d, q0);
  }
  double q = F(hsum)((q0 + q1) + (q2 + q3));
  for (; i < n; i++) q += ((double)x[i] - m) * ((double)x[i] - m);
  return q;
}
/* sum of e^(x - m) over n <= RB elements (m finite); y != NULL also stores them */
INL double F(bsumexp)(const float *x, float *y, int64_t n, float m, const float *pf) {
  vf vm = F(spf)(m), a0 = F(spf)(0), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * NF <= n; i += 4 * NF) {
    F(pf4)(pf, i, 0);
    vf e0 = F(expnf)(F(ldf)(x + i) - vm), e1 = F(expnf)(F(ldf)(x + i + NF) - vm);
    vf e2 = F(expnf)(F(ldf)(x + i + 2 * NF) - vm), e3 = F(expnf)(F(ldf)(x + i + 3 * NF) - vm);
    if (y) {
      F(stf)(y + i, e0);
      F(stf)(y + i + NF, e1);
      F(stf)(y + i + 2 * NF, e2);
      F(stf)(y + i + 3 * NF, e3);
    }
    a0 += e0, a1 += e1, a2 += e2, a3 += e3;
  }
  for (; i + NF <= n; i += NF) {
    vf e = F(expnf)(F(ldf)(x + i) - vm);
    if (y) F(stf)(y + i, e);
    a0 += e;
  }
  double s = F(hsum)((a0 + a1) + (a2 + a3));
  for (; i < n; i++) {
    float e = F(expn1)(x[i] - m);
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

/* softmax / log_softmax of one contiguous row */
TGT static void F(softmax_row2)(const float *x, float *y, int64_t n, int log, const float *nx, float *ny) {
  bool nan;
  float mx = F(rowmax)(x, n, &nan);
  if (nan) {
    for (int64_t i = 0; i < n; i++) y[i] = NAN;
    return;
  }
  if (mx == -INFINITY) mx = 0; /* all -inf: sum 0 -> nan like PyTorch */
  double s = 0;
  BLOCKS(i0, len, n) s += F(bsumexp)(x + i0, log ? NULL : y + i0, len, mx, nx ? nx + i0 : NULL);
  int64_t i = 0;
  if (log) {
    /* (x - max) is exact near the max; one rounding for the log of the sum */
    float lse = (float)log_d(s);
    vf vm = F(spf)(mx), vl_ = F(spf)(lse);
    for (; i + NF <= n; i += NF) {
      if ((i & (4 * NF - 1)) == 0) F(pf4)(ny, i, 1);
      F(stf)(y + i, (F(ldf)(x + i) - vm) - vl_);
    }
    for (; i < n; i++) y[i] = (x[i] - mx) - lse;
  } else {
    float inv = (float)(1.0 / s);
    vf v = F(spf)(inv);
    for (; i + NF <= n; i += NF) {
      if ((i & (4 * NF - 1)) == 0) F(pf4)(ny, i, 1);
      F(stf)(y + i, F(ldf)(y + i) * v);
    }
    for (; i < n; i++) y[i] = y[i] * inv;
  }
}

/* layer_norm (rms = 0) / rms_norm (rms = 1) of one row: y = (x - mean) * rstd [* w] [+ b]
 * (rms: mean = 0); mean and rstd out. Two passes for the statistics (stable variance). */
TGT static void F(norm_fwd_row)(const float *x, const float *w, const float *b, float *y, int64_t n, double eps, int rms,
                                float *mean_out, float *rstd_out, const float *nx, float *ny) {
  double s = 0, q = 0;
  if (!rms) BLOCKS(i0, len, n) s += F(bsum)(x + i0, NULL, len);
  float mf = (float)(s / (double)n);
  BLOCKS(i0, len, n) q += F(bsqdev)(x + i0, len, mf, nx ? nx + i0 : NULL);
  float rstd = (float)(1.0 / sqrt(q / (double)n + eps));
  *mean_out = mf;
  *rstd_out = rstd;
  vf vm = F(spf)(mf), vr = F(spf)(rstd);
  int64_t i = 0;
  for (; i + NF <= n; i += NF) {
    if ((i & (4 * NF - 1)) == 0) F(pf4)(ny, i, 1);
    vf v = (F(ldf)(x + i) - vm) * vr;
    if (w) v = v * F(ldf)(w + i);
    if (b) v = v + F(ldf)(b + i);
    F(stf)(y + i, v);
  }
  for (; i < n; i++) {
    float v = (x[i] - mf) * rstd;
    if (w) v = v * w[i];
    if (b) v = v + b[i];
    y[i] = v;
  }
}

/* Backward of one row: with xh = (x - mean) * rstd and gw = g [* w],
 * dx = rstd (gw - mean(gw) - xh mean(gw xh)) (rms: no mean(gw) term);
 * dw += g xh, db += g (any of dx, dw, db may be NULL). */
TGT static void F(norm_bwd_row)(const float *x, const float *g, const float *w, float mean, float rstd, float *dx,
                                float *dw, float *db, int64_t n, int rms) {
  vf vm = F(spf)(mean), vr = F(spf)(rstd);
  float ma = 0, mb = 0;
  if (dx) {
    double sa = 0, sb = 0;
    BLOCKS(i0, len, n) F(bgrad)(x + i0, g + i0, w ? w + i0 : NULL, len, mean, rstd, &sa, &sb);
    ma = rms ? 0.0f : (float)(sa / (double)n);
    mb = (float)(sb / (double)n);
  }
  vf va = F(spf)(ma), vb = F(spf)(mb);
  int64_t i = 0;
  for (; i + NF <= n; i += NF) {
    vf g0 = F(ldf)(g + i);
    vf h0 = (F(ldf)(x + i) - vm) * vr;
    if (dw) F(stf)(dw + i, VFMA_F(g0, h0, F(ldf)(dw + i)));
    if (db) F(stf)(db + i, F(ldf)(db + i) + g0);
    if (dx) {
      if (w) g0 = g0 * F(ldf)(w + i);
      F(stf)(dx + i, vr * ((g0 - va) - h0 * vb));
    }
  }
  for (; i < n; i++) {
    float h = (x[i] - mean) * rstd, g0 = g[i];
    if (dw) dw[i] += g0 * h;
    if (db) db[i] += g0;
    if (dx) {
      if (w) g0 *= w[i];
      dx[i] = rstd * ((g0 - ma) - h * mb);
    }
  }
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
  BLOCKS(i0, len, n) s += F(bsumexp)(x + i0, NULL, len, mx, NULL);
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
