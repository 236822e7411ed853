/* See names.h. */
#define _POSIX_C_SOURCE 200809L
#include "names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- SPIR-V -------------------------------------------------------------- */

#define SPV_MAGIC 0x07230203u
#define SPV_MAGIC_SWAPPED 0x03022307u

enum {
    OP_SOURCE_CONTINUED = 2,
    OP_SOURCE = 3,
    OP_SOURCE_EXTENSION = 4,
    OP_NAME = 5,
    OP_MEMBER_NAME = 6,
    OP_STRING = 7,
    OP_LINE = 8,
    OP_EXTENSION = 10,
    OP_EXT_INST_IMPORT = 11,
    OP_EXT_INST = 12,
    OP_EXECUTION_MODE = 16,
    OP_CAPABILITY = 17,
    OP_TYPE_INT = 21,
    OP_NO_LINE = 317,
    OP_MODULE_PROCESSED = 330,
    OP_EXECUTION_MODE_ID = 331,
};

/* float controls: execution modes 4459..4463 (DenormPreserve, DenormFlushToZero,
 * SignedZeroInfNanPreserve, RoundingModeRTE, RoundingModeRTZ) and their
 * capabilities 4464..4468 of the same names */
static bool float_controls_mode(uint32_t m)
{
    return m >= 4459u && m <= 4463u;
}

static bool float_controls_cap(uint32_t c)
{
    return c >= 4464u && c <= 4468u;
}

/* Operand layouts, one character per operand (names.h: which words are ids):
 *   T result type (an id; its result's type is recorded)   R result id
 *   i id   l literal word   s literal string (words up to the one holding its NUL)
 *   I the rest are ids   L the rest are literals
 *   M an optional memory-operands mask and its parameters
 *   G an optional image-operands mask, then the rest are ids
 *   W OpSwitch's (literal, label) pairs, the literal as wide as the selector
 *   X OpSpecConstantOp's opcode and its operands
 *   P OpGroupMemberDecorate's (id, literal) pairs
 * An operand the instruction does not have ends it (optional operands); words
 * beyond the layout are literals. */
static const char *layout_of(uint32_t op)
{
    switch (op) {
    case 0: return "";             /* OpNop */
    case 1: return "TR";           /* OpUndef */
    case OP_EXTENSION: return "L"; /* string */
    case OP_EXT_INST_IMPORT: return "RL";
    case OP_EXT_INST: return "TRilI";
    case 14: return "L";    /* OpMemoryModel */
    case 15: return "lisI"; /* OpEntryPoint */
    case OP_EXECUTION_MODE: return "iL";
    case OP_CAPABILITY: return "L";
    case 19:
    case 20: return "R"; /* OpTypeVoid, OpTypeBool */
    case OP_TYPE_INT:
    case 22: return "RL"; /* OpTypeInt, OpTypeFloat */
    case 23:
    case 24: return "RiL"; /* OpTypeVector, OpTypeMatrix */
    case 25: return "RiL"; /* OpTypeImage */
    case 26: return "R";   /* OpTypeSampler */
    case 27: return "Ri";  /* OpTypeSampledImage */
    case 28: return "Rii"; /* OpTypeArray: the length is an id */
    case 29: return "Ri";  /* OpTypeRuntimeArray */
    case 30: return "RI";  /* OpTypeStruct */
    case 31: return "RL";  /* OpTypeOpaque */
    case 32: return "Rli"; /* OpTypePointer */
    case 33: return "RI";  /* OpTypeFunction */
    case 34:
    case 35:
    case 36:
    case 37: return "R";
    case 38: return "RL"; /* OpTypePipe */
    case 39: return "iL"; /* OpTypeForwardPointer */
    case 41:
    case 42: return "TR";  /* OpConstantTrue/False */
    case 43: return "TRL"; /* OpConstant */
    case 44: return "TRI"; /* OpConstantComposite */
    case 45: return "TRL"; /* OpConstantSampler */
    case 46: return "TR";  /* OpConstantNull */
    case 48:
    case 49: return "TR";    /* OpSpecConstantTrue/False */
    case 50: return "TRL";   /* OpSpecConstant */
    case 51: return "TRI";   /* OpSpecConstantComposite */
    case 52: return "TRX";   /* OpSpecConstantOp */
    case 54: return "TRli";  /* OpFunction */
    case 55: return "TR";    /* OpFunctionParameter */
    case 56: return "";      /* OpFunctionEnd */
    case 59: return "TRlI";  /* OpVariable */
    case 61: return "TRiM";  /* OpLoad */
    case 62: return "iiM";   /* OpStore */
    case 63: return "iiMM";  /* OpCopyMemory */
    case 64: return "iiiMM"; /* OpCopyMemorySized */
    case 68: return "TRil";  /* OpArrayLength */
    case 71:
    case 72: return "iL";    /* OpDecorate, OpMemberDecorate */
    case 73: return "R";     /* OpDecorationGroup */
    case 74: return "I";     /* OpGroupDecorate */
    case 75: return "iP";    /* OpGroupMemberDecorate */
    case 79: return "TRiiL"; /* OpVectorShuffle */
    case 81: return "TRiL";  /* OpCompositeExtract */
    case 82: return "TRiiL"; /* OpCompositeInsert */
    case 87:
    case 88:
    case 91:
    case 92:
    case 95:
    case 98: return "TRiiG";
    case 89:
    case 90:
    case 93:
    case 94:
    case 96:
    case 97: return "TRiiiG";
    case 99: return "iiiG";  /* OpImageWrite */
    case 123: return "TRil"; /* OpGenericCastToPtrExplicit */
    case 218:
    case 219: return "";     /* OpEmitVertex, OpEndPrimitive */
    case 246: return "iiL";  /* OpLoopMerge */
    case 247: return "iL";   /* OpSelectionMerge */
    case 248: return "R";    /* OpLabel */
    case 249: return "i";    /* OpBranch */
    case 250: return "iiiL"; /* OpBranchConditional */
    case 251: return "iiW";  /* OpSwitch */
    case 252:
    case 253:
    case 255: return "";  /* OpKill, OpReturn, OpUnreachable */
    case 254: return "i"; /* OpReturnValue */
    case 256:
    case 257: return "il";    /* OpLifetimeStart/Stop */
    case 320: return "TRiiG"; /* OpImageSparseRead */
    case 322:
    case 327: return "R";   /* OpTypePipeStorage, OpTypeNamedBarrier */
    case 323: return "TRL"; /* OpConstantPipeStorage */
    case OP_EXECUTION_MODE_ID: return "ilI";
    case 332: return "ilI";     /* OpDecorateId */
    case 342: return "TRilI";   /* OpGroupNonUniformBallotBitCount */
    case 4456: return "RI";     /* OpTypeCooperativeMatrixKHR */
    case 4457: return "TRiiiM"; /* OpCooperativeMatrixLoadKHR */
    case 4458: return "iiiiM";  /* OpCooperativeMatrixStoreKHR */
    case 4459: return "TRiiiL"; /* OpCooperativeMatrixMulAddKHR */
    case 5358: return "RI";     /* OpTypeCooperativeMatrixNV */
    case 5359: return "TRiiiM"; /* OpCooperativeMatrixLoadNV */
    case 5360: return "iiiiM";  /* OpCooperativeMatrixStoreNV */
    case 5632: return "iL";     /* OpDecorateString */
    case 5633: return "iL";     /* OpMemberDecorateString */
    default: break;
    }
    /* group operations with a GroupOperation literal: OpGroupIAdd..OpGroupSMax,
     * OpGroupNonUniformIAdd..LogicalXor, the AMD non-uniform group ops */
    if ((op >= 264 && op <= 271) || (op >= 349 && op <= 364) || (op >= 5000 && op <= 5007)) {
        return "TRilI";
    }
    /* plain value instructions: a result type, a result, ids */
    if ((op >= 57 && op <= 70) || (op >= 77 && op <= 86) || (op >= 100 && op <= 213) || op == 227 ||
        (op >= 229 && op <= 245) || (op >= 259 && op <= 263) || (op >= 333 && op <= 366) ||
        (op >= 400 && op <= 403)) {
        return "TRI";
    }
    return "I";
}

