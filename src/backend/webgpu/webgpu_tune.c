/* Kernel variants chosen by measurement, decisions cached per adapter and driver (see
 * webgpu_tune.h). The store is one text: a header line, then one decision per line,
 *   <adapter key> TAB <kind> TAB <shape class> TAB <variant>
 * kept whole in memory (other adapters' lines too) and written back whole after each new
 * decision (natively through a temporary file and rename, so a crash leaves the old file). */
#include "webgpu_tune.h"
#include "webgpu_backend.h"
#include "ctorch/webgpu.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef CT_WEBGPU_BROWSER
#include <emscripten.h>
#endif

#define TUNE_HEADER "ctorch-webgpu-tune 1"
#define TUNE_REPS 2 /* timed runs per candidate, after one warm-up */

typedef struct {
  char *key, *kind, *cls;
  int v;
} tune_ent;

static tune_ent *ents;
static int n_ents, cap_ents;
static bool loaded;
static int64_t n_timings;

int64_t ct_webgpu_tune_timings(void) { return n_timings; }

static void ents_free(void) {
  for (int i = 0; i < n_ents; i++) {
    free(ents[i].key);
    free(ents[i].kind);
    free(ents[i].cls);
  }
  free(ents);
  ents = NULL;
  n_ents = cap_ents = 0;
}

void ct_webgpu_tune_forget(void) {
  wg_lock();
  ents_free();
  loaded = false;
  wg_unlock();
}

static bool ent_add(const char *key, const char *kind, const char *cls, int v) {
  for (int i = 0; i < n_ents; i++)
    if (!strcmp(ents[i].key, key) && !strcmp(ents[i].kind, kind) && !strcmp(ents[i].cls, cls)) {
      ents[i].v = v;
      return true;
    }
  if (n_ents == cap_ents) {
    int nc = cap_ents ? cap_ents * 2 : 16;
    tune_ent *ne = realloc(ents, sizeof *ne * (size_t)nc);
    if (!ne) return false;
    ents = ne;
    cap_ents = nc;
  }
  tune_ent e = {strdup(key), strdup(kind), strdup(cls), v};
  if (!e.key || !e.kind || !e.cls) {
    free(e.key);
    free(e.kind);
    free(e.cls);
    return false;
  }
  ents[n_ents++] = e;
  return true;
}

/* ---- the store: a file natively, localStorage in the browser ---- */
#ifdef CT_WEBGPU_BROWSER
EM_JS(char *, ct_tune_js_get, (void), {
  try {
    if (typeof localStorage === 'undefined') return 0;
    var s = localStorage.getItem('ctorch.webgpu_tune');
    if (s === null) return 0;
    var n = lengthBytesUTF8(s) + 1, p = _malloc(n);
    if (p) stringToUTF8(s, p, n);
    return p;
  } catch (e) { return 0; }
});
EM_JS(int, ct_tune_js_set, (const char *s), {
  try {
    if (typeof localStorage === 'undefined') return 0;
    localStorage.setItem('ctorch.webgpu_tune', UTF8ToString(s));
    return 1;
  } catch (e) { return 0; }
});
const char *ct_webgpu_tune_path(void) { return "localStorage:ctorch.webgpu_tune"; }
static char *store_read(void) { return ct_tune_js_get(); }
static bool store_write(const char *text) { return ct_tune_js_set(text) != 0; }
#else
static char path_buf[1024];
const char *ct_webgpu_tune_path(void) {
  const char *e = getenv("CT_WEBGPU_TUNE_FILE");
  if (e && *e) snprintf(path_buf, sizeof path_buf, "%s", e);
  else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(path_buf, sizeof path_buf, "%s/ctorch/webgpu_tune.txt", e);
  else if ((e = getenv("HOME")) && *e) snprintf(path_buf, sizeof path_buf, "%s/.cache/ctorch/webgpu_tune.txt", e);
  else path_buf[0] = 0;
  return path_buf;
}
static char *store_read(void) {
  const char *p = ct_webgpu_tune_path();
  FILE *f = *p ? fopen(p, "rb") : NULL;
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *b = malloc(cap);
  while (b) {
    size_t k = fread(b + n, 1, cap - n - 1, f);
    n += k;
    if (k == 0) break;
    if (n + 1 == cap) {
      char *nb = cap < ((size_t)1 << 24) ? realloc(b, cap * 2) : NULL; /* a cache file is small */
      if (!nb) {
        free(b);
        b = NULL;
        break;
      }
      b = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (b) b[n] = 0;
  return b;
}
/* mkdir -p of the file's directory */
static void make_dirs(const char *file) {
  char d[1024];
  snprintf(d, sizeof d, "%s", file);
  char *slash = strrchr(d, '/');
  if (!slash || slash == d) return;
  *slash = 0;
  for (char *p = d + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(d, 0755);
      *p = '/';
    }
  mkdir(d, 0755);
}
static bool store_write(const char *text) {
  const char *p = ct_webgpu_tune_path();
  if (!*p) return false;
  make_dirs(p);
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", p, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return false;
  bool ok = fputs(text, f) >= 0;
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, p) != 0) ok = false;
  if (!ok) remove(tmp);
  return ok;
}
#endif

