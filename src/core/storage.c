/* Refcounted storage over backend memory; the CPU caching allocator lives in the CPU backend. */
#include "internal.h"
#include "../backend/backend.h"
#include <stdlib.h>

ct_storage *ct_storage_new(ct_device dev, size_t nbytes) {
  const ct_backend *be = ct_backend_for(dev.type);
  if (!be || !be->available(dev.index)) {
    ct_set_error(CT_ERR_RUNTIME, "%s device %d is not available (backends compiled in: %s)",
                 ct_device_type_name(dev.type), dev.index, ct_backends_compiled());
    return NULL;
  }
  ct_storage *s = ct_xcalloc(1, sizeof *s);
  if (!s) return NULL;
  s->data = be->alloc(dev.index, nbytes);
  if (!s->data) {
    free(s);
    return NULL;
  }
  s->refcount = 1;
  s->nbytes = nbytes;
  s->device = dev;
  s->backend = be;
  return s;
}

ct_storage *ct_storage_from_external(void *data, size_t nbytes, void (*deleter)(void *, void *), void *ctx) {
  ct_storage *s = ct_xcalloc(1, sizeof *s);
  if (!s) return NULL;
  s->refcount = 1;
  s->data = data;
  s->nbytes = nbytes;
  s->device = ct_cpu();
  s->backend = &ct_cpu_backend;
  s->deleter = deleter;
  s->deleter_ctx = ctx;
  return s;
}

void ct_storage_retain(ct_storage *s) {
  if (s) __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

void ct_storage_release(ct_storage *s) {
  if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->deleter) s->deleter(s->data, s->deleter_ctx);
  else s->backend->free(s->device.index, s->data, s->nbytes);
  free(s);
}
