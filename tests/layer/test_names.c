/* The layer's naming module (src/layer/names.h) on real SPIR-V that glslang
 * compiled at build time from shaders/ (tests/layer/test_names.cmake):
 *   test_names PLAIN.spv DEBUG.spv DEBUGV.spv OTHER.spv TMPDIR
 * PLAIN and DEBUG are one shader without and with -g, OTHER another shader.
 * The float-controls patch is made here the way runtimes do it at run time
 * (capability, extension, execution mode inserted) and written to
 * TMPDIR/patched.spv, which the test names_patched_valid runs spirv-val on.
 * The name map tests write their files in TMPDIR, a FIFO and a sparse file
 * over the size limit among them. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "../check.h"
#include "names.h"

typedef struct mod {
    uint32_t *w;
    size_t n;
} mod;

static mod load(const char *path)
{
    mod m = {0};
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len <= 0 || len % 4 != 0) {
        fprintf(stderr, "%s: not a word stream\n", path);
        exit(2);
    }
    m.n = (size_t)len / 4;
    m.w = malloc((size_t)len);
    if (m.w == NULL || fread(m.w, 4, m.n, f) != m.n) {
        fprintf(stderr, "%s: read failed\n", path);
        exit(2);
    }
    fclose(f);
    return m;
}

static void save(const char *path, const mod *m)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(m->w, 4, m->n, f) != m->n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

static uint64_t hash(const mod *m)
{
    return vkl_spirv_hash(m->w, m->n);
}

/* insert `k` words before word `at` */
static void insert(mod *m, size_t at, const uint32_t *words, size_t k)
{
    uint32_t *w = malloc((m->n + k) * 4);
    memcpy(w, m->w, at * 4);
    memcpy(w + at, words, k * 4);
    memcpy(w + at + k, m->w + at, (m->n - at) * 4);
    free(m->w);
    m->w = w;
    m->n += k;
}

static mod copy(const mod *m)
{
    mod c = {malloc(m->n * 4), m->n};
    memcpy(c.w, m->w, m->n * 4);
    return c;
}

/* word index of the first instruction with opcode op after the header, and
 * of the one after the last with opcode op (0 when none) */
static size_t first_op(const mod *m, uint32_t op, size_t *after_last)
{
    size_t first = 0;
    *after_last = 0;
    for (size_t at = 5; at < m->n;) {
        uint32_t wc = m->w[at] >> 16;
        if ((m->w[at] & 0xffffu) == op) {
            if (first == 0) {
                first = at;
            }
            *after_last = at + wc;
        }
        at += wc;
    }
    return first;
}

/* What a runtime patches in: OpCapability X; OpExtension "SPV_KHR_float_controls";
 * OpExecutionMode %entry MODE 32 (and RoundingModeRTE 16), as ggml does for
 * RTE fp16. */
static mod patch_float_controls(const mod *src)
{
    mod m = copy(src);
    size_t last_cap = 0, last_mode = 0;
    first_op(&m, 17, &last_cap);
    size_t ep = first_op(&m, 15, &last_mode); /* OpEntryPoint: its id is word 2 */
    CHECK(last_cap > 0 && ep > 0);
    uint32_t entry = m.w[ep + 2];
    first_op(&m, 16, &last_mode);
    CHECK(last_mode > 0);
    /* modes first (they are after the capabilities, so inserting there does
     * not move last_cap) */
    uint32_t modes[] = {
        (4u << 16) | 16u, entry, 4459u, 32u, /* DenormPreserve 32 */
        (4u << 16) | 16u, entry, 4462u, 16u, /* RoundingModeRTE 16 */
        (4u << 16) | 16u, entry, 4461u, 32u, /* SignedZeroInfNanPreserve 32 */
    };
    insert(&m, last_mode, modes, sizeof modes / 4);
    uint32_t caps[] = {
        (2u << 16) | 17u, 4464u, /* DenormPreserve */
        (2u << 16) | 17u, 4467u, /* RoundingModeRTE */
        (2u << 16) | 17u, 4466u, /* SignedZeroInfNanPreserve */
    };
    insert(&m, last_cap, caps, sizeof caps / 4);
    /* OpExtension "SPV_KHR_float_controls": 22 bytes + NUL = 6 words */
    uint32_t ext[7] = {(7u << 16) | 10u};
    memcpy(&ext[1], "SPV_KHR_float_controls", 23);
    insert(&m, last_cap + sizeof caps / 4, ext, 7);
    return m;
}

