/* CPU reference kernels for unary elementwise ops. Inputs arrive cast to one compute
 * dtype; floating dtypes compute in double and round once to the output dtype
 * (except where PyTorch's float arithmetic is visibly different, noted below),
 * integer and bool dtypes compute in int64. */
#include "kernels_pointwise.h"
#include "simd/fast_ew.h"
#include <float.h>
#include <math.h>

#define PI_D 3.14159265358979323846
#define SQRT2_D 1.41421356237309504880
#define LN2_D 0.69314718055994530942
#define LN10_D 2.30258509299404568402

/* ---- special functions (written here; C's <math.h> lacks them) ---- */

/* erfinv: a rough start (Winitzki's closed form) polished by Newton steps on erf,
 * which converge to full double precision in three steps. */
static double k_erfinv(double y) {
  if (isnan(y) || y < -1 || y > 1) return NAN;
  if (y == 1) return INFINITY;
  if (y == -1) return -INFINITY;
  if (y == 0) return y;
  const double a = 0.147;
  double l = log1p(-y * y); /* log(1 - y^2) */
  double t = 2.0 / (PI_D * a) + l / 2.0;
  double x = copysign(sqrt(sqrt(t * t - l / a) - t), y);
  const double k = 2.0 / sqrt(PI_D);
  for (int it = 0; it < 4; it++) {
    double err = (fabs(y) > 0.5 ? -(erfc(fabs(x)) - (1 - fabs(y))) * copysign(1.0, x) : erf(x) - y);
    double d = k * exp(-x * x);
    if (d == 0) break;
    double step = err / d;
    /* Halley's correction: erf'' = -2x erf' */
    x -= step / (1 + x * step);
  }
  return x;
}

/* digamma: reflection for negative x, recurrence up to x >= 10, then the
 * asymptotic series ln x - 1/(2x) - sum B_2k / (2k x^2k). */
static double k_digamma(double x) {
  if (x == 0) return copysign(INFINITY, -x); /* PyTorch: psi(+0) = -inf, psi(-0) = +inf */
  if (isnan(x)) return x;
  if (x < 0) {
    if (x == trunc(x)) return NAN;
    if (x == -INFINITY) return NAN;
    double q, r = modf(x, &q);
    return k_digamma(1 - x) - PI_D / tan(PI_D * r);
  }
  if (x == INFINITY) return x;
  double res = 0;
  while (x < 10) {
    res -= 1 / x;
    x += 1;
  }
  /* B2/2, B4/4, ..., B14/14 */
  static const double c[] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12};
  double z = 1 / (x * x), s = 0, p = z;
  if (x < 1e17)
    for (int k = 0; k < 7; k++) {
      s += c[k] * p;
      p *= z;
    }
  return res + log(x) - 0.5 / x - s;
}

/* Hurwitz zeta(s, q) for s > 1: a direct sum up to q+N, then Euler-Maclaurin with
 * Bernoulli numbers. */
static double k_zeta(double s, double q) {
  if (isnan(s) || isnan(q)) return NAN;
  if (s == 1) return INFINITY;
  if (s < 1) return NAN;
  if (q <= 0) {
    if (q == floor(q)) return INFINITY;
    if (s != floor(s)) return NAN;
  }
  const int N = 12;
  double sum = 0;
  for (int k = 0; k < N; k++) sum += pow(q + k, -s);
  double a = q + N;
  sum += pow(a, 1 - s) / (s - 1) + 0.5 * pow(a, -s);
  /* B_2j / (2j)! */
  static const double b[] = {1.0 / 12,          -1.0 / 720,           1.0 / 30240,          -1.0 / 1209600,
                             1.0 / 47900160,    -691.0 / 1307674368000.0, 1.0 / 74724249600.0,
                             -3617.0 / 10670622842880000.0};
  double fac = s * pow(a, -s - 1); /* s (s+1) ... (s+2j-2) a^(-s-2j+1) */
  for (int j = 0; j < 8; j++) {
    sum += b[j] * fac;
    fac *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
  }
  return sum;
}

/* polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1; trigamma uses the
 * reflection formula for x < 0.5 like PyTorch. */
static double k_polygamma(int64_t n, double x) {
  if (n == 0) return k_digamma(x);
  if (n == 1) {
    /* trigamma with PyTorch's accuracy trade-off (six recurrence steps, then the
     * asymptotic series through the B6 term), so float64 results agree to 1e-10 */
    double sign = 1, res = 0;
    if (x < 0.5) { /* reflection: psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) */
      double sn = sin(PI_D * x);
      sign = -1;
      res = -PI_D * PI_D / (sn * sn);
      x = 1 - x;
    }
    for (int k = 0; k < 6; k++, x += 1) res += 1 / (x * x);
    double z = 1 / (x * x);
    res += (1 + 1 / (2 * x) + z * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42)))) / x;
    return sign * res;
  }
  double f = 1;
  for (int64_t k = 2; k <= n; k++) f *= (double)k;
  return ((n + 1) % 2 == 0 ? 1 : -1) * f * k_zeta((double)(n + 1), x);
}

static inline double round_to(double v, ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: return (double)(float)v;
    case CT_BFLOAT16: return ct_bf16_to_float(ct_float_to_bf16((float)v));
    case CT_FLOAT16: return ct_half_to_float(ct_float_to_half((float)v));
    default: return v;
  }
}

/* Largest and lowest finite values of a floating dtype (nan_to_num defaults). */
static double dtype_max(ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: return FLT_MAX;
    case CT_FLOAT16: return 65504.0;
    case CT_BFLOAT16: return 3.3895313892515355e38;
    default: return DBL_MAX;
  }
}

