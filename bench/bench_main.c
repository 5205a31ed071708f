/* ctorch benchmarks: each measures ctorch and a peer in the same run on the same
 * machine with the same thread count and reports the ratio (> 1 means ctorch is
 * faster / reaches more bandwidth than the peer). Peers: memcpy bandwidth (threaded
 * like our kernels), OpenBLAS (when built with CT_BENCH_OPENBLAS), PyTorch CPU (through
 * bench/bench_torch.py run by /usr/bin/python3, with torch.set_num_threads).
 * Writes a JSON list of {name, ours, peer, peer_name, unit, ratio}.
 * Usage: bench_ctorch [--json FILE] [--quick] [--only SUBSTR] [--threads N] [--no-torch] [--reference]
 * CT_BENCH_PYTHON names the Python with torch (default /usr/bin/python3). */
#include "ctorch.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_clock.h"
#if defined(CT_BENCH_OPENBLAS) && __has_include(<cblas.h>)
#include <cblas.h>
#define HAVE_BLAS 1
void openblas_set_num_threads(int);
char *openblas_get_corename(void);
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif


typedef void (*bench_fn)(void *ctx);
/* Best of `reps` timings after one warm-up: the machine may be shared, and the
 * minimum is the least disturbed estimate for both sides of a comparison. Stops
 * early once `budget` seconds are spent (at least 3 timings). */
static double time_it(bench_fn fn, void *ctx, int reps, double budget) {
  fn(ctx);
  double best = 1e30, start = now();
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    fn(ctx);
    double t = now() - t0;
    if (t < best) best = t;
    if (r >= 2 && now() - start > budget) break;
  }
  return best;
}

/* ---- report ---- */
typedef struct {
  FILE *json;
  int n;
} report;
static report R = {NULL, 0};
static const char *only = NULL;
static bool quick = false;
static int nthreads = 1;

static bool wanted(const char *name) { return !only || strstr(name, only); }

/* higher_better: ours/peer are rates (GB/s, GFLOP/s); else times (s). ratio > 1: ctorch ahead. */
static void emit(const char *name, double ours, double peer, const char *peer_name, const char *unit, bool higher_better,
                 const char *extra) {
  double ratio = higher_better ? ours / peer : peer / ours;
  printf("%-40s ours %9.3f  %-16s %9.3f %-8s ratio %5.2f  %s\n", name, higher_better ? ours : ours * 1e3, peer_name,
         higher_better ? peer : peer * 1e3, higher_better ? unit : "ms", ratio, extra ? extra : "");
  fflush(stdout);
  if (R.json)
    fprintf(R.json, "%s\n  {\"name\": \"%s\", \"ours\": %.6g, \"peer\": %.6g, \"peer_name\": \"%s\", \"unit\": \"%s\", \"ratio\": %.4f}",
            R.n++ ? "," : "", name, ours, peer, peer_name, unit, ratio);
}

static void die_if_null(const void *p) {
  if (!p) {
    fprintf(stderr, "bench: %s\n", ct_last_error());
    exit(1);
  }
}

/* ---- PyTorch peer: bench_torch.py prints "name seconds" lines ---- */
#define MAX_TORCH 256
static struct {
  char name[96];
  double t;
} torch_res[MAX_TORCH];
static int n_torch = 0;

static void run_torch(const char *script, bool enabled) {
  if (!enabled) return;
  char cmd[512];
  const char *py = getenv("CT_BENCH_PYTHON"); /* an interpreter with torch; Debian's by default */
  snprintf(cmd, sizeof cmd, "%s %s --threads %d%s%s%s 2>/dev/null", py && *py ? py : "/usr/bin/python3", script, nthreads,
           quick ? " --quick" : "", only ? " --only " : "", only ? only : "");
  FILE *p = popen(cmd, "r");
  if (!p) return;
  char line[256];
  while (fgets(line, sizeof line, p) && n_torch < MAX_TORCH) {
    char nm[96];
    double t;
    if (sscanf(line, "%95s %lf", nm, &t) == 2) {
      snprintf(torch_res[n_torch].name, sizeof torch_res[n_torch].name, "%s", nm);
      torch_res[n_torch++].t = t;
    }
  }
  pclose(p);
}
static double torch_time(const char *name) {
  for (int i = 0; i < n_torch; i++)
    if (!strcmp(torch_res[i].name, name)) return torch_res[i].t;
  return -1;
}

#include "bench_models.inc.c" /* issue 5's model benchmarks (ResNet-18, ViT-Tiny) */
#include "bench_conv.inc.c"   /* issue 3's conv2d layer benchmarks (ResNet-18 shapes) */

