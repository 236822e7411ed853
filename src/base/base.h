/* The base seam: the logger, misuse and error counting, thread indices and
 * names, the thread's open span (flow ids). Calls nothing above it.
 * (json.h, the one JSON writer, is the other header of this folder.) */
#ifndef VKPROF_BASE_H
#define VKPROF_BASE_H

#include "context.h"

/* log.c */
void vkprof__log(vkprof_context ctx, vkprof_log_level level, vkprof_result code, const char *fmt,
                 ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Count a misuse/failure, log it, and return it. */
vkprof_result vkprof__fail(vkprof_context ctx, vkprof_result code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Counts a result in its error counter; returns the count after it (0: not a
 * counted result). */
uint64_t vkprof__count_result(vkprof_context ctx, vkprof_result code);
/* A snapshot of the counters; zero them. */
void vkprof__errors_read(vkprof_context ctx, vkprof_error_counts *out);
void vkprof__errors_clear(vkprof_context ctx);

/* The step counter (ctx->steps): steps finished; the current step is this
 * + 1. Every seam reads it here; vkprof_step (core) advances it, returning
 * the step just finished, and an opened spool (export) sets it. */
static inline uint64_t vkprof__steps_done(vkprof_context ctx)
{
    return atomic_load_explicit(&ctx->steps.done, memory_order_relaxed);
}
static inline uint64_t vkprof__steps_advance(vkprof_context ctx)
{
    return atomic_fetch_add(&ctx->steps.done, 1) + 1;
}
static inline void vkprof__steps_set(vkprof_context ctx, uint64_t done)
{
    atomic_store(&ctx->steps.done, done);
}

/* Keeps a TLS address computed once in a register for the rest of a
 * function: GCC otherwise computes it again at each use, which in
 * position-independent code (both libraries) is a __tls_get_addr call each
 * time. `p` is a pointer variable; its value is unchanged. */
#if defined(__GNUC__) || defined(__clang__)
#define VKPROF_KEEP_TLS_ADDR(p) __asm__("" : "+r"(p))
#else
#define VKPROF_KEEP_TLS_ADDR(p) ((void)0)
#endif

/* thread.c. Thread indices run 1..VKPROF_MAX_THREADS, one per thread for
 * the process's life, never reused; past the table, every further thread
 * shares index VKPROF_MAX_THREADS ("other threads"). */
#define VKPROF_MAX_THREADS 1024u
uint64_t vkprof__current_span(void);
uint64_t vkprof__span_open(void); /* a new flow id, now the thread's open span */
void vkprof__span_close(uint64_t parent);
uint16_t vkprof__thread_index(void);
const char *vkprof__thread_name(uint16_t tid);
uint32_t vkprof__thread_count(void);

#endif
