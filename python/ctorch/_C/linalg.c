/* Dense factorizations behind torch.linalg: LU with partial pivoting, Cholesky, Householder QR, symmetric
 * eigendecomposition (cyclic Jacobi), SVD (one-sided Jacobi) and triangular solves, over batches of
 * float32/float64 matrices. They compute in double (LAPACK's float32 routines accumulate in float32, so
 * float32 results agree with PyTorch to rounding, not bit for bit); the gradients are written in Python
 * (python/ctorch/_linalg.py) from these factors and the differentiable ops. Conventions follow LAPACK
 * where PyTorch exposes them: 1-based int32 pivots, `info` codes, QR's Householder signs. Eigenvector and
 * singular-vector signs are not unique; here the entry of largest magnitude of each vector is made
 * positive. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_common.h"

const char *ct_dtype_torch_name(ct_dtype dt); /* "Float", "Double", ... (src/core) */

/* A float tensor of at least 2 dims as doubles (row-major), with its batch count and matrix size. */
typedef struct {
  double *d;
  int64_t batch, m, n;
  int nd;
  int64_t shape[CT_MAX_DIMS];
  ct_dtype dt;
} mats;

static int load_mats(PyObject *o, const char *fn, mats *x) {
  memset(x, 0, sizeof *x);
  if (!pyct_is_tensor(o)) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'A' (position 1) must be Tensor, not %s", fn, Py_TYPE(o)->tp_name);
    return 0;
  }
  ct_tensor *t = TT(o);
  x->nd = ct_ndim(t);
  if (x->nd < 2) {
    PyErr_Format(PyExc_RuntimeError, "%s: The input tensor A must have at least 2 dimensions.", fn);
    return 0;
  }
  x->dt = ct_tensor_dtype(t);
  if (x->dt != CT_FLOAT32 && x->dt != CT_FLOAT64) {
    PyErr_Format(PyExc_RuntimeError, "%s: Expected a floating point or complex tensor as input. Got %s", fn,
                 ct_dtype_torch_name(x->dt));
    return 0;
  }
  if (ct_tensor_device(t).type != CT_DEVICE_CPU) {
    PyErr_Format(PyExc_NotImplementedError, "%s: ctorch computes linear algebra on the CPU only", fn);
    return 0;
  }
  memcpy(x->shape, ct_shape(t), sizeof(int64_t) * x->nd);
  x->m = x->shape[x->nd - 2];
  x->n = x->shape[x->nd - 1];
  int64_t numel = ct_numel(t);
  x->batch = (x->m > 0 && x->n > 0) ? numel / (x->m * x->n) : 0;
  if (x->m == 0 || x->n == 0) {
    x->batch = 1;
    for (int i = 0; i < x->nd - 2; i++) x->batch *= x->shape[i];
  }
  x->d = malloc(sizeof(double) * (size_t)(numel ? numel : 1));
  if (!x->d) {
    PyErr_NoMemory();
    return 0;
  }
  if (numel && ct_copy_to_buffer(t, x->d, CT_FLOAT64, numel) != CT_OK) {
    free(x->d);
    x->d = NULL;
    pyct_raise();
    return 0;
  }
  return 1;
}

/* A new tensor of shape batch-dims + tail from buf (of dtype buf_dt), in dtype dt. */
static PyObject *make_out_as(const mats *x, int ntail, const int64_t *tail, const void *buf, ct_dtype buf_dt,
                             ct_dtype dt) {
  int64_t shape[CT_MAX_DIMS];
  int nb = x->nd - 2;
  for (int i = 0; i < nb; i++) shape[i] = x->shape[i];
  for (int i = 0; i < ntail; i++) shape[nb + i] = tail[i];
  return pyct_wrap(ct_from_buffer(buf, buf_dt, nb + ntail, shape, ct_opts_dtype(dt)));
}
static PyObject *make_out(const mats *x, int ntail, const int64_t *tail, const double *buf, ct_dtype dt) {
  return make_out_as(x, ntail, tail, buf, CT_FLOAT64, dt);
}
static PyObject *make_out_i32(const mats *x, int ntail, const int64_t *tail, const int32_t *buf) {
  return make_out_as(x, ntail, tail, buf, CT_INT32, CT_INT32);
}

