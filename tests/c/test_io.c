/* safetensors read/write (file, mmap, buffer), the strict header parser, the damaged-file
 * corpus (tests/fuzz/damaged), reference files made with PyTorch (tests/safetensors_ref.py)
 * and the reference writer's own byte vectors, and checkpoints that resume bit for bit. */
#include "test.h"
#include "ctorch/optim.h"
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------- */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

static bool spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

typedef struct {
  char dir[64];
} tmpdir;
static void tmp_make(tmpdir *t) {
  snprintf(t->dir, sizeof t->dir, "/tmp/ct_io_XXXXXX");
  if (!mkdtemp(t->dir)) t->dir[0] = 0;
}
static void tmp_path(const tmpdir *t, const char *name, char *out, size_t n) { snprintf(out, n, "%s/%s", t->dir, name); }
static void tmp_free(tmpdir *t) {
  DIR *d = opendir(t->dir);
  struct dirent *e;
  char p[512];
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", t->dir, e->d_name);
      unlink(p);
    }
  if (d) closedir(d);
  rmdir(t->dir);
}

/* byte-identical tensors: dtype, shape and contents */
static bool same_tensor(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b || ct_tensor_dtype(a) != ct_tensor_dtype(b) || ct_ndim(a) != ct_ndim(b)) return false;
  for (int d = 0; d < ct_ndim(a); d++)
    if (ct_shape(a)[d] != ct_shape(b)[d]) return false;
  ct_tensor *ca = ct_contiguous(a), *cb = ct_contiguous(b);
  bool ok = ca && cb && !memcmp(ct_data_ptr(ca), ct_data_ptr(cb), (size_t)ct_numel(a) * ct_dtype_size(ct_tensor_dtype(a)));
  ct_release(ca);
  ct_release(cb);
  return ok;
}

/* The values of tests/safetensors_ref.py: exact in every dtype. */
static ct_tensor *ref_values(ct_dtype dt, int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) {
    if (dt == CT_BOOL) v[i] = i % 3 == 0;
    else if (dt == CT_UINT8) v[i] = (double)((37 * i) % 251);
    else if (ct_dtype_is_floating(dt)) v[i] = (double)((37 * i) % 23 - 11) / 4;
    else v[i] = (double)((37 * i) % 23 - 11);
  }
  ct_tensor *t = ct_from_buffer(v, CT_FLOAT64, ndim, shape, ct_opts_dtype(dt));
  free(v);
  return t;
}

static const char *REF_NOTE = "quote \" backslash \\ tab \t newline \n bell \x07 \xc3\xa9 \xe2\x9c\x93";

/* the same tensors and metadata as all_dtypes() in tests/safetensors_ref.py */
static ct_dict *ref_dict(void) {
  static const struct {
    const char *name;
    ct_dtype dt;
    int ndim;
    int64_t shape[3];
  } S[] = {
      {"w.f32", CT_FLOAT32, 2, {2, 3}}, {"w.f64", CT_FLOAT64, 1, {3}},   {"w.f16", CT_FLOAT16, 2, {2, 2}},
      {"w.bf16", CT_BFLOAT16, 1, {5}},  {"w.i8", CT_INT8, 1, {4}},       {"w.u8", CT_UINT8, 2, {3, 1}},
      {"w.i16", CT_INT16, 1, {2}},      {"w.i32", CT_INT32, 3, {2, 2, 1}}, {"w.i64", CT_INT64, 1, {3}},
      {"w.bool", CT_BOOL, 1, {4}},      {"scalar", CT_FLOAT64, 0, {0}},  {"empty", CT_FLOAT32, 2, {0, 3}},
      {"a.first", CT_FLOAT32, 1, {1}},
  };
  ct_dict *d = ct_dict_new();
  for (size_t i = 0; i < sizeof S / sizeof S[0]; i++) {
    ct_tensor *t = ref_values(S[i].dt, S[i].ndim, S[i].shape); /* the test's scope releases ours */
    ct_dict_set(d, S[i].name, t);
  }
  ct_dict_set_meta(d, "format", "pt");
  ct_dict_set_meta(d, "note", REF_NOTE);
  return d;
}

/* every tensor of want is in got, identical; metadata equal */
static bool same_dict(const ct_dict *got, const ct_dict *want) {
  if (!got || ct_dict_len(got) != ct_dict_len(want) || ct_dict_meta_len(got) != ct_dict_meta_len(want)) return false;
  for (int64_t i = 0; i < ct_dict_len(want); i++)
    if (!same_tensor(ct_dict_get(got, ct_dict_name(want, i)), ct_dict_tensor(want, i))) {
      fprintf(stderr, "    tensor %s differs\n", ct_dict_name(want, i));
      return false;
    }
  for (int64_t i = 0; i < ct_dict_meta_len(want); i++) {
    const char *k = ct_dict_meta_key(want, i), *v = ct_dict_get_meta(got, k);
    if (!v || strcmp(v, ct_dict_get_meta(want, k))) return false;
  }
  return true;
}

#define FIXTURES "tests/fixtures/safetensors/"

