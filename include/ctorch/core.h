/* ctorch core: dtypes, devices, errors, tensor handles, memory, autograd switches.
 *
 * Ownership in one paragraph: every function that returns a ct_tensor* returns a
 * new reference that the caller owns; release it with ct_release(). Inside a
 * scope (ct_scope_begin/ct_scope_end) every handle created is also recorded in the
 * scope, and ct_scope_end releases the ones still alive that were not passed to
 * ct_keep() (ct_keep moves a handle to the enclosing scope, or out of all scopes).
 * Releasing a scoped handle early is fine: it leaves the scope. Functions never
 * take ownership of their arguments. NULL is returned on error, with the reason in
 * ct_last_error() and its kind in ct_last_status().
 */
#ifndef CTORCH_CORE_H
#define CTORCH_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CT_VERSION "0.1.0"
#define CT_MAX_DIMS 8

/* ---- status and errors ---------------------------------------------------- */
typedef enum {
  CT_OK = 0,
  CT_ERR_INDEX,           /* IndexError in Python */
  CT_ERR_TYPE,            /* TypeError */
  CT_ERR_VALUE,           /* ValueError */
  CT_ERR_NOT_IMPLEMENTED, /* NotImplementedError */
  CT_ERR_RUNTIME,         /* RuntimeError */
  CT_ERR_OOM              /* RuntimeError: out of memory */
} ct_status;

/* Message of the last error on this thread ("" if none). */
const char *ct_last_error(void);
ct_status ct_last_status(void);
void ct_clear_error(void);

/* Warnings (PyTorch's UserWarning, e.g. resizing an out= tensor that has elements): each
 * message goes to the handler; with none set (fn NULL, the default) each distinct message is
 * printed once to stderr. Returns the previous handler. */
typedef void (*ct_warn_fn)(const char *msg, void *user);
ct_warn_fn ct_set_warn_handler(ct_warn_fn fn, void *user);

/* ---- dtypes ------------------------------------------------------------------ */
typedef enum {
  CT_FLOAT32 = 0,
  CT_FLOAT64,
  CT_FLOAT16,
  CT_BFLOAT16,
  CT_INT8,
  CT_UINT8,
  CT_INT16,
  CT_INT32,
  CT_INT64,
  CT_BOOL,
  CT_NUM_DTYPES
} ct_dtype;

const char *ct_dtype_name(ct_dtype dt);       /* "float32" */
size_t ct_dtype_size(ct_dtype dt);
bool ct_dtype_is_floating(ct_dtype dt);
bool ct_dtype_is_integral(ct_dtype dt, bool include_bool);
ct_dtype ct_promote_types(ct_dtype a, ct_dtype b);
bool ct_can_cast(ct_dtype from, ct_dtype to); /* torch.can_cast */
ct_dtype ct_get_default_dtype(void);
ct_status ct_set_default_dtype(ct_dtype dt);  /* float32 or float64 */

/* IEEE half and bfloat16 conversions (round to nearest even). */
float ct_half_to_float(uint16_t h);
uint16_t ct_float_to_half(float f);
float ct_bf16_to_float(uint16_t h);
uint16_t ct_float_to_bf16(float f);

/* ---- scalars --------------------------------------------------------------- */
/* A Python-like number: its kind matters for type promotion (an int scalar never
 * turns an integer tensor into float; a float scalar turns it into the default dtype). */
typedef enum { CT_SCALAR_BOOL, CT_SCALAR_INT, CT_SCALAR_FLOAT } ct_scalar_kind;
typedef struct {
  ct_scalar_kind kind;
  int64_t i;
  double f;
} ct_scalar;
static inline ct_scalar ct_sf(double v) { ct_scalar s = {CT_SCALAR_FLOAT, (int64_t)0, v}; return s; }
static inline ct_scalar ct_si(int64_t v) { ct_scalar s = {CT_SCALAR_INT, v, (double)v}; return s; }
static inline ct_scalar ct_sb(bool v) { ct_scalar s = {CT_SCALAR_BOOL, v ? 1 : 0, v ? 1.0 : 0.0}; return s; }

