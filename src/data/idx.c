/* IDX files (the format of MNIST and its relatives), raw or gzip-compressed, and the MNIST
 * image/label pair. The header is a 2-byte zero, a type byte, a dimension count, then one
 * big-endian uint32 per dimension; the data follow, big-endian, row-major, and must be
 * exactly as long as the dimensions say. */
#include "ctorch/vision.h"
#include "data_internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The largest decompressed file accepted (bounds memory on a hostile .gz). */
#define IDX_MAX_BYTES ((uint64_t)1 << 34 < (uint64_t)(SIZE_MAX / 2) ? (size_t)((uint64_t)1 << 34) : SIZE_MAX / 2)

static ct_status idx_type(uint8_t code, ct_dtype *dt) {
  switch (code) {
  case 0x08: *dt = CT_UINT8; return CT_OK;
  case 0x09: *dt = CT_INT8; return CT_OK;
  case 0x0B: *dt = CT_INT16; return CT_OK;
  case 0x0C: *dt = CT_INT32; return CT_OK;
  case 0x0D: *dt = CT_FLOAT32; return CT_OK;
  case 0x0E: *dt = CT_FLOAT64; return CT_OK;
  default: return CT_ERR_VALUE;
  }
}

/* Parses the header at p (n bytes available); *hdr_len and *data_len get the header size and
 * the data size it declares. */
static ct_status idx_header(const uint8_t *p, size_t n, const char *what, ct_dtype *dt, int *ndim, int64_t *shape,
                            size_t *hdr_len, size_t *data_len) {
  if (n < 4) return ct_set_error(CT_ERR_RUNTIME, "%s: not an IDX file (shorter than its 4-byte magic number)", what);
  if (p[0] != 0 || p[1] != 0)
    return ct_set_error(CT_ERR_RUNTIME, "%s: not an IDX file (magic number %02x %02x %02x %02x does not start with two zero bytes)",
                        what, p[0], p[1], p[2], p[3]);
  if (idx_type(p[2], dt) != CT_OK)
    return ct_set_error(CT_ERR_RUNTIME, "%s: unknown IDX data type 0x%02X (expected 0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E)",
                        what, p[2]);
  int nd = p[3];
  if (nd < 1 || nd > CT_MAX_DIMS)
    return ct_set_error(CT_ERR_RUNTIME, "%s: IDX file with %d dimensions (ctorch reads 1 to %d)", what, nd, CT_MAX_DIMS);
  size_t hl = 4 + 4 * (size_t)nd;
  if (n < hl) return ct_set_error(CT_ERR_RUNTIME, "%s: IDX header truncated (%zu of its %zu bytes)", what, n, hl);
  int64_t total = (int64_t)ct_dtype_size(*dt);
  for (int d = 0; d < nd; d++) {
    const uint8_t *q = p + 4 + 4 * d;
    shape[d] = (int64_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]);
    if (!ct_mul_ok(total, shape[d], &total) || (uint64_t)total > (uint64_t)IDX_MAX_BYTES)
      return ct_set_error(CT_ERR_RUNTIME, "%s: IDX dimensions too large", what);
  }
  *ndim = nd;
  *hdr_len = hl;
  *data_len = (size_t)total;
  return CT_OK;
}

/* Decoded bytes -> tensor (checks the length, converts from big-endian). */
static ct_tensor *idx_tensor(const uint8_t *p, size_t n, const char *what) {
  ct_dtype dt;
  int nd;
  int64_t shape[CT_MAX_DIMS];
  size_t hl, dl;
  if (idx_header(p, n, what, &dt, &nd, shape, &hl, &dl) != CT_OK) return NULL;
  if (n - hl != dl) {
    ct_set_error(CT_ERR_RUNTIME, "%s: IDX data is %zu bytes but the header's dimensions need %zu (file %s)", what,
                 n - hl, dl, n - hl < dl ? "truncated" : "has trailing bytes");
    return NULL;
  }
  ct_tensor *t = ct_empty(nd, shape, ct_opts_dtype(dt));
  if (!t) return NULL;
  uint8_t *dst = ct_host_ptr(t);
  size_t es = ct_dtype_size(dt);
  const uint8_t *src = p + hl;
  if (es == 1) {
    if (dl) memcpy(dst, src, dl);
  } else {
    for (size_t i = 0; i < dl; i += es) /* big-endian to the host's little-endian order */
      for (size_t b = 0; b < es; b++) dst[i + b] = src[i + es - 1 - b];
  }
  return t;
}

