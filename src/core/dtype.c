/* The dtype table, promotion lattice and half/bfloat16 conversions. */
#include "internal.h"
#include <math.h>

typedef struct {
  const char *name, *torch_name, *legacy;
  size_t size;
  ct_category cat;
} dtype_info;

static const dtype_info DT[CT_NUM_DTYPES] = {
    [CT_FLOAT32] = {"float32", "Float", "torch.FloatTensor", 4, CT_CAT_FLOAT},
    [CT_FLOAT64] = {"float64", "Double", "torch.DoubleTensor", 8, CT_CAT_FLOAT},
    [CT_FLOAT16] = {"float16", "Half", "torch.HalfTensor", 2, CT_CAT_FLOAT},
    [CT_BFLOAT16] = {"bfloat16", "BFloat16", "torch.BFloat16Tensor", 2, CT_CAT_FLOAT},
    [CT_INT8] = {"int8", "Char", "torch.CharTensor", 1, CT_CAT_INT},
    [CT_UINT8] = {"uint8", "Byte", "torch.ByteTensor", 1, CT_CAT_INT},
    [CT_INT16] = {"int16", "Short", "torch.ShortTensor", 2, CT_CAT_INT},
    [CT_INT32] = {"int32", "Int", "torch.IntTensor", 4, CT_CAT_INT},
    [CT_INT64] = {"int64", "Long", "torch.LongTensor", 8, CT_CAT_INT},
    [CT_BOOL] = {"bool", "Bool", "torch.BoolTensor", 1, CT_CAT_BOOL},
};

bool ct_dtype_valid(int dt) { return dt >= 0 && dt < CT_NUM_DTYPES; }
const char *ct_dtype_name(ct_dtype dt) { return ct_dtype_valid(dt) ? DT[dt].name : "invalid"; }
const char *ct_dtype_torch_name(ct_dtype dt) { return ct_dtype_valid(dt) ? DT[dt].torch_name : "invalid"; }
const char *ct_dtype_legacy_name(ct_dtype dt) { return ct_dtype_valid(dt) ? DT[dt].legacy : "invalid"; }
const char *ct_dtype_cpp_name(ct_dtype dt) {
  static const char *names[CT_NUM_DTYPES] = {"float", "double", "c10::Half", "c10::BFloat16", "signed char",
                                             "unsigned char", "short int", "int", "long int", "bool"};
  return ct_dtype_valid(dt) ? names[dt] : "?";
}
size_t ct_dtype_size(ct_dtype dt) { return ct_dtype_valid(dt) ? DT[dt].size : 0; }
ct_category ct_dtype_category(ct_dtype dt) { return DT[dt].cat; }
bool ct_dtype_is_floating(ct_dtype dt) { return ct_dtype_valid(dt) && DT[dt].cat == CT_CAT_FLOAT; }
bool ct_dtype_is_integral(ct_dtype dt, bool include_bool) {
  if (!ct_dtype_valid(dt)) return false;
  return DT[dt].cat == CT_CAT_INT || (include_bool && dt == CT_BOOL);
}

/* PyTorch's promotion table (c10/core/ScalarType.h), restricted to our dtypes. */
ct_dtype ct_promote_types(ct_dtype a, ct_dtype b) {
  enum { f4 = CT_FLOAT32, f8 = CT_FLOAT64, f2 = CT_FLOAT16, bf = CT_BFLOAT16, i1 = CT_INT8, u1 = CT_UINT8,
         i2 = CT_INT16, i4 = CT_INT32, i8 = CT_INT64, b1 = CT_BOOL };
  static const unsigned char T[CT_NUM_DTYPES][CT_NUM_DTYPES] = {
      /*         f4  f8  f2  bf  i1  u1  i2  i4  i8  b1 */
      /* f4 */ {f4, f8, f4, f4, f4, f4, f4, f4, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
      /* f2 */ {f4, f8, f2, f4, f2, f2, f2, f2, f2, f2},
      /* bf */ {f4, f8, f4, bf, bf, bf, bf, bf, bf, bf},
      /* i1 */ {f4, f8, f2, bf, i1, i2, i2, i4, i8, i1},
      /* u1 */ {f4, f8, f2, bf, i2, u1, i2, i4, i8, u1},
      /* i2 */ {f4, f8, f2, bf, i2, i2, i2, i4, i8, i2},
      /* i4 */ {f4, f8, f2, bf, i4, i4, i4, i4, i8, i4},
      /* i8 */ {f4, f8, f2, bf, i8, i8, i8, i8, i8, i8},
      /* b1 */ {f4, f8, f2, bf, i1, u1, i2, i4, i8, b1},
  };
  return (ct_dtype)T[a][b];
}

/* torch.can_cast: no casting to a lower category. */
bool ct_can_cast(ct_dtype from, ct_dtype to) { return DT[from].cat <= DT[to].cat; }

static ct_dtype default_dtype = CT_FLOAT32;
ct_dtype ct_get_default_dtype(void) { return default_dtype; }
ct_status ct_set_default_dtype(ct_dtype dt) {
  if (dt != CT_FLOAT32 && dt != CT_FLOAT64)
    return CT_ERR(CT_ERR_TYPE, "only floating-point types are supported as the default type");
  default_dtype = dt;
  return CT_OK;
}

float ct_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) bits = sign;
    else { /* subnormal: renormalise */
      int e = -1;
      do { e++; man <<= 1; } while (!(man & 0x400));
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
  else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t ct_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7fffffff;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to inf */
  if (ax < 0x38800000u) { /* subnormal or zero in half */
    float a;
    memcpy(&a, &ax, 4);
    /* scale so that the half subnormal unit (2^-24) becomes 1, round to nearest even */
    float r = nearbyintf(a * 16777216.0f);
    return (uint16_t)(sign | (uint32_t)r);
  }
  uint32_t e = ((ax >> 23) - 127 + 15), m = ax & 0x7fffff;
  uint32_t h = (e << 10) | (m >> 13);
  uint32_t rest = m & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

float ct_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t ct_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7fff + lsb;
  return (uint16_t)(x >> 16);
}

