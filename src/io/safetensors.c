/* safetensors: write (file, buffer) and read (file copy, file mmap, buffer), on top of the
 * strict header parser in st_header.c. */
#include "io_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader/writer assumes a little-endian host"
#endif

/* ---- a growable byte buffer ------------------------------------------------------------ */
typedef struct {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->oom = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* A JSON string as serde_json writes it (the reference writer): quote, backslash and
 * control characters escaped, everything else (UTF-8 included) verbatim. */
static void put_json_string(sbuf *b, const char *s) {
  put(b, "\"", 1);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    char e[8];
    switch (*c) {
      case '"': put(b, "\\\"", 2); break;
      case '\\': put(b, "\\\\", 2); break;
      case '\b': put(b, "\\b", 2); break;
      case '\f': put(b, "\\f", 2); break;
      case '\n': put(b, "\\n", 2); break;
      case '\r': put(b, "\\r", 2); break;
      case '\t': put(b, "\\t", 2); break;
      default:
        if (*c < 0x20) {
          snprintf(e, sizeof e, "\\u%04x", *c);
          put(b, e, 6);
        } else put(b, (const char *)c, 1);
    }
  }
  put(b, "\"", 1);
}

/* ---- writing --------------------------------------------------------------------------- */
typedef struct {
  const char *name;
  ct_tensor *t; /* contiguous CPU tensor (new reference) */
  int dt;
  int64_t nbytes;
} item;

static int cmp_item(const void *a, const void *b) {
  const item *x = a, *y = b;
  int rx = ct_st_dtypes[x->dt].rank, ry = ct_st_dtypes[y->dt].rank;
  if (rx != ry) return rx > ry ? -1 : 1; /* larger alignment first */
  return strcmp(x->name, y->name);      /* bytewise, like Rust's String ordering */
}

typedef struct {
  item *items;
  int64_t n;
  sbuf header; /* padded JSON */
  int64_t data_len;
} plan;

static void plan_free(plan *P) {
  for (int64_t i = 0; P->items && i < P->n; i++) ct_release(P->items[i].t);
  free(P->items);
  free(P->header.p);
}

