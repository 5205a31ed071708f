/* The WebGPU backend (native, through Dawn) against the CPU reference: the run-time ABI
 * probe, device moves, fill/copy, elementwise, reductions, softmax/layer_norm, matrix
 * products, gelu, embedding, an MLP's forward and backward, batching, and the errors;
 * convolutions (implicit GEMM) and pools with their gradients, the fused norms' gradients, the
 * 50-step CNN training-parity gate, and capture/replay of a training step.
 * Every test is skipped, with one printed line giving the count and the reason, where
 * Dawn or a Vulkan adapter is missing (CI without the npm package or SwiftShader).
 * Sizes stay tiny: on SwiftShader every kernel is a CPU-emulated Vulkan dispatch.
 * Tolerances: the GPU computes in float32 (the CPU in double, rounded once), so float32
 * checks use rel 1e-5 with abs 1e-6 for one-op elementwise results, and looser ones
 * (stated) where float32 accumulation order or transcendental approximations differ. */
#include "webgpu_test.h"
#include "backend/webgpu/webgpu_backend.h"
#include "ctorch/models.h"
#include "ctorch/webgpu.h"
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

WEBGPU_TESTS("test_webgpu", "WebGPU test(s)")
#define WG_TEST(name) WEBGPU_TEST(webgpu, name)

static ct_generator *gen(void) {
  static ct_generator *g;
  if (!g) g = ct_generator_new(4321);
  return g;
}
static ct_tensor *rnd(int nd, const int64_t *shape) { return ct_randn(nd, shape, ct_opts_dtype(CT_FLOAT32), gen()); }

/* ---- the ABI, checked against the library itself ---- */
WG_TEST(abi) {
  ct_webgpu_abi_report r;
  CHECK_OK(ct_webgpu_abi_probe(&r));
  printf("test_webgpu: adapter %s; limits %d bytes, info %d bytes written; maxStorageBufferBindingSize %llu, "
         "maxBufferSize %llu\n",
         ct_webgpu_adapter_name(), r.limits_bytes_written, r.info_bytes_written,
         (unsigned long long)r.max_storage_binding, (unsigned long long)r.max_buffer);
  CHECK(r.limits_bytes_written == (int)sizeof(WGPULimits)); /* Dawn fills exactly our WGPULimits */
  CHECK(r.info_bytes_written <= (int)sizeof(WGPUAdapterInfo) && r.info_bytes_written > (int)sizeof(WGPUAdapterInfo) - 8);
#ifdef __EMSCRIPTEN__ /* the browser build (webgpu_shim.js): the browser's adapter */
  CHECK(r.backend_type == WGPUBackendType_WebGPU);
#else
  CHECK(r.backend_type == WGPUBackendType_Vulkan);
#endif
  CHECK(r.work_done_status == 1);
  CHECK(r.work_done_message_ok);
  CHECK(r.uncaptured_error_seen);
  /* wgpuGetProcAddress may hand out Dawn's internal entry points rather than the exported
   * symbols: informational */
  printf("test_webgpu: procs %s the exported symbols\n", r.procs_match_dlsym ? "equal" : "differ from");
  /* the sizes were asked for explicitly and granted (not the 128/256 MiB defaults) */
  CHECK(r.max_storage_binding == r.adapter_max_storage_binding);
  CHECK(r.max_buffer == r.adapter_max_buffer);
  CHECK(strstr(ct_backends_compiled(), "webgpu") != NULL);
}

/* ---- moves, fill, copy ---- */
WG_TEST(roundtrip) {
  int64_t sh[2] = {3, 5};
  ct_tensor *a = rnd(2, sh), *g = W(a), *b = g ? ct_to_device(g, ct_cpu()) : NULL;
  CHECK(g && ct_tensor_device(g).type == CT_DEVICE_WEBGPU);
  SAME("roundtrip", a, b, 0, 0);
  /* int64, int32 and odd byte counts (uint8: edges read back and patched) */
  double v[5] = {-3, 7, 1LL << 40, 0, 9};
  int64_t s5[1] = {5};
  ct_dtype dts[3] = {CT_INT64, CT_INT32, CT_UINT8};
  for (int k = 0; k < 3; k++) {
    ct_tensor *i = tt_from(v, 1, s5, dts[k]), *gi = W(i), *bi = gi ? ct_to_device(gi, ct_cpu()) : NULL;
    SAME("int roundtrip", i, bi, 0, 0);
    ct_release(i);
    ct_release(gi);
    ct_release(bi);
  }
  /* empty and 0-dim */
  int64_t s0[2] = {0, 3};
  ct_tensor *e = ct_zeros(2, s0, ct_opts_dtype(CT_FLOAT32)), *ge = W(e), *be = ge ? ct_to_device(ge, ct_cpu()) : NULL;
  SAME("empty", e, be, 0, 0);
  ct_tensor *z = ct_scalar_tensor(ct_sf(2.5), ct_opts_dtype(CT_FLOAT32)), *gz = W(z);
  double item = 0;
  CHECK_OK(ct_item_double(gz, &item));
  CHECK(item == 2.5);
  ct_release(a), ct_release(g), ct_release(b), ct_release(e), ct_release(ge), ct_release(be), ct_release(z), ct_release(gz);
}

WG_TEST(fill_copy) {
  int64_t sh[2] = {4, 6};
  ct_options o = ct_opts_dtype(CT_FLOAT32);
  o.device = ct_webgpu();
  ct_tensor *z = ct_zeros(2, sh, o), *f = ct_full(2, sh, ct_sf(-1.25), o);
  ct_options oc = ct_opts_dtype(CT_FLOAT32);
  ct_tensor *zc = ct_zeros(2, sh, oc), *fc = ct_full(2, sh, ct_sf(-1.25), oc);
  SAME("zeros", zc, z, 0, 0);
  SAME("full", fc, f, 0, 0);
  ct_options oi = ct_opts_dtype(CT_INT64);
  oi.device = ct_webgpu();
  ct_tensor *fi = ct_full(2, sh, ct_si(-5000000000LL), oi);
  oi.device = ct_cpu();
  ct_tensor *fic = ct_full(2, sh, ct_si(-5000000000LL), oi);
  SAME("full int64", fic, fi, 0, 0);
  /* fill_ of a strided view, clone of a transposed tensor, dtype conversions */
  ct_tensor *a = rnd(2, sh), *ga = W(a);
  ct_tensor *va = ct_slice(a, 1, 1, 6, 2), *vg = ct_slice(ga, 1, 1, 6, 2);
  CHECK_OK(ct_fill_(va, ct_sf(3)));
  CHECK_OK(ct_fill_(vg, ct_sf(3)));
  SAME("fill_ strided", a, ga, 0, 0);
  ct_tensor *ta = ct_t(a), *tg = ct_t(ga), *ca = ct_contiguous(ta), *cg = ct_contiguous(tg);
  SAME("contiguous(t)", ca, cg, 0, 0);
  ct_tensor *ia = ct_to_dtype(ta, CT_INT64), *ig = ct_to_dtype(tg, CT_INT64);
  SAME("to int64", ia, ig, 0, 0);
  ct_tensor *i32a = ct_to_dtype(ia, CT_INT32), *i32g = ct_to_dtype(ig, CT_INT32);
  SAME("int64 -> int32", i32a, i32g, 0, 0);
  ct_tensor *ba = ct_to_dtype(i32a, CT_FLOAT32), *bg = ct_to_dtype(i32g, CT_FLOAT32);
  SAME("int32 -> float", ba, bg, 0, 0);
  ct_tensor *ka = ct_to_dtype(ia, CT_FLOAT32), *kg = ct_to_dtype(ig, CT_FLOAT32);
  SAME("int64 -> float", ka, kg, 0, 0);
  ct_release(z), ct_release(f), ct_release(zc), ct_release(fc), ct_release(fi), ct_release(fic);
  ct_release(a), ct_release(ga), ct_release(va), ct_release(vg), ct_release(ta), ct_release(tg), ct_release(ca);
  ct_release(cg), ct_release(ia), ct_release(ig), ct_release(i32a), ct_release(i32g), ct_release(ba), ct_release(bg);
  ct_release(ka), ct_release(kg);
}

/* ---- elementwise ---- */
typedef ct_tensor *(*un_fn)(const ct_tensor *);
WG_TEST(unary) {
  int64_t sh[2] = {5, 7};
  ct_tensor *a = rnd(2, sh), *ga = W(a);
  ct_tensor *pa = ct_abs(a), *pg = ct_abs(ga); /* positive inputs for log/sqrt */
  ct_tensor *ta = ct_t(a), *tg = ct_t(ga);     /* and a non-contiguous one */
  struct {
    const char *name;
    un_fn f;
    int pos;
    double rtol;
  } ops[] = {
      {"neg", ct_neg, 0, 0},        {"abs", ct_abs, 0, 0},          {"exp", ct_exp, 0, 1e-5},
      {"log", ct_log, 1, 1e-5},     {"sqrt", ct_sqrt, 1, 1e-6},     {"rsqrt", ct_rsqrt, 1, 1e-5},
      {"sin", ct_sin, 0, 1e-5},     {"cos", ct_cos, 0, 1e-5},       {"tanh", ct_tanh, 0, 1e-5},
      {"sigmoid", ct_sigmoid, 0, 1e-5}, {"relu", ct_relu, 0, 0},    {"silu", ct_silu, 0, 1e-5},
      {"erf", ct_erf, 0, 2e-6},     {"expm1", ct_expm1, 0, 2e-5},   {"log1p", ct_log1p, 1, 2e-5},
      {"square", ct_square, 0, 1e-6}, {"reciprocal", ct_reciprocal, 0, 1e-6}, {"floor", ct_floor, 0, 0},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    const ct_tensor *xa = ops[k].pos ? pa : a, *xg = ops[k].pos ? pg : ga;
    ct_tensor *r = ops[k].f(xa), *g = ops[k].f(xg);
    SAME(ops[k].name, r, g, ops[k].rtol, 1e-6);
    ct_release(r), ct_release(g);
    r = ops[k].f(ta), g = ops[k].f(tg);
    if (!ops[k].pos) SAME(ops[k].name, r, g, ops[k].rtol, 1e-6);
    ct_release(r), ct_release(g);
  }
  /* gelu both forms, leaky_relu, hardtanh (attributes baked into the kernel) */
  ct_tensor *r = ct_gelu(a, "none"), *g = ct_gelu(ga, "none");
  SAME("gelu", r, g, 2e-6, 1e-6);
  ct_release(r), ct_release(g);
  r = ct_gelu(a, "tanh"), g = ct_gelu(ga, "tanh");
  SAME("gelu tanh", r, g, 2e-6, 1e-6);
  ct_release(r), ct_release(g);
  ct_release(a), ct_release(ga), ct_release(pa), ct_release(pg), ct_release(ta), ct_release(tg);
}

