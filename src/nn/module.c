/* The module object: registration, lookup, traversal, train/eval, state_dict and its
 * strict loading with PyTorch's messages. */
#include "module_internal.h"
#include "../autograd/autograd.h"
#include "ctorch/cuda.h"
#include <stdio.h>
#include <stdlib.h>

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = ct_xmalloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

void ct_mod_release_n(int n, ...) {
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) ct_release(va_arg(ap, ct_tensor *));
  va_end(ap);
}

static ct_status check_module(const ct_module *m, const char *what) {
  if (!m) return CT_ERR(CT_ERR_VALUE, "%s: expected a module, got NULL", what);
  return CT_OK;
}

ct_module *ct_module_new(const char *type_name, const ct_module_vtable *vt, void *user) {
  if (!type_name || !*type_name) {
    ct_set_error(CT_ERR_VALUE, "ct_module_new: type_name must be a non-empty string");
    return NULL;
  }
  ct_module *m = ct_xcalloc(1, sizeof *m);
  if (!m) return NULL;
  m->type_name = dupstr(type_name);
  if (!m->type_name) {
    free(m);
    return NULL;
  }
  m->refcount = 1;
  m->vt = vt;
  m->user = user;
  m->training = true;
  return m;
}

ct_module *ct_module_retain(ct_module *m) {
  if (m) m->refcount++;
  return m;
}

void ct_module_free(ct_module *m) {
  if (!m || --m->refcount > 0) return;
  for (int i = 0; i < m->n_params; i++) {
    free(m->params[i].name);
    ct_unhold(m->params[i].t);
  }
  for (int i = 0; i < m->n_buffers; i++) {
    free(m->buffers[i].name);
    ct_unhold(m->buffers[i].t);
  }
  for (int i = 0; i < m->n_children; i++) {
    free(m->children[i].name);
    ct_module_free(m->children[i].m);
  }
  if (m->vt && m->vt->destroy) m->vt->destroy(m->user);
  free(m->params);
  free(m->buffers);
  free(m->children);
  free(m->type_name);
  free(m);
}

const char *ct_module_type_name(const ct_module *m) { return m ? m->type_name : NULL; }
void *ct_module_user(const ct_module *m) { return m ? m->user : NULL; }

/* ---- registration ---- */
static int find_tensor(const ct_mod_tensor *a, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(a[i].name, name)) return i;
  return -1;
}
static int find_child(const ct_module *m, const char *name) {
  for (int i = 0; i < m->n_children; i++)
    if (!strcmp(m->children[i].name, name)) return i;
  return -1;
}
int ct_mod_param_index(const ct_module *m, const char *name) { return find_tensor(m->params, m->n_params, name); }

static ct_status check_name(const char *name, const char *kind) {
  if (!name) return CT_ERR(CT_ERR_TYPE, "%s name should be a string. Got NULL", kind);
  if (!*name) return CT_ERR(CT_ERR_INDEX, "%s name can't be empty string \"\"", kind);
  if (strchr(name, '.')) {
    if (!strcmp(kind, "module")) return CT_ERR(CT_ERR_INDEX, "module name can't contain \".\", got: %s", name);
    return CT_ERR(CT_ERR_INDEX, "%s name can't contain \".\"", kind);
  }
  return CT_OK;
}

static bool grow(void **arr, int *cap, int n, size_t elem) {
  if (n < *cap) return true;
  int nc = *cap ? *cap * 2 : 4;
  void *p = realloc(*arr, (size_t)nc * elem);
  if (!p) {
    ct_set_error(CT_ERR_OOM, "out of memory registering a module member");
    return false;
  }
  *arr = p;
  *cap = nc;
  return true;
}

/* Inserts or replaces name -> t (held) in a tensor list. */
static ct_status put_tensor(ct_mod_tensor **arr, int *n, int *cap, const char *name, ct_tensor *t, bool persistent) {
  int k = find_tensor(*arr, *n, name);
  if (k >= 0) {
    ct_tensor *old = (*arr)[k].t;
    (*arr)[k].t = ct_hold(t);
    (*arr)[k].persistent = persistent;
    ct_unhold(old);
    return CT_OK;
  }
  if (!grow((void **)arr, cap, *n, sizeof **arr)) return CT_ERR_OOM;
  char *nm = dupstr(name);
  if (!nm) return CT_ERR_OOM;
  (*arr)[*n].name = nm;
  (*arr)[*n].t = ct_hold(t);
  (*arr)[*n].persistent = persistent;
  (*n)++;
  return CT_OK;
}

