/* libFuzzer target: the trace reader of `vkprof report` on arbitrary bytes,
 * then the text summary and the SVG of whatever it accepts (to /dev/null).
 * Build and run: scripts/fuzz.sh [seconds]. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (sink == NULL) {
        sink = fopen("/dev/null", "w");
    }
    char err[256];
    vkprof_trace_summary *s = NULL;
    if (vkprof_trace_parse((const char *)data, size, &s, err, sizeof err) != 0) {
        if (s != NULL || err[0] == '\0') {
            __builtin_trap(); /* an error must come with a message and no summary */
        }
        return 0;
    }
    if (sink != NULL) {
        vkprof_trace_print(s, "fuzz.json", sink);
        vkprof_trace_svg(s, "fuzz <&>", sink);
    }
    int64_t t0, t1;
    vkprof_trace_pick_token(s, &t0, &t1);
    if (t1 < t0) {
        __builtin_trap();
    }
    vkprof_trace_free(s);
    return 0;
}