static void test_hash(const char *plain_p, const char *debug_p, const char *debugv_p,
                      const char *other_p, const char *tmp)
{
    check_case = "hash";
    mod plain = load(plain_p), debug = load(debug_p), debugv = load(debugv_p),
        other = load(other_p);
    uint64_t hp = hash(&plain), hd = hash(&debug), ho = hash(&other);
    CHECK(hp != 0);
    CHECK(ho != 0);
    /* the -g build really differs: debug instructions and shifted ids */
    CHECK(debug.n > plain.n);
    CHECK(debug.w[3] != plain.w[3]);
    CHECK_EQ_U64(hd, hp);
    CHECK(ho != hp);
    /* -gV: a real hash, but (names.h) not the plain one's */
    CHECK(hash(&debugv) != 0);
    printf("plain %016llx debug %016llx debugV %016llx other %016llx\n", (unsigned long long)hp,
           (unsigned long long)hd, (unsigned long long)hash(&debugv), (unsigned long long)ho);

    /* the float-controls patch, on the plain and on the -g build */
    mod pat = patch_float_controls(&plain), patd = patch_float_controls(&debug);
    CHECK(pat.n == plain.n + 12 + 6 + 7);
    CHECK_EQ_U64(hash(&pat), hp);
    CHECK_EQ_U64(hash(&patd), hp);
    char path[4096];
    snprintf(path, sizeof path, "%s/patched.spv", tmp);
    save(path, &pat);

    /* a float-controls mode is dropped, any other mode counts: LocalSize x+1 */
    mod ls = copy(&plain);
    for (size_t at = 5; at < ls.n; at += ls.w[at] >> 16) {
        if ((ls.w[at] & 0xffffu) == 16u && ls.w[at + 2] == 17u /* LocalSize */) {
            ls.w[at + 3]++;
        }
    }
    CHECK(hash(&ls) != hp);
    /* the generator word and the bound are left out; the version is not */
    mod g = copy(&plain);
    g.w[2] ^= 0x1234u;
    g.w[3] += 7;
    CHECK_EQ_U64(hash(&g), hp);
    g.w[1] = 0x00010300u;
    CHECK(hash(&g) != hp);

    /* every single-word change of a kept instruction changes the hash (no
     * word is skipped): flip the low bit of each word in turn */
    mod f = copy(&plain);
    size_t changed = 0, same = 0;
    for (size_t at = 5; at < f.n;) {
        uint32_t wc = f.w[at] >> 16, op = f.w[at] & 0xffffu;
        bool debug_op = op == 3 || op == 5 || op == 6 || op == 7 || op == 8 || op == 330;
        for (uint32_t k = 1; k < wc && !debug_op; k++) {
            f.w[at + k] ^= 1u;
            if (hash(&f) != hp) {
                changed++;
            } else {
                same++;
            }
            f.w[at + k] ^= 1u;
        }
        at += wc;
    }
    CHECK(changed > 100);
    CHECK_EQ_U64(same, 0);

    /* byte-swapped: read swapped, the same hash */
    mod sw = copy(&debug);
    for (size_t i = 0; i < sw.n; i++) {
        uint32_t v = sw.w[i];
        sw.w[i] = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
    }
    CHECK_EQ_U64(hash(&sw), hp);

    /* not SPIR-V: 0 */
    check_case = "malformed";
    CHECK_EQ_U64(vkl_spirv_hash(NULL, 0), 0);
    CHECK_EQ_U64(vkl_spirv_hash(plain.w, 4), 0); /* header cut */
    CHECK(vkl_spirv_hash(plain.w, 5) != 0);      /* a bare header is a module */
    /* an instruction cut short: the module ends inside it */
    size_t cut = 0;
    for (size_t at = 5; at < plain.n; at += plain.w[at] >> 16) {
        if ((plain.w[at] >> 16) >= 2) {
            cut = at + 1;
        }
    }
    CHECK(cut > 0);
    CHECK_EQ_U64(vkl_spirv_hash(plain.w, cut), 0);
    CHECK(vkl_spirv_hash(plain.w, cut - 1) != 0); /* cut before it: a module */
    mod cutm = {plain.w, cut};
    snprintf(path, sizeof path, "%s/cut.spv", tmp);
    save(path, &cutm); /* for test_names_tool */
    mod bad = copy(&plain);
    bad.w[0] = 0x07230204u;
    CHECK_EQ_U64(hash(&bad), 0);
    bad.w[0] = plain.w[0];
    bad.w[5] &= 0xffffu; /* word count 0 */
    CHECK_EQ_U64(hash(&bad), 0);
    bad.w[5] = plain.w[5] | 0xff000000u; /* word count past the end */
    CHECK_EQ_U64(hash(&bad), 0);
    bad.w[5] = plain.w[5];
    bad.w[3] = 0; /* bound 0 */
    CHECK_EQ_U64(hash(&bad), 0);
    bad.w[3] = VKL_SPIRV_MAX_BOUND + 1u;
    CHECK_EQ_U64(hash(&bad), 0);
    /* an OpString whose id is past the bound */
    mod bs = copy(&debug);
    size_t last = 0, s = first_op(&bs, 7, &last);
    CHECK(s > 0);
    bs.w[s + 1] = bs.w[3];
    CHECK_EQ_U64(hash(&bs), 0);

    char name[32];
    vkl_hash_name(0x00ab0000000000cdull, name);
    CHECK(strcmp(name, "pipeline-00ab0000000000cd") == 0);
    vkl_hash_name(UINT64_MAX, name);
    CHECK(strcmp(name, "pipeline-ffffffffffffffff") == 0);

    free(plain.w);
    free(debug.w);
    free(debugv.w);
    free(other.w);
    free(pat.w);
    free(patd.w);
    free(ls.w);
    free(g.w);
    free(f.w);
    free(sw.w);
    free(bad.w);
    free(bs.w);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

/* load `text` as a map file; NULL and the error in err on failure */
static vkl_name_map *load_text(const char *tmp, const char *text, size_t len, char *err,
                               size_t errcap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/map.txt", tmp);
    write_file(path, text, len);
    err[0] = '\0';
    return vkl_name_map_load(path, err, errcap);
}

/* the map must fail with an error containing `want` */
static void expect_error(const char *tmp, const char *text, const char *want)
{
    char err[512];
    vkl_name_map *m = load_text(tmp, text, strlen(text), err, sizeof err);
    CHECK(m == NULL);
    if (strstr(err, want) == NULL) {
        fprintf(stderr, "FAIL [%s]: error '%s' lacks '%s'\n", check_case, err, want);
        check_failures++;
    }
    vkl_name_map_free(m);
}

static void test_map(const char *tmp)
{
    char err[512];
    check_case = "map good";
    const char *good = "# name map\n"
                       "\n"
                       "00000000000000a1 rms_norm_f32\n"
                       "  FFFFFFFFFFFFFFFF\tlast_one   \n"
                       "0123456789abcdef mul_mat_vec_f16_f32_f32\r\n"
                       "   # indented comment\n"
                       "00000000000000a1 rms_norm_f32\n" /* the same again: once */
                       "1000000000000000 "
                       "n23456789012345678901234567890123456789012345678901234567890123"; /* 63 */
    vkl_name_map *m = load_text(tmp, good, strlen(good), err, sizeof err);
    CHECK(m != NULL);
    if (m == NULL) {
        fprintf(stderr, "error: %s\n", err);
        return;
    }
    CHECK_EQ_U64(vkl_name_map_count(m), 4);
    CHECK(vkl_name_map_find(m, 0xa1) != NULL &&
          strcmp(vkl_name_map_find(m, 0xa1), "rms_norm_f32") == 0);
    CHECK(vkl_name_map_find(m, UINT64_MAX) != NULL &&
          strcmp(vkl_name_map_find(m, UINT64_MAX), "last_one") == 0);
    const char *mm = vkl_name_map_find(m, 0x0123456789abcdefull);
    CHECK(mm != NULL && strcmp(mm, "mul_mat_vec_f16_f32_f32") == 0);
    const char *l63 = vkl_name_map_find(m, 0x1000000000000000ull);
    CHECK(l63 != NULL && strlen(l63) == 63);
    CHECK(vkl_name_map_find(m, 0xa2) == NULL);
    CHECK(vkl_name_map_find(m, 0) == NULL);
    CHECK(vkl_name_map_find(NULL, 0xa1) == NULL);
    CHECK_EQ_U64(vkl_name_map_count(NULL), 0);
    vkl_name_map_free(m);
    vkl_name_map_free(NULL);

    check_case = "map empty";
    m = load_text(tmp, "# nothing\n\n", 11, err, sizeof err);
    CHECK(m != NULL && vkl_name_map_count(m) == 0);
    vkl_name_map_free(m);
    m = load_text(tmp, "", 0, err, sizeof err);
    CHECK(m != NULL && vkl_name_map_count(m) == 0);
    vkl_name_map_free(m);

    check_case = "map bad";
    expect_error(tmp, "00000000000000a1 ok\n00000000000000g1 bad\n", "map.txt:2: expected 16 hex");
    expect_error(tmp, "0x000000000000a1 bad\n", ":1: expected 16 hex");
    expect_error(tmp, "00000000000000a bad\n", ":1: expected 16 hex");   /* 15 digits */
    expect_error(tmp, "00000000000000a12 bad\n", ":1: expected 16 hex"); /* 17 */
    expect_error(tmp, "00000000000000a1\n", ":1: a hash with no name");
    expect_error(tmp, "00000000000000a1    \n", ":1: a hash with no name");
    expect_error(tmp, "00000000000000a1 two words\n", ":1: a blank inside the name");
    expect_error(tmp, "00000000000000a1 bell\a\n", ":1: a control character");
    expect_error(tmp, "0000000000000000 zero\n", ":1: hash 0000000000000000");
    expect_error(tmp,
                 "\n\n00000000000000a1 "
                 "n234567890123456789012345678901234567890123456789012345678901234\n",
                 ":3: name longer than 63 bytes");
    expect_error(tmp, "00000000000000a1 first\n# x\n00000000000000A1 second\n",
                 ":3: hash 00000000000000a1 is also on line 1 with name 'first'");
    /* a line over the limit, even a comment */
    char *longl = malloc(VKL_NAME_LINE_MAX + 8);
    memset(longl, '#', VKL_NAME_LINE_MAX + 1);
    strcpy(longl + VKL_NAME_LINE_MAX + 1, "\n");
    expect_error(tmp, longl, ":1: line longer than 1024 bytes");
    longl[VKL_NAME_LINE_MAX] = '\n'; /* exactly 1024: fine */
    longl[VKL_NAME_LINE_MAX + 1] = '\0';
    m = load_text(tmp, longl, strlen(longl), err, sizeof err);
    CHECK(m != NULL);
    vkl_name_map_free(m);
    free(longl);
    /* a NUL byte */
    m = load_text(tmp, "00000000000000a1 a\0b\n", 21, err, sizeof err);
    CHECK(m == NULL && strstr(err, ":1: a NUL byte") != NULL);

    check_case = "map missing";
    char path[4096];
    snprintf(path, sizeof path, "%s/no-such-map.txt", tmp);
    err[0] = '\0';
    CHECK(vkl_name_map_load(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "no-such-map.txt: cannot open: No such file or directory") != NULL);
    /* a directory is not a map */
    CHECK(vkl_name_map_load(tmp, err, sizeof err) == NULL);
    CHECK(vkl_name_map_load(path, NULL, 0) == NULL); /* no err buffer */
    /* err is truncated to errcap, NUL-terminated */
    char small[8];
    CHECK(vkl_name_map_load(path, small, sizeof small) == NULL);
    CHECK(strlen(small) == 7);
}

/* `path` must not load, with an error containing `want` */
static void expect_path_error(const char *path, const char *want)
{
    char err[512] = "";
    vkl_name_map *m = vkl_name_map_load(path, err, sizeof err);
    CHECK(m == NULL);
    if (strstr(err, want) == NULL) {
        fprintf(stderr, "FAIL [%s]: %s: error '%s' lacks '%s'\n", check_case, path, err, want);
        check_failures++;
    }
    vkl_name_map_free(m);
}

/* an error "...NAME:LINE: ..." naming a line of the file NAME */
static bool names_a_line(const char *err, const char *name)
{
    const char *at = strstr(err, name);
    if (at == NULL) {
        return false;
    }
    at += strlen(name);
    if (*at++ != ':' || *at < '1' || *at > '9') {
        return false;
    }
    while (*at >= '0' && *at <= '9') {
        at++;
    }
    return at[0] == ':' && at[1] == ' ';
}

/* a file of `size` bytes, sparse (a hole), `head` written at its start */
static void write_sparse(const char *path, const char *head, size_t head_len, off_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || (head_len > 0 && write(fd, head, head_len) != (ssize_t)head_len) ||
        ftruncate(fd, size) != 0 || close(fd) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

/* Every input is bounded (names.h): what is not a regular file is refused
 * before it is read, a file over VKL_NAME_MAP_FILE_MAX is refused, a long
 * line ends the reading. The code before this hung on /dev/zero, /dev/full
 * and a FIFO with no writer: alarm() turns such a hang into a failure (the
 * default action of SIGALRM ends the test) rather than a stuck suite. */
static void test_map_bounded(const char *tmp)
{
    char path[4096], err[512];
    alarm(30);

    check_case = "map not regular";
    static const char *const devices[] = {"/dev/zero", "/dev/full", "/dev/null", "/dev/urandom"};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
        if (access(devices[i], F_OK) == 0) {
            expect_path_error(devices[i], "not a regular file (a character device)");
        }
    }
    expect_path_error(tmp, "not a regular file (a directory)");
    /* a FIFO with no writer: opening it for reading would wait for one */
    snprintf(path, sizeof path, "%s/map.fifo", tmp);
    unlink(path);
    if (mkfifo(path, 0600) != 0) {
        fprintf(stderr, "cannot make the FIFO %s\n", path);
        exit(2);
    }
    expect_path_error(path, "map.fifo: not a regular file (a FIFO)");
    /* a socket (bound, so that it has a path) */
    char sock_path[4096];
    snprintf(sock_path, sizeof sock_path, "%s/map.sock", tmp);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock_path) < sizeof sa.sun_path) {
        memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
        unlink(sock_path);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK(s >= 0 && bind(s, (const struct sockaddr *)&sa, sizeof sa) == 0);
        expect_path_error(sock_path, "map.sock: not a regular file (a socket)");
        close(s);
        unlink(sock_path);
    }
    /* symlinks are followed: to a FIFO, to /dev/zero, to nothing, to a map */
    char link[4096];
    snprintf(link, sizeof link, "%s/map.link", tmp);
    unlink(link);
    CHECK(symlink(path, link) == 0);
    expect_path_error(link, "map.link: not a regular file (a FIFO)");
    unlink(path);
    expect_path_error(link, "map.link: cannot open: No such file or directory");
    unlink(link);
    if (access("/dev/zero", F_OK) == 0) {
        CHECK(symlink("/dev/zero", link) == 0);
        expect_path_error(link, "map.link: not a regular file (a character device)");
        unlink(link);
    }
    snprintf(path, sizeof path, "%s/target.map", tmp);
    write_file(path, "00000000000000a1 linked\n", 24);
    CHECK(symlink(path, link) == 0);
    vkl_name_map *m = vkl_name_map_load(link, err, sizeof err);
    CHECK(m != NULL && vkl_name_map_count(m) == 1);
    CHECK(vkl_name_map_find(m, 0xa1) != NULL && strcmp(vkl_name_map_find(m, 0xa1), "linked") == 0);
    vkl_name_map_free(m);
    unlink(link);
    unlink(path);

    /* over the size limit: refused from its size, not read (sparse: fast) */
    check_case = "map too large";
    snprintf(path, sizeof path, "%s/big.map", tmp);
    const char *head = "00000000000000a1 ok\n";
    write_sparse(path, head, strlen(head), (off_t)VKL_NAME_MAP_FILE_MAX + 1);
    char want[128];
    snprintf(want, sizeof want, "big.map: %llu bytes, larger than the limit of %u bytes (64 MiB)",
             (unsigned long long)VKL_NAME_MAP_FILE_MAX + 1, (unsigned)VKL_NAME_MAP_FILE_MAX);
    expect_path_error(path, want);
    /* at the limit: read, and line 2 (NUL bytes to the end, no '\n') is cut
     * off once it passes 1024 bytes */
    write_sparse(path, head, strlen(head), (off_t)VKL_NAME_MAP_FILE_MAX);
    expect_path_error(path, "big.map:2: line longer than 1024 bytes");
    unlink(path);

    /* one line of 100000 bytes, after a good one; with a '\r': 1024 and the
     * '\r' is fine, 1025 is not */
    check_case = "map long line";
    size_t n = 100000;
    char *text = malloc(n + 64);
    CHECK(text != NULL);
    memcpy(text, head, strlen(head));
    memset(text + strlen(head), 'a', n);
    m = load_text(tmp, text, strlen(head) + n, err, sizeof err);
    CHECK(m == NULL && strstr(err, "map.txt:2: line longer than 1024 bytes") != NULL);
    memset(text, '#', VKL_NAME_LINE_MAX);
    memcpy(text + VKL_NAME_LINE_MAX, "\r\n", 3);
    m = load_text(tmp, text, strlen(text), err, sizeof err);
    CHECK(m != NULL && vkl_name_map_count(m) == 0);
    vkl_name_map_free(m);
    memset(text, '#', VKL_NAME_LINE_MAX + 1);
    memcpy(text + VKL_NAME_LINE_MAX + 1, "\r\n", 3);
    expect_error(tmp, text, ":1: line longer than 1024 bytes");
    free(text);

    /* binary garbage (a fixed xorshift stream): an error naming a line */
    check_case = "map garbage";
    n = 1u << 20;
    unsigned char *g = malloc(n);
    CHECK(g != NULL);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        g[i] = (unsigned char)(x >> 32);
    }
    snprintf(path, sizeof path, "%s/garbage.bin", tmp);
    write_file(path, (const char *)g, n);
    err[0] = '\0';
    m = vkl_name_map_load(path, err, sizeof err);
    CHECK(m == NULL);
    if (!names_a_line(err, "garbage.bin")) {
        fprintf(stderr, "FAIL [%s]: error '%s' names no line of garbage.bin\n", check_case, err);
        check_failures++;
    }
    vkl_name_map_free(m);
    unlink(path);
    free(g);

    /* many lines, across the reads' chunks: all there; one entry too many */
    check_case = "map many";
    const size_t entries = VKL_NAME_MAP_MAX + 1, line_len = 24; /* "%016zx n%05zu\n" */
    text = malloc(entries * line_len + 1);
    CHECK(text != NULL);
    for (size_t i = 0; i < entries; i++) {
        snprintf(text + i * line_len, line_len + 1, "%016zx n%05zu\n", i + 1, i % 100000);
    }
    m = load_text(tmp, text, (entries - 1) * line_len, err, sizeof err);
    CHECK(m != NULL && vkl_name_map_count(m) == VKL_NAME_MAP_MAX);
    CHECK(vkl_name_map_find(m, 1) != NULL && strcmp(vkl_name_map_find(m, 1), "n00000") == 0);
    CHECK(vkl_name_map_find(m, 0x2abc) != NULL &&
          strcmp(vkl_name_map_find(m, 0x2abc), "n10939") == 0);
    CHECK(vkl_name_map_find(m, VKL_NAME_MAP_MAX) != NULL);
    vkl_name_map_free(m);
    m = load_text(tmp, text, entries * line_len, err, sizeof err);
    CHECK(m == NULL && strstr(err, "map.txt:65537: more than 65536 entries") != NULL);
    free(text);

    alarm(0);
}

