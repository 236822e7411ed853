/* The trace reader of `vkprof report`: exact figures from hand-written traces,
 * clear errors for malformed ones, and a well-formed SVG written atomically.
 * argv[1]: the folder of the sample traces; argv[2]: a scratch folder. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
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
        CHECK(strstr(text, "  attention                         0.780      0.390   54.2%         "
                           "1.00    390.062\n") != NULL);
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
    BAD("nope", "not a JSON object at line 1, column 1");
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

static void test_files(void)
{
    static const struct {
        const char *file, *want;
    } cases[] = {
        {"bad/empty.json", "the file is empty"},
        {"bad/not_json.json", "not a JSON object"},
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
    if (check_failures) {
        fprintf(stderr, "%d failures\n", check_failures);
        return 1;
    }
    printf("test_report: all passed\n");
    return 0;
}
