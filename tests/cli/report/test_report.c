/* The trace reader of `vkprof report`: exact figures from hand-written traces,
 * clear errors for malformed ones, and a well-formed SVG written atomically.
 * argv[1]: the folder of the sample traces; argv[2]: a scratch folder. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_reader.h"

#include "check.h"

#define CHECK_U64 CHECK_EQ_U64

static const char *data_dir, *tmp_dir;

static char *path_of(const char *dir, const char *name)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static const rpt_group *find(const rpt_group *g, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(g[i].name, name) == 0) {
            return &g[i];
        }
    }
    return NULL;
}

/* ---- a minimal XML well-formedness check (the subset the SVG writer uses) -- */

static int xml_check(const char *x, size_t n)
{
    char stack[64][32];
    int sp = 0, elements = 0;
    size_t i = 0;
    if (n >= 5 && strncmp(x, "<?xml", 5) == 0) {
        const char *e = strstr(x, "?>");
        if (e == NULL) {
            return -1;
        }
        i = (size_t)(e - x) + 2;
    }
    while (i < n) {
        char c = x[i];
        if (c == '<') {
            int closing = x[i + 1] == '/';
            size_t j = i + 1 + (size_t)closing, k = 0;
            char name[32];
            while (j < n && x[j] != ' ' && x[j] != '>' && x[j] != '/' && x[j] != '\n') {
                if (k + 1 >= sizeof name) {
                    return -1;
                }
                name[k++] = x[j++];
            }
            name[k] = '\0';
            if (k == 0) {
                return -1;
            }
            /* attributes: name="value" with no '<' and valid entities */
            while (j < n && x[j] != '>' && !(x[j] == '/' && x[j + 1] == '>')) {
                if (x[j] == '"') {
                    j++;
                    while (j < n && x[j] != '"') {
                        if (x[j] == '<') {
                            return -1;
                        }
                        if (x[j] == '&' && strncmp(x + j, "&amp;", 5) &&
                            strncmp(x + j, "&lt;", 4) && strncmp(x + j, "&gt;", 4) &&
                            strncmp(x + j, "&quot;", 6) && strncmp(x + j, "&apos;", 6)) {
                            return -1;
                        }
                        j++;
                    }
                }
                j++;
            }
            if (j >= n) {
                return -1;
            }
            int self_closing = x[j] == '/';
            if (closing) {
                if (sp == 0 || strcmp(stack[sp - 1], name) != 0) {
                    return -1;
                }
                sp--;
            } else if (!self_closing) {
                if (sp == 64) {
                    return -1;
                }
                strcpy(stack[sp++], name);
                elements++;
            } else {
                elements++;
            }
            i = j + (self_closing ? 2 : 1);
            continue;
        }
        if (c == '&' && strncmp(x + i, "&amp;", 5) && strncmp(x + i, "&lt;", 4) &&
            strncmp(x + i, "&gt;", 4) && strncmp(x + i, "&quot;", 6) &&
            strncmp(x + i, "&apos;", 6)) {
            return -1;
        }
        if (c == '>' || ((unsigned char)c < 0x20 && c != '\n' && c != '\t' && c != '\r')) {
            return -1;
        }
        if (sp == 0 && c != '\n' && c != ' ') {
            return -1; /* text outside the root */
        }
        i++;
    }
    return sp == 0 && elements > 0 ? 0 : -1;
}

static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap + 1);
    size_t r;
    while (b != NULL && (r = fread(b + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) {
            char *q = realloc(b, cap * 2 + 1);
            if (q == NULL) {
                free(b);
                b = NULL;
                break;
            }
            b = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (b != NULL) {
        b[len] = '\0';
    }
    *n = len;
    return b;
}

/* ---- the sample traces ------------------------------------------------------- */

static void test_two_tokens(void)
{
    char err[512];
    rpt_summary *s = NULL;
    int rc = rpt_read_file(path_of(data_dir, "two_tokens.json"), 0, &s, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "two_tokens.json: %s\n", err);
        check_failures++;
        return;
    }
    CHECK_U64(s->tokens, 2);
    CHECK(s->token_source == RPT_TOKENS_FROM_EVENTS);
    CHECK_U64(s->gpu_tokens, 2);
    CHECK_U64(s->n_gpu, 3);
    CHECK_U64(s->n_host, 3);
    /* sorted by total time */
    CHECK(strcmp(s->gpu[0].name, "attention") == 0);
    CHECK(strcmp(s->gpu[1].name, "mlp_down") == 0);
    CHECK(strcmp(s->gpu[2].name, "norm") == 0);
    CHECK_U64(s->gpu[0].total_ns, 400123 + 380001);
    CHECK_U64(s->gpu[0].calls, 2);
    CHECK_U64(s->gpu[1].total_ns, 300250 + 299998);
    CHECK_U64(s->gpu[2].total_ns, 20002 + 20004 + 20000);
    CHECK_U64(s->gpu[2].calls, 3);
    CHECK_U64(s->gpu[2].self_ns, 60006);
    CHECK_U64(s->gpu_busy_ns, 780124 + 600248 + 60006);
    const rpt_group *step = find(s->host, s->n_host, "step");
    const rpt_group *wait = find(s->host, s->n_host, "wait");
    const rpt_group *rec = find(s->host, s->n_host, "record");
    CHECK(step != NULL && wait != NULL && rec != NULL);
    if (step != NULL && wait != NULL && rec != NULL) {
        CHECK(step == &s->host[0] && wait == &s->host[1] && rec == &s->host[2]);
        CHECK_U64(step->total_ns, 1500250 + 1400000);
        CHECK_U64(step->self_ns, (1500250 - 200500 - 1100001) + (1400000 - 150000 - 1000000));
        CHECK_U64(wait->total_ns, 1100001 + 1000000);
        CHECK_U64(wait->self_ns, wait->total_ns);
        CHECK_U64(rec->total_ns, 200500 + 150000);
        CHECK_U64(rec->calls, 2);
    }
    CHECK_U64(s->host_busy_ns, 2900250);
    CHECK(s->device != NULL && strcmp(s->device, "Test GPU <&>") == 0);
    CHECK(s->driver != NULL && strcmp(s->driver, "test driver 1.0") == 0);
    CHECK(s->cal_method != NULL && strcmp(s->cal_method, "calibrated_timestamps") == 0);
    CHECK(s->has_error_bound);
    CHECK_U64(s->error_bound_ns, 3200);
    CHECK(s->has_dropped);
    CHECK_U64(s->dropped_events, 5);
    CHECK_U64(s->event_capacity, 1024);
    CHECK(s->sampling_mode != NULL && strcmp(s->sampling_mode, "2slot") == 0);
    CHECK_U64(s->every_n_steps, 1);
    CHECK_U64(s->n_events, 28);
    CHECK_U64(s->n_flows, 2);
    CHECK_U64(s->n_counters, 1);
    CHECK_U64(s->n_meta_events, 6);
    CHECK_U64(s->n_unknown_ph, 1);
    CHECK(strcmp(s->first_unknown_ph, "B") == 0);
    CHECK_U64(s->first_unknown_index, 26);
    CHECK_U64(s->n_other_x, 1);
    CHECK_U64(s->n_tracks, 2);
    for (size_t i = 0; i < s->n_tracks; i++) {
        const rpt_track *t = &s->tracks[i];
        CHECK(t->name != NULL);
        if (t->pid == 1) {
            CHECK(!t->is_gpu && t->max_depth == 1 && strcmp(t->name, "main") == 0);
        } else {
            CHECK(t->is_gpu && t->max_depth == 0 && t->tid == 1);
        }
    }
    int64_t t0 = 0, t1 = 0;
    CHECK(rpt_pick_token(s, &t0, &t1) == 0);
    CHECK_U64(t0, 1000000);
    CHECK_U64(t1, 3000000);

    /* The text output, into memory. */
    char *text = NULL;
    size_t text_len = 0;
    FILE *m = open_memstream(&text, &text_len);
    CHECK(m != NULL && rpt_print(s, "x.json", m) == 0);
    if (m != NULL) {
        fclose(m);
        /* the median (the lower of two) and the largest, in us */
        CHECK(strstr(text, "  attention                         0.780      0.390   54.2%         "
                           "1.00    390.062    380.001    400.123\n") != NULL);
        CHECK(strstr(text, "WARNING: 5 events were dropped") != NULL);
        CHECK(strstr(text, "tokens        2 (token events)") != NULL);
        free(text);
    }

    /* The SVG: well-formed, names in it, escaped. */
    const char *svg = path_of(tmp_dir, "two_tokens.svg");
    remove(svg);
    CHECK(rpt_svg_file(s, "two <tokens> & more", svg, err, sizeof err) == 0);
    size_t n = 0;
    char *x = read_all(svg, &n);
    CHECK(x != NULL);
    if (x != NULL) {
        CHECK(xml_check(x, n) == 0);
        CHECK(strstr(x, ">attention<") != NULL);
        CHECK(strstr(x, "mlp_down") != NULL);
        CHECK(strstr(x, "norm") != NULL);
        CHECK(strstr(x, "record") != NULL);
        CHECK(strstr(x, "Test GPU &lt;&amp;&gt;") != NULL);
        CHECK(strstr(x, "two &lt;tokens&gt; &amp; more") != NULL);
        CHECK(strstr(x, "WARNING") != NULL);
        free(x);
    }

    /* Through the tools' one writer: a symlink is followed and stays a link,
     * the file it names gets the SVG. */
    const char *target = path_of(tmp_dir, "svg_target.svg");
    const char *link = path_of(tmp_dir, "svg_link.svg");
    remove(target);
    remove(link);
    CHECK(symlink("svg_target.svg", link) == 0);
    CHECK(rpt_svg_file(s, "linked", link, err, sizeof err) == 0);
    struct stat ls;
    CHECK(lstat(link, &ls) == 0 && S_ISLNK(ls.st_mode));
    size_t tn = 0;
    char *tx = read_all(target, &tn);
    CHECK(tx != NULL && strstr(tx, "vkprof report: linked<") != NULL);
    free(tx);
    remove(target);
    remove(link);

    /* Unwritable paths fail with a message and leave nothing behind. */
    err[0] = '\0';
    CHECK(rpt_svg_file(s, "t", "/nonexistent-vkprof-dir/x.svg", err, sizeof err) != 0);
    CHECK(strstr(err, "cannot create") != NULL);
    err[0] = '\0';
    CHECK(rpt_svg_file(s, "t", tmp_dir, err, sizeof err) != 0); /* a directory */
    CHECK(err[0] != '\0');
    DIR *d = opendir(path_of(tmp_dir, "."));
    CHECK(d != NULL);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strstr(e->d_name, ".tmp.") != NULL) {
                fprintf(stderr, "left behind: %s\n", e->d_name);
                check_failures++;
            }
        }
        closedir(d);
    }
    rpt_free(s);
}

