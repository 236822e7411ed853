/* Phase names for the vkprof layer: a SPIR-V module's hash, its default name,
 * and the user's name map (hash -> name). Pure C11, no Vulkan calls; the
 * layer compiles names.c in, and `vkprof names` (tools/names/cmd_names.c) writes
 * the map files that vkl_name_map_load reads (docs/layer.md). */
#ifndef VKPROF_LAYER_NAMES_H
#define VKPROF_LAYER_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a over the normalised SPIR-V module: OpExecutionMode/OpExecutionModeId of the
   float-controls modes (DenormPreserve, DenormFlushToZero, SignedZeroInfNanPreserve,
   RoundingModeRTE, RoundingModeRTZ), the debug instructions (OpSource*, OpString, OpName,
   OpMemberName, OpLine, OpNoLine, OpModuleProcessed, OpExtInst of NonSemantic.* sets and their
   OpExtInstImport), and the header's generator word and bound are left out. Returns 0 for a
   buffer that is not SPIR-V (bad magic, truncated instruction).
 *
 * What the normalisation also does, so that a module patched at run time, or
 * built with -g, hashes like the shipped one:
 *   - the float-controls capabilities (OpCapability DenormPreserve ..
 *     RoundingModeRTZ) and the OpExtension "SPV_KHR_float_controls" and
 *     "SPV_KHR_non_semantic_info" go with the modes and debug sets they serve;
 *   - ids are renumbered to close the gaps that the left-out instructions'
 *     result ids (OpString, the NonSemantic imports and OpExtInsts) leave: an
 *     id v becomes v minus the number of left-out ids below it. A module with
 *     no such ids keeps its ids as they are. Which operand words are ids comes
 *     from a table of the core opcodes; an opcode the table does not know has
 *     every operand taken as an id.
 * Each 32-bit word is hashed as 4 bytes, least significant first; a
 * byte-swapped module (magic 0x03022307) is read swapped and hashes like the
 * native one. Also 0 for: an id at or above the header's bound where one is
 * looked up, a bound above VKL_SPIRV_MAX_BOUND, memory exhausted. A module
 * whose hash would be 0 gets 1, so 0 always means "not hashed".
 * Limitations: NonSemantic.Shader.DebugInfo.100 (glslang -gV) also adds
 * ordinary constants that are not left out, so such a build hashes unlike the
 * plain one. */
#define VKL_SPIRV_MAX_BOUND (1u << 22)
uint64_t vkl_spirv_hash(const uint32_t *words, size_t word_count);

/* "pipeline-%016llx" (25 bytes and the NUL) */
void vkl_hash_name(uint64_t hash, char out[32]);

typedef struct vkl_name_map vkl_name_map;

/* text file: one "<16 hex digits> <name>" per line, '#' comments, blank lines; names 1..63 bytes.
   NULL with a message in err on any malformed line (line number named) or unreadable file.
 *
 * The strict rules: a line is at most VKL_NAME_LINE_MAX bytes (its '\n', and a
 * '\r' before it, not counted); spaces and tabs around the line are ignored;
 * a comment line starts with '#' (after any blanks); an entry is exactly 16
 * hex digits (either case, no "0x"), one or more blanks, and the name, which
 * is 1..63 bytes of printable non-blank characters (bytes 0x21..0x7e and UTF-8
 * bytes 0x80..0xff; no control character, no blank inside); the hash
 * 0000000000000000 is refused (no module hashes to 0). At most
 * VKL_NAME_MAP_MAX entries. A hash given twice with the same name is taken
 * once; with a different name it is an error naming both lines. A NUL byte in
 * the file is an error. err (errcap bytes, may be 0) gets "PATH:LINE: why" or
 * "PATH: why"; on success it is left as it was.
 *
 * Every input is bounded, and loading never blocks (the layer loads the map
 * inside the user's app): the path must name a regular file (a symlink to
 * one is followed); anything else (a directory, a FIFO, a socket, a character
 * or block device such as /dev/zero) is refused before it is opened, with
 * "PATH: not a regular file (a FIFO)" and the like, and the file is opened
 * O_NONBLOCK and looked at again through the descriptor. A file larger than
 * VKL_NAME_MAP_FILE_MAX bytes (64 MiB) is refused, and no more than that
 * limit and one byte is ever read (a file growing while it is read is an
 * error too). An entry line needs at most 16 + 1 + 63 bytes, so
 * VKL_NAME_MAP_MAX entries fit in about 5 MiB. The file is read in chunks and
 * cut into lines as it comes: the first bad line ends the reading, and a line
 * longer than VKL_NAME_LINE_MAX is an error as soon as its limit is passed,
 * not at its end. */
