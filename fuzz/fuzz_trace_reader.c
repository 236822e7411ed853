/* libFuzzer target: the trace reader of `vkprof report` on arbitrary bytes,
 * then the text summary and the SVG of whatever it accepts (to /dev/null).
 * Bytes framed as a native Perfetto trace go through its converter first
 * (pftrace_reader.c), as rpt_load_file sends them.
 * Build and run: scripts/fuzz.sh [seconds]. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (sink == NULL) {
        sink = fopen("/dev/null", "w");
    }
    char err[256];
    err[0] = '\0';
    char *conv = NULL;
    size_t conv_len = 0;
    if (rpt_is_pftrace((const char *)data, size)) {
        if (rpt_pftrace_to_json((const char *)data, size, &conv, &conv_len, err, sizeof err) != 0) {
            if (conv != NULL || err[0] == '\0') {
                __builtin_trap(); /* the same contract as the JSON reader's */
            }
            return 0;
        }
        data = (const uint8_t *)conv;
        size = conv_len;
    }
    rpt_summary *s = NULL;
    const int rc = rpt_parse((const char *)data, size, &s, err, sizeof err);
    free(conv);
    if (rc != 0) {
        if (s != NULL || err[0] == '\0') {
            __builtin_trap(); /* an error must come with a message and no summary */
        }
        return 0;
    }
    if (sink != NULL) {
        rpt_print(s, "fuzz.json", sink);
        rpt_svg(s, "fuzz <&>", sink);
    }
    int64_t t0, t1;
    rpt_pick_token(s, &t0, &t1);
    if (t1 < t0) {
        __builtin_trap();
    }
    rpt_free(s);
    return 0;
}
