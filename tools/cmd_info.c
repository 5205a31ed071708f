/* ctorch info */
#include "ctorch.h"
#include "cli.h"
#include <stdio.h>

int ct_cmd_info(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("ctorch %s\n", CT_VERSION);
  printf("simd: %s\n", ct_simd_level());
  printf("threads: %d\n", ct_get_num_threads());
  printf("backends: %s\n", ct_backends_compiled());
  return 0;
}