/* ---- devices and backends ---------------------------------------------------- */
typedef enum { CT_DEVICE_CPU = 0, CT_DEVICE_CUDA, CT_DEVICE_WEBGPU, CT_NUM_DEVICE_TYPES } ct_device_type;
typedef struct {
  ct_device_type type;
  int index;
} ct_device;
static inline ct_device ct_cpu(void) { ct_device d = {CT_DEVICE_CPU, 0}; return d; }
bool ct_device_available(ct_device dev);
const char *ct_device_type_name(ct_device_type t); /* "cpu", "cuda", "webgpu" */
/* Comma-separated list of backends compiled in, e.g. "cpu". */
const char *ct_backends_compiled(void);
const char *ct_simd_level(void);

/* ---- threads ------------------------------------------------------------------ */
int ct_get_num_threads(void);
ct_status ct_set_num_threads(int n); /* n >= 1; default: CT_NUM_THREADS env or the core count */

/* ---- tensor handles --------------------------------------------------------- */
typedef struct ct_tensor ct_tensor;

ct_tensor *ct_retain(ct_tensor *t); /* returns t; NULL-safe */
void ct_release(ct_tensor *t);      /* NULL-safe */

int ct_ndim(const ct_tensor *t);
const int64_t *ct_shape(const ct_tensor *t);   /* ndim entries */
const int64_t *ct_strides(const ct_tensor *t); /* in elements */
int64_t ct_size(const ct_tensor *t, int dim);  /* negative dims wrap; -1 with error if out of range */
int64_t ct_stride(const ct_tensor *t, int dim);
int64_t ct_numel(const ct_tensor *t);
int64_t ct_storage_offset(const ct_tensor *t);
ct_dtype ct_tensor_dtype(const ct_tensor *t);
ct_device ct_tensor_device(const ct_tensor *t);
bool ct_is_contiguous(const ct_tensor *t);
/* Pointer to element 0 for CPU tensors (NULL otherwise). */
void *ct_data_ptr(const ct_tensor *t);
/* Version counter shared by all views of one storage. */
uint64_t ct_version(const ct_tensor *t);
/* PyTorch's `.data`: a detached alias (same storage) with its own version counter, shared with its
 * views; in-place writes through it do not bump t's counter and the other way round. */
ct_tensor *ct_data_alias(const ct_tensor *t);
bool ct_is_view(const ct_tensor *t);
/* The view's base tensor (borrowed, NULL if not a view). */
ct_tensor *ct_view_base(const ct_tensor *t);
bool ct_shares_storage(const ct_tensor *a, const ct_tensor *b);

/* Copy all elements (in logical row-major order) into a host buffer of dtype
 * `dt`, converting; n is the buffer's element count and must equal numel. */
ct_status ct_copy_to_buffer(const ct_tensor *t, void *dst, ct_dtype dt, int64_t n);
/* The single element of a one-element tensor, as double / int64. */
ct_status ct_item_double(const ct_tensor *t, double *out);
ct_status ct_item_int64(const ct_tensor *t, int64_t *out);
ct_scalar ct_item(const ct_tensor *t); /* kind follows dtype; check ct_last_status on failure */

/* ---- scopes --------------------------------------------------------------- */
typedef struct ct_scope ct_scope;
ct_scope *ct_scope_begin(void);
/* Releases what the scope still holds; scopes must end in LIFO order. */
ct_status ct_scope_end(ct_scope *s);
/* Keep t alive past the innermost scope holding it; returns t. */
ct_tensor *ct_keep(ct_tensor *t);
/* Number of live tensor handles in this process (for leak tests). */
int64_t ct_live_tensors(void);

/* ---- allocator -------------------------------------------------------------- */
typedef struct {
  int64_t allocated_bytes;      /* in use by storages */
  int64_t cached_bytes;         /* free blocks kept by the caching allocator */
  int64_t peak_allocated_bytes;
  int64_t n_allocs;             /* calls that reached the system allocator */
} ct_memory_stats;
ct_memory_stats ct_memory_get_stats(ct_device dev);
void ct_memory_empty_cache(ct_device dev);
/* The peak restarts from the bytes allocated now (torch.cuda.reset_peak_memory_stats). */
void ct_memory_reset_peak(ct_device dev);

/* ---- autograd switches ---------------------------------------------------- */
bool ct_is_grad_enabled(void);
bool ct_set_grad_enabled(bool enabled); /* returns the previous mode */
bool ct_is_inference_mode(void);
bool ct_set_inference_mode(bool enabled); /* returns the previous mode */

#ifdef __cplusplus
}
#endif
#endif
