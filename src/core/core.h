/* The core seam: create/destroy, the resolved desc, the function table's
 * loading, vkprof_step. Calls every seam below; nothing calls it. */
#ifndef VKPROF_CORE_H
#define VKPROF_CORE_H

#include "context.h"

/* context.c */
void vkprof__update_active(vkprof_context ctx);

#endif