/* ---- FMA peak of one core: independent FMA chains, no memory ---- */
#if defined(__x86_64__)
/* 12 independent accumulators in named variables (an array may be spilled) */
#define PK_DECL(V, SET) V q0 = SET(1), q1 = SET(2), q2 = SET(3), q3 = SET(4), q4 = SET(5), q5 = SET(6), q6 = SET(7), \
                          q7 = SET(8), q8 = SET(9), q9 = SET(10), q10 = SET(11), q11 = SET(12);
#define PK_STEP(F)                                                                                                 \
  q0 = F(q0, m, a); q1 = F(q1, m, a); q2 = F(q2, m, a); q3 = F(q3, m, a); q4 = F(q4, m, a); q5 = F(q5, m, a);      \
  q6 = F(q6, m, a); q7 = F(q7, m, a); q8 = F(q8, m, a); q9 = F(q9, m, a); q10 = F(q10, m, a); q11 = F(q11, m, a);
#define PK_SUM(ADD) ADD(ADD(ADD(ADD(q0, q1), ADD(q2, q3)), ADD(ADD(q4, q5), ADD(q6, q7))), ADD(ADD(q8, q9), ADD(q10, q11)))
__attribute__((target("avx512f"))) static double fma_peak_avx512(void) {
  PK_DECL(__m512, _mm512_set1_ps)
  __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  long iters = 1000000;
  double t = 1e30; /* best of short runs: the machine may be shared */
  for (int rep = 0; rep < 20; rep++) {
    double t0 = now();
    for (long k = 0; k < iters; k++) {
      PK_STEP(_mm512_fmadd_ps)
    }
    double dt = now() - t0;
    if (dt < t) t = dt;
  }
  if (_mm512_reduce_add_ps(PK_SUM(_mm512_add_ps)) == 12345.f) printf("!");
  return (double)iters * 12 * 16 * 2 / t / 1e9;
}
__attribute__((target("avx2,fma"))) static double fma_peak_avx2(void) {
  PK_DECL(__m256, _mm256_set1_ps)
  __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  long iters = 1000000;
  double t = 1e30;
  for (int rep = 0; rep < 20; rep++) {
    double t0 = now();
    for (long k = 0; k < iters; k++) {
      PK_STEP(_mm256_fmadd_ps)
    }
    double dt = now() - t0;
    if (dt < t) t = dt;
  }
  float out[8];
  _mm256_storeu_ps(out, PK_SUM(_mm256_add_ps));
  if (out[0] == 12345.f) printf("!");
  return (double)iters * 12 * 8 * 2 / t / 1e9;
}
#endif
static double fma_peak_core(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return fma_peak_avx512();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return fma_peak_avx2();
#endif
  return 0;
}

/* ---- GEMM ---- */
typedef struct {
  ct_tensor *a, *b;
  float *fa, *fb, *fc;
  double *da, *db, *dc;
  int64_t M, N, K;
  bool dbl, tb; /* float64; B transposed (x @ W^T, as linear layers do) */
} gemm_ctx;

static void run_ours_gemm(void *p) {
  gemm_ctx *c = p;
  ct_tensor *r = ct_matmul(c->a, c->b);
  die_if_null(r);
  ct_release(r);
}
#ifdef HAVE_BLAS
static void run_blas_gemm(void *p) {
  gemm_ctx *c = p;
  if (c->dbl)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans, (int)c->M, (int)c->N, (int)c->K, 1.0,
                c->da, (int)c->K, c->db, c->tb ? (int)c->K : (int)c->N, 0.0, c->dc, (int)c->N);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans, (int)c->M, (int)c->N, (int)c->K, 1.0f,
                c->fa, (int)c->K, c->fb, c->tb ? (int)c->K : (int)c->N, 0.0f, c->fc, (int)c->N);
}
#endif