static ct_status plan_make(const ct_dict *d, plan *P) {
  memset(P, 0, sizeof *P);
  if (!d) return CT_ERR(CT_ERR_VALUE, "ct_safetensors_save: tensors is NULL");
  int64_t n = ct_dict_len(d);
  P->items = ct_xcalloc((size_t)(n ? n : 1), sizeof *P->items);
  if (!P->items) return ct_last_status();
  bool grad = ct_set_grad_enabled(false); /* copies for saving need no graph */
  ct_status st = CT_OK;
  for (int64_t i = 0; i < n && st == CT_OK; i++) {
    const char *name = ct_dict_name(d, i);
    ct_tensor *t = ct_dict_tensor(d, i);
    if (!strcmp(name, "__metadata__")) {
      st = CT_ERR(CT_ERR_VALUE, "ct_safetensors_save: a tensor may not be named '__metadata__' (reserved for metadata)");
      break;
    }
    size_t bad;
    if (!ct_st_valid_utf8((const unsigned char *)name, strlen(name), &bad)) {
      st = CT_ERR(CT_ERR_VALUE, "ct_safetensors_save: tensor name '%.200s' is not valid UTF-8 (byte %zu)", name, bad);
      break;
    }
    ct_tensor *c = ct_tensor_device(t).type == CT_DEVICE_CPU ? ct_retain(t) : ct_to_device(t, ct_cpu());
    if (c && !ct_is_contiguous(c)) {
      ct_tensor *cc = ct_contiguous(c);
      ct_release(c);
      c = cc;
    }
    if (!c) {
      st = ct_last_status();
      break;
    }
    P->items[P->n].name = name;
    P->items[P->n].t = ct_own(c);
    P->items[P->n].dt = ct_st_dtype_of(ct_tensor_dtype(c));
    P->items[P->n].nbytes = ct_numel(c) * (int64_t)ct_dtype_size(ct_tensor_dtype(c));
    P->n++;
    if (__builtin_add_overflow(P->data_len, P->items[P->n - 1].nbytes, &P->data_len))
      st = CT_ERR(CT_ERR_VALUE, "ct_safetensors_save: total size overflows");
  }
  ct_set_grad_enabled(grad);
  CT_TRY(st);
  if (P->n > 1) qsort(P->items, (size_t)P->n, sizeof *P->items, cmp_item);

  for (int64_t i = 0; i < ct_dict_meta_len(d); i++) {
    const char *k = ct_dict_meta_key(d, i), *v = ct_dict_get_meta(d, k);
    size_t bad;
    if (!ct_st_valid_utf8((const unsigned char *)k, strlen(k), &bad) ||
        !ct_st_valid_utf8((const unsigned char *)v, strlen(v), &bad))
      return CT_ERR(CT_ERR_VALUE, "ct_safetensors_save: metadata entry '%.200s' is not valid UTF-8", k);
  }
  sbuf *b = &P->header;
  puts_(b, "{");
  bool first = true;
  if (ct_dict_meta_len(d) > 0) {
    puts_(b, "\"__metadata__\":{");
    for (int64_t i = 0; i < ct_dict_meta_len(d); i++) {
      const char *k = ct_dict_meta_key(d, i);
      if (i) puts_(b, ",");
      put_json_string(b, k);
      puts_(b, ":");
      put_json_string(b, ct_dict_get_meta(d, k));
    }
    puts_(b, "}");
    first = false;
  }
  int64_t off = 0;
  for (int64_t i = 0; i < P->n; i++) {
    item *it = &P->items[i];
    char num[64];
    if (!first) puts_(b, ",");
    first = false;
    put_json_string(b, it->name);
    puts_(b, ":{\"dtype\":\"");
    puts_(b, ct_st_dtypes[it->dt].name);
    puts_(b, "\",\"shape\":[");
    for (int k = 0; k < ct_ndim(it->t); k++) {
      snprintf(num, sizeof num, "%s%lld", k ? "," : "", (long long)ct_shape(it->t)[k]);
      puts_(b, num);
    }
    snprintf(num, sizeof num, "],\"data_offsets\":[%lld,%lld]}", (long long)off, (long long)(off + it->nbytes));
    puts_(b, num);
    off += it->nbytes;
  }
  puts_(b, "}");
  while (b->n % 8) puts_(b, " "); /* the reference pads to 8 bytes so data stays aligned */
  if (b->oom) return CT_ERR(CT_ERR_OOM, "CPU out of memory while writing a safetensors header");
  if ((int64_t)b->n > CT_ST_MAX_HEADER)
    return CT_ERR(CT_ERR_VALUE, "ct_safetensors_save: the header would be %zu bytes, more than readers accept (%lld)",
                  b->n, CT_ST_MAX_HEADER);
  return CT_OK;
}

static void le64(unsigned char *o, uint64_t v) {
  for (int k = 0; k < 8; k++) o[k] = (unsigned char)(v >> (8 * k));
}

ct_status ct_safetensors_save_buffer(const ct_dict *tensors, void **out, size_t *len) {
  if (!out || !len) return CT_ERR(CT_ERR_VALUE, "ct_safetensors_save_buffer: out and len must not be NULL");
  *out = NULL;
  *len = 0;
  plan P;
  ct_status st = plan_make(tensors, &P);
  if (st != CT_OK) {
    plan_free(&P);
    return st;
  }
  size_t total = 8 + P.header.n + (size_t)P.data_len;
  unsigned char *buf = ct_xmalloc(total);
  if (!buf) {
    plan_free(&P);
    return ct_last_status();
  }
  le64(buf, P.header.n);
  memcpy(buf + 8, P.header.p, P.header.n);
  size_t o = 8 + P.header.n;
  for (int64_t i = 0; i < P.n; i++) {
    if (P.items[i].nbytes) memcpy(buf + o, ct_host_ptr(P.items[i].t), (size_t)P.items[i].nbytes);
    o += (size_t)P.items[i].nbytes;
  }
  plan_free(&P);
  *out = buf;
  *len = total;
  return CT_OK;
}