/* ---- the writer reproduces the reference writer's bytes ------------------------------- */
static const unsigned char RUST_SERIALIZATION[] = {
    64,  0,   0,   0,   0,   0,  0,   0,   123, 34,  97,  116, 116, 110, 46,  48,  34, 58,  123, 34,
    100, 116, 121, 112, 101, 34, 58,  34,  70,  51,  50,  34,  44,  34,  115, 104, 97, 112, 101, 34,
    58,  91,  49,  44,  50,  44, 51,  93,  44,  34,  100, 97,  116, 97,  95,  111, 102, 102, 115, 101,
    116, 115, 34,  58,  91,  48, 44,  50,  52,  93,  125, 125, 0,   0,   0,   0,   0,  0,   128, 63,
    0,   0,   0,   64,  0,   0,  64,  64,  0,   0,   128, 64,  0,   0,   160, 64};
static const unsigned char RUST_EMPTY[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};
static const unsigned char RUST_EMPTY_META[] = {40,  0,   0,   0,   0,   0,   0,   0,   123, 34,  95,  95,
                                                109, 101, 116, 97,  100, 97,  116, 97,  95,  95,  34,  58,
                                                123, 34,  102, 114, 97,  109, 101, 119, 111, 114, 107, 34,
                                                58,  34,  112, 116, 34,  125, 125, 32,  32,  32,  32,  32};

