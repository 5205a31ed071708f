/* Ordered name -> tensor map with a hash index (state_dicts can hold thousands of entries). */
#include "internal.h"
#include <stdlib.h>

typedef struct {
  char *name;
  ct_tensor *t;
} entry;
typedef struct {
  char *key, *value;
} meta;

struct ct_dict {
  entry *e;
  int64_t n, cap;
  int64_t *index; /* open addressing into e, -1 empty; cap_index is a power of two */
  int64_t cap_index;
  meta *m;
  int64_t nm, capm;
};

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = ct_xmalloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

ct_dict *ct_dict_new(void) { return ct_xcalloc(1, sizeof(ct_dict)); }

void ct_dict_free(ct_dict *d) {
  if (!d) return;
  for (int64_t i = 0; i < d->n; i++) {
    free(d->e[i].name);
    ct_unhold(d->e[i].t);
  }
  for (int64_t i = 0; i < d->nm; i++) {
    free(d->m[i].key);
    free(d->m[i].value);
  }
  free(d->e);
  free(d->index);
  free(d->m);
  free(d);
}

static int64_t find(const ct_dict *d, const char *name) {
  if (!d->cap_index) return -1;
  uint64_t mask = (uint64_t)d->cap_index - 1;
  for (uint64_t h = hash(name) & mask;; h = (h + 1) & mask) {
    int64_t k = d->index[h];
    if (k < 0) return -1;
    if (!strcmp(d->e[k].name, name)) return k;
  }
}

static ct_status rebuild_index(ct_dict *d, int64_t cap) {
  int64_t *idx = malloc((size_t)cap * sizeof *idx);
  if (!idx) return CT_ERR(CT_ERR_OOM, "out of memory");
  for (int64_t i = 0; i < cap; i++) idx[i] = -1;
  uint64_t mask = (uint64_t)cap - 1;
  for (int64_t k = 0; k < d->n; k++) {
    uint64_t h = hash(d->e[k].name) & mask;
    while (idx[h] >= 0) h = (h + 1) & mask;
    idx[h] = k;
  }
  free(d->index);
  d->index = idx;
  d->cap_index = cap;
  return CT_OK;
}

ct_status ct_dict_set(ct_dict *d, const char *name, ct_tensor *t) {
  if (!d || !name || !t) return CT_ERR(CT_ERR_VALUE, "ct_dict_set: NULL argument");
  int64_t k = find(d, name);
  if (k >= 0) {
    ct_tensor *old = d->e[k].t;
    d->e[k].t = ct_hold(t);
    ct_unhold(old);
    return CT_OK;
  }
  if (d->n == d->cap) {
    int64_t cap = d->cap ? d->cap * 2 : 16;
    entry *p = realloc(d->e, (size_t)cap * sizeof *p);
    if (!p) return CT_ERR(CT_ERR_OOM, "out of memory");
    d->e = p;
    d->cap = cap;
  }
  char *nm = dup(name);
  if (!nm) return ct_last_status();
  d->e[d->n].name = nm;
  d->e[d->n].t = ct_hold(t); /* a hold: the caller may release its own reference, even in a scope */
  d->n++;
  if (d->n * 2 > d->cap_index) return rebuild_index(d, d->cap_index ? d->cap_index * 2 : 32);
  /* insert the new entry */
  uint64_t mask = (uint64_t)d->cap_index - 1, h = hash(name) & mask;
  while (d->index[h] >= 0) h = (h + 1) & mask;
  d->index[h] = d->n - 1;
  return CT_OK;
}

ct_tensor *ct_dict_get(const ct_dict *d, const char *name) {
  if (!d || !name) return NULL;
  int64_t k = find(d, name);
  return k >= 0 ? d->e[k].t : NULL;
}

int64_t ct_dict_len(const ct_dict *d) { return d ? d->n : 0; }
const char *ct_dict_name(const ct_dict *d, int64_t i) { return d && i >= 0 && i < d->n ? d->e[i].name : NULL; }
ct_tensor *ct_dict_tensor(const ct_dict *d, int64_t i) { return d && i >= 0 && i < d->n ? d->e[i].t : NULL; }

ct_status ct_dict_remove(ct_dict *d, const char *name) {
  int64_t k = d && name ? find(d, name) : -1;
  if (k < 0) return CT_ERR(CT_ERR_VALUE, "ct_dict_remove: no entry named '%s'", name ? name : "(null)");
  free(d->e[k].name);
  ct_unhold(d->e[k].t);
  memmove(&d->e[k], &d->e[k + 1], (size_t)(d->n - k - 1) * sizeof *d->e);
  d->n--;
  return rebuild_index(d, d->cap_index);
}

ct_status ct_dict_set_meta(ct_dict *d, const char *key, const char *value) {
  if (!d || !key || !value) return CT_ERR(CT_ERR_VALUE, "ct_dict_set_meta: NULL argument");
  for (int64_t i = 0; i < d->nm; i++)
    if (!strcmp(d->m[i].key, key)) {
      char *v = dup(value);
      if (!v) return ct_last_status();
      free(d->m[i].value);
      d->m[i].value = v;
      return CT_OK;
    }
  if (d->nm == d->capm) {
    int64_t cap = d->capm ? d->capm * 2 : 8;
    meta *p = realloc(d->m, (size_t)cap * sizeof *p);
    if (!p) return CT_ERR(CT_ERR_OOM, "out of memory");
    d->m = p;
    d->capm = cap;
  }
  char *k = dup(key), *v = dup(value);
  if (!k || !v) {
    free(k);
    free(v);
    return ct_last_status();
  }
  d->m[d->nm].key = k;
  d->m[d->nm].value = v;
  d->nm++;
  return CT_OK;
}

const char *ct_dict_get_meta(const ct_dict *d, const char *key) {
  for (int64_t i = 0; d && key && i < d->nm; i++)
    if (!strcmp(d->m[i].key, key)) return d->m[i].value;
  return NULL;
}
int64_t ct_dict_meta_len(const ct_dict *d) { return d ? d->nm : 0; }
const char *ct_dict_meta_key(const ct_dict *d, int64_t i) { return d && i >= 0 && i < d->nm ? d->m[i].key : NULL; }
