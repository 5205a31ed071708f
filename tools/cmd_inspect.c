/* ctorch inspect FILE: a safetensors file's or checkpoint's metadata and tensors, from the
 * validated header alone (no tensor data is read, so huge files inspect instantly). */
#include "ctorch.h"
#include "cli.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void print_escaped(const char *s) {
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '\n') fputs("\\n", stdout);
    else if (*c < 0x20 || *c == 0x7f) printf("\\x%02x", *c);
    else putchar(*c);
  }
}

static void human(int64_t b, char *buf, size_t n) {
  if (b < 1024) snprintf(buf, n, "%lld B", (long long)b);
  else if (b < 1024 * 1024) snprintf(buf, n, "%.1f KiB", b / 1024.0);
  else if (b < 1024LL * 1024 * 1024) snprintf(buf, n, "%.1f MiB", b / (1024.0 * 1024));
  else snprintf(buf, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
}

int ct_cmd_inspect(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fprintf(argc < 2 ? stderr : stdout,
            "usage: ctorch inspect FILE\n"
            "  prints a safetensors file's (or ctorch checkpoint's) metadata and each tensor's\n"
            "  name, dtype, shape and bytes, with totals; a damaged file is refused (exit 1)\n");
    return argc < 2 ? 2 : 0;
  }
  if (argc > 2) {
    fprintf(stderr, "ctorch inspect: expected one FILE, got %d arguments\n", argc - 1);
    return 2;
  }
  /* a checkpoint directory means its checkpoint file, as in ct_checkpoint_load */
  char dirfile[4096];
  const char *path = argv[1];
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    snprintf(dirfile, sizeof dirfile, "%s/%s", path, CT_CHECKPOINT_FILE);
    path = dirfile;
  }
  ct_safetensors_info *I = ct_safetensors_info_file(path);
  if (!I) {
    fprintf(stderr, "ctorch inspect: %s\n", ct_last_error());
    return 1;
  }
  int64_t n = ct_safetensors_info_len(I), nm = ct_safetensors_info_meta_len(I);
  const char *fmt = NULL, *ver = NULL, *step = NULL;
  for (int64_t i = 0; i < nm; i++) {
    const char *k = ct_safetensors_info_meta_key(I, i), *v = ct_safetensors_info_meta_value(I, i);
    if (!strcmp(k, "ctorch.format")) fmt = v;
    else if (!strcmp(k, "ctorch.format_version")) ver = v;
    else if (!strcmp(k, "ctorch.step")) step = v;
  }
  bool ckpt = fmt && !strcmp(fmt, "checkpoint");
  int64_t header = ct_safetensors_info_header_len(I), data = ct_safetensors_info_data_len(I);
  printf("file: %s\n", path);
  printf("format: %s", ckpt ? "ctorch checkpoint" : "safetensors");
  if (ckpt) printf(" (version %s, step %s)", ver ? ver : "?", step ? step : "?");
  printf("\nsize: %lld bytes (8 + header %lld + data %lld)\n", (long long)(8 + header + data), (long long)header,
         (long long)data);
  printf("metadata: %lld entr%s\n", (long long)nm, nm == 1 ? "y" : "ies");
  for (int64_t i = 0; i < nm; i++) {
    printf("  ");
    print_escaped(ct_safetensors_info_meta_key(I, i));
    printf(" = ");
    print_escaped(ct_safetensors_info_meta_value(I, i));
    printf("\n");
  }
  size_t wname = 4;
  for (int64_t i = 0; i < n; i++) {
    size_t l = strlen(ct_safetensors_info_entry(I, i).name);
    if (l > wname) wname = l < 60 ? l : 60;
  }
  printf("tensors: %lld\n", (long long)n);
  if (n) printf("  %-*s  %-7s %-22s %14s\n", (int)wname, "name", "dtype", "shape", "bytes");
  /* totals: all, and per checkpoint part */
  static const char *parts[] = {"model.", "optim.", "rng."};
  int64_t part_n[3] = {0}, part_b[3] = {0}, total_el = 0;
  for (int64_t i = 0; i < n; i++) {
    ct_safetensors_entry e = ct_safetensors_info_entry(I, i);
    char shape[256];
    size_t o = (size_t)snprintf(shape, sizeof shape, "[");
    for (int d = 0; d < e.ndim && o < sizeof shape; d++)
      o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%lld", d ? ", " : "", (long long)e.shape[d]);
    if (o < sizeof shape) snprintf(shape + o, sizeof shape - o, "]");
    printf("  ");
    print_escaped(e.name);
    size_t l = strlen(e.name);
    printf("%*s  %-7s %-22s %14lld\n", (int)(l < wname ? wname - l : 0), "", e.dtype_name, shape,
           (long long)(e.end - e.begin));
    total_el += e.numel;
    for (int k = 0; k < 3; k++)
      if (!strncmp(e.name, parts[k], strlen(parts[k]))) {
        part_n[k]++;
        part_b[k] += e.end - e.begin;
      }
  }
  char hb[32];
  human(data, hb, sizeof hb);
  printf("total: %lld tensors, %lld elements, %lld bytes (%s)\n", (long long)n, (long long)total_el, (long long)data, hb);
  if (ckpt)
    for (int k = 0; k < 3; k++) {
      human(part_b[k], hb, sizeof hb);
      printf("  %-6s %lld tensors, %lld bytes (%s)\n", parts[k], (long long)part_n[k], (long long)part_b[k], hb);
    }
  ct_safetensors_info_free(I);
  return 0;
}
