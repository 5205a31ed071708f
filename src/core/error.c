/* Thread-local error state: every public function leaves its reason here. */
#include "internal.h"
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <pthread.h>

static _Thread_local char err_msg[1024];
static _Thread_local ct_status err_status = CT_OK;
/* Errors raised so far and the latest message, kept across ct_clear_error: the autograd
 * engine uses them to notice a backward step that failed and was then cleared. */
static _Thread_local uint64_t err_serial;
static _Thread_local char err_recent[1024];

ct_status ct_set_error(ct_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_msg, sizeof err_msg, fmt, ap);
  va_end(ap);
  err_status = st;
  err_serial++;
  memcpy(err_recent, err_msg, sizeof err_recent);
  return st;
}

uint64_t ct_error_serial(void) { return err_serial; }
const char *ct_error_recent(void) { return err_recent; }

static ct_warn_fn warn_fn = NULL;
static void *warn_user = NULL;

ct_warn_fn ct_set_warn_handler(ct_warn_fn fn, void *user) {
  ct_warn_fn prev = warn_fn;
  warn_fn = fn;
  warn_user = user;
  return prev;
}

void ct_warn(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (warn_fn) {
    warn_fn(msg, warn_user);
    return;
  }
  /* default: each distinct message once (like Python's default warning filter per place) */
  static uint64_t seen[64]; /* hashes of the last 64 distinct messages */
  static int n_seen, next;
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  uint64_t h = 1469598103934665603ull;
  for (const char *p = msg; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  pthread_mutex_lock(&mu);
  bool dup = false;
  for (int i = 0; i < n_seen && !dup; i++) dup = seen[i] == h;
  if (!dup) {
    seen[next] = h;
    next = (next + 1) % 64;
    if (n_seen < 64) n_seen++;
  }
  pthread_mutex_unlock(&mu);
  if (!dup) fprintf(stderr, "ctorch: UserWarning: %s\n", msg);
}

const char *ct_last_error(void) { return err_msg; }
ct_status ct_last_status(void) { return err_status; }
void ct_clear_error(void) {
  err_msg[0] = 0;
  err_status = CT_OK;
}

void *ct_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %zu bytes", n);
  return p;
}

void *ct_xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz ? sz : 1);
  if (!p) ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %zu bytes", n * sz);
  return p;
}
