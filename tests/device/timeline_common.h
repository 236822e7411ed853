/* What the timeline tests (test_timeline_*.c, split from test_timeline.c
 * by topic) share: the lavapipe device with validation, the busy pipeline,
 * a quiet logger, a temporary folder for trace files, a context with host
 * spans on, and a trace reader that checks a trace's structure. */
#ifndef VKPROF_TEST_TIMELINE_COMMON_H
#define VKPROF_TEST_TIMELINE_COMMON_H

#include <cjson/cJSON.h>

#include "harness.h"

extern th_gpu g;
extern vku_busy busy;
extern th_log logbuf;
extern char tmpdir[256]; /* trace files of this run */

/* The device, the busy pipeline (4096 floats), a quiet logbuf and tmpdir;
 * exits with 1 on failure. */
void tl_init(void);
/* Destroys them; the final line and the exit status (th_done). */
int tl_finish(void);

void sleep_ms(int ms);

/* Host spans on (every span), GPU timing on; through the simulated function
 * table with `sim`; with `give_queue` the context has the queue (bracket
 * calibration). Logs into logbuf. */
vkprof_context make_ctx(bool sim, bool give_queue);

/* ts / dur strings are microseconds with 3 decimals: back to integer ns */
int64_t to_ns(const cJSON *v);

/* Parse a trace with cJSON and check its structure: the fields every event
 * needs, proper nesting per (pid, tid), named tracks, metadata. Returns the
 * root (caller deletes) or NULL. */
cJSON *load_and_check(const char *path);

/* metadata.a (or metadata.a.b) as an integer, or -1. */
int64_t meta_i64(const cJSON *root, const char *a, const char *b);

#endif