/* test_names --map FILE COUNT [HASH NAME]...: FILE loads, holds COUNT
 * entries, and each HASH (hex) has NAME (for test_names_tool.cmake) */
static int check_map(int argc, char **argv)
{
    char err[512] = "";
    vkl_name_map *m = vkl_name_map_load(argv[2], err, sizeof err);
    if (m == NULL) {
        fprintf(stderr, "FAIL: %s does not load: %s\n", argv[2], err);
        return 1;
    }
    check_case = "map file";
    CHECK_EQ_U64(vkl_name_map_count(m), strtoull(argv[3], NULL, 10));
    for (int i = 4; i + 1 < argc; i += 2) {
        const char *got = vkl_name_map_find(m, strtoull(argv[i], NULL, 16));
        if (got == NULL || strcmp(got, argv[i + 1]) != 0) {
            fprintf(stderr, "FAIL: %s: %s is '%s', expected '%s'\n", argv[2], argv[i],
                    got != NULL ? got : "(none)", argv[i + 1]);
            check_failures++;
        }
    }
    vkl_name_map_free(m);
    return check_failures != 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--map") == 0) {
        return check_map(argc, argv);
    }
    if (argc != 6) {
        fprintf(stderr, "usage: test_names PLAIN.spv DEBUG.spv DEBUGV.spv OTHER.spv TMPDIR\n");
        return 2;
    }
    test_hash(argv[1], argv[2], argv[3], argv[4], argv[5]);
    test_map(argv[5]);
    test_map_bounded(argv[5]);
    if (check_failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", check_failures);
        return 1;
    }
    printf("test_names: ok\n");
    return 0;
}