/* The buffers of one binding: its loaded inputs and its zeroed scratch arrays, freed together. */
typedef struct {
  mats *in[2];
  void *p[6];
  int n, full;
} frame;
static void *frame_calloc(frame *f, size_t count, size_t size) { /* count + 1: never a 0-byte request */
  if (f->n == 6) {
    f->full = 1;
    return NULL;
  }
  return f->p[f->n++] = calloc(count + 1, size);
}
static void frame_free(frame *f) {
  for (int i = 0; i < f->n; i++) free(f->p[i]);
  f->n = 0;
  for (int i = 0; i < 2; i++)
    if (f->in[i]) {
      free(f->in[i]->d);
      f->in[i]->d = NULL;
    }
}
/* All scratch arrays were made; else frees the frame and raises MemoryError. */
static int frame_ok(frame *f) {
  for (int i = 0; i <= f->n; i++)
    if (i == f->n ? f->full : !f->p[i]) {
      frame_free(f);
      PyErr_NoMemory();
      return 0;
    }
  return 1;
}
/* fn's matrices must be square; else frees x and raises PyTorch's error. */
static int square_or_raise(mats *x, const char *fn) {
  if (x->m == x->n) return 1;
  free(x->d);
  x->d = NULL;
  PyErr_Format(PyExc_RuntimeError, "%s: A must be batches of square matrices, but they are %lld by %lld matrices", fn,
               (long long)x->m, (long long)x->n);
  return 0;
}
/* A (n x n) and B (n x k) with the same batch for the solvers; 0 with the error set. */
static int load_system(PyObject *A, PyObject *B, const char *fn, mats *a, mats *b) {
  if (!load_mats(A, fn, a)) return 0;
  if (!load_mats(B, fn, b)) {
    free(a->d);
    return 0;
  }
  if (a->m != a->n || b->m != a->n || a->batch != b->batch) {
    free(a->d), free(b->d);
    PyErr_Format(PyExc_RuntimeError, "%s: incompatible shapes", fn);
    return 0;
  }
  return 1;
}

static PyObject *tuple_steal(int n, PyObject **v) {
  for (int i = 0; i < n; i++)
    if (!v[i]) {
      for (int j = 0; j < n; j++) Py_XDECREF(v[j]);
      return NULL;
    }
  PyObject *t = PyTuple_New(n);
  if (!t) {
    for (int j = 0; j < n; j++) Py_DECREF(v[j]);
    return NULL;
  }
  for (int i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, v[i]);
  return t;
}

/* ---- LU with partial pivoting (getrf): a m x n in place, piv 1-based; returns info ---- */
static int32_t lu_one(double *a, int64_t m, int64_t n, int32_t *piv) {
  int64_t k = m < n ? m : n;
  int32_t info = 0;
  for (int64_t j = 0; j < k; j++) {
    int64_t p = j;
    double best = fabs(a[j * n + j]);
    for (int64_t i = j + 1; i < m; i++)
      if (fabs(a[i * n + j]) > best) {
        best = fabs(a[i * n + j]);
        p = i;
      }
    piv[j] = (int32_t)(p + 1);
    if (p != j)
      for (int64_t c = 0; c < n; c++) {
        double t = a[j * n + c];
        a[j * n + c] = a[p * n + c];
        a[p * n + c] = t;
      }
    double d = a[j * n + j];
    if (d == 0.0) {
      if (!info) info = (int32_t)(j + 1);
      continue;
    }
    for (int64_t i = j + 1; i < m; i++) {
      double f = a[i * n + j] / d;
      a[i * n + j] = f;
      if (f != 0.0)
        for (int64_t c = j + 1; c < n; c++) a[i * n + c] -= f * a[j * n + c];
    }
  }
  return info;
}

