/*
 * ctorch -- CPU random number generator, bit-compatible with PyTorch's
 * CPUGeneratorImpl (mt19937) and its CPU distribution kernels (PyTorch 1.13;
 * the streams below are unchanged in 2.x unless noted in generator.c).
 *
 * Internal header.  Self-contained: depends only on the C11 standard library
 * and libm.
 *
 * Every bulk fill writes n elements of a contiguous buffer and consumes
 * exactly the random numbers PyTorch consumes for a contiguous tensor of that
 * dtype and numel n, so sequences of calls on one generator reproduce
 * sequences of torch calls on one torch.Generator.
 *
 * Thread-safety: a generator is not locked internally (PyTorch takes a mutex
 * per kernel); callers that share one generator between threads must
 * serialise the calls.  ct_default_generator() itself is safe to call from
 * several threads.
 */
#ifndef CTORCH_CORE_GENERATOR_H
#define CTORCH_CORE_GENERATOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The public part (ct_generator, new/free/manual_seed/initial_seed/default,
 * state size/get) lives in include/ctorch/random.h. */
#include "ctorch/random.h"

/* PyTorch's default_rng_seed_val. */
#define CT_GENERATOR_DEFAULT_SEED UINT64_C(67280421310721)

/* Size in bytes of a serialized state; same layout and size (5056) as
 * torch.Generator.get_state() / torch.get_rng_state() on x86-64, so states
 * can be exchanged with PyTorch byte for byte. */
#define CT_GENERATOR_STATE_SIZE 5056

/* Raw form of ct_generator_set_state: 0 ok, -1 bad size/content (generator
 * left unchanged on error); sets no error message. */
int ct_gen_set_state(ct_generator *g, const uint8_t *in, size_t n);

/* torch's update_from/update_to for random_(from, to) on a floating dtype
 * with `digits` mantissa digits (24 float, 53 double, 11 half, 8 bfloat16).
 * Returns -1 if the adjusted range is empty. */
int ct_gen_randint_float_range(int64_t *low, int64_t *high, int digits);

/* What the random_fill op draws (attribute k0 of src/ops/defs/random.def). */
enum { CT_RF_UNIFORM = 0, CT_RF_NORMAL, CT_RF_EXPONENTIAL, CT_RF_RANDINT, CT_RF_BERNOULLI };

/*
 * PyTorch's CPU kernels are compiled once per CPU capability, and results
 * of some streams depend on which one the dispatcher picks: under AVX2 (and
 * AVX512, which uses the AVX2 normal kernel) the compiler fuses a*b+c into
 * FMAs and float32 randn (numel >= 16) uses a vectorized polynomial
 * log/sincos.  CT_TORCH_CPU_AVX2 (the default for new generators) matches
 * torch on any x86-64 CPU with AVX2; CT_TORCH_CPU_DEFAULT matches torch run
 * with ATEN_CPU_CAPABILITY=default (or on CPUs without AVX2).
 * Not part of the serialized state.  Returns 0, or -1 for an unknown value.
 */
enum { CT_TORCH_CPU_AVX2 = 0, CT_TORCH_CPU_DEFAULT = 1 };
int ct_generator_set_cpu_capability(ct_generator *g, int capability);
int ct_generator_cpu_capability(const ct_generator *g);

/* raw engine output: CPUGeneratorImpl::random() / random64() */
uint32_t ct_gen_random32(ct_generator *g);
uint64_t ct_gen_random64(ct_generator *g);

/* torch.rand / Tensor.uniform_(from, to).  float32 uses 24 bits of one
 * random(), float64 53 bits of one random64(). */
void ct_gen_uniform_f32(ct_generator *g, float *out, int64_t n, double from, double to);
void ct_gen_uniform_f64(ct_generator *g, double *out, int64_t n, double from, double to);
/* float16 / bfloat16 (11 / 8 random bits of one random()), output as the raw
 * IEEE binary16 / bfloat16 bit patterns. */
void ct_gen_uniform_f16(ct_generator *g, uint16_t *out, int64_t n, double from, double to);
void ct_gen_uniform_bf16(ct_generator *g, uint16_t *out, int64_t n, double from, double to);

