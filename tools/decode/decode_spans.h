/* The engine's section hooks as vkprof host spans: each section name becomes
 * a bucket of the same name (the default buckets keep their ids), sections
 * nest as spans on the calling thread, and each token is a vkprof_step().
 * Used by `vkprof decode` and `vkprof bench`. */
#ifndef VKPROF_DECODE_SPANS_H
#define VKPROF_DECODE_SPANS_H

#include "decode.h"

#define DEC_SPAN_DEPTH 16
#define DEC_SPAN_SECTIONS 32

typedef struct dec_span_glue {
    vkprof_context prof;
    vkprof_span stack[DEC_SPAN_DEPTH];
    uint32_t depth;
    uint32_t overflow;                    /* sections deeper than the stack: not timed, counted */
    const char *names[DEC_SPAN_SECTIONS]; /* static strings from the engine */
    vkprof_bucket buckets[DEC_SPAN_SECTIONS];
    uint32_t count;
    uint32_t untimed; /* sections that found no bucket (table full): not timed */
} dec_span_glue;

/* Hooks for `prof`: spans for every section when `spans`, a vkprof_step()
 * per token always. `g` must outlive the engine's use of the hooks. */
dec_hooks dec_span_hooks(dec_span_glue *g, vkprof_context prof, bool spans);

#endif