ct_tensor *ct_idx_load_buffer_named(const void *buf, size_t len, const char *what) {
  if (!buf && len) {
    ct_set_error(CT_ERR_VALUE, "idx_load: buffer is NULL");
    return NULL;
  }
  if (!what) what = "<buffer>";
  const uint8_t *p = buf;
  if (!ct_is_gzip(p, len)) return idx_tensor(p, len, what);
  /* peek at the header to bound the decompressed size, then decode exactly that much */
  void *head = NULL, *all = NULL;
  size_t hn = 0, an = 0;
  if (ct_gunzip_prefix(p, len, 4 + 4 * CT_MAX_DIMS, what, &head, &hn) != CT_OK) return NULL;
  ct_dtype dt;
  int nd;
  int64_t shape[CT_MAX_DIMS];
  size_t hl, dl;
  ct_status st = idx_header(head, hn, what, &dt, &nd, shape, &hl, &dl);
  free(head);
  if (st != CT_OK) {
    /* a bad header may be damaged compressed data: check the whole stream (checksums) and report
     * that instead, within a memory bound */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ct_last_error());
    if (ct_gunzip(p, len, (size_t)1 << 26, what, &all, &an) == CT_OK || strstr(ct_last_error(), "larger than the limit"))
      ct_set_error(CT_ERR_RUNTIME, "%s", msg);
    free(all);
    return NULL;
  }
  /* one byte over the size so that trailing data is reported as such, not as a size limit */
  if (ct_gunzip(p, len, hl + dl + 1, what, &all, &an) != CT_OK) {
    if (strstr(ct_last_error(), "larger than the limit"))
      ct_set_error(CT_ERR_RUNTIME, "%s: IDX data longer than the header's dimensions need (%zu bytes)", what, dl);
    return NULL;
  }
  ct_tensor *t = idx_tensor(all, an, what);
  free(all);
  return t;
}

ct_tensor *ct_idx_load_buffer(const void *buf, size_t len) { return ct_idx_load_buffer_named(buf, len, NULL); }

ct_tensor *ct_idx_load(const char *path) {
  if (!path) {
    ct_set_error(CT_ERR_VALUE, "idx_load: path is NULL");
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    ct_set_error(CT_ERR_RUNTIME, "%s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    ct_set_error(CT_ERR_RUNTIME, "%s: not a regular file", path);
    return NULL;
  }
  if ((uint64_t)sb.st_size > (uint64_t)IDX_MAX_BYTES) {
    fclose(f);
    ct_set_error(CT_ERR_RUNTIME, "%s: file too large", path);
    return NULL;
  }
  size_t n = (size_t)sb.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    fclose(f);
    ct_set_error(CT_ERR_OOM, "%s: out of memory reading %zu bytes", path, n);
    return NULL;
  }
  size_t got = n ? fread(buf, 1, n, f) : 0;
  fclose(f);
  if (got != n) {
    free(buf);
    ct_set_error(CT_ERR_RUNTIME, "%s: read error", path);
    return NULL;
  }
  ct_tensor *t = ct_idx_load_buffer_named(buf, n, path);
  free(buf);
  return t;
}

/* dir/<prefix>-<kind>-idx<k>-ubyte[.gz] or the dotted spelling <prefix>-<kind>.idx<k>-ubyte. */
static bool find_file(const char *dir, const char *prefix, const char *kind, int k, char *out, size_t cap) {
  static const char *const forms[] = {"%s/%s-%s-idx%d-ubyte.gz", "%s/%s-%s-idx%d-ubyte", "%s/%s-%s.idx%d-ubyte.gz",
                                      "%s/%s-%s.idx%d-ubyte"};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    int w = snprintf(out, cap, forms[i], dir, prefix, kind, k);
    struct stat sb;
    if (w > 0 && (size_t)w < cap && stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) return true;
  }
  return false;
}

bool ct_mnist_exists(const char *dir, const char *prefix) {
  char a[4096], b[4096];
  return dir && prefix && find_file(dir, prefix, "images", 3, a, sizeof a) && find_file(dir, prefix, "labels", 1, b, sizeof b);
}

ct_status ct_mnist_load(const char *dir, const char *prefix, ct_tensor **images, ct_tensor **labels) {
  if (!dir || !prefix || !images || !labels) return ct_set_error(CT_ERR_VALUE, "mnist_load: NULL argument");
  *images = *labels = NULL;
  char ip[4096], lp[4096];
  if (!find_file(dir, prefix, "images", 3, ip, sizeof ip))
    return ct_set_error(CT_ERR_RUNTIME, "%s: no %s-images-idx3-ubyte[.gz] file", dir, prefix);
  if (!find_file(dir, prefix, "labels", 1, lp, sizeof lp))
    return ct_set_error(CT_ERR_RUNTIME, "%s: no %s-labels-idx1-ubyte[.gz] file", dir, prefix);
  ct_tensor *x = ct_idx_load(ip);
  if (!x) return ct_last_status();
  ct_tensor *y = ct_idx_load(lp);
  if (!y) {
    ct_release(x);
    return ct_last_status();
  }
  ct_status st = CT_OK;
  if (ct_tensor_dtype(x) != CT_UINT8 || ct_ndim(x) != 3)
    st = ct_set_error(CT_ERR_RUNTIME, "%s: expected unsigned bytes of shape [N, H, W] (an idx3-ubyte file)", ip);
  else if (ct_tensor_dtype(y) != CT_UINT8 || ct_ndim(y) != 1)
    st = ct_set_error(CT_ERR_RUNTIME, "%s: expected unsigned bytes of shape [N] (an idx1-ubyte file)", lp);
  else if (ct_size(x, 0) != ct_size(y, 0))
    st = ct_set_error(CT_ERR_RUNTIME, "%s has %lld images but %s has %lld labels", ip, (long long)ct_size(x, 0), lp,
                      (long long)ct_size(y, 0));
  ct_tensor *y64 = st == CT_OK ? ct_to_dtype(y, CT_INT64) : NULL;
  if (st == CT_OK && !y64) st = ct_last_status();
  ct_release(y);
  if (st != CT_OK) {
    ct_release(x);
    return st;
  }
  *images = x;
  *labels = y64;
  return CT_OK;
}