ct_status ct_module_register_parameter(ct_module *m, const char *name, ct_tensor *t) {
  CT_TRY(check_module(m, "register_parameter"));
  CT_TRY(check_name(name, "parameter"));
  CT_TRY(ct_check_tensor(t, "register_parameter"));
  if (find_tensor(m->buffers, m->n_buffers, name) >= 0 || find_child(m, name) >= 0)
    return CT_ERR(CT_ERR_INDEX, "attribute '%s' already exists", name);
  if (!ct_dtype_is_floating(t->dtype))
    return CT_ERR(CT_ERR_RUNTIME, "Only Tensors of floating point and complex dtype can require gradients");
  if (t->grad_fn)
    return CT_ERR(CT_ERR_VALUE,
                  "Cannot assign non-leaf Tensor to parameter '%s'. Model parameters must be created explicitly. To "
                  "express '%s' as a function of another Tensor, compute the value in the forward() method.",
                  name, name);
  CT_TRY(ct_requires_grad_(t, true));
  return put_tensor(&m->params, &m->n_params, &m->cap_params, name, t, true);
}

ct_status ct_module_register_buffer(ct_module *m, const char *name, ct_tensor *t, bool persistent) {
  CT_TRY(check_module(m, "register_buffer"));
  CT_TRY(check_name(name, "buffer"));
  CT_TRY(ct_check_tensor(t, "register_buffer"));
  if (find_tensor(m->params, m->n_params, name) >= 0 || find_child(m, name) >= 0)
    return CT_ERR(CT_ERR_INDEX, "attribute '%s' already exists", name);
  return put_tensor(&m->buffers, &m->n_buffers, &m->cap_buffers, name, t, persistent);
}

ct_status ct_mod_add_buffer_owned(ct_module *m, const char *name, ct_tensor *t, bool persistent) {
  if (!t) return ct_last_status();
  ct_status st = ct_module_register_buffer(m, name, t, persistent);
  ct_release(t);
  return st;
}

ct_tensor *ct_mod_new_param(ct_module *m, const char *name, int ndim, const int64_t *shape) {
  ct_tensor *t = ct_empty(ndim, shape, ct_opts());
  if (!t) return NULL;
  ct_status st = ct_module_register_parameter(m, name, t);
  ct_release(t); /* the module holds it */
  return st == CT_OK ? t : NULL;
}

/* Would adding child c under m make a cycle (m reachable from c)? */
static bool reaches(const ct_module *from, const ct_module *target, int depth) {
  if (from == target) return true;
  if (depth > 10000) return true;
  for (int i = 0; i < from->n_children; i++)
    if (reaches(from->children[i].m, target, depth + 1)) return true;
  return false;
}

ct_status ct_module_register_module(ct_module *m, const char *name, ct_module *child) {
  ct_status st = check_module(m, "register_module");
  if (!st) st = check_name(name, "module");
  if (!st && !child) st = CT_ERR(CT_ERR_VALUE, "register_module: expected a module, got NULL");
  if (!st && (find_tensor(m->params, m->n_params, name) >= 0 || find_tensor(m->buffers, m->n_buffers, name) >= 0))
    st = CT_ERR(CT_ERR_INDEX, "attribute '%s' already exists", name);
  if (!st && reaches(child, m, 0))
    st = CT_ERR(CT_ERR_VALUE, "register_module: adding '%s' would make the module tree a cycle", name);
  if (st) {
    ct_module_free(child);
    return st;
  }
  int k = find_child(m, name);
  if (k >= 0) {
    ct_module *old = m->children[k].m;
    m->children[k].m = child;
    ct_module_free(old);
    return CT_OK;
  }
  if (!grow((void **)&m->children, &m->cap_children, m->n_children, sizeof *m->children)) {
    ct_module_free(child);
    return CT_ERR_OOM;
  }
  char *nm = dupstr(name);
  if (!nm) {
    ct_module_free(child);
    return CT_ERR_OOM;
  }
  m->children[m->n_children].name = nm;
  m->children[m->n_children].m = child;
  m->n_children++;
  return CT_OK;
}

