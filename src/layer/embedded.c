/* Names without a map (docs/layer.md, "Pipeline names"): a SPIR-V module
 * that the app hands vkCreateShaderModule is looked up among the data
 * objects of the ELF files the process has loaded, as `vkprof names` does
 * offline (names.h: vkl_elf_spirv_modules). Two ways, the first that finds
 * it wins:
 *   1. by address: pCode is the start of a data object of a loaded file
 *      (ggml-vulkan hands the driver its embedded arrays as they are), and
 *      the file's bytes there equal pCode's: exact, and cheap (the file's
 *      symbol tables are read once);
 *   2. by content: the module's normalised hash (vkl_spirv_hash) equals that
 *      of a module embedded in a loaded file (a runtime that copies or
 *      patches its shaders before handing them over: ggml's float-controls
 *      patch). Every module of every loaded file is hashed once, at the first
 *      module the address does not name (~0.3 s for llama.cpp's 1938 modules
 *      on a 2-core VM), and again only for files loaded since.
 * A module found under several names takes the first in sorted order, as a
 * map written by `vkprof names` does. The files are mapped read-only and
 * stay mapped (the names point into them); a file that cannot be opened or
 * read (vdso, deleted, not ELF, stripped) names nothing. Bounded: at most
 * EMB_MAX_OBJECTS files, each at most 2 GiB. */
#define _GNU_SOURCE
#include "layer.h"

#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EMB_MAX_OBJECTS 512u
#define EMB_MAX_FILE (1ull << 31)

typedef struct emb_mod {
    uint64_t vaddr, size, hash; /* hash 0: not hashed yet, or not a module */
    const unsigned char *data;  /* in the file's mapping */
    const char *name;           /* in the file's mapping */
} emb_mod;

typedef struct emb_obj {
    char *path;
    uintptr_t bias;
    bool hashed;
    emb_mod *mods; /* sorted by vaddr */
    size_t n;
} emb_obj;

typedef struct loaded {
    char path[1024];
    uintptr_t bias;
} loaded;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static emb_obj g_obj[EMB_MAX_OBJECTS];
static uint32_t g_nobj;
static loaded g_loaded[EMB_MAX_OBJECTS]; /* the walk's, under g_lock */

typedef struct walk {
    loaded *v;
    uint32_t n;
    uintptr_t code; /* the address looked for */
    int32_t holds;  /* which of v holds it; -1 none */
} walk;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *user)
{
    (void)size;
    walk *w = user;
    if (w->n == EMB_MAX_OBJECTS) {
        return 1;
    }
    const char *name = info->dlpi_name;
    bool main_exe = name == NULL || name[0] == '\0';
    if (main_exe && w->n > 0) {
        return 0; /* only the first object without a name is the executable */
    }
    loaded *l = &w->v[w->n];
    size_t len = main_exe ? 0 : strlen(name);
    if (len >= sizeof l->path) {
        return 0;
    }
    memcpy(l->path, main_exe ? "/proc/self/exe" : name, main_exe ? 15 : len + 1);
    l->bias = (uintptr_t)info->dlpi_addr;
    for (uint16_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = l->bias + (uintptr_t)ph->p_vaddr;
        if (ph->p_type == PT_LOAD && w->code >= lo && w->code - lo < (uintptr_t)ph->p_memsz) {
            w->holds = (int32_t)w->n;
        }
    }
    w->n++;
    return 0;
}

static int cmp_vaddr(const void *a, const void *b)
{
    const emb_mod *x = a, *y = b;
    return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

typedef struct gather {
    emb_mod *v;
    size_t n, cap;
} gather;

static bool gather_cb(void *user, const vkl_elf_module *m)
{
    gather *g = user;
    if (g->n == g->cap) {
        size_t cap = g->cap == 0 ? 64 : g->cap * 2;
        emb_mod *v = realloc(g->v, cap * sizeof *v);
        if (v == NULL) {
            return false;
        }
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n++] = (emb_mod){m->vaddr, m->size, 0, m->data, m->name};
    return true;
}

/* The file's modules, read once; NULL when it names nothing. Under g_lock. */
static emb_obj *obj_get(const loaded *l)
{
    for (uint32_t i = 0; i < g_nobj; i++) {
        if (g_obj[i].bias == l->bias && strcmp(g_obj[i].path, l->path) == 0) {
            return g_obj[i].n > 0 ? &g_obj[i] : NULL;
        }
    }
    if (g_nobj == EMB_MAX_OBJECTS) {
        return NULL;
    }
    emb_obj *o = &g_obj[g_nobj];
    o->path = strdup(l->path);
    if (o->path == NULL) {
        return NULL;
    }
    o->bias = l->bias;
    o->hashed = false;
    o->mods = NULL;
    o->n = 0;
    g_nobj++;
    int fd = open(l->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return NULL;
    }
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 64 &&
        (unsigned long long)st.st_size <= EMB_MAX_FILE) {
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    }
    close(fd);
    if (map == MAP_FAILED) {
        return NULL;
    }
    gather g = {NULL, 0, 0};
    long found = vkl_elf_spirv_modules(map, (size_t)st.st_size, gather_cb, &g, NULL, 0);
    if (found <= 0 || g.n == 0) {
        free(g.v);
        munmap(map, (size_t)st.st_size);
        return NULL;
    }
    qsort(g.v, g.n, sizeof *g.v, cmp_vaddr);
    o->mods = g.v;
    o->n = g.n;
    return o;
}

