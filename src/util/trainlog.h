/* Helpers for training commands: an SVG line plot of losses and a terminal progress bar. */
#ifndef CT_UTIL_TRAINLOG_H
#define CT_UTIL_TRAINLOG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  const char *name;  /* legend */
  const char *color; /* CSS color */
  const double *x, *y;
  size_t n;
} ct_plot_series;

/* Writes an SVG line chart (title, axes with ticks, a legend) of the series to path.
 * Returns false if the file cannot be written. Non-finite points are skipped. */
bool ct_plot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel, int n_series,
                 const ct_plot_series *series);

/* "[#####.....] 120/500 loss 2.345 | 12.3k tok/s | 0:42 left" on one line of f (a terminal),
 * rewritten in place; call ct_progress_done to end the line. */
void ct_progress(FILE *f, int64_t step, int64_t total, double loss, double tokens_per_s, double seconds_left);
void ct_progress_done(FILE *f);
/* The same bar with the rate's unit named ("img" prints "123.4 img/s"). */
void ct_progress_unit(FILE *f, int64_t step, int64_t total, double loss, double rate, const char *unit,
                      double seconds_left);
/* Formats seconds as "1:02:03" / "2:03". */
void ct_format_duration(double s, char *buf, size_t cap);

#endif
