/* `vkprof bench` once on the tiny preset: every configuration is in the JSON
 * with a finite positive ratio, the stamp counts are those of each mode, the
 * host and trace-export figures are there; plus the usage errors. A smoke
 * test: no speed is asserted (lavapipe shares the CPU with everything else).
 *
 *   test_bench_cli VKPROF WORKDIR */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "harness.h"

static const char *vkprof_bin, *dir;

/* `vkprof SUB ARGS`; the exit status, stderr in errbuf, stdout in DIR/stdout.txt. */
static int run_sub(const char *sub, const char *args, char *errbuf, size_t n)
{
    char cmd[2048], errf[600];
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s %s > '%s/stdout.txt' 2> '%s'", vkprof_bin, sub, args, dir,
             errf);
    int st = system(cmd);
    errbuf[0] = '\0';
    FILE *f = fopen(errf, "r");
    if (f != NULL) {
        size_t got = fread(errbuf, 1, n - 1, f);
        errbuf[got] = '\0';
        fclose(f);
    }
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static int run_cli(const char *args, char *errbuf, size_t n)
{
    return run_sub("bench", args, errbuf, n);
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const cJSON *find_config(const cJSON *arr, const char *name)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) {
            return it;
        }
    }
    return NULL;
}

static void test_json(void)
{
    char err[8192], args[1024], path[600];
    snprintf(path, sizeof path, "%s/out.json", dir);
    snprintf(args, sizeof args, "--preset tiny --tokens 8 --repeats 2 --sample-every 8 --json '%s'",
             path);
    int rc = run_cli(args, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "  exit %d, stderr: %s\n", rc, err);
    }
    CHECK(rc == 0);
    char *text = th_read_file(path);
    CHECK(text != NULL);
    cJSON *j = text != NULL ? cJSON_Parse(text) : NULL;
    CHECK(j != NULL);
    if (j == NULL) {
        free(text);
        return;
    }
    CHECK(num(j, "tokens_per_run") == 8);
    CHECK(num(j, "rounds") == 2);
    CHECK(num(j, "sample_every") == 8);
    double calls = num(j, "phase_calls_per_token");
    CHECK(calls == 9 * 4 + 4); /* tiny: 4 layers */
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "tokens_identical")));
    const cJSON *cfgs = cJSON_GetObjectItemCaseSensitive(j, "configurations");
    CHECK(cJSON_IsArray(cfgs) && cJSON_GetArraySize(cfgs) == 9);
    static const struct {
        const char *name;
        double stamps; /* per token; -1: not checked exactly */
    } want[] = {{"off", 0},
                {"host", 0},
                {"2slot", 2 * 40},
                {"ring", 2 * 40},
                {"ring-shared", 41},
                {"ring-sampled", -1},
                {"ring-rotating", 4 + 1},
                {"baseline", 2 * 40},
                {"baseline-shared", 41}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const cJSON *c = find_config(cfgs, want[i].name);
        if (c == NULL) {
            fprintf(stderr, "  configuration '%s' missing\n", want[i].name);
        }
        CHECK(c != NULL);
        if (c == NULL) {
            continue;
        }
        double r = num(c, "ratio_median"), lo = num(c, "ratio_min"), hi = num(c, "ratio_max");
        double tps = num(c, "tokens_per_s_median"), st = num(c, "stamps_per_token");
        printf("  %-16s ratio %.3f [%.3f, %.3f], %.2f tokens/s, %.1f stamps/token\n", want[i].name,
               r, lo, hi, tps, st);
        CHECK(isfinite(r) && r > 0);
        CHECK(isfinite(lo) && isfinite(hi) && lo > 0 && lo <= r && r <= hi);
        CHECK(isfinite(tps) && tps > 0);
        if (want[i].stamps >= 0) {
            CHECK(st == want[i].stamps);
        }
        const cJSON *ratios = cJSON_GetObjectItemCaseSensitive(c, "ratios");
        CHECK(cJSON_IsArray(ratios) && cJSON_GetArraySize(ratios) == 2);
        if (strcmp(want[i].name, "off") == 0) {
            CHECK(r == 1.0);
            CHECK(num(c, "token_p99_ratio") == 1.0);
        }
        /* token times: 16 tokens pooled; p99 by nearest rank is the slowest */
        double p50 = num(c, "token_ms_p50"), p99 = num(c, "token_ms_p99");
        CHECK(isfinite(p50) && p50 > 0 && p99 >= p50);
        CHECK(isfinite(num(c, "token_p99_ratio")) && num(c, "token_p99_ratio") > 0);
        if (strcmp(want[i].name, "ring-rotating") == 0) {
            /* 4 of 40 calls a token: 16 measured tokens stamp 64 calls */
            const cJSON *tm = cJSON_GetObjectItemCaseSensitive(c, "timing");
            CHECK(num(tm, "rotate_scopes") == 4);
            CHECK(num(tm, "rotate_period") == 10);
            CHECK(num(tm, "calls_executed") == 16 * 40);
            CHECK(num(tm, "scopes_collected") == 16 * 4);
            CHECK(num(tm, "calls_unstamped") == 16 * 36);
            CHECK(num(c, "timed_tokens") == 16);
        }
        if (strcmp(want[i].name, "ring-sampled") == 0) {
            /* 8 x (1 warm-up + 2) = 24 steps: steps 0, 8 and 16 timed, 8 and 16
             * measured; shared boundaries: 41 stamps per timed token */
            CHECK(st == 41 / 8.0);
            CHECK(num(c, "timed_tokens") == 2);
        }
        if (want[i].stamps > 0) {
            const cJSON *ph = cJSON_GetObjectItemCaseSensitive(c, "phases");
            CHECK(cJSON_IsObject(ph) && cJSON_GetArraySize(ph) == 11);
            const cJSON *mg = cJSON_GetObjectItemCaseSensitive(ph, "mlp_gate_up");
            CHECK(num(mg, "us_per_token") > 0);
        }
    }
    const cJSON *lf = cJSON_GetObjectItemCaseSensitive(j, "library_over_floor");
    CHECK(num(lf, "ring_vs_baseline_ratio_median") > 0);
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(j, "split_agreement_pp");
    double d1 = num(sa, "ring_vs_ring_sampled"), d2 = num(sa, "ring_vs_2slot"),
           d3 = num(sa, "ring_vs_baseline");
    CHECK(d1 >= 0 && d1 <= 100 && d2 >= 0 && d2 <= 100 && d3 >= 0 && d3 <= 100);
    double d4 = num(sa, "ring_shared_vs_ring_rotating");
    CHECK(d4 >= 0 && d4 <= 100);
    /* the convergence run: 16 tokens of a fresh rotating context */
    const cJSON *cv = cJSON_GetObjectItemCaseSensitive(j, "convergence");
    CHECK(num(cv, "tokens_run") == 16 && num(cv, "pass_tokens") == 10);
    CHECK(num(cv, "rotate_scopes") == 4 && num(cv, "threshold_pp") == 1);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cv, "pp_after_tokens")) == 16);
    const cJSON *within = cJSON_GetObjectItemCaseSensitive(cv, "tokens_to_within");
    CHECK(cJSON_IsNull(within) ||
          (cJSON_IsNumber(within) && within->valuedouble >= 1 && within->valuedouble <= 16));
    CHECK(num(cv, "final_pp") >= 0 && num(cv, "final_pp") <= 100);
    /* the ring's host path alone: the same 40 calls a token, every stamp
     * counted by the library, each part of the token time inside the whole */
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(j, "ring_host_path");
    CHECK(num(rp, "phase_calls_per_token") == 40 && num(rp, "tokens_per_round") == 8);
    CHECK(num(rp, "rounds") == 2 && num(rp, "rotate_scopes") == 4);
    const cJSON *rpc = cJSON_GetObjectItemCaseSensitive(rp, "configurations");
    CHECK(cJSON_IsArray(rpc) && cJSON_GetArraySize(rpc) == 4);
    static const struct {
        const char *name;
        double stamps;
    } rp_want[] = {{"off", 0}, {"sampled-untimed", 0}, {"rotating", 5}, {"shared-every", 41}};
    for (int i = 0; i < 4 && cJSON_GetArraySize(rpc) == 4; i++) {
        const cJSON *c = cJSON_GetArrayItem(rpc, i);
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c, "name");
        CHECK(cJSON_IsString(nm) && strcmp(nm->valuestring, rp_want[i].name) == 0);
        CHECK(num(c, "stamps_per_token") == rp_want[i].stamps);
        double p50 = num(c, "p50_us"), p99 = num(c, "p99_us"), mean = num(c, "mean_us");
        double rec = num(c, "record_mean_us"), rest = num(c, "rest_mean_us");
        double col = num(c, "collect_mean_us");
        CHECK(p50 > 0 && p99 >= p50 && mean > 0);
        CHECK(rec > 0 && rest > 0 && col >= 0 && col <= rest);
        CHECK(fabs(rec + rest - mean) <= 1e-6 * mean + 1e-3);
    }
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "host");
    CHECK(num(h, "off_call_site_ns") > 0);
    CHECK(num(h, "span_begin_end_ns") > 0);
    CHECK(num(h, "clock_gettime_ns") > 0);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "trace_export");
    CHECK(num(t, "events") == num(t, "capacity") && num(t, "capacity") == 1048576);
    CHECK(num(t, "dropped") == 0);
    CHECK(num(t, "events_per_s") > 0 && num(t, "file_bytes") > 1048576);
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(j, "off_vulkan_commands");
    CHECK(num(off, "commands") == 0);
    cJSON_Delete(j);
    free(text);
    remove(path);
}