/* the symbol as a phase name: no suffix, printable, at most cap - 1 bytes */
static void put_name(const char *sym, char *out, size_t cap)
{
    size_t len = vkl_spirv_symbol_len(sym, strlen(sym));
    if (len > cap - 1) {
        len = cap - 1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)sym[i];
        out[i] = (ch >= 0x21 && ch <= 0x7e) || ch >= 0x80 ? (char)ch : '_';
    }
    out[len] = '\0';
}

/* names sort as `vkprof names` sorts them: by the name without suffix */
static bool name_before(const char *a, const char *b)
{
    char x[64], y[64];
    put_name(a, x, sizeof x);
    put_name(b, y, sizeof y);
    return strcmp(x, y) < 0;
}

static uint64_t hash_mod(const emb_mod *m)
{
    size_t words = (size_t)(m->size / 4);
    if (((uintptr_t)m->data & 3u) == 0) {
        return vkl_spirv_hash((const uint32_t *)(const void *)m->data, words);
    }
    uint32_t *w = malloc(words * 4 + 4);
    if (w == NULL) {
        return 0;
    }
    memcpy(w, m->data, words * 4);
    uint64_t h = vkl_spirv_hash(w, words);
    free(w);
    return h;
}

lyr_name_source lyr_embedded_name(const void *code, size_t code_size, uint64_t hash, char *out,
                                  size_t cap)
{
    out[0] = '\0';
    if (code == NULL || cap < 2) {
        return LYR_NAME_NONE;
    }
    loaded *v = g_loaded;
    lyr_name_source got = LYR_NAME_NONE;
    pthread_mutex_lock(&g_lock);
    walk w = {v, 0, (uintptr_t)code, -1};
    dl_iterate_phdr(phdr_cb, &w);
    /* 1. by address */
    emb_obj *o = w.holds >= 0 ? obj_get(&v[w.holds]) : NULL;
    if (o != NULL) {
        emb_mod key = {.vaddr = (uint64_t)((uintptr_t)code - o->bias)};
        const emb_mod *m = bsearch(&key, o->mods, o->n, sizeof *o->mods, cmp_vaddr);
        if (m != NULL && code_size <= m->size && memcmp(m->data, code, code_size) == 0) {
            /* the first of several objects at one address, by name */
            const emb_mod *best = m;
            for (const emb_mod *k = m; k > o->mods && k[-1].vaddr == m->vaddr; k--) {
                best = name_before(k[-1].name, best->name) ? &k[-1] : best;
            }
            for (const emb_mod *k = m + 1; k < o->mods + o->n && k->vaddr == m->vaddr; k++) {
                best = name_before(k->name, best->name) ? k : best;
            }
            put_name(best->name, out, cap);
            got = LYR_NAME_EMBEDDED;
        }
    }
    /* 2. by content */
    const emb_mod *best = NULL;
    for (uint32_t i = 0; got == LYR_NAME_NONE && hash != 0 && i < w.n; i++) {
        emb_obj *e = obj_get(&v[i]);
        if (e == NULL) {
            continue;
        }
        if (!e->hashed) {
            for (size_t k = 0; k < e->n; k++) {
                e->mods[k].hash = hash_mod(&e->mods[k]);
            }
            e->hashed = true;
        }
        for (size_t k = 0; k < e->n; k++) {
            if (e->mods[k].hash == hash &&
                (best == NULL || name_before(e->mods[k].name, best->name))) {
                best = &e->mods[k];
            }
        }
    }
    if (best != NULL) {
        put_name(best->name, out, cap);
        got = LYR_NAME_EMBEDDED_HASH;
    }
    pthread_mutex_unlock(&g_lock);
    return got;
}

void lyr_embedded_forked_child(void)
{
    pthread_mutex_init(&g_lock, NULL);
}