/* One pass over the module's instructions; word reads go through get(), which
 * swaps a byte-swapped module. */
typedef struct spv_reader {
    const uint32_t *w;
    size_t n;
    bool swap;
} spv_reader;

/* A reader over a module in either byte order: false when it is too short
 * for a header or has no SPIR-V magic. */
static bool spv_open(const uint32_t *words, size_t word_count, spv_reader *r)
{
    if (words == NULL || word_count < 5) {
        return false;
    }
    *r = (spv_reader){.w = words, .n = word_count, .swap = words[0] == SPV_MAGIC_SWAPPED};
    return r->swap || words[0] == SPV_MAGIC;
}

static uint32_t get(const spv_reader *r, size_t i)
{
    uint32_t v = r->w[i];
    if (r->swap) {
        v = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
    }
    return v;
}

/* Does the literal string at words [at, end) start with `prefix` (or equal it
 * when `whole`)? Bounded by the instruction. */
static bool string_is(const spv_reader *r, size_t at, size_t end, const char *prefix, bool whole)
{
    size_t k = 0, plen = strlen(prefix);
    for (size_t i = at; i < end; i++) {
        uint32_t v = get(r, i);
        for (int b = 0; b < 4; b++, k++) {
            unsigned char c = (unsigned char)(v >> (8 * b));
            if (k < plen) {
                if (c != (unsigned char)prefix[k]) {
                    return false;
                }
            } else {
                return !whole || c == 0;
            }
        }
    }
    return false; /* no NUL within the instruction: not the string asked for */
}

enum { F_REMOVED = 1, F_NONSEMANTIC = 2, F_INT64 = 4 };

typedef struct spv_state {
    uint32_t bound;
    uint8_t *flags;    /* bound entries */
    uint32_t *type_of; /* bound entries: the result type of a value */
    uint32_t *shift;   /* bound + 1 entries: left-out ids below each id */
    uint32_t removed;
} spv_state;

/* Is the instruction at [at, at + wc) left out of the hash? */
static bool left_out(const spv_reader *r, const spv_state *st, size_t at, uint32_t wc, uint32_t op)
{
    switch (op) {
    case OP_SOURCE_CONTINUED:
    case OP_SOURCE:
    case OP_SOURCE_EXTENSION:
    case OP_NAME:
    case OP_MEMBER_NAME:
    case OP_STRING:
    case OP_LINE:
    case OP_NO_LINE:
    case OP_MODULE_PROCESSED: return true;
    case OP_EXT_INST_IMPORT: return wc >= 2 && (st->flags[get(r, at + 1)] & F_NONSEMANTIC) != 0;
    case OP_EXT_INST: return wc >= 4 && (st->flags[get(r, at + 3)] & F_NONSEMANTIC) != 0;
    case OP_EXECUTION_MODE:
    case OP_EXECUTION_MODE_ID: return wc >= 3 && float_controls_mode(get(r, at + 2));
    case OP_CAPABILITY: return wc >= 2 && float_controls_cap(get(r, at + 1));
    case OP_EXTENSION:
        return string_is(r, at + 1, at + wc, "SPV_KHR_float_controls", true) ||
               string_is(r, at + 1, at + wc, "SPV_KHR_non_semantic_info", true);
    default: return false;
    }
}