static void expect_fail(const char *args, int code, const char *msg)
{
    char err[8192];
    int rc = run_cli(args, err, sizeof err);
    if (rc != code || strstr(err, msg) == NULL) {
        fprintf(stderr, "  '%s': exit %d (want %d), stderr: %s\n", args, rc, code, err);
    }
    CHECK(rc == code);
    CHECK(strstr(err, msg) != NULL);
}

static void test_errors(void)
{
    expect_fail("--preset llama-70b", 2, "unknown preset 'llama-70b'");
    expect_fail("--bogus", 2, "unknown option '--bogus'");
    expect_fail("--repeats 0", 2, "bad number for --repeats");
    expect_fail("--tokens 12x", 2, "bad number for --tokens");
    expect_fail("--sample-every", 2, "needs a value");
    expect_fail("--tokens 100000", 2, "exceeds the context");
    expect_fail("--json /nonexistent-dir/x.json", 1, "cannot write");
    expect_fail("--device no-such-device-name --tokens 1 --repeats 1", 1,
                "no device name contains");
}

/* `vkprof decode --profile ring|ring-shared|ring-sampled`: not serialised,
 * every phase timed, the sampled one over its timed tokens only. */
static void test_decode_ring(void)
{
    char err[8192], args[1024], path[600], out[600];
    snprintf(path, sizeof path, "%s/decode.json", dir);
    snprintf(out, sizeof out, "%s/stdout.txt", dir);
    const char *modes[] = {"ring", "ring-shared", "ring-sampled --sample-every 2"};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        snprintf(args, sizeof args, "--tokens 4 --profile %s --json '%s'", modes[m], path);
        int rc = run_sub("decode", args, err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "  decode %s: exit %d, stderr: %s\n", args, rc, err);
        }
        CHECK(rc == 0);
        char *text = th_read_file(path), *o = th_read_file(out);
        cJSON *j = text != NULL ? cJSON_Parse(text) : NULL;
        CHECK(j != NULL && o != NULL);
        if (j != NULL && o != NULL) {
            CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "serialised")));
            CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "vkprof")));
            const cJSON *ph = cJSON_GetObjectItemCaseSensitive(j, "phases"), *it;
            CHECK(cJSON_GetArraySize(ph) == 11);
            bool sampled = m == 2;
            cJSON_ArrayForEach(it, ph)
            {
                CHECK(num(it, "total_ns") > 0);
                /* tokens 0 and 2 timed: the counts are those of 2 tokens */
                CHECK(num(it, "count") == num(it, "calls_per_token") * (sampled ? 2 : 4));
            }
            CHECK(strstr(o, sampled ? "vkprof ring, 2 timed tokens" : "vkprof ring, 4 tokens") !=
                  NULL);
        }
        cJSON_Delete(j);
        free(text);
        free(o);
    }
    /* ring-rotating: 4 calls of 40 a token, 20 tokens = 2 passes: every call
     * timed twice; ms/token from the estimate, calls/token from the calls */
    snprintf(args, sizeof args, "--tokens 20 --profile ring-rotating --rotate 4 --json '%s'", path);
    int rrc = run_sub("decode", args, err, sizeof err);
    if (rrc != 0) {
        fprintf(stderr, "  decode %s: exit %d, stderr: %s\n", args, rrc, err);
    }
    CHECK(rrc == 0);
    char *rtext = th_read_file(path), *ro = th_read_file(out);
    cJSON *rj = rtext != NULL ? cJSON_Parse(rtext) : NULL;
    CHECK(rj != NULL && ro != NULL);
    if (rj != NULL && ro != NULL) {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(rj, "phases"), *it;
        CHECK(cJSON_GetArraySize(ph) == 11);
        cJSON_ArrayForEach(it, ph)
        {
            CHECK(num(it, "total_ns") > 0 && num(it, "ms_per_token") > 0);
            CHECK(num(it, "count") * 10 == num(it, "calls_per_token") * 20);
        }
        CHECK(strstr(ro, "vkprof ring, 20 tokens") != NULL);
        CHECK(strstr(ro, "rotating: 4 phase calls stamped a token of 40 (a pass: 10 tokens, 2 "
                         "passes, 0 steps") != NULL);
    }
    cJSON_Delete(rj);
    free(rtext);
    free(ro);
    remove(path);
    char e2[8192];
    int rc = run_sub("decode", "--profile ring-sometimes", e2, sizeof e2);
    CHECK(rc == 2 && strstr(e2, "unknown profile") != NULL);
}