static void test_sampled(void)
{
    char err[512];
    rpt_summary *s = NULL;
    if (rpt_read_file(path_of(data_dir, "sampled.json"), 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "sampled.json: %s\n", err);
        check_failures++;
        return;
    }
    CHECK_U64(s->tokens, 4);
    CHECK(s->token_source == RPT_TOKENS_FROM_METADATA);
    CHECK_U64(s->gpu_tokens, 2); /* steps 0 and 2 carry GPU scopes */
    CHECK_U64(s->n_dup_meta, 1);
    const rpt_group *step = find(s->host, s->n_host, "step");
    const rpt_group *moe = find(s->host, s->n_host, "moe");
    const rpt_group *route = find(s->host, s->n_host, "route");
    CHECK(step != NULL && moe != NULL && route != NULL);
    if (step != NULL && moe != NULL && route != NULL) {
        CHECK_U64(step->self_ns, 350000);
        CHECK_U64(moe->self_ns, 40000);
        CHECK_U64(route->self_ns, 10000);
    }
    for (size_t i = 0; i < s->n_tracks; i++) {
        if (!s->tracks[i].is_gpu) {
            CHECK_U64(s->tracks[i].max_depth, 2);
            CHECK(strcmp(s->tracks[i].name, "main") == 0);
        }
    }
    int64_t t0, t1;
    CHECK(rpt_pick_token(s, &t0, &t1) == -1);
    CHECK_U64(t0, 0);
    CHECK_U64(t1, 400000);
    rpt_free(s);
}

/* ---- inputs from memory --------------------------------------------------------- */

static rpt_summary *parse_ok(const char *json)
{
    char err[512];
    rpt_summary *s = NULL;
    if (rpt_parse(json, strlen(json), &s, err, sizeof err) != 0) {
        fprintf(stderr, "unexpected error for %s: %s\n", json, err);
        check_failures++;
        return NULL;
    }
    return s;
}

static void expect_error(const char *json, size_t len, const char *want)
{
    char err[512] = "";
    rpt_summary *s = NULL;
    int rc = rpt_parse(json, len, &s, err, sizeof err);
    if (rc == 0 || s != NULL || strstr(err, want) == NULL) {
        fprintf(stderr, "input %.80s: got rc %d, error \"%s\"; expected \"%s\"\n", json, rc, err,
                want);
        check_failures++;
    }
    rpt_free(s);
}

#define BAD(json, want) expect_error(json, strlen(json), want)
#define EV(e) "{\"traceEvents\": [" e "]}"

static void test_errors(void)
{
    BAD("", "the file is empty");
    BAD(" \n\t ", "the file is empty");
    BAD("nope", "neither a JSON trace nor a Perfetto trace: byte 0x6e ('n') at line 1, column 1");
    BAD("{", "unexpected end of file");
    BAD("{\"traceEvents\": [", "unexpected end of file");
    BAD("{\"traceEvents\": [{\"ph\": \"X\"", "unexpected end of file at line 1, column 28 (the "
                                             "file ends there: truncated?) (at event #0)");
    BAD("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"abc", "unexpected end of file");
    BAD("{\"traceEvents\": {}}", "\"traceEvents\" is not an array");
    BAD("{\"traceEvents\": 3}", "\"traceEvents\" is not an array");
    BAD("{\"other\": 1}", "no \"traceEvents\" array");
    BAD("{}", "no \"traceEvents\" array");
    BAD("[] x", "unexpected data after the JSON value at line 1, column 4");
    BAD("{\"traceEvents\": []} {}", "unexpected data after the JSON value");
    BAD("{\"traceEvents\": [], \"traceEvents\": []}", "\"traceEvents\" twice");
    BAD("{\"traceEvents\": [], \"metadata\": {}, \"metadata\": {}}", "\"metadata\" twice");
    BAD("{\"traceEvents\": [], \"metadata\": {\"steps\": 1, \"steps\": 2}}",
        "metadata has the key \"steps\" twice");
    BAD("{\"traceEvents\": [], \"metadata\": []}", "\"metadata\" is not an object");
    BAD("{\"traceEvents\": [], \"metadata\": {\"steps\": -1}}",
        "metadata.steps is not a non-negative integer");
    BAD("{\"traceEvents\": [], \"metadata\": {\"steps\": 1.5}}",
        "metadata.steps is not a non-negative integer");
    BAD("{\"traceEvents\": [], \"metadata\": {\"dropped_events\": \"5\"}}",
        "metadata.dropped_events is not");
    BAD("{\"traceEvents\": [], \"metadata\": {\"device\": 7}}", "metadata.device is not a string");
    BAD("{\"traceEvents\": [], \"metadata\": {\"calibration\": {\"error_bound_ns\": -3}}}",
        "error_bound_ns");
    BAD("{\"traceEvents\": [], \"metadata\": {\"gpu_sampling\": 2}}",
        "metadata.gpu_sampling is not an object");
    BAD("{\"traceEvents\": [], \"metadata\": {\"steps\": 1e999}}", "metadata.steps");
    BAD("{\"traceEvents\" [] }", "expected ':'");
    BAD("{\"traceEvents\": [] \"x\": 1}", "expected ',' or '}'");
    BAD("{traceEvents: []}", "expected a key at line 1, column 2");
    BAD(EV("1"), "the event is not an object (at event #0)");
    BAD(EV("{\"ph\": \"C\"}, []"), "the event is not an object (at event #1)");
    BAD(EV("{\"ph\": \"C\"} {\"ph\": \"C\"}"), "expected ',' or ']' after the event");
    BAD(EV("{\"ph\": \"C\",}"), "invalid JSON at line 1, column 29 (at event #0)");
    BAD(EV("{\"name\": \"x\"}"), "\"ph\" is missing (at event #0)");
    BAD(EV("{\"ph\": 1}"), "\"ph\" is not a string (at event #0)");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"gpu\", \"ts\": 1, \"dur\": 1}"),
        "an X event without a \"name\" (at event #0)");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": 5, \"ts\": 1, \"dur\": 1}"),
        "\"name\" is not a string");
    BAD(EV("{\"ph\": \"X\", \"cat\": 3, \"name\": \"a\", \"ts\": 1, \"dur\": 1}"),
        "\"cat\" is not a string");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"dur\": 1}"),
        "\"ts\" is missing (at event #0)");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"ts\": 1}"), "\"dur\" is missing");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"ts\": null, \"dur\": 1}"),
        "\"ts\" is not a number");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": -1, \"dur\": 1}"),
        "\"ts\" is negative");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": 1, \"dur\": -0.001}"),
        "\"dur\" is negative");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": 1e999, \"dur\": 1}"),
        "\"ts\" is not finite");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": 1, \"dur\": 1e16}"),
        "\"dur\" is too large");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": NaN, \"dur\": 1}"),
        "invalid JSON");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": 1, \"dur\": 1, \"pid\": "
           "\"1\"}"),
        "\"pid\" is not an integer");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": 1, \"dur\": 1, \"tid\": "
           "0.5}"),
        "\"tid\" is not an integer");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": 1, \"dur\": 1, \"args\": "
           "4}"),
        "\"args\" is not an object");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"ts\": 1, \"dur\": 1, \"args\": "
           "{\"phase\": 4}}"),
        "\"args.phase\" is not a string");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": 1, \"dur\": 1, \"args\": "
           "{\"bucket\": []}}"),
        "\"args.bucket\" is not a string");
    BAD(EV("{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"ts\": 1, \"dur\": 1, \"args\": "
           "{\"step\": -2}}"),
        "\"args.step\" is not a non-negative integer");
    BAD(EV("{\"ph\": \"M\", \"name\": \"thread_name\", \"args\": {}}"),
        "thread_name without a string \"args.name\"");
    BAD(EV("{\"ph\": \"M\"}"), "an M event without a \"name\"");
    BAD(EV("{\"ph\": \"i\", \"cat\": \"step\", \"name\": \"token\"}"), "\"ts\" is missing");
    BAD(EV("{\"ph\": \"C\"}, {\"ph\": \"i\", \"cat\": \"step\", \"name\": \"token\", \"ts\": "
           "\"x\"}"),
        "\"ts\" is not a number (at event #1)");
    /* flows: the id a number or a string, a time, a track */
    BAD(EV("{\"ph\": \"s\", \"id\": true, \"ts\": 1}"),
        "\"id\" is neither a number nor a string (at event #0)");
    BAD(EV("{\"ph\": \"C\"}, {\"ph\": \"f\", \"bp\": \"e\", \"id\": [1], \"ts\": 1}"),
        "\"id\" is neither a number nor a string (at event #1)");
    BAD(EV("{\"ph\": \"f\", \"id\": 1}"), "\"ts\" is missing (at event #0)");
    BAD(EV("{\"ph\": \"s\", \"id\": \"a\", \"ts\": -1}"), "\"ts\" is negative (at event #0)");
    BAD(EV("{\"ph\": \"s\", \"id\": 1, \"ts\": 1, \"tid\": \"1\"}"), "\"tid\" is not an integer");

    /* nesting */
    char deep[600];
    size_t k = 0;
    k += (size_t)snprintf(deep, sizeof deep, "{\"traceEvents\": [{\"ph\": \"C\", \"args\": ");
    for (int i = 0; i < 100; i++) {
        deep[k++] = '[';
    }
    for (int i = 0; i < 100; i++) {
        deep[k++] = ']';
    }
    k += (size_t)snprintf(deep + k, sizeof deep - k, "}]}");
    expect_error(deep, k, "nested more than 64 levels deep");

    /* not NUL-terminated: the reader must stop at len */
    const char *cut = "{\"traceEvents\": []}garbage";
    rpt_summary *s = NULL;
    char err[256];
    CHECK(rpt_parse(cut, 19, &s, err, sizeof err) == 0);
    rpt_free(s);
    expect_error(cut, 18, "unexpected end of file");

    /* durations that add past 2^64 ns */
    char big[8192];
    k = (size_t)snprintf(big, sizeof big, "{\"traceEvents\": [");
    for (int i = 0; i < 20; i++) {
        k += (size_t)snprintf(
            big + k, sizeof big - k,
            "%s{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"ts\": 0, \"dur\": 1e15}",
            i ? "," : "");
    }
    k += (size_t)snprintf(big + k, sizeof big - k, "]}");
    expect_error(big, k, "add up to more than 2^64 ns (at event #18)");

    /* too many distinct phases */
    size_t cap = 200 * 1100;
    char *many = malloc(cap);
    k = (size_t)snprintf(many, cap, "{\"traceEvents\": [");
    for (int i = 0; i < 1100; i++) {
        k += (size_t)snprintf(
            many + k, cap - k,
            "%s{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"p%d\", \"ts\": 0, \"dur\": 1}",
            i ? "," : "", i);
    }
    k += (size_t)snprintf(many + k, cap - k, "]}");
    expect_error(many, k, "more than 1024 distinct GPU phases (at event #1024)");
    free(many);
}