/* ---- lookup ---- */
/* Walks the module path of a dotted name; *leaf gets the last component. */
static ct_module *walk(const ct_module *m, const char *path, const char **leaf, bool whole_is_module) {
  if (!m || !path) return NULL;
  const char *p = path;
  ct_module *cur = (ct_module *)m;
  char buf[256];
  for (;;) {
    const char *dot = strchr(p, '.');
    if (!dot) break;
    size_t len = (size_t)(dot - p);
    if (len == 0 || len >= sizeof buf) return NULL;
    memcpy(buf, p, len);
    buf[len] = 0;
    int k = find_child(cur, buf);
    if (k < 0) return NULL;
    cur = cur->children[k].m;
    p = dot + 1;
  }
  if (whole_is_module) {
    if (!*p) return NULL;
    int k = find_child(cur, p);
    return k < 0 ? NULL : cur->children[k].m;
  }
  *leaf = p;
  return cur;
}

ct_tensor *ct_module_param(const ct_module *m, const char *path) {
  const char *leaf;
  ct_module *o = walk(m, path, &leaf, false);
  if (!o) return NULL;
  int k = find_tensor(o->params, o->n_params, leaf);
  return k < 0 ? NULL : o->params[k].t;
}

ct_tensor *ct_module_buffer(const ct_module *m, const char *path) {
  const char *leaf;
  ct_module *o = walk(m, path, &leaf, false);
  if (!o) return NULL;
  int k = find_tensor(o->buffers, o->n_buffers, leaf);
  return k < 0 ? NULL : o->buffers[k].t;
}

ct_module *ct_module_child(const ct_module *m, const char *path) { return walk(m, path, NULL, true); }

ct_status ct_module_set_tensor(ct_module *m, const char *path, ct_tensor *t) {
  CT_TRY(check_module(m, "set_tensor"));
  CT_TRY(ct_check_tensor(t, "set_tensor"));
  if (!path) return CT_ERR(CT_ERR_VALUE, "set_tensor: path is NULL");
  const char *leaf;
  ct_module *o = walk(m, path, &leaf, false);
  ct_mod_tensor *slot = NULL;
  if (o) {
    int k = find_tensor(o->params, o->n_params, leaf);
    if (k >= 0) slot = &o->params[k];
    else if ((k = find_tensor(o->buffers, o->n_buffers, leaf)) >= 0) slot = &o->buffers[k];
  }
  if (!slot) return CT_ERR(CT_ERR_INDEX, "%s has no parameter or buffer `%s`", m->type_name, path);
  bool same = slot->t->ndim == t->ndim;
  for (int d = 0; same && d < t->ndim; d++) same = slot->t->shape[d] == t->shape[d];
  if (!same) {
    char a[160], b[160];
    return CT_ERR(CT_ERR_RUNTIME, "set_tensor: %s has shape %s in the module, got %s", path, CT_SHAPE_STR(slot->t, a),
                  CT_SHAPE_STR(t, b));
  }
  ct_tensor *old = slot->t;
  slot->t = ct_hold(t);
  ct_unhold(old);
  return CT_OK;
}

int ct_module_num_children(const ct_module *m) { return m ? m->n_children : 0; }
const char *ct_module_child_name(const ct_module *m, int i) {
  return m && i >= 0 && i < m->n_children ? m->children[i].name : NULL;
}
ct_module *ct_module_child_at(const ct_module *m, int i) {
  return m && i >= 0 && i < m->n_children ? m->children[i].m : NULL;
}

/* ---- forward / train ---- */
ct_tensor *ct_module_forward(ct_module *m, const ct_tensor *x) {
  if (check_module(m, "forward")) return NULL;
  if (m->vt && m->vt->forward) return m->vt->forward(m, x);
  if (m->vt && m->vt->forward_n) {
    ct_tensor *out[8] = {0};
    int n = m->vt->forward_n(m, 1, &x, 8, out);
    if (n < 0) return NULL;
    for (int i = 1; i < n; i++) ct_release(out[i]);
    if (n == 0) ct_set_error(CT_ERR_RUNTIME, "%s.forward returned nothing", m->type_name);
    return n > 0 ? out[0] : NULL;
  }
  ct_set_error(CT_ERR_NOT_IMPLEMENTED, "Module [%s] is missing the required \"forward\" function", m->type_name);
  return NULL;
}