TEST(io_reference_writer_vectors) {
  /* huggingface/safetensors' serialize() output for these inputs, from its own tests */
  float six[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[3] = {1, 2, 3};
  ct_tensor *t = ct_from_floats(six, 3, shape);
  ct_dict *d = ct_dict_new();
  ct_dict_set(d, "attn.0", t);
  void *buf;
  size_t len;
  CHECK_OK(ct_safetensors_save_buffer(d, &buf, &len));
  CHECK(len == sizeof RUST_SERIALIZATION && !memcmp(buf, RUST_SERIALIZATION, len));
  free(buf);
  ct_dict *back = NULL;
  CHECK_OK(ct_safetensors_load_buffer(RUST_SERIALIZATION, sizeof RUST_SERIALIZATION, &back));
  CHECK(same_dict(back, d));
  ct_dict_free(back);
  ct_dict_free(d);

  d = ct_dict_new();
  CHECK_OK(ct_safetensors_save_buffer(d, &buf, &len));
  CHECK(len == sizeof RUST_EMPTY && !memcmp(buf, RUST_EMPTY, len));
  free(buf);
  ct_dict_set_meta(d, "framework", "pt");
  CHECK_OK(ct_safetensors_save_buffer(d, &buf, &len));
  CHECK(len == sizeof RUST_EMPTY_META && !memcmp(buf, RUST_EMPTY_META, len));
  free(buf);
  CHECK_OK(ct_safetensors_load_buffer(RUST_EMPTY_META, sizeof RUST_EMPTY_META, &back));
  CHECK(back && ct_dict_len(back) == 0 && back && !strcmp(ct_dict_get_meta(back, "framework"), "pt"));
  ct_dict_free(back);
  ct_dict_free(d);
}

/* ---- PyTorch-made reference files ----------------------------------------------------- */
TEST(io_reference_files_from_pytorch) {
  size_t len;
  unsigned char *ref = slurp(FIXTURES "all_dtypes.safetensors", &len);
  if (!ref) {
    ct_test_fail(__FILE__, __LINE__, "cannot read " FIXTURES "all_dtypes.safetensors (run from the repository root)");
    return;
  }
  ct_dict *want = ref_dict();
  /* our bytes equal the reference layout for the same tensors and metadata */
  void *buf;
  size_t n;
  CHECK_OK(ct_safetensors_save_buffer(want, &buf, &n));
  CHECK(n == len && !memcmp(buf, ref, len));
  free(buf);
  /* and every reader returns the same tensors */
  ct_dict *got = NULL;
  CHECK_OK(ct_safetensors_load_buffer(ref, len, &got));
  CHECK(same_dict(got, want));
  /* file order: descending alignment, then name */
  CHECK(got && !strcmp(ct_dict_name(got, 0), "w.i64") && !strcmp(ct_dict_name(got, ct_dict_len(got) - 1), "w.bool"));
  ct_dict_free(got);
  for (int m = 0; m < 2; m++) {
    CHECK_OK(ct_safetensors_load(FIXTURES "all_dtypes.safetensors", &got, m == 1));
    CHECK(same_dict(got, want));
    ct_dict_free(got);
  }
  free(ref);
  ct_dict_free(want);

  /* another writer's layout: any key order, metadata last, pretty JSON, \u escapes,
   * unaligned data (the mmap reader copies those tensors) */
  for (int m = 0; m < 2; m++) {
    got = NULL;
    CHECK_OK(ct_safetensors_load(FIXTURES "other_writer.safetensors", &got, m == 1));
    if (!got) continue;
    CHECK(ct_dict_len(got) == 4 && !strcmp(ct_dict_name(got, 0), "b.i16") && !strcmp(ct_dict_name(got, 3), "d.f32"));
    CHECK(!strcmp(ct_dict_get_meta(got, "writer"), "other \xc3\xa9"));
    int64_t s2[2] = {2, 2}, s1[1] = {2}, s3[1] = {3};
    ct_tensor *e1 = ref_values(CT_FLOAT32, 2, s2), *e2 = ref_values(CT_FLOAT64, 1, s1), *e3 = ref_values(CT_INT16, 1, s3);
    CHECK(same_tensor(ct_dict_get(got, "d.f32"), e1) && same_tensor(ct_dict_get(got, "a.f64"), e2) &&
          same_tensor(ct_dict_get(got, "b.i16"), e3));
    for (int64_t i = 0; i < ct_dict_len(got); i++) {
      ct_tensor *t = ct_dict_tensor(got, i);
      CHECK((uintptr_t)ct_data_ptr(t) % ct_dtype_size(ct_tensor_dtype(t)) == 0);
    }
    ct_release(e1);
    ct_release(e2);
    ct_release(e3);
    ct_dict_free(got);
  }
  CHECK_OK(ct_safetensors_load(FIXTURES "rust_serialization.safetensors", &got, true));
  CHECK(got && ct_dict_len(got) == 1 && tt_at(ct_dict_get(got, "attn.0"), 5) == 5.0);
  ct_dict_free(got);
}

/* Files for tests/safetensors_ref.py check (run by tests/test_io.sh): CT_ST_OUT names
 * the folder; without it they go to a temporary folder that is removed. */
TEST(io_writes_for_python) {
  const char *out = getenv("CT_ST_OUT");
  tmpdir td;
  tmp_make(&td);
  const char *dir = out ? out : td.dir;
  char p[512];
  ct_dict *d = ref_dict();
  snprintf(p, sizeof p, "%s/c_all_dtypes.safetensors", dir);
  CHECK_OK(ct_safetensors_save(p, d));
  ct_dict *m = ct_dict_new();
  ct_tensor *w = ct_dict_get(d, "w.f32");
  ct_dict_set(m, "fc.weight", w);
  ct_manual_seed(42);
  snprintf(p, sizeof p, "%s/c_checkpoint.safetensors", dir);
  CHECK_OK(ct_checkpoint_save(p, m, NULL, NULL, 3, NULL));
  ct_dict_free(m);
  ct_dict_free(d);
  tmp_free(&td);
}

/* ---- round trips ------------------------------------------------------------------------ */
TEST(io_roundtrip_layouts_and_mmap) {
  tmpdir td;
  tmp_make(&td);
  char path[512];
  tmp_path(&td, "a.safetensors", path, sizeof path);
  /* non-contiguous, offset view, requires_grad, 0-dim, empty */
  int64_t s[2] = {3, 4};
  ct_tensor *base = ref_values(CT_FLOAT32, 2, s);
  ct_tensor *tr = ct_t(base);                 /* [4, 3] transposed view */
  ct_tensor *row = ct_select(base, 0, 1);     /* offset view */
  ct_tensor *g = ct_clone(base);
  ct_requires_grad_(g, true);
  ct_tensor *z = ct_scalar_tensor(ct_sf(2.5), ct_opts_dtype(CT_FLOAT64));
  int64_t s0[2] = {0, 5};
  ct_tensor *e = ct_zeros(2, s0, ct_opts_dtype(CT_INT64));
  ct_dict *d = ct_dict_new();
  ct_dict_set(d, "tr", tr);
  ct_dict_set(d, "row", row);
  ct_dict_set(d, "grad", g);
  ct_dict_set(d, "zero_dim", z);
  ct_dict_set(d, "empty", e);
  CHECK_OK(ct_safetensors_save(path, d));
  for (int m = 0; m < 2; m++) {
    ct_dict *got = NULL;
    CHECK_OK(ct_safetensors_load(path, &got, m == 1));
    CHECK(same_dict(got, d));
    if (!got) continue;
    CHECK(!ct_requires_grad(ct_dict_get(got, "grad")));
    CHECK(ct_is_contiguous(ct_dict_get(got, "tr")) && ct_ndim(ct_dict_get(got, "zero_dim")) == 0);
    ct_dict_free(got);
  }

  /* mmap: tensors outlive the dict; writes stay private; the file is replaced (renamed),
   * so a live mapping keeps the old contents when the path is saved again */
  ct_dict *mapped = NULL;
  CHECK_OK(ct_safetensors_load(path, &mapped, true));
  ct_tensor *mt = mapped ? ct_retain(ct_dict_get(mapped, "tr")) : NULL;
  ct_tensor *mz = mapped ? ct_retain(ct_dict_get(mapped, "zero_dim")) : NULL;
  ct_dict_free(mapped);
  if (mt && mz) {
    uint64_t v0 = ct_version(mz);
    CHECK_OK(ct_fill_(mt, ct_sf(7.0))); /* writable, copy-on-write */
    CHECK(tt_at(mt, 0) == 7.0 && ct_version(mz) == v0); /* own storage: own version counter */
    ct_dict *again = NULL;
    CHECK_OK(ct_safetensors_load(path, &again, false));
    CHECK(again && same_tensor(ct_dict_get(again, "tr"), tr)); /* the file is unchanged */
    ct_dict_free(again);
    ct_dict *other = ct_dict_new();
    ct_dict_set(other, "zero_dim", e);
    CHECK_OK(ct_safetensors_save(path, other)); /* replaces the file under the mapping */
    ct_dict_free(other);
    CHECK(tt_at(mz, 0) == 2.5 && tt_at(mt, 1) == 7.0);
  }
  ct_release(mt);
  ct_release(mz);

  /* buffer round trip */
  void *buf;
  size_t len;
  CHECK_OK(ct_safetensors_save_buffer(d, &buf, &len));
  ct_dict *got = NULL;
  CHECK_OK(ct_safetensors_load_buffer(buf, len, &got));
  CHECK(same_dict(got, d));
  ct_dict_free(got);
  /* every strict prefix of a valid file is refused */
  for (size_t cut = 0; cut < len; cut++) {
    ct_dict *bad = (ct_dict *)1;
    ct_clear_error();
    CHECK(ct_safetensors_load_buffer(buf, cut, &bad) != CT_OK && bad == NULL);
  }
  free(buf);
  ct_dict_free(d);
  ct_release(base);
  ct_release(tr);
  ct_release(row);
  ct_release(g);
  ct_release(z);
  ct_release(e);
  tmp_free(&td);
}

TEST(io_argument_errors) {
  ct_dict *d = ct_dict_new(), *out = NULL;
  void *buf;
  size_t len;
  CHECK_ERR(ct_safetensors_save(NULL, d), "path is empty");
  CHECK_ERR(ct_safetensors_save("/tmp/x.safetensors", NULL), "tensors is NULL");
  CHECK_ERR(ct_safetensors_save_buffer(d, NULL, &len), "must not be NULL");
  CHECK_ERR(ct_safetensors_load(NULL, &out, false), "path is empty");
  CHECK_ERR(ct_safetensors_load("/tmp/x", NULL, false), "out is NULL");
  CHECK_ERR(ct_safetensors_load("/nonexistent/dir/file.safetensors", &out, false), "No such file");
  CHECK_ERR(ct_safetensors_load("/tmp", &out, true), "directory");
  CHECK_ERR(ct_safetensors_load_buffer(NULL, 10, &out), "buf is NULL");
  CHECK_ERR(ct_safetensors_save("/nonexistent/dir/file.safetensors", d), "cannot write");
  ct_tensor *t = ct_zeros(0, NULL, ct_opts());
  ct_dict_set(d, "__metadata__", t);
  CHECK_ERR(ct_safetensors_save_buffer(d, &buf, &len), "reserved");
  CHECK(ct_last_status() == CT_ERR_VALUE);
  ct_dict_remove(d, "__metadata__");
  ct_dict_set(d, "bad\xff", t); /* the writer never writes what readers must refuse */
  CHECK_ERR(ct_safetensors_save_buffer(d, &buf, &len), "is not valid UTF-8");
  ct_dict_remove(d, "bad\xff");
  ct_dict_set_meta(d, "k", "\xc0\xaf");
  CHECK_ERR(ct_safetensors_save_buffer(d, &buf, &len), "metadata entry 'k' is not valid UTF-8");
  ct_release(t);
  ct_dict_free(d);
  CHECK(ct_safetensors_info_file(NULL) == NULL);
  CHECK(ct_safetensors_parse_header(NULL, 3, 0) == NULL);
  ct_safetensors_info_free(NULL);
  CHECK(ct_safetensors_info_len(NULL) == 0);
}

/* ---- the header parser, case by case --------------------------------------------------- */
TEST(io_header_parser_cases) {
  static const struct {
    const char *json;
    int64_t data_len;
    const char *err; /* NULL: accepted */
  } C[] = {
      {"{}", 0, NULL},
      {"{}  \t\n\r ", 0, NULL},
      {"{ \"a\" : { \"shape\" : [ ] , \"dtype\" : \"U8\" , \"data_offsets\" : [ 0 , 1 ] } }", 1, NULL},
      {"{\"a\":{\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, NULL}, /* valid, unsupported by ctorch */
      {"{\"a\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1, NULL},
      {"{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 1, "not a whole number of bytes"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},\"b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, NULL},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", -1, NULL},           /* length unknown */
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", -1, "hole"},         /* still checked */
      {"{\"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, NULL},
      {"{\"__metadata__\":{}}", 0, NULL},
      {"{\"__metadata__\":{\"a\":\"\"}}", 0, NULL},
      {"", 0, "must begin with '{'"},
      {"{", 0, "expected a string"},
      {"{\"a\"", 0, "expected ':'"},
      {"{\"a\":", 0, "expected an object"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "expected ',' or '}'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}", 4, "expected a non-negative integer"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1 2],\"data_offsets\":[0,4]}}", 4, "expected ',' or ']'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-0],\"data_offsets\":[0,0]}}", 0, "negative value"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.5]}}", 4, "fraction or exponent"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,4]}}", 4, "too large"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775807],\"data_offsets\":[0,4]}}", 4, "overflows"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "4 trailing bytes"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 2, "beyond the end of the data buffer (2 bytes)"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":null}}", 4, "must be an array [begin, end]"},
      {"{\"a\":{\"dtype\":null,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype must be a string"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]}}", 4, "shape must be an array"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "more than 64 dimensions"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"\\u0061\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "duplicate tensor name 'a'"},
      {"{\"a\\\"b\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}", 0, "tensor 'a\"b': unknown dtype 'X'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}\x01", 4, "after the header's closing"},
      {"{\"\\ud83d\\u0041\":{}}", 0, "high surrogate not followed by a low one"},
      {"{\"\\u12\":{}}", 0, "bad \\u escape"},
      {"{\"a\\", 0, "unterminated string"},
      {"{\"\xf4\x90\x80\x80\":{}}", 0, "not valid UTF-8"}, /* past U+10FFFF */
      {"{\"\xe2\x82\":{}}", 0, "not valid UTF-8"},         /* truncated sequence */
  };
  for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
    ct_clear_error();
    ct_safetensors_info *I = ct_safetensors_parse_header(C[i].json, strlen(C[i].json), C[i].data_len);
    if (C[i].err == NULL) {
      if (!I) ct_test_fail(__FILE__, __LINE__, "case %zu (%s) refused: %s", i, C[i].json, ct_last_error());
    } else if (I) {
      ct_test_fail(__FILE__, __LINE__, "case %zu (%s) accepted, expected '%s'", i, C[i].json, C[i].err);
    } else if (!strstr(ct_last_error(), C[i].err) || ct_last_status() != CT_ERR_RUNTIME) {
      ct_test_fail(__FILE__, __LINE__, "case %zu: error '%s' lacks '%s'", i, ct_last_error(), C[i].err);
    }
    ct_safetensors_info_free(I);
  }
  /* the info API */
  const char *h = "{\"__metadata__\":{\"k\":\"v\"},\"b\":{\"dtype\":\"U32\",\"shape\":[2,1],\"data_offsets\":[2,10]},"
                  "\"a\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[0,2]}}";
  ct_safetensors_info *I = ct_safetensors_parse_header(h, strlen(h), 10);
  CHECK(I && ct_safetensors_info_len(I) == 2 && ct_safetensors_info_meta_len(I) == 1);
  if (I) {
    ct_safetensors_entry a = ct_safetensors_info_entry(I, 0), b = ct_safetensors_info_entry(I, 1);
    CHECK(!strcmp(a.name, "a") && a.dtype == CT_INT16 && a.ndim == 1 && a.shape[0] == 1 && a.begin == 0 && a.end == 2);
    CHECK(!strcmp(b.name, "b") && b.dtype == CT_NUM_DTYPES && !strcmp(b.dtype_name, "U32") && b.numel == 2);
    CHECK(!strcmp(ct_safetensors_info_meta_key(I, 0), "k") && !strcmp(ct_safetensors_info_meta_value(I, 0), "v"));
    CHECK(ct_safetensors_info_header_len(I) == (int64_t)strlen(h) && ct_safetensors_info_data_len(I) == 10);
    CHECK(ct_safetensors_info_entry(I, 2).name == NULL && ct_safetensors_info_meta_key(I, 1) == NULL);
  }
  ct_safetensors_info_free(I);
}

