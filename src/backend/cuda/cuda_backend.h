/* Internal interface of the CUDA backend (host side), shared by its .cu files.
 * Only compiled where nvcc exists (src/backend/cuda/cuda.mk); every file of the
 * backend includes this inside extern "C". */
#ifndef CT_CUDA_BACKEND_H
#define CT_CUDA_BACKEND_H
#include "../backend.h"
#include "../cpu/cpu_iter.h"

extern const ct_backend ct_cuda_backend;

/* The stream every kernel, copy and cuBLAS call of a device runs on (one per device, so
 * the caching allocator may hand a freed block to the next op without events). */
void *ct_cuda_stream(int dev); /* cudaStream_t */
/* Makes dev current on this thread; an error if no such device. */
ct_status ct_cuda_use(int dev);
/* Launch error check: turns cudaGetLastError() into a ctorch error. */
ct_status ct_cuda_check_launch(const char *what);
/* Translates a CUDA error code (cudaError_t as int) into a ctorch error. */
ct_status ct_cuda_fail(int err, const char *what);
/* Temporary device memory from the caching allocator (stream-ordered reuse). */
void *ct_cuda_tmp_alloc(int dev, size_t nbytes);
void ct_cuda_tmp_free(int dev, void *p, size_t nbytes);
/* A device int32 the kernels set to report a bad index; ct_cuda_flag_take waits for
 * the stream, reads it and resets it to 0. */
int *ct_cuda_flag(int dev);
ct_status ct_cuda_flag_take(int dev, int *value);
/* Device of a call's tensors: its first present output, else its first present input (optional slots are NULL). */
int ct_cuda_call_dev(const ct_call *c);
bool ct_cuda_tf32(void);
bool ct_cuda_conv_tf32(void); /* the convolutions' TF32 switch (ct_cuda_set_cudnn_allow_tf32; default: ct_cuda_tf32) */
/* After a capture: the diagnostics the environment asks for (graph_diag.cu; cudaGraph_t graph). */
void ct_cuda_graph_diagnostics(void *graph);

/* Kernel tables of each file: set tab[op] for the ops the file implements. */
void ct_cuda_register_pointwise(ct_kernel_fn *tab);
void ct_cuda_register_reduce(ct_kernel_fn *tab);
void ct_cuda_register_linalg(ct_kernel_fn *tab);
void ct_cuda_register_shape(ct_kernel_fn *tab);
void ct_cuda_register_fast(ct_kernel_fn *tab);
/* Frees the cuBLAS handles (called from empty_cache at exit paths: optional). */

/* ---- the strided iterator, as the kernels receive it ----
 * Up to CU_MAX_T same-shaped tensors (tensor 0 usually the output), dims coalesced
 * like the CPU iterator; strides in bytes. */
#define CU_MAX_T 6
typedef struct {
  int nd, nt;
  int64_t numel;
  int64_t shape[CT_MAX_DIMS];
  int64_t st[CU_MAX_T][CT_MAX_DIMS];
  char *base[CU_MAX_T];
  bool contig; /* every tensor contiguous (nd == 1, stride == item size) */
} cu_iter;
/* Fills it from tensors (all of ts[0]'s shape; NULL-free). */
void cu_iter_make(int nt, ct_tensor *const *ts, cu_iter *it);

/* Copies src into dst on the device (same shape, any dtypes/strides): the copy kernel. */
ct_status ct_cuda_copy_tensor(ct_tensor *dst, ct_tensor *src);


/* Native-precision fast paths (k_fast.cu): each returns false, having done nothing, where
 * its preconditions fail (the caller then runs the reference kernel); true with *st set
 * otherwise. CT_CUDA_FAST=0 turns them all off. */
bool ct_cuda_fast_unary(const ct_call *c, ct_status *st);
bool ct_cuda_fast_binary(const ct_call *c, ct_status *st);
bool ct_cuda_fast_copy(ct_tensor *dst, const ct_tensor *src, ct_status *st);
bool ct_cuda_fast_softmax(const ct_call *c, ct_status *st);
/* Convolutions through cuDNN (k_cudnn.cu, loaded at run time): false, having done nothing,
 * where cuDNN is absent or the call does not fit (the direct kernels then run). */
bool ct_cuda_cudnn_conv(const ct_call *c, ct_status *st);
const char *ct_cuda_cudnn_info(void); /* "cuDNN 9.x.y (folder)" or why it is not used */
/* Session 14 (k_conv_gemm.cu): float32 channels-last 2-D convolutions of small output (N*OH*OW <=
 * CT_CUDA_CONV_GEMM_MAXM) as im2col + cuBLAS (forward) and cuBLAS + a col2im gather (input gradient), on
 * `stream`, which must be the device's own stream; false, having done nothing, where the call does not fit
 * (cuDNN then runs). CT_CUDA_CONV_GEMM=0 turns it off. k_linalg.cu's raw products under it: ready says whether
 * cuBLAS can run on `stream` (the device's stream, outside a region; makes the handle outside a capture), raw
 * launches C_i = op(A_i) op(B_i) there (column-major terms, strided batches, beta 0, TF32 as ct_cuda_conv_tf32). */
bool ct_cuda_conv_gemm(const ct_call *c, void *stream, ct_status *st);
bool ct_cuda_sgemm_ready(int dev, void *stream);
ct_status ct_cuda_sgemm_raw(int dev, bool ta, bool tb, int m, int n, int k, const float *A, int lda, long long sa,
                            const float *B, int ldb, long long sb, float *C, int ldc, long long sc, int batch);
bool ct_cuda_fast_rowsum(int dev, int dt, int mode, const char *in, int no, const int64_t *oshape,
                         const int64_t *ostride, int64_t outer, int64_t inner, int64_t split, int64_t chunk,
                         const double *shift, double *part, int64_t pstride);

#endif