WG_TEST(binary) {
  int64_t sa[2] = {4, 6}, sb[1] = {6}, sc[2] = {4, 1};
  ct_tensor *a = rnd(2, sa), *b = rnd(1, sb), *c = rnd(2, sc);
  ct_tensor *ga = W(a), *gb = W(b), *gc = W(c);
  ct_tensor *(*fs[])(const ct_tensor *, const ct_tensor *) = {ct_add, ct_sub, ct_mul, ct_div, ct_maximum, ct_minimum};
  const char *names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  for (int k = 0; k < 6; k++) {
    ct_tensor *r = fs[k](a, b), *g = fs[k](ga, gb); /* broadcast a row */
    SAME(names[k], r, g, 1e-6, 1e-6);
    ct_release(r), ct_release(g);
    r = fs[k](c, b), g = fs[k](gc, gb); /* broadcast both ways */
    SAME(names[k], r, g, 1e-6, 1e-6);
    ct_release(r), ct_release(g);
  }
  /* scalars (wrapped numbers move to the device), pow, in place */
  ct_tensor *r = ct_mul_scalar(a, ct_sf(0.5)), *g = ct_mul_scalar(ga, ct_sf(0.5));
  SAME("mul scalar", r, g, 0, 0);
  ct_release(r), ct_release(g);
  r = ct_pow_scalar(a, ct_si(2)), g = ct_pow_scalar(ga, ct_si(2));
  SAME("pow 2", r, g, 1e-6, 1e-7);
  ct_release(r), ct_release(g);
  ct_tensor *pa = ct_abs(a), *pg = ct_abs(ga);
  r = ct_pow_scalar(pa, ct_sf(1.5)), g = ct_pow_scalar(pg, ct_sf(1.5));
  SAME("pow 1.5", r, g, 1e-5, 1e-6);
  ct_release(r), ct_release(g), ct_release(pa), ct_release(pg);
  ct_tensor *a2 = ct_clone(a), *g2 = ct_clone(ga);
  CHECK_OK(ct_add_(a2, b));
  CHECK_OK(ct_add_(g2, gb));
  SAME("add_", a2, g2, 1e-6, 1e-6);
  CHECK_OK(ct_mul_(a2, a2)); /* the output aliases both inputs */
  CHECK_OK(ct_mul_(g2, g2));
  SAME("mul_ aliased", a2, g2, 1e-6, 1e-6);
  ct_release(a2), ct_release(g2);
  ct_release(a), ct_release(b), ct_release(c), ct_release(ga), ct_release(gb), ct_release(gc);
}

/* ---- reductions, softmax, layer_norm ---- */
WG_TEST(reduce) {
  int64_t sh[3] = {3, 40, 5}; /* 40: the workgroup-per-output path; 3 and 5: thread per output */
  ct_tensor *a = rnd(3, sh), *ga = W(a);
  ct_tensor *r = ct_sum(a), *g = ct_sum(ga);
  SAME("sum", r, g, 1e-5, 1e-5); /* float32 tree vs double accumulation */
  ct_release(r), ct_release(g);
  int64_t dims[4][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 2}};
  for (int k = 0; k < 4; k++) {
    int nd = dims[k][0] == dims[k][1] ? 1 : 2;
    for (int keep = 0; keep < 2; keep++) {
      r = ct_sum_dims(a, nd, dims[k], keep), g = ct_sum_dims(ga, nd, dims[k], keep);
      SAME("sum dims", r, g, 1e-5, 1e-5);
      ct_release(r), ct_release(g);
      r = ct_mean_dims(a, nd, dims[k], keep), g = ct_mean_dims(ga, nd, dims[k], keep);
      SAME("mean dims", r, g, 1e-5, 1e-6);
      ct_release(r), ct_release(g);
      r = ct_amax(a, nd, dims[k], keep), g = ct_amax(ga, nd, dims[k], keep);
      SAME("amax", r, g, 0, 0);
      ct_release(r), ct_release(g);
    }
  }
  r = ct_max(a), g = ct_max(ga);
  SAME("max", r, g, 0, 0);
  ct_release(r), ct_release(g);
  /* a permuted (non-contiguous) input */
  int64_t perm[3] = {2, 0, 1}, d1[1] = {2};
  ct_tensor *pa = ct_permute(a, 3, perm), *pg = ct_permute(ga, 3, perm);
  r = ct_sum_dims(pa, 1, d1, false), g = ct_sum_dims(pg, 1, d1, false);
  SAME("sum permuted", r, g, 1e-5, 1e-5);
  ct_release(r), ct_release(g), ct_release(pa), ct_release(pg);
  ct_release(a), ct_release(ga);
}

WG_TEST(softmax_layer_norm) {
  int64_t sh[3] = {2, 3, 300};
  ct_tensor *a = rnd(3, sh), *ga = W(a);
  for (int d = 0; d < 3; d++) {
    ct_tensor *r = ct_softmax(a, d, -1), *g = ct_softmax(ga, d, -1);
    SAME("softmax", r, g, 1e-5, 1e-7);
    ct_release(r), ct_release(g);
    r = ct_log_softmax(a, d, -1), g = ct_log_softmax(ga, d, -1);
    SAME("log_softmax", r, g, 1e-5, 1e-6);
    ct_release(r), ct_release(g);
  }
  int64_t ns[1] = {300};
  ct_tensor *w = rnd(1, ns), *b = rnd(1, ns), *gw = W(w), *gb = W(b);
  ct_tensor *r = ct_layer_norm(a, 1, ns, w, b, 1e-5), *g = ct_layer_norm(ga, 1, ns, gw, gb, 1e-5);
  SAME("layer_norm", r, g, 1e-4, 1e-5); /* float32 mean and variance over 300 terms */
  ct_release(r), ct_release(g), ct_release(w), ct_release(b), ct_release(gw), ct_release(gb);
  ct_release(a), ct_release(ga);
}

/* ---- matrix products ---- */
WG_TEST(matmul) {
  int64_t sa[2] = {37, 70}, sb[2] = {70, 65}, sbt[2] = {65, 70};
  ct_tensor *a = rnd(2, sa), *b = rnd(2, sb), *bt = rnd(2, sbt);
  ct_tensor *ga = W(a), *gb = W(b), *gbt = W(bt);
  ct_tensor *r = ct_mm(a, b), *g = ct_mm(ga, gb);
  SAME("mm", r, g, 1e-4, 1e-4); /* 70-term float32 sums */
  ct_release(r), ct_release(g);
  ct_tensor *t = ct_t(bt), *gt = ct_t(gbt);
  r = ct_mm(a, t), g = ct_mm(ga, gt);
  SAME("mm transposed", r, g, 1e-4, 1e-4);
  ct_release(r), ct_release(g);
  int64_t sbias[1] = {65};
  ct_tensor *bias = rnd(1, sbias), *gbias = W(bias);
  r = ct_linear(a, bt, bias), g = ct_linear(ga, gbt, gbias);
  SAME("linear", r, g, 1e-4, 1e-4);
  ct_release(r), ct_release(g);
  int64_t s3a[3] = {3, 5, 9}, s3b[3] = {3, 9, 4}, sv[1] = {70};
  ct_tensor *x = rnd(3, s3a), *y = rnd(3, s3b), *gx = W(x), *gy = W(y), *v = rnd(1, sv), *gv = W(v);
  r = ct_bmm(x, y), g = ct_bmm(gx, gy);
  SAME("bmm", r, g, 1e-5, 1e-5);
  ct_release(r), ct_release(g);
  r = ct_mv(a, v), g = ct_mv(ga, gv);
  SAME("mv", r, g, 1e-4, 1e-4);
  ct_release(r), ct_release(g);
  r = ct_dot(v, v), g = ct_dot(gv, gv);
  SAME("dot", r, g, 1e-5, 1e-5);
  ct_release(r), ct_release(g);
  ct_release(a), ct_release(b), ct_release(bt), ct_release(ga), ct_release(gb), ct_release(gbt), ct_release(t);
  ct_release(gt), ct_release(bias), ct_release(gbias), ct_release(x), ct_release(y), ct_release(gx), ct_release(gy);
  ct_release(v), ct_release(gv);
}

/* ---- the backward of narrow (q/k/v split of a GPT): a strided copy into zeros, no scatter ---- */
WG_TEST(narrow_backward) {
  ct_scope *sc = ct_scope_begin();
  int64_t sh[3] = {3, 5, 12};
  ct_tensor *x = rnd(3, sh), *gx = ct_detach(W(x)), *w = rnd(3, (const int64_t[]){3, 5, 4}), *gw = W(w);
  CHECK_OK(ct_requires_grad_(x, true));
  CHECK_OK(ct_requires_grad_(gx, true));
  for (int j = 0; j < 3; j++) { /* three windows, accumulated into one gradient */
    ct_tensor *l = ct_sum(ct_mul(ct_narrow(x, 2, 4 * j, 4), w)), *gl = ct_sum(ct_mul(ct_narrow(gx, 2, 4 * j, 4), gw));
    CHECK_OK(ct_backward(l, NULL, false, false));
    CHECK_OK(ct_backward(gl, NULL, false, false));
  }
  SAME("narrow backward", ct_grad(x), ct_grad(gx), 1e-6, 1e-6);
  ct_scope_end(sc);
}

/* ---- the tiled GEMM: every tile shape and operand layout on sizes that are not
 * multiples of the tile (edges, vec4 and scalar loads), batched, in place, aliased ---- */
