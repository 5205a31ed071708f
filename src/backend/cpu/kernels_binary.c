/* CPU reference kernels for binary elementwise ops. Inputs arrive cast to one
 * compute dtype and broadcast to the output's shape. Floating dtypes compute in
 * double and round once, except where PyTorch's result depends on the rounding of
 * intermediate steps in the tensor's own precision (floor/trunc division and
 * remainder): those compute in float (float32) or float rounded to the 16-bit
 * format after each step (float16/bfloat16), as PyTorch's scalar code does.
 * Integer and bool dtypes compute in int64 with wrapping (uint64) arithmetic and
 * are truncated to the output dtype, which equals C++'s wrapping in the narrow type. */
#include "kernels_pointwise.h"
#include "simd/fast_ew.h"
#include <math.h>

typedef struct {
  pw_ctx pw;
  int err; /* set (atomically) by any thread that met an integer division by zero */
} bin_ctx;

/* Round a float to the precision of dt (identity for float32). */
static inline float rnd_dt(float v, ct_dtype dt) {
  if (dt == CT_FLOAT16) return ct_half_to_float(ct_float_to_half(v));
  if (dt == CT_BFLOAT16) return ct_bf16_to_float(ct_float_to_bf16(v));
  return v;
}

/* Python's floor division (the algorithm of CPython's float_floor_div and
 * PyTorch's div_floor): exact where floor(a / b) of the rounded quotient is not. */
