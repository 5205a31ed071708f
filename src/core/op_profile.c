/* Per-op kernel timing for profiling a whole step (bench/profile_step.c): with CT_PROFILE_OPS=1
 * in the environment, or after ct_op_profile_enable(true), the dispatch door (ct_run_kernel)
 * times every kernel: wall (monotonic) and process CPU time, exclusive of kernels nested inside
 * it (a backward kernel that calls other ops through the door), accumulated per op id.
 * Off by default: then the door pays one predictable branch. Only the thread that runs the op
 * is followed; process CPU time includes the pool's workers, so an op whose CPU is close to its
 * wall at 2 threads ran on one thread. Not thread-safe across concurrent callers (profiling). */
#include "../ops/op_table.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static struct {
  int64_t calls, wall_ns, cpu_ns, own_ns; /* own: the calling thread's CPU time */
} prof[CT_OP_COUNT];
/* named regions (see ct_op_profile_enter) */
#define MAX_REGIONS 256
static struct {
  const char *name;
  int64_t calls, wall_ns, cpu_ns, ex_wall_ns, ex_cpu_ns;
} reg[MAX_REGIONS];
static int n_reg;
static int enabled = -1;
static _Thread_local int depth;
static _Thread_local int64_t child_wall[32], child_cpu[32], child_own[32];

static int64_t clk(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool ct_op_profile_on(void) {
  if (enabled < 0) {
    const char *e = getenv("CT_PROFILE_OPS");
    enabled = e && *e && strcmp(e, "0") ? 1 : 0;
  }
  return enabled == 1;
}

void ct_op_profile_enable(bool on) { enabled = on ? 1 : 0; }
void ct_op_profile_reset(void) {
  memset(prof, 0, sizeof prof);
  for (int i = 0; i < n_reg; i++) reg[i].calls = reg[i].wall_ns = reg[i].cpu_ns = reg[i].ex_wall_ns = reg[i].ex_cpu_ns = 0;
}

ct_status ct_op_profile_run(ct_kernel_fn k, const ct_call *c) {
  if (depth >= 31) return k(c);
  int d = depth++;
  child_wall[d + 1] = child_cpu[d + 1] = child_own[d + 1] = 0;
  int64_t w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID), o0 = clk(CLOCK_THREAD_CPUTIME_ID);
  ct_status st = k(c);
  int64_t w = clk(CLOCK_MONOTONIC) - w0, cp = clk(CLOCK_PROCESS_CPUTIME_ID) - c0, ow = clk(CLOCK_THREAD_CPUTIME_ID) - o0;
  depth = d;
  if (c->op >= 0 && c->op < CT_OP_COUNT) {
    prof[c->op].calls++;
    prof[c->op].wall_ns += w - child_wall[d + 1];
    prof[c->op].cpu_ns += cp - child_cpu[d + 1];
    prof[c->op].own_ns += ow - child_own[d + 1];
  }
  child_wall[d] += w;
  child_cpu[d] += cp;
  child_own[d] += ow;
  return st;
}

/* Named regions (the autograd engine's node calls, gradient accumulation): inclusive time and
 * exclusive time (minus the kernels and regions inside), keyed by the name's pointer (static
 * strings: node names). */

void ct_op_profile_enter(int64_t mark[2]) {
  mark[0] = clk(CLOCK_MONOTONIC);
  mark[1] = clk(CLOCK_PROCESS_CPUTIME_ID);
  if (depth < 31) {
    depth++;
    child_wall[depth] = child_cpu[depth] = child_own[depth] = 0;
  }
}

void ct_op_profile_leave(const int64_t mark[2], const char *name) {
  int64_t w = clk(CLOCK_MONOTONIC) - mark[0], cp = clk(CLOCK_PROCESS_CPUTIME_ID) - mark[1];
  if (depth <= 0) return;
  int d = depth--;
  int i = 0;
  while (i < n_reg && reg[i].name != name && strcmp(reg[i].name, name)) i++;
  if (i == n_reg && n_reg < MAX_REGIONS) reg[n_reg++].name = name;
  if (i < n_reg) {
    reg[i].calls++;
    reg[i].wall_ns += w;
    reg[i].cpu_ns += cp;
    reg[i].ex_wall_ns += w - child_wall[d];
    reg[i].ex_cpu_ns += cp - child_cpu[d];
  }
  child_wall[d - 1] += w;
  child_cpu[d - 1] += cp;
}

/* Regions: name, calls, inclusive wall/CPU, exclusive wall/CPU (seconds); returns the count. */
int ct_op_profile_get_regions(int cap, const char **names, int64_t *calls, double *t4) {
  int n = 0;
  for (int i = 0; i < n_reg; i++) {
    if (!reg[i].calls) continue;
    if (n < cap) {
      names[n] = reg[i].name;
      calls[n] = reg[i].calls;
      t4[4 * n] = (double)reg[i].wall_ns * 1e-9;
      t4[4 * n + 1] = (double)reg[i].cpu_ns * 1e-9;
      t4[4 * n + 2] = (double)reg[i].ex_wall_ns * 1e-9;
      t4[4 * n + 3] = (double)reg[i].ex_cpu_ns * 1e-9;
    }
    n++;
  }
  return n;
}

/* Copies the totals out: per op id name, calls, wall and CPU seconds; returns the number of
 * ops with at least one call (at most cap written). */
int ct_op_profile_get(int cap, const char **names, int64_t *calls, double *wall_s, double *cpu_s, double *own_s) {
  int n = 0;
  for (int op = 0; op < CT_OP_COUNT; op++) {
    if (!prof[op].calls) continue;
    if (n < cap) {
      names[n] = ct_op_info_of(op)->id;
      calls[n] = prof[op].calls;
      wall_s[n] = (double)prof[op].wall_ns * 1e-9;
      cpu_s[n] = (double)prof[op].cpu_ns * 1e-9;
      own_s[n] = (double)prof[op].own_ns * 1e-9;
    }
    n++;
  }
  return n;
}
