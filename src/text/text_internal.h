/* Internals of the tokenizers (src/text): the token table and the byte-string hash map. */
#ifndef CT_TEXT_INTERNAL_H
#define CT_TEXT_INTERNAL_H
#include "ctorch/text.h"
#include <stdint.h>

/* Open-addressing map from byte strings (the tokens) to ids; keys point into the token table. */
typedef struct {
  int64_t *slots; /* id, or -1 for empty */
  size_t cap;     /* power of two */
} ct_tokmap;

struct ct_tokenizer {
  ct_tokenizer_kind kind;
  int64_t n_vocab;
  char **tok;       /* bytes of each token */
  size_t *tok_len;
  ct_tokmap map;    /* bytes -> id (char and gpt2) */
  char *vocab;      /* char: the vocabulary string */
  size_t vocab_len;
  /* gpt2 */
  int64_t byte_id[256]; /* the token of each single byte */
  uint64_t *merge_keys; /* (a << 32 | b) + 1, 0 for empty */
  int64_t *merge_rank;
  int64_t *merge_out;
  size_t merge_cap;
  int64_t eot;
};

uint64_t ct_tok_hash(const char *s, size_t n);
/* Builds the map over t->tok; CT_ERR_OOM on failure. */
ct_status ct_tokmap_build(ct_tokenizer *t);
int64_t ct_tokmap_find(const ct_tokenizer *t, const char *s, size_t n);
/* Length of the UTF-8 character at s (1 for an invalid byte). */
size_t ct_utf8_len(const char *s, size_t n);
/* Decodes the character at s (length from ct_utf8_len); an invalid byte gives 0x110000 + byte. */
uint32_t ct_utf8_decode(const char *s, size_t len);
/* An empty tokenizer of n tokens (the token table allocated, entries NULL). */
ct_tokenizer *ct_tokenizer_alloc(ct_tokenizer_kind kind, int64_t n);
#endif
