/* Checkpoints: model, optimizer and RNG state plus the step count in one safetensors file
 * (layout in include/ctorch/io.h), so that a resumed run continues bit for bit. */
#include "io_internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 1;
  char *s = ct_xmalloc(n);
  if (s) snprintf(s, n, "%s%s", a, b);
  return s;
}

/* "<dir>/checkpoint.safetensors" when path is a directory, else a copy of path. */
static char *resolve(const char *path) {
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    size_t n = strlen(path);
    return join(path, n && path[n - 1] == '/' ? CT_CHECKPOINT_FILE : "/" CT_CHECKPOINT_FILE);
  }
  return join(path, "");
}

static ct_status add_prefixed(ct_dict *all, const char *prefix, const ct_dict *src) {
  for (int64_t i = 0; src && i < ct_dict_len(src); i++) {
    char *n = join(prefix, ct_dict_name(src, i));
    if (!n) return ct_last_status();
    ct_status st = ct_dict_set(all, n, ct_dict_tensor(src, i));
    free(n);
    CT_TRY(st);
  }
  for (int64_t i = 0; src && i < ct_dict_meta_len(src); i++) {
    const char *k = ct_dict_meta_key(src, i);
    char *n = join(prefix, k);
    if (!n) return ct_last_status();
    ct_status st = ct_dict_set_meta(all, n, ct_dict_get_meta(src, k));
    free(n);
    CT_TRY(st);
  }
  return CT_OK;
}

ct_status ct_checkpoint_save(const char *path, const ct_dict *model_state, const ct_dict *optim_state,
                             const ct_generator *rng, int64_t step, const ct_dict *user_meta) {
  if (!path || !*path) return CT_ERR(CT_ERR_VALUE, "ct_checkpoint_save: path is empty");
  if (!model_state) return CT_ERR(CT_ERR_VALUE, "ct_checkpoint_save: model_state is NULL");
  if (step < 0) return CT_ERR(CT_ERR_VALUE, "ct_checkpoint_save: step must be >= 0, got %lld", (long long)step);
  if (!rng) rng = ct_default_generator();
  ct_dict *all = ct_dict_new();
  if (!all) return ct_last_status();
  char num[32];
  snprintf(num, sizeof num, "%d", CT_CHECKPOINT_FORMAT_VERSION);
  ct_status st = ct_dict_set_meta(all, "ctorch.format", "checkpoint");
  if (st == CT_OK) st = ct_dict_set_meta(all, "ctorch.format_version", num);
  snprintf(num, sizeof num, "%lld", (long long)step);
  if (st == CT_OK) st = ct_dict_set_meta(all, "ctorch.step", num);
  if (st == CT_OK) st = add_prefixed(all, "model.", model_state);
  if (st == CT_OK) st = add_prefixed(all, "optim.", optim_state);
  for (int64_t i = 0; st == CT_OK && user_meta && i < ct_dict_meta_len(user_meta); i++) {
    const char *k = ct_dict_meta_key(user_meta, i);
    char *n = join("user.", k);
    st = n ? ct_dict_set_meta(all, n, ct_dict_get_meta(user_meta, k)) : ct_last_status();
    free(n);
  }
  if (st == CT_OK) {
    size_t n = ct_generator_state_size();
    uint8_t *state = ct_xmalloc(n);
    if (!state) st = ct_last_status();
    else {
      ct_generator_get_state(rng, state);
      int64_t shape[1] = {(int64_t)n};
      ct_tensor *t = ct_from_buffer(state, CT_UINT8, 1, shape, ct_opts_dtype(CT_UINT8));
      free(state);
      if (!t) st = ct_last_status();
      else {
        ct_own(t);
        st = ct_dict_set(all, "rng.cpu", t);
        ct_release(t);
      }
    }
  }
  char *file = st == CT_OK ? resolve(path) : NULL;
  if (st == CT_OK && !file) st = ct_last_status();
  if (st == CT_OK) st = ct_safetensors_save(file, all);
  free(file);
  ct_dict_free(all);
  return st;
}

/* A decimal int64 without sign noise; false if the text is anything else. */
static bool parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return false;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || (*s != '-' && (*s < '0' || *s > '9'))) return false;
  *out = v;
  return true;
}

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

