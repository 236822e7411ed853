/* See decode_spans.h. */
#include "decode_spans.h"

#include <string.h>

/* The bucket of a section, registered on first use; false when the bucket
 * table is full, so that the section goes untimed rather than into another
 * bucket's figures. */
static bool bucket_for(dec_span_glue *g, const char *name, vkprof_bucket *out)
{
    for (uint32_t i = 0; i < g->count; i++) {
        if (g->names[i] == name || strcmp(g->names[i], name) == 0) {
            *out = g->buckets[i];
            return true;
        }
    }
    if (vkprof_register_bucket(g->prof, name, false, out) != VKPROF_OK) {
        return false;
    }
    if (g->count < DEC_SPAN_SECTIONS) {
        g->names[g->count] = name;
        g->buckets[g->count++] = *out;
    }
    return true;
}

void dec_span_section_begin(dec_span_glue *g, const char *name)
{
    if (g->depth >= DEC_SPAN_DEPTH) {
        g->overflow++;
        return;
    }
    vkprof_bucket b;
    vkprof_span s = {0};
    if (bucket_for(g, name, &b)) {
        s = vkprof_span_begin(g->prof, b);
    } else {
        g->untimed++; /* an empty token: its end does nothing */
    }
    g->stack_names[g->depth] = name;
    g->stack[g->depth++] = s;
}

void dec_span_section_end(dec_span_glue *g, const char *name)
{
    (void)name;
    if (g->overflow > 0) {
        g->overflow--;
        return;
    }
    if (g->depth > 0) {
        vkprof_span_end(g->prof, &g->stack[--g->depth]);
    }
}

void dec_span_step(dec_span_glue *g)
{
    vkprof_step(g->prof);
}

bool dec_span_annotate_ids(dec_span_glue *g, const char *section, const char *key,
                           const uint32_t *ids, uint32_t n)
{
    for (uint32_t i = g->depth; i-- > 0;) {
        if (g->stack_names[i] == section || strcmp(g->stack_names[i], section) == 0) {
            return g->stack[i].start_ns != 0 && vkprof_span_annotate_ids(&g->stack[i], key, ids, n);
        }
    }
    return false;
}

bool dec_span_in_section(const dec_span_glue *g, const char *section)
{
    for (uint32_t i = g->depth; i-- > 0;) {
        if (g->stack_names[i] == section || strcmp(g->stack_names[i], section) == 0) {
            return true;
        }
    }
    return false;
}

static void on_section_begin(void *user, const char *name)
{
    dec_span_section_begin(user, name);
}

static void on_section_end(void *user, const char *name)
{
    dec_span_section_end(user, name);
}

static void on_step(void *user, uint32_t index, uint32_t token)
{
    (void)index;
    (void)token;
    dec_span_step(user);
}

dec_hooks dec_span_hooks(dec_span_glue *g, vkprof_context prof, bool spans)
{
    memset(g, 0, sizeof *g);
    g->prof = prof;
    dec_hooks h = {.user = g,
                   .section_begin = spans ? on_section_begin : NULL,
                   .section_end = spans ? on_section_end : NULL,
                   .step = prof != NULL ? on_step : NULL};
    return h;
}