static void bench_gemm_one(int64_t M, int64_t N, int64_t K, bool dbl, bool tb, int threads, double peak_core) {
  char name[96];
  snprintf(name, sizeof name, "%cgemm_%lldx%lldx%lld%s_t%d", dbl ? 'd' : 's', (long long)M, (long long)N, (long long)K,
           tb ? "_bT" : "", threads);
  if (!wanted(name)) return;
  ct_set_num_threads(threads);
  gemm_ctx c;
  memset(&c, 0, sizeof c);
  c.M = M, c.N = N, c.K = K, c.dbl = dbl, c.tb = tb;
  ct_dtype dt = dbl ? CT_FLOAT64 : CT_FLOAT32;
  size_t es = dbl ? 8 : 4;
  void *ha = malloc(es * (size_t)(M * K)), *hb = malloc(es * (size_t)(K * N)), *hc = malloc(es * (size_t)(M * N));
  die_if_null(ha && hb && hc ? ha : NULL);
  srand(1);
  for (int64_t i = 0; i < M * K; i++) {
    double v = rand() / (double)RAND_MAX - 0.5;
    if (dbl) ((double *)ha)[i] = v;
    else ((float *)ha)[i] = (float)v;
  }
  for (int64_t i = 0; i < K * N; i++) {
    double v = rand() / (double)RAND_MAX - 0.5;
    if (dbl) ((double *)hb)[i] = v;
    else ((float *)hb)[i] = (float)v;
  }
  memset(hc, 0, es * (size_t)(M * N));
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sbt[2] = {N, K};
  c.a = ct_from_buffer(ha, dt, 2, sa, ct_opts_dtype(dt));
  die_if_null(c.a);
  if (tb) {
    ct_tensor *w = ct_from_buffer(hb, dt, 2, sbt, ct_opts_dtype(dt));
    die_if_null(w);
    c.b = ct_t(w); /* a transposed view: no copy */
    ct_release(w);
  } else {
    c.b = ct_from_buffer(hb, dt, 2, sb, ct_opts_dtype(dt));
  }
  die_if_null(c.b);
  c.fa = ha, c.fb = hb, c.fc = hc, c.da = ha, c.db = hb, c.dc = hc;
  double flop = 2.0 * (double)M * (double)N * (double)K;
  int reps = quick ? 3 : (flop < 1e9 ? 30 : 8);
  double budget = quick ? 0.5 : 3.0;
  double t_ours = time_it(run_ours_gemm, &c, reps, budget);
  double g_ours = flop / t_ours / 1e9;
  double peak = peak_core * threads * (dbl ? 0.5 : 1.0);
  char extra[128];
  snprintf(extra, sizeof extra, "(%.0f%% of FMA peak %.0f GFLOP/s)", 100 * g_ours / peak, peak);
#ifdef HAVE_BLAS
  openblas_set_num_threads(threads);
  double t_blas = time_it(run_blas_gemm, &c, reps, budget);
  snprintf(extra, sizeof extra, "(%.0f%% of FMA peak %.0f GFLOP/s, openblas %.0f%%)", 100 * g_ours / peak, peak,
           100 * flop / t_blas / 1e9 / peak);
  emit(name, g_ours, flop / t_blas / 1e9, "openblas", "GFLOP/s", true, extra);
#else
  printf("%-40s ours %9.3f GFLOP/s %s (no OpenBLAS peer in this build)\n", name, g_ours, extra);
#endif
  char tn[128];
  snprintf(tn, sizeof tn, "%s", name);
  double tt = torch_time(tn);
  if (tt > 0) {
    char n2[128];
    snprintf(n2, sizeof n2, "%s_vs_torch", name);
    emit(n2, g_ours, flop / tt / 1e9, "torch", "GFLOP/s", true, NULL);
  }
  ct_release(c.a);
  ct_release(c.b);
  free(ha);
  free(hb);
  free(hc);
}

/* addmm with beta != 0 (C = beta C0 + A B, an nn.Linear with bias) against matmul of the same
 * shape in the same run: the cost of reading C0, in process CPU time (see time_it_cpu) */
typedef struct {
  ct_tensor *a, *b, *c0;
} addmm_ctx;
static void run_addmm(void *p) {
  addmm_ctx *c = p;
  ct_tensor *r = ct_addmm(c->c0, c->a, c->b, ct_sf(0.5), ct_sf(1.0));
  die_if_null(r);
  ct_release(r);
}
static void run_mm(void *p) {
  addmm_ctx *c = p;
  ct_tensor *r = ct_matmul(c->a, c->b);
  die_if_null(r);
  ct_release(r);
}
static double time_it_cpu(bench_fn fn, void *ctx, int reps);
static void bench_addmm_one(int64_t M, int64_t N, int64_t K, int threads) {
  char name[96];
  snprintf(name, sizeof name, "addmm_beta_%lldx%lldx%lld_t%d", (long long)M, (long long)N, (long long)K, threads);
  if (!wanted(name)) return;
  ct_set_num_threads(threads);
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  addmm_ctx c = {ct_randn(2, sa, ct_opts(), NULL), ct_randn(2, sb, ct_opts(), NULL), ct_randn(2, sc, ct_opts(), NULL)};
  die_if_null(c.a && c.b && c.c0 ? c.a : NULL);
  int reps = quick ? 5 : 30;
  double flop = 2.0 * (double)M * (double)N * (double)K;
  double t_mm = time_it_cpu(run_mm, &c, reps), t_add = time_it_cpu(run_addmm, &c, reps);
  /* per CPU-second, so both sides are GFLOP/s of the process's CPU time */
  emit(name, flop / t_add / 1e9 * threads, flop / t_mm / 1e9 * threads, "matmul_cpu", "GFLOP/s", true, NULL);
  ct_release(c.a);
  ct_release(c.b);
  ct_release(c.c0);
}