static void test_accepted(void)
{
    /* an empty trace, the array form, a BOM */
    rpt_summary *s = parse_ok("{\"traceEvents\": []}");
    if (s != NULL) {
        CHECK_U64(s->tokens, 1);
        CHECK(s->token_source == RPT_TOKENS_DEFAULT);
        CHECK_U64(s->n_gpu + s->n_host, 0);
        FILE *f = fopen("/dev/null", "w");
        CHECK(f != NULL && rpt_svg(s, "empty", f) == 0 && rpt_print(s, "e", f) == 0);
        if (f != NULL) {
            fclose(f);
        }
        rpt_free(s);
    }
    s = parse_ok("\xef\xbb\xbf[{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"norm\", \"ts\": "
                 "0.0004, \"dur\": 0.0015}]");
    if (s != NULL) {
        CHECK_U64(s->n_gpu, 1);
        CHECK_U64(s->gpu[0].total_ns, 2); /* 1.5 ns rounds to 2 */
        CHECK_U64(s->slices[0].ts_ns, 0);
        rpt_free(s);
    }
    /* unknown ph and categories are skipped and counted; names are cleaned */
    s = parse_ok(EV("{\"ph\": \"Q\"}, {\"ph\": \"E\"}, {\"ph\": \"X\", \"cat\": \"x\"},"
                    "{\"ph\": \"i\", \"name\": \"other\", \"ts\": 1},"
                    "{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"bad\\u0001\\u0007name\xff\", "
                    "\"ts\": 1, \"dur\": 2}"));
    if (s != NULL) {
        CHECK_U64(s->n_unknown_ph, 2);
        CHECK(strcmp(s->first_unknown_ph, "Q") == 0);
        CHECK_U64(s->first_unknown_index, 0);
        CHECK_U64(s->n_other_x, 1);
        CHECK_U64(s->n_other_instants, 1);
        CHECK_U64(s->n_gpu, 1);
        CHECK(s->n_gpu == 1 && strcmp(s->gpu[0].name, "bad??name?") == 0);
        rpt_free(s);
    }
    /* flows without an "id" (other tools' bind_id) are counted, not kept;
     * numbers by value (1 and 1.0 alike, others apart), strings apart from
     * numbers */
    s = parse_ok(
        EV("{\"ph\": \"s\", \"bind_id\": 1}, {\"ph\": \"f\"},"
           "{\"ph\": \"s\", \"id\": 1, \"ts\": 1}, {\"ph\": \"f\", \"id\": 1.0, \"ts\": 2},"
           "{\"ph\": \"f\", \"id\": 1.5, \"ts\": 2}, {\"ph\": \"f\", \"id\": -1, \"ts\": 2},"
           "{\"ph\": \"f\", \"id\": \"1\", \"ts\": 2}"));
    if (s != NULL) {
        CHECK_U64(s->n_flows, 2);
        CHECK_U64(s->n_flows_read, 5);
        if (s->n_flows_read == 5) {
            const rpt_flow *fl = s->flows;
            CHECK(fl[0].start == 1 && fl[1].start == 0 && fl[0].id == fl[1].id);
            CHECK(fl[0].id == 1 && fl[0].id_str == 0 && fl[1].ts_ns == 2000);
            CHECK(fl[2].id != fl[0].id && fl[3].id != fl[0].id && fl[2].id != fl[3].id);
            CHECK(fl[4].id_str == 1 && fl[2].id_str == 0 && fl[3].id_str == 0);
        }
        rpt_free(s);
    }
    /* a long name is cut on a character boundary */
    char json[1024];
    char name[400];
    size_t k = 0;
    for (int i = 0; i < 100; i++) {
        memcpy(name + k, "\xc3\xa9", 2); /* e-acute */
        k += 2;
    }
    name[k] = '\0';
    snprintf(json, sizeof json,
             EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"%s\", \"ts\": 1, \"dur\": 2}"),
             name);
    s = parse_ok(json);
    if (s != NULL) {
        CHECK_U64(strlen(s->host[0].name), RPT_MAX_NAME);
        rpt_free(s);
    }
    /* ts/dur at the limit */
    s = parse_ok(
        EV("{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"ts\": 1e15, \"dur\": 1e15}"));
    if (s != NULL) {
        CHECK_U64(s->host[0].total_ns, 1000000000000000000ull);
        FILE *f = fopen("/dev/null", "w");
        CHECK(f != NULL && rpt_svg(s, "big", f) == 0);
        if (f != NULL) {
            fclose(f);
        }
        rpt_free(s);
    }
}

/* ---- keys given twice, repeated slices ------------------------------------------ */

/* rpt_walk (the reader of `vkprof merge`) refuses what rpt_parse refuses. */
static void expect_walk_error(const char *json, const char *want)
{
    char err[512] = "";
    int rc = rpt_walk(json, strlen(json), NULL, err, sizeof err);
    if (rc == 0 || strstr(err, want) == NULL) {
        fprintf(stderr, "rpt_walk on %.80s: rc %d, error \"%s\"; expected \"%s\"\n", json, rc, err,
                want);
        check_failures++;
    }
}

#define SLICE(ts, extra)                                                                           \
    "{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"pid\": 2, \"tid\": 1, \"ts\": " ts       \
    ", \"dur\": 2" extra "}"

