/* Shared helpers of `ctorch train-gpt` and `ctorch sample`. */
#ifndef CT_GPT_CMD_H
#define CT_GPT_CMD_H
#include "ctorch.h"
#include "ctorch/models.h"
#include "ctorch/text.h"
#include "util/json.h"
#include <stdbool.h>
#include <stdio.h>

/* The built-in training text: about target_bytes of generated stories (malloc'd). */
char *gpt_builtin_corpus(size_t target_bytes, size_t *len);

/* The tokenizer a model directory was trained with (config.json's "ctorch_tokenizer", or GPT-2's
 * files in the directory for a Hugging Face checkpoint). */
ct_tokenizer *gpt_tokenizer_for_model(const char *dir, const ct_gpt_config *cfg);
/* config.json members describing the tokenizer ("ctorch_tokenizer": ..., "ctorch_vocab": ...). */
void gpt_tokenizer_json(const ct_tokenizer *tok, ctj_buf *b);
/* Copies GPT-2 tokenizer files (tokenizer.json, vocab.json, merges.txt, encoder.json, vocab.bpe) that
 * exist in src into dst. */
bool gpt_copy_tokenizer_files(const char *src, const char *dst);

/* Strict number parsing for options: false (with a message on stderr) if s is not a number in range. */
bool gpt_parse_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out);
bool gpt_parse_f64(const char *opt, const char *s, double lo, double hi, double *out);
double gpt_now(void); /* monotonic seconds */
/* --device: cpu, cuda or cuda:N; false (with a message on stderr) if invalid or not available. */
bool gpt_parse_device(const char *cmd, const char *s, ct_device *out);
#endif