/* ---- elementwise / row ops vs threaded memcpy bandwidth ---- */
typedef struct {
  const char *src;
  char *dst;
  size_t bytes;
  int parts, idx;
} mc_part;
static void *mc_thread(void *p) {
  mc_part *m = p;
  size_t chunk = (m->bytes / (size_t)m->parts + 63) / 64 * 64, b = chunk * (size_t)m->idx;
  if (b < m->bytes) memcpy(m->dst + b, m->src + b, b + chunk > m->bytes ? m->bytes - b : chunk);
  return NULL;
}
typedef struct {
  float *src, *dst;
  size_t bytes;
  int threads;
} memcpy_ctx;
static void run_memcpy(void *p) {
  memcpy_ctx *c = p;
  if (c->threads <= 1) {
    memcpy(c->dst, c->src, c->bytes);
    return;
  }
  pthread_t th[64];
  mc_part parts[64];
  int n = c->threads > 64 ? 64 : c->threads;
  for (int i = 0; i < n; i++) {
    parts[i] = (mc_part){(const char *)c->src, (char *)c->dst, c->bytes, n, i};
    if (i) pthread_create(&th[i], NULL, mc_thread, &parts[i]);
  }
  mc_thread(&parts[0]);
  for (int i = 1; i < n; i++) pthread_join(th[i], NULL);
}

typedef struct {
  ct_tensor *a, *b, *w, *bias;
  int op;
  int64_t rows, cols;
} ew_ctx;
enum { EW_ADD, EW_MUL, EW_SUB, EW_DIV, EW_NEG, EW_EXP, EW_GELU, EW_GELU_TANH, EW_RELU, EW_SILU, EW_SIGMOID, EW_TANH,
       EW_SUM, EW_MAX, EW_MEAN, EW_SOFTMAX, EW_LOGSOFTMAX, EW_LAYERNORM, EW_COUNT };
static const char *ew_names[EW_COUNT] = {"add", "mul", "sub", "div", "neg", "exp", "gelu", "gelu_tanh", "relu", "silu",
                                         "sigmoid", "tanh", "sum", "max", "mean", "softmax", "log_softmax", "layer_norm"};
/* floats moved per element: read + write */
static const double ew_traffic[EW_COUNT] = {3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2};

static void run_ew(void *p) {
  ew_ctx *c = p;
  ct_tensor *r = NULL;
  switch (c->op) {
    case EW_ADD: r = ct_add(c->a, c->b); break;
    case EW_MUL: r = ct_mul(c->a, c->b); break;
    case EW_SUB: r = ct_sub(c->a, c->b); break;
    case EW_DIV: r = ct_div(c->a, c->b); break;
    case EW_NEG: r = ct_neg(c->a); break;
    case EW_EXP: r = ct_exp(c->a); break;
    case EW_GELU: r = ct_gelu(c->a, "none"); break;
    case EW_GELU_TANH: r = ct_gelu(c->a, "tanh"); break;
    case EW_RELU: r = ct_relu(c->a); break;
    case EW_SILU: r = ct_silu(c->a); break;
    case EW_SIGMOID: r = ct_sigmoid(c->a); break;
    case EW_TANH: r = ct_tanh(c->a); break;
    case EW_SUM: r = ct_sum(c->a); break;
    case EW_MAX: r = ct_max(c->a); break;
    case EW_MEAN: r = ct_mean(c->a); break;
    case EW_SOFTMAX: r = ct_softmax(c->a, -1, -1); break;
    case EW_LOGSOFTMAX: r = ct_log_softmax(c->a, -1, -1); break;
    case EW_LAYERNORM: r = ct_layer_norm(c->a, 1, &c->cols, c->w, c->bias, 1e-5); break;
  }
  die_if_null(r);
  ct_release(r);
}

/* CPU time of the process (all threads) per repetition, best of reps: on a shared machine the
 * wall clock of a 10-40 ms kernel includes time the scheduler gave to other processes; CPU
 * time does not (memory contention from them remains, for both sides of the ratio alike). */
