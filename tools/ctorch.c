/* The ctorch command line: one function per subcommand. */
#include "ctorch.h"
#include "cli.h"
#include <stdio.h>
#include <string.h>

static const struct {
  const char *name, *help;
  int (*fn)(int argc, char **argv);
} commands[] = {
    {"info", "version, SIMD level, threads and backends", ct_cmd_info},
    {"ops", "the op table (--markdown for the README's coverage table)", ct_cmd_ops},
    {"demo", "fit a small MLP on generated data and print the loss falling", ct_cmd_demo},
    {"inspect", "a safetensors file's or checkpoint's metadata and tensors", ct_cmd_inspect},
    {"train-gpt", "train a GPT on a text file (or the built-in text) and print a sample", ct_cmd_train_gpt},
    {"train-cnn", "train a CNN on MNIST IDX files (--data DIR) and report held-out accuracy", ct_cmd_train_cnn},
    {"sample", "generate text from a trained GPT or a Hugging Face GPT-2 checkpoint", ct_cmd_sample},
};

static void usage(void) {
  printf("usage: ctorch <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) printf("  %-8s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "ctorch: unknown command '%s'\n", argv[1]);
  usage();
  return 2;
}