/* `vkprof decode --scope dispatch`: one scope per dispatch (counts equal to
 * the dispatches), each token's time (p50 <= p99); refused where it cannot go. */
static void test_decode_scope(void)
{
    char err[8192], args[1024], path[600];
    snprintf(path, sizeof path, "%s/scope.json", dir);
    snprintf(args, sizeof args, "--tokens 4 --profile ring-shared --scope dispatch --json '%s'",
             path);
    int rc = run_sub("decode", args, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "  decode %s: exit %d, stderr: %s\n", args, rc, err);
    }
    CHECK(rc == 0);
    char *text = th_read_file(path);
    cJSON *j = text != NULL ? cJSON_Parse(text) : NULL;
    CHECK(j != NULL);
    if (j != NULL) {
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(j, "scope");
        CHECK(cJSON_IsString(sc) && strcmp(sc->valuestring, "dispatch") == 0);
        double p50 = num(j, "token_ms_p50"), p99 = num(j, "token_ms_p99");
        CHECK(p50 > 0 && p50 <= p99);
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(j, "phases"), *it;
        CHECK(cJSON_GetArraySize(ph) == 11);
        double scopes = 0, calls = 0;
        cJSON_ArrayForEach(it, ph)
        {
            CHECK(num(it, "total_ns") > 0);
            CHECK(num(it, "count") == num(it, "dispatches"));
            scopes += num(it, "count");
            calls += num(it, "calls_per_token") * 4;
        }
        CHECK(scopes > calls); /* attention and sampling are several dispatches a call */
    }
    cJSON_Delete(j);
    free(text);
    remove(path);
    static const char *const bad[] = {"--tokens 1 --profile gpu --scope dispatch",
                                      "--tokens 1 --profile ring-rotating --scope dispatch",
                                      "--tokens 1 --profile ring --scope dispatch --ranks 2",
                                      "--tokens 1 --scope dispatch"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = run_sub("decode", bad[i], err, sizeof err);
        CHECK(rc == 2 && strstr(err, "--scope dispatch goes with --profile ring") != NULL);
    }
    rc = run_sub("decode", "--tokens 1 --scope phase", err, sizeof err);
    CHECK(rc == 2 && strstr(err, "unknown --scope 'phase'") != NULL);
}

