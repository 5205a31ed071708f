/* Session 14: float32 channels-last 2-D convolutions of small output as im2col + cuBLAS (forward) and cuBLAS +
 * col2im (input gradient), src/backend/cuda/k_conv_gemm.cu `ct_cuda_conv_gemm`. The call into it from k_cudnn.cu is
 * not there yet, so these tests build the op's call themselves and call it directly on the device's stream, then
 * compare with the CPU and with cuDNN (the op path: ct_conv2d for the forward, ct_conv_transpose2d for the input
 * gradient, which is the same backward_input op; CT_CUDA_CONV_GEMM=0 around them keeps them on cuDNN once the call
 * is in). Skipped without a CUDA device.
 *
 * Tolerances, against the CPU (whose convolution kernels sum in double and round once, so it is the exact result to
 * float32 rounding): |got - ref| <= tol * S per element, S the same convolution of |x|, |w| (|gy|, |w|) and |bias|.
 * Any float32 summation order of the K = KH*KW*Cin products is within ~K * 2^-24 * S of the exact sum in the worst
 * case and ~sqrt(K) * 2^-24 * S typically (K = 4608 at most here: 2.7e-4 and 4e-6); tol 1e-5 is the brief's 1e-5,
 * taken relative to S rather than to |ref| (an element whose products cancel has |ref| << S, and no float32 order
 * can be within 1e-5 * |ref| of it). TF32 (inputs rounded to 10-bit mantissas: each product within 2^-10 relative):
 * tol 4e-3. Against cuDNN (both float32 FMA sums, in different orders): tol 2e-5. */
#include "test.h"
#include "ops/layout.h"
#include "ops/op_table.h"
#include "ctorch/cuda.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

CT_GPU_GROUP(conv_gemm)
#define CG_TEST(name) CT_GPU_TEST(conv_gemm, name)

#ifdef CT_HAVE_CUDA
bool ct_cuda_conv_gemm(const ct_call *c, void *stream, ct_status *st);
int64_t ct_cuda_conv_gemm_count(int which);
void ct_cuda_conv_gemm_release(int dev);
void *ct_cuda_main_stream(int dev);
ct_status ct_cuda_sgemm_raw(int dev, bool ta, bool tb, int m, int n, int k, const float *A, int lda, long long sa,
                            const float *B, int ldb, long long sb, float *C, int ldc, long long sc, int batch);
#else /* never reached: the GPU tests are skipped without CUDA */
static bool ct_cuda_conv_gemm(const ct_call *c, void *stream, ct_status *st) {
  (void)c, (void)stream, (void)st;
  return false;
}
static int64_t ct_cuda_conv_gemm_count(int which) { return (void)which, 0; }
static void ct_cuda_conv_gemm_release(int dev) { (void)dev; }
static void *ct_cuda_main_stream(int dev) { return (void)dev, NULL; }
static ct_status ct_cuda_sgemm_raw(int dev, bool ta, bool tb, int m, int n, int k, const float *A, int lda, long long sa,
                                   const float *B, int ldb, long long sb, float *C, int ldc, long long sc, int batch) {
  return CT_ERR(CT_ERR_RUNTIME, "built without CUDA");
}
#endif


typedef struct {
  const char *name;
  int64_t N, C, H, W, CO, KH, KW, s, p, d;
  bool bias;
} cg_case;

static int64_t cg_out(int64_t in, int64_t k, const cg_case *g) { return (in + 2 * g->p - (g->d * (k - 1) + 1)) / g->s + 1; }

/* op through ct_cuda_conv_gemm: forward a = x, out = y; input gradient a = gy, out = dx. Returns whether it was
 * taken; *st its status. */
static bool cg_run(int op, ct_tensor *a, ct_tensor *w, ct_tensor *bias, ct_tensor *out, const cg_case *g, int64_t groups,
                   void *stream, ct_status *st) {
  ct_call c = ct_call_make(op);
  c.n_in = 3, c.n_out = 1;
  c.in[0] = a, c.in[1] = w, c.in[2] = bias, c.out[0] = out;
  c.a.k[0] = 2, c.a.k[1] = groups;
  for (int i = 0; i < 2; i++) c.a.i[i] = g->s, c.a.i[3 + i] = g->p, c.a.i[6 + i] = g->d;
  *st = CT_OK;
  return ct_cuda_conv_gemm(&c, stream, st);
}
static void *main_stream(void) { return ct_cuda_main_stream(0); }