static PyObject *f_lu(PyObject *mod, PyObject *args) {
  PyObject *A;
  if (!PyArg_ParseTuple(args, "O", &A)) return NULL;
  mats x;
  if (!load_mats(A, "linalg.lu_factor", &x)) return NULL;
  int64_t m = x.m, n = x.n, k = m < n ? m : n;
  frame f = {{&x}};
  int32_t *piv = frame_calloc(&f, (size_t)(x.batch * k), sizeof *piv), *info = frame_calloc(&f, (size_t)x.batch, sizeof *info);
  if (!frame_ok(&f)) return NULL;
  for (int64_t b = 0; b < x.batch && m > 0 && n > 0; b++) info[b] = lu_one(x.d + b * m * n, m, n, piv + b * k);
  int64_t t2[2] = {m, n}, t1[1] = {k};
  PyObject *o[3] = {make_out(&x, 2, t2, x.d, x.dt), make_out_i32(&x, 1, t1, piv), make_out_i32(&x, 0, NULL, info)};
  frame_free(&f);
  return tuple_steal(3, o);
}

/* ---- Cholesky (lower) in place; returns info (order of the first non-positive minor) ---- */
static int32_t chol_one(double *a, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    double s = a[j * n + j];
    for (int64_t k = 0; k < j; k++) s -= a[j * n + k] * a[j * n + k];
    if (!(s > 0.0)) return (int32_t)(j + 1);
    double l = sqrt(s);
    a[j * n + j] = l;
    for (int64_t i = j + 1; i < n; i++) {
      double t = a[i * n + j];
      for (int64_t k = 0; k < j; k++) t -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = t / l;
    }
    for (int64_t c = j + 1; c < n; c++) a[j * n + c] = 0.0;
  }
  return 0;
}

static PyObject *f_cholesky(PyObject *mod, PyObject *args) {
  PyObject *A;
  if (!PyArg_ParseTuple(args, "O", &A)) return NULL;
  mats x;
  if (!load_mats(A, "linalg.cholesky", &x) || !square_or_raise(&x, "linalg.cholesky")) return NULL;
  frame f = {{&x}};
  int32_t *info = frame_calloc(&f, (size_t)x.batch, sizeof *info);
  if (!frame_ok(&f)) return NULL;
  for (int64_t b = 0; b < x.batch && x.n; b++) info[b] = chol_one(x.d + b * x.n * x.n, x.n);
  int64_t t2[2] = {x.n, x.n};
  PyObject *o[2] = {make_out(&x, 2, t2, x.d, x.dt), make_out_i32(&x, 0, NULL, info)};
  frame_free(&f);
  return tuple_steal(2, o);
}

/* ---- Householder QR (geqrf + orgqr): q m x qc, r rr x n ---- */
static void qr_one(const double *a0, int64_t m, int64_t n, int complete, double *q, double *r, double *w) {
  int64_t k = m < n ? m : n, qc = complete ? m : k;
  double *a = w, *tau = w + m * n;
  memcpy(a, a0, sizeof(double) * (size_t)(m * n));
  for (int64_t j = 0; j < k; j++) {
    /* reflector for column j below the diagonal (LAPACK's dlarfg: beta = -sign(alpha) * norm) */
    double alpha = a[j * n + j], xn = 0.0;
    for (int64_t i = j + 1; i < m; i++) xn += a[i * n + j] * a[i * n + j];
    if (xn == 0.0) {
      tau[j] = 0.0;
      continue;
    }
    double beta = -copysign(sqrt(alpha * alpha + xn), alpha);
    tau[j] = (beta - alpha) / beta;
    double sc = 1.0 / (alpha - beta);
    for (int64_t i = j + 1; i < m; i++) a[i * n + j] *= sc;
    a[j * n + j] = beta;
    /* apply H = I - tau v v^T (v_j = 1) to the remaining columns */
    for (int64_t c = j + 1; c < n; c++) {
      double s = a[j * n + c];
      for (int64_t i = j + 1; i < m; i++) s += a[i * n + j] * a[i * n + c];
      s *= tau[j];
      a[j * n + c] -= s;
      for (int64_t i = j + 1; i < m; i++) a[i * n + c] -= s * a[i * n + j];
    }
  }
  int64_t rr = complete ? m : k;
  for (int64_t i = 0; i < rr; i++)
    for (int64_t c = 0; c < n; c++) r[i * n + c] = (i < m && c >= i) ? a[i * n + c] : 0.0;
  /* Q = H_0 H_1 ... H_{k-1} applied to the first qc columns of I, from the last reflector back */
  for (int64_t i = 0; i < m; i++)
    for (int64_t c = 0; c < qc; c++) q[i * qc + c] = i == c ? 1.0 : 0.0;
  for (int64_t j = k - 1; j >= 0; j--) {
    if (tau[j] == 0.0) continue;
    for (int64_t c = 0; c < qc; c++) {
      double s = q[j * qc + c];
      for (int64_t i = j + 1; i < m; i++) s += a[i * n + j] * q[i * qc + c];
      s *= tau[j];
      q[j * qc + c] -= s;
      for (int64_t i = j + 1; i < m; i++) q[i * qc + c] -= s * a[i * n + j];
    }
  }
}

