/* Subcommands of the vkprof tool. Each returns the process exit status. */
#ifndef VKPROF_CLI_H
#define VKPROF_CLI_H

int vkprof_cmd_devices(int argc, char **argv);
int vkprof_cmd_decode(int argc, char **argv);
int vkprof_cmd_bench(int argc, char **argv);
int vkprof_cmd_report(int argc, char **argv);
int vkprof_cmd_run(int argc, char **argv);
int vkprof_cmd_recover(int argc, char **argv);
int vkprof_cmd_names(int argc, char **argv);

#endif
