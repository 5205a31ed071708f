/* The CPU backend: host memory through a caching allocator, kernels from the op table. */
#include "../backend.h"
#include "simd/simd.h"
#include <pthread.h>
#include <stdlib.h>

/* ---- caching allocator ----
 * Freed blocks are kept in per-size-class lists and reused; sizes round up to
 * classes of 2^k and 1.5*2^k so a training loop's repeated shapes hit the cache.
 * CT_NO_CACHE=1 turns caching off (the sanitizer run uses it so ASan sees every free). */
#define N_CLASSES 128
typedef struct block { struct block *next; } block;
static struct {
  pthread_mutex_t mu;
  block *free_list[N_CLASSES];
  int64_t allocated, cached, peak, n_allocs;
  int enabled; /* -1 unknown */
} A = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0, 0, 0, -1};

static const int64_t CACHE_LIMIT = (int64_t)2 << 30;

static int size_class(size_t n, size_t *rounded) {
  size_t s = 64;
  int c = 0;
  while (s < n) {
    size_t mid = s + s / 2;
    if (mid >= n) {
      *rounded = mid;
      return 2 * c + 1;
    }
    if (s > SIZE_MAX / 2) { /* 32-bit size_t (WebAssembly): no class above; never cached */
      *rounded = n;
      return N_CLASSES;
    }
    s *= 2;
    c++;
  }
  *rounded = s;
  return 2 * c;
}

static void cpu_empty_cache(int dev);
static void *cpu_alloc(int dev, size_t nbytes) {
  (void)dev;
  if (A.enabled < 0) {
    const char *e = getenv("CT_NO_CACHE");
    A.enabled = !(e && *e && *e != '0');
  }
  size_t rounded;
  int c = size_class(nbytes ? nbytes : 1, &rounded);
  pthread_mutex_lock(&A.mu);
  if (A.enabled && c < N_CLASSES && A.free_list[c]) {
    block *b = A.free_list[c];
    A.free_list[c] = b->next;
    A.cached -= (int64_t)rounded;
    A.allocated += (int64_t)rounded;
    if (A.allocated > A.peak) A.peak = A.allocated;
    pthread_mutex_unlock(&A.mu);
    return b;
  }
  pthread_mutex_unlock(&A.mu);
  void *p = NULL;
  if (posix_memalign(&p, 64, rounded) != 0 || !p) {
    /* the cache may hold the memory a bounded heap (WebAssembly) needs: give it back, retry once */
    cpu_empty_cache(dev);
    p = NULL;
  }
  if (!p && (posix_memalign(&p, 64, rounded) != 0 || !p)) {
    ct_set_error(CT_ERR_OOM, "CPU out of memory: tried to allocate %zu bytes", nbytes);
    return NULL;
  }
  pthread_mutex_lock(&A.mu);
  A.allocated += (int64_t)rounded;
  A.n_allocs++;
  if (A.allocated > A.peak) A.peak = A.allocated;
  pthread_mutex_unlock(&A.mu);
  return p;
}

static void cpu_free(int dev, void *p, size_t nbytes) {
  (void)dev;
  if (!p) return;
  size_t rounded;
  int c = size_class(nbytes ? nbytes : 1, &rounded);
  pthread_mutex_lock(&A.mu);
  A.allocated -= (int64_t)rounded;
  if (A.enabled && c < N_CLASSES && A.cached + (int64_t)rounded <= CACHE_LIMIT) {
    block *b = p;
    b->next = A.free_list[c];
    A.free_list[c] = b;
    A.cached += (int64_t)rounded;
    pthread_mutex_unlock(&A.mu);
    return;
  }
  pthread_mutex_unlock(&A.mu);
  free(p);
}

static void cpu_empty_cache(int dev) {
  (void)dev;
  pthread_mutex_lock(&A.mu);
  for (int c = 0; c < N_CLASSES; c++) {
    while (A.free_list[c]) {
      block *b = A.free_list[c];
      A.free_list[c] = b->next;
      free(b);
    }
  }
  A.cached = 0;
  pthread_mutex_unlock(&A.mu);
}

