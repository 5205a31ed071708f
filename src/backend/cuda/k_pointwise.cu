/* CUDA kernels of the elementwise families (fill, copy, unary, binary, ternary, the
 * activation derivatives) and the index reads/writes that are elementwise over an
 * index (gather, index_select, embedding, scatter, masked_fill). Each is a port of the
 * CPU reference kernel's arithmetic (src/backend/cpu/kernels_*.c): floating dtypes
 * compute in double and round once, integers in wrapping int64, so results agree with
 * the CPU bit for bit except where the device's libm differs in the last double bit.
 * All run through one strided iterator (cu_common.cuh). */
#include "cu_common.cuh"
#include <math.h>
#include <stdlib.h>

#define PI_D 3.14159265358979323846
#define SQRT2_D 1.41421356237309504880

/* ---- fill ---- */
struct FillF {
  int isz;
  uint64_t bits;
  __device__ void operator()(char **p) const {
    switch (isz) {
      case 1: *(uint8_t *)p[0] = (uint8_t)bits; break;
      case 2: *(uint16_t *)p[0] = (uint16_t)bits; break;
      case 4: *(uint32_t *)p[0] = (uint32_t)bits; break;
      default: *(uint64_t *)p[0] = bits; break;
    }
  }
};

static ct_status cu_fill(const ct_call *c) {
  ct_tensor *o = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  union {
    char b[8];
    uint64_t u;
  } v;
  v.u = 0;
  ct_scalar s = c->a.s[0];
  if (s.kind == CT_SCALAR_FLOAT) ct_store_f64(v.b, o->dtype, s.f);
  else ct_store_i64(v.b, o->dtype, s.i);
  cu_iter it;
  cu_iter_make(1, &o, &it);
  FillF f = {(int)ct_dtype_size(o->dtype), v.u};
  return cu_foreach<1>(dev, it, f, "fill");
}

/* ---- copy with dtype conversion (the CPU's copy_loop rules) ---- */
struct CopyF {
  int dd, sd, isz;
  __device__ void operator()(char **p) const {
    if (dd == sd) {
      cpy_bytes(p[0], p[1], isz);
      return;
    }
    bool dfl = dd <= CT_BFLOAT16, sfl = sd <= CT_BFLOAT16; /* the four floating dtypes come first */
    if (dd == CT_FLOAT32 && sd == CT_FLOAT64) *(float *)p[0] = (float)*(const double *)p[1];
    else if (!dfl && !sfl) st_i(p[0], dd, ld_i(p[1], sd));
    else if (sd == CT_INT64 && dfl) {
      int64_t v = *(const int64_t *)p[1];
      if (dd == CT_FLOAT32) *(float *)p[0] = (float)v;
      else st_f(p[0], dd, (double)v);
    } else st_f(p[0], dd, ld_f(p[1], sd));
  }
};

extern "C" ct_status ct_cuda_copy_tensor(ct_tensor *dst, ct_tensor *src) {
  int dev = dst->storage->device.index;
  ct_status fst;
  if (ct_cuda_fast_copy(dst, src, &fst)) return fst;
  CT_TRY(ct_cuda_use(dev));
  ct_tensor *ts[2] = {dst, src};
  ct_tensor *tmp = NULL;
  if (dst->storage == src->storage && dst != src) {
    /* overlapping source and destination (x.copy_(x.flip(0))): through a temporary */
    tmp = ct_tensor_new(src->ndim, src->shape, src->dtype, src->storage->device);
    if (!tmp) return ct_last_status();
    ct_status st = ct_cuda_copy_tensor(tmp, src);
    if (st != CT_OK) {
      ct_release(tmp);
      return st;
    }
    ts[1] = tmp;
  }
  cu_iter it;
  cu_iter_make(2, ts, &it);
  CopyF f = {(int)dst->dtype, (int)ts[1]->dtype, (int)ct_dtype_size(dst->dtype)};
  ct_status st = cu_foreach<2>(dev, it, f, "copy");
  ct_release(tmp);
  return st;
}
static ct_status cu_copy(const ct_call *c) { return ct_cuda_copy_tensor(c->out[0], c->in[0]); }

/* ---- special functions (ports of the CPU reference's) ---- */
__device__ double k_digamma(double x) {
  if (x == 0) return copysign(INFINITY, -x);
  if (isnan(x)) return x;
  double res = 0;
  if (x < 0) {
    if (x == trunc(x)) return NAN;
    if (x == -INFINITY) return NAN;
    double q, r = modf(x, &q);
    res = -PI_D / tan(PI_D * r);
    x = 1 - x;
  }
  if (x == INFINITY) return x;
  while (x < 10) {
    res -= 1 / x;
    x += 1;
  }
  const double c[] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12};
  double z = 1 / (x * x), s = 0, pp = z;
  if (x < 1e17)
    for (int k = 0; k < 7; k++) {
      s += c[k] * pp;
      pp *= z;
    }
  return res + log(x) - 0.5 / x - s;
}

__device__ double k_zeta(double s, double q) {
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
  const double b[] = {1.0 / 12,          -1.0 / 720,          1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                      -691.0 / 1307674368000.0, 1.0 / 74724249600.0, -3617.0 / 10670622842880000.0};
  double fac = s * pow(a, -s - 1);
  for (int j = 0; j < 8; j++) {
    sum += b[j] * fac;
    fac *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
  }
  return sum;
}

