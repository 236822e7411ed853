/* See cli_opts.h. */
#define _POSIX_C_SOURCE 200809L
#include "cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char **why)
{
    if (s[0] == '\0') {
        *why = "empty";
        return false;
    }
    if (s[0] == '-') {
        *why = "negative";
        return false;
    }
    uint64_t v = 0;
    bool big = false;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            *why = "not a whole number";
            return false;
        }
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10u) {
            big = true; /* keep checking the digits: "99999999999999999999x" is not a number */
        } else {
            v = v * 10u + d;
        }
    }
    if (big || v > max) {
        *why = "too large";
        return false;
    }
    if (v < min) {
        *why = "out of range";
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_f64(const char *s, double fmin, double fmax, double *out, const char **why)
{
    if (s[0] == '\0') {
        *why = "empty";
        return false;
    }
    /* a plain decimal number: no space, no hex, no inf or nan */
    for (const char *p = s; *p != '\0'; p++) {
        if (strchr("0123456789.eE+-", *p) == NULL) {
            *why = "not a number";
            return false;
        }
    }
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0') {
        *why = "not a number";
        return false;
    }
    if (errno == ERANGE || !isfinite(v)) {
        *why = "out of range";
        return false;
    }
    if (!(v > fmin && v <= fmax)) {
        *why = "out of range";
        return false;
    }
    *out = v;
    return true;
}

static FILE *err_of(const cli_spec *s)
{
    return s->err != NULL ? s->err : stderr;
}

static const cli_opt *find(const cli_spec *s, const char *name, size_t len)
{
    for (size_t i = 0; i < s->n_opts; i++) {
        const char *n = s->opts[i].name;
        if (strlen(n) == len && strncmp(n, name, len) == 0) {
            return &s->opts[i];
        }
    }
    return NULL;
}

static uint64_t type_max(const cli_opt *o)
{
    if (o->max != 0) {
        return o->max;
    }
    return o->kind == CLI_U32 ? UINT32_MAX : UINT64_MAX;
}

/* Store `v` (the value of `o`); prints the error and returns false. */
static bool set_value(const cli_spec *s, const cli_opt *o, const char *v)
{
    const char *why = NULL;
    switch (o->kind) {
    case CLI_STR: *o->str = v; return true;
    case CLI_U32:
    case CLI_U64: {
        uint64_t max = type_max(o), x = 0;
        if (o->kind == CLI_U32 && max > UINT32_MAX) {
            max = UINT32_MAX;
        }
        if (!cli_parse_u64(v, o->min, max, &x, &why)) {
            fprintf(err_of(s),
                    "%s: bad number for %s: '%s' is %s (expected a whole number %llu..%llu)\n",
                    s->tool, o->name, v, why, (unsigned long long)o->min, (unsigned long long)max);
            return false;
        }
        if (o->kind == CLI_U32) {
            *o->u32 = (uint32_t)x;
        } else {
            *o->u64 = x;
        }
        return true;
    }
    case CLI_F64: {
        double x = 0;
        if (!cli_parse_f64(v, o->fmin, o->fmax, &x, &why)) {
            fprintf(err_of(s),
                    "%s: bad number for %s: '%s' is %s (expected above %g, at most %g)\n", s->tool,
                    o->name, v, why, o->fmin, o->fmax);
            return false;
        }
        *o->f64 = x;
        return true;
    }
    case CLI_FLAG: break;
    }
    return false;
}

static bool add_positional(const cli_spec *s, size_t *n, const char *a)
{
    if (*n >= s->max_pos) {
        if (s->max_pos == 0 || s->too_many == NULL) {
            fprintf(err_of(s), "%s: unexpected argument '%s' (%s --help lists the options)\n",
                    s->tool, a, s->tool);
        } else {
            fprintf(err_of(s), "%s: %s: '%s'\n", s->tool, s->too_many, a);
        }
        return false;
    }
    s->pos[(*n)++] = a;
    return true;
}

int cli_parse(const cli_spec *s, int argc, char **argv)
{
    size_t npos = 0;
    if (s->n_pos != NULL) {
        *s->n_pos = 0;
    }
    bool options = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options || a[0] != '-' || a[1] == '\0') {
            if (!add_positional(s, &npos, a)) {
                return CLI_ERROR;
            }
            if (s->n_pos != NULL) {
                *s->n_pos = npos;
            }
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options = false;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            if (s->usage != NULL) {
                s->usage(s->out != NULL ? s->out : stdout);
            }
            return CLI_HELP;
        }
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t len = eq != NULL ? (size_t)(eq - a) : strlen(a);
        const cli_opt *o = a[1] == '-' ? find(s, a, len) : NULL;
        if (o == NULL) {
            fprintf(err_of(s), "%s: unknown option '%.*s' (%s --help lists the options)\n", s->tool,
                    (int)len, a, s->tool);
            return CLI_ERROR;
        }
        if (o->kind == CLI_FLAG) {
            if (eq != NULL) {
                fprintf(err_of(s), "%s: %s takes no value (got '%s')\n", s->tool, o->name, eq + 1);
                return CLI_ERROR;
            }
            *o->flag = true;
            continue;
        }
        const char *v;
        if (eq != NULL) {
            v = eq + 1;
        } else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
            v = argv[++i];
        } else {
            fprintf(err_of(s), "%s: %s needs a value\n", s->tool, o->name);
            return CLI_ERROR;
        }
        if (v[0] == '\0' && o->kind == CLI_STR) {
            fprintf(err_of(s), "%s: %s needs a value (got an empty one)\n", s->tool, o->name);
            return CLI_ERROR;
        }
        if (!set_value(s, o, v)) {
            return CLI_ERROR;
        }
    }
    return CLI_OK;
}