/* ---- forward, floating ---- */
static double unary_f(int op, double x, const ct_attrs *a, ct_dtype dt) {
  switch (op) {
    case CT_OP_abs: return fabs(x);
    case CT_OP_neg: return -x;
    case CT_OP_sign: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); /* PyTorch: sign(nan) = 0 */
    case CT_OP_exp: return exp(x);
    case CT_OP_exp2: return exp2(x);
    case CT_OP_expm1: return expm1(x);
    case CT_OP_log: return log(x);
    case CT_OP_log2: return log2(x);
    case CT_OP_log10: return log10(x);
    case CT_OP_log1p: return log1p(x);
    case CT_OP_sqrt: return sqrt(x);
    case CT_OP_rsqrt: return 1.0 / sqrt(x);
    case CT_OP_sin: return sin(x);
    case CT_OP_cos: return cos(x);
    case CT_OP_tan: return tan(x);
    case CT_OP_asin: return asin(x);
    case CT_OP_acos: return acos(x);
    case CT_OP_atan: return atan(x);
    case CT_OP_sinh: return sinh(x);
    case CT_OP_cosh: return cosh(x);
    case CT_OP_tanh: return tanh(x);
    case CT_OP_asinh: return asinh(x);
    case CT_OP_acosh: return acosh(x);
    case CT_OP_atanh: return atanh(x);
    case CT_OP_sigmoid: return 1.0 / (1.0 + exp(-x));
    case CT_OP_logit: {
      double eps = a->f[0];
      if (eps >= 0) x = x < eps ? eps : (x > 1 - eps ? 1 - eps : x);
      return log(x / (1 - x));
    }
    case CT_OP_erf: return erf(x);
    case CT_OP_erfc: return erfc(x);
    case CT_OP_erfinv: return k_erfinv(x);
    case CT_OP_lgamma: {
      int sg;
      return lgamma_r(x, &sg);
    }
    case CT_OP_digamma: return k_digamma(x);
    case CT_OP_polygamma: return k_polygamma(a->k[0], x);
    case CT_OP_floor: return floor(x);
    case CT_OP_ceil: return ceil(x);
    case CT_OP_round:
      if (a->k[0]) {
        /* PyTorch computes in the op-math type (float for float32/bfloat16) */
        int64_t d = a->i[0];
        bool negd = d < 0;
        double p = pow(10.0, (double)(negd ? -d : d));
        if (dt == CT_FLOAT64) return negd ? nearbyint(x / p) * p : nearbyint(x * p) / p;
        float xf = (float)x, pf = (float)p;
        return negd ? (double)(nearbyintf(xf / pf) * pf) : (double)(nearbyintf(xf * pf) / pf);
      }
      return nearbyint(x);
    case CT_OP_trunc: return trunc(x);
    case CT_OP_frac: return x - trunc(x);
    case CT_OP_reciprocal: return 1.0 / x;
    case CT_OP_square: return x * x;
    case CT_OP_relu: return x <= 0 ? 0.0 : x; /* nan propagates */
    case CT_OP_hardtanh: { /* min(max(x, lo), hi) like PyTorch's clamp, also when lo > hi */
      double t = x < a->f[0] ? a->f[0] : x;
      return t > a->f[1] ? a->f[1] : t;
    }
    case CT_OP_gelu:
      if (a->k[0]) {
        const double kb = SQRT2_D * (2.0 / sqrt(PI_D)) * 0.5, kk = 0.044715;
        return 0.5 * x * (1 + tanh(kb * (x + kk * x * x * x)));
      }
      return 0.5 * x * erfc(-x / SQRT2_D); /* = 1 + erf(x/sqrt 2), without its cancellation below x = -5.9 */
    case CT_OP_silu: return x / (1 + exp(-x));
    case CT_OP_mish: return x * tanh(log1p(exp(x)));
    case CT_OP_softplus: {
      double b = a->f[0];
      return x * b > a->f[1] ? x : log1p(exp(x * b)) / b;
    }
    case CT_OP_hardsigmoid: {
      double t = x + 3;
      return (t < 0 ? 0 : (t > 6 ? 6 : t)) / 6; /* keeps nan */
    }
    case CT_OP_hardswish: {
      double t = x + 3;
      t = t < 0 ? 0 : (t > 6 ? 6 : t); /* keeps nan */
      return x * t / 6;
    }
    case CT_OP_leaky_relu: return x > 0 ? x : x * a->f[0];
    case CT_OP_elu: {
      double alpha = a->f[0], scale = a->f[1], is = a->f[2];
      if (!(x <= 0)) return x * scale;
      if (dt == CT_FLOAT32 || dt == CT_BFLOAT16) {
        /* PyTorch computes (exp(x*is) - 1) in float: keep its cancellation near 0 */
        float t = (float)x * (float)is, e = expf(t) - 1.0f;
        return (double)(e * ((float)alpha * (float)scale));
      }
      return expm1(x * is) * alpha * scale;
    }
    case CT_OP_clamp: {
      /* PyTorch: min(max(x, lo), hi); nan propagates */
      if (isnan(x)) return x;
      if (a->k[0] && x < a->f[0]) x = a->f[0];
      if (a->k[1] && x > a->f[1]) x = a->f[1];
      return x;
    }
    case CT_OP_nan_to_num:
      if (isnan(x)) return a->k[0] ? round_to(a->f[0], dt) : 0.0;
      if (x == INFINITY) return a->k[1] ? round_to(a->f[1], dt) : dtype_max(dt);
      if (x == -INFINITY) return a->k[2] ? round_to(a->f[2], dt) : -dtype_max(dt);
      return x;
    case CT_OP_isnan: return isnan(x) ? 1 : 0;
    case CT_OP_isinf: return isinf(x) ? 1 : 0;
    case CT_OP_isfinite: return isfinite(x) ? 1 : 0;
    case CT_OP_logical_not: return x == 0 ? 1 : 0;
    default: return NAN;
  }
}

/* An int64 bound converted to dtype dt (wrapping, like PyTorch's scalar casts). */
static int64_t wrap_to(int64_t v, ct_dtype dt) {
  char buf[8];
  ct_store_i64(buf, dt, v);
  return ct_load_i64(buf, dt);
}

