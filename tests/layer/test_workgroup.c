/* The layer's dispatch args from SPIR-V (src/layer/names.h): the local size
 * of each compute entry point (LocalSize, LocalSizeId, the WorkgroupSize
 * builtin, specialisation constants resolved or not) and the text of the
 * specialisation constants, on modules assembled here word by word (the
 * words the SPIR-V spec gives each instruction), native and byte-swapped.
 * glslang's own output is checked end to end by test_layer_basic_spec. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "names.h"

typedef struct spv {
    uint32_t w[512];
    size_t n;
} spv;

static void begin(spv *m)
{
    m->n = 0;
    const uint32_t head[5] = {0x07230203u, 0x00010600u, 0, 100, 0};
    memcpy(m->w, head, sizeof head);
    m->n = 5;
}

/* one instruction: opcode and operand words */
static void op(spv *m, uint32_t code, int nw, const uint32_t *ops)
{
    m->w[m->n++] = ((uint32_t)(nw + 1) << 16) | code;
    for (int i = 0; i < nw; i++) {
        m->w[m->n++] = ops[i];
    }
}
#define OP(m, code, ...)                                                                           \
    do {                                                                                           \
        const uint32_t o_[] = {__VA_ARGS__};                                                       \
        op((m), (code), (int)(sizeof o_ / sizeof o_[0]), o_);                                      \
    } while (0)

/* "main" as a literal string: 4 bytes, then a NUL word */
#define MAIN_STR 0x6e69616du, 0u
/* "aux" */
#define AUX_STR 0x00787561u

enum {
    EntryPoint = 15,
    ExecutionMode = 16,
    ExecutionModeId = 331,
    Decorate = 71,
    Constant = 43,
    ConstantComposite = 44,
    SpecConstant = 50,
    SpecConstantComposite = 51,
    SpecConstantOp = 52,
    GLCompute = 5
};

static void text(const vkl_workgroup *wg, const vkl_spec_entry *e, uint32_t n, const void *data,
                 size_t size, char *out)
{
    vkl_workgroup_text(wg, e, n, data, size, out, 48);
}

static void swap_all(spv *m)
{
    for (size_t i = 0; i < m->n; i++) {
        uint32_t v = m->w[i];
        m->w[i] = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
    }
}

static void test_local_size(void)
{
    for (int swapped = 0; swapped < 2; swapped++) {
        spv m;
        begin(&m);
        /* main (id 1): LocalSize 64 2 1; aux (id 2): LocalSizeId 10 11 12 */
        OP(&m, EntryPoint, GLCompute, 1, MAIN_STR);
        OP(&m, EntryPoint, GLCompute, 2, AUX_STR);
        OP(&m, ExecutionMode, 1, 17, 64, 2, 1);
        OP(&m, ExecutionModeId, 2, 38, 10, 11, 12);
        OP(&m, Decorate, 11, 1, 7); /* id 11: SpecId 7 */
        OP(&m, Constant, 20, 10, 16);
        OP(&m, SpecConstant, 20, 11, 4);
        OP(&m, Constant, 20, 12, 1);
        if (swapped) {
            swap_all(&m);
        }
        vkl_workgroup wg[VKL_WG_ENTRIES];
        CHECK_EQ_U64(vkl_spirv_workgroups(m.w, m.n, wg, VKL_WG_ENTRIES), 2);
        CHECK(strcmp(wg[0].entry, "main") == 0 && strcmp(wg[1].entry, "aux") == 0);
        char out[48];
        text(&wg[0], NULL, 0, NULL, 0, out);
        CHECK(strcmp(out, "64,2,1") == 0);
        /* the spec constant's default, then the pipeline's value */
        text(&wg[1], NULL, 0, NULL, 0, out);
        CHECK(strcmp(out, "16,4,1") == 0);
        const uint32_t nine = 9;
        const vkl_spec_entry e7 = {7, 0, 4};
        text(&wg[1], &e7, 1, &nine, 4, out);
        CHECK(strcmp(out, "16,9,1") == 0);
        /* another id's value leaves the default */
        const vkl_spec_entry e8 = {8, 0, 4};
        text(&wg[1], &e8, 1, &nine, 4, out);
        CHECK(strcmp(out, "16,4,1") == 0);
        /* an 8-byte value for a 32-bit size: not resolved */
        const uint64_t big = 9;
        const vkl_spec_entry e7w = {7, 0, 8};
        text(&wg[1], &e7w, 1, &big, 8, out);
        CHECK(strcmp(out, "unknown: spec constant 7 is not 4 bytes") == 0);
        /* an entry past the data */
        const vkl_spec_entry e7p = {7, 4, 4};
        text(&wg[1], &e7p, 1, &nine, 4, out);
        CHECK(strcmp(out, "unknown: spec constant 7 is not 4 bytes") == 0);
        /* at most `max` entry points */
        CHECK_EQ_U64(vkl_spirv_workgroups(m.w, m.n, wg, 1), 1);
    }
}