/* torch.randn / Tensor.normal_(mean, std).  numel >= 16: PyTorch's
 * normal_fill (uniforms first, Box-Muller on blocks of 16, last 16
 * redrawn when numel % 16 != 0); numel < 16: per-element double Box-Muller
 * with the cached second sample (next_double_normal_sample). */
void ct_gen_normal_f32(ct_generator *g, float *out, int64_t n, double mean, double std);
void ct_gen_normal_f64(ct_generator *g, double *out, int64_t n, double mean, double std);
void ct_gen_normal_f16(ct_generator *g, uint16_t *out, int64_t n, double mean, double std);
void ct_gen_normal_bf16(ct_generator *g, uint16_t *out, int64_t n, double mean, double std);

/* Tensor.exponential_(lambd) */
void ct_gen_exponential_f32(ct_generator *g, float *out, int64_t n, double lambd);
void ct_gen_exponential_f64(ct_generator *g, double *out, int64_t n, double lambd);

/* torch.randint(low, high, (n,), dtype=...) == Tensor.random_(low, high).
 * Requires low < high (and, for i32, both in int32 range).  Uses random64()
 * when high-low >= 2^32 (int64 / float dtypes), random() otherwise.  The
 * float variants apply PyTorch's from/to adjustment for values beyond the
 * dtype's exact integer range.  Return 0, or -1 (nothing drawn) if the
 * range is empty/invalid. */
int ct_gen_randint_i64(ct_generator *g, int64_t *out, int64_t n, int64_t low, int64_t high);
int ct_gen_randint_i32(ct_generator *g, int32_t *out, int64_t n, int64_t low, int64_t high);
int ct_gen_randint_f32(ct_generator *g, float *out, int64_t n, int64_t low, int64_t high);
int ct_gen_randint_f64(ct_generator *g, double *out, int64_t n, int64_t low, int64_t high);

/* Tensor.bernoulli_(p) on a float32 tensor: p == NULL -> scalar p_scalar
 * (double uniform, one random64() per element); otherwise per-element
 * float32 probabilities (float uniform, one random() per element), i.e.
 * bernoulli_(p_tensor) / torch.bernoulli(p_tensor) with p float32. */
void ct_gen_bernoulli_f32(ct_generator *g, float *out, int64_t n, const float *p, double p_scalar);
/* same with float64 output; p (if not NULL) is a float64 probability tensor
 * (double uniform per element). */
void ct_gen_bernoulli_f64(ct_generator *g, double *out, int64_t n, const double *p, double p_scalar);

/* torch.randperm(n) (int64) */
void ct_gen_randperm_i64(ct_generator *g, int64_t *out, int64_t n);

/* torch.multinomial(probs, n_samples, replacement) on a contiguous
 * [n_dist, n_cat] probability matrix; out is [n_dist, n_samples].
 * ct_gen_multinomial: float64 probabilities; ct_gen_multinomial_f32: float32
 * (PyTorch's arithmetic differs by dtype).  Returns 0 ok, -1 invalid
 * (negative/inf/nan probability, zero row sum, n_samples <= 0,
 * n_samples > n_cat without replacement, n_cat > 2^24); on -1 nothing is
 * drawn. */
int ct_gen_multinomial(ct_generator *g, const double *probs, int64_t n_dist, int64_t n_cat,
                       int64_t n_samples, int replacement, int64_t *out);
int ct_gen_multinomial_f32(ct_generator *g, const float *probs, int64_t n_dist, int64_t n_cat,
                           int64_t n_samples, int replacement, int64_t *out);

/* helpers: IEEE binary16 / bfloat16 <-> float, round to nearest even (as c10) */
uint16_t ct_f32_to_f16_bits(float f);
float ct_f16_bits_to_f32(uint16_t h);
uint16_t ct_f32_to_bf16_bits(float f);
float ct_bf16_bits_to_f32(uint16_t b);

#ifdef __cplusplus
}
#endif

#endif /* CTORCH_CORE_GENERATOR_H */
