/* An ELF shared object that embeds SPIR-V like a runtime does, for the
 * `vkprof names` test: ggml-style byte arrays (names_fixture_gen.c, from
 * test_names_embed.cmake), this repo's glslang --vn word arrays, and data that
 * is not SPIR-V. */
#include <stdint.h>

#include "busy_spv.h"

/* a word array: the name is the symbol without "_spv" */
const uint32_t *names_fixture_busy(void);
const uint32_t *names_fixture_busy(void)
{
    return busy_spv;
}

/* not SPIR-V: an object that does not start with the magic, one too small to
 * be a module, one in .bss */
const unsigned char not_spirv_data[64] = {1, 2, 3, 4};
const uint32_t tiny_data[4] = {0x07230203u, 0x00010500u, 0, 8};
unsigned char zeroed_data[4096];