static ct_tensor *mat_as(const ct_tensor *base, bool tr) { return tr ? ct_t(base) : ct_alias(base); }
WG_TEST(matmul_tiled) {
  /* the 128x128 tile forced (the 64x64 default serves the other products of this file; SwiftShader
   * compiles each tile's and layout's pipeline slowly, so one tile here) */
  static const char *tiles[] = {"8x8x8"};
  /* M, N, K: vec4 loads, edges past a 128 tile, K not a multiple of the slice (scalar loads are
   * checked below at the default tile; bench/bench_webgpu.c checks every tile on a GPU at
   * 1031x997x516) */
  static const int64_t sz[][3] = {{132, 68, 20}};
  int cases = 0;
  for (size_t ti = 0; ti < sizeof tiles / sizeof *tiles; ti++) {
    setenv("CT_WEBGPU_GEMM", tiles[ti], 1);
    for (size_t si = 0; si < sizeof sz / sizeof *sz; si++)
      for (int lay = 0; lay < 4; lay++) {
        ct_scope *sc = ct_scope_begin();
        int64_t M = sz[si][0], N = sz[si][1], K = sz[si][2];
        bool ta = lay & 1, tb = lay & 2;
        int64_t sa[2] = {ta ? K : M, ta ? M : K}, sbb[2] = {tb ? N : K, tb ? K : N};
        ct_tensor *a0 = rnd(2, sa), *b0 = rnd(2, sbb);
        ct_tensor *a = mat_as(a0, ta), *b = mat_as(b0, tb), *ga = mat_as(W(a0), ta), *gb = mat_as(W(b0), tb);
        char what[96];
        snprintf(what, sizeof what, "mm %s %lldx%lldx%lld ta %d tb %d", tiles[ti], (long long)M, (long long)N,
                 (long long)K, ta, tb != 0);
        SAME(what, ct_mm(a, b), ct_mm(ga, gb), 1e-4, 1e-4); /* float32 sums of up to 33 terms */
        cases++;
        ct_scope_end(sc);
      }
  }
  unsetenv("CT_WEBGPU_GEMM");
  ct_scope *sc = ct_scope_begin();
  /* unaligned operands (offset 1: scalar loads) and a batch whose matrices start at odd offsets */
  int64_t sw[2] = {37, 41}, sbt[3] = {3, 21, 18};
  ct_tensor *w = rnd(2, sw), *gw = W(w);
  ct_tensor *a = ct_narrow(w, 1, 1, 36), *ga = ct_narrow(gw, 1, 1, 36); /* [37, 36], offset 1 */
  ct_tensor *b = ct_narrow(ct_t(w), 0, 5, 36), *gb = ct_narrow(ct_t(gw), 0, 5, 36); /* [36, 37], offset 5 */
  SAME("mm unaligned", ct_mm(a, b), ct_mm(ga, gb), 1e-4, 1e-4);
  ct_tensor *x = rnd(3, sbt), *gx = W(x);
  ct_tensor *xs = ct_narrow(x, 2, 1, 16), *gxs = ct_narrow(gx, 2, 1, 16); /* [3, 21, 16] */
  ct_tensor *y = ct_transpose(xs, 1, 2), *gy = ct_transpose(gxs, 1, 2);  /* [3, 16, 21] */
  SAME("bmm strided", ct_bmm(xs, y), ct_bmm(gxs, gy), 1e-4, 1e-4);
  /* C0 and C in one buffer (addmm_ in place), and the product of a matrix with itself */
  int64_t sq[2] = {19, 19};
  ct_tensor *s = rnd(2, sq), *gs = W(s), *m = rnd(2, sq), *gm = W(m);
  CHECK_OK(ct_addmm_(s, m, m, ct_sf(0.5), ct_sf(2.0)));
  CHECK_OK(ct_addmm_(gs, gm, gm, ct_sf(0.5), ct_sf(2.0)));
  SAME("addmm_ in place", s, gs, 1e-4, 1e-4);
  SAME("baddbmm", ct_baddbmm(ct_bmm(xs, y), xs, y, ct_sf(-1.5), ct_sf(0.25)),
       ct_baddbmm(ct_bmm(gxs, gy), gxs, gy, ct_sf(-1.5), ct_sf(0.25)), 1e-4, 1e-4);
  ct_scope_end(sc);
  CHECK(cases == 4);
}

/* ---- embedding ---- */
WG_TEST(embedding) {
  ct_scope *sc = ct_scope_begin();
  int64_t sw[2] = {10, 6}, si[2] = {3, 4};
  double iv[12] = {0, 9, 3, 3, 1, 2, 9, 0, 5, 5, 5, 7};
  ct_tensor *w = rnd(2, sw), *ix = tt_from(iv, 2, si, CT_INT64);
  CHECK_OK(ct_requires_grad_(w, true));
  ct_tensor *gw = W(w), *gix = W(ix);
  ct_tensor *gwl = gw ? ct_detach(gw) : NULL;
  CHECK_OK(ct_requires_grad_(gwl, true));
  int64_t pad = 5;
  ct_tensor *r = ct_embedding(ix, w, &pad), *g = ct_embedding(gix, gwl, &pad);
  SAME("embedding", r, g, 0, 0);
  ct_tensor *sr = ct_sum(ct_mul(r, r)), *sg = ct_sum(ct_mul(g, g));
  CHECK_OK(ct_backward(sr, NULL, false, false));
  CHECK_OK(ct_backward(sg, NULL, false, false));
  ct_tensor *gr = ct_grad(w), *gg = ct_grad(gwl);
  SAME("embedding grad", gr, gg, 1e-6, 1e-6);
  /* a bad index: an IndexError at the next synchronisation or read-back (as PyTorch's
   * CUDA device-side assert; the call does not wait for the GPU), reported once */
  double bad[2] = {1, 10};
  int64_t s2[1] = {2};
  ct_tensor *bi = tt_from(bad, 1, s2, CT_INT64), *gbi = W(bi);
  ct_tensor *ge = ct_embedding(gbi, gwl, NULL);
  CHECK(ge != NULL);
  CHECK_ERR(ct_webgpu_synchronize(), "index out of range in self");
  CHECK_OK(ct_webgpu_synchronize());
  /* the flag read rides along with a data read-back: the same error there */
  ge = ct_embedding(gbi, gwl, NULL);
  double one = 0;
  ct_tensor *gsum = ct_sum(ct_embedding(gix, gwl, NULL));
  CHECK(ge && gsum);
  CHECK_ERR(ct_item_double(gsum, &one), "index out of range in self");
  CHECK_OK(ct_webgpu_synchronize());
  ct_scope_end(sc);
}

/* ---- an MLP: forward, loss, backward, one SGD step, against the CPU ---- */
WG_TEST(mlp_train_step) {
  ct_scope *sc = ct_scope_begin();
  int64_t sx[2] = {8, 12}, s1[2] = {16, 12}, sb1[1] = {16}, s2[2] = {3, 16}, sb2[1] = {3};
  ct_tensor *p[4] = {rnd(2, s1), rnd(1, sb1), rnd(2, s2), rnd(1, sb2)}, *q[4];
  for (int k = 0; k < 4; k++) {
    q[k] = ct_detach(W(p[k]));
    CHECK_OK(ct_requires_grad_(p[k], true));
    CHECK_OK(ct_requires_grad_(q[k], true));
  }
  ct_tensor *x = rnd(2, sx), *gx = W(x);
  double tv[8] = {0, 2, 1, 1, 0, 2, 2, 0};
  int64_t st[1] = {8};
  ct_tensor *tgt = tt_from(tv, 1, st, CT_INT64);
  for (int step = 0; step < 2; step++) {
    ct_tensor *h = ct_gelu(ct_linear(x, p[0], p[1]), "none"), *out = ct_linear(h, p[2], p[3]);
    ct_tensor *gh = ct_gelu(ct_linear(gx, q[0], q[1]), "none"), *gout = ct_linear(gh, q[2], q[3]);
    ct_tensor *l = ct_add(ct_mse_loss(out, ct_softmax(out, 1, -1), CT_REDUCTION_MEAN), ct_mean(ct_relu(out)));
    ct_tensor *gl = ct_add(ct_mse_loss(gout, ct_softmax(gout, 1, -1), CT_REDUCTION_MEAN), ct_mean(ct_relu(gout)));
    SAME("mlp loss", l, gl, 1e-5, 1e-6);
    CHECK_OK(ct_backward(l, NULL, false, false));
    CHECK_OK(ct_backward(gl, NULL, false, false));
    for (int k = 0; k < 4; k++) {
      ct_tensor *a = ct_grad(p[k]), *b = ct_grad(q[k]);
      SAME("mlp grad", a, b, 1e-4, 1e-6); /* float32 chains of products and sums */
      bool prev = ct_set_grad_enabled(false);
      CHECK_OK(ct_sub_(p[k], ct_mul_scalar(a, ct_sf(0.1))));
      CHECK_OK(ct_sub_(q[k], ct_mul_scalar(b, ct_sf(0.1))));
      ct_set_grad_enabled(prev);
      CHECK_OK(ct_set_grad(p[k], NULL)); /* ct_grad is borrowed */
      CHECK_OK(ct_set_grad(q[k], NULL));
    }
  }
  (void)tgt;
  for (int k = 0; k < 4; k++) SAME("mlp params after steps", p[k], q[k], 1e-4, 1e-6);
  ct_scope_end(sc);
}

/* ---- bool results, where, cat, clamp, ternaries (with NaN/inf and a transposed input) ---- */
WG_TEST(bool_ternary_cat) {
  ct_scope *sc = ct_scope_begin();
  double av[10] = {1, -2, NAN, INFINITY, 0, -0.0, 3, 3, -INFINITY, 7};
  double bv[10] = {1, 2, NAN, INFINITY, -0.0, 1, NAN, 3, 0, -7};
  int64_t s10[1] = {10}, s25[2] = {2, 5};
  ct_tensor *a = tt_from(av, 1, s10, CT_FLOAT32), *b = tt_from(bv, 1, s10, CT_FLOAT32), *ga = W(a), *gb = W(b);
  SAME("eq", ct_eq(a, b), ct_eq(ga, gb), 0, 0);
  SAME("lt", ct_lt(a, b), ct_lt(ga, gb), 0, 0);
  SAME("ne", ct_ne(a, b), ct_ne(ga, gb), 0, 0);
  SAME("ge", ct_ge(a, b), ct_ge(ga, gb), 0, 0);
  SAME("logical_and (NaN is true)", ct_logical_and(a, b), ct_logical_and(ga, gb), 0, 0);
  SAME("isnan", ct_isnan(a), ct_isnan(ga), 0, 0);
  SAME("to bool", ct_to_dtype(a, CT_BOOL), ct_to_dtype(ga, CT_BOOL), 0, 0);
  /* int64 compares exactly beyond 2^24 (f32 would call these equal) */
  double iv[4] = {16777217, -5, 4294967296.0 + 3, -4294967296.0}, jv[4] = {16777216, -5, 3, -4294967295.0};
  int64_t s4[1] = {4};
  ct_tensor *i1 = tt_from(iv, 1, s4, CT_INT64), *i2 = tt_from(jv, 1, s4, CT_INT64);
  SAME("int64 eq", ct_eq(i1, i2), ct_eq(W(i1), W(i2)), 0, 0);
  SAME("int64 lt", ct_lt(i1, i2), ct_lt(W(i1), W(i2)), 0, 0);
  ct_tensor *c = ct_gt(a, b), *gc = ct_gt(ga, gb);
  SAME("where", ct_where(c, a, b), ct_where(gc, ga, gb), 0, 0);
  /* cat of a transposed and a plain input along dim 0 */
  int64_t s52[2] = {5, 2};
  ct_tensor *x = rnd(2, s52), *y = rnd(2, s25), *xt = ct_transpose(x, 0, 1);
  const ct_tensor *cl[2] = {xt, y}, *gcl[2] = {ct_transpose(W(x), 0, 1), W(y)};
  SAME("cat", ct_cat(2, cl, 0), ct_cat(2, gcl, 0), 0, 0);
  SAME("cat dim 1", ct_cat(2, cl, 1), ct_cat(2, gcl, 1), 0, 0);
  ct_scalar lo = ct_sf(-0.5), hi = ct_sf(0.75);
  ct_tensor *z = rnd(2, s25), *gz = W(z);
  SAME("addcmul", ct_addcmul(z, y, xt, ct_sf(0.3)), ct_addcmul(gz, W(y), gcl[0], ct_sf(0.3)), 1e-5, 1e-6);
  SAME("lerp", ct_lerp(z, y, ct_sf(0.7)), ct_lerp(gz, W(y), ct_sf(0.7)), 1e-5, 1e-6);
  SAME("clamp", ct_clamp(a, &lo, &hi), ct_clamp(ga, &lo, &hi), 0, 0);
  /* clamp's gradient */
  ct_tensor *zl = ct_detach(z), *gzl = ct_detach(gz);
  CHECK_OK(ct_requires_grad_(zl, true));
  CHECK_OK(ct_requires_grad_(gzl, true));
  CHECK_OK(ct_backward(ct_sum(ct_mul(ct_clamp(zl, &lo, &hi), y)), NULL, false, false));
  CHECK_OK(ct_backward(ct_sum(ct_mul(ct_clamp(gzl, &lo, &hi), W(y))), NULL, false, false));
  SAME("clamp grad", ct_grad(zl), ct_grad(gzl), 0, 0);
  /* a scalar base's pow gradient goes through eq/ge/logical_and on the device */
  ct_tensor *e = ct_detach(z), *ge = ct_detach(gz);
  CHECK_OK(ct_requires_grad_(e, true));
  CHECK_OK(ct_requires_grad_(ge, true));
  CHECK_OK(ct_backward(ct_sum(ct_pow_scalar_tensor(ct_sf(2.5), e)), NULL, false, false));
  CHECK_OK(ct_backward(ct_sum(ct_pow_scalar_tensor(ct_sf(2.5), ge)), NULL, false, false));
  SAME("pow scalar base grad", ct_grad(e), ct_grad(ge), 1e-5, 1e-6);
  /* index_select on a transposed input, arange (float and int64) */
  double sv[3] = {4, 0, 4};
  int64_t s3[1] = {3};
  ct_tensor *si = tt_from(sv, 1, s3, CT_INT64);
  SAME("index_select", ct_index_select(xt, 1, si), ct_index_select(gcl[0], 1, W(si)), 0, 0);
  ct_options fo = ct_opts_dtype(CT_FLOAT32), go = fo, io = ct_opts_dtype(CT_INT64), gio = io;
  go.device = ct_webgpu();
  gio.device = ct_webgpu();
  SAME("arange f32", ct_arange(ct_sf(-1.3), ct_sf(2.9), ct_sf(0.3), &fo), ct_arange(ct_sf(-1.3), ct_sf(2.9), ct_sf(0.3), &go), 0, 0);
  SAME("arange int64", ct_arange(ct_si(-3), ct_si(40), ct_si(7), &io), ct_arange(ct_si(-3), ct_si(40), ct_si(7), &gio), 0, 0);
  ct_scope_end(sc);
}