/* A valid file that ctorch cannot hold: refused on load, readable by info. */
static void check_unloadable(const char *json, size_t data_len, const char *err) {
  size_t n = strlen(json), total = 8 + n + data_len;
  unsigned char *f = calloc(1, total);
  for (int k = 0; k < 8; k++) f[k] = (unsigned char)((uint64_t)n >> (8 * k));
  memcpy(f + 8, json, n);
  memset(f + 8 + n, 2, data_len);
  ct_dict *out = NULL;
  CHECK_ERR(ct_safetensors_load_buffer(f, total, &out), err);
  CHECK(out == NULL);
  ct_safetensors_info *I = ct_safetensors_info_buffer(f, total);
  CHECK(I != NULL);
  ct_safetensors_info_free(I);
  tmpdir td;
  tmp_make(&td);
  char p[512];
  tmp_path(&td, "u.safetensors", p, sizeof p);
  spit(p, f, total);
  for (int m = 0; m < 2; m++) CHECK_ERR(ct_safetensors_load(p, &out, m == 1), err);
  tmp_free(&td);
  free(f);
}

TEST(io_valid_but_unloadable) {
  check_unloadable("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                   "\"u\":{\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[4,8]}}",
                   8, "tensor 'u': dtype U16 is not supported by ctorch");
  check_unloadable("{\"x\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
                   "tensor 'x' has 9 dimensions; ctorch supports at most 8");
  check_unloadable("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3,
                   "tensor 'b': BOOL element 0 holds 2 (must be 0 or 1)");
}

