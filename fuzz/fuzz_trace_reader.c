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
    rpt_summary *s = NULL;
    if (rpt_parse((const char *)data, size, &s, err, sizeof err) != 0) {
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
