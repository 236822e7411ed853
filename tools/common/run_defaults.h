/* vkprof run's default mode (issue 26), shared by `vkprof run` and
 * `vkprof bench --layer` (which measures it): the rotating window of K
 * dispatches a step, and the command buffers' busy scopes in 1 step in N,
 * at random (and the second step), each such step without the window.
 * Each stamp a step costs: on llama.cpp's 1B decode on an H100, K = 2 and
 * N = 8 cost +0.98 % of the step time over 27 runs, against +3.0 % for
 * K = 4, N = 4 in the same rounds (docs/performance.md, "The default
 * now"). */
#ifndef VKPROF_RUN_DEFAULTS_H
#define VKPROF_RUN_DEFAULTS_H

#define VKPROF_RUN_DEFAULT_ROTATE 2
#define VKPROF_RUN_DEFAULT_BUSY_EVERY 8

#define VKPROF_RUN_STR_(x) #x
#define VKPROF_RUN_STR(x) VKPROF_RUN_STR_(x)

#endif