/* ---- the damaged-file corpus ------------------------------------------------------------ */
TEST(io_damaged_corpus) {
  const char *dir = "tests/fuzz/damaged/";
  char path[512];
  snprintf(path, sizeof path, "%sMANIFEST", dir);
  size_t mlen;
  char *man = (char *)slurp(path, &mlen);
  if (!man) {
    ct_test_fail(__FILE__, __LINE__, "cannot read %s (run from the repository root)", path);
    return;
  }
  man[mlen] = 0;
  int n = 0;
  for (char *line = strtok(man, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] == '#') continue;
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = 0;
    const char *file = line, *want = tab + 1;
    snprintf(path, sizeof path, "%s%s", dir, file);
    size_t len;
    unsigned char *data = slurp(path, &len);
    if (!data) {
      ct_test_fail(__FILE__, __LINE__, "cannot read %s", path);
      continue;
    }
    n++;
    /* every reader refuses it with the expected reason (and the tensor's name) */
    for (int how = 0; how < 5; how++) {
      ct_dict *out = NULL;
      ct_safetensors_info *I = NULL;
      ct_status st;
      ct_clear_error();
      if (how == 0) st = ct_safetensors_load_buffer(data, len, &out);
      else if (how == 1) st = ct_safetensors_load(path, &out, false);
      else if (how == 2) st = ct_safetensors_load(path, &out, true);
      else {
        I = how == 3 ? ct_safetensors_info_file(path) : ct_safetensors_info_buffer(data, len);
        st = I ? CT_OK : ct_last_status();
      }
      if (st == CT_OK || out || I)
        ct_test_fail(__FILE__, __LINE__, "%s: reader %d accepted a damaged file (expected '%s')", file, how, want);
      else if (!strstr(ct_last_error(), want))
        ct_test_fail(__FILE__, __LINE__, "%s: reader %d: error '%s' lacks '%s'", file, how, ct_last_error(), want);
      else if (st != CT_ERR_RUNTIME)
        ct_test_fail(__FILE__, __LINE__, "%s: reader %d: status %d, expected CT_ERR_RUNTIME", file, how, (int)st);
      ct_dict_free(out);
      ct_safetensors_info_free(I);
    }
    free(data);
  }
  free(man);
  CHECK(n >= 60);
}

