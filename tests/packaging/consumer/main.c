/* Builds against the installed header and library only. */
#include <stdio.h>
#include <string.h>
#include <vkprof/vkprof.h>

int main(void)
{
    if (vkprof_version() != VKPROF_VERSION) {
        fprintf(stderr, "header/library version mismatch\n");
        return 1;
    }
    if (strcmp(vkprof_result_name(VKPROF_ERROR_NOT_READY), "VKPROF_ERROR_NOT_READY") != 0) {
        return 1;
    }
    if (vkprof_ticks_to_ns(19200000, 52.08333206f) != 999999975u) {
        fprintf(stderr, "ticks_to_ns: %llu\n",
                (unsigned long long)vkprof_ticks_to_ns(19200000, 52.08333206f));
        return 1;
    }
    vkprof_context ctx = NULL;
    vkprof_context_desc d = vkprof_default_desc();
    if (vkprof_create(&d, &ctx) != VKPROF_ERROR_INVALID_ARGUMENT || ctx != NULL) {
        return 1;
    }
    printf("consumer: vkprof %u ok\n", vkprof_version());
    return 0;
}
