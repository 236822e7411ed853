/* The one option parser of the vkprof tools (every subcommand and
 * vkprof_clock_probe). Table-driven, no Vulkan:
 *
 *     static const cli_opt opts[] = {
 *         {"--tokens", CLI_U32, .u32 = &tokens, .min = 1, .max = 1u << 20},
 *         {"--json", CLI_STR, .str = &json},
 *         {"--no-dispatch", CLI_FLAG, .flag = &no_dispatch},
 *     };
 *     cli_spec s = {.tool = "vkprof bench", .opts = opts, .n_opts = 3, .usage = usage};
 *     int r = cli_parse(&s, argc, argv);
 *     if (r != CLI_OK) return cli_exit_status(r);
 *
 * The rules, the same for every command:
 *   - argv[0] is the command's name and is skipped;
 *   - `--name VALUE` and `--name=VALUE`; a flag takes no value (`--flag=x` is
 *     an error); a value is never empty, and the next argument is not taken as
 *     a value when it begins with "--" (write `--name=--x` for that);
 *   - `-h` and `--help` print the usage to stdout (CLI_HELP: exit 0);
 *   - `--` ends the options: what follows is positional, even "-x";
 *   - "-" alone is positional (stdin, stdout);
 *   - numbers are strict: decimal digits only for integers (no sign, no
 *     space, no "12x", no empty string), checked against [min, max] without
 *     overflow; a double is a plain decimal number in (fmin, fmax];
 *   - an unknown option is an error that names it and points at --help;
 *   - an option given twice: the last one counts.
 * Every error is one line on stderr, "TOOL: ...", naming the option; the
 * caller exits with status 2 (CLI_ERROR). */
#ifndef VKPROF_CLI_OPTS_H
#define VKPROF_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum cli_kind {
    CLI_FLAG, /* no value: *flag = true */
    CLI_STR,  /* *str = the value (points into argv) */
    CLI_U32,  /* *u32, within [min, max] */
    CLI_U64,  /* *u64, within [min, max] */
    CLI_F64,  /* *f64, within (fmin, fmax] */
} cli_kind;

typedef struct cli_opt {
    const char *name; /* with its dashes: "--tokens" */
    cli_kind kind;
    union {
        bool *flag;
        const char **str;
        uint32_t *u32;
        uint64_t *u64;
        double *f64;
    };
    uint64_t min, max; /* CLI_U32 / CLI_U64, inclusive; max 0 means the type's largest */
    double fmin, fmax; /* CLI_F64: fmin < v <= fmax */
} cli_opt;

typedef struct cli_spec {
    const char *tool; /* the prefix of every message: "vkprof bench" */
    const cli_opt *opts;
    size_t n_opts;
    void (*usage)(FILE *f); /* -h / --help: printed to `out` */
    /* positional arguments: up to max_pos of them into pos[], their count in
     * *n_pos; max_pos 0: none is accepted */
    const char **pos;
    size_t max_pos;
    size_t *n_pos;
    const char *too_many; /* the error for one too many: "more than one trace file" */
    FILE *out, *err;      /* NULL: stdout, stderr */
} cli_spec;

enum { CLI_OK = 0, CLI_HELP = 1, CLI_ERROR = 2 };

/* Parse argv[1..argc-1] by the table. Values are stored as they are parsed,
 * so after an error some outputs may have changed. */
int cli_parse(const cli_spec *s, int argc, char **argv);

/* The exit status for a result other than CLI_OK: 0 after --help, 2 after an
 * error. */
static inline int cli_exit_status(int r)
{
    return r == CLI_HELP ? 0 : 2;
}

/* The strict number parsers the table uses, for values that are not options.
 * Return true and set *out, or false with the reason in *why (a static
 * string: "empty", "negative", "not a whole number", "too large",
 * "out of range", "not a number"). */
bool cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char **why);
bool cli_parse_f64(const char *s, double fmin, double fmax, double *out, const char **why);

#endif