/* ---- a small training run: an MLP, cross-entropy, AdamW, 20 steps, losses per step ---- */
/* The WebGPU-vs-CPU training loops: `steps` steps of the same model (parameters p on the CPU,
 * q on WebGPU; loss(params, x, t) builds the mean loss) stepped by oc / og; each step's losses
 * agree within 1e-3 relative. Returns the worst per-step relative difference; *first / *last:
 * the CPU's first and last losses; *pipes1 (if not NULL): the pipeline count after step 1. */
typedef ct_tensor *(*twin_loss_fn)(ct_tensor *const *p, const ct_tensor *x, const ct_tensor *t);
static double twin_train(int steps, twin_loss_fn loss, ct_optim *oc, ct_optim *og, ct_tensor *const *p,
                         ct_tensor *const *q, const ct_tensor *x, const ct_tensor *gx, const ct_tensor *t,
                         const ct_tensor *gt, double *first, double *last, int64_t *pipes1) {
  double worst = 0;
  for (int step = 0; oc && og && step < steps; step++) {
    ct_scope *ss = ct_scope_begin();
    ct_tensor *l = loss(p, x, t), *gl = loss(q, gx, gt);
    double lc = NAN, lg = NAN;
    CHECK_OK(l ? ct_item_double(l, &lc) : ct_last_status());
    CHECK_OK(gl ? ct_item_double(gl, &lg) : ct_last_status());
    double rel = fabs(lg - lc) / fabs(lc);
    if (!(rel <= 1e-3)) ct_test_fail(__FILE__, __LINE__, "step %d: loss webgpu %.8g, cpu %.8g", step, lg, lc);
    if (rel > worst) worst = rel;
    if (step == 0) *first = lc;
    *last = lc;
    CHECK_OK(ct_optim_zero_grad(oc, true));
    CHECK_OK(ct_optim_zero_grad(og, true));
    CHECK_OK(ct_backward(l, NULL, false, false));
    CHECK_OK(ct_backward(gl, NULL, false, false));
    CHECK_OK(ct_optim_step(oc));
    CHECK_OK(ct_optim_step(og));
    ct_scope_end(ss);
    if (step == 1 && pipes1) *pipes1 = ct_webgpu_get_counters().pipelines;
  }
  return worst;
}

static ct_tensor *mlp_loss(ct_tensor *const *p, const ct_tensor *x, const ct_tensor *t) {
  return ct_cross_entropy(ct_linear(ct_relu(ct_linear(x, p[0], p[1])), p[2], p[3]), t, NULL, CT_REDUCTION_MEAN, -100, 0);
}
WG_TEST(mlp_adamw_20_steps) {
  ct_scope *sc = ct_scope_begin();
  int64_t sx[2] = {16, 10}, s1[2] = {24, 10}, sb1[1] = {24}, s2[2] = {4, 24}, sb2[1] = {4};
  ct_tensor *p[4] = {ct_mul_scalar(rnd(2, s1), ct_sf(0.3)), ct_mul_scalar(rnd(1, sb1), ct_sf(0.1)),
                     ct_mul_scalar(rnd(2, s2), ct_sf(0.3)), ct_mul_scalar(rnd(1, sb2), ct_sf(0.1))};
  ct_tensor *q[4];
  for (int k = 0; k < 4; k++) {
    p[k] = ct_detach(p[k]);
    q[k] = ct_detach(W(p[k]));
    CHECK_OK(ct_requires_grad_(p[k], true));
    CHECK_OK(ct_requires_grad_(q[k], true));
  }
  double tv[16];
  for (int i = 0; i < 16; i++) tv[i] = (i * 7) % 4;
  int64_t st[1] = {16};
  ct_tensor *x = rnd(2, sx), *gx = W(x), *t = tt_from(tv, 1, st, CT_INT64), *gt = W(t);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
  o.lr = 0.01;
  ct_optim *oc = ct_optim_new(CT_OPTIM_ADAMW, 4, p, &o), *og = ct_optim_new(CT_OPTIM_ADAMW, 4, q, &o);
  CHECK(oc && og);
  double first = 0, last = 0;
  int64_t pipes1 = -1;
  twin_train(20, mlp_loss, oc, og, p, q, x, gx, t, gt, &first, &last, &pipes1);
  /* AdamW's step size changes every step: it travels in a parameter buffer, so the steps
   * after the first two compile nothing */
  CHECK(last < first); /* it trains */
  CHECK(ct_webgpu_get_counters().pipelines == pipes1);
  for (int k = 0; k < 4; k++) SAME("params after 20 AdamW steps", p[k], q[k], 1e-3, 1e-5);
  ct_optim_free(oc);
  ct_optim_free(og);
  ct_scope_end(sc);
}

/* ---- int64 add/sub (two words with the carry; BatchNorm's num_batches_tracked += 1) ---- */
WG_TEST(int64_add) {
  ct_scope *sc = ct_scope_begin();
  double av[8] = {0, -1, 4294967295.0, -4294967296.0, 1099511627776.0, -5, 123456789012.0, 4294967296.0};
  double bv[8] = {1, 1, 1, -1, -1099511627775.0, -7, 987654321, -1};
  int64_t s8[1] = {8};
  ct_tensor *a = tt_from(av, 1, s8, CT_INT64), *b = tt_from(bv, 1, s8, CT_INT64), *ga = W(a), *gb = W(b);
  SAME("int64 a + b (carries, signs)", ct_add(a, b), ct_add(ga, gb), 0, 0);
  SAME("int64 a - b", ct_sub(a, b), ct_sub(ga, gb), 0, 0);
  ct_tensor *g2 = ct_clone(ga);
  CHECK_OK(ct_add_scalar_(g2, ct_si(1)));
  SAME("int64 a += 1", ct_add_scalar(a, ct_si(1)), g2, 0, 0);
  /* a BatchNorm2d training forward on WebGPU counts its batches on the device */
  ct_module *bn = ct_batch_norm2d_new(3, 1e-5, 0.1, true, true);
  CHECK(bn && ct_module_to_device(bn, ct_webgpu()) == CT_OK);
  int64_t sx[4] = {2, 3, 4, 4};
  ct_tensor *x = W(rnd(4, sx));
  for (int k = 0; bn && k < 3; k++) CHECK(ct_module_forward(bn, x) != NULL);
  double nb = -1;
  CHECK_OK(bn ? ct_item_double(ct_module_buffer(bn, "num_batches_tracked"), &nb) : ct_last_status());
  CHECK(nb == 3);
  ct_module_free(bn);
  ct_scope_end(sc);
}

/* ---- the fused SGD kernel (one dispatch per parameter after the first step) against the
 * CPU: momentum with dampening, Nesterov, weight decay, maximize, 6 steps each ---- */
WG_TEST(sgd_fused_variants) {
  ct_scope *sc = ct_scope_begin();
  int64_t sx[2] = {16, 10}, s1[2] = {24, 10}, sb1[1] = {24}, s2[2] = {4, 24}, sb2[1] = {4}, st[1] = {16};
  const int64_t *shp[4] = {s1, sb1, s2, sb2};
  int nds[4] = {2, 1, 2, 1};
  double tv[16];
  for (int i = 0; i < 16; i++) tv[i] = (i * 5) % 4;
  ct_tensor *x = rnd(2, sx), *gx = W(x), *t = tt_from(tv, 1, st, CT_INT64), *gt = W(t);
  struct { double mom, damp, wd; bool nest, maxi; } V[4] = {
      {0.9, 0, 0, false, false}, {0.9, 0.3, 0.01, false, false}, {0.8, 0, 0.05, true, false}, {0.5, 0, 0, false, true}};
  for (int v = 0; v < 4; v++) {
    ct_tensor *p[4], *q[4];
    for (int k = 0; k < 4; k++) {
      p[k] = ct_detach(ct_mul_scalar(rnd(nds[k], shp[k]), ct_sf(0.3)));
      q[k] = ct_detach(W(p[k]));
      CHECK_OK(ct_requires_grad_(p[k], true));
      CHECK_OK(ct_requires_grad_(q[k], true));
    }
    ct_optim_options o = ct_optim_defaults(CT_OPTIM_SGD);
    o.lr = 0.1, o.momentum = V[v].mom, o.dampening = V[v].damp, o.weight_decay = V[v].wd, o.nesterov = V[v].nest;
    o.maximize = V[v].maxi;
    ct_optim *oc = ct_optim_new(CT_OPTIM_SGD, 4, p, &o), *og = ct_optim_new(CT_OPTIM_SGD, 4, q, &o);
    CHECK(oc && og);
    double first = 0, last = 0;
    int64_t d0 = ct_webgpu_get_counters().dispatches;
    twin_train(6, mlp_loss, oc, og, p, q, x, gx, t, gt, &first, &last, NULL);
    CHECK(ct_webgpu_get_counters().dispatches > d0);
    CHECK(V[v].maxi ? last > first : last < first);
    for (int k = 0; k < 4; k++) SAME("params after 6 SGD steps", p[k], q[k], 1e-4, 1e-6);
    ct_optim_free(oc);
    ct_optim_free(og);
  }
  ct_scope_end(sc);
}