static double time_it_cpu(bench_fn fn, void *ctx, int reps) {
  fn(ctx);
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = cpu_now();
    fn(ctx);
    double t = cpu_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

/* Median and minimum of the op and of memcpy over `rounds` rounds, the two interleaved in one
 * process and the order alternating round by round (memcpy first in even rounds), each call timed
 * by the wall clock and by the process CPU time: a 16M-float op and a 64 MiB memcpy take 10-40 ms,
 * so load from other processes and the VM host's frequency swings land on both sides alike, and
 * the median of many pairs is steady where one best-of-N of each, minutes apart, swung +-0.2.
 * Each timed call follows an untimed call of the same side (steady state): a side's write-backs
 * are then paid by that side. glibc's memcpy switches to non-temporal stores only above a
 * threshold derived from the L3 size the CPU reports; on a VM that reports the host's L3 (session
 * 13's AMD VM: 508 MiB, threshold 127 MiB, `ld.so --list-tunables`) a 64 MiB memcpy goes through
 * the caches, likely leaving tens of MiB of dirty lines for the next call to write back. With the
 * calls strictly alternating, that next call was always the op: a gelu timed right after a memcpy
 * ran 15-40% slower than one timed after a gelu, while memcpy's own time hardly moved
 * (bench/rows_wb.c, bench/results/s13_cpu.md). */
typedef struct {
  double med, min;
} pair_stat;
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static pair_stat stat_of(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_dbl);
  return (pair_stat){n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t[0]};
}
enum { PAIR_MAX_ROUNDS = 64 };
/* out: [0] op wall, [1] op CPU, [2] memcpy wall, [3] memcpy CPU */
static void time_pairs(bench_fn op, void *op_ctx, bench_fn peer, void *peer_ctx, int rounds, pair_stat out[4]) {
  /* CT_BENCH_ALTERNATE=1: the former protocol (no untimed call), for A/B runs of the protocol itself */
  const char *alt = getenv("CT_BENCH_ALTERNATE");
  bool strict_alternation = alt && alt[0] == '1';
  double t[4][PAIR_MAX_ROUNDS];
  if (rounds > PAIR_MAX_ROUNDS) rounds = PAIR_MAX_ROUNDS;
  op(op_ctx); /* warm: the output's pages, the pool's threads */
  peer(peer_ctx);
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < 2; k++) {
      bool is_op = (k == 0) == (r % 2 == 1);
      if (!strict_alternation) { /* untimed: the previous side's write-backs land here */
        if (is_op) op(op_ctx);
        else peer(peer_ctx);
      }
      double t0 = now(), c0 = cpu_now();
      if (is_op) op(op_ctx);
      else peer(peer_ctx);
      double w = now() - t0, c = cpu_now() - c0;
      t[is_op ? 0 : 2][r] = w;
      t[is_op ? 1 : 3][r] = c;
    }
  for (int k = 0; k < 4; k++) out[k] = stat_of(t[k], rounds);
}

