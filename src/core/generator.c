/*
 * ctorch -- PyTorch-bit-exact CPU random generator.
 *
 * Reimplements, in plain C11, the behaviour of PyTorch 1.13's
 * at::CPUGeneratorImpl (mt19937 engine, random()/random64(), cached normal
 * samples, get_state/set_state layout) and of the CPU kernels that consume
 * it: uniform_, normal_ (both the per-element Box-Muller and the blocked
 * normal_fill, including the AVX2 vectorised float path), random_(from, to),
 * bernoulli_, exponential_, randperm and multinomial.
 *
 * Floating point notes (all needed for bit exactness):
 *  - expressions are evaluated exactly as written: FP contraction is turned
 *    off below, and the places where PyTorch's AVX2 build fuses a*b+c into
 *    one FMA use fma()/fmaf() explicitly (selected by the generator's
 *    cpu capability, see generator.h);
 *  - log/sin/cos/sqrt come from the C library, as they do in PyTorch, so
 *    the double / half-precision normal streams are exact when linked
 *    against the same libm (glibc) that PyTorch uses;
 *  - -ffast-math cannot give exact results and is rejected.
 */
#include "core/generator.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#endif

#if defined(__FAST_MATH__)
#error "generator.c must not be compiled with -ffast-math: results would not match PyTorch"
#endif
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD > 0
#error "generator.c needs FLT_EVAL_METHOD == 0 (e.g. SSE2 on x86) for exact float arithmetic"
#endif

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ------------------------------------------------------------------------ */
/* engine                                                                    */
/* ------------------------------------------------------------------------ */

enum { MT_N = 624, MT_M = 397 };

#define MT_MATRIX_A UINT32_C(0x9908b0df)
#define MT_UMASK UINT32_C(0x80000000)
#define MT_LMASK UINT32_C(0x7fffffff)

struct ct_generator {
    uint64_t seed;
    int32_t left;  /* draws left before the next twist, 1..624 */
    uint32_t next; /* index of the next state word */
    uint32_t state[MT_N];
    double next_double_normal;
    float next_float_normal;
    unsigned char has_next_double_normal;
    unsigned char has_next_float_normal;
    int capability;
};

static void mt_seed(ct_generator *g, uint64_t seed) {
    g->seed = seed;
    g->state[0] = (uint32_t)(seed & UINT32_C(0xffffffff));
    for (uint32_t j = 1; j < MT_N; j++) {
        uint32_t prev = g->state[j - 1];
        g->state[j] = UINT32_C(1812433253) * (prev ^ (prev >> 30)) + j;
    }
    g->left = 1;
    g->next = 0;
    g->has_next_double_normal = 0;
    g->has_next_float_normal = 0;
    g->next_double_normal = 0.0;
    g->next_float_normal = 0.0f;
}

static inline uint32_t mt_twist(uint32_t u, uint32_t v) {
    uint32_t mixed = (u & MT_UMASK) | (v & MT_LMASK);
    return (mixed >> 1) ^ ((v & 1u) ? MT_MATRIX_A : 0u);
}

static void mt_next_state(ct_generator *g) {
    uint32_t *s = g->state;
    int k = 0;
    for (; k < MT_N - MT_M; k++) s[k] = s[k + MT_M] ^ mt_twist(s[k], s[k + 1]);
    for (; k < MT_N - 1; k++) s[k] = s[k + MT_M - MT_N] ^ mt_twist(s[k], s[k + 1]);
    s[MT_N - 1] = s[MT_M - 1] ^ mt_twist(s[MT_N - 1], s[0]);
    g->left = MT_N;
    g->next = 0;
}

uint32_t ct_gen_random32(ct_generator *g) {
    if (--g->left == 0) mt_next_state(g);
    uint32_t y = g->state[g->next++];
    y ^= y >> 11;
    y ^= (y << 7) & UINT32_C(0x9d2c5680);
    y ^= (y << 15) & UINT32_C(0xefc60000);
    y ^= y >> 18;
    return y;
}

uint64_t ct_gen_random64(ct_generator *g) {
    uint32_t hi = ct_gen_random32(g);
    uint32_t lo = ct_gen_random32(g);
    return ((uint64_t)hi << 32) | lo;
}

/* ------------------------------------------------------------------------ */
/* life cycle, state                                                         */
/* ------------------------------------------------------------------------ */

ct_generator *ct_generator_new(uint64_t seed) {
    ct_generator *g = (ct_generator *)calloc(1, sizeof *g);
    if (!g) return NULL;
    g->capability = CT_TORCH_CPU_AVX2;
    mt_seed(g, seed);
    return g;
}

static ct_generator g_default_generator;

void ct_generator_free(ct_generator *g) {
    if (g && g != &g_default_generator) free(g);
}

void ct_generator_manual_seed(ct_generator *g, uint64_t seed) { mt_seed(g, seed); }

uint64_t ct_generator_initial_seed(const ct_generator *g) { return g->seed; }

int ct_generator_set_cpu_capability(ct_generator *g, int capability) {
    if (capability != CT_TORCH_CPU_AVX2 && capability != CT_TORCH_CPU_DEFAULT) return -1;
    g->capability = capability;
    return 0;
}

int ct_generator_cpu_capability(const ct_generator *g) { return g->capability; }

ct_generator *ct_default_generator(void) {
#if !defined(__STDC_NO_ATOMICS__)
    static atomic_int init_state; /* 0 none, 1 busy, 2 done */
    if (atomic_load_explicit(&init_state, memory_order_acquire) != 2) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&init_state, &expected, 1)) {
            g_default_generator.capability = CT_TORCH_CPU_AVX2;
            mt_seed(&g_default_generator, CT_GENERATOR_DEFAULT_SEED);
            atomic_store_explicit(&init_state, 2, memory_order_release);
        } else {
            while (atomic_load_explicit(&init_state, memory_order_acquire) != 2) {
            }
        }
    }
