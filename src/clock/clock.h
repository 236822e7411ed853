/* The clock seam: host clocks and their bridges, the exact tick arithmetic,
 * and the GPU-to-host calibration with drift correction. Calls only base. */
#ifndef VKPROF_CLOCK_H
#define VKPROF_CLOCK_H

#include "context.h"

/* clock.c */
uint64_t vkprof__raw_now_ns(void);
uint64_t vkprof__realtime_ns(void);
int64_t vkprof__raw_to_mono_offset(uint64_t *err_ns);
int64_t vkprof__realtime_to_mono_offset(uint64_t *err_ns);

/* ticks.c */
/* round(a * b / c) for c > 0, saturating; exact in 128-bit arithmetic */
uint64_t vkprof__muldiv(uint64_t a, uint64_t b, uint64_t c);

/* calib.c */
vkprof_result vkprof__cal_init(vkprof_context ctx);
void vkprof__cal_shutdown(vkprof_context ctx);
void vkprof__cal_maybe_refresh(vkprof_context ctx);
bool vkprof__cal_map(vkprof_context ctx, uint64_t ticks, uint64_t *host_ns);

#endif