static bool id_ok(const spv_state *st, uint32_t id)
{
    return id != 0 && id < st->bound;
}

/* First pass: check every instruction's length, mark the left-out result ids
 * and the NonSemantic sets, record result types and 64-bit integer types.
 * False: not a module. */
static bool scan(const spv_reader *r, spv_state *st)
{
    size_t at = 5;
    while (at < r->n) {
        uint32_t first = get(r, at);
        uint32_t wc = first >> 16, op = first & 0xffffu;
        if (wc == 0 || wc > r->n - at) {
            return false;
        }
        switch (op) {
        case OP_STRING:
            if (wc < 2 || !id_ok(st, get(r, at + 1))) {
                return false;
            }
            st->flags[get(r, at + 1)] |= F_REMOVED;
            break;
        case OP_EXT_INST_IMPORT:
            if (wc < 3 || !id_ok(st, get(r, at + 1))) {
                return false;
            }
            if (string_is(r, at + 2, at + wc, "NonSemantic.", false)) {
                st->flags[get(r, at + 1)] |= F_REMOVED | F_NONSEMANTIC;
            }
            break;
        case OP_EXT_INST:
            if (wc < 5 || !id_ok(st, get(r, at + 2)) || !id_ok(st, get(r, at + 3))) {
                return false;
            }
            if (st->flags[get(r, at + 3)] & F_NONSEMANTIC) {
                st->flags[get(r, at + 2)] |= F_REMOVED;
            }
            break;
        case OP_TYPE_INT:
            if (wc < 4 || !id_ok(st, get(r, at + 1))) {
                return false;
            }
            if (get(r, at + 2) == 64) {
                st->flags[get(r, at + 1)] |= F_INT64;
            }
            break;
        default: break;
        }
        const char *lay = layout_of(op);
        if (lay[0] == 'T' && lay[1] == 'R' && wc >= 3) {
            uint32_t id = get(r, at + 2);
            if (id_ok(st, id)) {
                st->type_of[id] = get(r, at + 1);
            }
        }
        at += wc;
    }
    uint32_t below = 0;
    for (uint32_t id = 0; id < st->bound; id++) {
        st->shift[id] = below;
        below += (st->flags[id] & F_REMOVED) != 0;
    }
    st->shift[st->bound] = below;
    st->removed = below;
    return true;
}

typedef struct fnv {
    uint64_t h;
} fnv;

static void fnv_word(fnv *f, uint32_t v)
{
    for (int b = 0; b < 4; b++) {
        f->h ^= (v >> (8 * b)) & 0xffu;
        f->h *= 0x100000001b3ull;
    }
}

static uint32_t remap(const spv_state *st, uint32_t id)
{
    return id - st->shift[id < st->bound ? id : st->bound];
}

/* Hash the operands of one kept instruction, words [i, end), by `lay`. */
static void hash_operands(const spv_reader *r, const spv_state *st, fnv *f, const char *lay,
                          size_t i, size_t end, uint32_t op)
{
    uint32_t selector = 0;
    for (const char *p = lay; *p != '\0' && i < end; p++) {
        switch (*p) {
        case 'T':
        case 'R':
        case 'i':
            if (op == 251 && p == lay) {
                selector = get(r, i);
            }
            fnv_word(f, remap(st, get(r, i++)));
            break;
        case 'l': fnv_word(f, get(r, i++)); break;
        case 's':
            while (i < end) {
                uint32_t v = get(r, i++);
                fnv_word(f, v);
                if ((v >> 24) == 0) {
                    break;
                }
            }
            break;
        case 'I':
        case 'G':
            if (*p == 'G') {
                fnv_word(f, get(r, i++)); /* the mask; every parameter is an id */
            }
            while (i < end) {
                fnv_word(f, remap(st, get(r, i++)));
            }
            break;
        case 'L': break; /* the rest, raw, below */
        case 'M': {
            uint32_t mask = get(r, i++);
            fnv_word(f, mask);
            static const struct {
                uint32_t bit;
                bool id;
            } params[] = {
                {0x2u, false}, {0x8u, true}, {0x10u, true}, {0x10000u, true}, {0x20000u, true}};
            for (size_t k = 0; k < sizeof params / sizeof params[0] && i < end; k++) {
                if (mask & params[k].bit) {
                    uint32_t v = get(r, i++);
                    fnv_word(f, params[k].id ? remap(st, v) : v);
                }
            }
            break;
        }
        case 'W': {
            uint32_t t = id_ok(st, selector) ? st->type_of[selector] : 0;
            size_t lit = id_ok(st, t) && (st->flags[t] & F_INT64) ? 2 : 1;
            while (i < end) {
                for (size_t k = 0; k < lit && i < end; k++) {
                    fnv_word(f, get(r, i++));
                }
                if (i < end) {
                    fnv_word(f, remap(st, get(r, i++)));
                }
            }
            break;
        }
        case 'X': {
            uint32_t sub = get(r, i++);
            fnv_word(f, sub);
            const char *sl = sub == 79 ? "iiL" : sub == 81 ? "iL" : sub == 82 ? "iiL" : "I";
            hash_operands(r, st, f, sl, i, end, sub);
            i = end;
            break;
        }
        case 'P':
            while (i < end) {
                fnv_word(f, remap(st, get(r, i++)));
                if (i < end) {
                    fnv_word(f, get(r, i++));
                }
            }
            break;
        default: break;
        }
        if (*p == 'L') {
            break;
        }
    }
    while (i < end) {
        fnv_word(f, get(r, i++));
    }
}