/* Every single-byte corruption of a valid file is accepted or refused cleanly, and what is
 * accepted round-trips (a quick in-test fuzz; tests/fuzz has the coverage-guided one). */
TEST(io_byte_flips) {
  ct_dict *d = ref_dict();
  void *buf;
  size_t len;
  CHECK_OK(ct_safetensors_save_buffer(d, &buf, &len));
  unsigned char *b = buf;
  static const unsigned char vals[] = {0, 1, '"', '{', '}', '[', ']', ',', ':', '-', '9', ' ', 0x80, 0xff};
  int accepted = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char keep = b[i];
    for (size_t v = 0; v < sizeof vals; v++) {
      if (vals[v] == keep) continue;
      b[i] = vals[v];
      ct_dict *out = NULL;
      if (ct_safetensors_load_buffer(b, len, &out) == CT_OK) {
        accepted++;
        void *b2;
        size_t l2;
        ct_dict *again = NULL;
        CHECK_OK(ct_safetensors_save_buffer(out, &b2, &l2));
        CHECK_OK(ct_safetensors_load_buffer(b2, l2, &again));
        CHECK(same_dict(again, out));
        ct_dict_free(again);
        free(b2);
      } else CHECK(out == NULL && ct_last_error()[0]);
      ct_dict_free(out);
    }
    b[i] = keep;
  }
  CHECK(accepted > 0); /* data bytes (and some header bytes) may change validly */
  free(buf);
  ct_dict_free(d);
}

/* ---- checkpoints --------------------------------------------------------------------------- */
#define NP 4
static const char *PN[NP] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};

typedef struct {
  ct_tensor *p[NP], *m[NP]; /* parameters, momentum buffers (hand-written SGD) */
  ct_optim *opt;           /* or AdamW from optim.h */
} net;

static void net_init(net *n, bool adamw) {
  static const int64_t S[NP][2] = {{8, 4}, {8, 0}, {1, 8}, {1, 0}};
  ct_generator *g = ct_generator_new(7);
  for (int k = 0; k < NP; k++) {
    int nd = S[k][1] ? 2 : 1;
    ct_tensor *r = ct_randn(nd, S[k], ct_opts(), g);
    n->p[k] = ct_mul_scalar(r, ct_sf(0.5));
    ct_release(r);
    ct_requires_grad_(n->p[k], true);
    n->m[k] = ct_zeros(nd, S[k], ct_opts());
  }
  ct_generator_free(g);
  n->opt = adamw ? ct_optim_adamw(NP, n->p, 1e-2, 0.05) : NULL;
}

static void net_free(net *n) {
  ct_optim_free(n->opt);
  for (int k = 0; k < NP; k++) {
    ct_release(n->p[k]);
    ct_release(n->m[k]);
  }
}

/* One step: input noise and dropout draw from the default generator. */
static void net_step(net *n, const ct_tensor *X, const ct_tensor *Y) {
  ct_scope *s = ct_scope_begin();
  int64_t xs[2] = {16, 4};
  ct_tensor *x = ct_add(X, ct_mul_scalar(ct_randn(2, xs, ct_opts(), NULL), ct_sf(0.1)));
  ct_tensor *h = ct_dropout(ct_relu(ct_linear(x, n->p[0], n->p[1])), 0.25, true, NULL);
  ct_tensor *loss = ct_mse_loss(ct_linear(h, n->p[2], n->p[3]), Y, CT_REDUCTION_MEAN);
  CHECK_OK(ct_backward(loss, NULL, false, false));
  if (n->opt) {
    CHECK_OK(ct_optim_step(n->opt));
    CHECK_OK(ct_optim_zero_grad(n->opt, true));
  } else {
    bool prev = ct_set_grad_enabled(false);
    for (int k = 0; k < NP; k++) {
      CHECK_OK(ct_mul_scalar_(n->m[k], ct_sf(0.9)));
      CHECK_OK(ct_add_(n->m[k], ct_grad(n->p[k])));
      CHECK_OK(ct_add_alpha_(n->p[k], n->m[k], ct_sf(-0.05)));
      CHECK_OK(ct_set_grad(n->p[k], NULL));
    }
    ct_set_grad_enabled(prev);
  }
  ct_scope_end(s);
}

typedef enum { RESUME_COPY, RESUME_MMAP, RESUME_WITHOUT_RNG } resume_kind;

