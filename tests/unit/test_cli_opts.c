/* The tools' one option parser (tools/cli/cli_opts.c), without Vulkan: long
 * options with a value in the next argument or after '=', flags, -h/--help,
 * "--" and "-", positional arguments, and every garbage number (empty, "12x",
 * negative, overflow, out of range) and unknown option as an error that names
 * the option. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli_opts.h"

/* What one parse left behind. */
typedef struct parsed {
    const char *name, *pos[2];
    uint32_t count;
    uint64_t big;
    double rate;
    bool quiet;
    size_t npos;
    int rc;
    char err[512], out[512];
    int usage_calls;
} parsed;

static int usage_calls;

static void usage(FILE *f)
{
    usage_calls++;
    fputs("usage: tool [--name S] [--count N] [--big N] [--rate X] [--quiet] [FILE...]\n", f);
}

/* Reads what was written to a temporary file into buf. */
static void slurp(FILE *f, char *buf, size_t n)
{
    fflush(f);
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

/* Parse `args` (NULL-terminated, argv[0] added) with the test's table. */
static parsed run(size_t max_pos, const char *const *args)
{
    parsed p;
    memset(&p, 0, sizeof p);
    p.count = 7;
    p.big = 9;
    p.rate = 1.5;
    const cli_opt opts[] = {
        {"--name", CLI_STR, .str = &p.name},
        {"--count", CLI_U32, .u32 = &p.count, .min = 1, .max = 1000},
        {"--big", CLI_U64, .u64 = &p.big},
        {"--rate", CLI_F64, .f64 = &p.rate, .fmin = 0.0, .fmax = 100.0},
        {"--quiet", CLI_FLAG, .flag = &p.quiet},
    };
    FILE *out = tmpfile(), *err = tmpfile();
    if (out == NULL || err == NULL) {
        fprintf(stderr, "no temporary file\n");
        exit(1);
    }
    cli_spec s = {.tool = "tool",
                  .opts = opts,
                  .n_opts = sizeof opts / sizeof opts[0],
                  .usage = usage,
                  .pos = p.pos,
                  .max_pos = max_pos,
                  .n_pos = &p.npos,
                  .too_many = max_pos > 0 ? "more than two files" : NULL,
                  .out = out,
                  .err = err};
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"tool";
    for (size_t i = 0; args[i] != NULL && argc < 31; i++) {
        argv[argc++] = (char *)args[i];
    }
    argv[argc] = NULL;
    usage_calls = 0;
    p.rc = cli_parse(&s, argc, argv);
    p.usage_calls = usage_calls;
    slurp(out, p.out, sizeof p.out);
    slurp(err, p.err, sizeof p.err);
    return p;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* An error: status CLI_ERROR, one line on stderr with every `want` in it. */
static void expect_error(const char *const *args, const char *want1, const char *want2)
{
    parsed p = run(0, args);
    bool ok = p.rc == CLI_ERROR && strstr(p.err, want1) != NULL &&
              (want2 == NULL || strstr(p.err, want2) != NULL) && strncmp(p.err, "tool: ", 6) == 0 &&
              strchr(p.err, '\n') == p.err + strlen(p.err) - 1 && p.out[0] == '\0';
    if (!ok) {
        fprintf(stderr, "  args from '%s': rc %d, stderr '%s', want '%s'%s%s\n", args[0], p.rc,
                p.err, want1, want2 ? " and " : "", want2 ? want2 : "");
    }
    CHECK(ok);
    CHECK(cli_exit_status(p.rc) == 2);
}

static void test_values(void)
{
    check_case = "values";
    parsed p = run(0, ARGS("--name", "x", "--count", "12", "--big=18446744073709551615",
                           "--rate=2.25", "--quiet"));
    CHECK(p.rc == CLI_OK);
    CHECK(p.name != NULL && strcmp(p.name, "x") == 0);
    CHECK_EQ_U64(p.count, 12);
    CHECK_EQ_U64(p.big, UINT64_MAX);
    CHECK(p.rate == 2.25);
    CHECK(p.quiet);
    CHECK(p.err[0] == '\0' && p.out[0] == '\0');

    /* nothing given: the defaults stay */
    p = run(0, ARGS(NULL));
    CHECK(p.rc == CLI_OK && p.count == 7 && p.big == 9 && p.rate == 1.5 && !p.quiet &&
          p.name == NULL);

    /* the last one counts; the range ends are inside */
    p = run(0, ARGS("--count", "1", "--count=1000", "--rate", "100"));
    CHECK(p.rc == CLI_OK && p.count == 1000 && p.rate == 100.0);
    /* "=" inside a value after '=' stays in the value; a value may be "-" */
    p = run(0, ARGS("--name=a=b"));
    CHECK(p.rc == CLI_OK && strcmp(p.name, "a=b") == 0);
    p = run(0, ARGS("--name", "-"));
    CHECK(p.rc == CLI_OK && strcmp(p.name, "-") == 0);
    /* a value that begins with "--" only after '=' */
    p = run(0, ARGS("--name=--quiet"));
    CHECK(p.rc == CLI_OK && strcmp(p.name, "--quiet") == 0 && !p.quiet);
    /* leading zeros are still decimal */
    p = run(0, ARGS("--count", "0010"));
    CHECK(p.rc == CLI_OK && p.count == 10);
}

static void test_numbers(void)
{
    check_case = "numbers";
    expect_error(ARGS("--count", "12x"), "bad number for --count", "'12x' is not a whole number");
    expect_error(ARGS("--count="), "bad number for --count", "is empty");
    expect_error(ARGS("--count", ""), "bad number for --count", "is empty");
    expect_error(ARGS("--count", "-3"), "bad number for --count", "'-3' is negative");
    expect_error(ARGS("--count", "0"), "bad number for --count", "out of range");
    expect_error(ARGS("--count", "1001"), "bad number for --count", "1..1000");
    expect_error(ARGS("--count", "+5"), "bad number for --count", "not a whole number");
    expect_error(ARGS("--count", " 5"), "bad number for --count", "not a whole number");
    expect_error(ARGS("--count", "5 "), "bad number for --count", "not a whole number");
    expect_error(ARGS("--count", "0x10"), "bad number for --count", "not a whole number");
    expect_error(ARGS("--count", "1.5"), "bad number for --count", "not a whole number");
    expect_error(ARGS("--big", "18446744073709551616"), "bad number for --big", "too large");
    expect_error(ARGS("--big", "99999999999999999999999999"), "bad number for --big", "too large");
    expect_error(ARGS("--big", "99999999999999999999999999x"), "bad number for --big",
                 "not a whole number");
    expect_error(ARGS("--rate", "abc"), "bad number for --rate", "not a number");
    expect_error(ARGS("--rate", "nan"), "bad number for --rate", "not a number");
    expect_error(ARGS("--rate", "inf"), "bad number for --rate", "not a number");
    expect_error(ARGS("--rate", "0"), "bad number for --rate", "out of range");
    expect_error(ARGS("--rate", "-1"), "bad number for --rate", "out of range");
    expect_error(ARGS("--rate", "100.5"), "bad number for --rate", "out of range");
    expect_error(ARGS("--rate", "1e999"), "bad number for --rate", "out of range");
    expect_error(ARGS("--rate", "1.5.2"), "bad number for --rate", "not a number");
    expect_error(ARGS("--rate="), "bad number for --rate", "is empty");

    /* a u32 with no max: UINT32_MAX, and one above it is too large */
    uint64_t v = 0;
    const char *why = NULL;
    CHECK(cli_parse_u64("4294967295", 0, UINT32_MAX, &v, &why) && v == UINT32_MAX);
    CHECK(!cli_parse_u64("4294967296", 0, UINT32_MAX, &v, &why) && strcmp(why, "too large") == 0);
    CHECK(cli_parse_u64("18446744073709551615", 0, UINT64_MAX, &v, &why) && v == UINT64_MAX);
    double d = 0;
    CHECK(cli_parse_f64("2.5e2", 0, 1e3, &d, &why) && d == 250.0);
}

static void test_options(void)
{
    check_case = "options";
    expect_error(ARGS("--bogus"), "unknown option '--bogus'", "--help");
    expect_error(ARGS("--bogus=3"), "unknown option '--bogus'", "--help");
    expect_error(ARGS("-x"), "unknown option '-x'", "--help");
    expect_error(ARGS("--coun", "3"), "unknown option '--coun'", NULL); /* no prefix matching */
    expect_error(ARGS("--count"), "--count needs a value", NULL);
    expect_error(ARGS("--count", "--quiet"), "--count needs a value", NULL);
    expect_error(ARGS("--name", ""), "--name needs a value", NULL);
    expect_error(ARGS("--name="), "--name needs a value", NULL);
    expect_error(ARGS("--quiet=yes"), "--quiet takes no value", NULL);
    expect_error(ARGS("file.json"), "unexpected argument 'file.json'", NULL);
    /* the first error stops the parse */
    expect_error(ARGS("--count", "x", "--bogus"), "bad number for --count", NULL);

    /* help: usage on `out`, status CLI_HELP (exit 0), whatever follows */
    parsed p = run(0, ARGS("--count", "3", "--help", "--bogus"));
    CHECK(p.rc == CLI_HELP && cli_exit_status(p.rc) == 0);
    CHECK(p.usage_calls == 1 && strncmp(p.out, "usage: tool", 11) == 0 && p.err[0] == '\0');
    p = run(0, ARGS("-h"));
    CHECK(p.rc == CLI_HELP && p.usage_calls == 1);
    /* after "--", "--help" is an argument */
    p = run(2, ARGS("--", "--help"));
    CHECK(p.rc == CLI_OK && p.usage_calls == 0 && p.npos == 1 && strcmp(p.pos[0], "--help") == 0);
}

static void test_positional(void)
{
    check_case = "positional";
    parsed p = run(2, ARGS("a.json", "--quiet", "-", "--count", "4"));
    CHECK(p.rc == CLI_OK && p.npos == 2 && p.quiet && p.count == 4);
    CHECK(strcmp(p.pos[0], "a.json") == 0 && strcmp(p.pos[1], "-") == 0);
    p = run(2, ARGS("--", "-x", "--count"));
    CHECK(p.rc == CLI_OK && p.npos == 2 && p.count == 7);
    CHECK(strcmp(p.pos[0], "-x") == 0 && strcmp(p.pos[1], "--count") == 0);
    p = run(2, ARGS("a", "b", "c"));
    CHECK(p.rc == CLI_ERROR && strstr(p.err, "tool: more than two files: 'c'") != NULL);
    p = run(2, ARGS(NULL));
    CHECK(p.rc == CLI_OK && p.npos == 0);
}

int main(void)
{
    test_values();
    test_numbers();
    test_options();
    test_positional();
    printf("%s: %d failure(s)\n", check_failures ? "FAILED" : "PASSED", check_failures);
    return check_failures ? 1 : 0;
}