static void bench_elementwise(int threads) {
  bool any = false;
  for (int op = 0; op < EW_COUNT; op++) {
    char name[96];
    snprintf(name, sizeof name, "%s_f32_%s_t%d", ew_names[op], quick ? "1M" : "16M", threads);
    any = any || wanted(name);
  }
  if (!any) return;
  ct_set_num_threads(threads);
  int64_t n = quick ? (1 << 20) : (16 << 20);
  int64_t rows = n / 1024, cols = 1024;
  int64_t shape[2] = {rows, cols};
  ew_ctx c;
  memset(&c, 0, sizeof c);
  c.rows = rows, c.cols = cols;
  c.a = ct_randn(2, shape, ct_opts(), NULL);
  c.b = ct_rand(2, shape, ct_opts(), NULL);
  die_if_null(c.a && c.b ? c.a : NULL);
  { /* keep the divisor away from 0 */
    ct_tensor *b1 = ct_add_scalar(c.b, ct_sf(0.5));
    die_if_null(b1);
    ct_release(c.b);
    c.b = b1;
  }
  c.w = ct_ones(1, &cols, ct_opts());
  c.bias = ct_zeros(1, &cols, ct_opts());
  memcpy_ctx m = {malloc((size_t)n * 4), malloc((size_t)n * 4), (size_t)n * 4, threads};
  die_if_null(m.src && m.dst ? m.src : NULL);
  memset(m.src, 1, m.bytes);
  memset(m.dst, 0, m.bytes);
  int rounds = quick ? 5 : 15;
  printf("(elementwise %s, %d thread%s: op and memcpy interleaved over %d rounds, order alternating; ratio of medians,"
         " min ratio in brackets)\n", quick ? "1M" : "16M", threads, threads > 1 ? "s" : "", rounds);
  double mbytes = 2.0 * (double)m.bytes; /* memcpy reads and writes every byte */
  for (int op = 0; op < EW_COUNT; op++) {
    char name[96];
    snprintf(name, sizeof name, "%s_f32_%s_t%d", ew_names[op], quick ? "1M" : "16M", threads);
    if (!wanted(name)) continue;
    c.op = op;
    pair_stat ps[4];
    time_pairs(run_ew, &c, run_memcpy, &m, rounds, ps);
    double traffic = ew_traffic[op] * 4.0 * (double)n;
    char extra[128];
    snprintf(extra, sizeof extra, "[min %.2f; op %.2f/%.2f ms, memcpy %.2f/%.2f ms med/min]", ps[0].min > 0 ? (traffic / ps[0].min) / (mbytes / ps[2].min) : 0,
             ps[0].med * 1e3, ps[0].min * 1e3, ps[2].med * 1e3, ps[2].min * 1e3);
    emit(name, traffic / ps[0].med / 1e9, mbytes / ps[2].med / 1e9, "memcpy", "GB/s", true, extra);
    {
      /* bandwidth per thread-second of CPU time: the neighbours' share of the cores drops out */
      char n3[128];
      snprintf(n3, sizeof n3, "%s_cpu", name);
      snprintf(extra, sizeof extra, "[min %.2f]", (traffic / ps[1].min) / (mbytes / ps[3].min));
      emit(n3, traffic / ps[1].med / 1e9 * threads, mbytes / ps[3].med / 1e9 * threads, "memcpy_cpu", "GB/s", true, extra);
    }
    double tt = torch_time(name);
    if (tt > 0) {
      char n2[128];
      snprintf(n2, sizeof n2, "%s_vs_torch", name);
      emit(n2, ps[0].min, tt, "torch", "s", false, NULL); /* best wall against PyTorch's best */
    }
  }
  ct_release(c.a);
  ct_release(c.b);
  ct_release(c.w);
  ct_release(c.bias);
  free(m.src);
  free(m.dst);
}

/* ---- bfloat16 / float16 matmul (float32 accumulation) vs float32 matmul of the same shape ---- */
typedef struct {
  ct_tensor *a, *b;
} lp_ctx;
static void run_lp(void *p) {
  lp_ctx *c = p;
  ct_tensor *r = ct_matmul(c->a, c->b);
  die_if_null(r);
  ct_release(r);
}
static void bench_gemm_lowp(int threads) {
  static const int64_t sizes[] = {512, 1024};
  static const ct_dtype dts[] = {CT_BFLOAT16, CT_FLOAT16};
  for (int di = 0; di < 2; di++)
    for (int si = 0; si < 2; si++) {
      int64_t n = sizes[si], sh[2] = {n, n};
      char name[96];
      snprintf(name, sizeof name, "gemm_%s_%lld_t%d", dts[di] == CT_BFLOAT16 ? "bf16" : "f16", (long long)n, threads);
      if (!wanted(name)) continue;
      ct_set_num_threads(threads);
      ct_tensor *af = ct_randn(2, sh, ct_opts(), NULL), *bf = ct_randn(2, sh, ct_opts(), NULL);
      die_if_null(af && bf ? af : NULL);
      lp_ctx lo = {ct_to_dtype(af, dts[di]), ct_to_dtype(bf, dts[di])}, hi = {af, bf};
      die_if_null(lo.a && lo.b ? lo.a : NULL);
      double flop = 2.0 * (double)n * (double)n * (double)n;
      double tl = time_it(run_lp, &lo, 7, 2.0), th = time_it(run_lp, &hi, 7, 2.0);
      emit(name, flop / tl / 1e9, flop / th / 1e9, "f32 matmul", "GFLOP/s", true, NULL);
      ct_release(lo.a);
      ct_release(lo.b);
      ct_release(af);
      ct_release(bf);
    }
}

/* ---- bfloat16 on the AVX512_BF16 vdpbf16ps kernel vs the widening path (CT_GEMM_BF16=widen) and
 * PyTorch's bf16 matmul (bench_bf16_torch.py), 1 thread, best process CPU time of one product ---- */