static PyObject *f_qr(PyObject *mod, PyObject *args) {
  PyObject *A;
  int complete;
  if (!PyArg_ParseTuple(args, "Op", &A, &complete)) return NULL;
  mats x;
  if (!load_mats(A, "linalg.qr", &x)) return NULL;
  int64_t m = x.m, n = x.n, k = m < n ? m : n, qc = complete ? m : k, rr = complete ? m : k;
  frame f = {{&x}};
  double *q = frame_calloc(&f, (size_t)(x.batch * m * qc), sizeof *q), *r = frame_calloc(&f, (size_t)(x.batch * rr * n), sizeof *r);
  double *w = frame_calloc(&f, (size_t)(m * n + k), sizeof *w);
  if (!frame_ok(&f)) return NULL;
  for (int64_t b = 0; b < x.batch; b++) {
    if (m > 0 && n > 0)
      qr_one(x.d + b * m * n, m, n, complete, q + b * m * qc, r + b * rr * n, w);
    else
      for (int64_t i = 0; i < m && i < qc; i++) q[b * m * qc + i * qc + i] = 1.0;
  }
  int64_t tq[2] = {m, qc}, tr[2] = {rr, n};
  PyObject *o[2] = {make_out(&x, 2, tq, q, x.dt), make_out(&x, 2, tr, r, x.dt)};
  frame_free(&f);
  return tuple_steal(2, o);
}

/* geqrf: LAPACK's packed form, R on and above the diagonal, the Householder vectors below it, and tau */
static PyObject *f_geqrf(PyObject *mod, PyObject *args) {
  PyObject *A;
  if (!PyArg_ParseTuple(args, "O", &A)) return NULL;
  mats x;
  if (!load_mats(A, "geqrf", &x)) return NULL;
  int64_t m = x.m, n = x.n, k = m < n ? m : n;
  frame f = {{&x}};
  double *q = frame_calloc(&f, (size_t)(m * k), sizeof *q), *r = frame_calloc(&f, (size_t)(k * n), sizeof *r);
  double *w = frame_calloc(&f, (size_t)(m * n + k), sizeof *w), *tau = frame_calloc(&f, (size_t)(x.batch * k), sizeof *tau);
  if (!frame_ok(&f)) return NULL;
  for (int64_t b = 0; b < x.batch && m > 0 && n > 0; b++) {
    qr_one(x.d + b * m * n, m, n, 0, q, r, w);
    memcpy(x.d + b * m * n, w, sizeof(double) * (size_t)(m * n));
    memcpy(tau + b * k, w + m * n, sizeof(double) * (size_t)k);
  }
  int64_t t2[2] = {m, n}, t1[1] = {k};
  PyObject *o[2] = {make_out(&x, 2, t2, x.d, x.dt), make_out(&x, 1, t1, tau, x.dt)};
  frame_free(&f);
  return tuple_steal(2, o);
}

