/* Tokenizers for language models: bytes, characters (a vocabulary built from the text) and
 * GPT-2's byte-level BPE (encoder.json + vocab.bpe, or a Hugging Face tokenizer.json).
 * Token ids are int64; every token decodes to a byte string (a GPT-2 token may hold part of
 * a UTF-8 character, so streams of tokens are written as bytes). */
#ifndef CTORCH_TEXT_H
#define CTORCH_TEXT_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CT_TOKENIZER_BYTE = 0, CT_TOKENIZER_CHAR, CT_TOKENIZER_GPT2 } ct_tokenizer_kind;
typedef struct ct_tokenizer ct_tokenizer;

/* 256 tokens, one per byte value. */
ct_tokenizer *ct_tokenizer_byte(void);
/* Characters: the distinct UTF-8 characters of text, in code point order (a byte that is not
 * part of valid UTF-8 is a character of its own). */
ct_tokenizer *ct_tokenizer_char_from_text(const char *text, size_t n);
/* Characters from a vocabulary string: its UTF-8 characters in id order (as ct_tokenizer_char_vocab gives). */
ct_tokenizer *ct_tokenizer_char_from_vocab(const char *vocab, size_t n);
/* GPT-2 BPE from encoder.json (token -> id) and vocab.bpe (the merges, "#version" line first). */
ct_tokenizer *ct_tokenizer_gpt2_load(const char *encoder_json_path, const char *vocab_bpe_path);
/* GPT-2 BPE from a Hugging Face tokenizer.json (model.vocab, model.merges, added_tokens). */
ct_tokenizer *ct_tokenizer_gpt2_load_json(const char *tokenizer_json_path);
/* GPT-2 BPE from the files of a directory: tokenizer.json, or vocab.json + merges.txt (Hugging Face's
 * names), or encoder.json + vocab.bpe (OpenAI's). NULL with an error if none is there. */
ct_tokenizer *ct_tokenizer_gpt2_load_dir(const char *dir);
void ct_tokenizer_free(ct_tokenizer *t); /* NULL-safe */

ct_tokenizer_kind ct_tokenizer_get_kind(const ct_tokenizer *t);
const char *ct_tokenizer_kind_name(ct_tokenizer_kind k); /* "byte", "char", "gpt2" */
int64_t ct_tokenizer_vocab_size(const ct_tokenizer *t);
/* The char tokenizer's vocabulary as one UTF-8 string (borrowed; NULL for other kinds). */
const char *ct_tokenizer_char_vocab(const ct_tokenizer *t, size_t *n);
/* The id of GPT-2's "<|endoftext|>" (-1 if absent or another kind). */
int64_t ct_tokenizer_eot(const ct_tokenizer *t);

/* Encodes n bytes of text: *ids is a malloc'd array (free() it) of *n_ids ids. The char tokenizer
 * fails (ValueError) on a character outside its vocabulary. */
ct_status ct_tokenizer_encode(const ct_tokenizer *t, const char *text, size_t n, int64_t **ids, size_t *n_ids);
/* The bytes of one token (borrowed, *len bytes); NULL with IndexError for an id out of range. */
const char *ct_tokenizer_token_bytes(const ct_tokenizer *t, int64_t id, size_t *len);
/* Decodes ids into a malloc'd NUL-terminated byte string (free() it); *len may be NULL. */
char *ct_tokenizer_decode(const ct_tokenizer *t, const int64_t *ids, size_t n_ids, size_t *len);

/* GPT-2's pre-tokenisation: splits text into the pieces GPT-2's regex
 * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ finds. Calls fn for each
 * piece (byte offset and length into text) in order. Invalid UTF-8 bytes count as symbols. */
void ct_gpt2_pretokenize(const char *text, size_t n, void (*fn)(size_t off, size_t len, void *user), void *user);

#ifdef __cplusplus
}
#endif
#endif