/* `vkprof bench --layer` once on tiny (a smoke test, never a speed): the
 * layer and the in-app ring with the same stamps time each phase equally
 * often; every configuration's ratios are there. */
static void test_bench_layer(void)
{
    char err[8192], args[1024], path[600];
    snprintf(path, sizeof path, "%s/layer.json", dir);
    snprintf(args, sizeof args, "--layer --preset tiny --tokens 4 --repeats 1 --json '%s'", path);
    int rc = run_cli(args, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "  bench %s: exit %d, stderr: %s\n", args, rc, err);
    }
    CHECK(rc == 0);
    char *text = th_read_file(path);
    cJSON *j = text != NULL ? cJSON_Parse(text) : NULL;
    CHECK(j != NULL);
    if (j != NULL) {
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "tokens_identical")));
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "scopes_per_phase_equal")));
        CHECK(num(j, "ring_phases_missing_in_layer") == 0);
        double split = num(j, "split_max_pp_layer_vs_ring");
        CHECK(isfinite(split) && split >= 0 && split < 100);
        const cJSON *cfgs = cJSON_GetObjectItemCaseSensitive(j, "configs");
        CHECK(cJSON_GetArraySize(cfgs) == 6);
        static const char *const names[] = {"none",          "loaded-off", "layer",
                                            "ring-dispatch", "sampled",    "default"};
        for (size_t i = 0; i < 6; i++) {
            const cJSON *c = find_config(cfgs, names[i]);
            CHECK(c != NULL);
            if (c == NULL) {
                continue;
            }
            CHECK(num(c, "tokens_per_s") > 0 && num(c, "token_ms_p50") > 0);
            if (cJSON_GetObjectItemCaseSensitive(c, "against") != NULL) {
                CHECK(num(c, "ratio") > 0 && num(c, "ratio_p50") > 0);
                CHECK(num(c, "ratio_p50_min") <= num(c, "ratio_p50") &&
                      num(c, "ratio_p50") <= num(c, "ratio_p50_max"));
            }
        }
        const cJSON *ly = find_config(cfgs, "layer"), *rg = find_config(cfgs, "ring-dispatch");
        if (ly != NULL && rg != NULL) {
            CHECK(num(rg, "samples") > 0 && num(rg, "lost") == 0 && num(ly, "lost") == 0);
            CHECK(num(ly, "samples") > num(rg, "samples")); /* and weights_init's */
        }
        /* vkprof run's default: a window of 2 a step (and each phase's first
         * call, and the busy scopes in some steps): fewer stamps than every
         * dispatch, none lost, and a split of its estimates */
        const cJSON *df = find_config(cfgs, "default");
        if (ly != NULL && df != NULL) {
            CHECK(num(df, "samples") > 0 && num(df, "lost") == 0);
            CHECK(num(df, "samples") < num(ly, "samples"));
            CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(df, "against")),
                         "none") == 0);
        }
        double split_default = num(j, "split_max_pp_default_vs_ring");
        CHECK(isfinite(split_default) && split_default >= 0 && split_default <= 100);
    }
    cJSON_Delete(j);
    free(text);
    remove(path);
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[3], "layer") != 0 && strcmp(argv[3], "no-layer") != 0)) {
        fprintf(stderr, "usage: test_bench_cli VKPROF WORKDIR layer|no-layer\n");
        return 2;
    }
    bool with_layer = strcmp(argv[3], "layer") == 0;
    vkprof_bin = argv[1];
    dir = argv[2];
    char mk[700];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", dir);
    if (system(mk) != 0) {
        fprintf(stderr, "cannot create %s\n", dir);
        return 1;
    }
    test_errors();
    printf("%s test_errors\n", th_failures ? "FAIL" : "ok  ");
    int before = th_failures;
    test_decode_ring();
    printf("%s test_decode_ring\n", th_failures != before ? "FAIL" : "ok  ");
    before = th_failures;
    test_decode_scope();
    printf("%s test_decode_scope\n", th_failures != before ? "FAIL" : "ok  ");
    before = th_failures;
    if (with_layer) {
        test_bench_layer();
        printf("%s test_bench_layer\n", th_failures != before ? "FAIL" : "ok  ");
    }
    before = th_failures;
    test_json();
    printf("%s test_json\n", th_failures != before ? "FAIL" : "ok  ");
    printf("%s: %d failure(s)\n", th_failures ? "FAILED" : "PASSED", th_failures);
    return th_failures ? 1 : 0;
}