/* ---- forward, integer and bool (computed in int64, wrapping like C++) ---- */
static int64_t unary_i(int op, int64_t x, const ct_attrs *a, ct_dtype dt) {
  switch (op) {
    case CT_OP_abs: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case CT_OP_neg: return (int64_t)(0 - (uint64_t)x);
    case CT_OP_sign: return dt == CT_BOOL ? x : (x > 0) - (x < 0);
    case CT_OP_floor:
    case CT_OP_ceil:
    case CT_OP_round:
    case CT_OP_trunc:
    case CT_OP_nan_to_num: return x;
    case CT_OP_square: return (int64_t)((uint64_t)x * (uint64_t)x);
    case CT_OP_relu: return x < 0 ? 0 : x;
    case CT_OP_hardtanh: {
      int64_t lo = wrap_to((int64_t)a->f[0], dt), hi = wrap_to((int64_t)a->f[1], dt);
      x = x < lo ? lo : x;
      return x > hi ? hi : x;
    }
    case CT_OP_clamp:
      if (a->k[0] && x < wrap_to(a->s[0].i, dt)) x = wrap_to(a->s[0].i, dt);
      if (a->k[1] && x > wrap_to(a->s[1].i, dt)) x = wrap_to(a->s[1].i, dt);
      return x;
    case CT_OP_isnan:
    case CT_OP_isinf: return 0;
    case CT_OP_isfinite: return 1;
    case CT_OP_logical_not: return x == 0;
    case CT_OP_bitwise_not: return dt == CT_BOOL ? !x : ~x;
    default: return 0;
  }
}

static void unary_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  pw_ctx *k = vctx;
  int op = k->c->op;
  const ct_attrs *a = &k->c->a;
  ct_dtype dt = k->in_dt;
  if (dt == CT_FLOAT32 && k->out_dt == CT_FLOAT32) {
    if (ct_fast_unary_loop_f32(op, a, p, s, n)) return; /* SIMD path (simd/fast_ew.c) */
    for (int64_t i = 0; i < n; i++)
      *(float *)(p[0] + i * s[0]) = (float)unary_f(op, *(float *)(p[1] + i * s[1]), a, dt);
  } else if (k->float_domain) {
    for (int64_t i = 0; i < n; i++)
      ct_store_f64(p[0] + i * s[0], k->out_dt, unary_f(op, ct_load_f64(p[1] + i * s[1], dt), a, dt));
  } else {
    for (int64_t i = 0; i < n; i++)
      ct_store_i64(p[0] + i * s[0], k->out_dt, unary_i(op, ct_load_i64(p[1] + i * s[1], dt), a, dt));
  }
}

ct_status ct_cpu_unary(const ct_call *c) {
  pw_ctx k = {c, c->in[0]->dtype, c->out[0]->dtype, ct_dtype_is_floating(c->in[0]->dtype)};
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  ct_cpu_foreach(2, ts, unary_loop, &k, true);
  return CT_OK;
}

/* ---- derivatives of the activations: h * d^order f(x) with PyTorch's choices at
 * the kinks (zero branches return 0, not h*0, like PyTorch's where-style kernels). ---- */
