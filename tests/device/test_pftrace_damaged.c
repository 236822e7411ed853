/* A damaged or cut .pftrace is said to be one (docs/trace-format.md,
 * "Reading back"): the loader (rpt_read_file, as `vkprof report` and
 * `vkprof merge` read a file) on every truncation and on every one-byte
 * change of a small real trace (host spans, GPU scopes on lavapipe, flows,
 * annotations), under a name that says .pftrace and under one that says
 * nothing. Each is refused with the Perfetto reader's message, which names
 * the packet and its byte offset (or read, when the change is one no reader
 * can see, e.g. inside a name); never with the JSON reader's message for
 * bytes that are not JSON. The same trace's JSON text under a .pftrace name
 * reads as JSON, to the same summary.
 *
 * Usage: test_pftrace_damaged */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "timeline_common.h"
#include "trace_reader.h"

static char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    *n = buf != NULL ? fread(buf, 1, cap, f) : 0;
    fclose(f);
    CHECK(buf != NULL && *n > 0 && *n < cap);
    return buf;
}

static void write_bytes(const char *path, const char *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f != NULL) {
        CHECK(fwrite(buf, 1, n, f) == n);
        fclose(f);
    }
}

/* The text summary of a file, or NULL with its error in err. */
static char *summary_of(const char *path, char *err, size_t size)
{
    rpt_summary *s = NULL;
    if (rpt_read_file(path, 0, &s, err, size) != 0) {
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    CHECK(m != NULL);
    if (m != NULL) {
        CHECK(rpt_print(s, "TRACE", m) == 0);
        fclose(m);
    }
    rpt_free(s);
    return text;
}

/* A small real trace: 2 steps of spans (annotated, nested) with GPU scopes
 * recorded inside them (flows), and a rendezvous probe. */
static void write_trace(const char *path)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, 0) == VKPROF_OK);
    vkprof_set_thread_name(ctx, "decode");
    for (int step = 0; step < 2; step++) {
        vkprof_span ls = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
        vkprof_span as = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        CHECK(vkprof_span_annotate(&as, "note", "a \"q\""));
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 50);
        const vkprof_arg args[1] = {{"groups", "4,1,1"}};
        CHECK(vkprof_cmd_end_args(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION, args, 1) == VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vkprof_span_end(ctx, &as);
        vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, NULL, NULL);
        vkprof_span_end(ctx, &ls);
        vkprof_step(ctx);
    }
    /* the extension picks the Perfetto format */
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    vkprof_destroy(ctx);
}

typedef struct tally {
    int read, perfetto, converted, neither, json, other;
} tally;

/* Read `bytes` as the file `name` (in tmpdir) and check what is said:
 * a trace, or an error that says Perfetto (converter errors name a packet).
 * bare_json_ok: a JSON reader's error is fine (the bytes start like JSON). */
static bool json_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The content starts JSON text by the documented rule (what a damaged
 * Perfetto trace may come to look like): after a UTF-8 BOM and blanks, '{'
 * or '['; when the first byte is still a packet's tag (0x0a, a line break),
 * only if '"' or '}' follows '{', or '{' or ']' follows '['. */