static double *cg_values(const ct_tensor *t) {
  int64_t n = ct_numel(t);
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (v && ct_copy_to_buffer(t, v, CT_FLOAT64, n) != CT_OK) {
    free(v);
    v = NULL;
  }
  return v;
}
/* max |got - ref| / (tol * scale) over the elements (<= 1: within), INFINITY where something is missing */
static double cg_excess(const ct_tensor *got, const ct_tensor *ref, const ct_tensor *scale, double tol) {
  if (!got || !ref || !scale || ct_numel(got) != ct_numel(ref) || ct_numel(ref) != ct_numel(scale)) return INFINITY;
  int64_t n = ct_numel(ref);
  double *a = cg_values(got), *b = cg_values(ref), *s = cg_values(scale), worst = a && b && s ? 0 : INFINITY;
  for (int64_t i = 0; a && b && s && i < n; i++) {
    double e = fabs(a[i] - b[i]) / (tol * s[i] + 1e-30);
    if (!(e <= worst)) worst = e; /* NaN too */
  }
  free(a), free(b), free(s);
  return worst;
}
/* the same float32 values, bit for bit (logical order) */
static bool cg_same_bits(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b || ct_numel(a) != ct_numel(b)) return false;
  int64_t n = ct_numel(a);
  float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  bool same = x && y && ct_copy_to_buffer(a, x, CT_FLOAT32, n) == CT_OK && ct_copy_to_buffer(b, y, CT_FLOAT32, n) == CT_OK &&
              memcmp(x, y, (size_t)n * sizeof *x) == 0;
  free(x), free(y);
  return same;
}

static ct_tensor *cg_cuda_cl(const ct_tensor *t) {
  ct_tensor *d = ct_to_device(t, ct_cuda(0));
  ct_tensor *c = d ? ct_to_channels_last(d) : NULL;
  ct_release(d);
  return c;
}

/* CPU references: y = conv2d(x, w, b) and dx = conv_transpose2d(gy, w, b) (the backward_input op), given shapes */
static ct_tensor *cg_fwd_op(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b, const cg_case *g) {
  int64_t st[2] = {g->s, g->s}, pd[2] = {g->p, g->p}, dl[2] = {g->d, g->d};
  return ct_conv2d(x, w, b, st, pd, dl, 1);
}
static ct_tensor *cg_bwd_op(const ct_tensor *gy, const ct_tensor *w, const ct_tensor *b, const cg_case *g) {
  int64_t st[2] = {g->s, g->s}, pd[2] = {g->p, g->p}, dl[2] = {g->d, g->d}, op[2];
  int64_t OH = cg_out(g->H, g->KH, g), OW = cg_out(g->W, g->KW, g);
  op[0] = g->H - ((OH - 1) * g->s - 2 * g->p + g->d * (g->KH - 1) + 1);
  op[1] = g->W - ((OW - 1) * g->s - 2 * g->p + g->d * (g->KW - 1) + 1);
  return ct_conv_transpose2d(gy, w, b, st, pd, op, 1, dl);
}

static const cg_case cg_cases[] = {
    {"3x3 s1 p1 bias", 2, 8, 6, 6, 12, 3, 3, 1, 1, 1, true},
    {"3x3 s2 p1", 2, 8, 7, 7, 16, 3, 3, 2, 1, 1, false},
    {"1x1 s1 p0 bias", 4, 16, 4, 4, 8, 1, 1, 1, 0, 1, true},
    {"1x1 s2 p0", 4, 16, 8, 8, 32, 1, 1, 2, 0, 1, false},
    {"5x5 s1 p2 d2", 2, 4, 9, 9, 8, 5, 5, 1, 2, 2, false},
    {"odd 3x3 s1 p1 bias", 3, 6, 7, 5, 10, 3, 3, 1, 1, 1, true},
    {"odd 3x3 s2 p1", 3, 6, 7, 5, 10, 3, 3, 2, 1, 1, false},
    {"odd 1x1 s1 p0 bias", 3, 6, 7, 5, 10, 1, 1, 1, 0, 1, true},
    {"resnet layer4 3x3", 16, 512, 4, 4, 512, 3, 3, 1, 1, 1, false},
    {"resnet layer3 3x3", 16, 256, 8, 8, 256, 3, 3, 1, 1, 1, false},
    {"resnet layer4.0 3x3 s2", 16, 256, 8, 8, 512, 3, 3, 2, 1, 1, false},
    {"resnet layer4.0 downsample 1x1 s2", 16, 256, 8, 8, 512, 1, 1, 2, 0, 1, false},
};

/* Each geometry, forward and input gradient: taken, within tolerance of the CPU (TF32 off and on) and of cuDNN, and
 * a second call gives the same bits. */
