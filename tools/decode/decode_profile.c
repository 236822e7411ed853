/* The profiling modes of the decode engine behind one seam (see
 * decode_profile.h), and the mode that does nothing. */
#include "decode_profile.h"

#include <stdarg.h>
#include <stdio.h>

/* Unprofiled: one command buffer, one submit per token, nothing else. */
const dec_prof_mode dec_mode_off = {.id = DEC_PROFILE_OFF, .name = "off"};

static const dec_prof_mode *const modes[DEC_PROF_MODES] = {
    [DEC_PROFILE_OFF] = &dec_mode_off,
    [DEC_PROFILE_GPU] = &dec_mode_gpu,
    [DEC_PROFILE_RING] = &dec_mode_ring,
    [DEC_PROFILE_BASELINE] = &dec_mode_baseline,
    [DEC_PROFILE_BASELINE_SHARED] = &dec_mode_baseline_shared,
};

const dec_prof_mode *dec_prof_mode_of(dec_profile profile)
{
    return (unsigned)profile < DEC_PROF_MODES ? modes[profile] : NULL;
}

const char *dec_profile_name(dec_profile profile)
{
    const dec_prof_mode *m = dec_prof_mode_of(profile);
    return m != NULL ? m->name : "?";
}

int dec_prof_fail(dec_prof *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
    return 1;
}

/* The mode for `profile` with `ctx`, checked; NULL with p->msg on failure. */
static const dec_prof_mode *checked(dec_prof *p, dec_profile profile, vkprof_context ctx)
{
    const dec_prof_mode *m = dec_prof_mode_of(profile);
    if (m == NULL) {
        dec_prof_fail(p, "unknown profiling mode %d", (int)profile);
        return NULL;
    }
    if (m->check != NULL && m->check(p, ctx) != 0) {
        return NULL;
    }
    return m;
}

int dec_prof_init(dec_prof *p, vku_device *dev, uint32_t calls_per_token, dec_profile profile,
                  vkprof_context ctx)
{
    *p = (dec_prof){.mode = &dec_mode_off, .dev = dev, .calls_per_token = calls_per_token};
    const dec_prof_mode *m = checked(p, profile, ctx);
    if (m == NULL) {
        return 1;
    }
    p->mode = m;
    p->ctx = ctx;
    return 0;
}

/* The state of mode m, created on first use. */
static int state_of(dec_prof *p, const dec_prof_mode *m, void **out)
{
    void **slot = &p->states[m->id];
    if (*slot == NULL && m->create != NULL && m->create(p, m, slot) != 0) {
        *slot = NULL;
        return 1;
    }
    *out = *slot;
    return 0;
}

int dec_prof_prepare(dec_prof *p)
{
    if (state_of(p, p->mode, &p->state) != 0) {
        return 1;
    }
    dec_prof_reset(p);
    return 0;
}

int dec_prof_switch(dec_prof *p, dec_profile profile, vkprof_context ctx)
{
    const dec_prof_mode *m = checked(p, profile, ctx);
    void *state = NULL;
    if (m == NULL || state_of(p, m, &state) != 0) {
        return 1;
    }
    p->mode = m;
    p->ctx = ctx;
    p->state = state;
    return 0;
}

void dec_prof_reset(dec_prof *p)
{
    if (p->mode->reset != NULL) {
        p->mode->reset(p);
    }
}

void dec_prof_destroy(dec_prof *p)
{
    for (unsigned i = 0; i < DEC_PROF_MODES; i++) {
        if (p->states[i] != NULL && modes[i]->destroy != NULL) {
            modes[i]->destroy(p, p->states[i]);
        }
        p->states[i] = NULL;
    }
    p->state = NULL;
}
