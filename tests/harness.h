/* Test harness: a real Vulkan device (lavapipe in CI) with the Khronos
 * validation layer on. Any validation warning or error fails the test. */
#ifndef VKPROF_TEST_HARNESS_H
#define VKPROF_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>

#include "vkutil.h"

extern int th_failures;
extern const char *th_case;

/* CHECK and CHECK_EQ_U64 count into th_failures, naming th_case */
#define CHECK_FAILURES th_failures
#define CHECK_CASE th_case
#include "check.h"

#define CHECK_VK(expr)                                                                             \
    do {                                                                                           \
        VkResult r_ = (expr);                                                                      \
        if (r_ != VK_SUCCESS) {                                                                    \
            fprintf(stderr, "FAIL %s:%d [%s]: %s -> %s\n", __FILE__, __LINE__, th_case, #expr,     \
                    vku_result_name(r_));                                                          \
            th_failures++;                                                                         \
        }                                                                                          \
    } while (0)

typedef struct th_gpu {
    vku_instance inst;
    vku_device dev;
} th_gpu;

/* Instance with validation (required) and a device on the compute family of
 * the default device (or VKPROF_TEST_DEVICE). Exits with 1 on failure. */
void th_gpu_init(th_gpu *g);
/* th_gpu_init with device options (NULL: th_gpu_init's device). */
void th_gpu_init_ex(th_gpu *g, const vku_device_options *opt);
/* The busy pipeline over `count` floats; exits with 1 on failure. */
void th_busy_init(th_gpu *g, vku_busy *busy, uint32_t count);
/* Destroys everything; counts every validation message as a failure. */
void th_gpu_finish(th_gpu *g);

/* Command buffers, submits and the timing counters, for tests on g's
 * command pool, queue and fence (g->dev.cmd, the harness's own buffer, stays
 * for vku_begin / vku_submit_wait). */
/* A primary command buffer from g's pool; free it with vkFreeCommandBuffers. */
VkCommandBuffer th_alloc_cmd(th_gpu *g);
/* vkBeginCommandBuffer with no flags. */
void th_begin_cmd(VkCommandBuffer c);
/* The buffers as one batch on g's queue, signalling g's fence, and a wait on
 * it (60 s at most): through vkprof_queue_submit where ctx is not NULL (the
 * library is told of the executions), with vkQueueSubmit alone where it is. */
void th_submit_wait(th_gpu *g, vkprof_context ctx, uint32_t count, const VkCommandBuffer *cmds);
/* The context's timing counters; checks the one accounting on the way:
 * samples == collected + dropped + pending. */
vkprof_timing_stats th_stats(vkprof_context ctx);
/* One phase's counters from the snapshot (checked to succeed). */
vkprof_phase_stats th_phase(vkprof_context ctx, vkprof_phase p);

/* A logger that records the last message and counts calls, for tests. */
typedef struct th_log {
    int calls;
    int errors;
    int warnings;
    vkprof_result last_code;
    char last[512];
    int quiet;
} th_log;
void th_log_fn(void *user, vkprof_log_level level, vkprof_result code, const char *msg);

/* The one context factory of the device tests: the desc every test's
 * context starts from, g's instance, device and queue family
 * (vku_vkprof_desc), logging through th_log_fn into `log` (NULL: no log
 * set); with `sim`, the function table goes through tests/sim.c's counting
 * table. The rest is the library's defaults: a test sets what it tests,
 * then creates with th_ctx. */
vkprof_context_desc th_desc(const th_gpu *g, th_log *log, bool sim);
/* vkprof_create(d), CHECKed: the context, or NULL after counting a failure. */
vkprof_context th_ctx(const vkprof_context_desc *d);

/* The whole file as a NUL-terminated string (free it), or NULL. */
char *th_read_file(const char *path);

/* Run a case: sets th_case and prints it. */
#define RUN(fn, ...)                                                                               \
    do {                                                                                           \
        th_case = #fn;                                                                             \
        int before_ = th_failures;                                                                 \
        fn(__VA_ARGS__);                                                                           \
        printf("%s %s\n", th_failures == before_ ? "ok  " : "FAIL", #fn);                          \
        fflush(stdout);                                                                            \
    } while (0)

/* Final line and exit status. */
int th_done(void);

#endif