#define VKL_NAME_LINE_MAX 1024
#define VKL_NAME_MAP_MAX 65536
#define VKL_NAME_MAP_FILE_MAX (64u * 1024u * 1024u)
vkl_name_map *vkl_name_map_load(const char *path, char *err, size_t errcap);
const char *vkl_name_map_find(const vkl_name_map *m, uint64_t hash); /* NULL: not in the map */
void vkl_name_map_free(vkl_name_map *m);
/* the number of entries (0 for NULL) */
size_t vkl_name_map_count(const vkl_name_map *m);

/* ---- SPIR-V modules embedded in ELF files --------------------------------
 *
 * A runtime ships its shaders as data in a shared object or executable, as
 * llama.cpp's libggml-vulkan.so does ("unsigned char rms_norm_f32_data[] =
 * {...}"). vkl_elf_spirv_modules walks an ELF64 little-endian file's symbol
 * tables (.symtab and .dynsym) and hands `fn` every defined data object
 * (STT_OBJECT, not in a NOBITS section, at least 20 bytes, wholly inside its
 * section's bytes in the file) whose bytes start with the SPIR-V magic,
 * either byte order. `data` points into `f`, at no particular alignment; the
 * module is not validated (vkl_spirv_hash does that). An object listed in
 * both tables is handed over twice. `fn` returns false to stop the walk.
 * Returns the number of modules handed over, or -1 with "why" in err: not
 * ELF64 LE, no section headers (stripped), headers or a table out of the
 * file, more than VKL_ELF_MAX_SYMBOLS symbols in a table, no symbol table.
 * Every offset is checked against `size` before it is read. `vkprof names`
 * and the layer's names without a map (docs/layer.md) both use it. */
#define VKL_ELF_MAX_SYMBOLS (1u << 24)
typedef struct vkl_elf_module {
    const char *name; /* the symbol, NUL-terminated inside f */
    uint64_t vaddr;   /* st_value: its address relative to the load bias */
    uint64_t size;    /* st_size in bytes */
    const unsigned char *data;
} vkl_elf_module;
typedef bool (*vkl_elf_module_fn)(void *user, const vkl_elf_module *m);
long vkl_elf_spirv_modules(const unsigned char *f, size_t size, vkl_elf_module_fn fn, void *user,
                           char *err, size_t errcap);
/* The length of a symbol's name less a "_data", "_spirv" or "_spv" suffix. */
size_t vkl_spirv_symbol_len(const char *s, size_t len);

/* ---- the workgroup size and specialisation constants (dispatch args) ----
 *
 * A compute entry point's local size, from the module: OpExecutionMode
 * LocalSize (literals), OpExecutionModeId LocalSizeId (constant ids), or a
 * constant composite decorated BuiltIn WorkgroupSize (which takes precedence
 * over both, as in Vulkan). A size given by a specialisation constant
 * (OpSpecConstant with a SpecId) keeps its id and its default; one given by
 * an expression (OpSpecConstantOp) or an id not found is not known. */
#define VKL_WG_NO_SPEC UINT32_MAX
#define VKL_WG_ENTRIES 8u
typedef struct vkl_wg_dim {
    uint32_t value;   /* the literal, or the spec constant's default */
    uint32_t spec_id; /* VKL_WG_NO_SPEC: not a specialisation constant */
    bool known;       /* false: an expression, or an id not found */
} vkl_wg_dim;
typedef struct vkl_workgroup {
    char entry[64];     /* the entry point's name (cut at 63 bytes) */
    const char *source; /* "LocalSize", "LocalSizeId", "WorkgroupSize"; NULL: none given */
    vkl_wg_dim dim[3];
} vkl_workgroup;
/* The GLCompute entry points of a module, at most `max` (in module order):
 * their count, 0 for what is not SPIR-V. */
uint32_t vkl_spirv_workgroups(const uint32_t *words, size_t word_count, vkl_workgroup *out,
                              uint32_t max);

/* One specialisation map entry (the layout of VkSpecializationMapEntry). */
typedef struct vkl_spec_entry {
    uint32_t id;
    uint32_t offset;
    size_t size;
} vkl_spec_entry;
/* The local size as text, the specialisation applied: "64,1,1"; or
 * "unknown: <why>" (no LocalSize, an expression, no such entry point: wg NULL). */
void vkl_workgroup_text(const vkl_workgroup *wg, const vkl_spec_entry *e, uint32_t n,
                        const void *data, size_t data_size, char *out, size_t cap);
/* The specialisation constants as "id=value,...", in map order: 4 and 8
 * bytes as unsigned decimal integers (the raw bits: a float's too), any other
 * size as 0x and its bytes in memory order, an entry past data_size as
 * "id=?"; cut at `cap` - 1 bytes at an entry's end with ",..." (never a
 * value cut in two). "" for n == 0. */
void vkl_spec_text(const vkl_spec_entry *e, uint32_t n, const void *data, size_t data_size,
                   char *out, size_t cap);

#endif
