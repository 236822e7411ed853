/* Internals shared by the decode engine's C files (not for other users). */
#ifndef VKPROF_DECODE_INTERNAL_H
#define VKPROF_DECODE_INTERNAL_H

#include "decode.h"

/* Logits per stage-1 argmax workgroup, and the most stage-1 groups planned. */
#define DEC_ARGMAX_BLOCK 2048u
#define DEC_ARGMAX_MAX_GROUPS 1024u

typedef struct dec_shapes {
    uint32_t q_dim, kv_dim, qkv_rows;
} dec_shapes;

dec_shapes dec_shapes_of(const dec_preset *p);
/* cos/sin pairs [ctx][head_dim/2][2], computed in double, stored as float. */
void dec_rope_table(const dec_preset *p, uint32_t ctx, float *out);

/* The engine's profiling (decode_profile.h), for the modes' own figures. */
typedef struct dec_prof dec_prof;
const dec_prof *dec_engine_prof(const dec_engine *e);

#endif
