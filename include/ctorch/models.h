/* Ready-made models built from ctorch's ops. Each model has its own section. */
#ifndef CTORCH_MODELS_H
#define CTORCH_MODELS_H
#include "core.h"
#include "dict.h"
#include "random.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ==== GPT: the GPT-2 architecture ==========================================================
 * Pre-LayerNorm transformer blocks (x + attn(ln_1(x)), x + mlp(ln_2(x))), learned position
 * embeddings, causal multi-head attention, a GELU-tanh MLP of width 4 * n_embd, a final
 * LayerNorm and an lm_head tied to the token embedding. Parameter names and orientations are
 * Hugging Face's GPT2LMHeadModel's: "transformer.wte.weight" [V, C], "transformer.wpe.weight"
 * [P, C], "transformer.h.<i>.ln_1.weight", "transformer.h.<i>.attn.c_attn.weight" [C, 3C]
 * (Conv1D: y = x @ W + b), "transformer.h.<i>.attn.c_proj.weight" [C, C], "...mlp.c_fc.weight"
 * [C, 4C], "...mlp.c_proj.weight" [4C, C], "transformer.ln_f.weight", and "lm_head.weight"
 * (the same tensor as wte). */
typedef struct {
  int64_t vocab_size;        /* V */
  int64_t n_positions;       /* P: the longest context */
  int64_t n_embd;            /* C */
  int64_t n_layer;
  int64_t n_head;            /* divides n_embd */
  double dropout;            /* embedding, attention and residual dropout (HF: embd/attn/resid_pdrop) */
  double layer_norm_epsilon; /* 1e-5 */
} ct_gpt_config;

/* GPT-2 small (124M): V 50257, P 1024, C 768, 12 layers, 12 heads, dropout 0.1, eps 1e-5. */
ct_gpt_config ct_gpt_config_gpt2(void);
/* Checks a configuration (ValueError naming the bad field). */
ct_status ct_gpt_config_check(const ct_gpt_config *c);

typedef struct ct_gpt ct_gpt;
/* A new model initialised like GPT-2 (float32): weights N(0, 0.02), the residual projections
 * (attn.c_proj, mlp.c_proj) N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorms 1 and 0; the
 * draws come from g (NULL: the default generator) in parameter order. */
ct_gpt *ct_gpt_new(const ct_gpt_config *c, ct_generator *g);
/* nanoGPT's variants of the architecture: bias false drops the bias of every Linear layer and
 * LayerNorm (nanoGPT's bias=False; such a model has no GPT-2 checkpoint layout), gelu "tanh"
 * (GPT-2's gelu_new) or "none" (the exact erf GELU: nanoGPT's nn.GELU). ct_gpt_new(c, g) is
 * ct_gpt_new_variant(c, true, "tanh", g); the same draws from g either way. ct_gpt_save writes
 * them to config.json ("activation_function": "gelu_new" / "gelu", "bias": false) and
 * ct_gpt_load reads them back. */
ct_gpt *ct_gpt_new_variant(const ct_gpt_config *c, bool bias, const char *gelu, ct_generator *g);
bool ct_gpt_has_bias(const ct_gpt *m);
const char *ct_gpt_gelu(const ct_gpt *m); /* "tanh" or "none" */
void ct_gpt_free(ct_gpt *m); /* NULL-safe */
const ct_gpt_config *ct_gpt_get_config(const ct_gpt *m);
/* Changes the dropout probability (e.g. for fine-tuning a loaded model). */
ct_status ct_gpt_set_dropout(ct_gpt *m, double p);
/* The trainable parameters (borrowed; HF names, each tensor once: no lm_head.weight). */
const ct_dict *ct_gpt_parameters(const ct_gpt *m);
/* A new dict of every state_dict entry in HF's order, lm_head.weight included (tied). */
ct_dict *ct_gpt_state_dict(const ct_gpt *m);
/* Copies values from a state dict (HF names, with or without the "transformer." prefix;
 * lm_head.weight optional (tied); HF's attn.bias / attn.masked_bias buffers ignored; any dtype,
 * converted). Shape mismatches and missing or unexpected keys are errors, PyTorch's wording. */