static void test_duplicate_keys(void)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {EV(SLICE("1", ", \"ts\": 2")), "the event has the key \"ts\" twice (at event #0, line 1)"},
        {EV(SLICE("1", ", \"args\": {\"step\": 1}, \"args\": {\"step\": 2}")),
         "the event has the key \"args\" twice (at event #0, line 1)"},
        {EV(SLICE("1", ", \"args\": {\"step\": 1, \"phase\": \"a\", \"step\": 2}")),
         "the event's \"args\" has the key \"step\" twice (at event #0, line 1)"},
        {EV(SLICE("1", ", \"args\": {\"d\": {\"x\": 1, \"x\": 1}}")),
         "the event's \"args.d\" has the key \"x\" twice"},
        {EV(SLICE("1", ", \"args\": {\"l\": [1, {\"y\": 1}, {\"x\": 1, \"x\": 1}]}")),
         "the event's \"args.l[2]\" has the key \"x\" twice"},
        /* the third event, on the fourth line; any event, whatever its ph */
        {"{\"traceEvents\": [\n" SLICE("1", "") ",\n{\"ph\": \"C\"},\n{\"ph\": \"C\", \"name\": "
                                                "\"c\", \"name\": \"c\"}]}",
         "the event has the key \"name\" twice (at event #2, line 4)"},
        {EV("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 1, \"args\": "
            "{\"name\": \"a\", \"name\": \"b\"}}"),
         "the event's \"args\" has the key \"name\" twice (at event #0"},
        /* the metadata: every key, not only those the report reads */
        {"{\"traceEvents\": [], \"metadata\": {\"foo\": 1, \"foo\": 2}}",
         "metadata has the key \"foo\" twice"},
        {"{\"traceEvents\": [], \"metadata\": {\"gpu_sampling\": {\"samples\": 1, \"samples\": "
         "2}}}",
         "metadata.gpu_sampling has the key \"samples\" twice"},
        {"{\"traceEvents\": [], \"metadata\": {\"gpu_sampling\": {\"lost\": {\"ring_full\": 1, "
         "\"ring_full\": 1}}}}",
         "metadata.gpu_sampling.lost has the key \"ring_full\" twice"},
        {"{\"traceEvents\": [], \"metadata\": {\"merge\": {\"inputs\": [{\"name\": \"a\", "
         "\"host_pid\": 1, \"gpu_pid\": 2}, {\"name\": \"b\", \"host_pid\": 3, \"host_pid\": 5, "
         "\"gpu_pid\": 4}]}}}",
         "metadata.merge.inputs[1] has the key \"host_pid\" twice"},
        /* a key whose bytes need cleaning is named cleaned */
        {EV(SLICE("1", ", \"args\": {\"k\\u0001\": 1, \"k\\u0001\": 1}")),
         "has the key \"k?\" twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_error(cases[i].json, strlen(cases[i].json), cases[i].want);
        expect_walk_error(cases[i].json, cases[i].want);
    }
    /* objects of more than 16 members are sorted: the same answer */
    char big[4096], meta[4096];
    size_t k = (size_t)snprintf(big, sizeof big, EV(SLICE("1", ", \"args\": {")));
    k -= 3; /* before "}]}" */
    size_t m = (size_t)snprintf(meta, sizeof meta, "{\"traceEvents\": [], \"metadata\": {");
    for (int i = 0; i < 40; i++) {
        k += (size_t)snprintf(big + k, sizeof big - k, "%s\"k%d\": %d", i ? ", " : "", i, i);
        m += (size_t)snprintf(meta + m, sizeof meta - m, "%s\"k%d\": %d", i ? ", " : "", i, i);
    }
    char *big_ok = malloc(k + 8), *meta_ok = malloc(m + 8);
    CHECK(big_ok != NULL && meta_ok != NULL);
    if (big_ok != NULL && meta_ok != NULL) {
        snprintf(big_ok, k + 8, "%.*s}}]}", (int)k, big);
        snprintf(meta_ok, m + 8, "%.*s}}", (int)m, meta);
        rpt_summary *s = parse_ok(big_ok);
        rpt_free(s);
        s = parse_ok(meta_ok);
        rpt_free(s);
        snprintf(big + k, sizeof big - k, ", \"k17\": 0}}]}");
        expect_error(big, strlen(big), "the event's \"args\" has the key \"k17\" twice");
        snprintf(meta + m, sizeof meta - m, ", \"k0\": 0}}");
        expect_error(meta, strlen(meta), "metadata has the key \"k0\" twice");
    }
    free(big_ok);
    free(meta_ok);
    /* the same key in two objects, or as a value, is no duplicate */
    rpt_summary *s = parse_ok(EV(SLICE("1", ", \"args\": {\"ts\": \"ts\", \"d\": {\"ts\": 1}}")));
    rpt_free(s);
}

static void expect_repeats(const char *json, uint64_t n, uint64_t first, uint64_t of)
{
    rpt_summary *s = parse_ok(json);
    if (s == NULL) {
        return;
    }
    if (s->n_dup_events != n || (n > 0 && (s->first_dup_index != first || s->first_dup_of != of))) {
        fprintf(stderr,
                "%.200s: %llu repeated (the first #%llu of #%llu); expected %llu (#%llu of "
                "#%llu)\n",
                json, (unsigned long long)s->n_dup_events, (unsigned long long)s->first_dup_index,
                (unsigned long long)s->first_dup_of, (unsigned long long)n,
                (unsigned long long)first, (unsigned long long)of);
        check_failures++;
    }
    rpt_free(s);
}

static void test_repeated_slices(void)
{
    const char *two = EV(SLICE("1", ", \"args\": {\"phase\": \"a\", \"step\": 0}") ",\n" SLICE(
        "1", ", \"args\": {\"phase\": \"a\", \"step\": 0}"));
    expect_repeats(two, 1, 1, 0);
    /* the same in another order, spelling and place in the file */
    expect_repeats(EV(SLICE("1", ", \"args\": {\"step\": 0, \"phase\": \"a\"}") ",\n" SLICE(
                       "5", "") ",\n{\"ph\": \"C\"},\n"
                                "{\"args\": {\"phase\": \"a\", \"step\": 0.0}, \"dur\": 2.0, "
                                "\"ts\": 1.0, \"tid\": 1, \"pid\": 2, \"name\": \"a\", \"cat\": "
                                "\"gpu\", \"ph\": \"X\"}"),
                   1, 3, 0);
    /* three copies: two repeats; the first repeat is the earliest in the file */
    expect_repeats(EV(SLICE("1", "") "," SLICE("1", "") "," SLICE("1", "")), 2, 1, 0);
    /* a difference anywhere is another slice */
    expect_repeats(EV(SLICE("1", "") "," SLICE("1.001", "")), 0, 0, 0);
    expect_repeats(
        EV(SLICE("1", ", \"args\": {\"step\": 0}") "," SLICE("1", ", \"args\": {\"step\": 1}")), 0,
        0, 0);
    expect_repeats(EV(SLICE("1", ", \"args\": {\"d\": {\"x\": [1, 2]}}") "," SLICE(
                       "1", ", \"args\": {\"d\": {\"x\": [2, 1]}}")),
                   0, 0, 0);
    expect_repeats(EV(SLICE("1", ", \"args\": {}") "," SLICE("1", "")), 0, 0, 0);
    expect_repeats(EV(SLICE("1", "") ",{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"b\", \"pid\": "
                                     "2, \"tid\": 1, \"ts\": 1, \"dur\": 2}"),
                   0, 0, 0);
    expect_repeats(EV(SLICE("1", "") ",{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"pid\": "
                                     "2, \"tid\": 2, \"ts\": 1, \"dur\": 2}"),
                   0, 0, 0);
    expect_repeats(
        EV(SLICE("1", "") ",{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"a\", \"pid\": "
                          "2, \"tid\": 1, \"ts\": 1, \"dur\": 2}"),
        0, 0, 0);
    /* X events the report skips (another cat) are not counted */
    expect_repeats(EV("{\"ph\": \"X\", \"cat\": \"x\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},"
                      "{\"ph\": \"X\", \"cat\": \"x\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}"),
                   0, 0, 0);
    /* many slices at one time (a coarse clock): only the equal ones count */
    size_t cap = 1 << 20, k = 0;
    char *many = malloc(cap);
    CHECK(many != NULL);
    if (many != NULL) {
        k = (size_t)snprintf(many, cap, "{\"traceEvents\": [");
        for (int i = 0; i < 3000; i++) {
            k += (size_t)snprintf(many + k, cap - k,
                                  "%s{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", "
                                  "\"ts\": 7, \"dur\": 0, \"args\": {\"i\": %d}}",
                                  i ? "," : "", i == 2500 ? 17 : i);
        }
        snprintf(many + k, cap - k, "]}");
        expect_repeats(many, 1, 2500, 17);
        free(many);
    }
    /* the warning: in the text and in the SVG */
    rpt_summary *s = parse_ok(two);
    if (s != NULL) {
        char text[8192] = "";
        FILE *f = fmemopen(text, sizeof text - 1, "w");
        CHECK(f != NULL && rpt_print(s, "t", f) == 0);
        if (f != NULL) {
            fclose(f);
        }
        CHECK(strstr(text,
                     "WARNING: 1 slice(s) repeat an earlier one exactly (the same pid, tid, "
                     "ts, dur, name, cat and args; the first: event #1 repeats event #0)") != NULL);
        CHECK(s->gpu[0].calls == 2); /* counted as written */
        char *svg = NULL;
        size_t n = 0;
        f = open_memstream(&svg, &n);
        CHECK(f != NULL && rpt_svg(s, "t", f) == 0);
        if (f != NULL) {
            fclose(f);
            CHECK(svg != NULL && xml_check(svg, n) == 0 &&
                  strstr(svg, "WARNING: 1 slice(s) repeat") != NULL);
        }
        free(svg);
        rpt_free(s);
    }
    s = parse_ok(EV(SLICE("1", "")));
    if (s != NULL) {
        char warn[512];
        CHECK(rpt_repeat_warning(s, warn, sizeof warn) == 0 && warn[0] == '\0');
        rpt_free(s);
    }
}

/* ---- which format a file is ------------------------------------------------------ */

static void write_file(const char *path, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f != NULL) {
        CHECK(fwrite(bytes, 1, n, f) == n);
        fclose(f);
    }
}

static void expect_read(const char *name, const char *bytes, size_t n, const char *want)
{
    const char *path = path_of(tmp_dir, name);
    write_file(path, bytes, n);
    char err[512] = "";
    rpt_summary *s = NULL;
    int rc = rpt_read_file(path, 0, &s, err, sizeof err);
    bool ok = want == NULL ? rc == 0 : rc != 0 && strstr(err, want) != NULL;
    if (!ok) {
        fprintf(stderr, "%s: rc %d, error \"%s\"; expected %s%s\n", name, rc, err,
                want ? "an error with " : "a trace", want ? want : "");
        check_failures++;
    }
    rpt_free(s);
}