/* ---- batching: a chain of kernels is one submit, read back once ---- */
WG_TEST(batching) {
  int64_t sh[1] = {64};
  ct_tensor *a = rnd(1, sh), *ga = W(a);
  CHECK_OK(ct_webgpu_synchronize());
  ct_webgpu_counters c0 = ct_webgpu_get_counters();
  ct_tensor *x = ct_clone(a), *gx = ct_clone(ga);
  for (int i = 0; i < 40; i++) {
    ct_tensor *y = ct_tanh(ct_add(x, a)), *gy = ct_tanh(ct_add(gx, ga));
    ct_release(x), ct_release(gx);
    x = y, gx = gy;
  }
  ct_webgpu_counters c1 = ct_webgpu_get_counters();
  SAME("chain", x, gx, 1e-5, 1e-6);
  ct_webgpu_counters c2 = ct_webgpu_get_counters();
  CHECK(c1.dispatches - c0.dispatches >= 80);
  CHECK(c1.submits == c0.submits); /* nothing submitted before the read */
  CHECK(c2.submits - c1.submits <= 2);
  CHECK(c2.downloads - c1.downloads == 1);
  CHECK(c2.pipelines - c0.pipelines <= 3); /* add, tanh and clone's copy: compiled once each */
  ct_release(a), ct_release(ga), ct_release(x), ct_release(gx);
}

/* ---- errors ---- */
WG_TEST(errors) {
  int64_t sh[1] = {4};
  ct_tensor *d = ct_randn(1, sh, ct_opts_dtype(CT_FLOAT64), gen()), *gd = W(d);
  CHECK(gd != NULL); /* float64 storage moves, but no kernel computes in it */
  CHECK_ERR_PTR(ct_exp(gd), "WGSL has no float64");
  ct_tensor *a = rnd(1, sh), *ga = W(a);
  CHECK_ERR_PTR(ct_cumsum(ga, 0, -1), "Could not run 'aten::cumsum' with arguments from the 'WebGPU' backend");
  CHECK_ERR_PTR(ct_add(ga, a), "Expected all tensors to be on the same device");
  ct_release(d), ct_release(gd), ct_release(a), ct_release(ga);
}

/* ---- the fallback: without the library, a clear reason and the CPU keeps working ---- */
/* Without a device (no Dawn natively, no adapter in the browser: web/webgpu/wg_browser.c
 * calls this too): moving a tensor there fails with PyTorch's message, the CPU computes. */
void ct_test_webgpu_cpu_fallback(const char *reason_has) {
  CHECK(!ct_device_available(ct_webgpu()));
  CHECK(strstr(ct_webgpu_unavailable_reason(), reason_has) != NULL);
  int64_t sh[1] = {3};
  ct_tensor *a = ct_ones(1, sh, ct_opts_dtype(CT_FLOAT32));
  CHECK_ERR_PTR(ct_to_device(a, ct_webgpu()), "webgpu device 0 is not available");
  ct_tensor *b = ct_add(a, a);
  CHECK(b && tt_at(b, 2) == 2.0);
  ct_release(a), ct_release(b);
}
#ifndef __EMSCRIPTEN__ /* the browser's fallback is web/webgpu/wg_browser.c's */
TEST(webgpu_absent_child) {
  if (!getenv("CT_WEBGPU_EXPECT_ABSENT")) return; /* only in the child run below */
  ct_test_webgpu_cpu_fallback("cannot load Dawn");
}
TEST(webgpu_fallback_without_library) {
  if (getenv("CT_WEBGPU_EXPECT_ABSENT")) return;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  char *argv[] = {exe, "webgpu_absent_child", NULL};
  /* the same environment plus the two variables */
  int ne = 0;
  while (environ[ne]) ne++;
  char **env = calloc((size_t)ne + 3, sizeof *env);
  if (!env) return;
  int k = 0;
  for (int i = 0; i < ne; i++)
    if (strncmp(environ[i], "CT_WEBGPU_LIB=", 14)) env[k++] = environ[i]; /* ours must be the one seen */
  env[k] = "CT_WEBGPU_LIB=/nonexistent/libwebgpu_wrapper.so";
  env[k + 1] = "CT_WEBGPU_EXPECT_ABSENT=1";
  pid_t pid;
  posix_spawn_file_actions_t fa; /* its output would read like this run's */
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawn(&pid, exe, &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  CHECK(rc == 0);
  int status = 0;
  if (rc == 0) waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
#endif

/* ---- the fused Adam/AdamW kernel against the CPU: decoupled and L2 weight decay,
 * maximize, and amsgrad (not fused: the reference path on WebGPU), four steps on a fixed
 * gradient each, one dispatch per parameter step where fused ---- */
WG_TEST(adam_fused_variants) {
  int64_t sh[2] = {5, 7};
  for (int v = 0; v < 4; v++) {
    ct_scope *sc = ct_scope_begin();
    ct_tensor *p0 = rnd(2, sh), *g0 = rnd(2, sh);
    ct_tensor *pc = ct_clone(p0), *pg = W(p0), *gc = ct_clone(g0), *gg = W(g0);
    CHECK_OK(ct_requires_grad_(pc, true));
    CHECK_OK(ct_requires_grad_(pg, true));
    ct_optim_kind kind = v == 1 ? CT_OPTIM_ADAM : CT_OPTIM_ADAMW;
    ct_optim_options o = ct_optim_defaults(kind);
    o.lr = 0.01, o.weight_decay = v == 0 ? 0.01 : 0.1, o.maximize = v == 1, o.amsgrad = v == 3;
    if (v == 2) o.weight_decay = 0;
    ct_optim *oc = ct_optim_new(kind, 1, &pc, &o), *og = ct_optim_new(kind, 1, &pg, &o);
    CHECK(oc && og);
    for (int step = 0; oc && og && step < 4; step++) {
      CHECK_OK(ct_set_grad(pc, gc));
      CHECK_OK(ct_set_grad(pg, gg));
      CHECK_OK(ct_optim_step(oc));
      ct_webgpu_counters c0 = ct_webgpu_get_counters();
      CHECK_OK(ct_optim_step(og));
      ct_webgpu_counters c1 = ct_webgpu_get_counters();
      /* the first step also fills the state with zeros */
      if (v != 3 && step > 0) CHECK(c1.dispatches - c0.dispatches == 1);
      if (v == 3 && step > 0) CHECK(c1.dispatches - c0.dispatches > 1);
    }
    /* float32 on both sides, the same operations in the same order: equal up to rounding
     * where the compiler contracts a multiply-add (rel 1e-5) */
    SAME("parameter after 4 Adam(W) steps", pc, pg, 1e-5, 1e-6);
    ct_optim_free(oc), ct_optim_free(og);
    ct_scope_end(sc);
  }
}

#ifndef __EMSCRIPTEN__ /* in the browser, web/gpt.html's WebGPU run (make test-webgpu-browser) trains it */
/* ---- the GPT of models.h: one training step's dispatches and read-backs (issue 9) ----
 * ct_gpt on WebGPU and on the CPU from the same seed, three AdamW steps on the same batch:
 * the losses agree (float32 sums in another order: rel 1e-4), and a step after the first
 * records at most GPT_MAX_DISPATCH dispatches and GPT_MAX_READBACKS read-backs and compiles
 * nothing. */
static ct_gpt *gpt_small(ct_device dev) {
  ct_gpt_config c = ct_gpt_config_gpt2();
  c.vocab_size = 64, c.n_positions = 16, c.n_embd = 32, c.n_layer = 2, c.n_head = 2, c.dropout = 0;
  ct_manual_seed(99);
  ct_gpt *m = ct_gpt_new(&c, NULL);
  if (m && dev.type != CT_DEVICE_CPU && ct_gpt_to_device(m, dev) != CT_OK) ct_gpt_free(m), m = NULL;
  return m;
}
static ct_optim *gpt_adamw(ct_gpt *m) {
  const ct_dict *ps = ct_gpt_parameters(m);
  ct_tensor *arr[64];
  int64_t n = ct_dict_len(ps);
  if (n > 64) return NULL;
  for (int64_t i = 0; i < n; i++) arr[i] = ct_dict_tensor(ps, i);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
  o.lr = 3e-3;
  return ct_optim_new(CT_OPTIM_ADAMW, n, arr, &o);
}
static double gpt_step_once(ct_gpt *m, ct_optim *opt, const ct_tensor *x, const ct_tensor *y) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *loss = NULL;
  double v = NAN;
  CHECK_OK(ct_gpt_forward(m, x, y, true, NULL, NULL, &loss));
  CHECK_OK(ct_optim_zero_grad(opt, true));
  CHECK_OK(ct_backward(loss, NULL, false, false));
  CHECK_OK(ct_optim_step(opt));
  CHECK_OK(ct_item_double(loss, &v));
  ct_scope_end(sc);
  return v;
}
/* measured on SwiftShader for this model (2 layers): 233 dispatches (fused AdamW: one per
 * parameter; fused layer_norm forward/backward), 7 read-backs: the loss, plus the host-side index
 * checks of cross_entropy (src/ops/loss.c check_nll), gather (src/ops/index.c check_range) and
 * linear_cross_entropy's kept-target count (src/nn/linear_ce.c), run again by its checkpoint's
 * recompute in the backward */
#define GPT_MAX_DISPATCH 240
#define GPT_MAX_READBACKS 7
WG_TEST(gpt_step_counts) {
  ct_gpt *mc = gpt_small(ct_cpu()), *mg = gpt_small(ct_webgpu());
  CHECK(mc && mg);
  if (!mc || !mg) {
    ct_gpt_free(mc), ct_gpt_free(mg);
    return;
  }
  ct_optim *oc = gpt_adamw(mc), *og = gpt_adamw(mg);
  int64_t sh[2] = {2, 16};
  ct_options oi = ct_opts_dtype(CT_INT64);
  ct_tensor *x = ct_randint(0, 64, 2, sh, &oi, gen()), *y = ct_randint(0, 64, 2, sh, &oi, gen());
  ct_tensor *gx = W(x), *gy = W(y);
  double first = 0, last = 0;
  for (int step = 0; step < 3; step++) {
    double lc = gpt_step_once(mc, oc, x, y);
    CHECK_OK(ct_webgpu_synchronize());
    ct_webgpu_counters c0 = ct_webgpu_get_counters();
    double lg = gpt_step_once(mg, og, gx, gy);
    ct_webgpu_counters c1 = ct_webgpu_get_counters();
    CHECK(fabs(lg - lc) <= 1e-4 * fabs(lc));
    if (step == 0) first = lg;
    last = lg;
    printf("test_webgpu: GPT step %d: loss cpu %.6f webgpu %.6f; %lld dispatches, %lld submits, %lld uploads, "
           "%lld read-backs, %lld pipelines compiled\n", step, lc, lg, (long long)(c1.dispatches - c0.dispatches),
           (long long)(c1.submits - c0.submits), (long long)(c1.uploads - c0.uploads),
           (long long)(c1.downloads - c0.downloads), (long long)(c1.pipelines - c0.pipelines));
    if (step > 0) {
      CHECK(c1.dispatches - c0.dispatches <= GPT_MAX_DISPATCH);
      CHECK(c1.downloads - c0.downloads <= GPT_MAX_READBACKS);
      CHECK(c1.pipelines == c0.pipelines);
    }
  }
  CHECK(last < first);
  ct_optim_free(oc), ct_optim_free(og);
  ct_gpt_free(mc), ct_gpt_free(mg);
  ct_release(x), ct_release(y), ct_release(gx), ct_release(gy);
}
#endif

/* ---- convolution and pooling (implicit-GEMM conv, pools, their gradients) against the CPU ----
 * Each case runs f on CPU leaves and on WebGPU leaves holding the same values, the first
 * input on WebGPU a transposed (non-contiguous) view of its leaf, then backward of
 * sum(y * r) for a random r; values and every input's gradient are compared. */
typedef ct_tensor *(*wg_case_fn)(ct_tensor *const *in, const int64_t *p);
static void wg_case(const char *what, int n, const int64_t *const *shapes, const int *nds, wg_case_fn f,
                    const int64_t *p, double rtol, double atol) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *cin[4], *gin[4], *gleaf[4];
  for (int i = 0; i < n; i++) {
    cin[i] = ct_detach(rnd(nds[i], shapes[i]));
    CHECK_OK(ct_requires_grad_(cin[i], true));
    int nd = nds[i];
    if (i == 0 && nd >= 2) { /* the leaf holds x^T in memory; the op sees x through a transposed view */
      gleaf[i] = ct_detach(W(ct_contiguous(ct_transpose(cin[i], nd - 2, nd - 1))));
      CHECK_OK(ct_requires_grad_(gleaf[i], true));
      gin[i] = ct_transpose(gleaf[i], nd - 2, nd - 1);
      CHECK(!ct_is_contiguous(gin[i]) || shapes[i][nd - 1] == 1 || shapes[i][nd - 2] == 1);
    } else {
      gleaf[i] = gin[i] = ct_detach(W(cin[i]));
      CHECK_OK(ct_requires_grad_(gleaf[i], true));
    }
  }
  ct_tensor *yc = f(cin, p), *yg = f(gin, p);
  CHECK(yc && yg);
  if (yc && yg) {
    char m[160];
    snprintf(m, sizeof m, "%s: value", what);
    SAME(m, yc, yg, rtol, atol);
    ct_tensor *r = rnd(ct_ndim(yc), ct_shape(yc));
    CHECK_OK(ct_backward(ct_sum(ct_mul(yc, r)), NULL, false, false));
    CHECK_OK(ct_backward(ct_sum(ct_mul(yg, W(r))), NULL, false, false));
    for (int i = 0; i < n; i++) {
      snprintf(m, sizeof m, "%s: gradient of input %d", what, i);
      const ct_tensor *gg = ct_grad(gleaf[i]);
      int nd = nds[i];
      SAME(m, ct_grad(cin[i]), i == 0 && nd >= 2 && gg ? ct_transpose(gg, nd - 2, nd - 1) : gg, rtol, atol);
    }
  }
  ct_scope_end(sc);
}