/* make the entry of largest magnitude of column c of an r x cols matrix positive */
static void fix_sign(double *v, int64_t rows, int64_t cols, int64_t c, double *other, int64_t orows) {
  int64_t bi = 0;
  for (int64_t i = 1; i < rows; i++)
    if (fabs(v[i * cols + c]) > fabs(v[bi * cols + c]) * (1 + 1e-12)) bi = i;
  if (v[bi * cols + c] < 0) {
    for (int64_t i = 0; i < rows; i++) v[i * cols + c] = -v[i * cols + c];
    if (other)
      for (int64_t i = 0; i < orows; i++) other[i * cols + c] = -other[i * cols + c];
  }
}

/* ---- symmetric eigendecomposition, cyclic Jacobi; uses the lower triangle like PyTorch's default ---- */
/* The plane rotation [x; y] <- [c x - s y; s x + c y] over n pairs spaced `stride` apart (Jacobi sweeps:
 * two columns of a row-major matrix with stride = its width, two rows with stride 1). */
static void rotate_pair(double *x, double *y, int64_t n, int64_t stride, double c, double s) {
  for (int64_t k = 0; k < n; k++) {
    double xv = x[k * stride], yv = y[k * stride];
    x[k * stride] = c * xv - s * yv;
    y[k * stride] = s * xv + c * yv;
  }
}

/* Swaps columns i and j of a row-major rows x ld matrix (sorting eigen/singular vectors with their values). */
static void swap_cols(double *a, int64_t rows, int64_t ld, int64_t i, int64_t j) {
  for (int64_t k = 0; k < rows; k++) {
    double t = a[k * ld + i];
    a[k * ld + i] = a[k * ld + j];
    a[k * ld + j] = t;
  }
}

static void eigh_one(const double *a0, int64_t n, int upper, double *w, double *v, double *a) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      int64_t ii = i, jj = j;
      if ((!upper && j > i) || (upper && j < i)) ii = j, jj = i;
      a[i * n + j] = a0[ii * n + jj];
      v[i * n + j] = i == j ? 1.0 : 0.0;
    }
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0.0, tot = 0.0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        tot += a[i * n + j] * a[i * n + j];
        if (i != j) off += a[i * n + j] * a[i * n + j];
      }
    if (off <= 1e-30 * tot || off == 0.0) break;
    for (int64_t p = 0; p < n - 1; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double apq = a[p * n + q];
        if (apq == 0.0) continue;
        double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        double t = copysign(1.0, theta) / (fabs(theta) + sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        rotate_pair(a + p, a + q, n, n, c, s);         /* A <- A J (columns p, q) */
        rotate_pair(a + p * n, a + q * n, n, 1, c, s); /* A <- J^T A (rows p, q) */
        rotate_pair(v + p, v + q, n, n, c, s);
      }
  }
  /* ascending eigenvalues (selection sort of columns) */
  for (int64_t i = 0; i < n; i++) w[i] = a[i * n + i];
  for (int64_t i = 0; i < n; i++) {
    int64_t mi = i;
    for (int64_t j = i + 1; j < n; j++)
      if (w[j] < w[mi]) mi = j;
    if (mi != i) {
      double t = w[i];
      w[i] = w[mi];
      w[mi] = t;
      swap_cols(v, n, n, i, mi);
    }
    fix_sign(v, n, n, i, NULL, 0);
  }
}

static PyObject *f_eigh(PyObject *mod, PyObject *args) {
  PyObject *A;
  int upper;
  if (!PyArg_ParseTuple(args, "Op", &A, &upper)) return NULL;
  mats x;
  if (!load_mats(A, "linalg.eigh", &x) || !square_or_raise(&x, "linalg.eigh")) return NULL;
  int64_t n = x.n;
  frame f = {{&x}};
  double *w = frame_calloc(&f, (size_t)(x.batch * n), sizeof *w), *v = frame_calloc(&f, (size_t)(x.batch * n * n), sizeof *v);
  double *a = frame_calloc(&f, (size_t)(n * n), sizeof *a);
  if (!frame_ok(&f)) return NULL;
  for (int64_t b = 0; b < x.batch && n; b++) eigh_one(x.d + b * n * n, n, upper, w + b * n, v + b * n * n, a);
  int64_t t1[1] = {n}, t2[2] = {n, n};
  PyObject *o[2] = {make_out(&x, 1, t1, w, x.dt), make_out(&x, 2, t2, v, x.dt)};
  frame_free(&f);
  return tuple_steal(2, o);
}