/* Parses the store; false (nothing kept) if it is not what we write. */
static bool parse(char *t, int *bad_line) {
  *bad_line = 1;
  char *save = NULL;
  char *line = strtok_r(t, "\n", &save);
  if (!line || strcmp(line, TUNE_HEADER) != 0) return false;
  int ln = 1;
  while ((line = strtok_r(NULL, "\n", &save))) {
    ln++;
    char *f[4];
    int nf = 0;
    char *q = line;
    for (;;) {
      f[nf++] = q;
      char *tab = strchr(q, '\t');
      if (!tab || nf == 4) break;
      *tab = 0;
      q = tab + 1;
    }
    char *end = NULL;
    long v = nf == 4 ? strtol(f[3], &end, 10) : -1;
    if (nf != 4 || !*f[0] || !*f[1] || !*f[2] || end == f[3] || *end || v < 0 || v > 63) {
      *bad_line = ln;
      ents_free();
      return false;
    }
    if (!ent_add(f[0], f[1], f[2], (int)v)) {
      ents_free();
      return false;
    }
  }
  return true;
}

static void load(void) {
  if (loaded) return;
  loaded = true;
  ents_free();
  char *t = store_read();
  if (!t) return; /* none yet: measure */
  int bad = 0;
  if (!parse(t, &bad))
    fprintf(stderr, "ctorch: ignoring the corrupt WebGPU tuning cache %s (line %d); kernel variants are measured "
                    "again and the cache rewritten\n", ct_webgpu_tune_path(), bad);
  free(t);
}

static void save(void) {
  size_t cap = 64;
  for (int i = 0; i < n_ents; i++)
    cap += strlen(ents[i].key) + strlen(ents[i].kind) + strlen(ents[i].cls) + 16;
  char *t = malloc(cap);
  if (!t) return;
  size_t n = (size_t)snprintf(t, cap, "%s\n", TUNE_HEADER);
  for (int i = 0; i < n_ents; i++)
    n += (size_t)snprintf(t + n, cap - n, "%s\t%s\t%s\t%d\n", ents[i].key, ents[i].kind, ents[i].cls, ents[i].v);
  if (!store_write(t)) {
    static bool said;
    if (!said) fprintf(stderr, "ctorch: could not write the WebGPU tuning cache %s (decisions kept in memory)\n",
                       ct_webgpu_tune_path());
    said = true;
  }
  free(t);
}

/* tabs or newlines would break a line of the store */
static void clean(char *s) {
  for (; *s; s++)
    if (*s == '\t' || *s == '\n' || *s == '\r') *s = ' ';
}

static int find(const char *kind, const char *cls) {
  char key[600];
  snprintf(key, sizeof key, "%s", wg_adapter_key());
  clean(key);
  for (int i = 0; i < n_ents; i++)
    if (!strcmp(ents[i].key, key) && !strcmp(ents[i].kind, kind) && !strcmp(ents[i].cls, cls)) return ents[i].v;
  return -1;
}

int ct_webgpu_tune_lookup(const char *kind, const char *cls) {
  if (wg_ready() != CT_OK) {
    ct_clear_error();
    return -1;
  }
  wg_lock();
  load();
  int v = find(kind, cls);
  wg_unlock();
  return v;
}

static int tune_env = -1;
bool wg_tune_active(void) {
  if (tune_env < 0) {
    const char *e = getenv("CT_WEBGPU_TUNE");
    tune_env = (e && e[0] == '0') ? 0 : 1;
  }
  return tune_env && !wg_capturing();
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int wg_tune_pick(const char *kind, const char *cls, int n, wg_tune_run_fn run, void *ctx) {
  load();
  int v = find(kind, cls);
  if (v >= 0 && v < n) return v;
  if (!wg_tune_active() || n < 2) return -1;
  /* work queued before the measurement must not be timed with it */
  if (ct_webgpu_synchronize() != CT_OK) return -1;
  double best = 0;
  int win = -1;
  for (int c = 0; c < n; c++) {
    if (run(c, ctx) != CT_OK || ct_webgpu_synchronize() != CT_OK) { /* warm-up (compiles) */
      ct_clear_error();
      continue;
    }
    double t = 1e30;
    bool ok = true;
    for (int r = 0; r < TUNE_REPS && ok; r++) {
      double t0 = now_s();
      ok = run(c, ctx) == CT_OK && ct_webgpu_synchronize() == CT_OK;
      double dt = now_s() - t0;
      n_timings++;
      if (ok && dt < t) t = dt;
    }
    if (!ok) {
      ct_clear_error();
      continue;
    }
    if (win < 0 || t < best) best = t, win = c;
  }
  if (win < 0) return -1;
  const char *dbg = getenv("CT_WEBGPU_DEBUG");
  if (dbg && *dbg == '1') fprintf(stderr, "webgpu tune %s %s: variant %d (%.3f ms)\n", kind, cls, win, best * 1e3);
  char key[600];
  snprintf(key, sizeof key, "%s", wg_adapter_key());
  clean(key);
  if (ent_add(key, kind, cls, win)) save();
  return win;
}
