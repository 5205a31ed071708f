/* Thread-local error state: every public function leaves its reason here. */
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char err_msg[1024];
static _Thread_local ct_status err_status = CT_OK;

ct_status ct_set_error(ct_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_msg, sizeof err_msg, fmt, ap);
  va_end(ap);
  err_status = st;
  return st;
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