int ct_module_forward_n(ct_module *m, int n_in, const ct_tensor *const *in, int max_out, ct_tensor **out) {
  if (check_module(m, "forward_n")) return -1;
  if (n_in < 0 || (n_in > 0 && !in) || max_out < 1 || !out) {
    ct_set_error(CT_ERR_VALUE, "forward_n: bad arguments (n_in %d, max_out %d)", n_in, max_out);
    return -1;
  }
  for (int i = 0; i < max_out; i++) out[i] = NULL;
  if (m->vt && m->vt->forward_n) {
    int n = m->vt->forward_n(m, n_in, in, max_out, out);
    if (n > max_out) {
      for (int i = 0; i < max_out; i++) ct_release(out[i]);
      ct_set_error(CT_ERR_RUNTIME, "%s.forward returned more outputs than max_out", m->type_name);
      return -1;
    }
    return n;
  }
  if (m->vt && m->vt->forward) {
    if (n_in != 1) {
      ct_set_error(CT_ERR_TYPE, "%s.forward() takes 1 input but %d were given", m->type_name, n_in);
      return -1;
    }
    out[0] = m->vt->forward(m, in[0]);
    return out[0] ? 1 : -1;
  }
  ct_set_error(CT_ERR_NOT_IMPLEMENTED, "Module [%s] is missing the required \"forward\" function", m->type_name);
  return -1;
}

ct_status ct_module_train(ct_module *m, bool training) {
  CT_TRY(check_module(m, "train"));
  m->training = training;
  if (m->vt && m->vt->on_train) CT_TRY(m->vt->on_train(m, training));
  for (int i = 0; i < m->n_children; i++) CT_TRY(ct_module_train(m->children[i].m, training));
  return CT_OK;
}
ct_status ct_module_eval(ct_module *m) { return ct_module_train(m, false); }
bool ct_module_is_training(const ct_module *m) { return m && m->training; }

/* ---- traversal ---- */
/* Pre-order over distinct modules with their prefixes ("" for the root, "a.b." below). */
typedef struct {
  const ct_module **mods;
  char **prefix;
  int n, cap;
} modlist;

static void modlist_free(modlist *l) {
  for (int i = 0; i < l->n; i++) free(l->prefix[i]);
  free(l->mods);
  free(l->prefix);
}

static ct_status modlist_add(modlist *l, const ct_module *m, const char *prefix) {
  if (l->n == l->cap) {
    int nc = l->cap ? l->cap * 2 : 16;
    const ct_module **a = realloc(l->mods, (size_t)nc * sizeof *a);
    if (!a) return CT_ERR(CT_ERR_OOM, "out of memory walking modules");
    l->mods = a;
    char **b = realloc(l->prefix, (size_t)nc * sizeof *b);
    if (!b) return CT_ERR(CT_ERR_OOM, "out of memory walking modules");
    l->prefix = b;
    l->cap = nc;
  }
  char *p = dupstr(prefix);
  if (!p) return CT_ERR_OOM;
  l->mods[l->n] = m;
  l->prefix[l->n] = p;
  l->n++;
  return CT_OK;
}

/* dedup: named_modules(remove_duplicate=True) skips a module seen before; state_dict does not. */
static ct_status collect(modlist *l, const ct_module *m, const char *prefix, bool dedup, int depth) {
  if (depth > 1000) return CT_ERR(CT_ERR_RUNTIME, "module tree deeper than 1000 levels");
  if (dedup)
    for (int i = 0; i < l->n; i++)
      if (l->mods[i] == m) return CT_OK;
  CT_TRY(modlist_add(l, m, prefix));
  for (int i = 0; i < m->n_children; i++) {
    size_t n = strlen(prefix) + strlen(m->children[i].name) + 2;
    char *p = ct_xmalloc(n);
    if (!p) return CT_ERR_OOM;
    snprintf(p, n, "%s%s.", prefix, m->children[i].name);
    ct_status st = collect(l, m->children[i].m, p, dedup, depth + 1);
    free(p);
    CT_TRY(st);
  }
  return CT_OK;
}

static ct_status dict_put_name(ct_dict *out, const char *prefix, const char *name, ct_tensor *t) {
  size_t n = strlen(prefix) + strlen(name) + 1;
  char *key = ct_xmalloc(n);
  if (!key) return CT_ERR_OOM;
  snprintf(key, n, "%s%s", prefix, name);
  ct_status st = ct_dict_set(out, key, t);
  free(key);
  return st;
}

static bool seen_tensor(ct_tensor **seen, int n, const ct_tensor *t) {
  for (int i = 0; i < n; i++)
    if (seen[i] == t) return true;
  return false;
}

