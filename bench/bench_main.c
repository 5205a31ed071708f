/* ctorch benchmarks: each measures ctorch and a peer in the same run on the same
 * machine and reports the ratio (peer time / our time, so > 1 means faster than
 * the peer). Writes a JSON list of {name, ours, peer, peer_name, unit, ratio}.
 * Usage: bench_ctorch [--json FILE] [--quick] */
#include "ctorch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if __has_include(<cblas.h>) && defined(CT_BENCH_OPENBLAS)
#include <cblas.h>
#define HAVE_BLAS 1
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef void (*bench_fn)(void *ctx);
/* Median of `reps` timings after one warm-up. */
static double time_it(bench_fn fn, void *ctx, int reps) {
  double t[64];
  if (reps > 64) reps = 64;
  fn(ctx);
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    fn(ctx);
    t[r] = now() - t0;
  }
  for (int i = 1; i < reps; i++)
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t[reps / 2];
}

typedef struct {
  FILE *json;
  int n;
} report;

static void emit(report *r, const char *name, double ours, double peer, const char *peer_name, const char *unit) {
  double ratio = peer / ours;
  printf("%-34s ours %10.3f %s   %-22s %10.3f %s   ratio %.2f\n", name, ours * 1e3, "ms", peer_name, peer * 1e3, "ms", ratio);
  if (r->json)
    fprintf(r->json, "%s\n  {\"name\": \"%s\", \"ours\": %.9g, \"peer\": %.9g, \"peer_name\": \"%s\", \"unit\": \"%s\", \"ratio\": %.4f}",
            r->n++ ? "," : "", name, ours, peer, peer_name, unit, ratio);
}

typedef struct {
  ct_tensor *a, *b;
  float *src, *dst;
  size_t bytes;
  int op;
} ew_ctx;

static void run_memcpy(void *p) {
  ew_ctx *c = p;
  memcpy(c->dst, c->src, c->bytes);
}
static void run_op(void *p) {
  ew_ctx *c = p;
  ct_tensor *r = NULL;
  switch (c->op) {
    case 0: r = ct_add(c->a, c->b); break;
    case 1: r = ct_mul(c->a, c->b); break;
    case 2: r = ct_exp(c->a); break;
    case 3: r = ct_sum(c->a); break;
  }
  if (!r) {
    fprintf(stderr, "bench: %s\n", ct_last_error());
    exit(1);
  }
  ct_release(r);
}

int main(int argc, char **argv) {
  const char *json_path = NULL;
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = true;
  }
  report r = {NULL, 0};
  if (json_path) {
    r.json = fopen(json_path, "w");
    if (!r.json) {
      perror(json_path);
      return 1;
    }
    fprintf(r.json, "[");
  }
  printf("ctorch bench: %d threads, %s\n", ct_get_num_threads(), ct_simd_level());
  int64_t n = quick ? (1 << 20) : (16 << 20);
  int reps = quick ? 3 : 9;
  ew_ctx c;
  c.a = ct_ones(1, &n, ct_opts());
  c.b = ct_ones(1, &n, ct_opts());
  c.bytes = (size_t)n * 4;
  c.src = malloc(c.bytes);
  c.dst = malloc(c.bytes);
  memset(c.src, 1, c.bytes);
  memset(c.dst, 0, c.bytes);
  /* memcpy moves 2n floats of traffic; add/mul move 3n, exp 2n, sum n: compare as bandwidth */
  double t_copy = time_it(run_memcpy, &c, reps);
  const char *names[] = {"add_f32_16M (bandwidth)", "mul_f32_16M (bandwidth)", "exp_f32_16M (bandwidth)",
                         "sum_f32_16M (bandwidth)"};
  const double traffic[] = {3, 3, 2, 1};
  for (int op = 0; op < 4; op++) {
    c.op = op;
    double t = time_it(run_op, &c, reps);
    /* express both as seconds per 2n floats moved, so the ratio is our bandwidth / memcpy's */
    emit(&r, names[op], t * 2.0 / traffic[op], t_copy, "memcpy", "s");
  }
  ct_release(c.a);
  ct_release(c.b);
  free(c.src);
  free(c.dst);
  if (r.json) {
    fprintf(r.json, "\n]\n");
    fclose(r.json);
    printf("wrote %s\n", json_path);
  }
  return 0;
}