static bool write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n > (1u << 30) ? (1u << 30) : n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

ct_status ct_safetensors_save(const char *path, const ct_dict *tensors) {
  if (!path || !*path) return CT_ERR(CT_ERR_VALUE, "ct_safetensors_save: path is empty");
  plan P;
  ct_status st = plan_make(tensors, &P);
  if (st != CT_OK) {
    plan_free(&P);
    return st;
  }
  /* a new file renamed over the old one: a mapping of the old file stays valid */
  size_t tl = strlen(path) + 32;
  char *tmp = ct_xmalloc(tl);
  if (!tmp) {
    plan_free(&P);
    return ct_last_status();
  }
  snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    st = CT_ERR(CT_ERR_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
    free(tmp);
    plan_free(&P);
    return st;
  }
  unsigned char n8[8];
  le64(n8, P.header.n);
  bool ok = write_all(fd, n8, 8) && write_all(fd, P.header.p, P.header.n);
  for (int64_t i = 0; ok && i < P.n; i++)
    if (P.items[i].nbytes) ok = write_all(fd, ct_host_ptr(P.items[i].t), (size_t)P.items[i].nbytes);
  int err = ok ? 0 : errno;
  if (ok && fsync(fd) != 0) {
    ok = false;
    err = errno;
  }
  if (close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    unlink(tmp);
    st = CT_ERR(CT_ERR_RUNTIME, "cannot write '%s': %s", path, strerror(err ? err : EIO));
  }
  free(tmp);
  plan_free(&P);
  return st;
}

/* ---- reading ----------------------------------------------------------------------------- */
typedef struct {
  void *addr;
  size_t len;
  int64_t refs;
} mapping;

static void mapping_unref(mapping *m) {
  if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    munmap(m->addr, m->len);
    free(m);
  }
}

static void mapped_storage_deleter(void *data, void *ctx) {
  (void)data;
  mapping_unref(ctx);
}

/* ctorch can hold the entry: a dtype of its own and at most CT_MAX_DIMS dims. */
static ct_status check_loadable(const ct_safetensors_entry *e) {
  if (e->dtype == CT_NUM_DTYPES)
    return CT_ERR(CT_ERR_RUNTIME, "tensor '%.200s': dtype %s is not supported by ctorch", e->name, e->dtype_name);
  if (e->ndim > CT_MAX_DIMS)
    return CT_ERR(CT_ERR_RUNTIME, "tensor '%.200s' has %d dimensions; ctorch supports at most %d", e->name, e->ndim,
                  CT_MAX_DIMS);
  return CT_OK;
}

/* BOOL bytes must be 0 or 1: other values would make kernels disagree about truth. */
static ct_status check_bools(const ct_safetensors_entry *e, const unsigned char *p) {
  if (e->dtype != CT_BOOL) return CT_OK;
  for (int64_t i = 0; i < e->numel; i++)
    if (p[i] > 1)
      return CT_ERR(CT_ERR_RUNTIME, "tensor '%.200s': BOOL element %lld holds %u (must be 0 or 1)", e->name,
                    (long long)i, p[i]);
  return CT_OK;
}

static ct_status add_to_dict(ct_dict *d, const char *name, ct_tensor *t) {
  ct_own(t); /* the dict holds it past the caller's scope */
  ct_status st = ct_dict_set(d, name, t);
  ct_release(t);
  return st;
}

static ct_status copy_meta(const ct_safetensors_info *I, ct_dict *d) {
  for (int64_t i = 0; i < ct_safetensors_info_meta_len(I); i++)
    CT_TRY(ct_dict_set_meta(d, ct_safetensors_info_meta_key(I, i), ct_safetensors_info_meta_value(I, i)));
  return CT_OK;
}