const char *ct_fast_gemm_lowp_isa(void); /* src/backend/cpu/gemm_bf16.h (internal) */
static void bench_gemm_bf16dp(void) {
  if (wanted("gemm_bf16dp_")) printf("bf16 GEMM (these rows force CT_GEMM_BF16=dp): default %s\n", ct_fast_gemm_lowp_isa());
  static const int64_t shp[][3] = {{512, 512, 512}, {1024, 1024, 1024}, {1024, 3072, 768}}; /* M, N, K */
  for (int si = 0; si < 3; si++) {
    int64_t M = shp[si][0], N = shp[si][1], K = shp[si][2], sa[2] = {M, K}, sb[2] = {K, N};
    char name[96], wname[112];
    snprintf(name, sizeof name, "gemm_bf16dp_%lldx%lldx%lld_t1", (long long)M, (long long)N, (long long)K);
    if (!wanted(name)) continue;
    ct_set_num_threads(1);
    ct_tensor *af = ct_randn(2, sa, ct_opts(), NULL), *bf = ct_randn(2, sb, ct_opts(), NULL);
    die_if_null(af && bf ? af : NULL);
    lp_ctx lo = {ct_to_dtype(af, CT_BFLOAT16), ct_to_dtype(bf, CT_BFLOAT16)};
    die_if_null(lo.a && lo.b ? lo.a : NULL);
    double flop = 2.0 * (double)M * (double)N * (double)K;
    const char *prev = getenv("CT_GEMM_BF16");
    setenv("CT_GEMM_BF16", "dp", 1); /* the vdpbf16ps kernel (where the CPU has AMX the default is the AMX one) */
    double tdp = time_it_cpu(run_lp, &lo, 7), wdp = time_it(run_lp, &lo, 7, 2.0);
    setenv("CT_GEMM_BF16", "widen", 1);
    double twd = time_it_cpu(run_lp, &lo, 7);
    if (prev) setenv("CT_GEMM_BF16", prev, 1);
    else unsetenv("CT_GEMM_BF16");
    emit(name, flop / tdp / 1e9, flop / twd / 1e9, "widen (cpu)", "GFLOP/s", true, "process CPU time");
    double tt = torch_time(name);
    snprintf(wname, sizeof wname, "%s_wall", name);
    double ttw = torch_time(wname);
    if (tt > 0) emit(name, flop / tdp / 1e9, flop / tt / 1e9, "torch bf16 (cpu)", "GFLOP/s", true, "process CPU time");
    if (ttw > 0) emit(wname, flop / wdp / 1e9, flop / ttw / 1e9, "torch bf16", "GFLOP/s", true, "wall");
    ct_release(lo.a);
    ct_release(lo.b);
    ct_release(af);
    ct_release(bf);
  }
}

/* ---- bfloat16 on the AMX tdpbf16ps kernel vs the vdpbf16ps kernel (CT_GEMM_BF16=dp) and PyTorch's
 * bf16 matmul (bench_bf16_torch.py), 1 and 2 threads; amx and dp interleaved (3 rounds of best-of-5
 * each), best process CPU time (all threads) and best wall time of one product ---- */