__device__ double k_polygamma(int64_t n, double x) {
  if (n == 0) return k_digamma(x);
  if (n == 1) {
    double sign = 1, res = 0;
    if (x < 0.5) {
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

__device__ __forceinline__ double round_to(double v, int dt) {
  switch (dt) {
    case CT_FLOAT32: return (double)(float)v;
    case CT_BFLOAT16: return cu_bf2f(cu_f2bf((float)v));
    case CT_FLOAT16: return cu_h2f(cu_f2h((float)v));
    default: return v;
  }
}
__device__ __forceinline__ double dtype_max(int dt) {
  switch (dt) {
    case CT_FLOAT32: return 3.40282346638528859812e+38;
    case CT_FLOAT16: return 65504.0;
    case CT_BFLOAT16: return 3.3895313892515355e38;
    default: return 1.7976931348623157e308;
  }
}

/* The attributes a kernel reads (a subset of ct_attrs, kept small for the launch). */
struct KAttrs {
  double f[6];
  int64_t k[6];
  int64_t i0;
  int64_t s0i, s1i;
};
static KAttrs kattrs(const ct_attrs *a) {
  KAttrs k;
  memcpy(k.f, a->f, sizeof k.f);
  memcpy(k.k, a->k, sizeof k.k);
  k.i0 = a->i[0];
  k.s0i = a->s[0].i;
  k.s1i = a->s[1].i;
  return k;
}

__device__ double unary_f(int op, double x, const KAttrs &a, int dt) {
  switch (op) {
    case CT_OP_abs: return fabs(x);
    case CT_OP_neg: return -x;
    case CT_OP_sign: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
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
      double eps = a.f[0];
      if (eps >= 0) x = x < eps ? eps : (x > 1 - eps ? 1 - eps : x);
      return log(x / (1 - x));
    }
    case CT_OP_erf: return erf(x);
    case CT_OP_erfc: return erfc(x);
    case CT_OP_erfinv: return erfinv(x);
    case CT_OP_lgamma: return lgamma(x);
    case CT_OP_digamma: return k_digamma(x);
    case CT_OP_polygamma: return k_polygamma(a.k[0], x);
    case CT_OP_floor: return floor(x);
    case CT_OP_ceil: return ceil(x);
    case CT_OP_round:
      if (a.k[0]) {
        int64_t d = a.i0;
        bool negd = d < 0;
        double pw = pow(10.0, (double)(negd ? -d : d));
        if (dt == CT_FLOAT64) return negd ? rint(x / pw) * pw : rint(x * pw) / pw;
        float xf = (float)x, pf = (float)pw;
        return negd ? (double)(rintf(xf / pf) * pf) : (double)(rintf(xf * pf) / pf);
      }
      return rint(x);
    case CT_OP_trunc: return trunc(x);
    case CT_OP_frac: return x - trunc(x);
    case CT_OP_reciprocal: return 1.0 / x;
    case CT_OP_square: return x * x;
    case CT_OP_relu: return x <= 0 ? 0.0 : x;
    case CT_OP_hardtanh: {
      double t = x < a.f[0] ? a.f[0] : x;
      return t > a.f[1] ? a.f[1] : t;
    }
    case CT_OP_gelu:
      if (a.k[0]) {
        const double kb = SQRT2_D * (2.0 / sqrt(PI_D)) * 0.5, kk = 0.044715;
        return 0.5 * x * (1 + tanh(kb * (x + kk * x * x * x)));
      }
      return 0.5 * x * (1 + erf(x / SQRT2_D));
    case CT_OP_silu: return x / (1 + exp(-x));
    case CT_OP_mish: return x * tanh(log1p(exp(x)));
    case CT_OP_softplus: {
      double b = a.f[0];
      return x * b > a.f[1] ? x : log1p(exp(x * b)) / b;
    }
    case CT_OP_hardsigmoid: {
      double t = x + 3;
      return (t < 0 ? 0 : (t > 6 ? 6 : t)) / 6;
    }
    case CT_OP_hardswish: {
      double t = x + 3;
      t = t < 0 ? 0 : (t > 6 ? 6 : t);
      return x * t / 6;
    }
    case CT_OP_leaky_relu: return x > 0 ? x : x * a.f[0];
    case CT_OP_elu: {
      double alpha = a.f[0], scale = a.f[1], is = a.f[2];
      if (!(x <= 0)) return x * scale;
      if (dt == CT_FLOAT32 || dt == CT_BFLOAT16) {
        float t = (float)x * (float)is, e = expf(t) - 1.0f;
        return (double)(e * ((float)alpha * (float)scale));
      }
      return expm1(x * is) * alpha * scale;
    }
    case CT_OP_clamp: {
      if (isnan(x)) return x;
      if (a.k[0] && x < a.f[0]) x = a.f[0];
      if (a.k[1] && x > a.f[1]) x = a.f[1];
      return x;
    }
    case CT_OP_nan_to_num:
      if (isnan(x)) return a.k[0] ? round_to(a.f[0], dt) : 0.0;
      if (x == INFINITY) return a.k[1] ? round_to(a.f[1], dt) : dtype_max(dt);
      if (x == -INFINITY) return a.k[2] ? round_to(a.f[2], dt) : -dtype_max(dt);
      return x;
    case CT_OP_isnan: return isnan(x) ? 1 : 0;
    case CT_OP_isinf: return isinf(x) ? 1 : 0;
    case CT_OP_isfinite: return isfinite(x) ? 1 : 0;
    case CT_OP_logical_not: return x == 0 ? 1 : 0;
    case CT_OP_rsqrt_eps: return 1.0 / sqrt(x + a.f[0]);
    default: return NAN;
  }
}

__device__ __forceinline__ int64_t wrap_to(int64_t v, int dt) {
  char buf[8];
  st_i(buf, dt, v);
  return ld_i(buf, dt);
}

__device__ int64_t unary_i(int op, int64_t x, const KAttrs &a, int dt) {
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
      int64_t lo = wrap_to((int64_t)a.f[0], dt), hi = wrap_to((int64_t)a.f[1], dt);
      x = x < lo ? lo : x;
      return x > hi ? hi : x;
    }
    case CT_OP_clamp:
      if (a.k[0] && x < wrap_to(a.s0i, dt)) x = wrap_to(a.s0i, dt);
      if (a.k[1] && x > wrap_to(a.s1i, dt)) x = wrap_to(a.s1i, dt);
      return x;
    case CT_OP_isnan:
    case CT_OP_isinf: return 0;
    case CT_OP_isfinite: return 1;
    case CT_OP_logical_not: return x == 0;
    case CT_OP_bitwise_not: return dt == CT_BOOL ? !x : ~x;
    default: return 0;
  }
}

struct UnaryF {
  int op, dt, od;
  bool fl;
  KAttrs a;
  __device__ void operator()(char **p) const {
    if (dt == CT_FLOAT32 && od == CT_FLOAT32) *(float *)p[0] = (float)unary_f(op, *(const float *)p[1], a, dt);
    else if (fl) st_f(p[0], od, unary_f(op, ld_f(p[1], dt), a, dt));
    else st_i(p[0], od, unary_i(op, ld_i(p[1], dt), a, dt));
  }
};

static ct_status cu_unary(const ct_call *c) {
  ct_status fst;
  if (ct_cuda_fast_unary(c, &fst)) return fst;
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  cu_iter it;
  cu_iter_make(2, ts, &it);
  UnaryF f = {c->op, (int)c->in[0]->dtype, (int)c->out[0]->dtype, ct_dtype_is_floating(c->in[0]->dtype) || c->op == CT_OP_rsqrt_eps,
              kattrs(&c->a)};
  return cu_foreach<2>(dev, it, f, ct_op_info_of(c->op)->id);
}