/* columns [from, cols) of q (rows x cols) replaced by an orthonormal completion of the columns before them */
static void complete_basis(double *q, int64_t rows, int64_t cols, int64_t from) {
  int64_t c = from;
  for (int64_t e = 0; e < rows && c < cols; e++) {
    double *t = malloc(sizeof(double) * (size_t)rows);
    if (!t) return;
    for (int64_t i = 0; i < rows; i++) t[i] = i == e ? 1.0 : 0.0;
    for (int pass = 0; pass < 2; pass++)
      for (int64_t k = 0; k < c; k++) {
        double d = 0.0;
        for (int64_t i = 0; i < rows; i++) d += q[i * cols + k] * t[i];
        for (int64_t i = 0; i < rows; i++) t[i] -= d * q[i * cols + k];
      }
    double nrm = 0.0;
    for (int64_t i = 0; i < rows; i++) nrm += t[i] * t[i];
    nrm = sqrt(nrm);
    if (nrm > 1e-6) {
      for (int64_t i = 0; i < rows; i++) q[i * cols + c] = t[i] / nrm;
      c++;
    }
    free(t);
  }
}

/* ---- SVD of a m x n (m >= n) by one-sided Jacobi: u m x uc, s n, v n x n ---- */
static void svd_tall(const double *a0, int64_t m, int64_t n, int64_t uc, double *u, double *s, double *v, double *g) {
  /* g: m x n work copy whose columns converge to U S */
  memcpy(g, a0, sizeof(double) * (size_t)(m * n));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) v[i * n + j] = i == j ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 100; sweep++) {
    int rotated = 0;
    for (int64_t p = 0; p < n - 1; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double al = 0, be = 0, ga = 0;
        for (int64_t i = 0; i < m; i++) {
          al += g[i * n + p] * g[i * n + p];
          be += g[i * n + q] * g[i * n + q];
          ga += g[i * n + p] * g[i * n + q];
        }
        if (ga == 0.0 || fabs(ga) <= 1e-15 * sqrt(al * be)) continue;
        rotated = 1;
        double zeta = (be - al) / (2 * ga);
        double t = copysign(1.0, zeta) / (fabs(zeta) + sqrt(1 + zeta * zeta));
        double c = 1 / sqrt(1 + t * t), sn = c * t;
        rotate_pair(g + p, g + q, m, n, c, sn);
        rotate_pair(v + p, v + q, n, n, c, sn);
      }
    if (!rotated) break;
  }
  for (int64_t j = 0; j < n; j++) {
    double nr = 0;
    for (int64_t i = 0; i < m; i++) nr += g[i * n + j] * g[i * n + j];
    s[j] = sqrt(nr);
  }
  /* descending order */
  for (int64_t i = 0; i < n; i++) {
    int64_t mi = i;
    for (int64_t j = i + 1; j < n; j++)
      if (s[j] > s[mi]) mi = j;
    if (mi != i) {
      double t = s[i];
      s[i] = s[mi];
      s[mi] = t;
      swap_cols(g, m, n, i, mi);
      swap_cols(v, n, n, i, mi);
    }
  }
  double tol = (s[0] > 0 ? s[0] : 1.0) * 1e-13;
  int64_t r = 0;
  for (int64_t j = 0; j < n; j++) {
    if (s[j] > tol) {
      for (int64_t i = 0; i < m; i++) u[i * uc + j] = g[i * n + j] / s[j];
      r = j + 1;
    }
  }
  complete_basis(u, m, uc, r);
  for (int64_t j = 0; j < n; j++) fix_sign(u, m, uc, j, NULL, 0);
  /* v's column j must follow u's sign: recompute the sign from A v_j . u_j */
  for (int64_t j = 0; j < n; j++) {
    double d = 0;
    for (int64_t i = 0; i < m; i++) {
      double av = 0;
      for (int64_t k = 0; k < n; k++) av += a0[i * n + k] * v[k * n + j];
      d += av * u[i * uc + j];
    }
    if (d < 0)
      for (int64_t k = 0; k < n; k++) v[k * n + j] = -v[k * n + j];
  }
}

