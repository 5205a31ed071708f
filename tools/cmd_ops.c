/* ctorch ops: prints the op table (the README's coverage table comes from here). */
#include "cli.h"
#include "ops/op_table.h"
#include <stdio.h>
#include <string.h>

int ct_cmd_ops(int argc, char **argv) {
  bool md = argc > 1 && !strcmp(argv[1], "--markdown");
  if (md) {
    printf("| op | family | CPU kernel | backward | covers |\n|---|---|---|---|---|\n");
  }
  for (int op = 0; op < CT_OP_COUNT; op++) {
    const ct_op_info *i = ct_op_info_of(op);
    const char *k = i->cpu != ct_no_kernel ? "yes" : (strcmp(i->family, "view") == 0 ? "view" : "composite");
    const char *b = i->backward != ct_no_backward ? i->grad_name : "-";
    if (md) printf("| `%s` | %s | %s | %s | %s |\n", i->id, i->family, k, b, i->note);
    else printf("%-24s %-10s %-10s %-28s %s\n", i->id, i->family, k, b, i->note);
  }
  return 0;
}