/* p: stride[2], padding[2], dilation[2], groups */
static ct_tensor *case_conv2d(ct_tensor *const *in, const int64_t *p) { return ct_conv2d(in[0], in[1], in[2], p, p + 2, p + 4, p[6]); }
static ct_tensor *case_conv2d_nobias(ct_tensor *const *in, const int64_t *p) { return ct_conv2d(in[0], in[1], NULL, p, p + 2, p + 4, p[6]); }
static ct_tensor *case_conv1d(ct_tensor *const *in, const int64_t *p) { return ct_conv1d(in[0], in[1], in[2], p[0], p[2], p[4], p[6]); }
static ct_tensor *case_convT(ct_tensor *const *in, const int64_t *p) { return ct_conv_transpose2d(in[0], in[1], in[2], p, p + 2, NULL, p[6], p + 4); }

/* Tolerances: float32 sums of K products in tile order against the CPU's double sums
 * rounded once: |error| <~ K * 2^-24 * sum|terms|, so rel 1e-4 with abs 1e-4 for K <= ~300;
 * the weight gradients that sum over N x output positions (K up to 2048) get abs 5e-4. */
WG_TEST(conv2d) {
  struct {
    const char *what;
    int64_t x[4], w[4], p[7];
    bool bias;
    double atol;
  } cs[] = {
      {"conv2d 3x3", {2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1, 0, 0, 1, 1, 1}, true, 1e-4},
      {"conv2d stride 2 pad 1 dilation 2", {2, 3, 9, 8}, {5, 3, 3, 2}, {2, 1, 1, 1, 2, 2, 1}, true, 1e-4},
      {"conv2d groups 2, no bias", {1, 4, 6, 6}, {6, 2, 3, 3}, {1, 2, 1, 1, 1, 1, 2}, false, 1e-4},
      {"conv2d 5x5 (MNIST's first layer)", {3, 1, 12, 12}, {8, 1, 5, 5}, {1, 1, 0, 0, 1, 1, 1}, true, 1e-4},
      {"conv2d 1x1 stride 2 (ResNet's shortcut)", {2, 8, 6, 6}, {4, 8, 1, 1}, {2, 2, 0, 0, 1, 1, 1}, false, 1e-4},
      /* N x out = 2 x 32 x 32 = 2048 >= the split threshold: the weight gradient splits K */
      {"conv2d split-K weight gradient", {2, 2, 34, 34}, {3, 2, 3, 3}, {1, 1, 0, 0, 1, 1, 1}, true, 5e-4},
  };
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    int64_t sb[1] = {cs[k].w[0]};
    const int64_t *shapes[3] = {cs[k].x, cs[k].w, sb};
    int nds[3] = {4, 4, 1};
    wg_case(cs[k].what, cs[k].bias ? 3 : 2, shapes, nds, cs[k].bias ? case_conv2d : case_conv2d_nobias, cs[k].p, 1e-4,
            cs[k].atol);
  }
  /* conv1d (one spatial dim) and conv_transpose2d (the input-gradient kernel with a bias) */
  int64_t x1[3] = {2, 3, 11}, w1[3] = {4, 3, 3}, b1[1] = {4}, p1[7] = {2, 0, 1, 0, 2, 0, 1};
  const int64_t *s1[3] = {x1, w1, b1};
  int n1[3] = {3, 3, 1};
  wg_case("conv1d stride 2 pad 1 dilation 2", 3, s1, n1, case_conv1d, p1, 1e-4, 1e-4);
  int64_t xt[4] = {2, 4, 5, 4}, wt[4] = {4, 3, 3, 3}, bt[1] = {3}, pt[7] = {2, 2, 1, 0, 1, 1, 1};
  const int64_t *st[3] = {xt, wt, bt};
  int nt[3] = {4, 4, 1};
  wg_case("conv_transpose2d stride 2", 3, st, nt, case_convT, pt, 1e-4, 1e-4);
  /* the three kernels are each other's derivatives: double backward stays on the device */
  ct_scope *sc = ct_scope_begin();
  int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {3, 2, 3, 3}, s11[2] = {1, 1}, z2[2] = {0, 0};
  ct_tensor *x = ct_detach(rnd(4, xs)), *w = ct_detach(rnd(4, ws)), *gx = ct_detach(W(x)), *gw = ct_detach(W(w));
  CHECK_OK(ct_requires_grad_(x, true));
  CHECK_OK(ct_requires_grad_(gx, true));
  ct_tensor *dc = NULL, *dg = NULL;
  ct_tensor *yc = ct_conv2d(x, w, NULL, s11, z2, s11, 1), *yg = ct_conv2d(gx, gw, NULL, s11, z2, s11, 1);
  ct_tensor *ic[1] = {x}, *ig[1] = {gx};
  CHECK_OK(ct_autograd_grad(1, (ct_tensor *[]){ct_sum(ct_mul(yc, yc))}, NULL, 1, ic, &dc, true, true, false));
  CHECK_OK(ct_autograd_grad(1, (ct_tensor *[]){ct_sum(ct_mul(yg, yg))}, NULL, 1, ig, &dg, true, true, false));
  CHECK(dc && dg);
  if (dc && dg) {
    SAME("conv2d first gradient", dc, dg, 1e-4, 1e-4);
    CHECK_OK(ct_backward(ct_sum(ct_mul(dc, dc)), NULL, false, false));
    CHECK_OK(ct_backward(ct_sum(ct_mul(dg, dg)), NULL, false, false));
    SAME("conv2d double backward", ct_grad(x), ct_grad(gx), 1e-4, 1e-3);
  }
  ct_scope_end(sc);
  /* refused: float64 (WGSL has none) */
  ct_tensor *d = ct_randn(4, xs, ct_opts_dtype(CT_FLOAT64), gen()), *dw = ct_randn(4, ws, ct_opts_dtype(CT_FLOAT64), gen());
  ct_tensor *gd = W(d), *gdw = W(dw);
  CHECK_ERR_PTR(ct_conv2d(gd, gdw, NULL, s11, z2, s11, 1), "WGSL has no float64");
  ct_release(d), ct_release(dw), ct_release(gd), ct_release(gdw);
}

/* The convolution's tile and split-K choices (session 8: T = 4 register tiles from 64 rows and
 * columns, K split below 528 workgroups): a 64-channel 3x3 layer whose forward and input gradient
 * split K = 576 in three at T = 4, against the CPU under each forced T, session 7's policy and
 * without the next slice's prefetch.
 * Sums of 576 products in another order than the CPU's double: abs 5e-4. */