uint64_t vkl_spirv_hash(const uint32_t *words, size_t word_count)
{
    spv_reader r;
    if (!spv_open(words, word_count, &r)) {
        return 0;
    }
    spv_state st = {.bound = get(&r, 3)};
    if (st.bound == 0 || st.bound > VKL_SPIRV_MAX_BOUND) {
        return 0;
    }
    st.flags = calloc(st.bound, 1);
    st.type_of = calloc(st.bound, sizeof *st.type_of);
    st.shift = calloc((size_t)st.bound + 1u, sizeof *st.shift);
    uint64_t out = 0;
    if (st.flags == NULL || st.type_of == NULL || st.shift == NULL || !scan(&r, &st)) {
        goto done;
    }
    fnv f = {.h = 0xcbf29ce484222325ull};
    fnv_word(&f, SPV_MAGIC);
    fnv_word(&f, get(&r, 1)); /* version */
    fnv_word(&f, get(&r, 4)); /* schema; generator and bound left out */
    for (size_t at = 5; at < r.n;) {
        uint32_t first = get(&r, at);
        uint32_t wc = first >> 16, op = first & 0xffffu;
        if (!left_out(&r, &st, at, wc, op)) {
            fnv_word(&f, first);
            hash_operands(&r, &st, &f, layout_of(op), at + 1, at + wc, op);
        }
        at += wc;
    }
    out = f.h != 0 ? f.h : 1;
done:
    free(st.flags);
    free(st.type_of);
    free(st.shift);
    return out;
}

void vkl_hash_name(uint64_t hash, char out[32])
{
    snprintf(out, 32, "pipeline-%016llx", (unsigned long long)hash);
}

/* ---- the name map -------------------------------------------------------- */

typedef struct vkl_name_entry {
    uint64_t hash;
    uint32_t line;
    char name[64];
} vkl_name_entry;

struct vkl_name_map {
    vkl_name_entry *e; /* sorted by hash */
    size_t n;
};

static void set_err(char *err, size_t errcap, const char *fmt, ...)
{
    if (err == NULL || errcap == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errcap, fmt, ap);
    va_end(ap);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static bool blank(int c)
{
    return c == ' ' || c == '\t';
}

static bool name_byte(unsigned char c)
{
    return (c >= 0x21 && c <= 0x7e) || c >= 0x80;
}

/* Parse one line (no '\n', length len). Returns NULL and sets *e, or the
 * reason; *entry is false for a blank or comment line. */
static const char *parse_line(const char *s, size_t len, vkl_name_entry *e, bool *entry)
{
    *entry = false;
    size_t i = 0;
    while (i < len && blank(s[i])) {
        i++;
    }
    while (len > i && blank(s[len - 1])) {
        len--;
    }
    if (i == len || s[i] == '#') {
        return NULL;
    }
    uint64_t h = 0;
    size_t d = 0;
    for (; d < 16 && i + d < len; d++) {
        int v = hexval((unsigned char)s[i + d]);
        if (v < 0) {
            break;
        }
        h = (h << 4) | (uint64_t)v;
    }
    if (d < 16 || (i + d < len && !blank(s[i + d]))) {
        return "expected 16 hex digits, blanks and a name (\"0123456789abcdef name\")";
    }
    i += 16;
    if (i == len) {
        return "a hash with no name";
    }
    while (i < len && blank(s[i])) {
        i++;
    }
    size_t nlen = len - i;
    for (size_t k = 0; k < nlen; k++) {
        if (!name_byte((unsigned char)s[i + k])) {
            return blank(s[i + k]) ? "a blank inside the name" : "a control character in the name";
        }
    }
    if (nlen > 63) {
        return "name longer than 63 bytes";
    }
    if (h == 0) {
        return "hash 0000000000000000 (no module hashes to 0)";
    }
    e->hash = h;
    memcpy(e->name, s + i, nlen);
    e->name[nlen] = '\0';
    *entry = true;
    return NULL;
}

static int cmp_entry(const void *a, const void *b)
{
    const vkl_name_entry *x = a, *y = b;
    if (x->hash != y->hash) {
        return x->hash < y->hash ? -1 : 1;
    }
    return x->line < y->line ? -1 : x->line > y->line;
}

/* What a file that is not a regular one is, for the message. */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode)) {
        return "a directory";
    }
    if (S_ISCHR(mode)) {
        return "a character device";
    }
    if (S_ISBLK(mode)) {
        return "a block device";
    }
    if (S_ISFIFO(mode)) {
        return "a FIFO";
    }
    if (S_ISSOCK(mode)) {
        return "a socket";
    }
    return "an unknown kind of file";
}