/* 10 steps, checkpoint, clobber everything, load into fresh tensors, 10 more steps. */
static void run_resumed(net *n, const ct_tensor *X, const ct_tensor *Y, const char *dir, resume_kind kind, bool adamw) {
  ct_manual_seed(1234);
  net_init(n, adamw);
  for (int i = 0; i < 10; i++) net_step(n, X, Y);
  ct_dict *model = ct_dict_new(), *optim = ct_dict_new(), *meta = ct_dict_new();
  for (int k = 0; k < NP; k++) ct_dict_set(model, PN[k], n->p[k]);
  if (adamw) CHECK_OK(ct_optim_state_dict(n->opt, optim));
  else
    for (int k = 0; k < NP; k++) ct_dict_set(optim, PN[k], n->m[k]);
  ct_dict_set_meta(meta, "epoch", "1");
  CHECK_OK(ct_checkpoint_save(dir, model, optim, NULL, 10, meta));
  ct_dict_free(model);
  ct_dict_free(optim);
  ct_dict_free(meta);
  net_free(n);
  memset(n, 0, sizeof *n);
  ct_manual_seed(999); /* the resumed run must get its stream from the checkpoint */
  ct_release(ct_rand(1, (int64_t[]){100}, ct_opts(), NULL));

  ct_generator *scratch = kind == RESUME_WITHOUT_RNG ? ct_generator_new(0) : NULL;
  int64_t step = -1;
  CHECK_OK(ct_checkpoint_load(dir, &model, &optim, scratch, &step, &meta, kind == RESUME_MMAP));
  ct_generator_free(scratch);
  CHECK(step == 10 && meta && ct_dict_get_meta(meta, "epoch") && !strcmp(ct_dict_get_meta(meta, "epoch"), "1"));
  if (!model || !optim) return;
  CHECK(ct_dict_len(model) == NP);
  for (int k = 0; k < NP; k++) {
    ct_tensor *t = ct_dict_get(model, PN[k]);
    /* mmap: train the mapped (copy-on-write) tensors themselves; else fresh copies */
    n->p[k] = kind == RESUME_MMAP ? ct_retain(t) : ct_clone(t);
    CHECK_OK(ct_requires_grad_(n->p[k], true));
    if (!adamw) n->m[k] = kind == RESUME_MMAP ? ct_retain(ct_dict_get(optim, PN[k])) : ct_clone(ct_dict_get(optim, PN[k]));
  }
  if (adamw) {
    n->opt = ct_optim_adamw(NP, n->p, 1e-2, 0.05);
    CHECK_OK(ct_optim_load_state_dict(n->opt, optim));
  }
  ct_dict_free(model);
  ct_dict_free(optim);
  ct_dict_free(meta);
  for (int i = 0; i < 10; i++) net_step(n, X, Y);
}

static bool bits_equal(net *a, net *b) {
  for (int k = 0; k < NP; k++)
    if (!same_tensor(a->p[k], b->p[k])) return false;
  return true;
}

static void resume_test(bool adamw) {
  tmpdir td;
  tmp_make(&td);
  ct_generator *dg = ct_generator_new(3);
  int64_t xs[2] = {16, 4}, ys[2] = {16, 1};
  ct_tensor *X = ct_randn(2, xs, ct_opts(), dg), *Y = ct_randn(2, ys, ct_opts(), dg);
  ct_generator_free(dg);

  net full;
  ct_manual_seed(1234);
  net_init(&full, adamw);
  for (int i = 0; i < 20; i++) net_step(&full, X, Y);

  for (int kind = RESUME_COPY; kind <= RESUME_WITHOUT_RNG; kind++) {
    net r;
    memset(&r, 0, sizeof r);
    run_resumed(&r, X, Y, td.dir, (resume_kind)kind, adamw);
    if (kind == RESUME_WITHOUT_RNG) CHECK(!bits_equal(&full, &r)); /* the RNG state matters */
    else if (!bits_equal(&full, &r))
      ct_test_fail(__FILE__, __LINE__, "resumed run (%s, %s) differs from the uninterrupted one",
                   kind == RESUME_MMAP ? "mmap" : "copy", adamw ? "AdamW" : "SGD momentum");
    net_free(&r);
  }
  /* the loss went down: the run trains something */
  net_free(&full);
  ct_release(X);
  ct_release(Y);
  tmp_free(&td);
}

TEST(io_checkpoint_resume_bit_exact_sgd) { resume_test(false); }
TEST(io_checkpoint_resume_bit_exact_adamw) { resume_test(true); }

