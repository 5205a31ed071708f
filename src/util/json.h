/* A small JSON reader (a DOM of ctj values) and writer helpers, enough for config.json,
 * encoder.json / tokenizer.json, safetensors headers and training logs. Internal to ctorch. */
#ifndef CT_UTIL_JSON_H
#define CT_UTIL_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { CTJ_NULL, CTJ_BOOL, CTJ_NUM, CTJ_STR, CTJ_ARR, CTJ_OBJ } ctj_type;

typedef struct ctj {
  ctj_type type;
  bool b;
  double num;
  char *str;          /* CTJ_STR: UTF-8, NUL-terminated (len excludes the NUL; may hold \u0000) */
  size_t len;
  struct ctj *items;  /* CTJ_ARR / CTJ_OBJ: n values */
  char **keys;        /* CTJ_OBJ: n keys (NUL-terminated) */
  size_t *key_lens;
  size_t n, cap;
} ctj;

/* Parses n bytes; NULL on error with a message in err (errn bytes). */
ctj *ctj_parse(const char *s, size_t n, char *err, size_t errn);
void ctj_free(ctj *v); /* NULL-safe */
/* Member of an object (NULL if absent or v is not an object). */
const ctj *ctj_get(const ctj *v, const char *key);
/* Convenience: number / string member, or the fallback. */
double ctj_get_num(const ctj *v, const char *key, double fallback);
const char *ctj_get_str(const ctj *v, const char *key, const char *fallback);

/* Reads a whole file into a malloc'd NUL-terminated buffer (NULL on failure; *n its length). */
char *ctj_read_file(const char *path, size_t *n);

/* A growable byte buffer for writing JSON (and anything else). */
typedef struct {
  char *p;
  size_t n, cap;
  bool oom;
} ctj_buf;
void ctj_buf_put(ctj_buf *b, const char *s, size_t n);
void ctj_buf_puts(ctj_buf *b, const char *s);
void ctj_buf_printf(ctj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes s (n bytes) as a JSON string literal with quotes and escapes. */
void ctj_buf_str(ctj_buf *b, const char *s, size_t n);
void ctj_buf_free(ctj_buf *b);

#endif