/* Opens `path` for reading the map: a regular file (a symlink to one is
 * followed) of at most VKL_NAME_MAP_FILE_MAX bytes. It never blocks on a FIFO
 * or a device: the path is looked at before it is opened (opening a FIFO
 * waits for a writer, opening a device can have side effects), opened with
 * O_NONBLOCK, and looked at again through the descriptor (the path may have
 * changed in between). -1 with the message in err. */
static int open_map_file(const char *path, char *err, size_t errcap)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        set_err(err, errcap, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        set_err(err, errcap, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
        return -1;
    }
    int fd = -1;
    do {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        set_err(err, errcap, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    bool bad = true;
    if (fstat(fd, &st) != 0) {
        set_err(err, errcap, "%s: cannot stat: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        set_err(err, errcap, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
    } else if (st.st_size > (off_t)VKL_NAME_MAP_FILE_MAX) {
        set_err(err, errcap,
                "%s: %lld bytes, larger than the limit of %u bytes (%u MiB) for a name map", path,
                (long long)st.st_size, (unsigned)VKL_NAME_MAP_FILE_MAX,
                (unsigned)(VKL_NAME_MAP_FILE_MAX >> 20));
    } else {
        bad = false;
    }
    if (bad) {
        close(fd);
        return -1;
    }
    return fd;
}

/* the map being read: its entries so far, their capacity, the line number */
typedef struct map_reader {
    vkl_name_map *m;
    size_t cap;
    uint32_t lineno;
} map_reader;

/* One whole line (without its '\n'; a '\r' before it still there), at most
 * VKL_NAME_LINE_MAX + 1 bytes, `nul` if it holds a NUL byte: NULL, or why the
 * line is an error. */
static const char *map_line(map_reader *r, char *line, size_t len, bool nul)
{
    if (len > 0 && line[len - 1] == '\r') {
        len--; /* "\r\n" */
    }
    if (len > VKL_NAME_LINE_MAX) {
        return "line longer than 1024 bytes";
    }
    if (nul) {
        return "a NUL byte";
    }
    vkl_name_entry e = {.line = r->lineno};
    bool entry = false;
    const char *why = parse_line(line, len, &e, &entry);
    if (why != NULL || !entry) {
        return why;
    }
    if (r->m->n == VKL_NAME_MAP_MAX) {
        return "more than 65536 entries";
    }
    if (r->m->n == r->cap) {
        size_t ncap = r->cap == 0 ? 64 : r->cap * 2;
        vkl_name_entry *ne = realloc(r->m->e, ncap * sizeof *ne);
        if (ne == NULL) {
            return "out of memory";
        }
        r->m->e = ne;
        r->cap = ncap;
    }
    r->m->e[r->m->n++] = e;
    return NULL;
}

/* bytes read() at a time */
#define NAME_MAP_CHUNK 65536u

vkl_name_map *vkl_name_map_load(const char *path, char *err, size_t errcap)
{
    if (path == NULL) {
        set_err(err, errcap, "(null): no name map path");
        return NULL;
    }
    int fd = open_map_file(path, err, errcap);
    if (fd < 0) {
        return NULL;
    }
    map_reader r = {.m = calloc(1, sizeof *r.m)};
    char *buf = malloc(NAME_MAP_CHUNK);
    char *line = malloc(VKL_NAME_LINE_MAX + 1);
    bool ok = r.m != NULL && buf != NULL && line != NULL;
    if (!ok) {
        set_err(err, errcap, "%s: out of memory", path);
    }
    /* Read it a chunk at a time, never more than VKL_NAME_MAP_FILE_MAX + 1
     * bytes in all (the file may have grown since fstat), and cut it into
     * lines as it comes: a line over VKL_NAME_LINE_MAX is an error at once,
     * and so the first error ends the reading. */
    size_t total = 0, len = 0;
    bool nul = false;
    const char *why = NULL;
    while (ok && why == NULL) {
        size_t want = NAME_MAP_CHUNK;
        if (want > (size_t)VKL_NAME_MAP_FILE_MAX + 1 - total) {
            want = (size_t)VKL_NAME_MAP_FILE_MAX + 1 - total;
        }
        ssize_t got = -1;
        do {
            got = read(fd, buf, want);
        } while (got < 0 && errno == EINTR);
        if (got < 0) {
            set_err(err, errcap, "%s: cannot read: %s", path, strerror(errno));
            ok = false;
            break;
        }
        if (got == 0) { /* the end: a last line with no '\n' */
            if (len > 0) {
                r.lineno++;
                why = map_line(&r, line, len, nul);
            }
            break;
        }
        total += (size_t)got;
        if (total > VKL_NAME_MAP_FILE_MAX) {
            set_err(err, errcap, "%s: larger than the limit of %u bytes (%u MiB) for a name map",
                    path, (unsigned)VKL_NAME_MAP_FILE_MAX, (unsigned)(VKL_NAME_MAP_FILE_MAX >> 20));
            ok = false;
            break;
        }
        for (size_t k = 0; k < (size_t)got && why == NULL; k++) {
            const char c = buf[k];
            if (c == '\n') {
                r.lineno++;
                why = map_line(&r, line, len, nul);
                len = 0;
                nul = false;
            } else if (len == VKL_NAME_LINE_MAX + 1) {
                /* more than the limit even with a '\r' last: not read on to
                 * the line's end, which may be far off */
                r.lineno++;
                why = "line longer than 1024 bytes";
            } else {
                nul = nul || c == '\0';
                line[len++] = c;
            }
        }
    }
    if (ok && why != NULL) {
        set_err(err, errcap, "%s:%u: %s", path, (unsigned)r.lineno, why);
        ok = false;
    }
    close(fd);
    free(buf);
    free(line);
    vkl_name_map *m = r.m;
    if (ok && m->n > 0) {
        qsort(m->e, m->n, sizeof *m->e, cmp_entry);
        size_t w = 0;
        for (size_t k = 0; k < m->n && ok; k++) {
            if (w > 0 && m->e[w - 1].hash == m->e[k].hash) {
                if (strcmp(m->e[w - 1].name, m->e[k].name) != 0) {
                    set_err(err, errcap, "%s:%u: hash %016llx is also on line %u with name '%s'",
                            path, (unsigned)m->e[k].line, (unsigned long long)m->e[k].hash,
                            (unsigned)m->e[w - 1].line, m->e[w - 1].name);
                    ok = false;
                }
                continue; /* the same name again: once */
            }
            m->e[w++] = m->e[k];
        }
        m->n = w;
    }
    if (!ok) {
        vkl_name_map_free(m);
        return NULL;
    }
    return m;
}

const char *vkl_name_map_find(const vkl_name_map *m, uint64_t hash)
{
    if (m == NULL) {
        return NULL;
    }
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->e[mid].hash < hash) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < m->n && m->e[lo].hash == hash ? m->e[lo].name : NULL;
}

size_t vkl_name_map_count(const vkl_name_map *m)
{
    return m != NULL ? m->n : 0;
}

void vkl_name_map_free(vkl_name_map *m)
{
    if (m == NULL) {
        return;
    }
    free(m->e);
    free(m);
}

/* ---- the workgroup size and specialisation constants -------------------- */

enum {
    OP_ENTRY_POINT = 15,
    OP_DECORATE = 71,
    OP_CONSTANT = 43,
    OP_CONSTANT_COMPOSITE = 44,
    OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    EXEC_GLCOMPUTE = 5,
    MODE_LOCAL_SIZE = 17,
    MODE_LOCAL_SIZE_ID = 38,
    DEC_SPEC_ID = 1,
    DEC_BUILTIN = 11,
    BUILTIN_WORKGROUP_SIZE = 25
};

/* the constant ids a size depends on, resolved in a later pass */
typedef struct wg_ids {
    uint32_t entry_id[VKL_WG_ENTRIES];
    uint32_t size_id[VKL_WG_ENTRIES][3]; /* LocalSizeId's ids; 0: literal */
    uint32_t builtin;                    /* the WorkgroupSize composite; 0: none */
    uint32_t builtin_part[3];
} wg_ids;

static void wg_resolve(const spv_reader *r, uint32_t id, vkl_wg_dim *d)
{
    d->known = false;
    d->spec_id = VKL_WG_NO_SPEC;
    d->value = 0;
    if (id == 0) {
        return;
    }
    for (size_t at = 5; at < r->n;) {
        uint32_t first = get(r, at);
        uint32_t wc = first >> 16, op = first & 0xffffu;
        if (wc == 0 || at + wc > r->n) {
            return;
        }
        if (op == OP_DECORATE && wc >= 4 && get(r, at + 1) == id && get(r, at + 2) == DEC_SPEC_ID) {
            d->spec_id = get(r, at + 3);
        } else if ((op == OP_CONSTANT || op == OP_SPEC_CONSTANT) && wc >= 4 &&
                   get(r, at + 2) == id) {
            d->value = get(r, at + 3);
            d->known = true;
            if (op == OP_CONSTANT) {
                d->spec_id = VKL_WG_NO_SPEC;
            }
            return; /* decorations come before constants */
        }
        at += wc;
    }
}

uint32_t vkl_spirv_workgroups(const uint32_t *words, size_t word_count, vkl_workgroup *out,
                              uint32_t max)
{
    spv_reader r;
    if (out == NULL || !spv_open(words, word_count, &r)) {
        return 0;
    }
    if (max > VKL_WG_ENTRIES) {
        max = VKL_WG_ENTRIES;
    }
    wg_ids ids;
    memset(&ids, 0, sizeof ids);
    uint32_t n = 0;
    /* the entry points, their modes, the WorkgroupSize decoration */
    for (size_t at = 5; at < r.n;) {
        uint32_t first = get(&r, at);
        uint32_t wc = first >> 16, op = first & 0xffffu;
        if (wc == 0 || at + wc > r.n) {
            return 0;
        }
        if (op == OP_ENTRY_POINT && wc >= 4 && get(&r, at + 1) == EXEC_GLCOMPUTE && n < max) {
            vkl_workgroup *w = &out[n];
            memset(w, 0, sizeof *w);
            size_t k = 0;
            for (size_t i = at + 3; i < at + wc && k < sizeof w->entry - 1; i++) {
                uint32_t v = get(&r, i);
                bool end = false;
                for (int b = 0; b < 4 && k < sizeof w->entry - 1; b++) {
                    char ch = (char)((v >> (8 * b)) & 0xffu);
                    if (ch == '\0') {
                        end = true;
                        break;
                    }
                    w->entry[k++] = ch;
                }
                if (end) {
                    break;
                }
            }
            w->entry[k] = '\0';
            ids.entry_id[n++] = get(&r, at + 2);
        } else if ((op == OP_EXECUTION_MODE || op == OP_EXECUTION_MODE_ID) && wc >= 6) {
            uint32_t mode = get(&r, at + 2);
            for (uint32_t e = 0; e < n; e++) {
                if (ids.entry_id[e] != get(&r, at + 1)) {
                    continue;
                }
                if (op == OP_EXECUTION_MODE && mode == MODE_LOCAL_SIZE) {
                    out[e].source = "LocalSize";
                    for (int d = 0; d < 3; d++) {
                        out[e].dim[d] =
                            (vkl_wg_dim){get(&r, at + 3 + (size_t)d), VKL_WG_NO_SPEC, true};
                    }
                } else if (op == OP_EXECUTION_MODE_ID && mode == MODE_LOCAL_SIZE_ID) {
                    out[e].source = "LocalSizeId";
                    for (int d = 0; d < 3; d++) {
                        ids.size_id[e][d] = get(&r, at + 3 + (size_t)d);
                    }
                }
            }
        } else if (op == OP_DECORATE && wc >= 4 && get(&r, at + 2) == DEC_BUILTIN &&
                   get(&r, at + 3) == BUILTIN_WORKGROUP_SIZE) {
            ids.builtin = get(&r, at + 1);
        } else if ((op == OP_CONSTANT_COMPOSITE || op == OP_SPEC_CONSTANT_COMPOSITE) && wc >= 6 &&
                   ids.builtin != 0 && get(&r, at + 2) == ids.builtin) {
            for (int d = 0; d < 3; d++) {
                ids.builtin_part[d] = get(&r, at + 3 + (size_t)d);
            }
        }
        at += wc;
    }
    for (uint32_t e = 0; e < n; e++) {
        if (ids.builtin != 0) {
            out[e].source = "WorkgroupSize";
            for (int d = 0; d < 3; d++) {
                wg_resolve(&r, ids.builtin_part[d], &out[e].dim[d]);
            }
        } else if (out[e].source != NULL && strcmp(out[e].source, "LocalSizeId") == 0) {
            for (int d = 0; d < 3; d++) {
                wg_resolve(&r, ids.size_id[e][d], &out[e].dim[d]);
            }
        }
    }
    return n;
}

/* the entry `id` of the map: its value's bytes, or NULL (none, or past the data) */
static const uint8_t *spec_value(const vkl_spec_entry *e, uint32_t n, const void *data,
                                 size_t data_size, uint32_t id, size_t *size, bool *found)
{
    *found = false;
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].id != id) {
            continue;
        }
        *found = true;
        *size = e[i].size;
        if (data == NULL || e[i].offset > data_size || e[i].size > data_size - e[i].offset) {
            return NULL;
        }
        return (const uint8_t *)data + e[i].offset;
    }
    return NULL;
}

