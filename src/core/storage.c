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
  s->raw_exposed = true; /* the owner of the memory can write it without us knowing */
  return s;
}

void ct_storage_retain(ct_storage *s) {
  if (s) __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

ct_status ct_storage_grow(ct_storage *s, size_t nbytes) {
  if (nbytes <= s->nbytes) return CT_OK;
  if (s->deleter) return CT_ERR(CT_ERR_RUNTIME, "Trying to resize storage that is not resizable");
  const ct_backend *be = s->backend;
  void *host = NULL;
  if (s->device.type != CT_DEVICE_CPU && s->nbytes) { /* through the host: a backend only uploads/downloads */
    host = ct_xmalloc(s->nbytes);
    if (!host) return ct_last_status();
    ct_status st = be->download(s, 0, host, s->nbytes);
    if (st != CT_OK) {
      free(host);
      return st;
    }
  }
  void *data = be->alloc(s->device.index, nbytes);
  if (!data) {
    free(host);
    return ct_last_status() != CT_OK ? ct_last_status() : CT_ERR(CT_ERR_OOM, "out of memory resizing a storage");
  }
  void *old = s->data;
  size_t old_n = s->nbytes;
  if (s->device.type == CT_DEVICE_CPU) {
    if (old_n) memcpy(data, old, old_n);
  }
  s->data = data;
  s->nbytes = nbytes;
  ct_status st = host ? be->upload(s, 0, host, old_n) : CT_OK;
  free(host);
  be->free(s->device.index, old, old_n);
  return st;
}

void ct_storage_release(ct_storage *s) {
  if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->deleter) s->deleter(s->data, s->deleter_ctx);
  else s->backend->free(s->device.index, s->data, s->nbytes);
  free(s);
}