static double floordiv_d(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign(0.0, a / b);
  double fl = floor(div);
  if (div - fl > 0.5) fl += 1;
  return fl;
}
static float floordiv_f(float a, float b, ct_dtype dt) {
  if (b == 0) return rnd_dt(a / b, dt);
  float mod = rnd_dt(fmodf(a, b), dt), div = rnd_dt(rnd_dt(a - mod, dt) / b, dt);
  if (mod != 0 && ((b < 0) != (mod < 0))) div = rnd_dt(div - 1, dt);
  if (div == 0) return copysignf(0.0f, rnd_dt(a / b, dt));
  float fl = floorf(div);
  if (rnd_dt(div - fl, dt) > 0.5f) fl = rnd_dt(fl + 1, dt);
  return fl;
}
/* Python's remainder: the sign follows the divisor. */
static double remainder_d(double a, double b) {
  double mod = fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
  return mod;
}
static float remainder_f(float a, float b, ct_dtype dt) {
  float mod = fmodf(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod = rnd_dt(mod + b, dt);
  return mod;
}

/* pow with a Python-number exponent takes PyTorch's shortcuts (sqrt, x*x, 1/x ...). */
static inline double pow_d(double x, double y, bool scalar_exp) {
  if (scalar_exp) {
    if (y == 2) return x * x;
    if (y == 3) return x * x * x;
    if (y == 0.5) return sqrt(x);
    if (y == -0.5) return 1.0 / sqrt(x);
    if (y == -1) return 1.0 / x;
    if (y == -2) return 1.0 / (x * x);
  }
  return pow(x, y);
}

static inline double logaddexp_d(double a, double b) {
  if (isinf(a) && a == b) return a;
  double m = a > b ? a : b;
  if (m != m || b != b) return NAN;
  return m + log1p(exp(-fabs(a - b)));
}
static inline double logaddexp2_d(double a, double b) {
  if (isinf(a) && a == b) return a;
  double m = a > b ? a : b;
  if (m != m || b != b) return NAN;
  return m + log1p(exp2(-fabs(a - b))) / M_LN2;
}

/* isclose in the precision PyTorch's composite computes it: each step rounded to
 * the floating dtype dt (float32 for int/bool inputs under the float32 default). */
static inline bool isclose_f(double x, double y, const ct_attrs *a, ct_dtype dt) {
  bool equal_nan = a->k[0] != 0;
  if (x == y) return true;
  if (equal_nan && x != x && y != y) return true;
  if (a->f[0] == 0 && a->f[1] == 0) return false;
  if (dt == CT_FLOAT64) {
    double allowed = a->f[1] + fabs(a->f[0] * y), actual = fabs(x - y);
    return isfinite(actual) && actual <= allowed;
  }
  float rt = rnd_dt((float)a->f[0], dt), at = rnd_dt((float)a->f[1], dt);
  float allowed = rnd_dt(at + fabsf(rnd_dt(rt * (float)y, dt)), dt);
  float actual = fabsf(rnd_dt((float)x - (float)y, dt));
  return isfinite(actual) && actual <= allowed;
}

/* Floating domain: every op in double, rounded once by the store. */
static inline double bin_d(int op, double x, double y, const ct_attrs *a, ct_dtype dt) {
  switch (op) {
    case CT_OP_add: return x + a->f[0] * y;
    case CT_OP_sub: return x - a->f[0] * y;
    case CT_OP_mul: return x * y;
    case CT_OP_div:
      if (a->k[0] == 1) return trunc(x / y);
      if (a->k[0] == 2) return floordiv_d(x, y);
      return x / y;
    case CT_OP_floor_divide: return floordiv_d(x, y);
    case CT_OP_remainder: return remainder_d(x, y);
    case CT_OP_fmod: return fmod(x, y);
    case CT_OP_pow: return pow_d(x, y, a->k[2] != 0);
    case CT_OP_atan2: return atan2(x, y);
    case CT_OP_maximum: return (x != x || y != y) ? NAN : (x < y ? y : x);
    case CT_OP_minimum: return (x != x || y != y) ? NAN : (y < x ? y : x);
    case CT_OP_fmax: return fmax(x, y);
    case CT_OP_fmin: return fmin(x, y);
    case CT_OP_hypot: return hypot(x, y);
    case CT_OP_logaddexp: return logaddexp_d(x, y);
    case CT_OP_logaddexp2: return logaddexp2_d(x, y);
    case CT_OP_copysign: return copysign(x, y);
    case CT_OP_xlogy:
      if (y != y) return NAN;
      if (x == 0) return 0;
      return x * log(y);
    case CT_OP_eq: return x == y;
    case CT_OP_ne: return x != y;
    case CT_OP_lt: return x < y;
    case CT_OP_le: return x <= y;
    case CT_OP_gt: return x > y;
    case CT_OP_ge: return x >= y;
    case CT_OP_logical_and: return (x != 0) && (y != 0);
    case CT_OP_logical_or: return (x != 0) || (y != 0);
    case CT_OP_logical_xor: return (x != 0) != (y != 0);
    case CT_OP_isclose: return isclose_f(x, y, a, dt);
    case CT_OP_masked_zero: return y != 0 ? 0.0 : x;
    default: return NAN;
  }
}

/* Ops whose floating result depends on intermediate roundings in the dtype. */
static inline bool rounding_sensitive(int op, const ct_attrs *a) {
  return op == CT_OP_floor_divide || op == CT_OP_remainder || (op == CT_OP_div && a->k[0] != 0);
}
static inline float bin_f(int op, float x, float y, const ct_attrs *a, ct_dtype dt) {
  if (op == CT_OP_div && a->k[0] == 1) return truncf(rnd_dt(x / y, dt));
  if (op == CT_OP_remainder) return remainder_f(x, y, dt);
  return floordiv_f(x, y, dt); /* div floor, floor_divide */
}

/* Integer pow by squaring, wrapping; negative exponents as PyTorch's powi. */
static int64_t powi(int64_t b, int64_t e) {
  if (e < 0) {
    if (b == 1) return 1;
    if (b == -1) return (e & 1) ? -1 : 1;
    return 0;
  }
  uint64_t r = 1, base = (uint64_t)b;
  while (e) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return (int64_t)r;
}

/* Shifts as PyTorch 1.13's kernels behave on x86: operands narrower than 64 bits
 * are promoted to 32-bit int and the count is taken modulo the register width. */
static inline int64_t shift_i(int op, int64_t x, int64_t y, ct_dtype dt) {
  if (dt == CT_INT64) {
    unsigned s = (unsigned)(y & 63);
    if (op == CT_OP_bitwise_left_shift) return (int64_t)((uint64_t)x << s);
    return x >= 0 ? (int64_t)((uint64_t)x >> s) : (int64_t) ~(~(uint64_t)x >> s);
  }
  unsigned s = (unsigned)(y & 31);
  if (op == CT_OP_bitwise_left_shift) {
    uint64_t ux = (uint64_t)x;
    if (dt == CT_INT8) ux &= 0xff;
    else if (dt == CT_INT16) ux &= 0xffff;
    else ux &= 0xffffffffu;
    return (int64_t)(uint32_t)((uint32_t)ux << s);
  }
  int32_t v = (int32_t)x;
  return v >= 0 ? (int64_t)((uint32_t)v >> s) : (int64_t)(int32_t) ~(~(uint32_t)v >> s);
}

static inline int64_t bin_i(int op, int64_t x, int64_t y, const ct_attrs *a, ct_dtype dt, int *err) {
  switch (op) {
    case CT_OP_add: return (int64_t)((uint64_t)x + (uint64_t)a->s[0].i * (uint64_t)y);
    case CT_OP_sub: return (int64_t)((uint64_t)x - (uint64_t)a->s[0].i * (uint64_t)y);
    case CT_OP_mul: return dt == CT_BOOL ? (x && y) : (int64_t)((uint64_t)x * (uint64_t)y);
    case CT_OP_div:
    case CT_OP_floor_divide: {
      if (y == 0) {
        __atomic_store_n(err, 1, __ATOMIC_RELAXED);
        return 0;
      }
      if (y == -1) return (int64_t)(0 - (uint64_t)x);
      int64_t q = x / y;
      bool floor_mode = op == CT_OP_floor_divide || a->k[0] == 2;
      if (floor_mode && (x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
      return q;
    }
    case CT_OP_remainder:
    case CT_OP_fmod: {
      if (y == 0) {
        __atomic_store_n(err, 1, __ATOMIC_RELAXED);
        return 0;
      }
      if (y == -1) return 0;
      int64_t r = x % y;
      if (op == CT_OP_remainder && r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    case CT_OP_pow: return powi(x, y);
    case CT_OP_maximum:
    case CT_OP_fmax: return x < y ? y : x;
    case CT_OP_minimum:
    case CT_OP_fmin: return y < x ? y : x;
    case CT_OP_bitwise_and: return x & y;
    case CT_OP_bitwise_or: return x | y;
    case CT_OP_bitwise_xor: return x ^ y;
    case CT_OP_bitwise_left_shift:
    case CT_OP_bitwise_right_shift: return shift_i(op, x, y, dt);
    case CT_OP_eq: return x == y;
    case CT_OP_ne: return x != y;
    case CT_OP_lt: return x < y;
    case CT_OP_le: return x <= y;
    case CT_OP_gt: return x > y;
    case CT_OP_ge: return x >= y;
    case CT_OP_logical_and: return (x != 0) && (y != 0);
    case CT_OP_logical_or: return (x != 0) || (y != 0);
    case CT_OP_logical_xor: return (x != 0) != (y != 0);
    case CT_OP_masked_zero: return y != 0 ? 0 : x;
    default: return 0;
  }
}

/* isclose of integer/bool inputs: exact equality, else PyTorch 1.13 casts both to the
 * default float dtype (a->k[1]) before the tolerance test (no integer wrap-around). */
static inline bool isclose_i(int64_t x, int64_t y, const ct_attrs *a) {
  if (x == y) return true;
  if (a->f[0] == 0 && a->f[1] == 0) return false;
  if ((ct_dtype)a->k[1] == CT_FLOAT64) return isclose_f((double)x, (double)y, a, CT_FLOAT64);
  return isclose_f((double)(float)x, (double)(float)y, a, CT_FLOAT32); /* one rounding int64 -> float */
}

static void binary_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
  bin_ctx *k = vctx;
  int op = k->pw.c->op;
  const ct_attrs *a = &k->pw.c->a;
  ct_dtype in_dt = k->pw.in_dt, out_dt = k->pw.out_dt;
  if (in_dt == CT_FLOAT32 && out_dt == CT_FLOAT32) {
    if (ct_fast_binary_loop_f32(op, a, p, s, n)) return; /* SIMD path (simd/fast_ew.c) */
    /* the common cases, kept simple for the vectoriser */
    if ((op == CT_OP_add && a->f[0] == 1.0) || op == CT_OP_mul || (op == CT_OP_sub && a->f[0] == 1.0) ||
        (op == CT_OP_div && a->k[0] == 0)) {
      for (int64_t i = 0; i < n; i++) {
        float x = *(float *)(p[1] + i * s[1]), y = *(float *)(p[2] + i * s[2]);
        float r = op == CT_OP_add ? x + y : op == CT_OP_sub ? x - y : op == CT_OP_mul ? x * y : x / y;
        *(float *)(p[0] + i * s[0]) = r;
      }
      return;
    }
  }
  if (k->pw.float_domain) {
    if (rounding_sensitive(op, a) && in_dt != CT_FLOAT64) {
      for (int64_t i = 0; i < n; i++)
        ct_store_f64(p[0] + i * s[0], out_dt,
                     bin_f(op, (float)ct_load_f64(p[1] + i * s[1], in_dt), (float)ct_load_f64(p[2] + i * s[2], in_dt),
                           a, in_dt));
      return;
    }
    for (int64_t i = 0; i < n; i++)
      ct_store_f64(p[0] + i * s[0], out_dt,
                   bin_d(op, ct_load_f64(p[1] + i * s[1], in_dt), ct_load_f64(p[2] + i * s[2], in_dt), a, in_dt));
  } else if (op == CT_OP_isclose) {
    for (int64_t i = 0; i < n; i++)
      ct_store_i64(p[0] + i * s[0], out_dt,
                   isclose_i(ct_load_i64(p[1] + i * s[1], in_dt), ct_load_i64(p[2] + i * s[2], in_dt), a));
  } else {
    for (int64_t i = 0; i < n; i++)
      ct_store_i64(p[0] + i * s[0], out_dt,
                   bin_i(op, ct_load_i64(p[1] + i * s[1], in_dt), ct_load_i64(p[2] + i * s[2], in_dt), a, in_dt,
                         &k->err));
  }
}

ct_status ct_cpu_binary(const ct_call *c) {
  bin_ctx k = {{c, c->in[0]->dtype, c->out[0]->dtype, ct_dtype_is_floating(c->in[0]->dtype)}, 0};
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  ct_cpu_foreach(3, ts, binary_loop, &k, true);
  if (__atomic_load_n(&k.err, __ATOMIC_RELAXED)) return CT_ERR(CT_ERR_RUNTIME, "ZeroDivisionError");
  return CT_OK;
}