static ct_status named_members(const ct_module *m, ct_dict *out, bool buffers) {
  CT_TRY(check_module(m, buffers ? "named_buffers" : "named_parameters"));
  if (!out) return CT_ERR(CT_ERR_VALUE, "named_parameters: out dict is NULL");
  modlist l = {0};
  ct_status st = collect(&l, m, "", true, 0);
  ct_tensor **seen = NULL;
  int n_seen = 0, cap_seen = 0;
  for (int i = 0; !st && i < l.n; i++) {
    const ct_module *x = l.mods[i];
    int n = buffers ? x->n_buffers : x->n_params;
    const ct_mod_tensor *a = buffers ? x->buffers : x->params;
    for (int k = 0; !st && k < n; k++) {
      if (seen_tensor(seen, n_seen, a[k].t)) continue;
      if (!grow((void **)&seen, &cap_seen, n_seen, sizeof *seen)) {
        st = CT_ERR_OOM;
        break;
      }
      seen[n_seen++] = a[k].t;
      st = dict_put_name(out, l.prefix[i], a[k].name, a[k].t);
    }
  }
  free(seen);
  modlist_free(&l);
  return st;
}

ct_status ct_module_named_parameters(const ct_module *m, ct_dict *out) { return named_members(m, out, false); }
ct_status ct_module_named_buffers(const ct_module *m, ct_dict *out) { return named_members(m, out, true); }

ct_status ct_module_state_dict(const ct_module *m, ct_dict *out) {
  CT_TRY(check_module(m, "state_dict"));
  if (!out) return CT_ERR(CT_ERR_VALUE, "state_dict: out dict is NULL");
  modlist l = {0};
  ct_status st = collect(&l, m, "", false, 0);
  for (int i = 0; !st && i < l.n; i++) {
    const ct_module *x = l.mods[i];
    for (int pass = 0; pass < 2 && !st; pass++) {
      int n = pass ? x->n_buffers : x->n_params;
      const ct_mod_tensor *a = pass ? x->buffers : x->params;
      for (int k = 0; !st && k < n; k++) {
        if (pass && !a[k].persistent) continue;
        ct_tensor *d = ct_own(ct_detach(a[k].t));
        if (!d) {
          st = ct_last_status();
          break;
        }
        st = dict_put_name(out, l.prefix[i], a[k].name, d);
        ct_release(d);
      }
    }
  }
  modlist_free(&l);
  return st;
}

/* ---- load_state_dict ---- */
typedef struct {
  char **s;
  int n, cap;
} strlist;
static ct_status sl_add(strlist *l, const char *s) {
  if (!grow((void **)&l->s, &l->cap, l->n, sizeof *l->s)) return CT_ERR_OOM;
  char *p = dupstr(s);
  if (!p) return CT_ERR_OOM;
  l->s[l->n++] = p;
  return CT_OK;
}
static void sl_free(strlist *l) {
  for (int i = 0; i < l->n; i++) free(l->s[i]);
  free(l->s);
}

/* Appends printf output to a growing message buffer. */
typedef struct {
  char *b;
  size_t n, cap;
  bool oom;
} sbuf;
static void sb_printf(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *s, const char *fmt, ...) {
  if (s->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s->b ? s->b + s->n : NULL, s->b ? s->cap - s->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (s->b && s->n + (size_t)k < s->cap) {
      s->n += (size_t)k;
      return;
    }
    size_t nc = (s->cap ? s->cap * 2 : 256) + (size_t)k;
    char *p = realloc(s->b, nc);
    if (!p) {
      s->oom = true;
      return;
    }
    s->b = p;
    s->cap = nc;
  }
}

static void torch_size(sbuf *s, const ct_tensor *t) {
  sb_printf(s, "torch.Size([");
  for (int d = 0; d < t->ndim; d++) sb_printf(s, d ? ", %lld" : "%lld", (long long)t->shape[d]);
  sb_printf(s, "])");
}

typedef struct {
  ct_tensor *dst;
  const ct_tensor *src;
} copy_job;