ct_status ct_gpt_load_state_dict(ct_gpt *m, const ct_dict *sd);
int64_t ct_gpt_num_params(const ct_gpt *m); /* each tied tensor counted once */
/* model.to(dev): moves every parameter (training state such as optimizers must be made after). */
ct_status ct_gpt_to_device(ct_gpt *m, ct_device dev);

/* Logits [B, T, V] for idx (int64 [B, T] or [T]: then [T, V]), T <= n_positions. training turns
 * dropout on (drawing from g, NULL: the default generator). If targets (int64, idx's shape) and
 * loss are given, *loss gets the mean cross-entropy (targets of -1 are ignored). With
 * logits_out NULL only the loss is returned (NULL return value, CT_OK status). */
ct_status ct_gpt_forward(ct_gpt *m, const ct_tensor *idx, const ct_tensor *targets, bool training, ct_generator *g,
                         ct_tensor **logits_out, ct_tensor **loss);

/* ---- generation with a key/value cache ---- */
typedef struct ct_gpt_cache ct_gpt_cache;
/* A cache for batch rows and up to max_len positions (<= n_positions). */
ct_gpt_cache *ct_gpt_cache_new(const ct_gpt *m, int64_t batch, int64_t max_len);
void ct_gpt_cache_free(ct_gpt_cache *c); /* NULL-safe */
int64_t ct_gpt_cache_len(const ct_gpt_cache *c);  /* positions held */
void ct_gpt_cache_reset(ct_gpt_cache *c);
/* Runs idx (int64 [B, t]) after the cached positions (no grad, no dropout): appends the new keys
 * and values and returns the logits [B, t, V] (or only the last position's, [B, V], if last_only).
 * Fails with a clear error if the cache would exceed max_len. */
ct_tensor *ct_gpt_forward_cached(ct_gpt *m, ct_gpt_cache *c, const ct_tensor *idx, bool last_only);

/* Sampling: logits divided by temperature (0: greedy argmax), kept to the top_k most likely tokens
 * (0: all) and then to the smallest set whose probability reaches top_p (1: all), renormalised. */
typedef struct {
  double temperature; /* >= 0 */
  int64_t top_k;      /* >= 0 */
  double top_p;       /* (0, 1] */
} ct_gpt_sampling;
/* Picks a token from V float logits with a uniform draw u in [0, 1) (inverse CDF over the tokens
 * in decreasing probability). probs (V floats, or NULL) receives the distribution it drew from.
 * Returns -1 with ValueError for bad settings. */
int64_t ct_gpt_pick_token(const float *logits, int64_t V, const ct_gpt_sampling *s, double u, float *probs);
/* Called for each generated token with the distribution it was drawn from (V floats); return
 * false to stop. */
typedef bool (*ct_gpt_token_fn)(int64_t token, const float *probs, int64_t V, void *user);
/* Generates up to max_new tokens after prompt (n_prompt >= 1 ids) with a KV cache: the prompt is
 * run once, then one position per token. When the context (n_positions) is full the window slides:
 * the cache restarts from the last n_positions / 2 tokens. Draws u from g (NULL: default). */
ct_status ct_gpt_generate(ct_gpt *m, const int64_t *prompt, int64_t n_prompt, int64_t max_new, const ct_gpt_sampling *s,
                          ct_generator *g, ct_gpt_token_fn fn, void *user);

/* ---- checkpoints in Hugging Face's layout ---- */
/* Writes dir/config.json (HF GPT2Config keys; extra lets the caller add members, a JSON text of
 * "key": value pairs without braces, or NULL) and dir/model.safetensors (HF keys, lm_head.weight
 * omitted as transformers does for tied weights). Creates dir if needed. */
ct_status ct_gpt_save(const ct_gpt *m, const char *dir, const char *extra_json);
/* Reads dir/config.json (vocab_size, n_positions, n_embd, n_layer, n_head, resid_pdrop,
 * layer_norm_epsilon) into *c. */
ct_status ct_gpt_read_config(const char *dir, ct_gpt_config *c);
/* Loads a model saved by ct_gpt_save or by transformers (config.json + model.safetensors). */
ct_gpt *ct_gpt_load(const char *dir);

#ifdef __cplusplus
}
#endif
#endif