/* returns (U, S, Vh) with U m x uc, Vh vr x n; full: uc = m, vr = n; else uc = vr = k */
static PyObject *f_svd(PyObject *mod, PyObject *args) {
  PyObject *A;
  int full;
  if (!PyArg_ParseTuple(args, "Op", &A, &full)) return NULL;
  mats x;
  if (!load_mats(A, "linalg.svd", &x)) return NULL;
  int64_t m = x.m, n = x.n, k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
  int tall = m >= n;
  int64_t M = tall ? m : n, N = tall ? n : m, UC = tall ? (full ? m : k) : (full ? n : k); /* of the tall problem */
  size_t sz = (size_t)(M * N + M * UC + N * N + N + M * N + 8);
  frame f = {{&x}};
  double *w = frame_calloc(&f, sz, sizeof *w);
  double *U = frame_calloc(&f, (size_t)(x.batch * m * uc), sizeof *U), *S = frame_calloc(&f, (size_t)(x.batch * k), sizeof *S);
  double *Vh = frame_calloc(&f, (size_t)(x.batch * vr * n), sizeof *Vh);
  if (!frame_ok(&f)) return NULL;
  double *at = w, *tu = at + M * N, *tv = tu + M * UC, *ts = tv + N * N, *g = ts + N;
  for (int64_t b = 0; b < x.batch; b++) {
    const double *a = x.d + b * m * n;
    double *ub = U + b * m * uc, *sb = S + b * k, *vb = Vh + b * vr * n;
    if (m == 0 || n == 0) {
      for (int64_t i = 0; i < m && i < uc; i++) ub[i * uc + i] = 1.0;
      for (int64_t i = 0; i < n && i < vr; i++) vb[i * n + i] = 1.0;
      continue;
    }
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) at[i * N + j] = tall ? a[i * n + j] : a[j * n + i];
    memset(tu, 0, sizeof(double) * (size_t)(M * UC));
    svd_tall(at, M, N, UC, tu, ts, tv, g);
    for (int64_t j = 0; j < k; j++) sb[j] = ts[j];
    if (tall) { /* A = tu diag(ts) tv^T */
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < uc; j++) ub[i * uc + j] = tu[i * UC + j];
      double *vfull = calloc((size_t)(n * n + 1), sizeof *vfull);
      if (vfull) {
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < n; j++) vfull[i * n + j] = tv[i * N + j];
        for (int64_t r = 0; r < vr; r++)
          for (int64_t c = 0; c < n; c++) vb[r * n + c] = vfull[c * n + r];
        free(vfull);
      }
    } else { /* A^T = tu diag(ts) tv^T, so A = tv diag(ts) tu^T: U = tv (m x m), Vh = tu^T */
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < uc; j++) ub[i * uc + j] = tv[i * N + j];
      for (int64_t r = 0; r < vr; r++)
        for (int64_t c = 0; c < n; c++) vb[r * n + c] = tu[c * UC + r];
    }
  }
  int64_t tU[2] = {m, uc}, tS[1] = {k}, tV[2] = {vr, n};
  PyObject *o[3] = {make_out(&x, 2, tU, U, x.dt), make_out(&x, 1, tS, S, x.dt), make_out(&x, 2, tV, Vh, x.dt)};
  frame_free(&f);
  return tuple_steal(3, o);
}