ct_status ct_checkpoint_load(const char *path, ct_dict **model_state, ct_dict **optim_state, ct_generator *rng,
                             int64_t *step, ct_dict **user_meta, bool use_mmap) {
  if (model_state) *model_state = NULL;
  if (optim_state) *optim_state = NULL;
  if (user_meta) *user_meta = NULL;
  if (!path || !*path) return CT_ERR(CT_ERR_VALUE, "ct_checkpoint_load: path is empty");
  if (!rng) rng = ct_default_generator();
  char *file = resolve(path);
  if (!file) return ct_last_status();
  ct_dict *all = NULL;
  ct_status st = ct_safetensors_load(file, &all, use_mmap);
  if (st != CT_OK) {
    free(file);
    return st;
  }
  ct_dict *parts[3] = {ct_dict_new(), ct_dict_new(), ct_dict_new()}; /* model, optim, user */
  const ct_tensor *rng_state = NULL;
  int64_t version = 0, stp = 0;
  const char *fmt = ct_dict_get_meta(all, "ctorch.format");
  if (!parts[0] || !parts[1] || !parts[2]) st = ct_last_status();
  else if (!fmt || strcmp(fmt, "checkpoint"))
    st = CT_ERR(CT_ERR_RUNTIME, "'%.500s' is not a ctorch checkpoint (its metadata lacks ctorch.format = checkpoint)", file);
  else if (!parse_i64(ct_dict_get_meta(all, "ctorch.format_version"), &version) || version < 1)
    st = CT_ERR(CT_ERR_RUNTIME, "checkpoint '%.500s': missing or invalid ctorch.format_version", file);
  else if (version > CT_CHECKPOINT_FORMAT_VERSION)
    st = CT_ERR(CT_ERR_RUNTIME, "checkpoint '%.500s' has format version %lld, newer than this ctorch reads (%d)", file,
                (long long)version, CT_CHECKPOINT_FORMAT_VERSION);
  else if (!parse_i64(ct_dict_get_meta(all, "ctorch.step"), &stp) || stp < 0)
    st = CT_ERR(CT_ERR_RUNTIME, "checkpoint '%.500s': missing or invalid ctorch.step", file);
  for (int64_t i = 0; st == CT_OK && i < ct_dict_len(all); i++) {
    const char *n = ct_dict_name(all, i);
    ct_tensor *t = ct_dict_tensor(all, i);
    if (has_prefix(n, "model.")) st = ct_dict_set(parts[0], n + 6, t);
    else if (has_prefix(n, "optim.")) st = ct_dict_set(parts[1], n + 6, t);
    else if (!strcmp(n, "rng.cpu")) rng_state = t;
    else st = CT_ERR(CT_ERR_RUNTIME, "checkpoint '%.500s': unexpected tensor '%.200s' (expected model.*, optim.* or rng.cpu)", file, n);
  }
  for (int64_t i = 0; st == CT_OK && i < ct_dict_meta_len(all); i++) {
    const char *k = ct_dict_meta_key(all, i), *v = ct_dict_get_meta(all, k);
    if (has_prefix(k, "model.")) st = ct_dict_set_meta(parts[0], k + 6, v);
    else if (has_prefix(k, "optim.")) st = ct_dict_set_meta(parts[1], k + 6, v);
    else if (has_prefix(k, "user.")) st = ct_dict_set_meta(parts[2], k + 5, v);
    /* ctorch.* is read above; other keys are left for newer writers */
  }
  if (st == CT_OK && !rng_state) st = CT_ERR(CT_ERR_RUNTIME, "checkpoint '%.500s': missing tensor rng.cpu", file);
  if (st == CT_OK && (ct_tensor_dtype(rng_state) != CT_UINT8 || ct_ndim(rng_state) != 1 ||
                      ct_numel(rng_state) != (int64_t)ct_generator_state_size()))
    st = CT_ERR(CT_ERR_RUNTIME, "checkpoint '%.500s': rng.cpu must be a uint8 tensor of %zu bytes", file,
                ct_generator_state_size());
  /* the generator is the last thing changed, and only when everything else is valid */
  if (st == CT_OK) {
    st = ct_generator_set_state(rng, ct_host_ptr(rng_state), ct_generator_state_size());
    if (st != CT_OK) {
      char m[700];
      snprintf(m, sizeof m, "%s", ct_last_error());
      st = CT_ERR(CT_ERR_RUNTIME, "checkpoint '%.200s': invalid rng.cpu: %s", file, m);
    }
  }
  ct_dict_free(all);
  free(file);
  if (st != CT_OK) {
    for (int k = 0; k < 3; k++) ct_dict_free(parts[k]);
    return st;
  }
  if (step) *step = stp;
  if (model_state) *model_state = parts[0];
  else ct_dict_free(parts[0]);
  if (optim_state) *optim_state = parts[1];
  else ct_dict_free(parts[1]);
  if (user_meta) *user_meta = parts[2];
  else ct_dict_free(parts[2]);
  return CT_OK;
}