WG_TEST(conv2d_tiles) {
  int64_t xs[4] = {2, 64, 6, 6}, ws[4] = {64, 64, 3, 3}, bs[1] = {64}, p[7] = {1, 1, 1, 1, 1, 1, 1};
  const int64_t *shapes[3] = {xs, ws, bs};
  int nds[3] = {4, 4, 1};
  static const char *const env[][2] = {{NULL, NULL}, {"CT_WEBGPU_CONV_T", "1"}, {"CT_WEBGPU_CONV_T", "2"},
                                       {"CT_WEBGPU_CONV_POLICY", "7"}, {"CT_WEBGPU_CONV_PREFETCH", "0"}};
  for (int k = 0; k < 5; k++) {
    char what[96];
    snprintf(what, sizeof what, "conv2d 64->64 3x3 %s=%s", env[k][0] ? env[k][0] : "default", env[k][1] ? env[k][1] : "");
    if (env[k][0]) setenv(env[k][0], env[k][1], 1);
    wg_case(what, 3, shapes, nds, case_conv2d, p, 1e-4, 5e-4);
    if (env[k][0]) unsetenv(env[k][0]);
  }
}

/* The fused batch_norm on WebGPU (k_native_bn / k_native_bn_backward, session 8), with and without
 * the ReLU behind it (ct_batch_norm_relu, src/ops/nn.c; declared there, not in a public header),
 * training and eval: values, the gradients of x (a transposed view on the device), weight and bias,
 * and the running statistics, against the CPU. The eval forward is two dispatches (statistics,
 * then y) where the composed ops took six, training three (the running statistics' update in one,
 * ct_webgpu_bn_update_running, for eight): counted, so a silent fall-back to them fails.
 * Tolerance: float32 sums of 4 x 5 x 7 = 140 terms per channel in another order than the CPU's
 * double sums: rel 1e-4, abs 1e-5. */
ct_tensor *ct_batch_norm_relu(const ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                              const ct_tensor *weight, const ct_tensor *bias, bool training, double momentum, double eps);
WG_TEST(batch_norm_fused) {
  int64_t xs[4] = {4, 6, 7, 5}, cs[1] = {6};
  for (int mode = 0; mode < 4; mode++) {
    bool training = mode & 1, relu = mode & 2;
    ct_scope *sc = ct_scope_begin();
    ct_tensor *x = ct_detach(rnd(4, xs)), *w = ct_detach(rnd(1, cs)), *b = ct_detach(rnd(1, cs));
    ct_tensor *rm = ct_detach(rnd(1, cs)), *rv = ct_add_scalar(ct_abs(rnd(1, cs)), ct_sf(0.5));
    /* the device's x: a transposed view of a leaf holding x^T (non-contiguous input) */
    ct_tensor *gxl = ct_detach(W(ct_contiguous(ct_transpose(x, 2, 3)))), *gx = NULL;
    ct_tensor *gw = ct_detach(W(w)), *gb = ct_detach(W(b)), *grm = W(rm), *grv = W(rv);
    ct_tensor *leaves[6] = {x, w, b, gxl, gw, gb};
    for (int i = 0; i < 6; i++) CHECK_OK(ct_requires_grad_(leaves[i], true));
    gx = ct_transpose(gxl, 2, 3);
    ct_tensor *(*f)(const ct_tensor *, ct_tensor *, ct_tensor *, const ct_tensor *, const ct_tensor *, bool, double,
                    double) = relu ? ct_batch_norm_relu : ct_batch_norm;
    ct_tensor *yc = f(x, rm, rv, w, b, training, 0.1, 1e-5);
    ct_tensor *gxc = ct_contiguous(gx); /* so the count below is the op's alone */
    CHECK_OK(ct_webgpu_synchronize());
    ct_webgpu_counters c0 = ct_webgpu_get_counters();
    ct_tensor *yg = f(gxc, grm, grv, gw, gb, training, 0.1, 1e-5);
    ct_webgpu_counters c1 = ct_webgpu_get_counters();
    char m[120];
    snprintf(m, sizeof m, "batch_norm%s %s: value", relu ? "_relu" : "", training ? "training" : "eval");
    CHECK(yc && yg);
    if (!yc || !yg) {
      ct_scope_end(sc);
      continue;
    }
    SAME(m, yc, yg, 1e-4, 1e-5);
    CHECK(c1.dispatches - c0.dispatches == (training ? 3 : 2)); /* training: + the running statistics' update */
    if (training) {
      snprintf(m, sizeof m, "batch_norm%s training: running_mean", relu ? "_relu" : "");
      SAME(m, rm, grm, 1e-4, 1e-6);
      snprintf(m, sizeof m, "batch_norm%s training: running_var", relu ? "_relu" : "");
      SAME(m, rv, grv, 1e-4, 1e-6);
    }
    ct_tensor *r = rnd(4, xs);
    CHECK_OK(ct_backward(ct_sum(ct_mul(yc, r)), NULL, false, false));
    CHECK_OK(ct_backward(ct_sum(ct_mul(yg, W(r))), NULL, false, false));
    const char *names[3] = {"x", "weight", "bias"};
    for (int i = 0; i < 3; i++) {
      snprintf(m, sizeof m, "batch_norm%s %s: gradient of %s", relu ? "_relu" : "", training ? "training" : "eval", names[i]);
      const ct_tensor *gg = ct_grad(leaves[3 + i]);
      SAME(m, ct_grad(leaves[i]), i == 0 && gg ? ct_transpose(gg, 2, 3) : gg, 1e-4, 1e-5);
    }
    ct_scope_end(sc);
  }
}

/* layer_norm / rms_norm over the last dim (p[0] elements): the fused kernels' gradients, the
 * input a transposed view (float32 statistics over p[0] terms: 1e-4) */
static ct_tensor *case_layer_norm(ct_tensor *const *in, const int64_t *p) { return ct_layer_norm(in[0], 1, p, in[1], in[2], 1e-5); }
static ct_tensor *case_rms_norm(ct_tensor *const *in, const int64_t *p) { return ct_rms_norm(in[0], 1, p, in[1], 1e-6); }
WG_TEST(norm_gradients) {
  int64_t xs[3] = {3, 5, 40}, ws[1] = {40};
  const int64_t *sh[3] = {xs, ws, ws};
  int nd[3] = {3, 1, 1};
  wg_case("layer_norm", 3, sh, nd, case_layer_norm, ws, 1e-4, 1e-5);
  wg_case("rms_norm", 2, sh, nd, case_rms_norm, ws, 1e-4, 1e-5);
}

/* p: kernel[2], stride[2], padding[2], dilation[2], ceil_mode, (avg) count_include_pad, divisor */
static ct_tensor *case_maxpool(ct_tensor *const *in, const int64_t *p) { return ct_max_pool2d(in[0], p, p + 2, p + 4, p + 6, p[8], NULL); }
static ct_tensor *case_avgpool(ct_tensor *const *in, const int64_t *p) { return ct_avg_pool2d(in[0], p, p + 2, p + 4, p[8], p[9], p[10]); }
static ct_tensor *case_adaptive_avg(ct_tensor *const *in, const int64_t *p) { return ct_adaptive_avg_pool2d(in[0], p); }
static ct_tensor *case_adaptive_max(ct_tensor *const *in, const int64_t *p) { return ct_adaptive_max_pool2d(in[0], p, NULL); }

/* Pools: sums of at most 9 terms (1e-5 rel); max pools are exact */
WG_TEST(pool2d) {
  int64_t xs[4] = {2, 3, 9, 7}, x8[4] = {2, 2, 8, 8};
  const int64_t *sh[1] = {xs}, *s8[1] = {x8};
  int nd[1] = {4};
  int64_t mp[3][9] = {{2, 2, 2, 2, 0, 0, 1, 1, 0}, {3, 3, 2, 2, 1, 1, 1, 1, 1}, {3, 2, 2, 1, 1, 0, 2, 1, 0}};
  wg_case("max_pool2d 2x2", 1, s8, nd, case_maxpool, mp[0], 0, 0);
  wg_case("max_pool2d 3x3 stride 2 pad 1 ceil_mode (overlapping windows)", 1, sh, nd, case_maxpool, mp[1], 0, 0);
  wg_case("max_pool2d dilation 2", 1, sh, nd, case_maxpool, mp[2], 0, 0);
  int64_t ap[4][11] = {{2, 2, 2, 2, 0, 0, 1, 1, 0, 1, 0},
                       {3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},
                       {3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},
                       {3, 3, 2, 2, 1, 0, 1, 1, 0, 1, 5}};
  wg_case("avg_pool2d 2x2", 1, s8, nd, case_avgpool, ap[0], 1e-5, 1e-6);
  wg_case("avg_pool2d 3x3 stride 2 pad 1 ceil_mode", 1, sh, nd, case_avgpool, ap[1], 1e-5, 1e-6);
  wg_case("avg_pool2d count_include_pad=False", 1, sh, nd, case_avgpool, ap[2], 1e-5, 1e-6);
  wg_case("avg_pool2d divisor_override 5", 1, sh, nd, case_avgpool, ap[3], 1e-5, 1e-6);
  int64_t o1[2] = {1, 1}, o3[2] = {4, 3};
  wg_case("adaptive_avg_pool2d to 1x1", 1, sh, nd, case_adaptive_avg, o1, 1e-5, 1e-6);
  wg_case("adaptive_avg_pool2d to 4x3", 1, sh, nd, case_adaptive_avg, o3, 1e-5, 1e-6);
  wg_case("adaptive_max_pool2d to 4x3", 1, sh, nd, case_adaptive_max, o3, 0, 0);
  /* NaN and -inf: NaN wins its window, the indices agree */
  ct_scope *sc = ct_scope_begin();
  double v[16] = {1, NAN, 3, 4, -INFINITY, -INFINITY, 2, 2, 5, 6, NAN, NAN, 0, -1, 7, INFINITY};
  int64_t s4[4] = {1, 1, 4, 4}, k2[2] = {2, 2};
  ct_tensor *x = tt_from(v, 4, s4, CT_FLOAT32), *ic = NULL, *ig = NULL;
  ct_tensor *yc = ct_max_pool2d(x, k2, NULL, NULL, NULL, false, &ic), *yg = ct_max_pool2d(W(x), k2, NULL, NULL, NULL, false, &ig);
  SAME("max_pool2d NaN/inf values", yc, yg, 0, 0);
  SAME("max_pool2d NaN/inf indices", ic, ig, 0, 0);
  ct_scope_end(sc); /* it releases the indices too */
}

/* ---- the training-parity gate (issue 9): the same CNN (MNIST's layer kinds: conv 5x5, relu,
 * max pool, conv 3x3, relu, max pool, flatten, linear), seed and data for 50 Adam steps on
 * WebGPU (natively, through Dawn) and on the CPU: the losses agree step by step within 1e-3
 * relative, and the loss falls. The browser pair (WebGPU vs WebAssembly) is
 * web/test/run_webgpu_tests.mjs's (web/mnist.html's switch). ---- */