/* ---- triangular solve: A (n x n, batch) X = B (n x k, same batch); trans: A^T X = B ---- */
static PyObject *f_trsm(PyObject *mod, PyObject *args) {
  PyObject *A, *B;
  int upper, trans, unit;
  if (!PyArg_ParseTuple(args, "OOppp", &A, &B, &upper, &trans, &unit)) return NULL;
  mats a, b;
  if (!load_system(A, B, "linalg.solve_triangular", &a, &b)) return NULL;
  int64_t n = a.n, k = b.n;
  /* solving with A^T: a lower A^T is an upper A read transposed */
  int up = trans ? !upper : upper;
  for (int64_t bt = 0; bt < a.batch; bt++) {
    const double *m_ = a.d + bt * n * n;
    double *x = b.d + bt * n * k;
#define AT(i, j) (trans ? m_[(j) * n + (i)] : m_[(i) * n + (j)])
    for (int64_t c = 0; c < k; c++) {
      if (up)
        for (int64_t i = n - 1; i >= 0; i--) {
          double s = x[i * k + c];
          for (int64_t j = i + 1; j < n; j++) s -= AT(i, j) * x[j * k + c];
          x[i * k + c] = unit ? s : s / AT(i, i);
        }
      else
        for (int64_t i = 0; i < n; i++) {
          double s = x[i * k + c];
          for (int64_t j = 0; j < i; j++) s -= AT(i, j) * x[j * k + c];
          x[i * k + c] = unit ? s : s / AT(i, i);
        }
    }
#undef AT
  }
  int64_t t2[2] = {n, k};
  PyObject *r = make_out(&b, 2, t2, b.d, b.dt);
  free(a.d), free(b.d);
  return r;
}

/* ---- solve A X = B through LU (gesv): A n x n, B n x k, same batch; returns (X, info) ---- */
static PyObject *f_solve(PyObject *mod, PyObject *args) {
  PyObject *A, *B;
  if (!PyArg_ParseTuple(args, "OO", &A, &B)) return NULL;
  mats a, b;
  if (!load_system(A, B, "linalg.solve", &a, &b)) return NULL;
  int64_t n = a.n, k = b.n;
  frame f = {{&a, &b}};
  int32_t *piv = frame_calloc(&f, (size_t)n, sizeof *piv), *info = frame_calloc(&f, (size_t)a.batch, sizeof *info);
  if (!frame_ok(&f)) return NULL;
  for (int64_t bt = 0; bt < a.batch && n > 0; bt++) {
    double *lu = a.d + bt * n * n, *x = b.d + bt * n * k;
    info[bt] = lu_one(lu, n, n, piv);
    for (int64_t i = 0; i < n; i++) /* the row swaps, in order */
      if (piv[i] - 1 != i)
        for (int64_t c = 0; c < k; c++) {
          double t = x[i * k + c];
          x[i * k + c] = x[(piv[i] - 1) * k + c];
          x[(piv[i] - 1) * k + c] = t;
        }
    for (int64_t c = 0; c < k; c++) {
      for (int64_t i = 0; i < n; i++) /* L y = P b, unit diagonal */
        for (int64_t j = 0; j < i; j++) x[i * k + c] -= lu[i * n + j] * x[j * k + c];
      for (int64_t i = n - 1; i >= 0; i--) { /* U x = y */
        double s = x[i * k + c];
        for (int64_t j = i + 1; j < n; j++) s -= lu[i * n + j] * x[j * k + c];
        x[i * k + c] = s / lu[i * n + i];
      }
    }
  }
  int64_t t2[2] = {n, k};
  PyObject *o[2] = {make_out(&b, 2, t2, b.d, b.dt), make_out_i32(&a, 0, NULL, info)};
  frame_free(&f);
  return tuple_steal(2, o);
}

static PyMethodDef linalg_functions[] = {
  {"_linalg_solve", f_solve, METH_VARARGS, NULL},
  {"_linalg_geqrf", f_geqrf, METH_VARARGS, NULL},
  {"_linalg_lu", f_lu, METH_VARARGS, NULL},
  {"_linalg_cholesky", f_cholesky, METH_VARARGS, NULL},
  {"_linalg_qr", f_qr, METH_VARARGS, NULL},
  {"_linalg_eigh", f_eigh, METH_VARARGS, NULL},
  {"_linalg_svd", f_svd, METH_VARARGS, NULL},
  {"_linalg_trsm", f_trsm, METH_VARARGS, NULL},
  {NULL}};

int pyct_linalg_init(PyObject *m) { return PyModule_AddFunctions(m, linalg_functions); }