static double deriv_f(int op, int order, double h, double x, const ct_attrs *a) {
  switch (op) {
    case CT_OP_relu: /* threshold_backward: x <= 0 -> 0 */
      return order == 1 ? (x <= 0 ? 0.0 : h) : 0.0;
    case CT_OP_hardtanh: return order == 1 ? ((x <= a->f[0] || x >= a->f[1]) ? 0.0 : h) : 0.0;
    case CT_OP_clamp: {
      if (order != 1) return 0.0;
      bool in = true;
      if (a->k[0]) in = in && x >= a->f[0];
      if (a->k[1]) in = in && x <= a->f[1];
      return in ? h : 0.0;
    }
    case CT_OP_leaky_relu: return order == 1 ? (x > 0 ? h : h * a->f[0]) : 0.0;
    /* PyTorch multiplies by the float constant 1.0f/6.0f, also for double */
    case CT_OP_hardsigmoid: return order == 1 ? ((x > -3 && x < 3) ? h * (double)(1.0f / 6.0f) : 0.0) : 0.0;
    case CT_OP_nan_to_num: return order == 1 ? (isfinite(x) ? h : 0.0) : 0.0;
    case CT_OP_hardswish:
      /* PyTorch's scalar path (x <= 3 is the middle piece); its vectorised path takes x >= 3 as
       * the last piece, so PyTorch itself differs at exactly 3 by element position */
      if (order == 1) return x < -3 ? 0.0 : (x <= 3 ? h * (x / 3 + 0.5) : h);
      if (order == 2) return (x > -3 && x < 3) ? h / 3 : 0.0;
      return 0.0;
    case CT_OP_elu: {
      double alpha = a->f[0], scale = a->f[1], is = a->f[3]; /* f3: the backward's input scale */
      if (!(x <= 0)) return order == 1 ? h * scale : 0.0;
      double e = exp(x * is) * alpha * scale;
      return order == 1 ? h * is * e : h * is * is * e;
    }
    case CT_OP_softplus: {
      double b = a->f[0];
      if (x * b > a->f[1]) return order == 1 ? h : 0.0;
      double z = exp(x * b);
      return order == 1 ? h * z / (z + 1) : h * b * z / ((z + 1) * (z + 1));
    }
    case CT_OP_gelu:
      if (a->k[0]) {
        const double kb = SQRT2_D * (2.0 / sqrt(PI_D)) * 0.5, kk = 0.044715;
        double x2 = x * x, u = kb * (x + kk * x2 * x), t = tanh(u), up = kb * (1 + 3 * kk * x2), sech2 = 1 - t * t;
        if (order == 1) return h * (0.5 * (1 + t) + 0.5 * x * sech2 * up);
        return h * sech2 * (up - x * t * up * up + 0.5 * x * 6 * kb * kk * x);
      } else {
        double cdf = 0.5 * erfc(-x / SQRT2_D), pdf = exp(-0.5 * x * x) / sqrt(2 * PI_D);
        return order == 1 ? h * (cdf + x * pdf) : h * pdf * (2 - x * x);
      }
    case CT_OP_silu: {
      double sg = 1 / (1 + exp(-x));
      return order == 1 ? h * sg * (1 + x * (1 - sg)) : h * sg * (1 - sg) * (2 + x * (1 - 2 * sg));
    }
    case CT_OP_mish: {
      double sg = 1 / (1 + exp(-x)), t = tanh(log1p(exp(x)));
      if (order == 1) return h * (t + x * sg * (1 - t * t));
      return h * (1 - t * t) * sg * (2 + x * (1 - sg) - 2 * x * t * sg);
    }
    case CT_OP_logit: {
      double eps = a->f[0];
      bool out = eps < 0 ? (x < 0 || x > 1) : (x < eps || x > 1 - eps);
      if (out && order == 1) return eps < 0 ? NAN : 0.0;
      double d = x * (1 - x);
      if (order == 1) return h / d;
      /* PyTorch masks the second derivative by multiplying (nan at 0 and 1) */
      bool in = eps < 0 ? (x > 0 && x < 1) : (x >= eps && x <= 1 - eps);
      return h * ((2 * x - 1) / (d * d) * (in ? 1.0 : 0.0));
    }
    default: return NAN;
  }
}

static void deriv_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  pw_ctx *k = vctx;
  const ct_attrs *a = &k->c->a;
  int op = (int)a->k[5], order = (int)a->k[4];
  for (int64_t i = 0; i < n; i++)
    ct_store_f64(p[0] + i * s[0], k->out_dt,
                 deriv_f(op, order, ct_load_f64(p[1] + i * s[1], k->in_dt), ct_load_f64(p[2] + i * s[2], k->in_dt), a));
}

ct_status ct_cpu_unary_deriv(const ct_call *c) {
  pw_ctx k = {c, c->in[0]->dtype, c->out[0]->dtype, true};
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  ct_cpu_foreach(3, ts, deriv_loop, &k, true);
  return CT_OK;
}