CG_TEST(vs_cpu_cudnn) {
  ct_scope *sc = ct_scope_begin();
  char *saved = tt_env_save("CT_CUDA_CONV_GEMM"), *saved_m = tt_env_save("CT_CUDA_CONV_GEMM_MAXM");
  char *saved_k = tt_env_save("CT_CUDA_CONV_GEMM_SPLITK"), *saved_1 = tt_env_save("CT_CUDA_CONV_GEMM_1X1");
  tt_env_set("CT_CUDA_CONV_GEMM", NULL);
  tt_env_set("CT_CUDA_CONV_GEMM_MAXM", NULL);
  tt_env_set("CT_CUDA_CONV_GEMM_SPLITK", NULL);
  tt_env_set("CT_CUDA_CONV_GEMM_1X1", "1"); /* the 1x1 geometries too (declined by default) */
  tt_env_set("CT_CUDA_CONV_GEMM", "all");   /* every forward (by default only those whose K is split) */
  bool tf32_was = ct_cuda_allow_tf32();
  uint64_t rs = 14014;
  for (size_t ci = 0; ci < sizeof cg_cases / sizeof cg_cases[0]; ci++) {
    const cg_case *g = &cg_cases[ci];
    ct_scope *s2 = ct_scope_begin();
    int64_t OH = cg_out(g->H, g->KH, g), OW = cg_out(g->W, g->KW, g);
    int64_t xs[4] = {g->N, g->C, g->H, g->W}, ws[4] = {g->CO, g->C, g->KH, g->KW}, ys[4] = {g->N, g->CO, OH, OW};
    int64_t bsf[1] = {g->CO}, bsb[1] = {g->C};
    ct_tensor *x0 = tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0, false), *w0 = tt_rand(&rs, 4, ws, CT_FLOAT32, 0.1, 0, false);
    ct_tensor *gy0 = tt_rand(&rs, 4, ys, CT_FLOAT32, 1, 0, false);
    ct_tensor *bf0 = g->bias ? tt_rand(&rs, 1, bsf, CT_FLOAT32, 0.5, 0, false) : NULL;
    ct_tensor *bb0 = g->bias ? tt_rand(&rs, 1, bsb, CT_FLOAT32, 0.5, 0, false) : NULL;
    /* CPU: the results and the scales S */
    ct_tensor *y_ref = cg_fwd_op(x0, w0, bf0, g), *dx_ref = cg_bwd_op(gy0, w0, bb0, g);
    ct_tensor *y_S = cg_fwd_op(ct_abs(x0), ct_abs(w0), bf0 ? ct_abs(bf0) : NULL, g);
    ct_tensor *dx_S = cg_bwd_op(ct_abs(gy0), ct_abs(w0), bb0 ? ct_abs(bb0) : NULL, g);
    CHECK(y_ref && dx_ref && y_S && dx_S);
    /* CUDA operands, channels-last */
    ct_tensor *x = cg_cuda_cl(x0), *w = cg_cuda_cl(w0), *gy = cg_cuda_cl(gy0);
    ct_tensor *bf = bf0 ? ct_to_device(bf0, ct_cuda(0)) : NULL, *bb = bb0 ? ct_to_device(bb0, ct_cuda(0)) : NULL;
    CHECK(x && w && gy && ct_is_channels_last(x) && ct_is_channels_last(w) && ct_is_channels_last(gy));
    if (!(y_ref && dx_ref && y_S && dx_S && x && w && gy)) {
      ct_scope_end(s2);
      continue;
    }
    /* cuDNN through the op path */
    tt_env_set("CT_CUDA_CONV_GEMM", "0");
    ct_cuda_set_allow_tf32(false);
    ct_tensor *y_dnn = cg_fwd_op(x, w, bf, g), *dx_dnn = cg_bwd_op(gy, w, bb, g);
    tt_env_set("CT_CUDA_CONV_GEMM", "all");
    CHECK(y_dnn && dx_dnn);
    /* tf 0: TF32 off, 1: TF32 on, 2: TF32 off and the forward's K split in 3 where it divides (else 2, else none),
     * 3: TF32 off, no split (the ResNet geometries split by default) */
    for (int tf = 0; tf < 4; tf++) {
      ct_cuda_set_allow_tf32(tf == 1);
      tt_env_set("CT_CUDA_CONV_GEMM_SPLITK", tf == 2 ? "3" : tf == 3 ? "1" : NULL);
      ct_tensor *y[2], *dx[2];
      for (int rep = 0; rep < 2; rep++) {
        y[rep] = ct_new_channels_last(ys, CT_FLOAT32, ct_cuda(0));
        dx[rep] = ct_new_channels_last(xs, CT_FLOAT32, ct_cuda(0));
        int64_t n0 = ct_cuda_conv_gemm_count(0), n1 = ct_cuda_conv_gemm_count(1);
        ct_status st1, st2;
        bool t1 = cg_run(CT_OP_convolution, x, w, bf, y[rep], g, 1, main_stream(), &st1);
        bool t2 = cg_run(CT_OP_convolution_backward_input, gy, w, bb, dx[rep], g, 1, main_stream(), &st2);
        if (!t1 || !t2 || st1 != CT_OK || st2 != CT_OK)
          ct_test_fail(__FILE__, __LINE__, "%s tf32 %d: taken %d %d, status %d %d (%s)", g->name, tf, t1, t2, (int)st1,
                       (int)st2, ct_last_error());
        CHECK(ct_cuda_conv_gemm_count(0) == n0 + 1 && ct_cuda_conv_gemm_count(1) == n1 + 1);
      }
      CHECK_OK(ct_cuda_synchronize(0));
      double tol = tf == 1 ? 4e-3 : 1e-5;
      double e1 = cg_excess(y[0], y_ref, y_S, tol), e2 = cg_excess(dx[0], dx_ref, dx_S, tol);
      if (!(e1 <= 1) || !(e2 <= 1))
        ct_test_fail(__FILE__, __LINE__, "%s tf32 %d: vs CPU forward %.3g, input gradient %.3g of tol %g * S", g->name, tf,
                     e1, e2, tol);
      if (tf != 1) {
        double d1 = cg_excess(y[0], y_dnn, y_S, 2e-5), d2 = cg_excess(dx[0], dx_dnn, dx_S, 2e-5);
        if (!(d1 <= 1) || !(d2 <= 1))
          ct_test_fail(__FILE__, __LINE__, "%s: vs cuDNN forward %.3g, input gradient %.3g of tol 2e-5 * S", g->name, d1, d2);
      }
      if (!cg_same_bits(y[0], y[1]) || !cg_same_bits(dx[0], dx[1]))
        ct_test_fail(__FILE__, __LINE__, "%s tf32 %d: a second call gave other bits", g->name, tf);
    }
    ct_cuda_set_allow_tf32(tf32_was);
    tt_env_set("CT_CUDA_CONV_GEMM_SPLITK", NULL);
    ct_scope_end(s2);
  }
  ct_cuda_conv_gemm_release(0);
  ct_cuda_set_allow_tf32(tf32_was);
  tt_env_restore("CT_CUDA_CONV_GEMM", saved);
  tt_env_restore("CT_CUDA_CONV_GEMM_MAXM", saved_m);
  tt_env_restore("CT_CUDA_CONV_GEMM_SPLITK", saved_k);
  tt_env_restore("CT_CUDA_CONV_GEMM_1X1", saved_1);
  ct_scope_end(sc);
}