void vkl_workgroup_text(const vkl_workgroup *wg, const vkl_spec_entry *e, uint32_t n,
                        const void *data, size_t data_size, char *out, size_t cap)
{
    if (cap == 0) {
        return;
    }
    if (wg == NULL) {
        snprintf(out, cap, "unknown: no such entry point");
        return;
    }
    if (wg->source == NULL) {
        snprintf(out, cap, "unknown: no LocalSize");
        return;
    }
    uint32_t v[3];
    for (int d = 0; d < 3; d++) {
        const vkl_wg_dim *dm = &wg->dim[d];
        if (!dm->known) {
            snprintf(out, cap, "unknown: %s %c is an expression", wg->source, "xyz"[d]);
            return;
        }
        v[d] = dm->value;
        if (dm->spec_id == VKL_WG_NO_SPEC) {
            continue;
        }
        size_t size = 0;
        bool found = false;
        const uint8_t *p = spec_value(e, n, data, data_size, dm->spec_id, &size, &found);
        if (found && (p == NULL || size != 4)) {
            snprintf(out, cap, "unknown: spec constant %u is not 4 bytes", dm->spec_id);
            return;
        }
        if (p != NULL) {
            memcpy(&v[d], p, 4);
        }
    }
    snprintf(out, cap, "%u,%u,%u", v[0], v[1], v[2]);
}

