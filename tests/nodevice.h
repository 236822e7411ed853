/* A device that is not there, for tests and benchmarks that need no Vulkan
 * (label "unit"): the two instance functions vkprof_create requires
 * (properties with the given name and a 1 ns period; one compute queue
 * family without timestamps) and no device function. A context made on it
 * has host spans, a trace and its clocks, and no GPU timing. It links no
 * Vulkan loader, so it runs anywhere (under qemu-user too). */
#ifndef VKPROF_TESTS_NODEVICE_H
#define VKPROF_TESTS_NODEVICE_H

#include <vkprof/vkprof.h>

/* A zero desc with the fake handles and proc-addr functions filled in; the
 * device reports `device_name` (copied; NULL: "fake device"). */
vkprof_context_desc th_nodevice_desc(const char *device_name);

#endif
