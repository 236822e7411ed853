/* `vkprof names [-o FILE] INPUT...`: a name map for the vkprof layer
 * (VKPROF_LAYER_NAMES, src/layer/names.h) from a runtime's shipped shaders.
 * An input is a SPIR-V module (named by its file name without ".spv") or a
 * 64-bit little-endian ELF file, such as llama.cpp's libggml-vulkan.so, whose
 * symbol tables (.symtab, .dynsym) name data objects holding SPIR-V modules
 * (named by the symbol, less a "_data", "_spv" or "_spirv" suffix). Every
 * module is hashed as the layer hashes it (vkl_spirv_hash: normalised). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_opts.h"
#include "names.h"
#include "outfile.h"

#define TOOL "vkprof names"
#define NAMES_MAX_INPUTS 4096
#define NAMES_MAX_FILE (1ull << 31) /* 2 GiB per input */

static void names_usage(FILE *f)
{
    fprintf(f, "usage: vkprof names [-o FILE] INPUT...\n"
               "  Write a name map for the vkprof layer (VKPROF_LAYER_NAMES, `vkprof run\n"
               "  --names FILE`): one \"<hash> <name>\" line per SPIR-V module, the hash the\n"
               "  layer computes for the module (float-controls modes and debug info left\n"
               "  out, so a module the runtime patches at run time still matches).\n"
               "  INPUT is a SPIR-V file (name: the file name without .spv) or a 64-bit ELF\n"
               "  shared object or executable that embeds its shaders as data, such as\n"
               "  llama.cpp's libggml-vulkan.so (name: the symbol, without a _data, _spv or\n"
               "  _spirv suffix).\n"
               "  -o FILE, --output FILE  write the map there (atomically); default: stdout\n"
               "  A module found under two names is written once, under the first name in\n"
               "  sorted order, the others in a comment. An input with no SPIR-V in it is an\n"
               "  error.\n");
}

typedef struct entry {
    uint64_t hash;
    char name[64];
    const char *input;
    size_t idx; /* output: the group's first index in the sorted list */
} entry;

typedef struct collect {
    entry *e;
    size_t n, cap;
    bool oom;
} collect;

static void add(collect *c, uint64_t hash, const char *name, size_t len, const char *input)
{
    if (c->n == c->cap) {
        size_t ncap = c->cap == 0 ? 256 : c->cap * 2;
        entry *ne = realloc(c->e, ncap * sizeof *ne);
        if (ne == NULL) {
            c->oom = true;
            return;
        }
        c->e = ne;
        c->cap = ncap;
    }
    entry *e = &c->e[c->n++];
    e->hash = hash;
    e->input = input;
    if (len > 63) {
        fprintf(stderr, TOOL ": %s: name '%.*s' cut to 63 bytes\n", input, (int)len, name);
        len = 63;
    }
    bool fixed = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        bool ok = (ch >= 0x21 && ch <= 0x7e) || ch >= 0x80;
        e->name[i] = ok ? (char)ch : '_';
        fixed |= !ok;
    }
    e->name[len] = '\0';
    if (len == 0) {
        memcpy(e->name, "unnamed", 8);
    }
    if (fixed) {
        fprintf(stderr, TOOL ": %s: blanks and control characters in '%s' written as '_'\n", input,
                e->name);
    }
}

