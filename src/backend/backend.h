/* The one small interface every device implements (ggml-backend style).
 * Memory calls may be asynchronous: a backend queues uploads and kernels and
 * only `download` (and `synchronize`) wait for the device. */
#ifndef CT_BACKEND_H
#define CT_BACKEND_H
#include "../core/internal.h"
#include "../ops/op_table.h"

typedef struct ct_backend {
  const char *name;
  ct_device_type type;
  bool (*available)(int device_index);
  /* Device memory; NULL with an error set on failure. */
  void *(*alloc)(int device_index, size_t nbytes);
  void (*free)(int device_index, void *ptr, size_t nbytes);
  /* host -> device, device -> host (blocks until the bytes are on the host) */
  ct_status (*upload)(ct_storage *dst, size_t dst_offset, const void *src, size_t nbytes);
  ct_status (*download)(const ct_storage *src, size_t src_offset, void *dst, size_t nbytes);
  ct_status (*synchronize)(int device_index);
  /* The kernel for an op, NULL if this backend has none. */
  ct_kernel_fn (*kernel)(int op);
  ct_memory_stats (*stats)(int device_index);
  void (*empty_cache)(int device_index);
} ct_backend;

const ct_backend *ct_backend_for(ct_device_type type); /* NULL if not compiled in */
extern const ct_backend ct_cpu_backend;

#endif