void vkl_spec_text(const vkl_spec_entry *e, uint32_t n, const void *data, size_t data_size,
                   char *out, size_t cap)
{
    if (cap == 0) {
        return;
    }
    out[0] = '\0';
    size_t len = 0;
    for (uint32_t i = 0; i < n; i++) {
        char one[96];
        const uint8_t *p = NULL;
        if (data != NULL && e[i].offset <= data_size && e[i].size <= data_size - e[i].offset) {
            p = (const uint8_t *)data + e[i].offset;
        }
        int k = 0;
        if (p == NULL) {
            k = snprintf(one, sizeof one, "%u=?", e[i].id);
        } else if (e[i].size == 4) {
            uint32_t v;
            memcpy(&v, p, 4);
            k = snprintf(one, sizeof one, "%u=%u", e[i].id, v);
        } else if (e[i].size == 8) {
            uint64_t v;
            memcpy(&v, p, 8);
            k = snprintf(one, sizeof one, "%u=%llu", e[i].id, (unsigned long long)v);
        } else {
            k = snprintf(one, sizeof one, "%u=0x", e[i].id);
            for (size_t b = 0; b < e[i].size && k + 3 < (int)sizeof one; b++) {
                k += snprintf(one + k, sizeof one - (size_t)k, "%02x", p[b]);
            }
            if (k + 3 >= (int)sizeof one) {
                k = snprintf(one, sizeof one, "%u=(%zu bytes)", e[i].id, e[i].size);
            }
        }
        const size_t sep = i > 0 ? 1 : 0;
        /* room for this entry, and for ",..." after it unless it is the last */
        const size_t need = sep + (size_t)k + (i + 1 < n ? 4 : 0);
        if (len + need >= cap) {
            const char *more = len > 0 ? ",..." : "...";
            if (len + strlen(more) < cap) {
                memcpy(out + len, more, strlen(more) + 1);
            }
            return;
        }
        if (sep) {
            out[len++] = ',';
        }
        memcpy(out + len, one, (size_t)k + 1);
        len += (size_t)k;
    }
}

