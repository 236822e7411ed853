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
    const char *stack_names[DEC_SPAN_DEPTH]; /* the section of each open span */
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

/* The hooks' members, for a caller that composes its own dec_hooks (the
 * tensor-parallel driver, decode_tp.c): what section_begin, section_end and
 * step do with `g`. */
void dec_span_section_begin(dec_span_glue *g, const char *name);
void dec_span_section_end(dec_span_glue *g, const char *name);
void dec_span_step(dec_span_glue *g);

/* Annotate the innermost open span of section `section` (the nearest one
 * from the top of the stack) with vkprof_span_annotate_ids(key, ids, n).
 * False when no such section is open, when its span is not timed (an empty
 * token: spans off, or a level that does not time it) or when the span is
 * full. */
bool dec_span_annotate_ids(dec_span_glue *g, const char *section, const char *key,
                           const uint32_t *ids, uint32_t n);
/* Whether a section of that name is open (spans on or not). */
bool dec_span_in_section(const dec_span_glue *g, const char *section);

#endif