/* Calls that do not fit are declined with nothing done (false, no count): NCHW operands, groups 2, float64, M over
 * CT_CUDA_CONV_GEMM_MAXM, the switches off (and =fwd / =bwd for the other op), asymmetric padding, a stream other
 * than the device's, a 1x1 convolution without CT_CUDA_CONV_GEMM_1X1=1. */
CG_TEST(declines) {
  ct_scope *sc = ct_scope_begin();
  char *saved = tt_env_save("CT_CUDA_CONV_GEMM"), *saved_m = tt_env_save("CT_CUDA_CONV_GEMM_MAXM");
  char *saved_k = tt_env_save("CT_CUDA_CONV_GEMM_SPLITK");
  tt_env_set("CT_CUDA_CONV_GEMM", "all"); /* every fitting forward (the default takes only those whose K is split) */
  tt_env_set("CT_CUDA_CONV_GEMM_MAXM", NULL);
  tt_env_set("CT_CUDA_CONV_GEMM_SPLITK", NULL);
  uint64_t rs = 1402;
  cg_case g = {"decline", 2, 8, 6, 6, 12, 3, 3, 1, 1, 1, false};
  int64_t xs[4] = {2, 8, 6, 6}, ws[4] = {12, 8, 3, 3}, ys[4] = {2, 12, 6, 6}, wg2[4] = {12, 4, 3, 3};
  ct_tensor *x0 = tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0, false), *w0 = tt_rand(&rs, 4, ws, CT_FLOAT32, 0.1, 0, false);
  ct_tensor *x = cg_cuda_cl(x0), *w = cg_cuda_cl(w0), *y = ct_new_channels_last(ys, CT_FLOAT32, ct_cuda(0));
  ct_tensor *xn = ct_to_device(x0, ct_cuda(0)), *wn = ct_to_device(w0, ct_cuda(0)); /* NCHW */
  ct_options o = ct_opts();
  o.device = ct_cuda(0);
  ct_tensor *yn = ct_empty(4, ys, o);
  ct_tensor *w2 = cg_cuda_cl(tt_rand(&rs, 4, wg2, CT_FLOAT32, 0.1, 0, false));
  int64_t ws1[4] = {12, 8, 1, 1};
  ct_tensor *w1 = cg_cuda_cl(tt_rand(&rs, 4, ws1, CT_FLOAT32, 0.1, 0, false));
  ct_tensor *x64 = x ? ct_to_channels_last(ct_to_dtype(x, CT_FLOAT64)) : NULL;
  ct_tensor *w64 = w ? ct_to_channels_last(ct_to_dtype(w, CT_FLOAT64)) : NULL;
  ct_tensor *y64 = ct_new_channels_last(ys, CT_FLOAT64, ct_cuda(0));
  CHECK(x && w && y && xn && wn && yn && w2 && w1 && x64 && w64 && y64 && ct_is_channels_last(w1));
  CHECK(x64 && ct_is_channels_last(x64) && w64 && ct_is_channels_last(w64));
  CHECK(xn && !ct_is_channels_last(xn) && wn && !ct_is_channels_last(wn) && yn && !ct_is_channels_last(yn));
  if (x && w && y && xn && wn && yn && w2 && w1 && x64 && w64 && y64) {
    int64_t n0 = ct_cuda_conv_gemm_count(0), n1 = ct_cuda_conv_gemm_count(1);
    ct_status st;
    /* the baseline is taken */
    CHECK(cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st) && st == CT_OK);
    CHECK(ct_cuda_conv_gemm_count(0) == n0 + 1);
    n0 = ct_cuda_conv_gemm_count(0);
    CHECK(!cg_run(CT_OP_convolution, xn, w, NULL, y, &g, 1, main_stream(), &st));  /* NCHW x */
    CHECK(!cg_run(CT_OP_convolution, x, wn, NULL, y, &g, 1, main_stream(), &st));  /* NCHW w */
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, yn, &g, 1, main_stream(), &st));  /* NCHW y */
    CHECK(!cg_run(CT_OP_convolution_backward_input, yn, w, NULL, x, &g, 1, main_stream(), &st)); /* NCHW gy */
    CHECK(!cg_run(CT_OP_convolution, x, w2, NULL, y, &g, 2, main_stream(), &st));  /* groups 2 */
    CHECK(!cg_run(CT_OP_convolution, x64, w64, NULL, y64, &g, 1, main_stream(), &st)); /* float64 */
    CHECK(!cg_run(CT_OP_convolution_backward_input, y64, w64, NULL, x64, &g, 1, main_stream(), &st));
    CHECK(!cg_run(CT_OP_convolution_backward_weight, x, y, NULL, w, &g, 1, main_stream(), &st)); /* not this op */
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, NULL, &st));            /* no stream */
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, (void *)(uintptr_t)16, &st)); /* another stream (not used) */
    cg_case asym = g; /* pad 0 with an output of 6: 'same' with the padding on the high side only */
    asym.p = 0;
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &asym, 1, main_stream(), &st));
    tt_env_set("CT_CUDA_CONV_GEMM_MAXM", "71"); /* M = 72 */
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st));
    CHECK(!cg_run(CT_OP_convolution_backward_input, y, w, NULL, x, &g, 1, main_stream(), &st));
    tt_env_set("CT_CUDA_CONV_GEMM_MAXM", "0");
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st));
    tt_env_set("CT_CUDA_CONV_GEMM_MAXM", "72");
    CHECK(cg_run(CT_OP_convolution_backward_input, y, w, NULL, x, &g, 1, main_stream(), &st) && st == CT_OK);
    n1++;
    tt_env_set("CT_CUDA_CONV_GEMM_MAXM", NULL);
    tt_env_set("CT_CUDA_CONV_GEMM", "0");
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st));
    CHECK(!cg_run(CT_OP_convolution_backward_input, y, w, NULL, x, &g, 1, main_stream(), &st));
    tt_env_set("CT_CUDA_CONV_GEMM", "bwd");
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st));
    CHECK(cg_run(CT_OP_convolution_backward_input, y, w, NULL, x, &g, 1, main_stream(), &st) && st == CT_OK);
    n1++;
    tt_env_set("CT_CUDA_CONV_GEMM", "fwd"); /* the forwards of the default rule: this K (72) is not split */
    CHECK(!cg_run(CT_OP_convolution_backward_input, y, w, NULL, x, &g, 1, main_stream(), &st));
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st));
    tt_env_set("CT_CUDA_CONV_GEMM_SPLITK", "2"); /* split: taken */
    CHECK(cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st) && st == CT_OK);
    n0++;
    tt_env_set("CT_CUDA_CONV_GEMM", NULL); /* the default: the input gradient, and the forward only when split */
    CHECK(cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st) && st == CT_OK);
    n0++;
    tt_env_set("CT_CUDA_CONV_GEMM_SPLITK", NULL);
    CHECK(!cg_run(CT_OP_convolution, x, w, NULL, y, &g, 1, main_stream(), &st));
    CHECK(cg_run(CT_OP_convolution_backward_input, y, w, NULL, x, &g, 1, main_stream(), &st) && st == CT_OK);
    n1++;
    tt_env_set("CT_CUDA_CONV_GEMM", "all");
    /* 1x1 (stride 1, no padding; output 6 x 6): declined unless CT_CUDA_CONV_GEMM_1X1=1 */
    cg_case one = {"1x1", 2, 8, 6, 6, 12, 1, 1, 1, 0, 1, false};
    char *saved_1 = tt_env_save("CT_CUDA_CONV_GEMM_1X1");
    tt_env_set("CT_CUDA_CONV_GEMM_1X1", NULL);
    CHECK(!cg_run(CT_OP_convolution, x, w1, NULL, y, &one, 1, main_stream(), &st));
    CHECK(!cg_run(CT_OP_convolution_backward_input, y, w1, NULL, x, &one, 1, main_stream(), &st));
    tt_env_set("CT_CUDA_CONV_GEMM_1X1", "1");
    CHECK(cg_run(CT_OP_convolution, x, w1, NULL, y, &one, 1, main_stream(), &st) && st == CT_OK);
    CHECK(cg_run(CT_OP_convolution_backward_input, y, w1, NULL, x, &one, 1, main_stream(), &st) && st == CT_OK);
    n0++, n1++;
    tt_env_restore("CT_CUDA_CONV_GEMM_1X1", saved_1);
    CHECK(ct_cuda_conv_gemm_count(0) == n0 && ct_cuda_conv_gemm_count(1) == n1);
    CHECK_OK(ct_cuda_synchronize(0));
  }
  ct_cuda_conv_gemm_release(0);
  tt_env_restore("CT_CUDA_CONV_GEMM", saved);
  tt_env_restore("CT_CUDA_CONV_GEMM_MAXM", saved_m);
  tt_env_restore("CT_CUDA_CONV_GEMM_SPLITK", saved_k);
  ct_scope_end(sc);
}