#ifndef __EMSCRIPTEN__
static ct_tensor *cnn_fwd(ct_tensor *const *p, const ct_tensor *x) {
  int64_t s1[2] = {1, 1}, z[2] = {0, 0}, k2[2] = {2, 2};
  ct_tensor *h = ct_max_pool2d(ct_relu(ct_conv2d(x, p[0], p[1], s1, z, s1, 1)), k2, NULL, NULL, NULL, false, NULL);
  h = ct_max_pool2d(ct_relu(ct_conv2d(h, p[2], p[3], s1, z, s1, 1)), k2, NULL, NULL, NULL, false, NULL);
  return ct_linear(ct_flatten(h, 1, -1), p[4], p[5]);
}
static ct_tensor *cnn_loss(ct_tensor *const *p, const ct_tensor *x, const ct_tensor *t) {
  return ct_cross_entropy(cnn_fwd(p, x), t, NULL, CT_REDUCTION_MEAN, -100, 0);
}
WG_TEST(cnn_training_parity_50_steps) {
  ct_scope *sc = ct_scope_begin();
  int64_t shp[6][4] = {{4, 1, 5, 5}, {4}, {8, 4, 3, 3}, {8}, {10, 32}, {10}};
  int nds[6] = {4, 1, 4, 1, 2, 1};
  double scale[6] = {0.4, 0.1, 0.25, 0.1, 0.2, 0.1};
  ct_tensor *p[6], *q[6];
  for (int k = 0; k < 6; k++) {
    p[k] = ct_detach(ct_mul_scalar(rnd(nds[k], shp[k]), ct_sf(scale[k])));
    q[k] = ct_detach(W(p[k]));
    CHECK_OK(ct_requires_grad_(p[k], true));
    CHECK_OK(ct_requires_grad_(q[k], true));
  }
  int64_t sx[4] = {8, 1, 16, 16}, st[1] = {8};
  double tv[8];
  for (int i = 0; i < 8; i++) tv[i] = (i * 3) % 10;
  ct_tensor *x = rnd(4, sx), *gx = W(x), *t = tt_from(tv, 1, st, CT_INT64), *gt = W(t);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAM);
  o.lr = 0.01;
  ct_optim *oc = ct_optim_new(CT_OPTIM_ADAM, 6, p, &o), *og = ct_optim_new(CT_OPTIM_ADAM, 6, q, &o);
  CHECK(oc && og);
  double first = 0, last = 0, worst = twin_train(50, cnn_loss, oc, og, p, q, x, gx, t, gt, &first, &last, NULL);
  printf("test_webgpu: CNN 50 Adam steps: loss %.5f -> %.5f, worst per-step |webgpu - cpu| / cpu = %.2e (gate 1e-3)\n",
         first, last, worst);
  CHECK(last < 0.5 * first); /* it trains */
  ct_optim_free(oc);
  ct_optim_free(og);
  ct_scope_end(sc);
}
#endif

/* ---- capture and replay (issue 9): an MLP's SGD step (forward, cross-entropy, backward,
 * update) captured once and replayed 5 times equals 6 eager steps of a twin model, loss by
 * loss and parameter by parameter (the same kernels in the same order: exactly); replays
 * compile nothing and issue the captured dispatches only. ---- */
#ifndef __EMSCRIPTEN__
static ct_tensor *mlp_opt_step(ct_optim *o, ct_tensor *const *p, const ct_tensor *x, const ct_tensor *t) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *l = ct_cross_entropy(ct_linear(ct_relu(ct_linear(x, p[0], p[1])), p[2], p[3]), t, NULL, CT_REDUCTION_MEAN,
                                  -100, 0);
  if (!l || ct_optim_zero_grad(o, true) || ct_backward(l, NULL, false, false) || ct_optim_step(o)) l = NULL;
  ct_keep(l);
  ct_scope_end(sc);
  return l;
}
/* Two identical 6-12-3 MLPs on WebGPU (parameters a and b, requiring grad) and one batch x, t:
 * one model steps eagerly, its twin is captured and replayed. In the caller's scope. */
static void twin_mlp(ct_tensor **a, ct_tensor **b, ct_tensor **x, ct_tensor **t) {
  int64_t sx[2] = {8, 6}, s1[2] = {12, 6}, sb1[1] = {12}, s2[2] = {3, 12}, sb2[1] = {3}, st[1] = {8};
  const int64_t *shp[4] = {s1, sb1, s2, sb2};
  int nds[4] = {2, 1, 2, 1};
  for (int k = 0; k < 4; k++) {
    ct_tensor *h = ct_mul_scalar(rnd(nds[k], shp[k]), ct_sf(0.4));
    a[k] = ct_detach(W(h)), b[k] = ct_detach(W(h));
    CHECK_OK(ct_requires_grad_(a[k], true));
    CHECK_OK(ct_requires_grad_(b[k], true));
  }
  double tv[8] = {0, 2, 1, 1, 2, 0, 0, 1};
  *x = W(rnd(2, sx)), *t = W(tt_from(tv, 1, st, CT_INT64));
}
WG_TEST(capture_replay) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *a[4], *b[4], *x, *t;
  twin_mlp(a, b, &x, &t);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_SGD);
  o.lr = 0.5;
  ct_optim *oa = ct_optim_new(CT_OPTIM_SGD, 4, a, &o), *ob = ct_optim_new(CT_OPTIM_SGD, 4, b, &o);
  CHECK(oa && ob);
  /* step 0: model b's step runs eagerly while it is captured */
  CHECK_OK(ct_webgpu_capture_begin());
  CHECK_ERR(ct_webgpu_capture_begin(), "already under way");
  ct_tensor *lb = mlp_opt_step(ob, b, x, t);
  ct_webgpu_graph *g = ct_webgpu_capture_end();
  CHECK(g && lb && ct_webgpu_graph_dispatches(g) > 10);
  CHECK(ct_webgpu_capture_end() == NULL);
  double first = 0, last = 0;
  for (int step = 0; g && lb && step < 6; step++) {
    ct_webgpu_counters c0 = ct_webgpu_get_counters();
    if (step > 0) CHECK_OK(ct_webgpu_graph_replay(g));
    ct_webgpu_counters c1 = ct_webgpu_get_counters();
    if (step > 0) {
      CHECK(c1.dispatches - c0.dispatches == ct_webgpu_graph_dispatches(g));
      CHECK(c1.pipelines == c0.pipelines && c1.uploads == c0.uploads && c1.downloads == c0.downloads);
    }
    ct_tensor *la = mlp_opt_step(oa, a, x, t);
    double va = NAN, vb = NAN;
    CHECK_OK(ct_item_double(la, &va));
    CHECK_OK(ct_item_double(lb, &vb)); /* the replay wrote the captured loss tensor */
    if (va != vb) ct_test_fail(__FILE__, __LINE__, "step %d: eager loss %.9g, replayed %.9g", step, va, vb);
    if (step == 0) first = va;
    last = va;
    ct_release(la);
  }
  CHECK(last < first);
  for (int k = 0; k < 4; k++) SAME("parameters after 6 eager / 1 captured + 5 replayed steps", ct_to_device(a[k], ct_cpu()), b[k], 0, 0);
  CHECK_ERR(ct_webgpu_graph_replay(NULL), "graph is NULL");
  ct_webgpu_graph_free(g);
  ct_release(lb);
  ct_optim_free(oa);
  ct_optim_free(ob);
  ct_scope_end(sc);
}

/* ---- capture and replay of an AdamW step (issue 9): the step count, bias corrections and
 * learning rate are host state that moves every step; the fused kernel's captured dispatch
 * recomputes them at each replay, so 1 captured + 5 replayed steps equal 6 eager steps of a
 * twin bit for bit (a learning-rate change between replays included), the host's step count
 * advances as the eager one, and a replay uploads only the moved words. ---- */
WG_TEST(capture_replay_adamw) {
  ct_scope *sc = ct_scope_begin();
  ct_tensor *a[4], *b[4], *x, *t;
  twin_mlp(a, b, &x, &t);
  ct_optim_options o = ct_optim_defaults(CT_OPTIM_ADAMW);
  o.lr = 0.05;
  o.weight_decay = 0.1;
  ct_optim *oa = ct_optim_new(CT_OPTIM_ADAMW, 4, a, &o), *ob = ct_optim_new(CT_OPTIM_ADAMW, 4, b, &o);
  CHECK(oa && ob);
  /* step 0 eager on both: Adam's state exists before the capture (its first step makes it) */
  ct_release(mlp_opt_step(oa, a, x, t));
  ct_release(mlp_opt_step(ob, b, x, t));
  CHECK_OK(ct_webgpu_capture_begin());
  ct_tensor *lb = mlp_opt_step(ob, b, x, t);
  ct_webgpu_graph *g = ct_webgpu_capture_end();
  CHECK(g && lb);
  double first = 0, last = 0;
  for (int step = 1; g && lb && step < 7; step++) {
    if (step == 4) { /* a scheduler's change between replays reaches the replayed update */
      CHECK_OK(ct_optim_set_lr(oa, 0, 0.02));
      CHECK_OK(ct_optim_set_lr(ob, 0, 0.02));
    }
    ct_webgpu_counters c0 = ct_webgpu_get_counters();
    if (step > 1) CHECK_OK(ct_webgpu_graph_replay(g));
    ct_webgpu_counters c1 = ct_webgpu_get_counters();
    if (step > 1) CHECK(c1.pipelines == c0.pipelines && c1.downloads == c0.downloads);
    ct_tensor *la = mlp_opt_step(oa, a, x, t);
    double va = NAN, vb = NAN;
    CHECK_OK(ct_item_double(la, &va));
    CHECK_OK(ct_item_double(lb, &vb));
    if (va != vb) ct_test_fail(__FILE__, __LINE__, "step %d: eager loss %.9g, replayed %.9g", step, va, vb);
    if (step == 1) first = va;
    last = va;
    ct_release(la);
  }
  CHECK(last < first);
  for (int k = 0; k < 4; k++) SAME("parameters after 7 eager / 2 eager + 5 replayed AdamW steps", ct_to_device(a[k], ct_cpu()), b[k], 0, 0);
  ct_dict *da = ct_dict_new(), *db = ct_dict_new();
  CHECK_OK(ct_optim_state_dict(oa, da));
  CHECK_OK(ct_optim_state_dict(ob, db));
  double sa = NAN, sb = NAN;
  CHECK_OK(ct_item_double(ct_dict_get(da, "state.0.step"), &sa));
  CHECK_OK(ct_item_double(ct_dict_get(db, "state.0.step"), &sb));
  CHECK(sa == 7 && sb == 7); /* the replays counted their steps on the host */
  ct_dict_free(da);
  ct_dict_free(db);
  ct_webgpu_graph_free(g);
  ct_release(lb);
  ct_optim_free(oa);
  ct_optim_free(ob);
  ct_scope_end(sc);
}
#endif
