/* An ordered name -> tensor map: state_dicts, named parameters, checkpoint contents. */
#ifndef CTORCH_DICT_H
#define CTORCH_DICT_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_dict ct_dict;

ct_dict *ct_dict_new(void);
void ct_dict_free(ct_dict *d); /* releases the tensors it holds; NULL-safe */
/* Inserts or replaces; the dict keeps its own reference. */
ct_status ct_dict_set(ct_dict *d, const char *name, ct_tensor *t);
/* Borrowed; NULL if absent (no error set). */
ct_tensor *ct_dict_get(const ct_dict *d, const char *name);
int64_t ct_dict_len(const ct_dict *d);
/* Entry i in insertion order (borrowed). */
const char *ct_dict_name(const ct_dict *d, int64_t i);
ct_tensor *ct_dict_tensor(const ct_dict *d, int64_t i);
ct_status ct_dict_remove(ct_dict *d, const char *name);
/* String metadata (safetensors' __metadata__, checkpoint info). */
ct_status ct_dict_set_meta(ct_dict *d, const char *key, const char *value);
const char *ct_dict_get_meta(const ct_dict *d, const char *key);
int64_t ct_dict_meta_len(const ct_dict *d);
const char *ct_dict_meta_key(const ct_dict *d, int64_t i);

#ifdef __cplusplus
}
#endif
#endif