/* Inside a CUDA graph capture (the step's case: col / dcol from the graph's pool, cuBLAS captured): the replays give
 * the eager call's bits, layer4's and layer3's geometries, TF32 on as in the benchmark. */
typedef struct {
  const cg_case *g;
  ct_tensor *x, *w, *gy, *y, *dx;
  bool ok;
} cg_cap;
static ct_status cg_capture_fn(void *u) {
  cg_cap *k = u;
  for (int i = 0; i < 2; i++) {
    ct_status st1, st2;
    bool t1 = cg_run(CT_OP_convolution, k[i].x, k[i].w, NULL, k[i].y, k[i].g, 1, main_stream(), &st1);
    bool t2 = cg_run(CT_OP_convolution_backward_input, k[i].gy, k[i].w, NULL, k[i].dx, k[i].g, 1, main_stream(), &st2);
    k[i].ok = t1 && t2 && st1 == CT_OK && st2 == CT_OK;
    if (st1 != CT_OK) return st1;
    if (st2 != CT_OK) return st2;
  }
  return CT_OK;
}
CG_TEST(graph_capture) {
  ct_scope *sc = ct_scope_begin();
  char *saved = tt_env_save("CT_CUDA_CONV_GEMM");
  tt_env_set("CT_CUDA_CONV_GEMM", "all"); /* layer3's forward too (its K is not split) */
  bool tf32_was = ct_cuda_allow_tf32();
  ct_cuda_set_allow_tf32(true);
  uint64_t rs = 1403;
  cg_cap k[2];
  ct_tensor *ye[2] = {0}, *dxe[2] = {0};
  bool ok = true;
  for (int i = 0; i < 2; i++) {
    const cg_case *g = &cg_cases[8 + i];
    int64_t OH = cg_out(g->H, g->KH, g), OW = cg_out(g->W, g->KW, g);
    int64_t xs[4] = {g->N, g->C, g->H, g->W}, ws[4] = {g->CO, g->C, g->KH, g->KW}, ys[4] = {g->N, g->CO, OH, OW};
    k[i].g = g;
    k[i].x = cg_cuda_cl(tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0, false));
    k[i].w = cg_cuda_cl(tt_rand(&rs, 4, ws, CT_FLOAT32, 0.1, 0, false));
    k[i].gy = cg_cuda_cl(tt_rand(&rs, 4, ys, CT_FLOAT32, 1, 0, false));
    k[i].y = ct_new_channels_last(ys, CT_FLOAT32, ct_cuda(0));
    k[i].dx = ct_new_channels_last(xs, CT_FLOAT32, ct_cuda(0));
    ye[i] = ct_new_channels_last(ys, CT_FLOAT32, ct_cuda(0));
    dxe[i] = ct_new_channels_last(xs, CT_FLOAT32, ct_cuda(0));
    ok = ok && k[i].x && k[i].w && k[i].gy && k[i].y && k[i].dx && ye[i] && dxe[i];
  }
  CHECK(ok);
  if (ok) {
    for (int i = 0; i < 2; i++) { /* eager first (makes the handle, as the graph rules ask) */
      ct_status st1, st2;
      CHECK(cg_run(CT_OP_convolution, k[i].x, k[i].w, NULL, ye[i], k[i].g, 1, main_stream(), &st1) && st1 == CT_OK);
      CHECK(cg_run(CT_OP_convolution_backward_input, k[i].gy, k[i].w, NULL, dxe[i], k[i].g, 1, main_stream(), &st2) &&
            st2 == CT_OK);
    }
    ct_cuda_graph *gr = ct_cuda_graph_capture(0, cg_capture_fn, k);
    CHECK(gr != NULL && k[0].ok && k[1].ok);
    for (int rep = 0; gr && rep < 3; rep++) {
      CHECK_OK(ct_cuda_graph_replay(gr));
      CHECK_OK(ct_cuda_synchronize(0));
      for (int i = 0; i < 2; i++)
        if (!cg_same_bits(k[i].y, ye[i]) || !cg_same_bits(k[i].dx, dxe[i]))
          ct_test_fail(__FILE__, __LINE__, "%s: replay %d differs from the eager call", k[i].g->name, rep);
    }
    ct_cuda_conv_gemm_release(0);
    ct_cuda_graph_free(gr);
  }
  ct_cuda_set_allow_tf32(tf32_was);
  tt_env_restore("CT_CUDA_CONV_GEMM", saved);
  ct_scope_end(sc);
}