#else
    static int initialized = 0;
    if (!initialized) {
        g_default_generator.capability = CT_TORCH_CPU_AVX2;
        mt_seed(&g_default_generator, CT_GENERATOR_DEFAULT_SEED);
        initialized = 1;
    }
#endif
    return &g_default_generator;
}

/* Serialized layout == PyTorch's CPUGeneratorImplState on x86-64:
 *    0 u64 the_initial_seed
 *    8 i32 left
 *   12 i32 seeded
 *   16 u64 next
 *   24 u64 state[624]
 * 5016 f64 normal_x (unused, 0)
 * 5024 f64 normal_y (cached double normal)
 * 5032 f64 normal_rho (unused, 0)
 * 5040 i32 normal_is_valid
 * 5044 (4 bytes padding)
 * 5048 f32 next_float_normal_sample
 * 5052 u8  is_next_float_normal_sample_valid
 * 5053 (3 bytes padding)                                         = 5056   */
enum {
    ST_SEED = 0,
    ST_LEFT = 8,
    ST_SEEDED = 12,
    ST_NEXT = 16,
    ST_STATE = 24,
    ST_NORMAL_X = ST_STATE + 8 * MT_N,
    ST_NORMAL_Y = ST_NORMAL_X + 8,
    ST_NORMAL_RHO = ST_NORMAL_Y + 8,
    ST_NORMAL_VALID = ST_NORMAL_RHO + 8,
    ST_FLOAT_NORMAL = ST_NORMAL_VALID + 8,
    ST_FLOAT_VALID = ST_FLOAT_NORMAL + 4,
    ST_SIZE = ST_FLOAT_VALID + 4
};

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(ST_SIZE == CT_GENERATOR_STATE_SIZE, "state layout");
#endif

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}
static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t f64_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double bits_f64(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

size_t ct_generator_state_size(void) { return (size_t)ST_SIZE; }

void ct_generator_get_state(const ct_generator *g, uint8_t *out) {
    memset(out, 0, ST_SIZE);
    put_u64(out + ST_SEED, g->seed);
    put_u32(out + ST_LEFT, (uint32_t)g->left);
    put_u32(out + ST_SEEDED, 1u);
    put_u64(out + ST_NEXT, g->next);
    for (int i = 0; i < MT_N; i++) put_u64(out + ST_STATE + 8 * i, g->state[i]);
    if (g->has_next_double_normal) {
        put_u64(out + ST_NORMAL_Y, f64_bits(g->next_double_normal));
        put_u32(out + ST_NORMAL_VALID, 1u);
    }
    if (g->has_next_float_normal) {
        put_u32(out + ST_FLOAT_NORMAL, f32_bits(g->next_float_normal));
        out[ST_FLOAT_VALID] = 1;
    }
}

int ct_gen_set_state(ct_generator *g, const uint8_t *in, size_t n) {
    if (!g || !in || n != (size_t)ST_SIZE) return -1;
    int32_t left = (int32_t)get_u32(in + ST_LEFT);
    uint32_t seeded = get_u32(in + ST_SEEDED);
    uint64_t next = get_u64(in + ST_NEXT);
    /* PyTorch's mt19937::is_valid(), plus: state words must fit 32 bits and
     * the next draws must stay inside the state array. */
    if (!seeded || left <= 0 || left > MT_N || next > MT_N) return -1;
    if (left != 1 && next + (uint64_t)left > MT_N + 1) return -1;
    for (int i = 0; i < MT_N; i++)
        if (get_u64(in + ST_STATE + 8 * i) > UINT64_C(0xffffffff)) return -1;

    g->seed = get_u64(in + ST_SEED);
    g->left = left;
    g->next = (uint32_t)next;
    for (int i = 0; i < MT_N; i++) g->state[i] = (uint32_t)get_u64(in + ST_STATE + 8 * i);
    g->has_next_double_normal = get_u32(in + ST_NORMAL_VALID) != 0;
    g->next_double_normal = g->has_next_double_normal ? bits_f64(get_u64(in + ST_NORMAL_Y)) : 0.0;
    g->has_next_float_normal = in[ST_FLOAT_VALID] != 0;
    g->next_float_normal = g->has_next_float_normal ? bits_f32(get_u32(in + ST_FLOAT_NORMAL)) : 0.0f;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* half / bfloat16                                                           */
/* ------------------------------------------------------------------------ */

/* same algorithm as c10::detail::fp16_ieee_from_fp32_value (round to
 * nearest even via float arithmetic) */
uint16_t ct_f32_to_f16_bits(float f) {
    const float scale_to_inf = 0x1.0p+112f;
    const float scale_to_zero = 0x1.0p-110f;
    float base = (fabsf(f) * scale_to_inf) * scale_to_zero;
    const uint32_t w = f32_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & UINT32_C(0x80000000);
    uint32_t bias = shl1_w & UINT32_C(0xFF000000);
    if (bias < UINT32_C(0x71000000)) bias = UINT32_C(0x71000000);
    base = bits_f32((bias >> 1) + UINT32_C(0x07800000)) + base;
    const uint32_t bits = f32_bits(base);
    const uint32_t exp_bits = (bits >> 13) & UINT32_C(0x00007C00);
    const uint32_t mantissa_bits = bits & UINT32_C(0x00000FFF);
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return (uint16_t)((sign >> 16) | (shl1_w > UINT32_C(0xFF000000) ? UINT32_C(0x7E00) : nonsign));
}

float ct_f16_bits_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1F) {
        bits = sign | UINT32_C(0x7F800000) | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        uint32_t e = 113;
        while (!(man & 0x400u)) {
            man <<= 1;
            e--;
        }
        bits = sign | (e << 23) | ((man & 0x3FFu) << 13);
    }
    return bits_f32(bits);
}

