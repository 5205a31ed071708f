/* Template of the fast float32 kernels, included once per ISA by fast_ew.c with:
 *   SFX   suffix of the generated functions (avx512, avx2, c)
 *   TGT   function attribute (target) or nothing
 *   VB    vector width in bytes (64, 32, 16)
 *   VFMA_F(a,b,c), VFMA_D(a,b,c)  fused multiply-add on float / double vectors
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

/* sigmoid(x) = 1 / (1 + e^-|x|) for x >= 0, e^-|x| / (1 + e^-|x|) below: no overflow,
 * no cancellation. */
INL vf F(sigmoidf)(vf x) {
  vf ax = (vf)((vi)x & 0x7fffffff);
  vf e = F(expf)(-ax);
  vf d = 1.0f / (1.0f + e);
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

TGT static void F(unary_gelu_erf)(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + ND <= n; i += ND) {
    vfh h;
    memcpy(&h, x + i, sizeof h);
    vd xd = __builtin_convertvector(h, vd);
    vd r = xd * F(phid)(xd);
    r = F(seld)(xd != xd, xd, r);
    vfh o = __builtin_convertvector(r, vfh);
    memcpy(y + i, &o, sizeof o);
  }
  if (i < n) {
    float tb[ND] = {0};
    memcpy(tb, x + i, sizeof(float) * (size_t)(n - i));
    vfh h;
    memcpy(&h, tb, sizeof h);
    vd xd = __builtin_convertvector(h, vd);
    vd r = xd * F(phid)(xd);
    r = F(seld)(xd != xd, xd, r);
    vfh o = __builtin_convertvector(r, vfh);
    memcpy(tb, &o, sizeof o);
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

/* softmax / log_softmax of one contiguous row; the sum of exponentials in double */
TGT static void F(softmax_row)(const float *x, float *y, int64_t n, int log) {
  float mx = F(minmax)(x, n, 1);
  if (mx != mx) { /* a NaN anywhere: the whole row is NaN, as the reference gives */
    for (int64_t i = 0; i < n; i++) y[i] = NAN;
    return;
  }
  if (mx == -INFINITY) mx = 0; /* all -inf: exp(-inf) = 0, sum 0 -> nan like PyTorch */
  vf vm = F(spf)(mx);
  vd acc = F(spd)(0);
  int64_t i = 0;
  for (; i + NF <= n; i += NF) {
    vf e = F(expf)(F(ldf)(x + i) - vm);
    if (!log) F(stf)(y + i, e);
    vfh h0, h1;
    memcpy(&h0, &e, sizeof h0);
    memcpy(&h1, (const float *)&e + ND, sizeof h1);
    acc += __builtin_convertvector(h0, vd) + __builtin_convertvector(h1, vd);
  }
  double s = 0;
  for (int k = 0; k < ND; k++) s += acc[k];
  for (; i < n; i++) {
    float tb[NF] = {0};
    tb[0] = x[i] - mx;
    float e = F(expf)(F(ldf)(tb))[0];
    if (!log) y[i] = e;
    s += e;
  }
  if (log) {
    /* (x - max) is exact near the max; one rounding for the log of the sum */
    float lse = (float)log_d(s);
    vf vl_ = F(spf)(lse);
    for (i = 0; i + NF <= n; i += NF) F(stf)(y + i, (F(ldf)(x + i) - vm) - vl_);
    for (; i < n; i++) y[i] = (x[i] - mx) - lse;
  } else {
    float inv = (float)(1.0 / s);
    vf vinv = F(spf)(inv);
    for (i = 0; i + NF <= n; i += NF) F(stf)(y + i, F(ldf)(y + i) * vinv);
    for (; i < n; i++) y[i] = y[i] * inv;
  }
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