/* CT_CONV_GEMM_BENCH=1 (else nothing): per-call time of this path and of cuDNN's (the op path) for the ResNet-18
 * CIFAR b16 geometries, TF32 on, each as a CUDA graph of 50 calls replayed 20 times (launch gaps out of the way; the
 * op path's graph also holds its output allocations, which are free at replay). Also the forward without its K split
 * (CT_CUDA_CONV_GEMM_SPLITK=1) and the two products alone (no im2col / col2im / split). One line per geometry. */
static double cg_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
enum { CB_FWD, CB_FWD_NOSPLIT, CB_FWD_MM, CB_DNN_FWD, CB_BWD, CB_BWD_MM, CB_DNN_BWD, CB_N };
typedef struct {
  int mode;
  const cg_case *g;
  ct_tensor *x, *w, *gy, *y, *dx, *buf;
} cg_bench;
static float *cg_dptr(const ct_tensor *t) { return (float *)t->storage->data + t->offset; }
static ct_status cg_bench_fn(void *u) {
  cg_bench *b = u;
  const cg_case *g = b->g;
  int M = (int)(g->N * cg_out(g->H, g->KH, g) * cg_out(g->W, g->KW, g)), K = (int)(g->KH * g->KW * g->C), CO = (int)g->CO;
  for (int i = 0; i < 50; i++) {
    ct_status st = CT_OK;
    bool taken = true;
    if (b->mode == CB_FWD || b->mode == CB_FWD_NOSPLIT)
      taken = cg_run(CT_OP_convolution, b->x, b->w, NULL, b->y, g, 1, main_stream(), &st);
    else if (b->mode == CB_BWD) taken = cg_run(CT_OP_convolution_backward_input, b->gy, b->w, NULL, b->dx, g, 1, main_stream(), &st);
    else if (b->mode == CB_FWD_MM) /* y^T = W^T-op . col^T with col = the [M, K] buffer */
      st = ct_cuda_sgemm_raw(0, true, false, CO, M, K, cg_dptr(b->w), K, 0, cg_dptr(b->buf), K, 0, cg_dptr(b->y), CO, 0, 1);
    else if (b->mode == CB_BWD_MM) /* dcol^T = W . gy^T into the [M, K] buffer */
      st = ct_cuda_sgemm_raw(0, false, false, K, M, CO, cg_dptr(b->w), K, 0, cg_dptr(b->gy), CO, 0, cg_dptr(b->buf), K, 0, 1);
    else {
      ct_tensor *r = b->mode == CB_DNN_FWD ? cg_fwd_op(b->x, b->w, NULL, g) : cg_bwd_op(b->gy, b->w, NULL, g);
      st = r ? CT_OK : ct_last_status();
      ct_release(r);
    }
    if (!taken) return CT_ERR(CT_ERR_RUNTIME, "conv_gemm bench: declined");
    if (st != CT_OK) return st;
  }
  return CT_OK;
}
CG_TEST(bench) {
  const char *on = getenv("CT_CONV_GEMM_BENCH");
  if (!on || *on != '1') return;
  ct_scope *sc = ct_scope_begin();
  char *saved = tt_env_save("CT_CUDA_CONV_GEMM"), *saved_m = tt_env_save("CT_CUDA_CONV_GEMM_MAXM");
  char *saved_k = tt_env_save("CT_CUDA_CONV_GEMM_SPLITK"), *saved_1 = tt_env_save("CT_CUDA_CONV_GEMM_1X1");
  tt_env_set("CT_CUDA_CONV_GEMM_1X1", "1");
  bool tf32_was = ct_cuda_allow_tf32(), grad_was = ct_set_grad_enabled(false);
  ct_cuda_set_allow_tf32(true);
  static const cg_case bc[] = {
      {"layer3 3x3 s1 [16,256,8,8]->256", 16, 256, 8, 8, 256, 3, 3, 1, 1, 1, false},
      {"layer3.0 3x3 s2 [16,128,16,16]->256", 16, 128, 16, 16, 256, 3, 3, 2, 1, 1, false},
      {"layer3.0 1x1 s2 [16,128,16,16]->256", 16, 128, 16, 16, 256, 1, 1, 2, 0, 1, false},
      {"layer4 3x3 s1 [16,512,4,4]->512", 16, 512, 4, 4, 512, 3, 3, 1, 1, 1, false},
      {"layer4.0 3x3 s2 [16,256,8,8]->512", 16, 256, 8, 8, 512, 3, 3, 2, 1, 1, false},
      {"layer4.0 1x1 s2 [16,256,8,8]->512", 16, 256, 8, 8, 512, 1, 1, 2, 0, 1, false},
      {"layer2 3x3 s1 [16,128,16,16]->128 (M 4096)", 16, 128, 16, 16, 128, 3, 3, 1, 1, 1, false},
  };
  static const char *mname[CB_N] = {"fwd", "fwd nosplit", "fwd mm only", "fwd cudnn", "dgrad", "dgrad mm only", "dgrad cudnn"};
  tt_env_set("CT_CUDA_CONV_GEMM_MAXM", "4096");
  uint64_t rs = 1404;
  for (size_t ci = 0; ci < sizeof bc / sizeof bc[0]; ci++) {
    ct_scope *s2 = ct_scope_begin();
    const cg_case *g = &bc[ci];
    int64_t OH = cg_out(g->H, g->KH, g), OW = cg_out(g->W, g->KW, g);
    int64_t xs[4] = {g->N, g->C, g->H, g->W}, ws[4] = {g->CO, g->C, g->KH, g->KW}, ys[4] = {g->N, g->CO, OH, OW};
    int64_t nbuf[1] = {g->N * OH * OW * g->KH * g->KW * g->C};
    ct_options o = ct_opts();
    o.device = ct_cuda(0);
    cg_bench b = {0, g, cg_cuda_cl(tt_rand(&rs, 4, xs, CT_FLOAT32, 1, 0, false)),
                  cg_cuda_cl(tt_rand(&rs, 4, ws, CT_FLOAT32, 0.1, 0, false)),
                  cg_cuda_cl(tt_rand(&rs, 4, ys, CT_FLOAT32, 1, 0, false)), ct_new_channels_last(ys, CT_FLOAT32, ct_cuda(0)),
                  ct_new_channels_last(xs, CT_FLOAT32, ct_cuda(0)), ct_zeros(1, nbuf, o)};
    double us[CB_N];
    for (int mode = 0; mode < CB_N; mode++) {
      b.mode = mode;
      tt_env_set("CT_CUDA_CONV_GEMM", mode == CB_DNN_FWD || mode == CB_DNN_BWD ? "0" : "all");
      tt_env_set("CT_CUDA_CONV_GEMM_SPLITK", mode == CB_FWD_NOSPLIT ? "1" : NULL);
      ct_status st = b.x && b.w && b.gy && b.y && b.dx && b.buf ? cg_bench_fn(&b) : CT_ERR_RUNTIME; /* eager once */
      ct_cuda_graph *gr = st == CT_OK ? ct_cuda_graph_capture(0, cg_bench_fn, &b) : NULL;
      if (!gr) {
        us[mode] = NAN;
        printf("conv_gemm bench %s %s: %s\n", g->name, mname[mode], ct_last_error());
        ct_clear_error();
        continue;
      }
      ct_cuda_graph_replay(gr);
      ct_cuda_synchronize(0);
      double t0 = cg_now();
      for (int r = 0; r < 20; r++) ct_cuda_graph_replay(gr);
      ct_cuda_synchronize(0);
      us[mode] = (cg_now() - t0) / (20 * 50) * 1e6;
      ct_cuda_conv_gemm_release(0);
      ct_cuda_graph_free(gr);
    }
    printf("conv_gemm bench %-44s us:", g->name);
    for (int mode = 0; mode < CB_N; mode++) printf(" %s %.2f%s", mname[mode], us[mode], mode == CB_DNN_FWD ? " |" : "");
    printf("\n");
    ct_scope_end(s2);
  }
  tt_env_restore("CT_CUDA_CONV_GEMM_MAXM", saved_m);
  tt_env_restore("CT_CUDA_CONV_GEMM_SPLITK", saved_k);
  tt_env_restore("CT_CUDA_CONV_GEMM_1X1", saved_1);
  ct_set_grad_enabled(grad_was);
  ct_cuda_set_allow_tf32(tf32_was);
  tt_env_restore("CT_CUDA_CONV_GEMM", saved);
  ct_scope_end(sc);
}