static void test_builtin_and_unknown(void)
{
    spv m;
    begin(&m);
    /* WorkgroupSize (id 30) = (spec 31 with SpecId 0, default 1; 2; an
     * expression 33) wins over LocalSize 1 2 1 */
    OP(&m, EntryPoint, GLCompute, 1, MAIN_STR);
    OP(&m, EntryPoint, GLCompute, 2, AUX_STR);
    OP(&m, ExecutionMode, 1, 17, 1, 2, 1);
    OP(&m, Decorate, 31, 1, 0);
    OP(&m, Decorate, 30, 11, 25);
    OP(&m, SpecConstant, 20, 31, 1);
    OP(&m, Constant, 20, 32, 2);
    OP(&m, SpecConstantOp, 20, 33, 128, 31, 32); /* IAdd */
    OP(&m, SpecConstantComposite, 21, 30, 31, 32, 32);
    vkl_workgroup wg[VKL_WG_ENTRIES];
    CHECK_EQ_U64(vkl_spirv_workgroups(m.w, m.n, wg, VKL_WG_ENTRIES), 2);
    char out[48];
    const uint32_t eight = 8;
    const vkl_spec_entry e0 = {0, 0, 4};
    text(&wg[0], &e0, 1, &eight, 4, out);
    CHECK(strcmp(out, "8,2,2") == 0);
    text(&wg[1], NULL, 0, NULL, 0, out); /* the builtin is for every entry point */
    CHECK(strcmp(out, "1,2,2") == 0);

    /* the composite's z an expression */
    begin(&m);
    OP(&m, EntryPoint, GLCompute, 1, MAIN_STR);
    OP(&m, Decorate, 30, 11, 25);
    OP(&m, SpecConstant, 20, 31, 1);
    OP(&m, Constant, 20, 32, 2);
    OP(&m, SpecConstantOp, 20, 33, 128, 31, 32);
    OP(&m, SpecConstantComposite, 21, 30, 31, 32, 33);
    CHECK_EQ_U64(vkl_spirv_workgroups(m.w, m.n, wg, VKL_WG_ENTRIES), 1);
    text(&wg[0], NULL, 0, NULL, 0, out);
    CHECK(strcmp(out, "unknown: WorkgroupSize z is an expression") == 0);

    /* no LocalSize at all; no such entry point; not SPIR-V */
    begin(&m);
    OP(&m, EntryPoint, GLCompute, 1, MAIN_STR);
    CHECK_EQ_U64(vkl_spirv_workgroups(m.w, m.n, wg, VKL_WG_ENTRIES), 1);
    text(&wg[0], NULL, 0, NULL, 0, out);
    CHECK(strcmp(out, "unknown: no LocalSize") == 0);
    text(NULL, NULL, 0, NULL, 0, out);
    CHECK(strcmp(out, "unknown: no such entry point") == 0);
    m.w[0] = 0x12345678u;
    CHECK_EQ_U64(vkl_spirv_workgroups(m.w, m.n, wg, VKL_WG_ENTRIES), 0);
    /* a truncated instruction */
    begin(&m);
    OP(&m, EntryPoint, GLCompute, 1, MAIN_STR);
    m.w[m.n++] = (100u << 16) | ExecutionMode; /* 100 words, 1 there */
    CHECK_EQ_U64(vkl_spirv_workgroups(m.w, m.n, wg, VKL_WG_ENTRIES), 0);
}

static void test_spec_text(void)
{
    uint8_t data[32];
    memset(data, 0, sizeof data);
    const uint32_t a = 4294967295u;
    const uint64_t b = 18446744073709551615ull;
    memcpy(data, &a, 4);
    memcpy(data + 8, &b, 8);
    data[16] = 0x34;
    data[17] = 0x12;
    data[18] = 0xab;
    const vkl_spec_entry e[4] = {{3, 0, 4}, {1, 8, 8}, {9, 16, 3}, {2, 30, 4}};
    char out[128];
    vkl_spec_text(e, 4, data, sizeof data, out, sizeof out);
    CHECK(strcmp(out, "3=4294967295,1=18446744073709551615,9=0x3412ab,2=?") == 0);
    vkl_spec_text(e, 0, data, sizeof data, out, sizeof out);
    CHECK(strcmp(out, "") == 0);
    /* cut at a whole entry, ",..." after it, within the room */
    char small[48];
    vkl_spec_text(e, 4, data, sizeof data, small, sizeof small);
    CHECK(strcmp(small, "3=4294967295,1=18446744073709551615,...") == 0);
    char tiny[12];
    vkl_spec_text(e, 4, data, sizeof data, tiny, sizeof tiny);
    CHECK(strcmp(tiny, "...") == 0);
    /* every list of n entries is cut only at an entry's end */
    for (size_t cap = 4; cap <= 60; cap++) {
        vkl_spec_text(e, 4, data, sizeof data, out, cap);
        CHECK(strlen(out) < cap);
        const char *full = "3=4294967295,1=18446744073709551615,9=0x3412ab,2=?";
        size_t n = strlen(out);
        bool cut = n >= 3 && strcmp(out + n - 3, "...") == 0;
        if (!cut) {
            CHECK(strcmp(out, full) == 0);
        } else {
            size_t keep = n > 4 ? n - 4 : 0; /* before ",..." */
            CHECK(keep == 0 || (strncmp(out, full, keep) == 0 && full[keep] == ','));
        }
    }
}

int main(void)
{
    test_local_size();
    test_builtin_and_unknown();
    test_spec_text();
    printf("%s: %d failure(s)\n", check_failures ? "FAILED" : "PASSED", check_failures);
    return check_failures ? 1 : 0;
}
