/* The seam between the decode engine and its profiling modes (internal).
 *
 * The engine records a token the same way in every mode: one command buffer
 * per token, a barrier opening it and one between phase calls, one submit
 * and fence wait per token. Where the host must read something mid-token
 * (a tensor-parallel all-reduce, an MoE layer's routed experts) the token is
 * several segments: the buffer so far is ended, submitted and waited for,
 * and the token goes on in a new buffer (the same VkCommandBuffer, begun
 * again). A mode sees cmd_begun once per segment (p->segment says which,
 * 0 the first) and segment_done after each fence but the last, which is
 * token_done. Dense tokens at ranks <= 1 are one segment, as before. It calls the mode at fixed
 * points, and asks it one question: whether each phase call is its own command buffer, submitted
 * and waited for before the next (submit_per_call: the 2-slot cycle, one
 * scope in flight). Then the barrier that separates calls opens each call's
 * buffer instead, so the device runs the same commands.
 *
 * A mode is a const dec_prof_mode in its own file; every call in it may be
 * NULL (nothing to do). Adding one: a dec_profile value in decode.h, the
 * file, and a line in dec_prof_modes (decode_profile.c).
 *
 *   off              decode_profile.c           nothing
 *   gpu              decode_profile_gpu.c       vkprof 2-slot
 *   ring             decode_profile_ring.c      vkprof ring
 *   baseline(-shared) decode_baseline.c         the same stamps without the library
 *
 * The points, in the order of one token:
 *
 *   token_begin   one-buffer modes: before the token's command buffer is
 *                 begun (the previous token's fence has been waited on)
 *   cmd_begun     one-buffer modes: the buffer is begun, its opening barrier
 *                 recorded (every segment; p->segment counts them)
 *   phase_begin   after the barrier before a phase call's dispatches
 *   phase_end     after its dispatches
 *   pre_submit    just before every vkQueueSubmit of the engine (the weight
 *                 generation and readbacks too), the buffer ended
 *   segment_done  one-buffer modes: after a segment's fence, when the token
 *                 goes on in a next segment (the host reads, then cmd_begun)
 *   call_done     submit_per_call: after the phase call's fence
 *   token_done    one-buffer modes: after the token's fence
 *
 * and around them: check (the mode's configuration, at dec_create and
 * dec_reconfigure), create/destroy (the mode's state: created before the
 * first token the first time the mode is selected on an engine, kept until
 * dec_destroy; create is told its mode, which is not yet p->mode), reset (dec_reset, and each
 * switch into the mode: the sums to zero). After a failure in a step the engine calls no more of
 * the mode in that step (nor submits). Calls that return int return 0, or 1 with a message in
 * p->msg (dec_prof_fail). */
#ifndef VKPROF_DECODE_PROFILE_H
#define VKPROF_DECODE_PROFILE_H

#include "decode.h"

#define DEC_PROF_MODES 5 /* dec_profile values */

typedef struct dec_prof dec_prof;
typedef struct dec_prof_mode dec_prof_mode;

struct dec_prof_mode {
    dec_profile id;
    const char *name; /* dec_profile_name */
    bool submit_per_call;
    int (*check)(dec_prof *p, vkprof_context ctx);
    int (*create)(dec_prof *p, const dec_prof_mode *mode, void **state);
    void (*destroy)(dec_prof *p, void *state);
    void (*reset)(dec_prof *p);
    int (*token_begin)(dec_prof *p);
    int (*cmd_begun)(dec_prof *p, VkCommandBuffer cmd);
    int (*phase_begin)(dec_prof *p, VkCommandBuffer cmd, uint32_t phase);
    int (*phase_end)(dec_prof *p, VkCommandBuffer cmd, uint32_t phase);
    void (*pre_submit)(dec_prof *p, VkCommandBuffer cmd);
    int (*call_done)(dec_prof *p, uint32_t phase);
    int (*segment_done)(dec_prof *p);
    int (*token_done)(dec_prof *p);
};

/* One engine's profiling: what the engine gives every mode, and the modes'
 * states. */
struct dec_prof {
    const dec_prof_mode *mode; /* the current one */
    vku_device *dev;
    vkprof_context ctx; /* the caller's (gpu, ring) */
    uint32_t calls_per_token;
    uint32_t segment; /* one-buffer modes: the token's segment being recorded (0: first) */
    void *state;      /* the current mode's (NULL: none) */
    void *states[DEC_PROF_MODES]; /* every mode's, by id, once created */
    char msg[256];
};

/* The modes, by dec_profile value. */
extern const dec_prof_mode dec_mode_off, dec_mode_gpu, dec_mode_ring, dec_mode_baseline,
    dec_mode_baseline_shared;

/* NULL for a value that is no mode. */
const dec_prof_mode *dec_prof_mode_of(dec_profile profile);

/* Returns 1 with the message in p->msg (printf format). */
int dec_prof_fail(dec_prof *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Once per engine, before anything is submitted: the device, the calls per
 * token and the mode `profile` with `ctx` (checked; on failure the mode is
 * off and 1 is returned). The mode's state is created by dec_prof_prepare. */
int dec_prof_init(dec_prof *p, vku_device *dev, uint32_t calls_per_token, dec_profile profile,
                  vkprof_context ctx);
/* The current mode's state, created where it was not yet, and its reset. */
int dec_prof_prepare(dec_prof *p);
/* To `profile` with `ctx`: checked and prepared, then current; on failure
 * nothing changes. The caller resets (dec_prof_reset). */
int dec_prof_switch(dec_prof *p, dec_profile profile, vkprof_context ctx);
void dec_prof_reset(dec_prof *p);
/* Every mode's state (the device is idle). */
void dec_prof_destroy(dec_prof *p);

static inline bool dec_prof_submit_per_call(const dec_prof *p)
{
    return p->mode->submit_per_call;
}

static inline int dec_prof_token_begin(dec_prof *p)
{
    return p->mode->token_begin != NULL ? p->mode->token_begin(p) : 0;
}

static inline int dec_prof_cmd_begun(dec_prof *p, VkCommandBuffer cmd)
{
    return p->mode->cmd_begun != NULL ? p->mode->cmd_begun(p, cmd) : 0;
}

static inline int dec_prof_phase_begin(dec_prof *p, VkCommandBuffer cmd, uint32_t phase)
{
    return p->mode->phase_begin != NULL ? p->mode->phase_begin(p, cmd, phase) : 0;
}

static inline int dec_prof_phase_end(dec_prof *p, VkCommandBuffer cmd, uint32_t phase)
{
    return p->mode->phase_end != NULL ? p->mode->phase_end(p, cmd, phase) : 0;
}

static inline void dec_prof_pre_submit(dec_prof *p, VkCommandBuffer cmd)
{
    if (p->mode->pre_submit != NULL) {
        p->mode->pre_submit(p, cmd);
    }
}

static inline int dec_prof_call_done(dec_prof *p, uint32_t phase)
{
    return p->mode->call_done != NULL ? p->mode->call_done(p, phase) : 0;
}

static inline int dec_prof_segment_done(dec_prof *p)
{
    return p->mode->segment_done != NULL ? p->mode->segment_done(p) : 0;
}

static inline int dec_prof_token_done(dec_prof *p)
{
    return p->mode->token_done != NULL ? p->mode->token_done(p) : 0;
}

#endif
