/* Threads: each host thread's index (its trace track), its name, and the
 * span open on it (the flow that links a GPU scope to the span that recorded
 * it). Used by host spans, the GPU core, the timeline and the exporter. */
#include "base/base.h"

#include <stdio.h>

#define VKPROF_MAX_THREADS 1024u

static _Atomic uint32_t g_thread_count;
static char g_thread_names[VKPROF_MAX_THREADS][64];
static _Atomic uint32_t g_thread_named[VKPROF_MAX_THREADS];
static _Thread_local uint32_t tl_tid;       /* 1 + index; 0: not assigned */
static _Thread_local uint64_t tl_open_span; /* flow id of the innermost open span */
static _Atomic uint64_t g_next_span_id = 1;

uint16_t vkprof__thread_index(void)
{
    if (tl_tid == 0) {
        uint32_t t = atomic_fetch_add(&g_thread_count, 1) + 1;
        /* Past the table, threads share the last track (named "other"). */
        tl_tid = t > VKPROF_MAX_THREADS - 1 ? VKPROF_MAX_THREADS : t;
    }
    return (uint16_t)tl_tid;
}

uint32_t vkprof__thread_count(void)
{
    uint32_t n = atomic_load(&g_thread_count);
    return n > VKPROF_MAX_THREADS ? VKPROF_MAX_THREADS : n;
}

const char *vkprof__thread_name(uint16_t tid)
{
    if (tid == 0 || tid > VKPROF_MAX_THREADS) {
        return NULL;
    }
    if (tid == VKPROF_MAX_THREADS) {
        return "other threads";
    }
    return atomic_load_explicit(&g_thread_named[tid - 1], memory_order_acquire)
               ? g_thread_names[tid - 1]
               : NULL;
}

void vkprof_set_thread_name(vkprof_context ctx, const char *name)
{
    if (ctx == NULL || name == NULL) {
        return;
    }
    uint16_t tid = vkprof__thread_index();
    if (tid >= VKPROF_MAX_THREADS) {
        return;
    }
    snprintf(g_thread_names[tid - 1], sizeof g_thread_names[0], "%s", name);
    atomic_store_explicit(&g_thread_named[tid - 1], 1, memory_order_release);
}

uint64_t vkprof__current_span(void)
{
    return tl_open_span;
}

uint64_t vkprof__span_open(void)
{
    uint64_t id = atomic_fetch_add_explicit(&g_next_span_id, 1, memory_order_relaxed);
    tl_open_span = id;
    return id;
}

void vkprof__span_close(uint64_t parent)
{
    tl_open_span = parent;
}
