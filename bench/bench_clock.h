/* Clocks and memory readings shared by the C benchmarks. */
#ifndef CT_BENCH_CLOCK_H
#define CT_BENCH_CLOCK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* wall-clock seconds */
static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* process CPU seconds (all threads, user + system: page faults count): on a loaded machine wall
 * time measures the neighbours; CPU time at the same thread count still compares the two sides */
static inline double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* the median of five timings (sorts them in place) */
static inline double median5(double t[5]) {
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      if (t[j] < t[i]) {
        double x = t[i];
        t[i] = t[j];
        t[j] = x;
      }
  return t[2];
}
/* a "Vm...:" line of /proc/self/status, in KiB (-1 where there is none) */
static inline long status_kb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, n) && line[n] == ':') {
      v = atol(line + n + 1);
      break;
    }
  fclose(f);
  return v;
}
#endif
