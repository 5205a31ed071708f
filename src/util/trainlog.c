/* SVG loss plot and progress bar for the training commands. */
#include "util/trainlog.h"
#include <math.h>
#include <string.h>

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about n ticks over span. */
static double nice_step(double span, int n) {
  if (!(span > 0)) return 1;
  double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static void xml_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else fputc(*s, f);
  }
}

bool ct_plot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel, int n_series,
                 const ct_plot_series *series) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  const double W = 720, H = 440, ml = 70, mr = 20, mt = 40, mb = 50;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (int s = 0; s < n_series; s++)
    for (size_t i = 0; i < series[s].n; i++) {
      double x = series[s].x[i], y = series[s].y[i];
      if (!isfinite(x) || !isfinite(y)) continue;
      x0 = fmin(x0, x); x1 = fmax(x1, x); y0 = fmin(y0, y); y1 = fmax(y1, y);
    }
  if (!(x0 <= x1)) { x0 = 0; x1 = 1; y0 = 0; y1 = 1; }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) { y1 = y0 + 0.5; y0 -= 0.5; }
  double pad = (y1 - y0) * 0.05;
  y0 -= pad;
  y1 += pad;
  double pw = W - ml - mr, ph = H - mt - mb;
#define PX(x) (ml + ((x) - x0) / (x1 - x0) * pw)
#define PY(y) (mt + (1 - ((y) - y0) / (y1 - y0)) * ph)
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
             "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<text x=\"%g\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">", W / 2);
  xml_text(f, title);
  fprintf(f, "</text>\n");
  /* grid and ticks */
  double ys = nice_step(y1 - y0, 6), xs = nice_step(x1 - x0, 8);
  for (double y = ceil(y0 / ys) * ys; y <= y1 + 1e-12; y += ys) {
    fprintf(f, "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", ml, PY(y), W - mr, PY(y));
    fprintf(f, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", ml - 6, PY(y) + 4, fabs(y) < 1e-12 ? 0 : y);
  }
  for (double x = ceil(x0 / xs) * xs; x <= x1 + 1e-12; x += xs) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#e5e5e5\"/>\n", PX(x), mt, PX(x), H - mb);
    fprintf(f, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n", PX(x), H - mb + 16, x);
  }
  fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#444\"/>\n", ml, mt, pw, ph);
  fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">", ml + pw / 2, H - 12);
  xml_text(f, xlabel);
  fprintf(f, "</text>\n<text transform=\"translate(18 %g) rotate(-90)\" text-anchor=\"middle\">", mt + ph / 2);
  xml_text(f, ylabel);
  fprintf(f, "</text>\n");
  for (int s = 0; s < n_series; s++) {
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"", series[s].color);
    for (size_t i = 0; i < series[s].n; i++)
      if (isfinite(series[s].x[i]) && isfinite(series[s].y[i]))
        fprintf(f, "%.1f,%.1f ", PX(series[s].x[i]), PY(series[s].y[i]));
    fprintf(f, "\"/>\n");
    if (series[s].n < 40) /* few points: mark them */
      for (size_t i = 0; i < series[s].n; i++)
        if (isfinite(series[s].x[i]) && isfinite(series[s].y[i]))
          fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", PX(series[s].x[i]), PY(series[s].y[i]),
                  series[s].color);
    double ly = mt + 16 + 18 * s, lx = W - mr - 150;
    fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" stroke-width=\"3\"/>\n", lx, ly - 4, lx + 20,
            ly - 4, series[s].color);
    fprintf(f, "<text x=\"%g\" y=\"%g\">", lx + 26, ly);
    xml_text(f, series[s].name);
    fprintf(f, "</text>\n");
  }
#undef PX
#undef PY
  fprintf(f, "</svg>\n");
  return fclose(f) == 0;
}

void ct_format_duration(double s, char *buf, size_t cap) {
  if (!isfinite(s) || s < 0) s = 0;
  long t = (long)(s + 0.5), h = t / 3600, m = t / 60 % 60, sec = t % 60;
  if (h) snprintf(buf, cap, "%ld:%02ld:%02ld", h, m, sec);
  else snprintf(buf, cap, "%ld:%02ld", m, sec);
}

void ct_progress(FILE *f, int64_t step, int64_t total, double loss, double tokens_per_s, double seconds_left) {
  const int width = 24;
  int fill = total > 0 ? (int)((double)width * (double)step / (double)total) : width;
  if (fill > width) fill = width;
  char bar[64], left[32];
  for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
  bar[width] = 0;
  ct_format_duration(seconds_left, left, sizeof left);
  double tps = tokens_per_s >= 1e4 ? tokens_per_s / 1e3 : tokens_per_s;
  fprintf(f, "\r[%s] %lld/%lld loss %.4f | %.1f%s tok/s | %s left\033[K", bar, (long long)step, (long long)total, loss,
          tps, tokens_per_s >= 1e4 ? "k" : "", left);
  fflush(f);
}

void ct_progress_done(FILE *f) {
  fprintf(f, "\r\033[K");
  fflush(f);
}

void ct_progress_unit(FILE *f, int64_t step, int64_t total, double loss, double rate, const char *unit,
                      double seconds_left) {
  const int width = 24;
  int fill = total > 0 ? (int)((double)width * (double)step / (double)total) : width;
  if (fill > width) fill = width;
  if (fill < 0) fill = 0;
  char bar[64], left[32];
  for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
  bar[width] = 0;
  ct_format_duration(seconds_left, left, sizeof left);
  fprintf(f, "\r[%s] %lld/%lld loss %.4f | %.1f%s %s/s | %s left\033[K", bar, (long long)step, (long long)total, loss,
          rate >= 1e4 ? rate / 1e3 : rate, rate >= 1e4 ? "k" : "", unit ? unit : "it", left);
  fflush(f);
}