static void cpu_reset_peak(int dev) {
  (void)dev;
  pthread_mutex_lock(&A.mu);
  A.peak = A.allocated;
  pthread_mutex_unlock(&A.mu);
}

static ct_memory_stats cpu_stats(int dev) {
  (void)dev;
  pthread_mutex_lock(&A.mu);
  ct_memory_stats s = {A.allocated, A.cached, A.peak, A.n_allocs};
  pthread_mutex_unlock(&A.mu);
  return s;
}

static bool cpu_available(int dev) { return dev == 0 || dev == -1; }

static ct_status cpu_upload(ct_storage *dst, size_t off, const void *src, size_t n) {
  if (n) memcpy((char *)dst->data + off, src, n);
  return CT_OK;
}
static ct_status cpu_download(const ct_storage *src, size_t off, void *dst, size_t n) {
  if (n) memcpy(dst, (const char *)src->data + off, n);
  return CT_OK;
}
static ct_status cpu_sync(int dev) {
  (void)dev;
  return CT_OK;
}

static ct_kernel_fn cpu_kernel(int op) {
  const ct_op_info *info = ct_op_info_of(op);
  if (!info || info->cpu == ct_no_kernel) return NULL;
  return info->cpu;
}

const ct_backend ct_cpu_backend = {
    "cpu", CT_DEVICE_CPU, cpu_available, cpu_alloc, cpu_free, cpu_upload, cpu_download, cpu_sync,
    cpu_kernel, cpu_stats, cpu_empty_cache, NULL, NULL, NULL, /* no forked regions */
    cpu_reset_peak,
};

/* ---- device registry ---- */
#ifdef CT_HAVE_CUDA /* set by src/backend/cuda/cuda.mk where nvcc exists */
extern const ct_backend ct_cuda_backend;
#endif
extern const ct_backend ct_webgpu_backend; /* src/backend/webgpu: always compiled, Dawn loaded at run time */
const ct_backend *ct_backend_for(ct_device_type type) {
  switch (type) {
    case CT_DEVICE_CPU: return &ct_cpu_backend;
#ifdef CT_HAVE_CUDA
    case CT_DEVICE_CUDA: return &ct_cuda_backend;
#endif
    case CT_DEVICE_WEBGPU: return &ct_webgpu_backend;
    default: return NULL;
  }
}

#ifdef CT_HAVE_CUDA
const char *ct_backends_compiled(void) { return "cpu,cuda,webgpu"; }
#else
const char *ct_backends_compiled(void) { return "cpu,webgpu"; }
#endif

const char *ct_device_type_name(ct_device_type t) {
  switch (t) {
    case CT_DEVICE_CPU: return "cpu";
    case CT_DEVICE_CUDA: return "cuda";
    case CT_DEVICE_WEBGPU: return "webgpu";
    default: return "unknown";
  }
}

bool ct_device_available(ct_device dev) {
  const ct_backend *be = ct_backend_for(dev.type);
  return be && be->available(dev.index);
}

/* The CPU's SIMD level and the kernels active now (fast SIMD or reference). */
const char *ct_simd_level(void) { return ct_simd_describe(); }

ct_memory_stats ct_memory_get_stats(ct_device dev) {
  const ct_backend *be = ct_backend_for(dev.type);
  ct_memory_stats z = {0, 0, 0, 0};
  return be ? be->stats(dev.index) : z;
}

void ct_memory_empty_cache(ct_device dev) {
  const ct_backend *be = ct_backend_for(dev.type);
  if (be) be->empty_cache(dev.index);
}

void ct_memory_reset_peak(ct_device dev) {
  const ct_backend *be = ct_backend_for(dev.type);
  if (be && be->reset_peak) be->reset_peak(dev.index);
}