uint16_t ct_f32_to_bf16_bits(float f) {
    if (isnan(f)) return (uint16_t)0x7FC0;
    uint32_t u = f32_bits(f);
    uint32_t rounding_bias = ((u >> 16) & 1u) + UINT32_C(0x7FFF);
    return (uint16_t)((u + rounding_bias) >> 16);
}

float ct_bf16_bits_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

/* c10::Half / BFloat16 constructors from double go through float */
static inline uint16_t f64_to_f16(double d) { return ct_f32_to_f16_bits((float)d); }
static inline uint16_t f64_to_bf16(double d) { return ct_f32_to_bf16_bits((float)d); }

/* ------------------------------------------------------------------------ */
/* arithmetic helpers                                                        */
/* ------------------------------------------------------------------------ */

#define CT_PI 3.14159265358979323846 /* c10::pi<double> */

static inline int use_fma(const ct_generator *g) { return g->capability == CT_TORCH_CPU_AVX2; }

/* a*b+c as PyTorch's kernel computes it for the selected capability */
static inline float madd_f(const ct_generator *g, float a, float b, float c) {
    if (use_fma(g)) return fmaf(a, b, c);
    float p = a * b;
    return p + c;
}
static inline double madd_d(const ct_generator *g, double a, double b, double c) {
    if (use_fma(g)) return fma(a, b, c);
    double p = a * b;
    return p + c;
}