/* ---- derivatives of the activations (unary_deriv: k5 = op, k4 = order) ---- */
__device__ double deriv_f(int op, int order, double h, double x, const KAttrs &a) {
  switch (op) {
    case CT_OP_relu: return order == 1 ? (x <= 0 ? 0.0 : h) : 0.0;
    case CT_OP_hardtanh: return order == 1 ? ((x <= a.f[0] || x >= a.f[1]) ? 0.0 : h) : 0.0;
    case CT_OP_clamp: {
      if (order != 1) return 0.0;
      bool in = true;
      if (a.k[0]) in = in && x >= a.f[0];
      if (a.k[1]) in = in && x <= a.f[1];
      return in ? h : 0.0;
    }
    case CT_OP_leaky_relu: return order == 1 ? (x > 0 ? h : h * a.f[0]) : 0.0;
    case CT_OP_hardsigmoid: return order == 1 ? ((x > -3 && x < 3) ? h * (double)(1.0f / 6.0f) : 0.0) : 0.0;
    case CT_OP_nan_to_num: return order == 1 ? (isfinite(x) ? h : 0.0) : 0.0;
    case CT_OP_hardswish:
      if (order == 1) return x < -3 ? 0.0 : (x <= 3 ? h * (x / 3 + 0.5) : h);
      if (order == 2) return (x > -3 && x < 3) ? h / 3 : 0.0;
      return 0.0;
    case CT_OP_elu: {
      double alpha = a.f[0], scale = a.f[1], is = a.f[3];
      if (!(x <= 0)) return order == 1 ? h * scale : 0.0;
      double e = exp(x * is) * alpha * scale;
      return order == 1 ? h * is * e : h * is * is * e;
    }
    case CT_OP_softplus: {
      double b = a.f[0];
      if (x * b > a.f[1]) return order == 1 ? h : 0.0;
      double z = exp(x * b);
      return order == 1 ? h * z / (z + 1) : h * b * z / ((z + 1) * (z + 1));
    }
    case CT_OP_gelu:
      if (a.k[0]) {
        const double kb = SQRT2_D * (2.0 / sqrt(PI_D)) * 0.5, kk = 0.044715;
        double x2 = x * x, u = kb * (x + kk * x2 * x), t = tanh(u), up = kb * (1 + 3 * kk * x2), sech2 = 1 - t * t;
        if (order == 1) return h * (0.5 * (1 + t) + 0.5 * x * sech2 * up);
        return h * sech2 * (up - x * t * up * up + 0.5 * x * 6 * kb * kk * x);
      } else {
        double cdf = 0.5 * (1 + erf(x / SQRT2_D)), pdf = exp(-0.5 * x * x) / sqrt(2 * PI_D);
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
      double eps = a.f[0];
      bool out = eps < 0 ? (x < 0 || x > 1) : (x < eps || x > 1 - eps);
      if (out && order == 1) return eps < 0 ? NAN : 0.0;
      double d = x * (1 - x);
      if (order == 1) return h / d;
      bool in = eps < 0 ? (x > 0 && x < 1) : (x >= eps && x <= 1 - eps);
      return h * ((2 * x - 1) / (d * d) * (in ? 1.0 : 0.0));
    }
    default: return NAN;
  }
}

struct DerivF {
  int op, order, dt, od;
  KAttrs a;
  __device__ void operator()(char **p) const { st_f(p[0], od, deriv_f(op, order, ld_f(p[1], dt), ld_f(p[2], dt), a)); }
};

extern "C" bool ct_dense_same_layout(const ct_tensor *a, const ct_tensor *b); /* src/ops/memory_format.c */
/* relu's gradient (threshold backward) over contiguous float32, 4 per thread: the generic
 * iterator above spent ~6 us per ResNet activation (17 per step); same expression (x <= 0 ? 0 : h). */
__global__ void __launch_bounds__(256) k_relu_grad4(float *out, const float *h, const float *x, int64_t n4) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
    float4 hv = ((const float4 *)h)[i], xv = ((const float4 *)x)[i], o;
    o.x = xv.x <= 0.f ? 0.f : hv.x;
    o.y = xv.y <= 0.f ? 0.f : hv.y;
    o.z = xv.z <= 0.f ? 0.f : hv.z;
    o.w = xv.w <= 0.f ? 0.f : hv.w;
    ((float4 *)out)[i] = o;
  }
}
static bool relu_grad_fast(const ct_call *c, int dev) {
  const ct_tensor *o = c->out[0], *h = c->in[0], *x = c->in[1];
  if (c->a.k[5] != CT_OP_relu || c->a.k[4] != 1 || o->dtype != CT_FLOAT32 || h->dtype != CT_FLOAT32 ||
      x->dtype != CT_FLOAT32)
    return false;
  /* contiguous, or all three in one dense layout (channels-last): flat arrays alike */
  if (!(ct_is_contiguous(o) && ct_is_contiguous(h) && ct_is_contiguous(x)) &&
      !(ct_dense_same_layout(h, o) && ct_dense_same_layout(x, o)))
    return false;
  int64_t n = ct_numel(o);
  if (n == 0 || n % 4 || ct_numel(h) != n || ct_numel(x) != n) return false;
  const char *po = (const char *)o->storage->data + o->offset * 4, *ph = (const char *)h->storage->data + h->offset * 4,
             *px = (const char *)x->storage->data + x->offset * 4;
  if (((uintptr_t)po | (uintptr_t)ph | (uintptr_t)px) % 16) return false;
  int64_t n4 = n / 4, blocks = (n4 + 255) / 256;
  k_relu_grad4<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, CU_STREAM(dev)>>>((float *)po, (const float *)ph,
                                                                                   (const float *)px, n4);
  return true;
}

static ct_status cu_unary_deriv(const ct_call *c) {
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  if (relu_grad_fast(c, dev)) return ct_cuda_check_launch("unary_deriv");
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  cu_iter it;
  cu_iter_make(3, ts, &it);
  DerivF f = {(int)c->a.k[5], (int)c->a.k[4], (int)c->in[0]->dtype, (int)c->out[0]->dtype, kattrs(&c->a)};
  return cu_foreach<3>(dev, it, f, "unary_deriv");
}

