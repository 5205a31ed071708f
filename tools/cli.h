/* Subcommands of the ctorch command line. */
#ifndef CT_CLI_H
#define CT_CLI_H
int ct_cmd_info(int argc, char **argv);
int ct_cmd_ops(int argc, char **argv);
int ct_cmd_demo(int argc, char **argv);
int ct_cmd_inspect(int argc, char **argv);
int ct_cmd_train_gpt(int argc, char **argv);
int ct_cmd_sample(int argc, char **argv);
int ct_cmd_train_cnn(int argc, char **argv);
#endif
