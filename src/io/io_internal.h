/* Shared by the safetensors header parser, reader/writer and checkpoints. */
#ifndef CT_IO_INTERNAL_H
#define CT_IO_INTERNAL_H
#include "../core/internal.h"
#include "ctorch/io.h"

#define CT_ST_MAX_HEADER 100000000LL /* the reference reader's limit */

/* safetensors dtypes: name, bits per element, ctorch dtype (CT_NUM_DTYPES: none),
 * and rank in the reference writer's alignment order (higher is written first) */
typedef struct {
  const char *name;
  int bits;
  ct_dtype ct;
  int rank;
} ct_st_dtype;
extern const ct_st_dtype ct_st_dtypes[];
extern const int ct_st_n_dtypes;
/* index in ct_st_dtypes of a ctorch dtype */
int ct_st_dtype_of(ct_dtype dt);

typedef struct {
  char *name;
  int dt;          /* index into ct_st_dtypes */
  int ndim;
  int64_t shape_at; /* first dim in info->pool */
  int64_t numel;
  int64_t begin, end;
  int64_t order;    /* position in the header (sort tie-break) */
} ct_st_entry;

struct ct_safetensors_info {
  ct_st_entry *e; /* sorted by (begin, end, header order) once validated */
  int64_t n, cap;
  int64_t *pool;
  int64_t npool, cappool;
  char **mk, **mv;
  int64_t nm, capm, capmv;
  int64_t header_len, data_len;
};

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF); *bad = first bad byte. */
bool ct_st_valid_utf8(const unsigned char *s, size_t n, size_t *bad);
/* Sets "invalid safetensors <where>: <current message>" keeping the status. */
ct_status ct_st_wrap_error(const char *where);
/* Validates 8-byte length + header of a whole file of total_len bytes whose first
 * `have` bytes are in buf (have >= 8 + N is needed; the caller reads enough first). */
ct_safetensors_info *ct_st_parse_file_prefix(const unsigned char *buf, size_t have, uint64_t total_len);
#endif