/* at::uniform_real_distribution<float>(0,1) raw value: 24 bits of random() */
static inline float u01_f32(ct_generator *g) {
    return (float)(ct_gen_random32(g) & UINT32_C(0xFFFFFF)) * (1.0f / 16777216.0f);
}
/* at::uniform_real_distribution<double>(0,1) raw value: 53 bits of random64() */
static inline double u01_f64(ct_generator *g) {
    return (double)(ct_gen_random64(g) & ((UINT64_C(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}
/* Half / BFloat16: 11 / 8 bits of random() */
static inline float u01_f16(ct_generator *g) {
    return (float)(ct_gen_random32(g) & UINT32_C(0x7FF)) * (1.0f / 2048.0f);
}
static inline float u01_bf16(ct_generator *g) {
    return (float)(ct_gen_random32(g) & UINT32_C(0xFF)) * (1.0f / 256.0f);
}

/* ------------------------------------------------------------------------ */
/* uniform                                                                   */
/* ------------------------------------------------------------------------ */

/* uniform_impl_ clamps from/to into the dtype's finite range */
static double clamp_range(double v, double lo, double hi) {
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return v;
}

void ct_gen_uniform_f32(ct_generator *g, float *out, int64_t n, double from, double to) {
    from = clamp_range(from, -(double)FLT_MAX, (double)FLT_MAX);
    to = clamp_range(to, -(double)FLT_MAX, (double)FLT_MAX);
    const float f = (float)from, t = (float)to;
    const float range = t - f;
    for (int64_t i = 0; i < n; i++) out[i] = madd_f(g, u01_f32(g), range, f);
}

void ct_gen_uniform_f64(ct_generator *g, double *out, int64_t n, double from, double to) {
    const double range = to - from;
    for (int64_t i = 0; i < n; i++) out[i] = madd_d(g, u01_f64(g), range, from);
}

void ct_gen_uniform_f16(ct_generator *g, uint16_t *out, int64_t n, double from, double to) {
    from = clamp_range(from, -65504.0, 65504.0);
    to = clamp_range(to, -65504.0, 65504.0);
    const float f = ct_f16_bits_to_f32(f64_to_f16(from));
    const float t = ct_f16_bits_to_f32(f64_to_f16(to));
    /* Half - Half yields a Half */
    const float range = ct_f16_bits_to_f32(ct_f32_to_f16_bits(t - f));
    for (int64_t i = 0; i < n; i++) out[i] = ct_f32_to_f16_bits(madd_f(g, u01_f16(g), range, f));
}

void ct_gen_uniform_bf16(ct_generator *g, uint16_t *out, int64_t n, double from, double to) {
    const double bf16_max = 3.38953138925153547590470800371487866880e+38;
    from = clamp_range(from, -bf16_max, bf16_max);
    to = clamp_range(to, -bf16_max, bf16_max);
    const float f = ct_bf16_bits_to_f32(f64_to_bf16(from));
    const float t = ct_bf16_bits_to_f32(f64_to_bf16(to));
    const float range = ct_bf16_bits_to_f32(ct_f32_to_bf16_bits(t - f));
    for (int64_t i = 0; i < n; i++) out[i] = ct_f32_to_bf16_bits(madd_f(g, u01_bf16(g), range, f));
}

/* ------------------------------------------------------------------------ */
/* normal                                                                    */
/* ------------------------------------------------------------------------ */

/* at::normal_distribution<double>: Box-Muller on two double uniforms, the
 * sine half cached in the generator. */
static double normal_one(ct_generator *g, double mean, double std) {
    double ret;
    if (g->has_next_double_normal) {
        g->has_next_double_normal = 0;
        ret = g->next_double_normal;
        return madd_d(g, ret, std, mean);
    }
    const double u1 = u01_f64(g);
    const double u2 = u01_f64(g);
    const double r = sqrt(-2.0 * log(1.0 - u2));
    const double theta = 2.0 * CT_PI * u1;
    g->next_double_normal = r * sin(theta);
    g->has_next_double_normal = 1;
    ret = r * cos(theta);
    return madd_d(g, ret, std, mean);
}

/* --- float32 AVX2 kernel (normal_fill_16_AVX2 with avx_mathfun's log256_ps
 * and sincos256_ps), emulated lane by lane.  The fmaf() calls are the
 * contractions GCC makes when it builds that code with -mavx2 -mfma. --- */

static float avx_logf(float x) {
    const float sqrthf = (float)0.707106781186547524;
    const float p0 = (float)7.0376836292E-2, p1 = (float)-1.1514610310E-1,
                p2 = (float)1.1676998740E-1, p3 = (float)-1.2420140846E-1,
                p4 = (float)+1.4249322787E-1, p5 = (float)-1.6668057665E-1,
                p6 = (float)+2.0000714765E-1, p7 = (float)-2.4999993993E-1,
                p8 = (float)+3.3333331174E-1;
    const float q1 = (float)-2.12194440e-4, q2 = (float)0.693359375;
    const int invalid = !(x > 0.0f); /* x <= 0 or NaN (cmp_le_os: NaN -> false) */
    uint32_t xb;
    if (x < bits_f32(UINT32_C(0x00800000)) || x != x) {
        /* _mm256_max_ps(x, min_norm): returns the second operand when either
         * is NaN or x is smaller */
        x = bits_f32(UINT32_C(0x00800000));
    }
    xb = f32_bits(x);
    int32_t imm0 = (int32_t)(xb >> 23);
    xb = (xb & ~UINT32_C(0x7f800000)) | f32_bits(0.5f);
    x = bits_f32(xb);
    imm0 -= 0x7f;
    float e = (float)imm0;
    e = e + 1.0f;
    const int mask = x < sqrthf;
    const float tmp0 = mask ? x : 0.0f;
    x = x - 1.0f;
    e = e - (mask ? 1.0f : 0.0f);
    x = x + tmp0;
    const float z = x * x;
    float y = p0;
    y = fmaf(y, x, p1);
    y = fmaf(y, x, p2);
    y = fmaf(y, x, p3);
    y = fmaf(y, x, p4);
    y = fmaf(y, x, p5);
    y = fmaf(y, x, p6);
    y = fmaf(y, x, p7);
    y = fmaf(y, x, p8);
    const float t1 = e * q1;
    y = y * x;
    y = fmaf(y, z, t1);
    y = fmaf(-z, 0.5f, y);
    x = x + y;
    x = fmaf(e, q2, x);
    if (invalid) x = bits_f32(f32_bits(x) | UINT32_C(0xffffffff));
    return x;
}

static void avx_sincosf(float x, float *s, float *c) {
    const float dp1 = (float)-0.78515625, dp2 = (float)-2.4187564849853515625e-4,
                dp3 = (float)-3.77489497744594108e-8;
    const float sp0 = (float)-1.9515295891E-4, sp1 = (float)8.3321608736E-3,
                sp2 = (float)-1.6666654611E-1;
    const float cp0 = (float)2.443315711809948E-005, cp1 = (float)-1.388731625493765E-003,
                cp2 = (float)4.166664568298827E-002;
    const float fopi = (float)1.27323954473516;

    uint32_t sign_bit_sin = f32_bits(x) & UINT32_C(0x80000000);
    x = bits_f32(f32_bits(x) & UINT32_C(0x7fffffff));
    float y = x * fopi;
    /* cvttps2dq: out-of-range / NaN give INT32_MIN */
    int32_t imm2 = (y >= -2147483648.0f && y < 2147483648.0f) ? (int32_t)y : INT32_MIN;
    imm2 = (int32_t)(((uint32_t)imm2 + 1u) & ~1u);
    y = (float)imm2;
    uint32_t imm4 = (uint32_t)imm2;
    const uint32_t swap_sign_bit_sin = ((uint32_t)imm2 & 4u) << 29;
    const int poly_mask = (((uint32_t)imm2 & 2u) == 0);
    x = fmaf(y, dp1, x);
    x = fmaf(y, dp2, x);
    x = fmaf(y, dp3, x);
    imm4 = imm4 - 2u;
    imm4 = (~imm4 & 4u) << 29;
    const uint32_t sign_bit_cos = imm4;
    sign_bit_sin ^= swap_sign_bit_sin;

    const float z = x * x;
    y = cp0;
    y = fmaf(y, z, cp1);
    y = fmaf(y, z, cp2);
    y = y * z;
    const float tmp = z * 0.5f;
    y = fmaf(y, z, -tmp);
    y = y + 1.0f;

    float y2 = sp0;
    y2 = fmaf(y2, z, sp1);
    y2 = fmaf(y2, z, sp2);
    y2 = y2 * z;
    y2 = fmaf(y2, x, x);

    const float ysin2 = poly_mask ? y2 : 0.0f;
    const float ysin1 = poly_mask ? 0.0f : y;
    y2 = y2 - ysin2;
    y = y - ysin1;
    const float xmm1 = ysin1 + ysin2;
    const float xmm2 = y + y2;
    *s = bits_f32(f32_bits(xmm1) ^ sign_bit_sin);
    *c = bits_f32(f32_bits(xmm2) ^ sign_bit_cos);
}

static void normal_fill_16_avx2(float *data, float mean, float std) {
    const float two_pi = (float)(2.0 * CT_PI);
    for (int j = 0; j < 8; j++) {
        const float u1 = 1.0f - data[j];
        const float u2 = data[j + 8];
        const float radius = sqrtf(-2.0f * avx_logf(u1));
        const float theta = two_pi * u2;
        float s, c;
        avx_sincosf(theta, &s, &c);
        const float n1 = radius * c;
        const float n2 = radius * s;
        data[j] = fmaf(n1, std, mean);
        data[j + 8] = fmaf(n2, std, mean);
    }
}

/* scalar normal_fill_16<float> (DEFAULT capability build) */
static void normal_fill_16_f32(ct_generator *g, float *data, float mean, float std) {
    for (int j = 0; j < 8; j++) {
        const float u1 = 1.0f - data[j];
        const float u2 = data[j + 8];
        const float radius = sqrtf(-2.0f * logf(u1));
        const float theta = (float)(2.0 * CT_PI * (double)u2);
        const float a = radius * cosf(theta);
        const float b = radius * sinf(theta);
        data[j] = madd_f(g, a, std, mean);
        data[j + 8] = madd_f(g, b, std, mean);
    }
}

static void normal_fill_16_f64(ct_generator *g, double *data, double mean, double std) {
    for (int j = 0; j < 8; j++) {
        const double u1 = 1.0 - data[j];
        const double u2 = data[j + 8];
        const double radius = sqrt(-2.0 * log(u1));
        const double theta = 2.0 * CT_PI * u2;
        const double a = radius * cos(theta);
        const double b = radius * sin(theta);
        data[j] = madd_d(g, a, std, mean);
        data[j + 8] = madd_d(g, b, std, mean);
    }
}

void ct_gen_normal_f32(ct_generator *g, float *out, int64_t n, double mean, double std) {
    if (n < 16) {
        for (int64_t i = 0; i < n; i++) out[i] = (float)normal_one(g, mean, std);
        return;
    }
    const float m = (float)mean, s = (float)std;
    const int avx2 = g->capability == CT_TORCH_CPU_AVX2;
    for (int64_t i = 0; i < n; i++) out[i] = u01_f32(g);
    for (int64_t i = 0; i + 16 <= n; i += 16) {
        if (avx2)
            normal_fill_16_avx2(out + i, m, s);
        else
            normal_fill_16_f32(g, out + i, m, s);
    }
    if (n % 16 != 0) {
        float *tail = out + n - 16;
        for (int i = 0; i < 16; i++) tail[i] = u01_f32(g);
        if (avx2)
            normal_fill_16_avx2(tail, m, s);
        else
            normal_fill_16_f32(g, tail, m, s);
    }
}

void ct_gen_normal_f64(ct_generator *g, double *out, int64_t n, double mean, double std) {
    if (n < 16) {
        for (int64_t i = 0; i < n; i++) out[i] = normal_one(g, mean, std);
        return;
    }
    for (int64_t i = 0; i < n; i++) out[i] = u01_f64(g);
    for (int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16_f64(g, out + i, mean, std);
    if (n % 16 != 0) {
        double *tail = out + n - 16;
        for (int i = 0; i < 16; i++) tail[i] = u01_f64(g);
        normal_fill_16_f64(g, tail, mean, std);
    }
}

/* normal_fill_16<Half>: c10 operators give Half for Half op Half and
 * int op Half, float for Half op float; std::log/cos/sin/sqrt resolve to
 * the float overloads (Half converts to float). */
static void normal_fill_16_f16(ct_generator *g, uint16_t *data, uint16_t mean_h, uint16_t std_h) {
    const float mean = ct_f16_bits_to_f32(mean_h), std = ct_f16_bits_to_f32(std_h);
    for (int j = 0; j < 8; j++) {
        const float u1 = ct_f16_bits_to_f32(ct_f32_to_f16_bits(1.0f - ct_f16_bits_to_f32(data[j])));
        const float u2 = ct_f16_bits_to_f32(data[j + 8]);
        const float radius = ct_f16_bits_to_f32(ct_f32_to_f16_bits(sqrtf(-2.0f * logf(u1))));
        const float theta = ct_f16_bits_to_f32(f64_to_f16(2.0 * CT_PI * (double)u2));
        const float a = radius * cosf(theta);
        const float b = radius * sinf(theta);
        data[j] = ct_f32_to_f16_bits(madd_f(g, a, std, mean));
        data[j + 8] = ct_f32_to_f16_bits(madd_f(g, b, std, mean));
    }
}

/* normal_fill_16<BFloat16>: c10/util/BFloat16-math.h gives std::log, cos,
 * sin and sqrt BFloat16 overloads returning BFloat16, so every step is
 * rounded to bfloat16 (and nothing can be fused). */
static inline float bfr(float x) { return ct_bf16_bits_to_f32(ct_f32_to_bf16_bits(x)); }

static void normal_fill_16_bf16(uint16_t *data, uint16_t mean_b, uint16_t std_b) {
    const float mean = ct_bf16_bits_to_f32(mean_b), std = ct_bf16_bits_to_f32(std_b);
    for (int j = 0; j < 8; j++) {
        const float u1 = bfr(1.0f - ct_bf16_bits_to_f32(data[j]));
        const float u2 = ct_bf16_bits_to_f32(data[j + 8]);
        const float radius = bfr(sqrtf(bfr(-2.0f * bfr(logf(u1)))));
        const float theta = ct_bf16_bits_to_f32(f64_to_bf16(2.0 * CT_PI * (double)u2));
        const float c = bfr(cosf(theta)), s = bfr(sinf(theta));
        data[j] = ct_f32_to_bf16_bits(bfr(bfr(radius * c) * std) + mean);
        data[j + 8] = ct_f32_to_bf16_bits(bfr(bfr(radius * s) * std) + mean);
    }
}

static void normal_fill_16_16bit(ct_generator *g, uint16_t *data, uint16_t m, uint16_t s, int is_bf16) {
    if (is_bf16)
        normal_fill_16_bf16(data, m, s);
    else
        normal_fill_16_f16(g, data, m, s);
}

static void normal_16bit(ct_generator *g, uint16_t *out, int64_t n, double mean, double std,
                         int is_bf16) {
    uint16_t (*to16)(float) = is_bf16 ? ct_f32_to_bf16_bits : ct_f32_to_f16_bits;
    if (n < 16) {
        for (int64_t i = 0; i < n; i++) out[i] = to16((float)normal_one(g, mean, std));
        return;
    }
    const uint16_t m = is_bf16 ? f64_to_bf16(mean) : f64_to_f16(mean);
    const uint16_t s = is_bf16 ? f64_to_bf16(std) : f64_to_f16(std);
    /* uniform_real_distribution<Half>(0,1): x*(1-0)+0 == x, exact in the type */
    for (int64_t i = 0; i < n; i++) out[i] = to16(is_bf16 ? u01_bf16(g) : u01_f16(g));
    for (int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16_16bit(g, out + i, m, s, is_bf16);
    if (n % 16 != 0) {
        uint16_t *tail = out + n - 16;
        for (int i = 0; i < 16; i++) tail[i] = to16(is_bf16 ? u01_bf16(g) : u01_f16(g));
        normal_fill_16_16bit(g, tail, m, s, is_bf16);
    }
}

void ct_gen_normal_f16(ct_generator *g, uint16_t *out, int64_t n, double mean, double std) {
    normal_16bit(g, out, n, mean, std, 0);
}

void ct_gen_normal_bf16(ct_generator *g, uint16_t *out, int64_t n, double mean, double std) {
    normal_16bit(g, out, n, mean, std, 1);
}

/* ------------------------------------------------------------------------ */
/* exponential                                                               */
/* ------------------------------------------------------------------------ */

static inline double exponential_one(ct_generator *g, double lambd) {
    const double u = u01_f64(g);
    return (-1.0 / lambd) * log(1.0 - u);
}

void ct_gen_exponential_f32(ct_generator *g, float *out, int64_t n, double lambd) {
    for (int64_t i = 0; i < n; i++) out[i] = (float)exponential_one(g, lambd);
}

void ct_gen_exponential_f64(ct_generator *g, double *out, int64_t n, double lambd) {
    for (int64_t i = 0; i < n; i++) out[i] = exponential_one(g, lambd);
}

/* ------------------------------------------------------------------------ */
/* randint (random_(from, to))                                               */
/* ------------------------------------------------------------------------ */

static inline uint64_t draw_int(ct_generator *g, uint64_t range, int wide_ok) {
    if (wide_ok && range >= (UINT64_C(1) << 32)) return ct_gen_random64(g) % range;
    return (uint64_t)ct_gen_random32(g) % range;
}

/* (int64_t)(T)v for T float/double, with x86's result for out-of-range */
static int64_t round_trip_i64(int64_t v, int digits) {
    double d = digits == 24 ? (double)(float)v
             : digits == 11 ? (double)ct_f16_bits_to_f32(ct_f32_to_f16_bits((float)v))
             : digits == 8  ? (double)ct_bf16_bits_to_f32(ct_f32_to_bf16_bits((float)v))
                            : (double)v;
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)d;
}

static int64_t floor_log2_u64(uint64_t v) {
    int64_t n = 0;
    while (v >>= 1) ++n;
    return n;
}

/* templates::update_from / update_to */
static int64_t update_from(int64_t from, int digits) {
    if (from == INT64_MAX) return from;
    const int64_t from_plus_1 = round_trip_i64(from + 1, digits);
    if (from_plus_1 < from) {
        uint64_t a = from + 1 < 0 ? (uint64_t)0 - (uint64_t)(from + 1) : (uint64_t)(from + 1);
        int64_t n = floor_log2_u64(a);
        from = (int64_t)((uint64_t)from_plus_1 + (UINT64_C(1) << (n - digits + 1)));
    }
    return from;
}

static int64_t update_to(int64_t to, int digits) {
    if (to == INT64_MIN) return to;
    const int64_t to_minus_1 = round_trip_i64(to - 1, digits);
    if (to_minus_1 >= to) {
        uint64_t a = to - 1 < 0 ? (uint64_t)0 - (uint64_t)(to - 1) : (uint64_t)(to - 1);
        int64_t n = floor_log2_u64(a);
        to = (int64_t)((uint64_t)to_minus_1 - (UINT64_C(1) << (n - digits + 1)));
    }
    return to;
}

static inline int64_t from_to_value(uint64_t v, int64_t base) {
    return (int64_t)(v + (uint64_t)base);
}

int ct_gen_randint_i64(ct_generator *g, int64_t *out, int64_t n, int64_t low, int64_t high) {
    if (low >= high) return -1;
    const uint64_t range = (uint64_t)high - (uint64_t)low;
    for (int64_t i = 0; i < n; i++) out[i] = from_to_value(draw_int(g, range, 1), low);
    return 0;
}

int ct_gen_randint_i32(ct_generator *g, int32_t *out, int64_t n, int64_t low, int64_t high) {
    if (low >= high || low < INT32_MIN || high - 1 > INT32_MAX) return -1;
    const uint64_t range = (uint64_t)high - (uint64_t)low;
    for (int64_t i = 0; i < n; i++) out[i] = (int32_t)from_to_value(draw_int(g, range, 0), low);
    return 0;
}

int ct_gen_randint_f32(ct_generator *g, float *out, int64_t n, int64_t low, int64_t high) {
    if (low >= high) return -1;
    low = update_from(low, 24);
    high = update_to(high, 24);
    if (low >= high) return -1;
    const uint64_t range = (uint64_t)high - (uint64_t)low;
    for (int64_t i = 0; i < n; i++) out[i] = (float)from_to_value(draw_int(g, range, 1), low);
    return 0;
}

int ct_gen_randint_float_range(int64_t *low, int64_t *high, int digits) {
    if (*low >= *high) return -1;
    *low = update_from(*low, digits);
    *high = update_to(*high, digits);
    return *low >= *high ? -1 : 0;
}

int ct_gen_randint_f64(ct_generator *g, double *out, int64_t n, int64_t low, int64_t high) {
    if (low >= high) return -1;
    low = update_from(low, 53);
    high = update_to(high, 53);
    if (low >= high) return -1;
    const uint64_t range = (uint64_t)high - (uint64_t)low;
    for (int64_t i = 0; i < n; i++) out[i] = (double)from_to_value(draw_int(g, range, 1), low);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* bernoulli                                                                 */
/* ------------------------------------------------------------------------ */

void ct_gen_bernoulli_f32(ct_generator *g, float *out, int64_t n, const float *p, double p_scalar) {
    if (p) {
        for (int64_t i = 0; i < n; i++) out[i] = u01_f32(g) < p[i] ? 1.0f : 0.0f;
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = u01_f64(g) < p_scalar ? 1.0f : 0.0f;
    }
}

void ct_gen_bernoulli_f64(ct_generator *g, double *out, int64_t n, const double *p, double p_scalar) {
    for (int64_t i = 0; i < n; i++) out[i] = u01_f64(g) < (p ? p[i] : p_scalar) ? 1.0 : 0.0;
}

/* ------------------------------------------------------------------------ */
/* randperm                                                                  */
/* ------------------------------------------------------------------------ */

void ct_gen_randperm_i64(ct_generator *g, int64_t *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = i;
    for (int64_t i = 0; i < n - 1; i++) {
        const int64_t z = (int64_t)((uint64_t)ct_gen_random32(g) % (uint64_t)(n - i));
        const int64_t sav = out[i];
        out[i] = out[z + i];
        out[z + i] = sav;
    }
}

/* ------------------------------------------------------------------------ */
/* multinomial                                                               */
/* ------------------------------------------------------------------------ */

/* topk's (value, index) queue and comparator ("largest", NaN on top) */
typedef struct {
    double v;
    int64_t i;
} qelem;

static inline int qcomp(const qelem *x, const qelem *y) {
    return (isnan(x->v) && !isnan(y->v)) || (x->v > y->v);
}

static inline void qswap(qelem *a, qelem *b) {
    qelem t = *a;
    *a = *b;
    *b = t;
}

/* The tie order of torch.topk (and so of multinomial without replacement)
 * is whatever libstdc++'s partial_sort / nth_element / sort produce; the
 * following follow those algorithms step by step. */

static void push_heap_(qelem *first, int64_t hole, int64_t top, qelem value) {
    int64_t parent = (hole - 1) / 2;
    while (hole > top && qcomp(&first[parent], &value)) {
        first[hole] = first[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    first[hole] = value;
}

static void adjust_heap_(qelem *first, int64_t hole, int64_t len, qelem value) {
    const int64_t top = hole;
    int64_t child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (qcomp(&first[child], &first[child - 1])) child--;
        first[hole] = first[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        first[hole] = first[child - 1];
        hole = child - 1;
    }
    push_heap_(first, hole, top, value);
}

static void make_heap_(qelem *first, qelem *last) {
    const int64_t len = last - first;
    if (len < 2) return;
    int64_t parent = (len - 2) / 2;
    for (;;) {
        qelem value = first[parent];
        adjust_heap_(first, parent, len, value);
        if (parent == 0) return;
        parent--;
    }
}

static void pop_heap_(qelem *first, qelem *last, qelem *result) {
    qelem value = *result;
    *result = *first;
    adjust_heap_(first, 0, last - first, value);
}

static void heap_select_(qelem *first, qelem *middle, qelem *last) {
    make_heap_(first, middle);
    for (qelem *i = middle; i < last; ++i)
        if (qcomp(i, first)) pop_heap_(first, middle, i);
}

static void sort_heap_(qelem *first, qelem *last) {
    while (last - first > 1) {
        --last;
        pop_heap_(first, last, last);
    }
}

static void partial_sort_(qelem *first, qelem *middle, qelem *last) {
    heap_select_(first, middle, last);
    sort_heap_(first, middle);
}

static void move_median_to_first_(qelem *result, qelem *a, qelem *b, qelem *c) {
    if (qcomp(a, b)) {
        if (qcomp(b, c))
            qswap(result, b);
        else if (qcomp(a, c))
            qswap(result, c);
        else
            qswap(result, a);
    } else if (qcomp(a, c)) {
        qswap(result, a);
    } else if (qcomp(b, c)) {
        qswap(result, c);
    } else {
        qswap(result, b);
    }
}

static qelem *unguarded_partition_(qelem *first, qelem *last, qelem *pivot) {
    for (;;) {
        while (qcomp(first, pivot)) ++first;
        --last;
        while (qcomp(pivot, last)) --last;
        if (!(first < last)) return first;
        qswap(first, last);
        ++first;
    }
}

static qelem *unguarded_partition_pivot_(qelem *first, qelem *last) {
    qelem *mid = first + (last - first) / 2;
    move_median_to_first_(first, first + 1, mid, last - 1);
    return unguarded_partition_(first + 1, last, first);
}

static void unguarded_linear_insert_(qelem *last) {
    qelem val = *last;
    qelem *next = last - 1;
    while (qcomp(&val, next)) {
        *last = *next;
        last = next;
        --next;
    }
    *last = val;
}

static void insertion_sort_(qelem *first, qelem *last) {
    if (first == last) return;
    for (qelem *i = first + 1; i != last; ++i) {
        if (qcomp(i, first)) {
            qelem val = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof *first);
            *first = val;
        } else {
            unguarded_linear_insert_(i);
        }
    }
}

static int64_t lg_(int64_t n) {
    int64_t k = 0;
    while (n > 1) {
        n >>= 1;
        k++;
    }
    return k;
}

enum { SORT_THRESHOLD = 16 };

static void introsort_loop_(qelem *first, qelem *last, int64_t depth_limit) {
    while (last - first > SORT_THRESHOLD) {
        if (depth_limit == 0) {
            partial_sort_(first, last, last);
            return;
        }
        --depth_limit;
        qelem *cut = unguarded_partition_pivot_(first, last);
        introsort_loop_(cut, last, depth_limit);
        last = cut;
    }
}

static void sort_(qelem *first, qelem *last) {
    if (first == last) return;
    introsort_loop_(first, last, lg_(last - first) * 2);
    if (last - first > SORT_THRESHOLD) {
        insertion_sort_(first, first + SORT_THRESHOLD);
        for (qelem *i = first + SORT_THRESHOLD; i != last; ++i) unguarded_linear_insert_(i);
    } else {
        insertion_sort_(first, last);
    }
}

static void nth_element_(qelem *first, qelem *nth, qelem *last) {
    if (first == last || nth == last) return;
    int64_t depth_limit = lg_(last - first) * 2;
    while (last - first > 3) {
        if (depth_limit == 0) {
            heap_select_(first, nth + 1, last);
            qswap(first, nth);
            return;
        }
        --depth_limit;
        qelem *cut = unguarded_partition_pivot_(first, last);
        if (cut <= nth)
            first = cut;
        else
            last = cut;
    }
    insertion_sort_(first, last);
}

/* torch.topk(x, k) (largest, sorted) indices of one row, as topk_impl_loop */
static void topk_indices(qelem *queue, int64_t n, int64_t k, int64_t *out) {
    if (k * 64 <= n) {
        partial_sort_(queue, queue + k, queue + n);
    } else {
        nth_element_(queue, queue + k - 1, queue + n);
        sort_(queue, queue + k - 1);
    }
    for (int64_t j = 0; j < k; j++) out[j] = queue[j].i;
}

/* argmax: first NaN, else first maximum */
static int64_t argmax_row(const qelem *q, int64_t n) {
    int64_t best = 0;
    for (int64_t j = 1; j < n; j++) {
        const double a = q[best].v, b = q[j].v;
        if (isnan(a)) break;
        if (isnan(b) || b > a) best = j;
    }
    return best;
}

#define CT_MAX_CATEGORIES (INT64_C(1) << 24)

/* Generic body for float / double probabilities; SCALAR is the tensor dtype
 * in which PyTorch does its arithmetic. */
#define CT_DEFINE_MULTINOMIAL(NAME, SCALAR, EXP_CAST)                                            \
    int NAME(ct_generator *g, const SCALAR *probs, int64_t n_dist, int64_t n_cat,                \
             int64_t n_samples, int replacement, int64_t *out) {                                 \
        if (!g || !probs || !out || n_dist < 0 || n_cat <= 0 || n_samples <= 0) return -1;       \
        if (!replacement && n_samples > n_cat) return -1;                                       \
        if (n_cat > CT_MAX_CATEGORIES) return -1;                                               \
        if (n_dist == 0) return 0;                                                              \
        if (!replacement) {                                                                     \
            for (int64_t i = 0; i < n_dist; i++) {                                              \
                int nonzero = 0;                                                                \
                for (int64_t j = 0; j < n_cat; j++) {                                           \
                    const SCALAR v = probs[i * n_cat + j];                                      \
                    if (!(v >= 0) || isinf(v)) return -1;                                       \
                    if (v != 0) nonzero = 1;                                                    \
                }                                                                               \
                if (!nonzero) return -1;                                                        \
            }                                                                                   \
            const int64_t total = n_dist * n_cat;                                               \
            SCALAR *q = (SCALAR *)malloc((size_t)total * sizeof(SCALAR));                       \
            qelem *queue = (qelem *)malloc((size_t)n_cat * sizeof(qelem));                      \
            if (!q || !queue) {                                                                 \
                free(q);                                                                        \
                free(queue);                                                                    \
                return -1;                                                                      \
            }                                                                                   \
            /* q = empty_like(self).exponential_(1); q = self / q */                            \
            for (int64_t t = 0; t < total; t++) q[t] = (SCALAR)EXP_CAST(exponential_one(g, 1.0)); \
            for (int64_t t = 0; t < total; t++) q[t] = probs[t] / q[t];                         \
            for (int64_t i = 0; i < n_dist; i++) {                                              \
                for (int64_t j = 0; j < n_cat; j++) {                                           \
                    queue[j].v = (double)q[i * n_cat + j];                                      \
                    queue[j].i = j;                                                             \
                }                                                                               \
                if (n_samples == 1)                                                             \
                    out[i] = argmax_row(queue, n_cat);                                          \
                else                                                                            \
                    topk_indices(queue, n_cat, n_samples, out + i * n_samples);                 \
            }                                                                                   \
            free(queue);                                                                        \
            free(q);                                                                            \
            return 0;                                                                           \
        }                                                                                       \
        /* with replacement: validate every row first (PyTorch checks row by row) */            \
        for (int64_t i = 0; i < n_dist; i++) {                                                  \
            SCALAR sum = 0;                                                                     \
            for (int64_t j = 0; j < n_cat; j++) {                                               \
                const SCALAR v = probs[i * n_cat + j];                                          \
                if (!(v >= 0) || !isfinite(v)) return -1;                                       \
                sum += v;                                                                       \
            }                                                                                   \
            if (!(sum > 0)) return -1;                                                          \
        }                                                                                       \
        SCALAR *cum = (SCALAR *)malloc((size_t)n_cat * sizeof(SCALAR));                         \
        if (!cum) return -1;                                                                    \
        for (int64_t i = 0; i < n_dist; i++) {                                                  \
            SCALAR sum = 0;                                                                     \
            for (int64_t j = 0; j < n_cat; j++) {                                               \
                sum += probs[i * n_cat + j];                                                    \
                cum[j] = sum;                                                                   \
            }                                                                                   \
            for (int64_t j = 0; j < n_cat; j++) cum[j] /= sum;                                  \
            for (int64_t s = 0; s < n_samples; s++) {                                           \
                const double u = u01_f64(g);                                                    \
                int64_t left = 0, right = n_cat;                                                \
                cum[n_cat - 1] = 1;                                                             \
                while (right - left > 0) {                                                      \
                    const int64_t mid = left + (right - left) / 2;                              \
                    if ((double)cum[mid] < u)                                                   \
                        left = mid + 1;                                                         \
                    else                                                                        \
                        right = mid;                                                            \
                }                                                                               \
                out[i * n_samples + s] = left;                                                  \
            }                                                                                   \
        }                                                                                       \
        free(cum);                                                                              \
        return 0;                                                                               \
    }

#define CT_AS_FLOAT(x) ((float)(x))
#define CT_AS_DOUBLE(x) ((double)(x))
CT_DEFINE_MULTINOMIAL(ct_gen_multinomial, double, CT_AS_DOUBLE)
CT_DEFINE_MULTINOMIAL(ct_gen_multinomial_f32, float, CT_AS_FLOAT)