static bool content_is_json(const char *b, size_t n)
{
    size_t i = n >= 3 && memcmp(b, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    while (i < n && json_blank(b[i])) {
        i++;
    }
    if (i == n || (b[i] != '{' && b[i] != '[')) {
        return false;
    }
    if (b[0] != '\n') {
        return true; /* not a packet: JSON text, or neither */
    }
    const char open = b[i++];
    while (i < n && json_blank(b[i])) {
        i++;
    }
    return i < n && (open == '{' ? b[i] == '"' || b[i] == '}' : b[i] == '{' || b[i] == ']');
}

static void check_one(const char *name, const char *bytes, size_t n, bool bare_json_ok, tally *t,
                      const char *what)
{
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    write_bytes(path, bytes, n);
    rpt_summary *s = NULL;
    int rc = rpt_read_file(path, 0, &s, err, sizeof err);
    rpt_free(s);
    bool ok;
    if (rc == 0) {
        t->read++;
        ok = true;
    } else if (strncmp(err, "Perfetto trace: ", 16) == 0) {
        t->perfetto++;
        ok = strstr(err, "packet #") != NULL;
    } else if (strncmp(err, "Perfetto trace, as converted to JSON: ", 38) == 0) {
        t->converted++;
        /* what the converter writes is JSON: only its content may be refused */
        ok = strstr(err, "invalid JSON") == NULL && strstr(err, "unexpected") == NULL &&
             strstr(err, "expected ") == NULL;
    } else if (strncmp(err, "neither a JSON trace nor a Perfetto trace", 41) == 0) {
        t->neither++;
        ok = bare_json_ok;
    } else {
        t->json++;
        ok = bare_json_ok;
    }
    if (!ok) {
        t->other++;
        if (t->other <= 10) {
            fprintf(stderr, "%s (%s, %zu bytes): rc %d, \"%s\"\n", what, name, n, rc, err);
        }
    }
    CHECK(ok);
}

int main(void)
{
    tl_init();
    char pf[300];
    snprintf(pf, sizeof pf, "%s/real.pftrace", tmpdir);
    write_trace(pf);
    size_t n = 0;
    char *buf = read_bytes(pf, &n);
    if (buf == NULL) {
        return tl_finish();
    }
    char err[512] = "";
    char *whole = summary_of(pf, err, sizeof err);
    CHECK(whole != NULL);
    if (whole == NULL) {
        fprintf(stderr, "%s: %s\n", pf, err);
    }

    /* every truncation: said to be a cut Perfetto trace, with its packet */
    tally cut = {0};
    int said_cut = 0;
    for (size_t k = 1; k < n; k++) {
        char what[64];
        snprintf(what, sizeof what, "cut at %zu", k);
        check_one("cut.pftrace", buf, k, false, &cut, what);
        /* unnamed: the bytes say it (but "\n" alone is a blank file) */
        check_one("cut.bin", buf, k, k == 1, &cut, what);
        char path[512];
        snprintf(path, sizeof path, "%s/cut.pftrace", tmpdir);
        rpt_summary *s = NULL;
        err[0] = '\0';
        CHECK(rpt_read_file(path, 0, &s, err, sizeof err) != 0); /* the metadata is last */
        said_cut += strstr(err, "truncated") != NULL || strstr(err, "cut short") != NULL;
        rpt_free(s);
    }
    CHECK(cut.read == 0 && cut.json <= 1 && cut.converted == 0); /* "\n": empty */
    CHECK(said_cut == (int)n - 1);
    printf("%zu truncations (x2 names): %d Perfetto errors naming the packet, %d said cut, %d "
           "others\n",
           n - 1, cut.perfetto, said_cut, cut.other + cut.neither);

    /* every byte changed (x ^ 0xff), and 3000 random changes of 1-3 bytes */
    tally flip = {0};
    char *copy = malloc(n);
    CHECK(copy != NULL);
    unsigned seed = 777;
    for (size_t k = 0; copy != NULL && k < n + 3000; k++) {
        memcpy(copy, buf, n);
        if (k < n) {
            copy[k] = (char)(copy[k] ^ 0xff);
        } else {
            for (size_t m = 0; m < 1 + k % 3; m++) {
                seed = seed * 1103515245u + 12345u;
                copy[(seed >> 8) % n] = (char)(seed >> 20);
            }
        }
        char what[64];
        snprintf(what, sizeof what, "change #%zu", k);
        /* named .pftrace: a JSON reader's message only when the damage made
         * the content JSON by the documented rule (trace_reader.c,
         * rpt_trace_format; seen twice in 5777 changes: the first packet's
         * length byte became '{' before a '"', and the first byte became
         * '[', which then reads as a JSON array whose event #0 is no object) */
        check_one("damaged.pftrace", copy, n, content_is_json(copy, n), &flip, what);
        /* unnamed: a JSON reader's message only when the first byte now
         * starts JSON text (or is not a packet's tag) */
        bool tag = copy[0] == '\n';
        check_one("damaged.bin", copy, n, !tag || copy[1] == '{' || copy[1] == '[', &flip, what);
    }
    /* the first byte made '[' or '{' (no packet's tag): JSON by the rule,
     * so the JSON reader's message (the case seen once at random) */
    for (int k = 0; copy != NULL && k < 2; k++) {
        memcpy(copy, buf, n);
        copy[0] = k == 0 ? '[' : '{';
        CHECK(content_is_json(copy, n));
        char path[512];
        snprintf(path, sizeof path, "%s/first.pftrace", tmpdir);
        write_bytes(path, copy, n);
        rpt_summary *s = NULL;
        err[0] = '\0';
        CHECK(rpt_read_file(path, 0, &s, err, sizeof err) != 0);
        rpt_free(s);
        CHECK(err[0] != '\0' && strstr(err, "Perfetto") == NULL);
    }
    free(copy);
    printf("%zu changed copies (x2 names): %d read, %d Perfetto errors, %d errors in the "
           "converted JSON, %d neither, %d JSON\n",
           n + 3000, flip.read, flip.perfetto, flip.converted, flip.neither, flip.json);

    /* the JSON text of the same trace, named .pftrace: read as JSON */
    char *json = NULL;
    size_t jlen = 0;
    CHECK(rpt_load_file(pf, 0, &json, &jlen, err, sizeof err) == 0);
    if (json != NULL) {
        CHECK(json[0] == '{');
        char jpath[300];
        snprintf(jpath, sizeof jpath, "%s/json_named.pftrace", tmpdir);
        write_bytes(jpath, json, jlen);
        int fmt = -1;
        char *jbuf = NULL;
        size_t jn = 0;
        CHECK(rpt_load_trace(jpath, 0, &jbuf, &jn, &fmt, err, sizeof err) == 0);
        CHECK(fmt == RPT_FORMAT_JSON && jn == jlen);
        free(jbuf);
        fmt = -1;
        CHECK(rpt_load_trace(pf, 0, &jbuf, &jn, &fmt, err, sizeof err) == 0);
        CHECK(fmt == RPT_FORMAT_PFTRACE);
        free(jbuf);
        char *again = summary_of(jpath, err, sizeof err);
        CHECK(again != NULL && whole != NULL && strcmp(again, whole) == 0);
        free(again);
        free(json);
    }
    free(whole);
    free(buf);
    return tl_finish();
}