/* ---- SPIR-V modules embedded in ELF files ------------------------------------ */

static uint16_t elf16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t elf32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t elf64(const unsigned char *p)
{
    return (uint64_t)elf32(p) | (uint64_t)elf32(p + 4) << 32;
}

/* "why", or "why (section N)" for sec >= 0 */
static long elf_fail(char *err, size_t errcap, const char *why, long sec)
{
    if (errcap > 0 && sec >= 0) {
        snprintf(err, errcap, "%s (section %ld)", why, sec);
    } else if (errcap > 0) {
        snprintf(err, errcap, "%s", why);
    }
    return -1;
}

long vkl_elf_spirv_modules(const unsigned char *f, size_t size, vkl_elf_module_fn fn, void *user,
                           char *err, size_t errcap)
{
    if (size < 64 || memcmp(f, "\177ELF", 4) != 0 || f[4] != 2 /* ELFCLASS64 */ ||
        f[5] != 1 /* ELFDATA2LSB */) {
        return elf_fail(err, errcap, "only 64-bit little-endian ELF files are read", -1);
    }
    uint64_t shoff = elf64(f + 0x28);
    uint16_t shentsize = elf16(f + 0x3a), shnum = elf16(f + 0x3c);
    if (shoff == 0 || shnum == 0) {
        return elf_fail(err, errcap, "no section headers (a stripped ELF has no symbols to read)",
                        -1);
    }
    if (shentsize != 64 || shoff > size || (uint64_t)shnum * 64u > size - shoff) {
        return elf_fail(err, errcap, "section headers out of the file", -1);
    }
    const unsigned char *sh = f + shoff;
    long found = 0, tables = 0;
    for (uint16_t t = 0; t < shnum; t++) {
        const unsigned char *s = sh + (size_t)t * 64u;
        uint32_t type = elf32(s + 4);
        if (type != 2 /* SHT_SYMTAB */ && type != 11 /* SHT_DYNSYM */) {
            continue;
        }
        tables++;
        uint64_t off = elf64(s + 0x18), len = elf64(s + 0x20), entsize = elf64(s + 0x38);
        uint32_t link = elf32(s + 0x28);
        if (entsize != 24 || off > size || len > size - off || link >= shnum) {
            return elf_fail(err, errcap, "bad symbol table", t);
        }
        const unsigned char *strsh = sh + (size_t)link * 64u;
        uint64_t stroff = elf64(strsh + 0x18), strsize = elf64(strsh + 0x20);
        if (elf32(strsh + 4) != 3 /* SHT_STRTAB */ || stroff > size || strsize > size - stroff) {
            return elf_fail(err, errcap, "bad string table", (long)link);
        }
        const char *strtab = (const char *)f + stroff;
        uint64_t nsym = len / 24u;
        if (nsym > VKL_ELF_MAX_SYMBOLS) {
            return elf_fail(err, errcap, "more than 16777216 symbols", t);
        }
        for (uint64_t k = 1; k < nsym; k++) {
            const unsigned char *sym = f + off + k * 24u;
            uint32_t name = elf32(sym);
            unsigned char info = sym[4];
            uint16_t shndx = elf16(sym + 6);
            uint64_t value = elf64(sym + 8), ssize = elf64(sym + 16);
            if ((info & 0xf) != 1 /* STT_OBJECT */ || shndx == 0 || shndx >= 0xff00 ||
                shndx >= shnum || ssize < 20 || name >= strsize) {
                continue;
            }
            const unsigned char *ds = sh + (size_t)shndx * 64u;
            if (elf32(ds + 4) == 8 /* SHT_NOBITS */) {
                continue;
            }
            uint64_t addr = elf64(ds + 0x10), doff = elf64(ds + 0x18), dlen = elf64(ds + 0x20);
            if (value < addr || value - addr > dlen || ssize > dlen - (value - addr) ||
                doff > size || dlen > size - doff) {
                continue; /* not inside its section's bytes in the file */
            }
            const unsigned char *data = f + doff + (value - addr);
            uint32_t magic = elf32(data);
            if (magic != SPV_MAGIC && magic != SPV_MAGIC_SWAPPED) {
                continue;
            }
            const char *nm = strtab + name;
            if (memchr(nm, '\0', (size_t)(strsize - name)) == NULL) {
                continue;
            }
            found++;
            vkl_elf_module m = {nm, value, ssize, data};
            if (!fn(user, &m)) {
                return found;
            }
        }
    }
    if (tables == 0) {
        return elf_fail(err, errcap, "no symbol table", -1);
    }
    return found;
}

size_t vkl_spirv_symbol_len(const char *s, size_t len)
{
    static const char *const suffixes[] = {"_data", "_spirv", "_spv"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (len > k && memcmp(s + len - k, suffixes[i], k) == 0) {
            return len - k;
        }
    }
    return len;
}