ct_status ct_module_load_state_dict_ex(ct_module *m, const ct_dict *sd, bool strict, ct_load_result *res) {
  if (res) memset(res, 0, sizeof *res);
  CT_TRY(check_module(m, "load_state_dict"));
  if (!sd) return CT_ERR(CT_ERR_TYPE, "Expected state_dict to be dict-like, got NULL.");
  modlist l = {0};
  strlist missing = {0}, unexpected = {0}, sizeerr = {0};
  copy_job *jobs = NULL;
  int n_jobs = 0, cap_jobs = 0;
  sbuf msg = {0};
  ct_status st = collect(&l, m, "", false, 0);
  for (int i = 0; !st && i < l.n; i++)
    if (l.mods[i]->hooks && l.mods[i]->hooks->pre_load) st = l.mods[i]->hooks->pre_load((ct_module *)l.mods[i]);
  int64_t nsd = ct_dict_len(sd);
  for (int i = 0; !st && i < l.n; i++) {
    const ct_module *x = l.mods[i];
    const char *prefix = l.prefix[i];
    size_t plen = strlen(prefix);
    char key[1024];
    for (int pass = 0; pass < 2 && !st; pass++) {
      int n = pass ? x->n_buffers : x->n_params;
      const ct_mod_tensor *a = pass ? x->buffers : x->params;
      for (int k = 0; !st && k < n; k++) {
        if (pass && !a[k].persistent) continue;
        snprintf(key, sizeof key, "%s%s", prefix, a[k].name);
        const ct_tensor *in = ct_dict_get(sd, key);
        if (!in) {
          if (x->hooks && x->hooks->optional_key && x->hooks->optional_key(x, a[k].name)) {
            /* filled with 0 like PyTorch's BatchNorm for version-less state_dicts: a zero copy job */
            if (!grow((void **)&jobs, &cap_jobs, n_jobs, sizeof *jobs)) st = CT_ERR_OOM;
            else jobs[n_jobs++] = (copy_job){a[k].t, NULL};
            continue;
          }
          st = sl_add(&missing, key);
          continue;
        }
        const ct_tensor *src = in;
        /* PyTorch accepts a 1-element 1-D tensor for a 0-dim parameter (old checkpoints) */
        bool compat = a[k].t->ndim == 0 && in->ndim == 1 && in->shape[0] >= 1;
        bool ok = compat || a[k].t->ndim == in->ndim;
        for (int d = 0; ok && !compat && d < in->ndim; d++) ok = a[k].t->shape[d] == in->shape[d];
        if (!ok) {
          sbuf e = {0};
          sb_printf(&e, "size mismatch for %s: copying a param with shape ", key);
          torch_size(&e, in);
          sb_printf(&e, " from checkpoint, the shape in current model is ");
          torch_size(&e, a[k].t);
          sb_printf(&e, ".");
          st = e.oom ? CT_ERR(CT_ERR_OOM, "out of memory") : sl_add(&sizeerr, e.b);
          free(e.b);
          continue;
        }
        if (!grow((void **)&jobs, &cap_jobs, n_jobs, sizeof *jobs)) st = CT_ERR_OOM;
        else jobs[n_jobs++] = (copy_job){a[k].t, src};
      }
    }
    /* unexpected keys under this module's prefix whose first component is no member or child */
    for (int64_t e = 0; !st && e < nsd; e++) {
      const char *name = ct_dict_name(sd, e);
      if (strncmp(name, prefix, plen) != 0) continue;
      const char *rest = name + plen;
      const char *dot = strchr(rest, '.');
      size_t len = dot ? (size_t)(dot - rest) : strlen(rest);
      char first[512];
      if (len >= sizeof first) len = sizeof first - 1;
      memcpy(first, rest, len);
      first[len] = 0;
      bool known = find_child(x, first) >= 0;
      if (!known) {
        int kp = find_tensor(x->params, x->n_params, first);
        int kb = find_tensor(x->buffers, x->n_buffers, first);
        known = kp >= 0 || (kb >= 0 && x->buffers[kb].persistent);
      }
      if (!known) st = sl_add(&unexpected, name);
    }
  }
  if (!st) {
    bool fail = sizeerr.n > 0 || (strict && (missing.n > 0 || unexpected.n > 0));
    if (fail) {
      sb_printf(&msg, "Error(s) in loading state_dict for %s:", m->type_name);
      if (strict && missing.n) {
        sb_printf(&msg, "\n\tMissing key(s) in state_dict: ");
        for (int i = 0; i < missing.n; i++) sb_printf(&msg, i ? ", \"%s\"" : "\"%s\"", missing.s[i]);
        sb_printf(&msg, ". ");
      }
      if (strict && unexpected.n) {
        sb_printf(&msg, "\n\tUnexpected key(s) in state_dict: ");
        for (int i = 0; i < unexpected.n; i++) sb_printf(&msg, i ? ", \"%s\"" : "\"%s\"", unexpected.s[i]);
        sb_printf(&msg, ". ");
      }
      for (int i = 0; i < sizeerr.n; i++) sb_printf(&msg, "\n\t%s", sizeerr.s[i]);
      st = msg.oom ? CT_ERR(CT_ERR_OOM, "out of memory") : CT_ERR(CT_ERR_RUNTIME, "%s", msg.b);
    }
  }
  if (!st) {
    /* every check passed: copy in place without autograd */
    bool prev = ct_set_grad_enabled(false);
    for (int j = 0; !st && j < n_jobs; j++) {
      if (!jobs[j].src) {
        st = ct_zero_(jobs[j].dst);
        continue;
      }
      const ct_tensor *src = jobs[j].src;
      ct_tensor *sel = NULL;
      if (jobs[j].dst->ndim == 0 && src->ndim == 1) src = sel = ct_select(src, 0, 0);
      if (!src) st = ct_last_status();
      else st = ct_copy_(jobs[j].dst, src);
      ct_release(sel);
      if (st) {
        char err[512];
        snprintf(err, sizeof err, "%s", ct_last_error());
        st = CT_ERR(CT_ERR_RUNTIME, "While copying a parameter of %s from the state_dict, an exception occurred : %s.",
                    m->type_name, err);
      }
    }
    ct_set_grad_enabled(prev);
  }
  if (res && (st == CT_OK)) {
    res->n_missing = missing.n;
    res->missing = missing.s;
    res->n_unexpected = unexpected.n;
    res->unexpected = unexpected.s;
    missing.s = unexpected.s = NULL;
    missing.n = unexpected.n = 0;
  }
  sl_free(&missing);
  sl_free(&unexpected);
  sl_free(&sizeerr);
  free(jobs);
  free(msg.b);
  modlist_free(&l);
  return st;
}