/* Dict of copies from a data buffer in memory (data = the first byte after the header). */
static ct_status dict_from_memory(const ct_safetensors_info *I, const unsigned char *data, mapping *map, ct_dict **out) {
  ct_dict *d = ct_dict_new();
  if (!d) return ct_last_status();
  ct_status st = copy_meta(I, d);
  for (int64_t i = 0; st == CT_OK && i < I->n; i++) {
    ct_safetensors_entry e = ct_safetensors_info_entry(I, i);
    const unsigned char *src = data + e.begin;
    if ((st = check_loadable(&e)) != CT_OK || (st = check_bools(&e, src)) != CT_OK) break;
    size_t isz = ct_dtype_size(e.dtype);
    ct_tensor *t;
    if (map && (uintptr_t)src % isz == 0) {
      int64_t stride[CT_MAX_DIMS];
      ct_contiguous_strides(e.ndim, e.shape, stride);
      ct_storage *s = ct_storage_from_external((void *)src, (size_t)(e.end - e.begin), mapped_storage_deleter, map);
      if (!s) {
        st = ct_last_status();
        break;
      }
      __atomic_add_fetch(&map->refs, 1, __ATOMIC_ACQ_REL);
      t = ct_tensor_over(s, e.ndim, e.shape, stride, 0, e.dtype);
      ct_storage_release(s);
    } else {
      t = ct_empty(e.ndim, e.shape, ct_opts_dtype(e.dtype));
      if (t && e.end > e.begin) memcpy(ct_host_ptr(t), src, (size_t)(e.end - e.begin));
    }
    if (!t) {
      st = ct_last_status();
      break;
    }
    st = add_to_dict(d, e.name, t);
  }
  if (st != CT_OK) {
    ct_dict_free(d);
    return st;
  }
  *out = d;
  return CT_OK;
}

ct_safetensors_info *ct_safetensors_info_buffer(const void *buf, size_t len) {
  if (!buf && len) {
    ct_set_error(CT_ERR_VALUE, "ct_safetensors_info_buffer: buf is NULL");
    return NULL;
  }
  ct_safetensors_info *I = ct_st_parse_file_prefix(buf, len, len);
  if (!I) ct_st_wrap_error("data");
  return I;
}

ct_status ct_safetensors_load_buffer(const void *buf, size_t len, ct_dict **out) {
  if (!out) return CT_ERR(CT_ERR_VALUE, "ct_safetensors_load_buffer: out is NULL");
  *out = NULL;
  if (!buf && len) return CT_ERR(CT_ERR_VALUE, "ct_safetensors_load_buffer: buf is NULL");
  ct_safetensors_info *I = ct_st_parse_file_prefix(buf, len, len);
  if (!I) return ct_st_wrap_error("data");
  ct_status st = dict_from_memory(I, (const unsigned char *)buf + 8 + I->header_len, NULL, out);
  ct_safetensors_info_free(I);
  if (st != CT_OK) ct_st_wrap_error("data");
  return st;
}