/* ---- binary ---- */
__device__ __forceinline__ float rnd_dt(float v, int dt) {
  if (dt == CT_FLOAT16) return cu_h2f(cu_f2h(v));
  if (dt == CT_BFLOAT16) return cu_bf2f(cu_f2bf(v));
  return v;
}
__device__ double floordiv_d(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign(0.0, a / b);
  double fl = floor(div);
  if (div - fl > 0.5) fl += 1;
  return fl;
}
__device__ float floordiv_f(float a, float b, int dt) {
  if (b == 0) return rnd_dt(a / b, dt);
  float mod = rnd_dt(fmodf(a, b), dt), div = rnd_dt(rnd_dt(a - mod, dt) / b, dt);
  if (mod != 0 && ((b < 0) != (mod < 0))) div = rnd_dt(div - 1, dt);
  if (div == 0) return copysignf(0.0f, rnd_dt(a / b, dt));
  float fl = floorf(div);
  if (rnd_dt(div - fl, dt) > 0.5f) fl = rnd_dt(fl + 1, dt);
  return fl;
}
__device__ __forceinline__ double remainder_d(double a, double b) {
  double mod = fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
  return mod;
}
__device__ __forceinline__ float remainder_f(float a, float b, int dt) {
  float mod = fmodf(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod = rnd_dt(mod + b, dt);
  return mod;
}
__device__ __forceinline__ double pow_d(double x, double y, bool scalar_exp) {
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
__device__ __forceinline__ double logaddexp_d(double a, double b, bool two) {
  if (isinf(a) && a == b) return a;
  double m = a > b ? a : b;
  if (m != m || b != b) return NAN;
  return two ? m + log1p(exp2(-fabs(a - b))) / 0.69314718055994530942 : m + log1p(exp(-fabs(a - b)));
}
__device__ bool isclose_f(double x, double y, const KAttrs &a, int dt) {
  bool equal_nan = a.k[0] != 0;
  if (x == y) return true;
  if (equal_nan && x != x && y != y) return true;
  if (a.f[0] == 0 && a.f[1] == 0) return false;
  if (dt == CT_FLOAT64) {
    double allowed = a.f[1] + fabs(a.f[0] * y), actual = fabs(x - y);
    return isfinite(actual) && actual <= allowed;
  }
  float rt = rnd_dt((float)a.f[0], dt), at = rnd_dt((float)a.f[1], dt);
  float allowed = rnd_dt(at + fabsf(rnd_dt(rt * (float)y, dt)), dt);
  float actual = fabsf(rnd_dt((float)x - (float)y, dt));
  return isfinite(actual) && actual <= allowed;
}

__device__ double bin_d(int op, double x, double y, const KAttrs &a, int dt) {
  switch (op) {
    case CT_OP_add: return x + a.f[0] * y;
    case CT_OP_sub: return x - a.f[0] * y;
    case CT_OP_mul: return x * y;
    case CT_OP_div:
      if (a.k[0] == 1) return trunc(x / y);
      if (a.k[0] == 2) return floordiv_d(x, y);
      return x / y;
    case CT_OP_floor_divide: return floordiv_d(x, y);
    case CT_OP_remainder: return remainder_d(x, y);
    case CT_OP_fmod: return fmod(x, y);
    case CT_OP_pow: return pow_d(x, y, a.k[2] != 0);
    case CT_OP_atan2: return atan2(x, y);
    case CT_OP_maximum: return (x != x || y != y) ? NAN : (x < y ? y : x);
    case CT_OP_minimum: return (x != x || y != y) ? NAN : (y < x ? y : x);
    case CT_OP_fmax: return fmax(x, y);
    case CT_OP_fmin: return fmin(x, y);
    case CT_OP_hypot: return hypot(x, y);
    case CT_OP_logaddexp: return logaddexp_d(x, y, false);
    case CT_OP_logaddexp2: return logaddexp_d(x, y, true);
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

__device__ int64_t powi(int64_t b, int64_t e) {
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
__device__ int64_t shift_i(int op, int64_t x, int64_t y, int dt) {
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
__device__ int64_t bin_i(int op, int64_t x, int64_t y, const KAttrs &a, int dt, int *err) {
  switch (op) {
    case CT_OP_add: return (int64_t)((uint64_t)x + (uint64_t)a.s0i * (uint64_t)y);
    case CT_OP_sub: return (int64_t)((uint64_t)x - (uint64_t)a.s0i * (uint64_t)y);
    case CT_OP_mul: return dt == CT_BOOL ? (x && y) : (int64_t)((uint64_t)x * (uint64_t)y);
    case CT_OP_div:
    case CT_OP_floor_divide: {
      if (y == 0) {
        *err = 1;
        return 0;
      }
      if (y == -1) return (int64_t)(0 - (uint64_t)x);
      int64_t q = x / y;
      bool floor_mode = op == CT_OP_floor_divide || a.k[0] == 2;
      if (floor_mode && (x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
      return q;
    }
    case CT_OP_remainder:
    case CT_OP_fmod: {
      if (y == 0) {
        *err = 1;
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

struct BinaryF {
  int op, dt, od;
  bool fl, fast, rsens;
  KAttrs a;
  int *err;
  __device__ void operator()(char **p) const {
    if (fast) {
      /* the CPU computes these four float32 ops in float: so do we */
      float x = *(const float *)p[1], y = *(const float *)p[2];
      *(float *)p[0] = op == CT_OP_add ? x + y : op == CT_OP_sub ? x - y : op == CT_OP_mul ? x * y : x / y;
    } else if (fl) {
      if (rsens) {
        float x = (float)ld_f(p[1], dt), y = (float)ld_f(p[2], dt), r;
        if (op == CT_OP_div && a.k[0] == 1) r = truncf(rnd_dt(x / y, dt));
        else if (op == CT_OP_remainder) r = remainder_f(x, y, dt);
        else r = floordiv_f(x, y, dt);
        st_f(p[0], od, r);
      } else st_f(p[0], od, bin_d(op, ld_f(p[1], dt), ld_f(p[2], dt), a, dt));
    } else if (op == CT_OP_isclose) {
      int64_t x = ld_i(p[1], dt), y = ld_i(p[2], dt);
      bool r;
      if (x == y) r = true;
      else if (a.f[0] == 0 && a.f[1] == 0) r = false;
      else if ((int)a.k[1] == CT_FLOAT64) r = isclose_f((double)x, (double)y, a, CT_FLOAT64);
      else r = isclose_f((double)(float)x, (double)(float)y, a, CT_FLOAT32);
      st_i(p[0], od, r);
    } else {
      int e = 0;
      st_i(p[0], od, bin_i(op, ld_i(p[1], dt), ld_i(p[2], dt), a, dt, &e));
      if (e) *err = 1;
    }
  }
};

static ct_status cu_binary(const ct_call *c) {
  ct_status fst;
  if (ct_cuda_fast_binary(c, &fst)) return fst;
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  ct_tensor *ts[3] = {c->out[0], c->in[0], c->in[1]};
  cu_iter it;
  cu_iter_make(3, ts, &it);
  int op = c->op;
  ct_dtype dt = c->in[0]->dtype, od = c->out[0]->dtype;
  const ct_attrs *a = &c->a;
  BinaryF f;
  f.op = op;
  f.dt = dt;
  f.od = od;
  f.fl = ct_dtype_is_floating(dt);
  f.fast = dt == CT_FLOAT32 && od == CT_FLOAT32 &&
           ((op == CT_OP_add && a->f[0] == 1.0) || op == CT_OP_mul || (op == CT_OP_sub && a->f[0] == 1.0) ||
            (op == CT_OP_div && a->k[0] == 0));
  f.rsens = dt != CT_FLOAT64 &&
            (op == CT_OP_floor_divide || op == CT_OP_remainder || (op == CT_OP_div && a->k[0] != 0));
  f.a = kattrs(a);
  f.err = ct_cuda_flag(dev);
  bool int_div = !f.fl && (op == CT_OP_div || op == CT_OP_floor_divide || op == CT_OP_remainder || op == CT_OP_fmod);
  CT_TRY(cu_foreach<3>(dev, it, f, ct_op_info_of(op)->id));
  if (int_div) {
    /* integer division by zero is an error, as on the CPU: wait for the flag */
    int bad = 0;
    CT_TRY(ct_cuda_flag_take(dev, &bad));
    if (bad) return CT_ERR(CT_ERR_RUNTIME, "ZeroDivisionError");
  }
  return CT_OK;
}

/* ---- ternary (where, lerp, addcmul, addcdiv, clamp with tensor bounds) ---- */
__device__ __forceinline__ bool use_float(int dt) { return dt == CT_FLOAT32 || dt == CT_BFLOAT16 || dt == CT_FLOAT16; }
__device__ __forceinline__ double clamp_d(double x, bool has_lo, double lo, bool has_hi, double hi) {
  if (isnan(x)) return x;
  if ((has_lo && isnan(lo)) || (has_hi && isnan(hi))) return NAN;
  if (has_lo && x < lo) x = lo;
  if (has_hi && x > hi) x = hi;
  return x;
}
__device__ __forceinline__ bool clamp_mask(int which, double x, bool has_lo, double lo, bool has_hi, double hi) {
  if (has_lo && has_hi) {
    if (which == 0) return x >= lo && x <= hi;
    if (which == 1) return x < lo && lo < hi;
    return x > hi || hi < lo;
  }
  if (has_lo) return which == 0 ? x >= lo : x < lo;
  return which == 0 ? x <= hi : x > hi;
}

struct TernaryF {
  int op, dt, od, cdt;
  KAttrs a;
  __device__ void operator()(char **p) const {
    bool fl = dt <= CT_BFLOAT16;
#define LD(k) ld_f(p[k], dt)
#define LI(k) ld_i(p[k], dt)
    switch (op) {
      case CT_OP_where: {
        int src = ld_i(p[1], cdt) != 0 ? 2 : 3;
        if (fl) st_f(p[0], od, ld_f(p[src], dt));
        else st_i(p[0], od, ld_i(p[src], dt));
        return;
      }
      case CT_OP_lerp:
      case CT_OP_lerp_scalar: {
        double w = op == CT_OP_lerp_scalar ? a.f[0] : LD(3);
        double s = LD(1), e = LD(2), r;
        if (use_float(dt)) {
          float sf = (float)s, ef = (float)e, wf = (float)w;
          r = fabsf(wf) < 0.5f ? sf + wf * (ef - sf) : ef - (ef - sf) * (1.0f - wf);
        } else r = fabs(w) < 0.5 ? s + w * (e - s) : e - (e - s) * (1 - w);
        st_f(p[0], od, r);
        return;
      }
      case CT_OP_addcmul:
      case CT_OP_addcdiv: {
        bool mul = op == CT_OP_addcmul;
        if (!fl) {
          int64_t v = a.s0i, t = (int64_t)((uint64_t)v * (uint64_t)LI(2));
          t = (int64_t)((uint64_t)t * (uint64_t)LI(3));
          st_i(p[0], od, (int64_t)((uint64_t)LI(1) + (uint64_t)t));
        } else if (use_float(dt)) {
          float v = (float)a.f[0], x = (float)LD(1), t1 = (float)LD(2), t2 = (float)LD(3);
          st_f(p[0], od, (double)(mul ? x + v * t1 * t2 : x + v * t1 / t2));
        } else {
          double v = a.f[0], x = LD(1), t1 = LD(2), t2 = LD(3);
          st_f(p[0], od, mul ? x + v * t1 * t2 : x + v * t1 / t2);
        }
        return;
      }
      case CT_OP_clamp_tensor: {
        bool hl = a.k[0], hh = a.k[1];
        int kl = 2, kh = hl ? 3 : 2;
        if (fl) st_f(p[0], od, clamp_d(LD(1), hl, hl ? LD(kl) : 0, hh, hh ? LD(kh) : 0));
        else {
          int64_t x = LI(1);
          if (hl && x < LI(kl)) x = LI(kl);
          if (hh && x > LI(kh)) x = LI(kh);
          st_i(p[0], od, x);
        }
        return;
      }
      case CT_OP_clamp_tensor_grad: {
        bool hl = a.k[0], hh = a.k[1];
        int which = (int)a.k[2], kl = 3, kh = hl ? 4 : 3;
        bool m = clamp_mask(which, LD(2), hl, hl ? LD(kl) : 0, hh, hh ? LD(kh) : 0);
        st_f(p[0], od, m ? LD(1) : 0.0);
        return;
      }
      default: return;
    }
#undef LD
#undef LI
  }
};

static ct_status cu_ternary(const ct_call *c) {
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  ct_tensor *ts[CU_MAX_T];
  int nt = c->n_in + 1;
  if (nt > CU_MAX_T) return CT_ERR(CT_ERR_RUNTIME, "cuda ternary: too many inputs");
  ts[0] = c->out[0];
  for (int i = 0; i < c->n_in; i++) ts[i + 1] = c->in[i];
  cu_iter it;
  cu_iter_make(nt, ts, &it);
  TernaryF f = {c->op, (int)(c->op == CT_OP_where ? c->in[1]->dtype : c->in[0]->dtype), (int)c->out[0]->dtype,
                (int)c->in[0]->dtype, kattrs(&c->a)};
  const char *id = ct_op_info_of(c->op)->id;
  switch (nt) {
    case 3: return cu_foreach<3>(dev, it, f, id);
    case 4: return cu_foreach<4>(dev, it, f, id);
    case 5: return cu_foreach<5>(dev, it, f, id);
    default: return cu_foreach<6>(dev, it, f, id);
  }
}

/* ---- boolean attention mask -> additive 0 / -inf ---- */
struct MaskAddF {
  int od;
  __device__ void operator()(char **p) const { st_f(p[0], od, *(const uint8_t *)p[1] ? 0.0 : -INFINITY); }
};
static ct_status cu_attn_bool_mask(const ct_call *c) {
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  ct_tensor *ts[2] = {c->out[0], c->in[0]};
  cu_iter it;
  cu_iter_make(2, ts, &it);
  MaskAddF f = {(int)c->out[0]->dtype};
  return cu_foreach<2>(dev, it, f, "attn_bool_mask");
}

/* ---- masked_fill: (out, self, mask), value from s0 or the 0-dim in[2] ---- */
struct MaskedFillF {
  int isz, mdt, od, vdt;
  uint64_t bits;
  const char *vp; /* device value (masked_fill_tensor) or NULL */
  __device__ void operator()(char **p) const {
    if (ld_i(p[2], mdt)) {
      if (vp) {
        if (od <= CT_BFLOAT16) st_f(p[0], od, ld_f(vp, vdt));
        else st_i(p[0], od, ld_i(vp, vdt));
      } else cpy_bytes(p[0], (const char *)&bits, isz);
    } else cpy_bytes(p[0], p[1], isz);
  }
};
static ct_status cu_masked_fill(const ct_call *c) {
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  ct_tensor *o = c->out[0];
  union {
    char b[8];
    uint64_t u;
  } v;
  v.u = 0;
  MaskedFillF f = {(int)ct_dtype_size(o->dtype), (int)c->in[1]->dtype, (int)o->dtype, 0, 0, NULL};
  if (c->n_in > 2) {
    ct_tensor *vt = c->in[2];
    f.vp = (const char *)vt->storage->data + vt->offset * (int64_t)ct_dtype_size(vt->dtype);
    f.vdt = vt->dtype;
  } else if (c->a.s[0].kind == CT_SCALAR_FLOAT) ct_store_f64(v.b, o->dtype, c->a.s[0].f);
  else ct_store_i64(v.b, o->dtype, c->a.s[0].i);
  f.bits = v.u;
  ct_tensor *ts[3] = {o, c->in[0], c->in[1]};
  cu_iter it;
  cu_iter_make(3, ts, &it);
  return cu_foreach<3>(dev, it, f, "masked_fill");
}

/* ---- gather-like reads: out[p] = src[p with dim -> idx[p]] (tensors: out, idx, src restrided) ---- */
struct ReadF {
  int isz, idt;
  int64_t dstride, size;
  int *bad; /* set when an index is out of range (embedding checks here; the index entry points check before) */
  __device__ void operator()(char **p) const {
    int64_t v = ld_i(p[1], idt);
    if (v < 0) v += size;
    if (v < 0 || v >= size) {
      *bad = 1;
      return;
    }
    cpy_bytes(p[0], p[2] + v * dstride, isz);
  }
};

/* A borrowed handle over t's storage with another geometry. */
static ct_tensor restride(const ct_tensor *t, int nd, const int64_t *shape, const int64_t *stride) {
  ct_tensor r = *t;
  r.ndim = nd;
  for (int d = 0; d < nd; d++) {
    r.shape[d] = shape[d];
    r.stride[d] = stride[d];
  }
  return r;
}

static ct_status run_read(int dev, ct_tensor *out, ct_tensor *idx_r, ct_tensor *src_r, int64_t dstride_el, int64_t size,
                          bool check) {
  ct_tensor *ts[3] = {out, idx_r, src_r};
  cu_iter it;
  cu_iter_make(3, ts, &it);
  ReadF f = {(int)ct_dtype_size(out->dtype), (int)idx_r->dtype, dstride_el * (int64_t)ct_dtype_size(out->dtype), size,
             ct_cuda_flag(dev)};
  CT_TRY(cu_foreach<3>(dev, it, f, "gather"));
  if (check) {
    int bad = 0;
    CT_TRY(ct_cuda_flag_take(dev, &bad));
    if (bad) return CT_ERR(CT_ERR_INDEX, "index out of range in self");
  }
  return CT_OK;
}

static ct_status cu_gather(const ct_call *c) {
  ct_tensor *self = c->in[0], *idx = c->in[1], *out = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  if (ct_numel(out) == 0) return CT_OK;
  int dim = (int)c->a.k[0];
  int64_t st[CT_MAX_DIMS], ds = 0, size = 1;
  for (int d = 0; d < self->ndim; d++) st[d] = self->stride[d];
  if (self->ndim > 0) {
    ds = self->stride[dim];
    size = self->shape[dim];
    st[dim] = 0;
  }
  ct_tensor sr = restride(self, out->ndim, out->shape, st);
  return run_read(dev, out, idx, &sr, ds, size, false);
}

static ct_status cu_index_select(const ct_call *c) {
  ct_tensor *self = c->in[0], *idx = c->in[1], *out = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  if (ct_numel(out) == 0) return CT_OK;
  int dim = (int)c->a.k[0];
  int64_t st[CT_MAX_DIMS], ist[CT_MAX_DIMS], ds = 0, size = 1;
  for (int d = 0; d < out->ndim; d++) {
    st[d] = self->ndim ? self->stride[d] : 0;
    ist[d] = 0;
  }
  if (self->ndim > 0) {
    ds = self->stride[dim];
    size = self->shape[dim];
    st[dim] = 0;
    ist[dim] = idx->ndim ? idx->stride[0] : 0;
  }
  ct_tensor sr = restride(self, out->ndim, out->shape, st);
  ct_tensor ir = restride(idx, out->ndim, out->shape, ist);
  return run_read(dev, out, &ir, &sr, ds, size, false);
}

/* embedding: out[..., :] = weight[idx[...], :]; in[0] weight [V, D], in[1] indices */
static ct_status cu_embedding(const ct_call *c) {
  ct_tensor *w = c->in[0], *ix = c->in[1], *out = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  if (ct_numel(out) == 0) return CT_OK;
  int nd = out->ndim; /* = ix->ndim + 1 */
  int64_t ist[CT_MAX_DIMS], wst[CT_MAX_DIMS];
  for (int d = 0; d < nd - 1; d++) {
    ist[d] = ix->stride[d];
    wst[d] = 0;
  }
  ist[nd - 1] = 0;
  wst[nd - 1] = w->stride[1];
  ct_tensor ir = restride(ix, nd, out->shape, ist);
  ct_tensor wr = restride(w, nd, out->shape, wst);
  return run_read(dev, out, &ir, &wr, w->stride[0], w->shape[0], true);
}

/* embedding_dense_backward: gw[V, D] = sum of g rows into their index's row (in[0] g [..., D],
 * in[1] indices; k0 has padding_idx, i0 padding_idx). Accumulated in double with atomics
 * (order-free to ~1e-16), rounded once into the output like the CPU. */
__global__ void emb_bwd_kernel(const char *g, int gdt, const int64_t *idx, int64_t n, int64_t D, int64_t V, bool has_pad,
                               int64_t pad, double *acc, int *bad) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n * D; e += gridDim.x * (int64_t)blockDim.x) {
    int64_t i = e / D, j = e - i * D, v = idx[i];
    if (v < 0 || v >= V) {
      *bad = 1;
      continue;
    }
    if (has_pad && v == pad) continue;
    atomicAdd(&acc[v * D + j], ld_f(g + e * (int64_t)(gdt == CT_FLOAT64 ? 8 : gdt == CT_FLOAT32 ? 4 : 2), gdt));
  }
}

static ct_status cu_embedding_backward(const ct_call *c) {
  ct_tensor *g = c->in[0], *ix = c->in[1], *o = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int64_t V = o->shape[0], D = o->shape[1], n = ct_numel(ix);
  ct_device cd = o->storage->device;
  int64_t accshape[2] = {V, D};
  ct_tensor *acc = ct_tensor_new(2, accshape, CT_FLOAT64, cd);
  ct_tensor *gc = acc ? ct_tensor_new(g->ndim, g->shape, g->dtype, cd) : NULL;
  ct_tensor *ic = gc ? ct_tensor_new(ix->ndim, ix->shape, CT_INT64, cd) : NULL;
  ct_status st = ic ? CT_OK : ct_last_status();
  if (st == CT_OK) st = cudaMemsetAsync(acc->storage->data, 0, (size_t)(V * D) * 8, CU_STREAM(dev)) == cudaSuccess
                            ? CT_OK
                            : ct_cuda_fail(cudaGetLastError(), "memset");
  if (st == CT_OK && n) st = ct_cuda_copy_tensor(gc, g);
  if (st == CT_OK && n) st = ct_cuda_copy_tensor(ic, ix);
  if (st == CT_OK && n && D) {
    emb_bwd_kernel<<<cu_blocks(n * D), CU_THREADS, 0, CU_STREAM(dev)>>>(
        (const char *)gc->storage->data, gc->dtype, (const int64_t *)ic->storage->data, n, D, V, c->a.k[0] != 0, c->a.i[0],
        (double *)acc->storage->data, ct_cuda_flag(dev));
    st = ct_cuda_check_launch("embedding_dense_backward");
    int bad = 0;
    if (st == CT_OK) st = ct_cuda_flag_take(dev, &bad);
    if (st == CT_OK && bad) st = CT_ERR(CT_ERR_INDEX, "index out of range in self");
  }
  if (st == CT_OK) st = ct_cuda_copy_tensor(o, acc);
  ct_release(acc);
  ct_release(gc);
  ct_release(ic);
  return st;
}

/* ---- scatter writes: tensors (idx, dst restrided, src restrided?) ---- */
enum { SW_COPY = 0, SW_FILL, SW_ADD };
__device__ __forceinline__ void atomic_add_dt(char *d, int dt, double v) {
  switch (dt) {
    case CT_FLOAT32: atomicAdd((float *)d, (float)v); break;
    case CT_FLOAT64: atomicAdd((double *)d, v); break;
    case CT_INT32: atomicAdd((int *)d, (int)(int64_t)v); break;
    case CT_INT64: atomicAdd((unsigned long long *)d, (unsigned long long)(int64_t)v); break;
    default: break;
  }
}
struct ScatterF {
  int mode, dt, sdt, idt, isz;
  int64_t dstride, size;
  uint64_t bits;
  __device__ void operator()(char **p) const {
    int64_t v = ld_i(p[0], idt);
    if (v < 0) v += size;
    char *d = p[1] + v * dstride;
    if (mode == SW_FILL) {
      cpy_bytes(d, (const char *)&bits, isz);
    } else if (mode == SW_COPY) {
      if (sdt == dt) cpy_bytes(d, p[2], isz);
      else if (dt <= CT_BFLOAT16) st_f(d, dt, ld_f(p[2], sdt));
      else st_i(d, dt, ld_i(p[2], sdt));
    } else {
      if (dt == CT_INT64) atomicAdd((unsigned long long *)d, (unsigned long long)ld_i(p[2], sdt));
      else if (dt == CT_INT32) atomicAdd((int *)d, (int)ld_i(p[2], sdt));
      else atomic_add_dt(d, dt, ld_f(p[2], sdt));
    }
  }
};

static ct_status cu_scatter(const ct_call *c) {
  ct_tensor *out = c->out[0], *idx = c->in[1], *src = c->n_in > 2 ? c->in[2] : NULL;
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int mode = c->op == CT_OP_scatter_add ? SW_ADD : src ? SW_COPY : SW_FILL;
  ct_dtype dt = out->dtype;
  if (mode == SW_ADD && !(dt == CT_FLOAT32 || dt == CT_FLOAT64 || dt == CT_INT32 || dt == CT_INT64))
    return CT_ERR(CT_ERR_NOT_IMPLEMENTED, "Could not run 'aten::scatter_add' with arguments from the 'CUDA' backend "
                                          "for dtype %s (float32, float64, int32, int64 only).", ct_dtype_name(dt));
  CT_TRY(ct_cuda_copy_tensor(out, c->in[0]));
  if (ct_numel(idx) == 0) return CT_OK;
  int dim = (int)c->a.k[0];
  int64_t st[CT_MAX_DIMS], ds = 0, size = 1;
  for (int d = 0; d < out->ndim; d++) st[d] = out->stride[d];
  if (out->ndim > 0) {
    ds = out->stride[dim];
    size = out->shape[dim];
    st[dim] = 0;
  }
  ct_tensor dr = restride(out, idx->ndim, idx->shape, st);
  union {
    char b[8];
    uint64_t u;
  } v;
  v.u = 0;
  if (mode == SW_FILL) {
    if (c->a.s[0].kind == CT_SCALAR_FLOAT) ct_store_f64(v.b, dt, c->a.s[0].f);
    else ct_store_i64(v.b, dt, c->a.s[0].i);
  }
  ScatterF f = {mode, (int)dt, (int)(src ? src->dtype : dt), (int)idx->dtype, (int)ct_dtype_size(dt),
                ds * (int64_t)ct_dtype_size(dt), size, v.u};
  cu_iter it;
  if (src) {
    ct_tensor sr = restride(src, idx->ndim, idx->shape, src->stride);
    ct_tensor *ts[3] = {idx, &dr, &sr};
    cu_iter_make(3, ts, &it);
    return cu_foreach<3>(dev, it, f, "scatter");
  }
  ct_tensor *ts[2] = {idx, &dr};
  cu_iter_make(2, ts, &it);
  return cu_foreach<2>(dev, it, f, "scatter");
}

/* ---- ranges ---- */
__global__ void arange_kernel(char *d, int dt, int64_t st, int64_t n, int mode, double f0, double f1, double f2,
                              int64_t s0, int64_t s1) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += gridDim.x * (int64_t)blockDim.x) {
    char *p = d + i * st;
    bool fl = dt <= CT_BFLOAT16;
    if (mode == 0) {
      if (!fl) st_i(p, dt, s0 + i * s1);
      else st_f(p, dt, f0 + (double)i * f1);
    } else {
      double step = n > 1 ? (f1 - f0) / (double)(n - 1) : 0;
      int64_t half = n / 2;
      double v = n == 1 ? f0 : i < half ? f0 + step * (double)i : f1 - step * (double)(n - 1 - i);
      if (mode == 2) v = pow(f2, v);
      if (!fl) st_i(p, dt, (int64_t)v);
      else st_f(p, dt, v);
    }
  }
}
static ct_status cu_arange(const ct_call *c) {
  ct_tensor *o = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int64_t n = ct_numel(o);
  if (n == 0) return CT_OK;
  int64_t isz = (int64_t)ct_dtype_size(o->dtype);
  arange_kernel<<<cu_blocks(n), CU_THREADS, 0, CU_STREAM(dev)>>>(
      (char *)o->storage->data + o->offset * isz, o->dtype, (o->ndim ? o->stride[0] : 1) * isz, n, (int)c->a.k[0],
      c->a.f[0], c->a.f[1], c->a.f[2], c->a.s[0].i, c->a.s[1].i);
  return ct_cuda_check_launch("arange");
}

__global__ void eye_kernel(char *d, int dt, int64_t n, int64_t m, int64_t s0, int64_t s1) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n * m; e += gridDim.x * (int64_t)blockDim.x) {
    int64_t i = e / m, j = e - i * m;
    st_i(d + i * s0 + j * s1, dt, i == j ? 1 : 0);
  }
}
static ct_status cu_eye(const ct_call *c) {
  ct_tensor *o = c->out[0];
  int dev = ct_cuda_call_dev(c);
  CT_TRY(ct_cuda_use(dev));
  int64_t n = o->shape[0], m = o->shape[1], isz = (int64_t)ct_dtype_size(o->dtype);
  if (n * m == 0) return CT_OK;
  eye_kernel<<<cu_blocks(n * m), CU_THREADS, 0, CU_STREAM(dev)>>>((char *)o->storage->data + o->offset * isz, o->dtype, n,
                                                                  m, o->stride[0] * isz, o->stride[1] * isz);
  return ct_cuda_check_launch("eye");
}

/* ---- random draws: made by the CPU generator (bit-exact with torch's CPU streams,
 * the stream ctorch documents), then copied to the device. A device generator (Philox)
 * is future work; this keeps dropout and init usable on the GPU meanwhile. ---- */
static ct_status cu_host_random(const ct_call *c) {
  ct_tensor *o = c->out[0];
  const ct_op_info *info = ct_op_info_of(c->op);
  /* a host tensor with the output's own strides (over a fresh span), so the CPU kernel
   * draws in the order it uses for a CPU tensor of this layout */
  int64_t span = 1;
  for (int d = 0; d < o->ndim; d++) {
    if (o->shape[d] == 0) {
      span = 0;
      break;
    }
    span += (o->shape[d] - 1) * o->stride[d];
  }
  size_t nb = (size_t)span * ct_dtype_size(o->dtype);
  ct_storage *hs = ct_storage_new(ct_cpu(), nb), *ds = hs ? ct_storage_new(o->storage->device, nb) : NULL;
  ct_tensor *h = ds ? ct_tensor_over(hs, o->ndim, o->shape, o->stride, 0, o->dtype) : NULL;
  ct_tensor *dv = h ? ct_tensor_over(ds, o->ndim, o->shape, o->stride, 0, o->dtype) : NULL;
  ct_storage_release(hs);
  ct_storage_release(ds);
  ct_status st = dv ? CT_OK : ct_last_status();
  if (st == CT_OK) {
    ct_call hc = *c;
    hc.n_in = 0; /* these kernels read only attrs (bernoulli_tensor is not routed here) */
    hc.out[0] = h;
    st = info->cpu(&hc);
  }
  if (st == CT_OK && nb) st = ct_cuda_backend.upload(dv->storage, 0, h->storage->data, nb);
  if (st == CT_OK) st = ct_cuda_copy_tensor(o, dv);
  ct_release(dv);
  ct_release(h);
  return st;
}

extern "C" void ct_cuda_register_pointwise(ct_kernel_fn *tab) {
  tab[CT_OP_fill] = cu_fill;
  tab[CT_OP_copy] = cu_copy;
  tab[CT_OP_arange] = cu_arange;
  tab[CT_OP_eye] = cu_eye;
  static const int unary_ops[] = {
      CT_OP_abs,     CT_OP_neg,        CT_OP_sign,       CT_OP_exp,        CT_OP_exp2,      CT_OP_expm1,     CT_OP_log,
      CT_OP_log2,    CT_OP_log10,      CT_OP_log1p,      CT_OP_sqrt,       CT_OP_rsqrt,     CT_OP_sin,       CT_OP_cos,
      CT_OP_tan,     CT_OP_asin,       CT_OP_acos,       CT_OP_atan,       CT_OP_sinh,      CT_OP_cosh,      CT_OP_tanh,
      CT_OP_asinh,   CT_OP_acosh,      CT_OP_atanh,      CT_OP_sigmoid,    CT_OP_logit,     CT_OP_erf,       CT_OP_erfc,
      CT_OP_erfinv,  CT_OP_lgamma,     CT_OP_digamma,    CT_OP_polygamma,  CT_OP_floor,     CT_OP_ceil,      CT_OP_round,
      CT_OP_trunc,   CT_OP_frac,       CT_OP_reciprocal, CT_OP_square,     CT_OP_relu,      CT_OP_hardtanh,  CT_OP_gelu,
      CT_OP_silu,    CT_OP_mish,       CT_OP_softplus,   CT_OP_hardsigmoid, CT_OP_hardswish, CT_OP_leaky_relu, CT_OP_elu,
      CT_OP_clamp,   CT_OP_nan_to_num, CT_OP_isnan,      CT_OP_isinf,      CT_OP_isfinite,  CT_OP_logical_not,
      CT_OP_bitwise_not, CT_OP_rsqrt_eps};
  for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++) tab[unary_ops[i]] = cu_unary;
  tab[CT_OP_unary_deriv] = cu_unary_deriv;
  static const int binary_ops[] = {
      CT_OP_add,         CT_OP_sub,         CT_OP_mul,         CT_OP_div,         CT_OP_floor_divide,
      CT_OP_remainder,   CT_OP_fmod,        CT_OP_pow,         CT_OP_atan2,       CT_OP_maximum,
      CT_OP_minimum,     CT_OP_fmax,        CT_OP_fmin,        CT_OP_hypot,       CT_OP_logaddexp,
      CT_OP_logaddexp2,  CT_OP_copysign,    CT_OP_xlogy,       CT_OP_bitwise_and, CT_OP_bitwise_or,
      CT_OP_bitwise_xor, CT_OP_bitwise_left_shift, CT_OP_bitwise_right_shift, CT_OP_logical_and, CT_OP_logical_or,
      CT_OP_logical_xor, CT_OP_eq,          CT_OP_ne,          CT_OP_lt,          CT_OP_le,
      CT_OP_gt,          CT_OP_ge,          CT_OP_isclose,     CT_OP_masked_zero};
  for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++) tab[binary_ops[i]] = cu_binary;
  static const int ternary_ops[] = {CT_OP_where,   CT_OP_lerp,         CT_OP_lerp_scalar,      CT_OP_addcmul,
                                    CT_OP_addcdiv, CT_OP_clamp_tensor, CT_OP_clamp_tensor_grad};
  for (size_t i = 0; i < sizeof ternary_ops / sizeof ternary_ops[0]; i++) tab[ternary_ops[i]] = cu_ternary;
  tab[CT_OP_attn_bool_mask] = cu_attn_bool_mask;
  tab[CT_OP_masked_fill] = cu_masked_fill;
  tab[CT_OP_masked_fill_tensor] = cu_masked_fill;
  tab[CT_OP_gather] = cu_gather;
  tab[CT_OP_index_select] = cu_index_select;
  tab[CT_OP_scatter] = cu_scatter;
  tab[CT_OP_scatter_value] = cu_scatter;
  tab[CT_OP_scatter_add] = cu_scatter;
  tab[CT_OP_embedding] = cu_embedding;
  tab[CT_OP_embedding_dense_backward] = cu_embedding_backward;
  tab[CT_OP_dropout_noise] = cu_host_random;
  tab[CT_OP_random_fill] = cu_host_random;
}