ct_status ct_module_load_state_dict(ct_module *m, const ct_dict *sd, bool strict) {
  return ct_module_load_state_dict_ex(m, sd, strict, NULL);
}

void ct_load_result_free(ct_load_result *r) {
  if (!r) return;
  for (int i = 0; i < r->n_missing; i++) free(r->missing[i]);
  for (int i = 0; i < r->n_unexpected; i++) free(r->unexpected[i]);
  free(r->missing);
  free(r->unexpected);
  memset(r, 0, sizeof *r);
}

/* ---- parameter-wide operations ---- */
typedef ct_status (*param_fn)(ct_mod_tensor *slot, void *ctx);

/* Each distinct parameter (or buffer) once. */
static ct_status for_each(ct_module *m, bool buffers, param_fn fn, void *ctx) {
  modlist l = {0};
  ct_status st = collect(&l, m, "", true, 0);
  ct_tensor **seen = NULL;
  int n_seen = 0, cap_seen = 0;
  for (int i = 0; !st && i < l.n; i++) {
    ct_module *x = (ct_module *)l.mods[i];
    int n = buffers ? x->n_buffers : x->n_params;
    ct_mod_tensor *a = buffers ? x->buffers : x->params;
    for (int k = 0; !st && k < n; k++) {
      if (seen_tensor(seen, n_seen, a[k].t)) continue;
      if (!grow((void **)&seen, &cap_seen, n_seen, sizeof *seen)) {
        st = CT_ERR_OOM;
        break;
      }
      seen[n_seen++] = a[k].t;
      st = fn(&a[k], ctx);
    }
  }
  free(seen);
  modlist_free(&l);
  return st;
}

static ct_status zero_grad_one(ct_mod_tensor *s, void *ctx) {
  bool set_to_none = *(bool *)ctx;
  ct_tensor *g = ct_grad(s->t);
  if (!g) return CT_OK;
  if (set_to_none) return ct_set_grad(s->t, NULL);
  bool prev = ct_set_grad_enabled(false);
  /* PyTorch detaches a grad that has history, then zeroes it in place */
  ct_status st = CT_OK;
  if (g->grad_fn) st = ct_detach_(g);
  if (!st) st = ct_zero_(g);
  ct_set_grad_enabled(prev);
  return st;
}

ct_status ct_module_zero_grad(ct_module *m, bool set_to_none) {
  CT_TRY(check_module(m, "zero_grad"));
  return for_each(m, false, zero_grad_one, &set_to_none);
}

static ct_status requires_grad_one(ct_mod_tensor *s, void *ctx) {
  return ct_requires_grad_(s->t, *(bool *)ctx);
}

ct_status ct_module_requires_grad_(ct_module *m, bool requires_grad) {
  CT_TRY(check_module(m, "requires_grad_"));
  return for_each(m, false, requires_grad_one, &requires_grad);
}

typedef struct {
  bool trainable;
  int64_t n;
} count_ctx;
static ct_status count_one(ct_mod_tensor *s, void *ctx) {
  count_ctx *c = ctx;
  if (!c->trainable || ct_requires_grad(s->t)) c->n += ct_numel(s->t);
  return CT_OK;
}

