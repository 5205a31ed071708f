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
  /* Optional (NULL: none; the CPU and WebGPU): a forked region. Between region_begin and region_end the
   * device's launches may run on another queue of the device, which the device's own queue meets where it
   * first needs what they wrote (the backend's rules); the results must be those of running in order.
   * kind: CT_REGION_FORWARD or CT_REGION_BACKWARD (the backend may treat them apart: switches, queues).
   * region_begin: true when the region forked (region_end must follow); region_read (inside the region) and
   * region_end: `read` are tensors the region reads, which later work must not overwrite before the join
   * (NULL entries skipped); region_end: false where the region was cut short (it joined inside).
   * Callers: src/backend/stream_region.c. */
  bool (*region_begin)(int device_index, int kind);
  void (*region_read)(int device_index, int n_read, const ct_tensor *const *read);
  bool (*region_end)(int device_index, int n_read, const ct_tensor *const *read);
  /* the peak of allocated bytes restarts from what is allocated now (torch.cuda.reset_peak_memory_stats) */
  void (*reset_peak)(int device_index);
} ct_backend;
enum { CT_REGION_FORWARD = 0, CT_REGION_BACKWARD = 1 };

const ct_backend *ct_backend_for(ct_device_type type); /* NULL if not compiled in */
extern const ct_backend ct_cpu_backend;

#endif