/* the whole file, at most NAMES_MAX_FILE bytes; NULL with the message printed */
static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, TOOL ": %s: cannot open: %s\n", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, TOOL ": %s: not a regular file\n", path);
        fclose(f);
        return NULL;
    }
    if ((unsigned long long)st.st_size > NAMES_MAX_FILE) {
        fprintf(stderr, TOOL ": %s: larger than 2 GiB\n", path);
        fclose(f);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *buf = malloc(n > 0 ? n : 1);
    if (buf == NULL) {
        fprintf(stderr, TOOL ": %s: out of memory\n", path);
        fclose(f);
        return NULL;
    }
    if (fread(buf, 1, n, f) != n) {
        fprintf(stderr, TOOL ": %s: cannot read: %s\n", path,
                ferror(f) ? strerror(errno) : "shorter than its size");
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *size = n;
    return buf;
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool is_spirv(const unsigned char *p, size_t n)
{
    return n >= 20 && (rd32(p) == 0x07230203u || rd32(p) == 0x03022307u);
}

/* hash `n` bytes of SPIR-V (copied to aligned words); 0: not a module */
static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    size_t words = n / 4;
    uint32_t *w = malloc(words * 4 + 4);
    if (w == NULL) {
        return 0;
    }
    memcpy(w, p, words * 4);
    uint64_t h = vkl_spirv_hash(w, words);
    free(w);
    return h;
}

typedef struct elf_scan {
    const char *path;
    collect *c;
    long hashed;
} elf_scan;

static bool elf_module(void *user, const vkl_elf_module *m)
{
    elf_scan *s = user;
    uint64_t h = hash_bytes(m->data, (size_t)m->size);
    if (h == 0) {
        fprintf(stderr, TOOL ": %s: symbol %s starts like SPIR-V but is not a module\n", s->path,
                m->name);
        return true;
    }
    add(s->c, h, m->name, vkl_spirv_symbol_len(m->name, strlen(m->name)), s->path);
    s->hashed++;
    return true;
}

/* ELF64 little endian: every defined data object of .symtab and .dynsym
 * whose bytes start with the SPIR-V magic (names.h: vkl_elf_spirv_modules).
 * Returns the number of modules found, or -1 with the message printed. */
static long scan_elf(const char *path, const unsigned char *f, size_t size, collect *c)
{
    char err[160];
    elf_scan s = {path, c, 0};
    if (vkl_elf_spirv_modules(f, size, elf_module, &s, err, sizeof err) < 0) {
        fprintf(stderr, TOOL ": %s: %s\n", path, err);
        return -1;
    }
    return s.hashed;
}

static int cmp_name(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    if (r != 0) {
        return r;
    }
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int cmp_hash(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->hash != y->hash) {
        return x->hash < y->hash ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

int vkprof_cmd_names(int argc, char **argv)
{
    const char *out = NULL;
    const char **inputs = calloc(NAMES_MAX_INPUTS, sizeof *inputs);
    size_t n_inputs = 0;
    if (inputs == NULL) {
        fprintf(stderr, TOOL ": out of memory\n");
        return 1;
    }
    const cli_opt opts[] = {
        {"--output", CLI_STR, .str = &out},
    };
    /* cli_parse takes long options only: turn "-o" into "--output" first */
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (args == NULL) {
        free(inputs);
        fprintf(stderr, TOOL ": out of memory\n");
        return 1;
    }
    bool options = true;
    for (int i = 0; i < argc; i++) {
        args[i] = argv[i];
        if (i > 0 && options && strcmp(argv[i], "--") == 0) {
            options = false;
        } else if (i > 0 && options && strcmp(argv[i], "-o") == 0) {
            args[i] = "--output";
        }
    }
    const cli_spec spec = {.tool = TOOL,
                           .opts = opts,
                           .n_opts = sizeof opts / sizeof opts[0],
                           .usage = names_usage,
                           .pos = inputs,
                           .max_pos = NAMES_MAX_INPUTS,
                           .n_pos = &n_inputs,
                           .too_many = "more than 4096 inputs"};
    int parsed = cli_parse(&spec, argc, args);
    free(args);
    if (parsed != CLI_OK) {
        free(inputs);
        return cli_exit_status(parsed);
    }
    if (n_inputs == 0) {
        fprintf(stderr, TOOL ": no input (a .spv file or an ELF file; --help)\n");
        free(inputs);
        return 2;
    }
    collect c = {0};
    int rc = 0;
    for (size_t i = 0; i < n_inputs && rc == 0; i++) {
        const char *path = inputs[i];
        size_t size = 0;
        unsigned char *buf = read_all(path, &size);
        if (buf == NULL) {
            rc = 1;
            break;
        }
        if (is_spirv(buf, size)) {
            uint64_t h = size % 4 == 0 ? hash_bytes(buf, size) : 0;
            if (h == 0) {
                fprintf(stderr, TOOL ": %s: starts like SPIR-V but is not a valid module\n", path);
                rc = 1;
            } else {
                const char *base = strrchr(path, '/');
                base = base != NULL ? base + 1 : path;
                size_t len = strlen(base);
                if (len > 4 && strcmp(base + len - 4, ".spv") == 0) {
                    len -= 4;
                }
                add(&c, h, base, len, path);
            }
        } else if (size >= 4 && memcmp(buf, "\177ELF", 4) == 0) {
            size_t before = c.n;
            long found = scan_elf(path, buf, size, &c);
            if (found < 0) {
                rc = 1;
            } else if (found == 0) {
                fprintf(stderr, TOOL ": %s: no SPIR-V module in its symbols' data\n", path);
                rc = 1;
            } else {
                /* the same object is in .symtab and .dynsym: count modules once */
                qsort(c.e + before, c.n - before, sizeof *c.e, cmp_hash);
                size_t distinct = 0;
                for (size_t k = before; k < c.n; k++) {
                    distinct += k == before || c.e[k - 1].hash != c.e[k].hash;
                }
                fprintf(stderr, TOOL ": %s: %zu SPIR-V modules\n", path, distinct);
            }
        } else {
            fprintf(stderr, TOOL ": %s: neither SPIR-V nor an ELF file\n", path);
            rc = 1;
        }
        free(buf);
    }
    if (rc == 0 && c.oom) {
        fprintf(stderr, TOOL ": out of memory\n");
        rc = 1;
    }
    if (rc != 0) {
        free(c.e);
        free(inputs);
        return rc;
    }
    /* one line per hash: the first name in sorted order; the module's other
     * names in a comment after it */
    qsort(c.e, c.n, sizeof *c.e, cmp_hash);
    size_t uniq = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (i == 0 || c.e[i - 1].hash != c.e[i].hash) {
            uniq++;
        }
    }
    if (uniq > VKL_NAME_MAP_MAX) {
        fprintf(stderr, TOOL ": %zu modules: more than a name map holds (%d)\n", uniq,
                VKL_NAME_MAP_MAX);
        free(c.e);
        free(inputs);
        return 1;
    }
    /* the groups' first entries, in name order */
    entry *heads = malloc((uniq > 0 ? uniq : 1) * sizeof *heads);
    if (heads == NULL) {
        fprintf(stderr, TOOL ": out of memory\n");
        free(c.e);
        free(inputs);
        return 1;
    }
    size_t g = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (i == 0 || c.e[i - 1].hash != c.e[i].hash) {
            heads[g] = c.e[i];
            heads[g].idx = i;
            g++;
        }
    }
    qsort(heads, uniq, sizeof *heads, cmp_name);
    outfile of;
    FILE *fp = stdout;
    if (out != NULL) {
        if (outfile_open(&of, TOOL, out) != 0) {
            free(heads);
            free(c.e);
            free(inputs);
            return 1;
        }
        fp = of.f;
    }
    fprintf(fp, "# vkprof name map (vkprof names): <SPIR-V hash> <name>, %zu modules\n", uniq);
    for (size_t k = 0; k < uniq; k++) {
        fprintf(fp, "%016llx %s\n", (unsigned long long)heads[k].hash, heads[k].name);
        size_t i = heads[k].idx;
        const char *prev = c.e[i].name;
        bool open = false;
        for (size_t j = i + 1; j < c.n && c.e[j].hash == c.e[i].hash; j++) {
            if (strcmp(c.e[j].name, prev) == 0) {
                continue; /* the same name again (.symtab and .dynsym, two inputs) */
            }
            fprintf(fp, "%s %s", open ? "" : "#   the same module as:", c.e[j].name);
            open = true;
            prev = c.e[j].name;
        }
        if (open) {
            fputc('\n', fp);
        }
    }
    if (out != NULL) {
        rc = outfile_commit(&of);
    } else if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, TOOL ": cannot write to standard output\n");
        rc = 1;
    }
    free(heads);
    free(c.e);
    free(inputs);
    return rc;
}