TEST(io_checkpoint_layout_and_errors) {
  tmpdir td;
  tmp_make(&td);
  char p[512];
  tmp_path(&td, "ck.safetensors", p, sizeof p);
  ct_tensor *w = ct_ones(1, (int64_t[]){3}, ct_opts());
  ct_dict *model = ct_dict_new(), *optim = ct_dict_new(), *um = ct_dict_new();
  ct_dict_set(model, "w", w);
  ct_dict_set_meta(model, "arch", "mlp");
  ct_dict_set(optim, "state.0.step", w);
  ct_dict_set_meta(optim, "optimizer", "SGD");
  ct_dict_set_meta(um, "note", "hi");
  ct_generator *g = ct_generator_new(5);
  CHECK_OK(ct_checkpoint_save(p, model, optim, g, 7, um));
  /* the layout documented in io.h */
  ct_safetensors_info *I = ct_safetensors_info_file(p);
  CHECK(I && ct_safetensors_info_len(I) == 3);
  const char *want_meta[][2] = {{"ctorch.format", "checkpoint"}, {"ctorch.format_version", "1"}, {"ctorch.step", "7"},
                                {"model.arch", "mlp"}, {"optim.optimizer", "SGD"}, {"user.note", "hi"}};
  for (size_t i = 0; I && i < 6; i++) {
    bool found = false;
    for (int64_t j = 0; j < ct_safetensors_info_meta_len(I); j++)
      if (!strcmp(ct_safetensors_info_meta_key(I, j), want_meta[i][0]))
        found = !strcmp(ct_safetensors_info_meta_value(I, j), want_meta[i][1]);
    CHECK(found);
  }
  ct_safetensors_info_free(I);
  ct_dict *all = NULL;
  CHECK_OK(ct_safetensors_load(p, &all, false));
  CHECK(all && ct_dict_get(all, "model.w") && ct_dict_get(all, "optim.state.0.step") && ct_dict_get(all, "rng.cpu"));
  ct_tensor *rng = all ? ct_dict_get(all, "rng.cpu") : NULL;
  CHECK(rng && ct_tensor_dtype(rng) == CT_UINT8 && ct_numel(rng) == 5056);
  uint8_t st[5056];
  ct_generator_get_state(g, st);
  CHECK(rng && !memcmp(ct_data_ptr(rng), st, sizeof st));

  /* load: into a generator; prefixes removed; metadata split back */
  ct_generator *g2 = ct_generator_new(0);
  ct_dict *m2 = NULL, *o2 = NULL, *u2 = NULL;
  int64_t step = 0;
  CHECK_OK(ct_checkpoint_load(p, &m2, &o2, g2, &step, &u2, false));
  CHECK(step == 7 && m2 && o2 && u2 && same_tensor(ct_dict_get(m2, "w"), w) && ct_dict_get(o2, "state.0.step"));
  CHECK(m2 && !strcmp(ct_dict_get_meta(m2, "arch"), "mlp") && !strcmp(ct_dict_get_meta(o2, "optimizer"), "SGD") &&
        !strcmp(ct_dict_get_meta(u2, "note"), "hi") && ct_dict_meta_len(u2) == 1);
  uint8_t st2[5056];
  ct_generator_get_state(g2, st2);
  CHECK(!memcmp(st, st2, sizeof st));
  ct_dict_free(m2);
  ct_dict_free(o2);
  ct_dict_free(u2);
  /* NULL outs are fine; a directory path means <dir>/checkpoint.safetensors */
  CHECK_OK(ct_checkpoint_save(td.dir, model, NULL, NULL, 0, NULL));
  char inside[600];
  snprintf(inside, sizeof inside, "%s/" CT_CHECKPOINT_FILE, td.dir);
  CHECK(access(inside, R_OK) == 0);
  CHECK_OK(ct_checkpoint_load(td.dir, NULL, NULL, g2, NULL, NULL, true));

  /* refused: not a checkpoint, newer version, stray tensor, bad rng; nothing changes */
  char q[512];
  tmp_path(&td, "bad.safetensors", q, sizeof q);
  ct_generator_get_state(g2, st);
  ct_dict *bad = ct_dict_new();
  ct_dict_set(bad, "model.w", w);
  CHECK_OK(ct_safetensors_save(q, bad));
  CHECK_ERR(ct_checkpoint_load(q, &m2, NULL, g2, NULL, NULL, false), "is not a ctorch checkpoint");
  CHECK(m2 == NULL);
  ct_dict_set_meta(bad, "ctorch.format", "checkpoint");
  ct_dict_set_meta(bad, "ctorch.format_version", "2");
  ct_dict_set_meta(bad, "ctorch.step", "1");
  CHECK_OK(ct_safetensors_save(q, bad));
  CHECK_ERR(ct_checkpoint_load(q, &m2, NULL, g2, NULL, NULL, false), "format version 2, newer than");
  ct_dict_set_meta(bad, "ctorch.format_version", "1");
  ct_dict_set_meta(bad, "ctorch.step", "x");
  CHECK_OK(ct_safetensors_save(q, bad));
  CHECK_ERR(ct_checkpoint_load(q, &m2, NULL, g2, NULL, NULL, false), "invalid ctorch.step");
  ct_dict_set_meta(bad, "ctorch.step", "1");
  CHECK_OK(ct_safetensors_save(q, bad));
  CHECK_ERR(ct_checkpoint_load(q, &m2, NULL, g2, NULL, NULL, false), "missing tensor rng.cpu");
  ct_dict_set(bad, "rng.cpu", w);
  CHECK_OK(ct_safetensors_save(q, bad));
  CHECK_ERR(ct_checkpoint_load(q, &m2, NULL, g2, NULL, NULL, false), "rng.cpu must be a uint8 tensor of 5056 bytes");
  ct_tensor *zeros = ct_zeros(1, (int64_t[]){5056}, ct_opts_dtype(CT_UINT8));
  ct_dict_set(bad, "rng.cpu", zeros);
  CHECK_OK(ct_safetensors_save(q, bad));
  CHECK_ERR(ct_checkpoint_load(q, &m2, NULL, g2, NULL, NULL, false), "invalid rng.cpu");
  ct_dict_set(bad, "rng.cpu", rng);
  ct_dict_set(bad, "stray", w);
  CHECK_OK(ct_safetensors_save(q, bad));
  CHECK_ERR(ct_checkpoint_load(q, &m2, NULL, g2, NULL, NULL, false), "unexpected tensor 'stray'");
  CHECK(m2 == NULL);
  ct_generator_get_state(g2, st2);
  CHECK(!memcmp(st, st2, sizeof st)); /* failed loads left the generator alone */
  CHECK_ERR(ct_checkpoint_load(FIXTURES "no_such.safetensors", &m2, NULL, g2, NULL, NULL, false), "cannot open");
  CHECK_ERR(ct_checkpoint_save(p, NULL, NULL, NULL, 0, NULL), "model_state is NULL");
  CHECK_ERR(ct_checkpoint_save(p, model, NULL, NULL, -1, NULL), "step must be >= 0");

  ct_dict_free(bad);
  ct_dict_free(all);
  ct_release(zeros);
  ct_generator_free(g);
  ct_generator_free(g2);
  ct_dict_free(model);
  ct_dict_free(optim);
  ct_dict_free(um);
  ct_release(w);
  tmp_free(&td);
}
