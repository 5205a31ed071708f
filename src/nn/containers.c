/* Containers: nn.Sequential, nn.ModuleList, nn.ModuleDict. */
#include "module_internal.h"
#include <stdio.h>

static ct_tensor *seq_forward(ct_module *m, const ct_tensor *x) {
  if (ct_check_tensor(x, "Sequential")) return NULL;
  if (m->n_children == 0) return ct_same(x); /* an empty Sequential returns its input */
  ct_tensor *cur = NULL;
  for (int i = 0; i < m->n_children; i++) {
    ct_tensor *y = ct_module_forward(m->children[i].m, cur ? cur : x);
    ct_release(cur);
    if (!y) return NULL;
    cur = y;
  }
  return cur;
}
static const ct_module_vtable seq_vt = {seq_forward, NULL, NULL, NULL};
static const ct_module_vtable list_vt = {NULL, NULL, NULL, NULL};
static const ct_module_vtable mdict_vt = {NULL, NULL, NULL, NULL};

static ct_status append_numbered(ct_module *m, ct_module *mod, const char *what) {
  if (!m) {
    ct_module_free(mod);
    return CT_ERR(CT_ERR_VALUE, "%s: expected a module, got NULL", what);
  }
  char name[32];
  snprintf(name, sizeof name, "%d", m->n_children);
  return ct_module_register_module(m, name, mod);
}

ct_module *ct_sequential_new(int n, ct_module *const *mods) {
  ct_module *m = ct_module_new("Sequential", &seq_vt, NULL);
  if (n < 0 || (n > 0 && !mods)) {
    ct_module_free(m);
    ct_set_error(CT_ERR_VALUE, "Sequential: bad module list (n = %d)", n);
    return NULL;
  }
  if (!m) {
    for (int i = 0; i < n; i++) ct_module_free(mods[i]);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (append_numbered(m, mods[i], "Sequential") != CT_OK) {
      for (int j = i + 1; j < n; j++) ct_module_free(mods[j]); /* the references are ours either way */
      ct_module_free(m);
      return NULL;
    }
  }
  return m;
}

ct_status ct_sequential_append(ct_module *seq, ct_module *mod) { return append_numbered(seq, mod, "Sequential.append"); }

ct_module *ct_module_list_new(void) { return ct_module_new("ModuleList", &list_vt, NULL); }
ct_status ct_module_list_append(ct_module *list, ct_module *mod) { return append_numbered(list, mod, "ModuleList.append"); }

ct_module *ct_module_list_get(const ct_module *list, int64_t i) {
  if (!list) {
    ct_set_error(CT_ERR_VALUE, "module list is NULL");
    return NULL;
  }
  int64_t n = list->n_children, j = i < 0 ? i + n : i;
  if (j < 0 || j >= n) {
    ct_set_error(CT_ERR_INDEX, "index %lld is out of range", (long long)i);
    return NULL;
  }
  return list->children[j].m;
}

int64_t ct_module_list_len(const ct_module *list) { return list ? list->n_children : 0; }

ct_module *ct_module_dict_new(void) { return ct_module_new("ModuleDict", &mdict_vt, NULL); }

ct_status ct_module_dict_set(ct_module *d, const char *name, ct_module *mod) {
  if (!d) {
    ct_module_free(mod);
    return CT_ERR(CT_ERR_VALUE, "ModuleDict: expected a module, got NULL");
  }
  return ct_module_register_module(d, name, mod);
}

ct_module *ct_module_dict_get(const ct_module *d, const char *name) {
  if (!d || !name) {
    ct_set_error(CT_ERR_VALUE, "ModuleDict get: NULL argument");
    return NULL;
  }
  for (int i = 0; i < d->n_children; i++)
    if (!strcmp(d->children[i].name, name)) return d->children[i].m;
  ct_set_error(CT_ERR_INDEX, "'%s'", name);
  return NULL;
}