int64_t ct_module_num_parameters(const ct_module *m, bool only_trainable) {
  if (check_module(m, "num_parameters")) return -1;
  count_ctx c = {only_trainable, 0};
  if (for_each((ct_module *)m, false, count_one, &c)) return -1;
  return c.n;
}

/* to(dtype): a tensor tied in two places is converted once and stays tied. */
typedef struct {
  ct_dtype dt;
  ct_tensor **from, **to;
  int n, cap;
  bool to_dev; /* to(device): every tensor moves to dev, dtypes kept */
  ct_device dev;
} conv_ctx;

static ct_status convert_slots(ct_module *m, bool buffers, conv_ctx *c) {
  for (int i = 0; i < m->n_children; i++) CT_TRY(convert_slots(m->children[i].m, buffers, c));
  int n = buffers ? m->n_buffers : m->n_params;
  ct_mod_tensor *a = buffers ? m->buffers : m->params;
  for (int k = 0; k < n; k++) {
    ct_tensor *t = a[k].t;
    if (c->to_dev ? t->storage->device.type == c->dev.type && t->storage->device.index == c->dev.index
                  : !ct_dtype_is_floating(t->dtype) || t->dtype == c->dt)
      continue;
    ct_tensor *nt = NULL;
    for (int j = 0; j < c->n; j++)
      if (c->from[j] == t) nt = c->to[j];
    if (!nt) {
      bool prev = ct_set_grad_enabled(false);
      nt = c->to_dev ? ct_to_device(t, c->dev) : ct_to_dtype(t, c->dt);
      if (nt && nt == t) { /* same handle cannot happen (dtype or device differs); keep safe */
        ct_set_grad_enabled(prev);
        continue;
      }
      if (nt && nt->grad_fn) {
        ct_tensor *d = ct_detach(nt);
        ct_release(nt);
        nt = d;
      }
      ct_set_grad_enabled(prev);
      if (!nt) return ct_last_status();
      ct_status st = buffers ? CT_OK : ct_requires_grad_(nt, ct_requires_grad(t));
      if (st) {
        ct_release(nt);
        return st;
      }
      if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 16;
        ct_tensor **f = realloc(c->from, (size_t)nc * sizeof *f);
        if (!f) {
          ct_release(nt);
          return CT_ERR(CT_ERR_OOM, "out of memory");
        }
        c->from = f;
        ct_tensor **g = realloc(c->to, (size_t)nc * sizeof *g);
        if (!g) {
          ct_release(nt);
          return CT_ERR(CT_ERR_OOM, "out of memory");
        }
        c->to = g;
        c->cap = nc;
      }
      c->from[c->n] = t;
      c->to[c->n] = nt; /* the ctx keeps the creator's reference until the end */
      c->n++;
    }
    a[k].t = ct_hold(nt);
    ct_unhold(t);
  }
  return CT_OK;
}

ct_status ct_module_to_dtype(ct_module *m, ct_dtype dt) {
  CT_TRY(check_module(m, "to"));
  if (!ct_dtype_valid((int)dt) || !ct_dtype_is_floating(dt))
    return CT_ERR(CT_ERR_TYPE, "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.%s",
                  ct_dtype_valid((int)dt) ? ct_dtype_name(dt) : "?");
  conv_ctx c = {dt, NULL, NULL, 0, 0, false, {CT_DEVICE_CPU, 0}};
  /* the old tensors stay alive through the ctx's list until every slot is switched */
  ct_status st = convert_slots(m, false, &c);
  if (!st) st = convert_slots(m, true, &c);
  for (int j = 0; j < c.n; j++) ct_release(c.to[j]);
  free(c.from);
  free(c.to);
  return st;
}

ct_status ct_module_to_device(ct_module *m, ct_device dev) {
  CT_TRY(check_module(m, "to"));
  if (!ct_device_available(dev))
    return CT_ERR(CT_ERR_RUNTIME, "nn.Module.to: device %s:%d is not available%s%s%s", ct_device_type_name(dev.type),
                  dev.index, dev.type == CT_DEVICE_CUDA ? " (" : "",
                  dev.type == CT_DEVICE_CUDA ? ct_cuda_unavailable_reason() : "", dev.type == CT_DEVICE_CUDA ? ")" : "");
  conv_ctx c = {CT_FLOAT32, NULL, NULL, 0, 0, true, dev};
  ct_status st = convert_slots(m, false, &c);
  if (!st) st = convert_slots(m, true, &c);
  for (int j = 0; j < c.n; j++) ct_release(c.to[j]);
  free(c.from);
  free(c.to);
  return st;
}