static void test_format_detection(void)
{
    static const struct {
        const char *name, *bytes;
        int len; /* -1: strlen */
        int want;
    } cases[] = {
        {NULL, "{\"traceEvents\": []}", -1, RPT_FORMAT_JSON},
        {"x.pftrace", "{\"traceEvents\": []}", -1, RPT_FORMAT_JSON},
        {"x.pftrace", "\n{\"traceEvents\": []}", -1, RPT_FORMAT_JSON},
        {NULL, "\n[\n]", -1, RPT_FORMAT_JSON},
        {NULL, "\xef\xbb\xbf [", -1, RPT_FORMAT_JSON},
        {NULL, "", 0, RPT_FORMAT_JSON},
        {NULL, " \n\t", -1, RPT_FORMAT_JSON},
        {NULL, "\n", -1, RPT_FORMAT_JSON},
        {"t.pftrace", "\n", -1, RPT_FORMAT_PFTRACE},
        {"t.pftrace", " \n", -1, RPT_FORMAT_JSON},
        {NULL, "\n{", -1, RPT_FORMAT_JSON},
        {"t.pftrace", "\n{", -1, RPT_FORMAT_PFTRACE},
        {NULL, "\n{P\x01", -1, RPT_FORMAT_PFTRACE}, /* a packet of 123 bytes, cut */
        {NULL, "\n[P\x01", -1, RPT_FORMAT_PFTRACE},
        {NULL, "\n\x02P\x01", -1, RPT_FORMAT_PFTRACE},     /* framed to the last byte */
        {NULL, "\n\x05P\x01", -1, RPT_FORMAT_PFTRACE},     /* cut */
        {NULL, "\n\x02P\x01\x0b", -1, RPT_FORMAT_PFTRACE}, /* damaged after the first */
        {NULL, "nope", -1, RPT_FORMAT_NONE},
        {"-", "nope", -1, RPT_FORMAT_NONE},
        {"x.json", "\x89PNG", -1, RPT_FORMAT_NONE},
        {"x.pftrace", "nope", -1, RPT_FORMAT_PFTRACE},
        {"X.PFTRACE", "nope", -1, RPT_FORMAT_PFTRACE},
        {"x.perfetto-trace", "nope", -1, RPT_FORMAT_PFTRACE},
        {".pftrace.json", "nope", -1, RPT_FORMAT_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = cases[i].len < 0 ? strlen(cases[i].bytes) : (size_t)cases[i].len;
        int got = rpt_trace_format(cases[i].name, cases[i].bytes, n);
        if (got != cases[i].want) {
            fprintf(stderr, "rpt_trace_format(%s, case %zu): %d, expected %d\n",
                    cases[i].name ? cases[i].name : "NULL", i, got, cases[i].want);
            check_failures++;
        }
    }

    /* through the loader: what each file is said to be */
    const char *json = "{\"traceEvents\": [" SLICE("1", "") "]}";
    expect_read("json_named.pftrace", json, strlen(json), NULL);
    expect_read("json_named.perfetto-trace", json, strlen(json), NULL);
    expect_read("bom.pftrace", "\xef\xbb\xbf{\"traceEvents\": []}", 22, NULL);
    static const char garbage[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\x01\x02\xff\xfe";
    expect_read("garbage.bin", garbage, sizeof garbage - 1,
                "neither a JSON trace nor a Perfetto trace: byte 0x89 at line 1, column 1");
    expect_read("garbage.json", "\x01\x02", 2, "neither a JSON trace nor a Perfetto trace");
    expect_read("garbage.pftrace", garbage, sizeof garbage - 1,
                "Perfetto trace: byte 0x89 is not a packet's tag (a Trace holds TracePackets: "
                "field 1, tag 0x0a) (at packet #0, byte 0)");
    expect_read("cut.bin", "\n\x7fP\x01", 4,
                "Perfetto trace: the packet is 127 bytes long but the file ends 2 bytes after its "
                "header: truncated or damaged (at packet #0, byte 0)");
    expect_read("cut2.bin", "\n\x02P\x01\n", 5,
                "Perfetto trace: the file ends inside a packet's length: truncated? (at packet #1, "
                "byte 4)");
    expect_read("bad2.bin", "\n\x02P\x01\x0b", 5,
                "Perfetto trace: byte 0x0b is not a packet's tag (a Trace holds TracePackets: "
                "field 1, tag 0x0a); the packets before it are damaged or were cut short (at "
                "packet #1, byte 4)");
    expect_read("nl.pftrace", "\n", 1, "Perfetto trace: the file ends inside a packet's length");
    /* framed, but no vkprof trace: the converter's message, not the JSON reader's */
    expect_read("framed.bin", "\n\x02P\x01", 4, "Perfetto trace: no \"vkprof metadata\" event");
    /* random bytes: whatever they are said to be, never a JSON syntax error
     * for bytes that do not start like JSON */
    unsigned seed = 4242;
    char rnd[512];
    for (int t = 0; t < 200; t++) {
        for (size_t i = 0; i < sizeof rnd; i++) {
            seed = seed * 1103515245u + 12345u;
            rnd[i] = (char)(seed >> 16);
        }
        if (t % 2 == 0) {
            rnd[0] = '\n'; /* a packet's tag */
        }
        const char *name = t % 3 == 0 ? "rnd.pftrace" : "rnd.bin";
        const char *path = path_of(tmp_dir, name);
        write_file(path, rnd, sizeof rnd);
        char err[512] = "";
        rpt_summary *s = NULL;
        int fmt = rpt_trace_format(name, rnd, sizeof rnd);
        CHECK(rpt_read_file(path, 0, &s, err, sizeof err) != 0 && s == NULL);
        size_t i = 0;
        while (i < sizeof rnd && strchr(" \t\r\n", rnd[i]) != NULL && rnd[i] != '\0') {
            i++;
        }
        bool bracket = i < sizeof rnd && (rnd[i] == '{' || rnd[i] == '[');
        if (fmt == RPT_FORMAT_PFTRACE) {
            CHECK(strncmp(err, "Perfetto trace: ", 16) == 0);
        } else if (fmt == RPT_FORMAT_NONE) {
            CHECK(strncmp(err, "neither a JSON trace nor a Perfetto trace", 41) == 0);
        } else {
            CHECK(bracket); /* JSON only when it starts like JSON */
        }
        if ((rnd[0] == '\n' || t % 3 == 0) && !bracket) {
            CHECK(fmt == RPT_FORMAT_PFTRACE);
        }
    }

    /* the prefix of errors in a converted trace's JSON text */
    char err[64] = "\"ts\" is too large (at event #3)";
    rpt_pftrace_json_error(err, sizeof err); /* cut to fit */
    CHECK(strcmp(err, "Perfetto trace, as converted to JSON: \"ts\" is too large (at eve") == 0);
    char err2[256] = "x";
    rpt_pftrace_json_error(err2, sizeof err2);
    CHECK(strcmp(err2, "Perfetto trace, as converted to JSON: x") == 0);
    /* bytes framed as a Perfetto trace, handed to the JSON reader itself */
    const char framed[] = "\n\x02P\x01";
    expect_error(framed, 4, "a Perfetto trace (protobuf), not JSON text");
    expect_error("\x01\x02", 2, "neither a JSON trace nor a Perfetto trace: byte 0x01 at line 1");
}

static void test_files(void)
{
    static const struct {
        const char *file, *want;
    } cases[] = {
        {"bad/empty.json", "the file is empty"},
        {"bad/not_json.json", "neither a JSON trace nor a Perfetto trace"},
        {"bad/truncated.json", "truncated?"},
        {"bad/wrong_types.json", "\"ts\" is not a number (at event #1)"},
        {"bad/events_not_array.json", "\"traceEvents\" is not an array"},
        {"bad/negative_dur.json", "\"dur\" is negative (at event #0)"},
        {"bad/duplicate_metadata.json", "\"metadata\" twice"},
        {"no-such-file.json", "cannot open"},
        {"bad", "is a directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512] = "";
        rpt_summary *s = NULL;
        int rc = rpt_read_file(path_of(data_dir, cases[i].file), 0, &s, err, sizeof err);
        if (rc == 0 || s != NULL || strstr(err, cases[i].want) == NULL) {
            fprintf(stderr, "%s: rc %d, error \"%s\"; expected \"%s\"\n", cases[i].file, rc, err,
                    cases[i].want);
            check_failures++;
        }
        rpt_free(s);
    }
    char err[512] = "";
    rpt_summary *s = NULL;
    CHECK(rpt_read_file(path_of(data_dir, "two_tokens.json"), 100, &s, err, sizeof err) != 0);
    CHECK(strstr(err, "too large") != NULL);
}

/* The shared format header (src/export/trace_format.h): the format version
 * and each lost reason, read by its key and named by its text. */
static void test_format(void)
{
    char json[1024], out[2048];
    static const struct {
        const char *key, *text;
    } why[] = {
#define WHY_(id, key, text) {key, text},
        VKPROF_TF_LOST_REASONS(WHY_)
#undef WHY_
    };
    CHECK_U64(sizeof why / sizeof why[0], VKPROF_TF_LOST_COUNT);
    for (unsigned fmt = VKPROF_TF_VERSION; fmt <= VKPROF_TF_VERSION + 1; fmt++) {
        snprintf(json, sizeof json,
                 "{\"traceEvents\": [], \"metadata\": {\"trace_format\": %u, "
                 "\"dropped_events\": 0}}",
                 fmt);
        rpt_summary *s = parse_ok(json);
        if (s == NULL) {
            continue;
        }
        CHECK(s->has_format && s->format == fmt);
        FILE *f = fmemopen(out, sizeof out, "w");
        CHECK(f != NULL && rpt_print(s, "t", f) == 0);
        if (f != NULL) {
            fclose(f);
            /* a newer format than the reader's is said; the current one is not */
            CHECK((strstr(out, "newer than this reader's") != NULL) == (fmt > VKPROF_TF_VERSION));
        }
        rpt_free(s);
    }
    for (size_t i = 0; i < VKPROF_TF_LOST_COUNT; i++) {
        snprintf(json, sizeof json,
                 "{\"traceEvents\": [], \"metadata\": {\"gpu_sampling\": {\"samples\": 10, "
                 "\"lost\": {\"%s\": %zu}}}}",
                 why[i].key, i + 1);
        rpt_summary *s = parse_ok(json);
        if (s == NULL) {
            continue;
        }
        for (size_t k = 0; k < VKPROF_TF_LOST_COUNT; k++) {
            CHECK_U64(s->lost[k], k == i ? i + 1 : 0);
        }
        char warn[256], want[64];
        rpt_loss_warning(s, warn, sizeof warn);
        snprintf(want, sizeof want, "(%s %zu)", why[i].text, i + 1);
        if (strstr(warn, want) == NULL) {
            fprintf(stderr, "lost %s: warning \"%s\" lacks \"%s\"\n", why[i].key, warn, want);
            check_failures++;
        }
        rpt_free(s);
    }
    BAD("{\"traceEvents\": [], \"metadata\": {\"trace_format\": \"1\"}}",
        "metadata.trace_format is not a non-negative integer");
}

/* ---- the SVG's layout (issue 25): text kept on the page, legend entries apart,
 * one colour per name ----------------------------------------------------------- */

/* The estimate the layout is checked with: characters (UTF-8 code points,
 * an entity one character) x font size x 0.6 (docs/report.md). */
#define EST_EM 0.6

/* The value of attribute `name` in the tag that starts at tag (up to its
 * '>'), or NULL. */
static const char *svg_attr(const char *tag, const char *name, char *buf, size_t size)
{
    const char *end = strchr(tag, '>');
    char pat[48];
    snprintf(pat, sizeof pat, " %s=\"", name);
    const char *a = strstr(tag, pat);
    if (a == NULL || end == NULL || a > end) {
        return NULL;
    }
    a += strlen(pat);
    const char *q = strchr(a, '"');
    if (q == NULL || (size_t)(q - a) >= size) {
        return NULL;
    }
    memcpy(buf, a, (size_t)(q - a));
    buf[q - a] = '\0';
    return buf;
}

static double svg_num(const char *tag, const char *name)
{
    char b[64];
    return svg_attr(tag, name, b, sizeof b) != NULL ? atof(b) : -1e9;
}

/* The font size of a class, from the SVG's own <style> (".lbl{font-size:12px"). */
static double svg_font(const char *svg, const char *cls)
{
    char pat[48];
    snprintf(pat, sizeof pat, ".%s{font-size:", cls);
    const char *f = strstr(svg, pat);
    return f != NULL ? atof(f + strlen(pat)) : -1;
}

/* A <text>'s characters, up to its </text> or a <title> inside it (not drawn). */
static size_t svg_text_chars(const char *tag, char *text, size_t size)
{
    const char *c = strchr(tag, '>');
    size_t n = 0, k = 0;
    for (c = c != NULL ? c + 1 : tag; *c != '\0' && *c != '<'; c++) {
        if (((unsigned char)*c & 0xc0) == 0x80) {
            continue;
        }
        if (*c == '&') {
            const char *e = strchr(c, ';');
            c = e != NULL ? e : c;
        }
        n++;
        if (k + 1 < size) {
            text[k++] = *c == '&' || *c == ';' ? '?' : *c;
        }
    }
    if (size > 0) {
        text[k] = '\0';
    }
    return n;
}

/* Where a <text> starts and ends on the x axis, by the estimate. */
static int svg_text_span(const char *svg, const char *tag, double *x0, double *x1, char *text,
                         size_t size)
{
    char cls[32], anchor[16];
    if (svg_attr(tag, "class", cls, sizeof cls) == NULL) {
        return -1;
    }
    char *sp = strchr(cls, ' ');
    if (sp != NULL) {
        *sp = '\0';
    }
    double px = svg_font(svg, cls), x = svg_num(tag, "x");
    double w = (double)svg_text_chars(tag, text, size) * px * EST_EM;
    const char *a = svg_attr(tag, "text-anchor", anchor, sizeof anchor);
    double start = a == NULL || strcmp(a, "start") == 0 ? x
                   : strcmp(a, "end") == 0              ? x - w
                                                        : x - w / 2;
    *x0 = start;
    *x1 = start + w;
    return px > 0 ? 0 : -1;
}

/* Every <text> inside [0, width]; the legend's entries (a swatch and its
 * text) overlap none of the others. Returns the number of legend entries. */
static size_t check_svg_layout(const char *svg)
{
    const char *root = strstr(svg, "<svg ");
    double width = root != NULL ? svg_num(root, "width") : -1;
    CHECK(width > 0);
    size_t texts = 0, bad = 0;
    for (const char *t = strstr(svg, "<text "); t != NULL; t = strstr(t + 1, "<text ")) {
        double x0, x1;
        char text[256];
        CHECK(svg_text_span(svg, t, &x0, &x1, text, sizeof text) == 0);
        texts++;
        if (x0 < -0.5 || x1 > width + 0.5) {
            if (bad++ < 5) {
                fprintf(stderr, "text outside the page (0..%.0f): %.1f..%.1f \"%s\"\n", width, x0,
                        x1, text);
            }
        }
    }
    CHECK(texts > 0);
    CHECK(bad == 0);
    /* the legend: <g class="legend"><rect .../><text ...>...</text></g> */
    enum { MAX_ENTRIES = 64 };
    double box[MAX_ENTRIES][4];
    size_t n = 0;
    for (const char *g = strstr(svg, "<g class=\"legend\">"); g != NULL && n < MAX_ENTRIES;
         g = strstr(g + 1, "<g class=\"legend\">")) {
        const char *r = strstr(g, "<rect "), *t = strstr(g, "<text ");
        double x0, x1;
        char text[256];
        CHECK(r != NULL && t != NULL && svg_text_span(svg, t, &x0, &x1, text, sizeof text) == 0);
        if (r == NULL || t == NULL) {
            break;
        }
        double ry = svg_num(r, "y"), px = svg_font(svg, "lbl");
        box[n][0] = svg_num(r, "x");
        box[n][1] = x1;
        box[n][2] = ry < svg_num(t, "y") - px ? ry : svg_num(t, "y") - px;
        box[n][3] = ry + svg_num(r, "height") > svg_num(t, "y") ? ry + svg_num(r, "height")
                                                                : svg_num(t, "y");
        CHECK(box[n][1] <= width + 0.5);
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            bool apart = box[i][1] <= box[j][0] || box[j][1] <= box[i][0] ||
                         box[i][3] <= box[j][2] || box[j][3] <= box[i][2];
            if (!apart) {
                fprintf(stderr,
                        "legend entries %zu and %zu overlap: [%.1f, %.1f]x[%.1f, %.1f] and "
                        "[%.1f, %.1f]x[%.1f, %.1f]\n",
                        i, j, box[i][0], box[i][1], box[i][2], box[i][3], box[j][0], box[j][1],
                        box[j][2], box[j][3]);
                check_failures++;
            }
        }
    }
    return n;
}

/* The fills the SVG gives `name`: every <rect> whose <title> starts with the
 * name and a space (bars and timeline slices), and every legend swatch
 * whose text ends with " name". Returns how many; *first the first fill,
 * and the number that differ from it in *differ. */
static size_t svg_fills_of(const char *svg, const char *name, char *first, size_t size,
                           size_t *differ)
{
    size_t n = 0;
    *differ = 0;
    first[0] = '\0';
    char pat[256], fill[32];
    snprintf(pat, sizeof pat, "<title>%s ", name);
    for (const char *r = strstr(svg, "<rect "); r != NULL; r = strstr(r + 1, "<rect ")) {
        const char *close = strstr(r, "</rect>"), *next = strstr(r + 1, "<rect ");
        const char *ti = strstr(r, pat);
        bool titled = close != NULL && ti != NULL && ti < close && (next == NULL || ti < next);
        bool legend = false;
        if (!titled && r > svg + 18 && strncmp(r - 18, "<g class=\"legend\">", 18) == 0) {
            const char *t = strstr(r, "<text "), *e = t != NULL ? strstr(t, "</") : NULL;
            const char *c = t != NULL ? strchr(t, '>') : NULL;
            size_t m = strlen(name);
            legend = e != NULL && c != NULL && (size_t)(e - c - 1) > m && e[-(long)m - 1] == ' ' &&
                     strncmp(e - m, name, m) == 0;
        }
        if (!titled && !legend) {
            continue;
        }
        if (svg_attr(r, "fill", fill, sizeof fill) == NULL) {
            continue;
        }
        if (n++ == 0) {
            snprintf(first, size, "%s", fill);
        } else if (strcmp(first, fill) != 0) {
            (*differ)++;
        }
    }
    return n;
}

/* Names as long as real runtimes' (llama.cpp's pipelines run to 40
 * characters; 70 here, cut at 63): every row's columns line up with the
 * header's. */
static void test_long_names(void)
{
    static const char *const names[] = {
        "mul_mat_vec_q4_0_q8_1_f32_subgroup",
        "rms_norm",
        "flash_attn_f32_f16_cm2_aligned_dk128_dv128_split_k_reduce_and_more_0123",
    };
    char json[4096];
    size_t len = (size_t)snprintf(json, sizeof json, "{\"traceEvents\": [");
    for (int i = 0; i < 3; i++) {
        len += (size_t)snprintf(json + len, sizeof json - len,
                                "%s{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"%s\", "
                                "\"pid\": 2, \"tid\": 1, \"ts\": %d, \"dur\": 10}",
                                i ? ", " : "", names[i], 100 * i);
    }
    snprintf(json + len, sizeof json - len, "], \"metadata\": {\"dropped_events\": 0}}");
    rpt_summary *s = parse_ok(json);
    if (s == NULL) {
        return;
    }
    char out[8192] = "";
    FILE *f = fmemopen(out, sizeof out, "w");
    CHECK(f != NULL && rpt_print(s, "t", f) == 0);
    if (f != NULL) {
        fclose(f);
    }
    /* the SVG (issue 25): every text on the page; the 70-character name, too
     * long for the label column, cut with an ellipsis, whole in its <title> */
    char *svg = NULL;
    size_t svg_len = 0;
    f = open_memstream(&svg, &svg_len);
    CHECK(f != NULL && rpt_svg(s, "t", f) == 0);
    if (f != NULL) {
        fclose(f);
    }
    if (svg != NULL) {
        check_svg_layout(svg);
        char whole[128];
        snprintf(whole, sizeof whole, "<title>%s</title></text>", names[2]);
        CHECK(strstr(svg, whole) != NULL);
        CHECK(strstr(svg, "\xe2\x80\xa6<title>") != NULL); /* U+2026 */
        free(svg);
    }
    rpt_free(s);
    /* the header's "total ms" column ends where every row's total ends */
    const char *h = strstr(out, "GPU phases");
    CHECK(h != NULL);
    if (h == NULL) {
        return;
    }
    const char *hend = strchr(h, '\n');
    const char *tm = strstr(h, "total ms");
    CHECK(hend != NULL && tm != NULL && tm < hend);
    const long col = (long)(tm - h) + (long)strlen("total ms");
    int rows = 0;
    for (const char *line = hend + 1; *line == ' ' && line[1] == ' '; rows++) {
        const char *nl = strchr(line, '\n');
        /* the total, right-aligned: it ends in the header's column */
        CHECK(nl != NULL && nl - line > col && line[col] == ' ' && line[col - 1] != ' ');
        if (nl == NULL) {
            break;
        }
        line = nl + 1;
    }
    CHECK(rows == 4); /* three phases and the busy row */
    /* the longest name is cut at 63 characters, never run into the numbers */
    CHECK(strstr(out, names[2]) == NULL);
    char cut[72];
    snprintf(cut, sizeof cut, "%.63s ", names[2]);
    CHECK(strstr(out, cut) != NULL);
}

/* A first call far above the phase's median (a driver compiling its
 * pipeline: 893 ms against 1 ms, seen with llama.cpp's flash attention on
 * the H200) is said, with its share of the phase; the median and the
 * largest stand beside the mean. */
static void test_first_call(void)
{
    char json[4096];
    size_t len = (size_t)snprintf(json, sizeof json, "{\"traceEvents\": [");
    for (int i = 0; i < 6; i++) {
        len += (size_t)snprintf(json + len, sizeof json - len,
                                "%s{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"fa\", "
                                "\"pid\": 2, \"tid\": 1, \"ts\": %d, \"dur\": %d}",
                                i ? ", " : "", 1000000 * i, i == 0 ? 893000 : 1000 + i);
    }
    /* a phase whose first call is not far off: no note */
    len += (size_t)snprintf(json + len, sizeof json - len,
                            ", {\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"mm\", \"pid\": 2, "
                            "\"tid\": 1, \"ts\": 7000000, \"dur\": 2000}");
    for (int i = 0; i < 3; i++) {
        len += (size_t)snprintf(json + len, sizeof json - len,
                                ", {\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"mm\", "
                                "\"pid\": 2, \"tid\": 1, \"ts\": %d, \"dur\": 1000}",
                                8000000 + 10000 * i);
    }
    snprintf(json + len, sizeof json - len, "], \"metadata\": {\"dropped_events\": 0}}");
    rpt_summary *s = parse_ok(json);
    if (s == NULL) {
        return;
    }
    char out[8192] = "";
    FILE *f = fmemopen(out, sizeof out, "w");
    CHECK(f != NULL && rpt_print(s, "t", f) == 0);
    if (f != NULL) {
        fclose(f);
    }
    rpt_free(s);
    /* fa: 893, 1.001 .. 1.005 ms: the median (the lower of the middle two)
     * 1.003 ms, the largest 893 */
    CHECK(strstr(out, "   1003.000 893000.000\n") != NULL);
    CHECK(strstr(out, "note: the first fa took 893.000 ms, 890x its median: 99.4% of its total") !=
          NULL);
    CHECK(strstr(out, "note: the first mm") == NULL);
    if (strstr(out, "note: the first fa took 893.000 ms, 890x") == NULL) {
        fprintf(stderr, "%s\n", out);
    }
}

/* Issue 26: GPU busy and idle per token. Token events at 0, 10, 20 and
 * 30 ms; on the queue: in the first window two slices that overlap (1-4 and
 * 3-6 ms: 5 ms busy) and one nested in them (2-3 ms, no more), a slice that
 * runs over the next token (9-12 ms: 1 ms in the first window, 2 in the
 * second), and nothing in the third window. So: window 1 6 ms busy of 10,
 * window 2 2 ms of 10, window 3 left out; 8 ms of 20 in all (60% idle), the
 * median window (the upper of two) 80% idle. Of the idle time, 3 ms lie
 * between two stretches of work, 9 at the windows' ends. */
static void test_gpu_idle(void)
{
    const char *json =
        "{\"traceEvents\": ["
        "{\"ph\": \"i\", \"cat\": \"step\", \"name\": \"token\", \"s\": \"p\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 0},"
        "{\"ph\": \"i\", \"cat\": \"step\", \"name\": \"token\", \"s\": \"p\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 10000},"
        "{\"ph\": \"i\", \"cat\": \"step\", \"name\": \"token\", \"s\": \"p\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 20000},"
        "{\"ph\": \"i\", \"cat\": \"step\", \"name\": \"token\", \"s\": \"p\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 30000},"
        "{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"a\", \"pid\": 2, \"tid\": 1, \"ts\": 1000, "
        "\"dur\": 3000},"
        "{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"b\", \"pid\": 2, \"tid\": 1, \"ts\": 2000, "
        "\"dur\": 1000},"
        "{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"c\", \"pid\": 2, \"tid\": 1, \"ts\": 3000, "
        "\"dur\": 3000},"
        "{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"d\", \"pid\": 2, \"tid\": 1, \"ts\": 9000, "
        "\"dur\": 3000}"
        "], \"metadata\": {\"dropped_events\": 0}}";
    rpt_summary *s = parse_ok(json);
    if (s == NULL) {
        return;
    }
    char out[8192] = "";
    FILE *f = fmemopen(out, sizeof out, "w");
    CHECK(f != NULL && rpt_print(s, "t", f) == 0);
    if (f != NULL) {
        fclose(f);
    }
    rpt_free(s);
    const char *want = ": busy 4.000 ms/token, idle 6.000 ms/token (60.0% idle) over 2 token(s) "
                       "with timed GPU work; the median token 80.0% idle; 1 token(s) with no "
                       "timed GPU work left out\n";
    CHECK(strstr(out, want) != NULL);
    /* where the idle time lies: window 1 has a gap of 3 ms (6 to 9) and 1
     * ms before its first work; window 2 8 ms after its last */
    const char *where = "\n    idle between its timed work: 1.500 ms/token in 0.5 gaps a token "
                        "(3000.0 us each); before its first and after its last: 4.500 ms/token\n";
    CHECK(strstr(out, where) != NULL);
    if (strstr(out, want) == NULL || strstr(out, where) == NULL) {
        fprintf(stderr, "%s\n", out);
    }
}

/* Submit to GPU start: the app's vkQueueSubmit span (its "s" flow event at
 * its start) to the earliest GPU slice it submitted (their "f" events).
 * Token events at 0, 1 and 2 ms. Submit A at 100 us, its one slice at 200:
 * 100 us. Submit B at 1100 us, one id for two slices (the later one first
 * in the file) at 1500 and 1400: 300 us. Submit C (vkQueueSubmit2) at 1600
 * us, an id and an "s" for each of its slices, string ids as a merged
 * trace has them: the earliest (1800, of the second id) counts: 200 us. A
 * flow from a span that is not a submit ("record", 500 us to 520) is left
 * out. So: 100, 200, 300 us: the median 200, p90 300, mean 200. */
#define SL_TOKEN(ts)                                                                               \
    "{\"ph\": \"i\", \"cat\": \"step\", \"name\": \"token\", \"s\": \"p\", \"pid\": 1, "           \
    "\"tid\": 1, \"ts\": " ts "}"
#define SL_HOST(name, ts)                                                                          \
    "{\"ph\": \"X\", \"cat\": \"host\", \"name\": \"" name "\", \"pid\": 1, \"tid\": 1, "          \
    "\"ts\": " ts ", \"dur\": 10}"
#define SL_GPU(ts)                                                                                 \
    "{\"ph\": \"X\", \"cat\": \"gpu\", \"name\": \"k\", \"pid\": 2, \"tid\": 1, \"ts\": " ts       \
    ", \"dur\": 50}"
#define SL_S(id, ts)                                                                               \
    "{\"ph\": \"s\", \"cat\": \"flow\", \"name\": \"recorded\", \"id\": " id ", \"pid\": 1, "      \
    "\"tid\": 1, \"ts\": " ts "}"
#define SL_F(id, ts)                                                                               \
    "{\"ph\": \"f\", \"bp\": \"e\", \"cat\": \"flow\", \"name\": \"recorded\", \"id\": " id        \
    ", \"pid\": 2, \"tid\": 1, \"ts\": " ts "}"

static const char *const sl_events[] = {
    SL_TOKEN("0"), SL_TOKEN("1000"), SL_TOKEN("2000"),
    /* A */
    SL_HOST("vkQueueSubmit", "100"), SL_S("1", "100"), SL_GPU("200"), SL_F("1", "200"),
    /* not a submit */
    SL_HOST("record", "500"), SL_S("3", "500"), SL_GPU("520"), SL_F("3", "520"),
    /* B */
    SL_HOST("vkQueueSubmit", "1100"), SL_S("2", "1100"), SL_GPU("1500"), SL_F("2", "1500"),
    SL_GPU("1400"), SL_F("2", "1400"),
    /* C */
    SL_HOST("vkQueueSubmit2", "1600"), SL_S("\"0:7\"", "1600"), SL_S("\"0:8\"", "1600"),
    SL_GPU("1850"), SL_F("\"0:7\"", "1850"), SL_GPU("1800"), SL_F("\"0:8\"", "1800")};

/* The trace of sl_events with the metadata meta, into json. */
static void sl_trace(char *json, size_t size, const char *meta)
{
    size_t len = (size_t)snprintf(json, size, "{\"traceEvents\": [");
    for (size_t i = 0; i < sizeof sl_events / sizeof sl_events[0] && len < size; i++) {
        len += (size_t)snprintf(json + len, size - len, "%s%s", i ? ", " : "", sl_events[i]);
    }
    if (len < size) {
        snprintf(json + len, size - len, "], \"metadata\": %s}", meta);
    }
}

/* The trace of sl_events with the metadata meta, parsed and printed into
 * out; *rc what rpt_submit_latency returned (-2: not parsed). */
static void submit_latency_print(const char *meta, char *out, size_t size,
                                 rpt_submit_latency_out *sl, int *rc)
{
    char json[4096];
    sl_trace(json, sizeof json, meta);
    out[0] = '\0';
    *rc = -2;
    memset(sl, 0, sizeof *sl);
    rpt_summary *s = parse_ok(json);
    if (s == NULL) {
        return;
    }
    FILE *f = fmemopen(out, size, "w");
    CHECK(f != NULL && rpt_print(s, "t", f) == 0);
    if (f != NULL) {
        fclose(f);
    }
    *rc = rpt_submit_latency(s, sl);
    rpt_free(s);
}

static void test_submit_latency(void)
{
    char json[4096];
    sl_trace(json, sizeof json, "{\"dropped_events\": 0}");
    rpt_summary *s = parse_ok(json);
    if (s == NULL) {
        return;
    }
    /* every "s" counted, every "s" and "f" kept in file order, on their
     * tracks, the string ids apart */
    CHECK_U64(s->n_flows, 5);
    CHECK_U64(s->n_flows_read, 11);
    if (s->n_flows_read == 11) {
        const rpt_flow *fl = s->flows;
        CHECK(fl[0].start == 1 && fl[0].id == 1 && fl[0].id_str == 0 && fl[0].ts_ns == 100000);
        CHECK(fl[1].start == 0 && fl[1].id == 1 && fl[1].ts_ns == 200000);
        CHECK(s->tracks[fl[0].track].pid == 1 && !s->tracks[fl[0].track].is_gpu);
        CHECK(s->tracks[fl[1].track].pid == 2 && s->tracks[fl[1].track].is_gpu);
        CHECK(fl[7].id_str == 1 && fl[8].id_str == 1 && fl[7].id != fl[8].id);
        CHECK(fl[9].id_str == 1 && fl[9].id == fl[7].id && fl[10].id == fl[8].id);
    }
    CHECK_U64(s->n_tracks, 2);
    /* a merged trace: not measured (its ranks' windows are apart) */
    rpt_submit_latency_out sl;
    s->n_ranks = 1;
    CHECK(rpt_submit_latency(s, &sl) == 0 && sl.count == 0);
    s->n_ranks = 0;
    rpt_free(s);

    char out[8192];
    int rc;
    submit_latency_print("{\"dropped_events\": 0}", out, sizeof out, &sl, &rc);
    CHECK(rc == 1);
    CHECK_U64(sl.count, 3);
    CHECK(sl.median_ns == 200000 && sl.p90_ns == 300000 && sl.mean_ns == 200000);
    const char *want = "\n  submit to GPU start: median 200.0 us, p90 300.0 us, mean 200.0 us "
                       "over 3 submits (from the app's vkQueueSubmit call to the start of the "
                       "first GPU work it submitted: the driver's submit, and any wait behind "
                       "earlier work)\n";
    CHECK(strstr(out, want) != NULL);
    if (strstr(out, want) == NULL) {
        fprintf(stderr, "%s\n", out);
    }

    /* only part of each step's GPU work timed: a submit's first timed
     * slice need not be its first work; not said */
    submit_latency_print("{\"gpu_sampling\": {\"whole_steps\": false}}", out, sizeof out, &sl, &rc);
    CHECK(rc == 0 && sl.count == 0);
    CHECK(strstr(out, "not measured (only part of each") != NULL);
    CHECK(strstr(out, "submit to GPU start") == NULL);

    /* every call not timed, but outer scopes around each step's work
     * (busy_measured): said */
    submit_latency_print("{\"gpu_sampling\": {\"whole_steps\": false, \"busy_measured\": true}}",
                         out, sizeof out, &sl, &rc);
    CHECK(rc == 1 && sl.count == 3);
    CHECK(strstr(out, want) != NULL);
}

/* Issue 25: llama.cpp's pipeline names (35-40 characters): the label column
 * and the legend are laid out from the text's estimated width, the legend
 * wraps, and one name is one colour everywhere (a phase and a host bucket of
 * the same name: bars, timeline, legend). */
static void test_svg_long_names(void)
{
    char err[512];
    rpt_summary *s = NULL;
    CHECK(rpt_read_file(path_of(data_dir, "long_names.json"), 0, &s, err, sizeof err) == 0);
    if (s == NULL) {
        fprintf(stderr, "long_names.json: %s\n", err);
        return;
    }
    char *svg = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&svg, &len);
    CHECK(f != NULL && rpt_svg(s, "long_names.json", f) == 0);
    if (f != NULL) {
        fclose(f);
    }
    if (svg == NULL) {
        rpt_free(s);
        return;
    }
    CHECK(xml_check(svg, len) == 0);
    size_t names = 0, longest = 0;
    for (int pass = 0; pass < 2; pass++) {
        const rpt_group *g = pass == 0 ? s->gpu : s->host;
        size_t n = pass == 0 ? s->n_gpu : s->n_host;
        for (size_t i = 0; i < n; i++) {
            names += pass == 0 || find(s->gpu, s->n_gpu, g[i].name) == NULL;
            longest = strlen(g[i].name) > longest ? strlen(g[i].name) : longest;
        }
    }
    CHECK(longest >= 35);
    /* every distinct name has a legend entry, and none overlaps another */
    CHECK_U64(check_svg_layout(svg), names);
    /* one colour per name; the shared name is a phase and a bucket */
    size_t shared = 0;
    for (size_t i = 0; i < s->n_gpu; i++) {
        char fill[32];
        size_t differ = 0;
        size_t n = svg_fills_of(svg, s->gpu[i].name, fill, sizeof fill, &differ);
        bool both = find(s->host, s->n_host, s->gpu[i].name) != NULL;
        shared += both;
        /* the bar, the timeline's slice, the legend; and the host's too */
        CHECK(n >= (both ? 4u : 2u));
        if (differ != 0) {
            fprintf(stderr, "%s: %zu of %zu fills differ from %s\n", s->gpu[i].name, differ, n,
                    fill);
            check_failures++;
        }
    }
    CHECK(shared == 1);
    free(svg);
    rpt_free(s);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_report DATA_DIR TMP_DIR\n");
        return 2;
    }
    data_dir = argv[1];
    tmp_dir = argv[2];
    mkdir(tmp_dir, 0777);
    test_two_tokens();
    test_sampled();
    test_errors();
    test_accepted();
    test_files();
    test_format();
    test_long_names();
    test_first_call();
    test_gpu_idle();
    test_submit_latency();
    test_svg_long_names();
    test_duplicate_keys();
    test_repeated_slices();
    test_format_detection();
    if (check_failures) {
        fprintf(stderr, "%d failures\n", check_failures);
        return 1;
    }
    printf("test_report: all passed\n");
    return 0;
}
