/* Every command of the vkprof tool, and the room that holds it (tools/).
 * Each takes the arguments after its name and returns the process's exit
 * status. vkprof_main.c dispatches on the name. */
#ifndef VKPROF_CLI_H
#define VKPROF_CLI_H

int vkprof_cmd_devices(int argc, char **argv); /* cli/cmd_devices.c */
int vkprof_cmd_decode(int argc, char **argv);  /* decode/cmd_decode.c */
int vkprof_cmd_bench(int argc, char **argv);   /* bench/cmd_bench.c */
int vkprof_cmd_report(int argc, char **argv);  /* report/cmd_report.c */
int vkprof_cmd_merge(int argc, char **argv);   /* merge/cmd_merge.c */
int vkprof_cmd_run(int argc, char **argv);     /* run/cmd_run.c */
int vkprof_cmd_recover(int argc, char **argv); /* run/cmd_run.c */
int vkprof_cmd_names(int argc, char **argv);   /* names/cmd_names.c */

#endif
