/* ctorch random: generators (bit-exact with PyTorch 1.13's CPU mt19937 streams) and
 * random ops. Every op takes an optional generator (NULL = the default one) and, for
 * the same seed, produces exactly the numbers torch produces on the CPU. */
#ifndef CTORCH_RANDOM_H
#define CTORCH_RANDOM_H
#include "core.h"
#include "creation.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---- generators ------------------------------------------------------------ */
typedef struct ct_generator ct_generator;

/* like torch.Generator().manual_seed(seed); NULL (out of memory) with error set */
ct_generator *ct_generator_new(uint64_t seed);
void ct_generator_free(ct_generator *g); /* NULL-safe; no-op for the default generator */
void ct_generator_manual_seed(ct_generator *g, uint64_t seed);
uint64_t ct_generator_initial_seed(const ct_generator *g);
/* the process-wide generator (torch.default_generator), seeded with 67280421310721 */
ct_generator *ct_default_generator(void);
/* torch.manual_seed(seed): seeds the default generator */
void ct_manual_seed(uint64_t seed);
/* torch.initial_seed() */
uint64_t ct_initial_seed(void);
/* Size in bytes of a serialized state (5056, PyTorch's layout: get_state()/set_state()
 * bytes can be exchanged with torch byte for byte). */
size_t ct_generator_state_size(void);
void ct_generator_get_state(const ct_generator *g, uint8_t *out);
/* Rejects a wrong size or an invalid state (generator left unchanged). */
ct_status ct_generator_set_state(ct_generator *g, const uint8_t *in, size_t n);

/* ---- factories (g may be NULL: default generator) ---------------------------- */
/* torch.rand: uniform [0, 1); floating dtypes only */
ct_tensor *ct_rand(int ndim, const int64_t *shape, ct_options o, ct_generator *g);
/* torch.randn: standard normal; floating dtypes only */
ct_tensor *ct_randn(int ndim, const int64_t *shape, ct_options o, ct_generator *g);
/* torch.randint(low, high, shape): integers in [low, high); o NULL -> int64 */
ct_tensor *ct_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, const ct_options *o,
                      ct_generator *g);
/* torch.randperm(n); o NULL -> int64 */
ct_tensor *ct_randperm(int64_t n, const ct_options *o, ct_generator *g);
/* *_like: shape (and dtype unless o) of t */
ct_tensor *ct_rand_like(const ct_tensor *t, const ct_options *o, ct_generator *g);
ct_tensor *ct_randn_like(const ct_tensor *t, const ct_options *o, ct_generator *g);
ct_tensor *ct_randint_like(const ct_tensor *t, int64_t low, int64_t high, const ct_options *o, ct_generator *g);

/* ---- in-place fills --------------------------------------------------------- */
/* Tensor.uniform_(from, to) */
ct_status ct_uniform_(ct_tensor *t, double from, double to, ct_generator *g);
/* Tensor.normal_(mean, std) */
ct_status ct_normal_(ct_tensor *t, double mean, double std, ct_generator *g);
/* Tensor.exponential_(lambd) */
ct_status ct_exponential_(ct_tensor *t, double lambd, ct_generator *g);
/* Tensor.random_(from, to): integers in [from, to) */
ct_status ct_random_(ct_tensor *t, int64_t from, int64_t to, ct_generator *g);
/* Tensor.bernoulli_(p) with a scalar p in [0, 1] */
ct_status ct_bernoulli_(ct_tensor *t, double p, ct_generator *g);
/* Tensor.bernoulli_(p) with a probability tensor p broadcastable to t */
ct_status ct_bernoulli_tensor_(ct_tensor *t, const ct_tensor *p, ct_generator *g);

/* ---- sampling ---------------------------------------------------------------- */
/* torch.bernoulli(p): 0/1 draws with the probabilities in p (floating), same dtype */
ct_tensor *ct_bernoulli(const ct_tensor *p, ct_generator *g);
/* torch.bernoulli(t, p): t's shape and dtype, scalar probability p */
ct_tensor *ct_bernoulli_p(const ct_tensor *t, double p, ct_generator *g);
/* torch.multinomial(probs, num_samples, replacement): probs 1-D or 2-D; int64 indices */
ct_tensor *ct_multinomial(const ct_tensor *probs, int64_t num_samples, bool replacement, ct_generator *g);

#ifdef __cplusplus
}
#endif
#endif
