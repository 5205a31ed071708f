/* The parent/child process driver shared by bench_gpt124m.c and bench_memory.c: each workload runs
 * in a fresh process (so that peak RSS is the workload's own), once as this program with --child and
 * once as the PyTorch peer script with --child, at the same thread count. A child reports one line
 * "RESULT <workload> key=value ..."; the parent keeps the text after the workload's name. */
#ifndef CT_BENCH_CHILD_H
#define CT_BENCH_CHILD_H
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  bool ok;          /* the child printed its RESULT line and exited with 0 */
  char fields[896]; /* what followed "RESULT <workload> " on that line */
} bench_child;

/* Runs cmd through the shell and picks its RESULT line for workload; echo copies its output to stdout. */
static inline bench_child bench_child_run(const char *cmd, const char *workload, bool echo) {
  bench_child r = {false, {0}};
  FILE *p = popen(cmd, "r");
  if (!p) return r;
  char line[1024];
  size_t n = strlen(workload);
  while (fgets(line, sizeof line, p)) {
    if (!strncmp(line, "RESULT ", 7) && !strncmp(line + 7, workload, n) && line[7 + n] == ' ') {
      snprintf(r.fields, sizeof r.fields, "%s", line + 8 + n);
      r.ok = true;
    }
    if (echo) fputs(line, stdout);
  }
  if (pclose(p) != 0) r.ok = false;
  return r;
}

/* Runs workload on both sides: r[0] this program (its path from /proc/self/exe; ctorch_extra is
 * appended to its arguments only), r[1] the PyTorch peer `script` under CT_BENCH_PYTHON (default
 * /usr/bin/python3) unless torch is false. args is the argument tail both sides share (it should
 * start with "--threads N"; OMP_NUM_THREADS is set to threads for the peer). Returns false when
 * this program's path cannot be found (nothing is run then). */
static inline bool bench_child_pair(const char *script, const char *workload, int threads, const char *args,
                                    const char *ctorch_extra, bool torch, bool echo, bench_child r[2]) {
  static char exe[4096];
  r[0].ok = r[1].ok = false;
  if (!exe[0]) {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = 0;
  }
  const char *py = getenv("CT_BENCH_PYTHON");
  if (!py || !*py) py = "/usr/bin/python3";
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' --child %s %s%s", exe, workload, args, ctorch_extra ? ctorch_extra : "");
  r[0] = bench_child_run(cmd, workload, echo);
  if (torch) {
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d '%s' %s --child %s %s", threads, py, script, workload, args);
    r[1] = bench_child_run(cmd, workload, false);
  }
  return true;
}
#endif