/* Float to integer conversion as C++ static_cast does on x86 for in-range values;
 * out of range and NaN give the x86 "integer indefinite" like PyTorch's CPU kernels. */
static int64_t f2i(double v) {
  if (v != v || v >= 9223372036854775808.0 || v < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

double ct_load_f64(const void *p, ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: return *(const float *)p;
    case CT_FLOAT64: return *(const double *)p;
    case CT_FLOAT16: return ct_half_to_float(*(const uint16_t *)p);
    case CT_BFLOAT16: return ct_bf16_to_float(*(const uint16_t *)p);
    case CT_INT8: return *(const int8_t *)p;
    case CT_UINT8: return *(const uint8_t *)p;
    case CT_INT16: return *(const int16_t *)p;
    case CT_INT32: return *(const int32_t *)p;
    case CT_INT64: return (double)*(const int64_t *)p;
    case CT_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0;
  }
}

int64_t ct_load_i64(const void *p, ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: return f2i(*(const float *)p);
    case CT_FLOAT64: return f2i(*(const double *)p);
    case CT_FLOAT16: return f2i(ct_half_to_float(*(const uint16_t *)p));
    case CT_BFLOAT16: return f2i(ct_bf16_to_float(*(const uint16_t *)p));
    case CT_INT8: return *(const int8_t *)p;
    case CT_UINT8: return *(const uint8_t *)p;
    case CT_INT16: return *(const int16_t *)p;
    case CT_INT32: return *(const int32_t *)p;
    case CT_INT64: return *(const int64_t *)p;
    case CT_BOOL: return *(const uint8_t *)p ? 1 : 0;
    default: return 0;
  }
}

void ct_store_f64(void *p, ct_dtype dt, double v) {
  switch (dt) {
    case CT_FLOAT32: *(float *)p = (float)v; break;
    case CT_FLOAT64: *(double *)p = v; break;
    case CT_FLOAT16: *(uint16_t *)p = ct_float_to_half((float)v); break;
    case CT_BFLOAT16: *(uint16_t *)p = ct_float_to_bf16((float)v); break;
    case CT_INT8: *(int8_t *)p = (int8_t)f2i(v); break;
    case CT_UINT8: *(uint8_t *)p = (uint8_t)f2i(v); break;
    case CT_INT16: *(int16_t *)p = (int16_t)f2i(v); break;
    case CT_INT32: *(int32_t *)p = (int32_t)f2i(v); break;
    case CT_INT64: *(int64_t *)p = f2i(v); break;
    case CT_BOOL: *(uint8_t *)p = v != 0; break;
    default: break;
  }
}

void ct_store_i64(void *p, ct_dtype dt, int64_t v) {
  switch (dt) {
    case CT_FLOAT32: *(float *)p = (float)v; break;
    case CT_FLOAT64: *(double *)p = (double)v; break;
    case CT_FLOAT16: *(uint16_t *)p = ct_float_to_half((float)v); break;
    case CT_BFLOAT16: *(uint16_t *)p = ct_float_to_bf16((float)v); break;
    case CT_INT8: *(int8_t *)p = (int8_t)v; break;
    case CT_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case CT_INT16: *(int16_t *)p = (int16_t)v; break;
    case CT_INT32: *(int32_t *)p = (int32_t)v; break;
    case CT_INT64: *(int64_t *)p = v; break;
    case CT_BOOL: *(uint8_t *)p = v != 0; break;
    default: break;
  }
}
