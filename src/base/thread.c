/* Threads: each host thread's index (its trace track), its name, and the
 * span open on it (the flow that links a GPU scope to the span that recorded
 * it). Used by host spans, the GPU core, the timeline and the exporter. */
#include "base/base.h"

#include <stdio.h>

static _Atomic uint32_t g_thread_count;
static char g_thread_names[VKPROF_MAX_THREADS][64];
static _Atomic uint32_t g_thread_named[VKPROF_MAX_THREADS];
/* A thread's state, in one TLS object: one TLS address per call (in the
 * shared library, each TLS address is a __tls_get_addr call). */
typedef struct thread_state {
    uint64_t open_span;           /* flow id of the innermost open span */
    uint64_t flow_next, flow_end; /* this thread's flow ids: [next, end) */
    uint32_t tid;                 /* 1 + index; 0: not assigned */
} thread_state;
static _Thread_local thread_state tl;

/* Flow ids: unique in the process, never 0, increasing on each thread; not
 * dense and not in time order across threads. A thread takes FLOW_BLOCK ids
 * at a time from the process counter, so a span opened while tracing pays
 * one atomic read-modify-write in FLOW_BLOCK instead of one each (a
 * lock-prefixed RMW costs a span ~8-11 ns on the H200 host: issue 12's
 * host-span sections of docs/performance-log.md). The ids a thread never uses
 * are skipped. Readers only match ids for equality
 * (a GPU scope's flow against its span's id) or sort them; the exporters
 * number the flows they write 1, 2, ... themselves. */
#define FLOW_BLOCK UINT64_C(256)
static _Atomic uint64_t g_next_span_id = 1;

uint16_t vkprof__thread_index(void)
{
    thread_state *me = &tl;
    VKPROF_KEEP_TLS_ADDR(me);
    if (me->tid == 0) {
        uint32_t t = atomic_fetch_add(&g_thread_count, 1) + 1;
        /* Past the table, threads share the last track (named "other"). */
        me->tid = t > VKPROF_MAX_THREADS - 1 ? VKPROF_MAX_THREADS : t;
    }
    return (uint16_t)me->tid;
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
    return tl.open_span;
}

uint64_t vkprof__span_open(void)
{
    thread_state *me = &tl;
    VKPROF_KEEP_TLS_ADDR(me);
    uint64_t id = me->flow_next;
    if (id == me->flow_end) {
        id = atomic_fetch_add_explicit(&g_next_span_id, FLOW_BLOCK, memory_order_relaxed);
        me->flow_end = id + FLOW_BLOCK;
    }
    me->flow_next = id + 1;
    me->open_span = id;
    return id;
}

void vkprof__span_close(uint64_t parent)
{
    tl.open_span = parent;
}
