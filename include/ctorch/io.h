/* ctorch io: safetensors files (read, mmap, write) and training checkpoints.
 *
 * safetensors layout (https://huggingface.co/docs/safetensors): an 8-byte little-endian
 * header length N, N bytes of a UTF-8 JSON header
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
 * then the data buffer; offsets are relative to the buffer's start, data is contiguous
 * row-major little-endian.
 *
 * Writing follows the reference writer (huggingface/safetensors' serialize): tensors sorted
 * by descending dtype alignment (I64, F64, F32, I32, BF16, F16, I16, I8, U8, BOOL), then by
 * name (bytewise), laid out back to back in that order; compact JSON with "__metadata__"
 * first (keys in the dict's insertion order; omitted when the dict has none), tensors in
 * file order, padded with spaces to a multiple of 8 bytes, so every tensor is naturally
 * aligned. For the same tensors and metadata the bytes equal the reference writer's.
 * Files are written to "<path>.tmp.<pid>" and renamed over path, so a file that is mapped
 * by a previous ct_safetensors_load(..., true) keeps its old contents.
 *
 * Reading is strict, like the reference reader and stricter: the header length must be
 * <= 100,000,000 and fit in the file; the header must be valid UTF-8, begin with '{', and
 * be one JSON object followed only by whitespace; every tensor needs exactly the fields
 * dtype (a known safetensors dtype), shape (non-negative integers whose product, times the
 * item size, does not overflow) and data_offsets ([begin, end], end >= begin, inside the
 * buffer, end - begin == numel * itemsize); no duplicate names or fields; __metadata__ is
 * an object of strings; names and strings hold no NUL; the tensors cover the data buffer
 * exactly, without overlaps or holes. A damaged file is refused with an error (kind
 * CT_ERR_RUNTIME) naming the problem and the tensor; nothing is read out of bounds.
 * Loaded dicts list tensors in data-offset order (the order of the file's data).
 */
#ifndef CTORCH_IO_H
#define CTORCH_IO_H
#include "core.h"
#include "dict.h"
#include "random.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---- safetensors --------------------------------------------------------------- */
/* Writes every tensor of `tensors` (any dtype; non-contiguous and non-CPU tensors are
 * copied first; requires_grad is not stored) and its string metadata as __metadata__.
 * A tensor may not be named "__metadata__". */
ct_status ct_safetensors_save(const char *path, const ct_dict *tensors);
/* The same bytes into a new malloc'ed buffer (*out, *len); free it with free(). */
ct_status ct_safetensors_save_buffer(const ct_dict *tensors, void **out, size_t *len);

/* Reads a file into a new dict (*out; free with ct_dict_free), metadata included.
 * use_mmap = false: each tensor gets its own memory, read from the file.
 * use_mmap = true: the file is mapped privately (MAP_PRIVATE) and each tensor is a view
 * over its bytes in the mapping, through its own storage (so version counters stay per
 * tensor); the mapping lives until the last of those tensors is released (the dict
 * may be freed first). The file itself is never written: in-place changes to these
 * tensors stay in this process's copy-on-write pages. Keep the file unchanged while it
 * is mapped: truncating it under a live mapping makes the tensors' pages invalid
 * (SIGBUS), which is why ct_safetensors_save replaces files by renaming. A tensor whose
 * bytes are not aligned to its item size (possible in files of other writers) is
 * copied instead of mapped. */
ct_status ct_safetensors_load(const char *path, ct_dict **out, bool use_mmap);
/* Parses a whole file held in memory (e.g. fetched in a WebAssembly build); the tensors
 * are copies, so buf may be freed afterwards. */
ct_status ct_safetensors_load_buffer(const void *buf, size_t len, ct_dict **out);

/* ---- header only (ctorch inspect, tools) ------------------------------------------ */
typedef struct ct_safetensors_info ct_safetensors_info;
typedef struct {
  const char *name;
  const char *dtype_name; /* the file's dtype: "F32", "U16", "F8_E4M3", ... */
  ct_dtype dtype;         /* ctorch's dtype, or CT_NUM_DTYPES if ctorch has none for it */
  int ndim;
  const int64_t *shape;
  int64_t numel;
  int64_t begin, end;     /* byte range in the data buffer */
} ct_safetensors_entry;

/* Validates a file's header against its size (everything above except reading data). */
ct_safetensors_info *ct_safetensors_info_file(const char *path);
/* The same for a whole file held in memory. */
ct_safetensors_info *ct_safetensors_info_buffer(const void *buf, size_t len);
/* Parses and validates just the JSON header text (json, n bytes); data_len is the size
 * of the data buffer that follows it, or -1 when unknown (the coverage and bounds checks
 * that need it are skipped). */
ct_safetensors_info *ct_safetensors_parse_header(const char *json, size_t n, int64_t data_len);
void ct_safetensors_info_free(ct_safetensors_info *info); /* NULL-safe */
int64_t ct_safetensors_info_len(const ct_safetensors_info *info); /* tensors, in data-offset order */
ct_safetensors_entry ct_safetensors_info_entry(const ct_safetensors_info *info, int64_t i);
int64_t ct_safetensors_info_meta_len(const ct_safetensors_info *info);
const char *ct_safetensors_info_meta_key(const ct_safetensors_info *info, int64_t i);
const char *ct_safetensors_info_meta_value(const ct_safetensors_info *info, int64_t i);
int64_t ct_safetensors_info_header_len(const ct_safetensors_info *info); /* N */
int64_t ct_safetensors_info_data_len(const ct_safetensors_info *info);   /* -1 if unknown */

/* ---- checkpoints ------------------------------------------------------------------ */
/* A checkpoint is one safetensors file:
 *   tensors   "model.<name>"  every entry of model_state
 *             "optim.<name>"  every entry of optim_state
 *             "rng.cpu"       the generator's state (ct_generator_get_state), uint8 [5056]
 *   metadata  "ctorch.format" = "checkpoint", "ctorch.format_version" = "1",
 *             "ctorch.step" = the step count in decimal,
 *             "model.<key>" / "optim.<key>" the two dicts' own metadata,
 *             "user.<key>" the metadata of user_meta (its tensors are ignored).
 * If path is an existing directory the file is "<path>/checkpoint.safetensors".
 * optim_state, user_meta may be NULL; rng NULL means the default generator. */
#define CT_CHECKPOINT_FORMAT_VERSION 1
#define CT_CHECKPOINT_FILE "checkpoint.safetensors"
ct_status ct_checkpoint_save(const char *path, const ct_dict *model_state, const ct_dict *optim_state,
                             const ct_generator *rng, int64_t step, const ct_dict *user_meta);
/* Reads a checkpoint written by ct_checkpoint_save: new dicts with the prefixes removed
 * (*model_state, *optim_state, *user_meta: free with ct_dict_free; any out pointer may be
 * NULL to skip it), the step count, and the RNG state restored into rng (NULL = the
 * default generator). Refuses a file that is not a ctorch checkpoint, a newer format
 * version, unknown tensor prefixes, and a bad RNG state; on failure nothing is changed. */
ct_status ct_checkpoint_load(const char *path, ct_dict **model_state, ct_dict **optim_state, ct_generator *rng,
                             int64_t *step, ct_dict **user_meta, bool use_mmap);

#ifdef __cplusplus
}
#endif
#endif