static bool read_at(int fd, void *p, size_t n, off_t off) {
  char *c = p;
  while (n) {
    ssize_t r = pread(fd, c, n > (1u << 30) ? (1u << 30) : n, off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= (size_t)r;
    off += r;
  }
  return true;
}

/* Opens path and reads + validates its header. */
static ct_safetensors_info *open_and_parse(const char *path, int *fd_out, uint64_t *size_out) {
  *fd_out = -1;
  if (!path || !*path) {
    ct_set_error(CT_ERR_VALUE, "safetensors: path is empty");
    return NULL;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ct_set_error(CT_ERR_RUNTIME, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ct_set_error(CT_ERR_RUNTIME, "cannot read '%s': %s", path, S_ISDIR(sb.st_mode) ? "it is a directory" : "not a regular file");
    close(fd);
    return NULL;
  }
  uint64_t size = (uint64_t)sb.st_size;
  unsigned char n8[8] = {0};
  ct_safetensors_info *I = NULL;
  if (size >= 8 && !read_at(fd, n8, 8, 0)) {
    ct_set_error(CT_ERR_RUNTIME, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
    close(fd);
    return NULL;
  }
  uint64_t n = 0;
  for (int k = 7; k >= 0; k--) n = (n << 8) | n8[k];
  if (size < 8 || n > (uint64_t)CT_ST_MAX_HEADER || n > size - 8) {
    I = ct_st_parse_file_prefix(n8, 8, size); /* fails with the right message */
  } else {
    unsigned char *h = ct_xmalloc((size_t)n + 8);
    if (!h) {
      close(fd);
      return NULL;
    }
    memcpy(h, n8, 8);
    if (!read_at(fd, h + 8, (size_t)n, 8)) ct_set_error(CT_ERR_RUNTIME, "cannot read '%s': short read", path);
    else I = ct_st_parse_file_prefix(h, (size_t)n + 8, size);
    free(h);
  }
  if (!I) {
    char where[600];
    snprintf(where, sizeof where, "file '%.500s'", path);
    ct_st_wrap_error(where);
    close(fd);
    return NULL;
  }
  *fd_out = fd;
  *size_out = size;
  return I;
}

ct_safetensors_info *ct_safetensors_info_file(const char *path) {
  int fd;
  uint64_t size;
  ct_safetensors_info *I = open_and_parse(path, &fd, &size);
  if (I) close(fd);
  return I;
}

ct_status ct_safetensors_load(const char *path, ct_dict **out, bool use_mmap) {
  if (!out) return CT_ERR(CT_ERR_VALUE, "ct_safetensors_load: out is NULL");
  *out = NULL;
  int fd;
  uint64_t size;
  ct_safetensors_info *I = open_and_parse(path, &fd, &size);
  if (!I) return ct_last_status();
  ct_status st = CT_OK;
  int64_t data_start = 8 + I->header_len;
  if (use_mmap) {
    void *addr = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    mapping *m = addr == MAP_FAILED ? NULL : ct_xcalloc(1, sizeof *m);
    if (!m) {
      st = CT_ERR(CT_ERR_RUNTIME, "cannot map '%s': %s", path, addr == MAP_FAILED ? strerror(errno) : "out of memory");
      if (addr != MAP_FAILED) munmap(addr, (size_t)size);
    } else {
      m->addr = addr;
      m->len = (size_t)size;
      m->refs = 1; /* ours until the tensors hold theirs */
      st = dict_from_memory(I, (const unsigned char *)addr + data_start, m, out);
      mapping_unref(m);
    }
  } else {
    ct_dict *d = ct_dict_new();
    st = d ? copy_meta(I, d) : ct_last_status();
    for (int64_t i = 0; st == CT_OK && i < I->n; i++) {
      ct_safetensors_entry e = ct_safetensors_info_entry(I, i);
      if ((st = check_loadable(&e)) != CT_OK) break;
      ct_tensor *t = ct_empty(e.ndim, e.shape, ct_opts_dtype(e.dtype));
      if (!t) {
        st = ct_last_status();
        break;
      }
      if (e.end > e.begin && !read_at(fd, ct_host_ptr(t), (size_t)(e.end - e.begin), (off_t)(data_start + e.begin))) {
        ct_release(t);
        st = CT_ERR(CT_ERR_RUNTIME, "cannot read '%s': the file was shortened while reading tensor '%.200s'", path,
                    e.name);
        break;
      }
      if ((st = check_bools(&e, ct_host_ptr(t))) != CT_OK) {
        ct_release(t);
        break;
      }
      st = add_to_dict(d, e.name, t);
    }
    if (st == CT_OK) *out = d;
    else ct_dict_free(d);
  }
  close(fd);
  ct_safetensors_info_free(I);
  if (st != CT_OK && st != CT_ERR_OOM && !strstr(ct_last_error(), "cannot ")) {
    char where[600];
    snprintf(where, sizeof where, "file '%.500s'", path);
    ct_st_wrap_error(where);
  }
  return st;
}