static void bench_gemm_bf16amx(int maxthreads) {
  static const int64_t shp[][3] = {{512, 512, 512}, {1024, 1024, 1024}, {1024, 3072, 768}, {64, 3072, 768}}; /* M, N, K */
  bool said = false;
  for (int t = 1; t <= (maxthreads > 1 ? 2 : 1); t++)
    for (int si = 0; si < 4; si++) {
      int64_t M = shp[si][0], N = shp[si][1], K = shp[si][2], sa[2] = {M, K}, sb[2] = {K, N};
      char name[96], wname[112];
      snprintf(name, sizeof name, "gemm_bf16amx_%lldx%lldx%lld_t%d", (long long)M, (long long)N, (long long)K, t);
      if (!wanted(name)) continue;
      if (!said) printf("bf16 GEMM (default path): %s\n", ct_fast_gemm_lowp_isa());
      said = true;
      ct_set_num_threads(t);
      ct_tensor *af = ct_randn(2, sa, ct_opts(), NULL), *bf = ct_randn(2, sb, ct_opts(), NULL);
      die_if_null(af && bf ? af : NULL);
      lp_ctx lo = {ct_to_dtype(af, CT_BFLOAT16), ct_to_dtype(bf, CT_BFLOAT16)};
      die_if_null(lo.a && lo.b ? lo.a : NULL);
      double flop = 2.0 * (double)M * (double)N * (double)K;
      const char *prev = getenv("CT_GEMM_BF16");
      double ta = 1e30, td = 1e30, wa = 1e30, wd = 1e30;
      for (int r = 0; r < 3; r++) {
        setenv("CT_GEMM_BF16", "amx", 1);
        double x = time_it_cpu(run_lp, &lo, 5), y = time_it(run_lp, &lo, 5, 1.0);
        ta = x < ta ? x : ta, wa = y < wa ? y : wa;
        setenv("CT_GEMM_BF16", "dp", 1);
        x = time_it_cpu(run_lp, &lo, 5), y = time_it(run_lp, &lo, 5, 1.0);
        td = x < td ? x : td, wd = y < wd ? y : wd;
      }
      if (prev) setenv("CT_GEMM_BF16", prev, 1);
      else unsetenv("CT_GEMM_BF16");
      emit(name, flop / ta / 1e9, flop / td / 1e9, "dp (cpu)", "GFLOP/s", true, "process CPU time");
      snprintf(wname, sizeof wname, "%s_wall", name);
      emit(wname, flop / wa / 1e9, flop / wd / 1e9, "dp", "GFLOP/s", true, "wall");
      double tt = torch_time(name), ttw = torch_time(wname);
      if (tt > 0) emit(name, flop / ta / 1e9, flop / tt / 1e9, "torch bf16 (cpu)", "GFLOP/s", true, "process CPU time");
      if (ttw > 0) emit(wname, flop / wa / 1e9, flop / ttw / 1e9, "torch bf16", "GFLOP/s", true, "wall");
      ct_release(lo.a);
      ct_release(lo.b);
      ct_release(af);
      ct_release(bf);
    }
}

int main(int argc, char **argv) {
  const char *json_path = NULL;
  bool use_torch = true;
  nthreads = ct_get_num_threads();
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-torch")) use_torch = false;
    else if (!strcmp(argv[i], "--reference")) setenv("CT_REFERENCE_KERNELS", "1", 1);
  }
  if (nthreads < 1) nthreads = 1;
  if (json_path) {
    R.json = fopen(json_path, "w");
    if (!R.json) {
      perror(json_path);
      return 1;
    }
    fprintf(R.json, "[");
  }
  printf("ctorch bench: up to %d threads, %s\n", nthreads, ct_simd_level());
#ifdef HAVE_BLAS
  printf("OpenBLAS core: %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_corename(),
         getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "auto");
#endif
  run_torch("bench/bench_torch.py", use_torch);
  run_torch("bench/bench_models_torch.py", use_torch); /* prints only what --only selects */
  run_torch("bench/bench_conv_torch.py", use_torch);
  run_torch("bench/bench_bf16_torch.py", use_torch);
  if (use_torch) printf("PyTorch peer: %d timings\n", n_torch);
  double peak = fma_peak_core();
  printf("FMA peak (float32, one core, measured): %.1f GFLOP/s\n", peak);

  int tlist[2] = {1, nthreads};
  int nt = nthreads > 1 ? 2 : 1;
  /* GEMM: square, then transformer shapes (x @ W and x @ W^T as nn.Linear does) */
  static const int64_t sq[] = {256, 512, 1024, 2048, 4096};
  for (int ti = 0; ti < nt; ti++) {
    for (int i = 0; i < 5; i++) {
      if (quick && sq[i] > 1024) continue;
      bench_gemm_one(sq[i], sq[i], sq[i], false, false, tlist[ti], peak);
    }
    bench_gemm_one(1024, 3072, 768, false, false, tlist[ti], peak);
    if (!quick) bench_gemm_one(4096, 3072, 768, false, true, tlist[ti], peak); /* the 4096x768x3072 class */
    bench_gemm_one(1024, 768, 3072, false, true, tlist[ti], peak);
    bench_gemm_one(1024, 3072, 768, false, true, tlist[ti], peak);
    bench_gemm_one(512, 512, 512, true, false, tlist[ti], peak);
    bench_gemm_one(1024, 1024, 1024, true, false, tlist[ti], peak);
    bench_addmm_one(256, 768, 256, tlist[ti]);
    bench_addmm_one(512, 512, 64, tlist[ti]);
  }
  for (int ti = 0; ti < nt; ti++) bench_elementwise(tlist[ti]);
  for (int ti = 0; ti < nt; ti++) bench_gemm_lowp(tlist[ti]);
  bench_gemm_bf16dp();
  bench_gemm_bf16amx(nthreads);
  bench_conv(nthreads);
  bench_models(nthreads);

  if (R.json) {
    fprintf(R.json, "\n]\n");
    fclose(R.json);
    printf("wrote %s\n", json_path);
  }
  return 0;
}
