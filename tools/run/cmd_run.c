/* `vkprof run [options] -- CMD ARGS...`: run an unmodified Vulkan app under
 * the vkprof layer (VK_LAYER_vkprof, src/layer/) and print, when it ends,
 * what the layer measured, process by process: how it ended, its one trace,
 * per device and queue family every dispatch (timed, lost or untimed, and
 * why), the per-phase table, the steps.
 *
 * The layer finishes a process that exits on its own (its trace and
 * summary); a process that died (a signal, a crash, _exit, exec) leaves its
 * spools in <dir>/.vkprof/, which this command finishes once the process has
 * ended (src/layer/finish.c), saying how it ended. It never deletes a file it
 * did not write: each run has its own id, and reports only its own
 * processes. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to vkprof run are
 * passed on to the command (a terminal's Ctrl-C reaches both already), and
 * the command is told to stop (SIGTERM) should vkprof run itself die. The
 * exit status is the command's (128+signal when a signal killed it).
 *
 * `vkprof recover DIR`: finish what processes left in DIR/.vkprof/ (they
 * died, or ran without vkprof run), once they have ended. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "run_defaults.h"
#include "cli_opts.h"
#include "finish.h"
#include "names.h"

#define TOOL "vkprof run"
#define LAYER_NAME "VK_LAYER_vkprof"
#define MANIFEST "VkLayer_vkprof.json"
#define RUN_MAX_SUMMARY (64u << 20) /* bytes per summary file */
#define RUN_MAX_FILES 4096u         /* summaries / process folders read */
#define RUN_PATH_MAX 4096
#define RUN_MAX_CHILDREN 4096u /* descendants whose end is remembered */

static void run_usage(FILE *f)
{
    fprintf(
        f,
        "usage: vkprof run [-o DIR] [--mode dispatch|label|cmdbuf] [--rotate K] [--sample N]\n"
        "                  [--busy on|off|N] [--cost-probe B] [--names FILE] [--keep first|last]\n"
        "                  [--trace-events N]\n"
        "                  [--format json|pftrace|both] [--layer-dir DIR] [--] CMD ARGS...\n"
        "  Run CMD with the vkprof layer (" LAYER_NAME ") on; when it ends, print for\n"
        "  each of its processes how it ended, its trace, and per device and queue\n"
        "  family every dispatch (timed, lost or untimed, and why), the GPU time of\n"
        "  each phase and the steps (a host wait that retires queue work closes one).\n"
        "  The report goes to stderr; CMD's own output is left alone. The exit status\n"
        "  is CMD's (128+N when signal N killed it). SIGINT, SIGTERM, SIGHUP, SIGQUIT\n"
        "  are passed on to CMD; a process killed or crashed keeps its trace up to its\n"
        "  last collection.\n"
        "  -o DIR, --output DIR  where each process's <exe>-<pid>.trace.json and\n"
        "                        .summary.json go (default vkprof-run; made when\n"
        "                        missing; nothing in it is deleted)\n"
        "  --mode M        dispatch (dispatches, the default: see --rotate), label\n"
        "                  (each debug label region) or cmdbuf (each command buffer)\n"
        "  --rotate K      dispatch mode: each step stamps only K dispatches (K + 1\n"
        "                  stamps), the next step the next K, so every dispatch\n"
        "                  position is timed once every ceil(dispatches a step / K)\n"
        "                  steps; phase times are then estimates (mean x calls).\n"
        "                  Default 2 (with --busy 8), unless --sample or another\n"
        "                  --mode is given. 0: every dispatch, each one stamped and\n"
        "                  so run alone, the GPU serialised (+36 to +64 %% of\n"
        "                  llama.cpp's step time on an H100): for short diagnostics\n"
        "  --busy on|off|N with --rotate or --mode label: also stamp each command\n"
        "                  buffer's start and end, for the GPU's busy time per step\n"
        "                  beside the window's split, or as what the label regions'\n"
        "                  shares are of (2 stamps a buffer). on: in every step; N:\n"
        "                  in 1 step in N, chosen at random, with no window in it\n"
        "                  (--rotate only); the second step is always one.\n"
        "                  Default: 8 with --rotate, off with\n"
        "                  --mode label\n"
        "  --sample N      time 1 submit in N (default 1)\n"
        "  --cost-probe B  measure what profiling costs the app in this run: steps go\n"
        "                  in blocks of B, and in each pair of blocks one, chosen at\n"
        "                  random, is not profiled; the report compares the steps'\n"
        "                  wall time with and without (the figures are scaled to\n"
        "                  every step). 0: off (the default)\n"
        "  --names FILE    a name map (vkprof names) for pipelines without a name;\n"
        "                  without one, modules are named after the symbols that hold\n"
        "                  them in the files the app loaded (VKPROF_LAYER_AUTO_NAMES=off:\n"
        "                  not)\n"
        "  --keep K        first (default): the first events, later ones counted as\n"
        "                  dropped; last: the last ones (a server stopped with Ctrl-C)\n"
        "  --trace-events N  events kept per queue family (1024..67108864; 262144)\n"
        "  --format F      json (default), pftrace (Perfetto's protobuf) or both\n"
        "  --layer-dir DIR the folder of " MANIFEST " (default: $VKPROF_LAYER_DIR,\n"
        "                  else <vkprof's folder>/layer, else\n"
        "                  <vkprof's folder>/../share/vulkan/explicit_layer.d)\n"
        "  The layer is enabled the loader's way: VK_ADD_LAYER_PATH gets the folder,\n"
        "  VK_INSTANCE_LAYERS gets " LAYER_NAME " appended; VKPROF_LAYER=on and the\n"
        "  options above go to the layer as VKPROF_LAYER_* variables.\n");
}

/* ---- small helpers ------------------------------------------------------- */

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* the folder of the running executable, from /proc/self/exe */
static bool exe_dir(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0 || (size_t)n >= cap - 1) {
        return false;
    }
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash == NULL) {
        return false;
    }
    *slash = '\0';
    return true;
}

/* bounded read of a whole file; NULL with the reason in err */
static char *read_file(const char *path, size_t max, size_t *len, char *err, size_t errcap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errcap, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf != NULL) {
        if (n == cap) {
            if (cap >= max) {
                snprintf(err, errcap, "larger than %zu bytes", max);
                free(buf);
                buf = NULL;
                break;
            }
            cap = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                snprintf(err, errcap, "cannot read: %s", strerror(errno));
                free(buf);
                buf = NULL;
            }
            break;
        }
    }
    if (buf == NULL && err[0] == '\0') {
        snprintf(err, errcap, "out of memory");
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ---- the layer's manifest ------------------------------------------------ */

/* Is DIR/VkLayer_vkprof.json a manifest of our layer whose library exists?
 * false with the reason in why. */
/* A message into a fixed buffer; cut short when it does not fit (a message,
 * never a path that is used). */
static void msgf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* Copy a path; false (and nothing usable) when it does not fit. */
static bool path_copy(char *out, size_t cap, const char *path)
{
    size_t n = strlen(path);
    if (n >= cap) {
        return false;
    }
    memcpy(out, path, n + 1);
    return true;
}

static bool check_manifest(const char *dir, char *why, size_t cap)
{
    char path[RUN_PATH_MAX];
    snprintf(path, sizeof path, "%s/" MANIFEST, dir);
    if (!is_file(path)) {
        snprintf(why, cap, "%s: no such file", path);
        return false;
    }
    char err[256] = "";
    size_t len = 0;
    char *text = read_file(path, 1u << 20, &len, err, sizeof err);
    if (text == NULL) {
        snprintf(why, cap, "%s: %s", path, err);
        return false;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *layer = cJSON_GetObjectItemCaseSensitive(root, "layer");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(layer, "name");
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(layer, "library_path");
    bool ok = false;
    if (root == NULL) {
        snprintf(why, cap, "%s: not JSON", path);
    } else if (!cJSON_IsString(name) || strcmp(name->valuestring, LAYER_NAME) != 0) {
        snprintf(why, cap, "%s: not the manifest of " LAYER_NAME " (layer.name)", path);
    } else if (!cJSON_IsString(lib) || lib->valuestring[0] == '\0') {
        snprintf(why, cap, "%s: no layer.library_path", path);
    } else if (strchr(lib->valuestring, '/') == NULL) {
        ok = true; /* a bare name: the loader searches the system's library path */
    } else {
        char libpath[RUN_PATH_MAX];
        if (lib->valuestring[0] == '/') {
            snprintf(libpath, sizeof libpath, "%s", lib->valuestring);
        } else {
            snprintf(libpath, sizeof libpath, "%s/%s", dir, lib->valuestring);
        }
        ok = is_file(libpath);
        if (!ok) {
            msgf(why, cap, "%s: its library %s does not exist", path, libpath);
        }
    }
    cJSON_Delete(root);
    return ok;
}

/* --layer-dir, $VKPROF_LAYER_DIR, <exe dir>/layer, <exe dir>/../share/...
 * The first place given or found decides; an explicit one that fails is an
 * error, not a reason to look further. */
static bool find_layer(const char *opt, char *out, size_t cap)
{
    char why[RUN_PATH_MAX + 256];
    const char *env = getenv("VKPROF_LAYER_DIR");
    const char *given = opt != NULL ? opt : (env != NULL && env[0] != '\0') ? env : NULL;
    if (given != NULL) {
        if (!check_manifest(given, why, sizeof why)) {
            fprintf(stderr, TOOL ": layer manifest not found (%s %s): %s\n",
                    opt != NULL ? "--layer-dir" : "VKPROF_LAYER_DIR", given, why);
            return false;
        }
        snprintf(out, cap, "%s", given);
        return true;
    }
    char dir[RUN_PATH_MAX];
    if (!exe_dir(dir, sizeof dir)) {
        fprintf(stderr, TOOL ": layer manifest not found: cannot tell vkprof's own folder "
                             "(give --layer-dir)\n");
        return false;
    }
    char cand[2][RUN_PATH_MAX + 64];
    snprintf(cand[0], sizeof cand[0], "%s/layer", dir);
    snprintf(cand[1], sizeof cand[1], "%s/../share/vulkan/explicit_layer.d", dir);
    char whys[2][RUN_PATH_MAX + 256];
    for (int i = 0; i < 2; i++) {
        if (check_manifest(cand[i], whys[i], sizeof whys[i])) {
            if (!path_copy(out, cap, cand[i])) {
                fprintf(stderr, TOOL ": the layer's folder is too long a path: %s\n", cand[i]);
                return false;
            }
            return true;
        }
    }
    fprintf(stderr,
            TOOL ": layer manifest not found; looked for:\n  %s\n  %s\n"
                 "  (build the layer, or give --layer-dir DIR or VKPROF_LAYER_DIR)\n",
            whys[0], whys[1]);
    return false;
}

/* ---- the environment ----------------------------------------------------- */

static bool set_env(const char *k, const char *v)
{
    if (setenv(k, v, 1) != 0) {
        fprintf(stderr, TOOL ": cannot set %s: %s\n", k, strerror(errno));
        return false;
    }
    return true;
}

/* is `item` one of the ':'-separated elements of `list`? */
static bool list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *end = strchr(p, ':');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0) {
            return true;
        }
        p = end != NULL ? end + 1 : NULL;
    }
    return false;
}

/* ---- the output folder --------------------------------------------------- */

/* Make DIR (one level) and check it can be written (a spool folder made, a
 * probe file written and removed); its absolute path in out. Nothing in it is
 * removed. */
static bool prepare_dir(const char *dir, char *out, size_t cap)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, TOOL ": cannot create the output folder %s: %s\n", dir, strerror(errno));
        return false;
    }
    if (!is_dir(dir)) {
        fprintf(stderr, TOOL ": the output folder %s is not a folder\n", dir);
        return false;
    }
    char abs[PATH_MAX];
    if (realpath(dir, abs) == NULL || strlen(abs) >= cap || strlen(abs) > 900) {
        fprintf(stderr, TOOL ": the output folder %s: %s\n", dir,
                errno ? strerror(errno) : "too long a path");
        return false;
    }
    snprintf(out, cap, "%s", abs);
    char sp[RUN_PATH_MAX], probe[RUN_PATH_MAX + 64];
    if (snprintf(sp, sizeof sp, "%s/" LYR_SPOOL_DIR, abs) >= (int)sizeof sp) {
        fprintf(stderr, TOOL ": the output folder %s: too long a path\n", abs);
        return false;
    }
    if (mkdir(sp, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, TOOL ": cannot write to the output folder %s: %s\n", abs, strerror(errno));
        return false;
    }
    snprintf(probe, sizeof probe, "%s/.probe-%ld", sp, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 || write(fd, "x", 1) != 1) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(probe);
        }
        fprintf(stderr, TOOL ": cannot write to the output folder %s: %s\n", abs, strerror(e));
        return false;
    }
    close(fd);
    unlink(probe);
    return true;
}

/* ---- the environment ----------------------------------------------------- */

typedef struct run_opts {
    const char *mode, *names, *keep, *format;
    const char *busy;    /* --busy on|off|N: the command buffers' busy scopes beside --rotate */
    uint32_t busy_every; /* --busy N: in 1 step in N (0: not given as a number) */
    uint32_t sample, trace_events;
    uint32_t rotate;     /* UINT32_MAX: not given */
    uint32_t cost_block; /* --cost-probe B; UINT32_MAX: not given */
    char run_id[64];
} run_opts;

static bool setup_env(const char *layer_dir, const char *out_dir, const run_opts *o)
{
    char buf[3 * RUN_PATH_MAX];
    const char *old = getenv("VK_ADD_LAYER_PATH");
    if (old != NULL && old[0] != '\0') {
        snprintf(buf, sizeof buf, "%s:%s", layer_dir, old);
    } else {
        snprintf(buf, sizeof buf, "%s", layer_dir);
    }
    if (!set_env("VK_ADD_LAYER_PATH", buf)) {
        return false;
    }
    old = getenv("VK_INSTANCE_LAYERS");
    if (old == NULL || old[0] == '\0') {
        snprintf(buf, sizeof buf, "%s", LAYER_NAME);
    } else if (list_has(old, LAYER_NAME)) {
        snprintf(buf, sizeof buf, "%s", old);
    } else {
        snprintf(buf, sizeof buf, "%s:%s", old, LAYER_NAME);
    }
    if (!set_env("VK_INSTANCE_LAYERS", buf) || !set_env("VKPROF_LAYER", "on") ||
        !set_env("VKPROF_LAYER_OUTPUT_DIR", out_dir) || !set_env("VKPROF_LAYER_RUN", o->run_id)) {
        return false;
    }
    char n[32];
    if (o->mode != NULL && !set_env("VKPROF_LAYER_MODE", o->mode)) {
        return false;
    }
    if (o->sample > 0) {
        snprintf(n, sizeof n, "%u", o->sample);
        if (!set_env("VKPROF_LAYER_SAMPLE", n)) {
            return false;
        }
    }
    if (o->rotate != UINT32_MAX) {
        snprintf(n, sizeof n, "%u", o->rotate);
        if (!set_env("VKPROF_LAYER_ROTATE", n)) {
            return false;
        }
    }
    if (o->cost_block != UINT32_MAX) {
        snprintf(n, sizeof n, "%u", o->cost_block);
        if (!set_env("VKPROF_LAYER_COST_BLOCK", n)) {
            return false;
        }
    }
    if (o->busy_every > 0) {
        /* --busy N: the busy scopes in 1 step in N, a step of their own */
        snprintf(n, sizeof n, "%u", o->busy_every);
        if (!set_env("VKPROF_LAYER_BUSY", "on") || !set_env("VKPROF_LAYER_BUSY_EVERY", n)) {
            return false;
        }
    } else if (o->busy != NULL && !set_env("VKPROF_LAYER_BUSY", o->busy)) {
        return false;
    } else if (o->busy != NULL && strcmp(o->busy, "on") == 0 &&
               !set_env("VKPROF_LAYER_BUSY_EVERY", "1")) {
        return false; /* --busy on: every step, whatever the environment says */
    }
    if (o->names != NULL && !set_env("VKPROF_LAYER_NAMES", o->names)) {
        return false;
    }
    if (o->keep != NULL && !set_env("VKPROF_LAYER_TRACE_KEEP", o->keep)) {
        return false;
    }
    if (o->format != NULL && !set_env("VKPROF_LAYER_TRACE_FORMAT", o->format)) {
        return false;
    }
    if (o->trace_events > 0) {
        snprintf(n, sizeof n, "%u", o->trace_events);
        if (!set_env("VKPROF_LAYER_TRACE_EVENTS", n)) {
            return false;
        }
    }
    return true;
}

/* ---- the child, and the signals it is sent -------------------------------- */

/* The ends of processes this run saw (its command, and descendants that
 * were orphaned and so became ours: vkprof run is their subreaper). */
typedef struct ended {
    pid_t pid;
    int ws;
} ended;
static ended g_ended[RUN_MAX_CHILDREN];
static uint32_t g_nended;

static volatile sig_atomic_t g_child; /* the command's pid once started, else 0 */

/* Pass the signal on from the handler itself (kill is async-signal-safe), so
 * none is left waiting for the main loop: a signal that came while vkprof run
 * was between two waits would otherwise reach the command only with the next. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    const int saved = errno;
    /* a terminal's signal (si_code SI_KERNEL) reached the command too: only
     * one sent to vkprof run itself is passed on */
    if (si != NULL && si->si_code != SI_KERNEL && g_child > 0) {
        kill((pid_t)g_child, sig);
    }
    errno = saved;
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void remember(pid_t pid, int ws)
{
    if (g_nended < RUN_MAX_CHILDREN) {
        g_ended[g_nended].pid = pid;
        g_ended[g_nended].ws = ws;
        g_nended++;
    }
}

static const ended *ended_of(pid_t pid)
{
    for (uint32_t i = 0; i < g_nended; i++) {
        if (g_ended[i].pid == pid) {
            return &g_ended[i];
        }
    }
    return NULL;
}

/* Start cmd and wait for it, passing the signals on. Its exit status in
 * *status (shell style: 128+signal), or 126 / 127 when it could not be
 * started (the message printed). Returns 0 (ran), 1 (not started), -1. */
static int run_child(char **cmd, int *status, int *signo, pid_t *child)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        fprintf(stderr, TOOL ": pipe: %s\n", strerror(errno));
        return -1;
    }
    /* orphaned descendants come to us: their ends are known (exit status or
     * signal), not guessed */
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    /* held back until the command's pid is known, then passed on at once */
    sigset_t fwd, oldmask;
    sigemptyset(&fwd);
    for (int i = 0; i < 4; i++) {
        sigaddset(&fwd, forwarded[i]);
    }
    sigprocmask(SIG_BLOCK, &fwd, &oldmask);
    struct sigaction sa, old[4];
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 4; i++) {
        sigaction(forwarded[i], &sa, &old[i]);
    }
    const pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, TOOL ": fork: %s\n", strerror(errno));
        for (int i = 0; i < 4; i++) {
            sigaction(forwarded[i], &old[i], NULL);
        }
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        /* the command gets vkprof run's own dispositions (an ignored SIGINT
         * stays ignored, as without vkprof run) and mask */
        for (int i = 0; i < 4; i++) {
            sigaction(forwarded[i], &old[i], NULL);
        }
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        /* never orphaned: should vkprof run die, the command is told to stop */
        (void)prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        if (getppid() != parent) {
            _exit(127); /* vkprof run died before the line above */
        }
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t w = write(pipefd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    *child = pid;
    g_child = (sig_atomic_t)pid;
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    close(pipefd[1]);
    int e = 0;
    ssize_t got;
    do {
        got = read(pipefd[0], &e, sizeof e);
    } while (got < 0 && errno == EINTR);
    close(pipefd[0]);
    /* wait for the command; on the way, reap the orphans that come to us */
    int ws = 0;
    bool done = false;
    while (!done) {
        int s = 0;
        pid_t r = waitpid(-1, &s, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            fprintf(stderr, TOOL ": waitpid: %s\n", strerror(errno));
            break;
        }
        remember(r, s);
        if (r == pid) {
            ws = s;
            done = true;
        }
    }
    /* orphans that have ended already */
    for (;;) {
        int s = 0;
        pid_t r = waitpid(-1, &s, WNOHANG);
        if (r <= 0) {
            break;
        }
        remember(r, s);
    }
    sigprocmask(SIG_BLOCK, &fwd, NULL);
    g_child = 0;
    for (int i = 0; i < 4; i++) {
        sigaction(forwarded[i], &old[i], NULL);
    }
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    if (got == (ssize_t)sizeof e) {
        fprintf(stderr, TOOL ": %s: cannot start: %s\n", cmd[0], strerror(e));
        *status = e == ENOENT ? 127 : 126;
        return 1;
    }
    if (!done) {
        return -1;
    }
    if (WIFEXITED(ws)) {
        *status = WEXITSTATUS(ws);
    } else if (WIFSIGNALED(ws)) {
        *signo = WTERMSIG(ws);
        *status = 128 + *signo;
    } else {
        *status = 1;
    }
    return 0;
}

/* ---- finishing what the processes left ------------------------------------ */

static bool alive(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return false;
    }
    /* a zombie (not ours to reap) has ended too */
    char p[64], st[512];
    snprintf(p, sizeof p, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(p, "r");
    if (f == NULL) {
        return false;
    }
    bool z = false;
    if (fgets(st, sizeof st, f) != NULL) {
        const char *c = strrchr(st, ')');
        z = c != NULL && c[1] == ' ' && (c[2] == 'Z' || c[2] == 'X');
    }
    fclose(f);
    return !z;
}

typedef struct proc_dir {
    char base[256];
    lyr_index *ix;
} proc_dir;

/* Every process folder in <dir>/.vkprof/ with an index (of this run, or any
 * when run_id is NULL), read; the count in *n. */
static proc_dir *list_proc_dirs(const char *dir, const char *run_id, uint32_t *n)
{
    *n = 0;
    char sp[RUN_PATH_MAX];
    snprintf(sp, sizeof sp, "%s/" LYR_SPOOL_DIR, dir);
    DIR *d = opendir(sp);
    if (d == NULL) {
        return NULL;
    }
    proc_dir *v = calloc(RUN_MAX_FILES, sizeof *v);
    struct dirent *e;
    while (v != NULL && (e = readdir(d)) != NULL && *n < RUN_MAX_FILES) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof v[0].base) {
            continue;
        }
        char ip[RUN_PATH_MAX + 300], err[512];
        snprintf(ip, sizeof ip, "%s/%s/index", sp, e->d_name);
        if (!is_file(ip)) {
            continue;
        }
        lyr_index *ix = lyr_index_read(ip, err, sizeof err);
        if (ix == NULL) {
            fprintf(stderr, TOOL ": %s\n", err);
            continue;
        }
        if ((run_id != NULL && strcmp(ix->run, run_id) != 0) || strcmp(ix->base, e->d_name) != 0) {
            free(ix);
            continue;
        }
        snprintf(v[*n].base, sizeof v[*n].base, "%s", e->d_name);
        v[*n].ix = ix;
        (*n)++;
    }
    closedir(d);
    return v;
}

/* How a process ended, as far as we know. */
static lyr_ending ending_of(const proc_dir *all, uint32_t n, const proc_dir *p, const char *who,
                            char *detail, size_t cap)
{
    lyr_ending end = {"unknown", 0, 0, NULL, who};
    const lyr_index *ix = p->ix;
    /* exec: the next image said so at its start; or an image of the same
     * pid that started later is here */
    const char *by = atomic_load(&ix->replaced_ns) != 0 ? ix->replaced_by : NULL;
    for (uint32_t i = 0; i < n && by == NULL; i++) {
        if (&all[i] != p && all[i].ix->pid == ix->pid && all[i].ix->created_ns > ix->created_ns) {
            by = all[i].ix->exe;
        }
    }
    if (by != NULL) {
        snprintf(detail, cap,
                 "its image was replaced by exec (%s, the same pid, took over): complete up to "
                 "its last collection",
                 by);
        end.detail = detail;
        end.how = "exec";
        return end;
    }
    const ended *e = ended_of((pid_t)ix->pid);
    if (e != NULL && WIFSIGNALED(e->ws)) {
        end.how = "signal";
        end.signo = WTERMSIG(e->ws);
        snprintf(detail, cap, "complete up to its last collection");
    } else if (e != NULL && WIFEXITED(e->ws)) {
        end.how = "exit";
        end.status = WEXITSTATUS(e->ws);
        snprintf(detail, cap,
                 "without the layer's exit (_exit, or a crash handler that exits): complete up "
                 "to its last collection");
    } else {
        snprintf(detail, cap,
                 "it ended without the layer's exit (a signal, a crash, _exit): complete up to "
                 "its last collection");
    }
    end.detail = detail;
    return end;
}

/* The bases of the processes finished by this command (vkprof recover
 * reports those only). */
static char (*g_finished)[256];
static uint32_t g_nfinished;

/* Finish every process folder of this run (run_id) or of any (NULL) whose
 * process has ended. Returns the number finished; *left: still running. */
static uint32_t finish_left(const char *dir, const char *run_id, const char *who, uint32_t *left)
{
    uint32_t n = 0, done = 0;
    *left = 0;
    proc_dir *v = list_proc_dirs(dir, run_id, &n);
    for (uint32_t i = 0; v != NULL && i < n; i++) {
        lyr_index *ix = v[i].ix;
        if (atomic_load(&ix->state) == LYR_PROC_FINISHED) {
            lyr_remove_dir(dir, ix); /* finished: only what is left of it */
            continue;
        }
        bool replaced = atomic_load(&ix->replaced_ns) != 0;
        for (uint32_t k = 0; k < n; k++) {
            replaced |= k != i && v[k].ix->pid == ix->pid && v[k].ix->created_ns > ix->created_ns;
        }
        if (!replaced && alive((pid_t)ix->pid)) {
            fprintf(stderr,
                    TOOL ": %s (pid %lld) is still running: its spools stay in %s/" LYR_SPOOL_DIR
                         "/%s (vkprof recover %s once it has ended)\n",
                    ix->exe, (long long)ix->pid, dir, v[i].base, dir);
            (*left)++;
            continue;
        }
        char detail[512], err[RUN_PATH_MAX + 512] = "";
        lyr_ending end = ending_of(v, n, &v[i], who, detail, sizeof detail);
        if (lyr_finish_dir(dir, v[i].base, &end, NULL, err, sizeof err) != 0) {
            fprintf(stderr, TOOL ": %s (pid %lld): %s\n", ix->exe, (long long)ix->pid, err);
        } else {
            done++;
            if (g_finished == NULL) {
                g_finished = calloc(RUN_MAX_FILES, sizeof *g_finished);
            }
            if (g_finished != NULL && g_nfinished < RUN_MAX_FILES) {
                snprintf(g_finished[g_nfinished++], sizeof g_finished[0], "%s", v[i].base);
            }
        }
    }
    for (uint32_t i = 0; v != NULL && i < n; i++) {
        free(v[i].ix);
    }
    free(v);
    return done;
}

/* ---- the report ---------------------------------------------------------- */

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static bool has_num(const cJSON *o, const char *key)
{
    return cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* A uint64 from JSON: cJSON keeps doubles, exact up to 2^53 (ns: 104 days). */
static uint64_t u64(const cJSON *o, const char *key)
{
    double d = num(o, key);
    return d > 0 ? (uint64_t)d : 0;
}

typedef struct report {
    FILE *out;
    unsigned processes, devices, devices_timed;
    uint64_t dispatches;
    /* the command's own end, which only vkprof run knows (the layer writes
     * its summary before the exit status exists) */
    long long child;
    int child_status, child_signo;
    const char *mode;    /* the process being printed: its layer mode */
    uint64_t rotate;     /* its rotating window (0: none) */
    uint64_t busy_every; /* its busy scopes: in 1 step in N (0: none, or an older layer) */
} report;

static const char *const lost_keys[] = {
    "ring_full", "overwritten", "never_submitted", "reset", "misuse", "backwards", "stale"};

/* "key n, key n" of an object's non-zero members; "" when all are zero */
static void nonzero_list(const cJSON *obj, char *out, size_t cap, uint64_t *sum)
{
    out[0] = '\0';
    *sum = 0;
    size_t used = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, obj)
    {
        if (!cJSON_IsNumber(m) || m->valuedouble <= 0 || m->string == NULL) {
            continue;
        }
        *sum += (uint64_t)m->valuedouble;
        int w = snprintf(out + used, cap - used, "%s%s %llu", used ? ", " : "", m->string,
                         (unsigned long long)m->valuedouble);
        if (w < 0 || (size_t)w >= cap - used) {
            break;
        }
        used += (size_t)w;
    }
}

/* A phase's GPU time in the table: measured, or where calls were left out its estimate
 * (the library's: the mean of its timed calls times its calls, each
 * execution of a re-submitted recording counting its calls again; its
 * first calls, a driver's compile stamped apart, once). */
static double phase_ns(const cJSON *p, bool est)
{
    return (double)u64(p, est ? "est_total_ns" : "total_ns");
}

/* Rotation: how far the window has gone, what it has not reached, and what
 * the estimate assumes. */
static void print_rotation(report *r, const cJSON *timing, const cJSON *phases, double replay,
                           uint64_t outer_calls, uint64_t outer_left_out)
{
    FILE *o = r->out;
    /* the command buffers' outer scopes are calls too: stamped in every
     * profiled step; those the cost probe's blocks left out are unstamped
     * calls (the layer counts them: outer_left_out) */
    const uint64_t executed = u64(timing, "calls_executed");
    const uint64_t calls = executed > outer_calls ? executed - outer_calls : 0;
    const uint64_t all_un = u64(timing, "calls_unstamped");
    const uint64_t unstamped = all_un > outer_left_out ? all_un - outer_left_out : 0;
    const cJSON *rot = cJSON_GetObjectItemCaseSensitive(timing, "rotation");
    fprintf(o,
            "      rotating: %llu dispatches stamped a step of %llu, every position once in %llu "
            "steps; %llu passes completed; %llu of %llu calls stamped\n",
            (unsigned long long)u64(timing, "rotate_scopes"),
            (unsigned long long)u64(rot, "calls_per_step"),
            (unsigned long long)u64(rot, "period_steps"), (unsigned long long)u64(rot, "cycles"),
            (unsigned long long)(calls > unstamped ? calls - unstamped : 0),
            (unsigned long long)calls);
    uint64_t first_calls = 0, first_ns = 0, first_max = 0;
    const char *first_name = NULL;
    const cJSON *q;
    cJSON_ArrayForEach(q, phases)
    {
        first_calls += u64(q, "first_calls");
        first_ns += u64(q, "first_ns");
        if (u64(q, "first_ns") > first_max) {
            first_max = u64(q, "first_ns");
            first_name = str(q, "name", "?");
        }
    }
    if (first_calls > 0) {
        fprintf(o,
                "      first calls: each phase's first dispatch is stamped whatever the window "
                "and counted once, not scaled (a driver may compile a pipeline there): %llu "
                "calls, %.3f ms, the longest %s (%.3f ms)\n",
                (unsigned long long)first_calls, (double)first_ns / 1e6,
                first_name != NULL ? first_name : "?", (double)first_max / 1e6);
    }
    if (u64(rot, "changed_steps") > 0) {
        fprintf(o,
                "      %llu steps had another number of dispatches than the step before: the "
                "window still moves over every position, but not exactly once a pass\n",
                (unsigned long long)u64(rot, "changed_steps"));
    }
    if (replay != 1.0) {
        fprintf(o,
                "      recordings were submitted more than once (%.3f dispatches executed per "
                "one recorded): each execution counts its calls, and a re-submitted recording "
                "keeps the window it was recorded with\n",
                replay);
    }
}

/* Nested label regions (issue 26): the table gives each region's own
 * time; this tree gives each one's total, its own and its nested
 * regions', from the parents the layer told the library
 * (vkprof_set_phase_parent). Shares are of the table's base (the busy time
 * with --busy on). Printed only where some region has a parent. */
typedef struct region_node {
    const cJSON *p;
    double own, total;
    int parent; /* index, -1 none, -2 several */
} region_node;

static void print_region(FILE *o, const region_node *nd, int n, int at, int depth, int width,
                         double base, uint64_t steps)
{
    char per[32] = "-";
    if (steps > 0) {
        snprintf(per, sizeof per, "%.1f", nd[at].total / (double)steps / 1e3);
    }
    fprintf(o, "      %*s%-*.63s %12.3f %12.3f %8.1f %14s\n", 2 * depth, "", width - 2 * depth,
            str(nd[at].p, "name", "?"), nd[at].total / 1e6, nd[at].own / 1e6,
            base > 0 ? 100.0 * nd[at].total / base : 0.0, per);
    if (depth >= 16) {
        return; /* the walk's own bound: a tree deeper than any app nests */
    }
    for (int k = 0; k < n; k++) {
        if (nd[k].parent == at && k != at && nd[k].total > 0) {
            print_region(o, nd, n, k, depth + 1, width, base, steps);
        }
    }
}

static void print_region_totals(FILE *o, const cJSON *phases, bool est, double factor,
                                uint64_t steps, double base, bool of_busy, int width)
{
    enum { MAXN = 512 };
    region_node nd[MAXN];
    int n = 0;
    bool nested = false;
    const cJSON *p;
    cJSON_ArrayForEach(p, phases)
    {
        if (n == MAXN) {
            break;
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "outer"))) {
            continue;
        }
        nd[n].p = p;
        nd[n].own = u64(p, "count") > 0 ? phase_ns(p, est) * factor : 0.0;
        nd[n].total = 0;
        nd[n].parent =
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "parent_several")) ? -2 : -1;
        n++;
    }
    for (int i = 0; i < n; i++) {
        const char *pn = str(nd[i].p, "parent", NULL);
        for (int k = 0; pn != NULL && k < n; k++) {
            if (k != i && strcmp(str(nd[k].p, "name", ""), pn) == 0) {
                nd[i].parent = k;
                nested = true;
                break;
            }
        }
    }
    if (!nested) {
        return;
    }
    /* each region's own time into its total and every enclosing one's, up
     * a chain of at most n links (a cycle of names stops there) */
    for (int i = 0; i < n; i++) {
        int at = i;
        for (int hops = 0; at >= 0 && hops <= n; hops++) {
            nd[at].total += nd[i].own;
            at = nd[at].parent;
        }
    }
    const char *several = NULL;
    for (int i = 0; i < n && several == NULL; i++) {
        if (nd[i].parent == -2 && nd[i].total > 0) {
            several = str(nd[i].p, "name", "?");
        }
    }
    fprintf(o, "      each region's total, its own time and its nested regions':\n");
    fprintf(o, "      %-*s %12s %12s %8s %14s\n", width, "region", est ? "total ms~" : "total ms",
            est ? "own ms~" : "own ms", of_busy ? "% busy" : "share %",
            est ? "per step us~" : "per step us");
    for (int i = 0; i < n; i++) {
        if (nd[i].parent < 0 && nd[i].total > 0) {
            print_region(o, nd, n, i, 0, width, base, steps);
        }
    }
    if (several != NULL) {
        fprintf(o,
                "      %s lies in several regions (or at the top and in one): its time is in "
                "its own total, not in the regions around it\n",
                several);
    }
}

/* Phases with calls but no timed one: no estimate (never a silent 0). */
static void print_untimed(report *r, const cJSON *phases, uint64_t rotate)
{
    FILE *o = r->out;
    fprintf(o, "      not timed yet (%s: run more steps; no estimate):",
            rotate > 0 ? "the window has not reached them" : "none of their calls was timed");
    const cJSON *p;
    uint64_t shown = 0;
    cJSON_ArrayForEach(p, phases)
    {
        if (u64(p, "count") == 0 && u64(p, "calls") > 0 &&
            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "outer"))) {
            if (shown++ == 8) {
                fprintf(o, " ...");
                break;
            }
            fprintf(o, " %s (%llu calls)", str(p, "name", "?"),
                    (unsigned long long)u64(p, "calls"));
        }
    }
    fprintf(o, "\n");
}

/* One context of one device: the per-phase table, the samples, the store. */
/* Why a context timed nothing, where the summary shows it: label mode with
 * no command-buffer label (ggml's debug markers open only queue labels). */
static void print_nothing_timed(report *r, const cJSON *fam)
{
    FILE *o = r->out;
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(fam, "labels");
    uint64_t cmd = u64(labels, "command_buffer"), queue = u64(labels, "queue");
    if (r->mode != NULL && strcmp(r->mode, "label") == 0 && cmd == 0) {
        fprintf(o,
                "      no GPU work timed: --mode label times command-buffer label regions, and "
                "none was opened (%llu queue labels were: they mark no GPU work of their own); "
                "try --mode dispatch\n",
                (unsigned long long)queue);
    } else if (r->mode != NULL && strcmp(r->mode, "label") == 0) {
        fprintf(o,
                "      no GPU work timed: %llu command-buffer labels were opened, but no "
                "dispatch ran inside one; try --mode dispatch\n",
                (unsigned long long)cmd);
    } else {
        fprintf(o, "      no GPU work timed\n");
    }
}

static void print_context(report *r, const cJSON *ctxo, const cJSON *fam, uint64_t steps,
                          uint64_t sample_every, bool label)
{
    FILE *o = r->out;
    const cJSON *snap = cJSON_GetObjectItemCaseSensitive(ctxo, "snapshot");
    const cJSON *phases = cJSON_GetObjectItemCaseSensitive(snap, "phases");
    const cJSON *timing = cJSON_GetObjectItemCaseSensitive(snap, "timing");
    const bool sim = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ctxo, "simultaneous_use"));
    if (label) {
        fprintf(o, "    queue family %llu%s, GPU time by phase:\n",
                (unsigned long long)u64(ctxo, "family"), sim ? " (simultaneous-use buffers)" : "");
    }
    const char *missing = str(ctxo, "spool_missing", NULL);
    if (snap == NULL || cJSON_IsNull(snap)) {
        fprintf(o, "      nothing read: %s\n", missing != NULL ? missing : "no context");
        return;
    }
    if (missing != NULL) {
        fprintf(o,
                "      no spool (%s): what it recorded is in the process's trace only if it "
                "exited\n",
                missing);
    }
    /* Where calls were left out (--rotate K's window, --sample N's submits,
     * the cost probe's blocks), a phase's time is its estimate: the
     * library's est_total_ns, the mean of its timed calls times its calls
     * (the layer counts the calls of the recordings it leaves out). A
     * phase with calls but no timed one yet has none and is named below
     * the table. */
    const uint64_t rotate = u64(timing, "rotate_scopes");
    const cJSON *dd = cJSON_GetObjectItemCaseSensitive(fam, "dispatches");
    const cJSON *xu = cJSON_GetObjectItemCaseSensitive(dd, "executed_untimed");
    const cJSON *ru = cJSON_GetObjectItemCaseSensitive(dd, "recorded_untimed");
    const uint64_t probe = u64(xu, "cost_probe");
    const bool est = rotate > 0 || u64(timing, "calls_unstamped") > 0;
    const bool scaled = est || sample_every > 1 || probe > 0;
    /* a layer that did not count the calls it left out (older than the
     * counting: no est): its table is scaled by the dispatches that ran
     * over those timed, as vkprof run did then */
    double factor = 1.0;
    if (!est && fam != NULL && (sample_every > 1 || probe > 0)) {
        uint64_t ex = u64(dd, "executed"), ns = u64(xu, "not_sampled") + probe;
        if (ns > 0 && ex > ns) {
            factor = (double)ex / (double)(ex - ns);
        }
    }
    /* the buffers' own scopes (busy, cmdbuf) the sampling or the probe
     * left out, as the layer counted them (absent from older summaries:
     * then every outer call not timed) */
    const cJSON *rec_o = cJSON_GetObjectItemCaseSensitive(fam, "recording");
    const bool has_left = cJSON_GetObjectItemCaseSensitive(rec_o, "scopes_left_out") != NULL;
    double replay = 1.0;
    if (rotate > 0 && fam != NULL) {
        /* a recording submitted more than once ran its calls once per
         * submit (said under the table; the library counts each execution) */
        uint64_t ex = u64(dd, "executed"), rec = u64(dd, "recorded");
        uint64_t ns = u64(xu, "not_sampled") + probe;
        uint64_t rns = u64(ru, "not_sampled") + u64(ru, "cost_probe");
        if (rec > rns && ex > ns && ex - ns != rec - rns) {
            replay = (double)(ex - ns) / (double)(rec - rns);
        }
    }
    double total = 0;
    uint64_t timed_total = 0, untimed_phases = 0;
    /* outer phases (the command buffers beside the window): stamped in
     * every step, their time holds the others': the busy time, no row */
    uint64_t outer_est = 0, outer_count = 0, outer_calls = 0;
    size_t rows = 0;
    int width = 24; /* the name column: the longest name shown, at most 63 */
    const cJSON *p;
    cJSON_ArrayForEach(p, phases)
    {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "outer"))) {
            outer_est += u64(p, "est_total_ns");
            outer_count += u64(p, "count");
            outer_calls += u64(p, "calls");
            continue;
        }
        if (est && u64(p, "count") == 0 && u64(p, "calls") > 0) {
            untimed_phases++;
        }
        if (u64(p, "count") > 0) {
            total += phase_ns(p, est) * factor;
            timed_total += u64(p, "total_ns");
            rows++;
            size_t len = strlen(str(p, "name", "?"));
            if ((int)len > width) {
                width = len > 63 ? 63 : (int)len;
            }
        }
    }
    if (rows == 0) {
        print_nothing_timed(r, fam);
    } else {
        /* label regions inside their buffers' busy scopes: each region's
         * own time is a share of the queue's busy time, and what lies in no
         * label is a row of its own (issue 26) */
        const bool of_busy =
            r->mode != NULL && strcmp(r->mode, "label") == 0 && outer_count > 0 && outer_est > 0;
        const double base = of_busy ? (double)outer_est : total;
        if (est) {
            fprintf(o, "      %-*s %10s %10s %12s %8s %14s\n", width, "phase", "timed", "calls",
                    "timed ms", of_busy ? "% busy~" : "share %~", "per step us~");
        } else {
            fprintf(o, "      %-*s %10s %12s %8s %14s\n", width, "phase", "count", "total ms",
                    of_busy ? "% busy" : "share %", scaled ? "per step us~" : "per step us");
        }
        /* largest first */
        const cJSON **sorted = calloc(rows, sizeof *sorted);
        size_t n = 0;
        cJSON_ArrayForEach(p, phases)
        {
            if (sorted != NULL && u64(p, "count") > 0 &&
                !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "outer"))) {
                sorted[n++] = p;
            }
        }
        for (size_t i = 1; i < n; i++) {
            for (size_t k = i; k > 0 && phase_ns(sorted[k], est) > phase_ns(sorted[k - 1], est);
                 k--) {
                const cJSON *t = sorted[k];
                sorted[k] = sorted[k - 1];
                sorted[k - 1] = t;
            }
        }
        for (size_t i = 0; i < n; i++) {
            const double t = phase_ns(sorted[i], est) * factor;
            char per[32] = "-";
            if (steps > 0) {
                snprintf(per, sizeof per, "%.1f", (double)t / (double)steps / 1e3);
            }
            const double share = base > 0 ? 100.0 * (double)t / base : 0.0;
            if (est) {
                fprintf(o, "      %-*.63s %10llu %10llu %12.3f %8.1f %14s\n", width,
                        str(sorted[i], "name", "?"), (unsigned long long)u64(sorted[i], "count"),
                        (unsigned long long)u64(sorted[i], "calls"),
                        (double)u64(sorted[i], "total_ns") / 1e6, share, per);
            } else {
                fprintf(o, "      %-*.63s %10llu %12.3f %8.1f %14s\n", width,
                        str(sorted[i], "name", "?"), (unsigned long long)u64(sorted[i], "count"),
                        (double)t / factor / 1e6, share, per);
            }
        }
        free(sorted);
        char per[32] = "-";
        if (steps > 0) {
            snprintf(per, sizeof per, "%.1f", (double)total / (double)steps / 1e3);
        }
        const double tshare = base > 0 ? 100.0 * total / base : 0.0;
        if (est) {
            fprintf(o, "      %-*s %10s %10s %12.3f %8.1f %14s\n", width, "total", "", "",
                    (double)timed_total / 1e6, tshare, per);
        } else {
            fprintf(o, "      %-*s %10s %12.3f %8.1f %14s\n", width, "total", "",
                    (double)total / factor / 1e6, tshare, per);
        }
        if (of_busy && steps > 0) {
            const double rest = base > total ? base - total : 0.0;
            fprintf(o,
                    "      in no label: %.3f ms per step, %.1f%% of the busy time (its buffers' "
                    "work outside every label region, and the gaps between regions)\n",
                    rest / (double)steps / 1e6, 100.0 * rest / base);
        }
        if (r->mode != NULL && strcmp(r->mode, "label") == 0) {
            print_region_totals(o, phases, est, factor, steps, base, of_busy,
                                width < 30 ? 30 : width);
        }
        if (steps > 0) {
            const char *why = rotate > 0 && probe > 0
                                  ? "rotating window and the cost probe's blocks"
                              : rotate > 0       ? "rotating window"
                              : sample_every > 1 ? "submits sampled"
                                                 : "the cost probe's blocks";
            fprintf(o, "      GPU %.3f ms per step over %llu steps", total / (double)steps / 1e6,
                    (unsigned long long)steps);
            if (est) {
                fprintf(o, " (~: %s, each phase's mean times its calls: an estimate)\n", why);
            } else if (factor != 1.0) {
                fprintf(o,
                        " (~: %s, scaled by the dispatches that ran over those timed: a layer "
                        "that does not count the calls it leaves out)\n",
                        why);
            } else if (scaled) {
                /* left out, but nothing ran unstamped */
                fprintf(o, " (%s: every call that ran was timed)\n", why);
            } else {
                fprintf(o, "\n");
            }
        }
        if (steps > 0 && outer_count > 0) {
            /* exact where every execution of a buffer is stamped; the cost
             * probe's blocks leave some unstamped, and they are estimated */
            const double busy = (double)outer_est * factor / (double)steps;
            const uint64_t left = has_left                    ? u64(rec_o, "scopes_left_out")
                                  : outer_calls > outer_count ? outer_calls - outer_count
                                                              : 0;
            const uint64_t lost =
                outer_calls > outer_count + left ? outer_calls - outer_count - left : 0;
            char how[160];
            if (outer_calls > outer_count) {
                int hn = snprintf(how, sizeof how, "%llu of %llu buffers timed, the rest estimated",
                                  (unsigned long long)outer_count, (unsigned long long)outer_calls);
                if (left > 0 && hn > 0 && (size_t)hn < sizeof how) {
                    const bool both = r->busy_every > 1 && (probe > 0 || sample_every > 1);
                    hn += snprintf(how + hn, sizeof how - (size_t)hn, ": %llu left out by %s%s",
                                   (unsigned long long)left,
                                   r->busy_every > 1 ? "the window's steps" : "",
                                   !both && r->busy_every > 1 ? ""
                                   : probe > 0 ? (both ? " and the cost probe" : "the cost probe")
                                               : (both ? " and the sampling" : "the sampling"));
                }
                if (lost > 0 && hn > 0 && (size_t)hn < sizeof how) {
                    snprintf(how + hn, sizeof how - (size_t)hn, ", %llu lost or unread",
                             (unsigned long long)lost);
                }
            } else {
                snprintf(how, sizeof how, "%llu buffers, exact", (unsigned long long)outer_count);
            }
            char every[64];
            if (r->busy_every > 1) {
                snprintf(every, sizeof every, "in 1 %sstep in %llu, at random",
                         probe > 0          ? "profiled "
                         : sample_every > 1 ? "sampled "
                                            : "",
                         (unsigned long long)r->busy_every);
            } else {
                snprintf(every, sizeof every, "in every %sstep",
                         probe > 0          ? "profiled "
                         : sample_every > 1 ? "sampled "
                                            : "");
            }
            fprintf(o,
                    "      GPU busy %.3f ms per step: its command buffers' time, each one "
                    "stamped %s (%s)",
                    busy / 1e6, every, how);
            if (of_busy) {
                fprintf(o, "; the label regions' own time is %.1f%% of it\n",
                        busy > 0 ? 100.0 * total / (double)steps / busy : 0.0);
            } else {
                fprintf(o,
                        "; the dispatches' estimate above is %.2fx it (stamped alone, a dispatch "
                        "runs without the overlap it has in flow)\n",
                        busy > 0 ? total / (double)steps / busy : 0.0);
            }
        } else if (steps > 0 && outer_calls > 0) {
            /* buffers ran, none timed: say so, never drop the line */
            fprintf(o,
                    "      GPU busy: not measured: none of the %llu command buffers that ran was "
                    "timed%s\n",
                    (unsigned long long)outer_calls,
                    r->busy_every > 1 && replay != 1.0
                        ? " (recordings submitted more than once keep the kind of the step they "
                          "were recorded in, and none was recorded in a busy step: --busy on "
                          "stamps the buffers in every step)"
                    : r->busy_every > 1 ? " (none ran in a busy step: a run of few steps)"
                                        : " (the samples line below says what was lost)");
        }
        if (rotate > 0) {
            const uint64_t left_out = has_left                    ? u64(rec_o, "scopes_left_out")
                                      : outer_calls > outer_count ? outer_calls - outer_count
                                                                  : 0;
            print_rotation(r, timing, phases, replay, outer_calls, left_out);
        }
        if (untimed_phases > 0) {
            print_untimed(r, phases, rotate);
        }
    }
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(ctxo, "calibration");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cal, "inconsistent"))) {
        double off = num(cal, "inconsistent_offset_ns");
        fprintf(o,
                "      calibration inconsistent: the driver's calibrated clock put this queue's "
                "stamps %.6f s %s their submit windows (%llu of %llu executions checked); GPU "
                "time is placed by bracketing with those windows instead (error bound %llu ns)\n",
                (off < 0 ? -off : off) / 1e9, off < 0 ? "before" : "after",
                (unsigned long long)u64(cal, "window_violations"),
                (unsigned long long)u64(cal, "window_checks"),
                (unsigned long long)u64(cal, "error_bound_ns"));
    }
    const cJSON *lost = cJSON_GetObjectItemCaseSensitive(timing, "lost");
    uint64_t lost_total = 0;
    for (size_t i = 0; i < sizeof lost_keys / sizeof lost_keys[0]; i++) {
        lost_total += u64(lost, lost_keys[i]);
    }
    fprintf(o, "      samples %llu: collected %llu, dropped %llu, pending %llu; ",
            (unsigned long long)u64(timing, "samples"),
            (unsigned long long)u64(timing, "scopes_collected"),
            (unsigned long long)u64(timing, "scopes_dropped"),
            (unsigned long long)u64(timing, "scopes_pending"));
    if (lost_total == 0) {
        fprintf(o, "lost: none\n");
    } else {
        fprintf(o, "lost %llu:", (unsigned long long)lost_total);
        for (size_t i = 0; i < sizeof lost_keys / sizeof lost_keys[0]; i++) {
            if (u64(lost, lost_keys[i]) > 0) {
                fprintf(o, " %s %llu", lost_keys[i], (unsigned long long)u64(lost, lost_keys[i]));
            }
        }
        fprintf(o, "\n");
    }
    if (u64(timing, "scopes_pending") > 0) {
        fprintf(o, "      pending: %llu scopes ran but were never read (the process ended first)\n",
                (unsigned long long)u64(timing, "scopes_pending"));
    }
    if (u64(timing, "scopes_discarded") > 0) {
        fprintf(o,
                "      %llu scopes recorded into buffers that were never submitted (nothing "
                "ran: no sample)\n",
                (unsigned long long)u64(timing, "scopes_discarded"));
    }
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(ctxo, "trace_store");
    if (ts != NULL) {
        uint64_t cap = u64(ts, "capacity"), dropped = u64(ts, "dropped"),
                 over = u64(ts, "overwritten");
        if (dropped > 0) {
            uint64_t at = u64(ts, "full_at_monotonic_ns"), st = u64(ts, "start_monotonic_ns");
            fprintf(o,
                    "      trace truncated: the store of %llu events filled %.3f s in; %llu "
                    "events after it are not in the trace (--trace-events N, or --keep last)\n",
                    (unsigned long long)cap, at > st ? (double)(at - st) / 1e9 : 0.0,
                    (unsigned long long)dropped);
        } else if (over > 0) {
            fprintf(o,
                    "      trace: the last %llu events (--keep last); %llu earlier ones were "
                    "overwritten (the trace's metadata says from when it is whole)\n",
                    (unsigned long long)cap, (unsigned long long)over);
        }
    }
}

/* A queue family's dispatches: every one executed, timed or not, and why. */
static void print_family_dispatches(report *r, const cJSON *fam)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(fam, "dispatches");
    if (d == NULL) {
        return;
    }
    uint64_t exec = u64(d, "executed"), timed = u64(d, "executed_timed"), untimed = 0;
    char why[512];
    nonzero_list(cJSON_GetObjectItemCaseSensitive(d, "executed_untimed"), why, sizeof why,
                 &untimed);
    r->dispatches += exec;
    fprintf(r->out, "    queue family %llu: %llu dispatches executed (%llu recorded): %llu timed",
            (unsigned long long)u64(fam, "family"), (unsigned long long)exec,
            (unsigned long long)u64(d, "recorded"), (unsigned long long)timed);
    if (untimed > 0) {
        fprintf(r->out, ", %llu untimed: %s", (unsigned long long)untimed, why);
    }
    if (timed + untimed != exec) {
        fprintf(r->out, " (%llu not accounted for: a bug to report)",
                (unsigned long long)(exec > timed + untimed ? exec - timed - untimed : 0));
    }
    fprintf(r->out, "\n");
}

/* The app's host time recording the family's command buffers (issue 26):
 * beside the GPU's time, where the host's goes (its submits and waits are
 * host spans in the trace; `vkprof report` lists them per step). */
static void print_family_recording(report *r, const cJSON *fam, uint64_t steps)
{
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(fam, "recording");
    const uint64_t n = u64(rec, "command_buffers"), ns = u64(rec, "host_ns");
    if (rec == NULL || n == 0) {
        return;
    }
    fprintf(r->out,
            "    queue family %llu: the app's host time recording: %.3f ms over %llu command "
            "buffer(s), %.1f us each",
            (unsigned long long)u64(fam, "family"), (double)ns / 1e6, (unsigned long long)n,
            (double)ns / 1e3 / (double)n);
    if (steps > 0) {
        fprintf(r->out, ", %.3f ms per step", (double)ns / 1e6 / (double)steps);
    }
    fprintf(r->out, " (vkBeginCommandBuffer to vkEndCommandBuffer of each, the layer's work in "
                    "it included; summed, so buffers recorded at once, on several threads or a "
                    "secondary inside a primary, add up)\n");
}

/* Where the host's time went (issue 26), per step: the app's recording
 * (every queue family's), its submits, its waits and its spin on
 * vkGetFenceStatus, and the layer's own time (summary: devices[].host). */
static void print_host(report *r, const cJSON *dev, uint64_t steps)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(dev, "host");
    if (!cJSON_IsObject(h)) {
        return;
    }
    uint64_t rec = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(dev, "queue_families"))
    {
        rec += u64(cJSON_GetObjectItemCaseSensitive(f, "recording"), "host_ns");
    }
#define HNS_(k) u64(cJSON_GetObjectItemCaseSensitive(h, k), "ns")
    const double div = steps > 0 ? 1e6 * (double)steps : 1e6;
    const uint64_t col = HNS_("collect"), own = HNS_("layer_submit");
    fprintf(r->out,
            "    host time%s: recording %.3f ms, submitting %.3f ms, waiting %.3f ms, spinning on "
            "vkGetFenceStatus %.3f ms; the layer's own %.3f ms (reading results %.3f, at "
            "submits %.3f)\n",
            steps > 0 ? " per step" : " in all", (double)rec / div, (double)HNS_("submit") / div,
            (double)HNS_("wait") / div, (double)HNS_("spin") / div, (double)(col + own) / div,
            (double)col / div, (double)own / div);
#undef HNS_
}

/* Did a context of the device stamp outer scopes (the command buffers'
 * busy scopes beside the rotating window)? */
static bool has_outer(const cJSON *dev)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(dev, "contexts"))
    {
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(
                                  cJSON_GetObjectItemCaseSensitive(c, "snapshot"), "phases"))
        {
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "outer"))) {
                return true;
            }
        }
    }
    return false;
}

/* Where the probe's cost went: the host's time a step in each kind of call
 * the layer sees, with profiling against without (the summary's
 * cost_probe.on/off.host_ns, from a layer that splits it), and what is left
 * of the difference: the app's own work between those calls, and what the
 * GPU's slower steps did not make the app wait for. */
static void print_cost_where(FILE *o, const cJSON *on, const cJSON *off, double n1, double n0,
                             double diff_us)
{
    const cJSON *h1 = cJSON_GetObjectItemCaseSensitive(on, "host_ns");
    const cJSON *h0 = cJSON_GetObjectItemCaseSensitive(off, "host_ns");
    if (!cJSON_IsObject(h1) || !cJSON_IsObject(h0)) {
        return; /* a layer that does not split it */
    }
    static const struct {
        const char *key, *what;
    } kinds[] = {{"record", "recording"},
                 {"submit", "submitting"},
                 {"wait", "waiting"},
                 {"spin", "spinning on vkGetFenceStatus"},
                 {"collect", "the layer's reading"},
                 {"layer_submit", "its work at submits"}};
    fprintf(o, "      where, us a step with profiling / without:");
    double sum = 0.0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const double a = (double)u64(h1, kinds[k].key) / 1e3 / n1;
        const double b = (double)u64(h0, kinds[k].key) / 1e3 / n0;
        sum += a - b;
        fprintf(o, "%s %s %.1f / %.1f (%+.1f)", k ? "," : "", kinds[k].what, a, b, a - b);
    }
    fprintf(o, "; the rest (the app's work between these calls) %+.1f\n", diff_us - sum);
}

/* The cost probe (--cost-probe B): the steps' mean wall time with
 * profiling on and off, the difference with its standard error (Welch). */
static void print_cost(report *r, const cJSON *dev)
{
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(dev, "cost_probe");
    if (cp == NULL) {
        /* not measured: what this mode does to the app, said anyway */
        char busy_how[192];
        snprintf(busy_how, sizeof busy_how,
                 "a few stamps a step (the window) or, in 1 step in %llu at random, 2 a command "
                 "buffer (its busy time) instead, each waiting for the work before it",
                 (unsigned long long)r->busy_every);
        const char *how = r->mode != NULL && strcmp(r->mode, "cmdbuf") == 0
                              ? "2 stamps a command buffer, each waiting for the work before it"
                          : r->mode != NULL && strcmp(r->mode, "label") == 0 && has_outer(dev)
                              ? "2 stamps a label region's stretch and 2 a command buffer (its "
                                "busy time), each waiting for the work before it"
                          : r->mode != NULL && strcmp(r->mode, "label") == 0
                              ? "2 stamps a label region, each waiting for the work before it"
                          : r->rotate > 0 && has_outer(dev) && r->busy_every > 1 ? busy_how
                          : r->rotate > 0 && has_outer(dev)
                              ? "a few stamps a step (the window) and 2 a command buffer (its "
                                "busy time), each waiting for the work before it"
                          : r->rotate > 0
                              ? "a few stamps a step (the window), each waiting for the work "
                                "before it"
                              : "a stamp after every dispatch, each waiting for the work before "
                                "it: the GPU runs them one at a time (the costliest mode)";
        fprintf(r->out,
                "    profiling cost: not measured in this run (--cost-probe B measures it); "
                "this mode adds %s\n",
                how);
        return;
    }
    const cJSON *on = cJSON_GetObjectItemCaseSensitive(cp, "on");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(cp, "off");
    const uint64_t n1 = u64(on, "steps"), n0 = u64(off, "steps");
    const double m1 = num(on, "mean_us"), m0 = num(off, "mean_us");
    const double s1 = num(on, "sd_us"), s0 = num(off, "sd_us");
    FILE *o = r->out;
    if (n1 < 2 || n0 < 2 || m0 <= 0.0) {
        fprintf(o,
                "    profiling cost: not measured (%llu steps with profiling, %llu without, after "
                "the warm-up: run more steps or use a smaller --cost-probe)\n",
                (unsigned long long)n1, (unsigned long long)n0);
        return;
    }
    const uint64_t ex = u64(cp, "executions"), mixed = u64(cp, "mixed_executions");
    if (mixed * 10 > ex) {
        fprintf(o,
                "    profiling cost: not measured (%llu of %llu command buffers ran in a step "
                "of the other state than they were recorded in: recordings re-submitted, or "
                "recorded a step ahead)\n",
                (unsigned long long)mixed, (unsigned long long)ex);
        return;
    }
    /* By pairs of blocks when there are enough: a pair's two blocks are
     * neighbours and hold the same mix of the app's steps, so the spread of
     * their difference is the noise that matters; else over single steps
     * (Welch), whose spread holds the mix of long and short steps too. */
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(cp, "pairs");
    const uint64_t np = u64(pr, "pairs");
    const double off_mean = num(pr, "off_mean_us");
    if (np >= 3 && off_mean > 0.0) {
        fprintf(o,
                "    profiling cost, measured in this run: %+.2f%% +- %.2f%% of a step's wall "
                "time (standard error, over %llu pairs of blocks of steps, one block of each "
                "pair profiled, which one at random)\n",
                100.0 * num(pr, "mean_diff_us") / off_mean,
                100.0 * num(pr, "sd_diff_us") / sqrt((double)np) / off_mean,
                (unsigned long long)np);
    } else {
        const double se = sqrt(s1 * s1 / (double)n1 + s0 * s0 / (double)n0);
        fprintf(o,
                "    profiling cost, measured in this run: %+.2f%% +- %.2f%% of a step's wall "
                "time (standard error over single steps: fewer than 3 pairs of blocks)\n",
                100.0 * (m1 - m0) / m0, 100.0 * se / m0);
    }
    fprintf(o,
            "      a step took %.1f us with profiling and %.1f us without (%llu and %llu steps)\n",
            m1, m0, (unsigned long long)n1, (unsigned long long)n0);
    print_cost_where(o, on, off, (double)n1, (double)n0, m1 - m0);
    if (mixed > 0) {
        fprintf(o,
                "      %llu of %llu command buffers ran in a step of the other state than they "
                "were recorded in (the difference is blurred by as much)\n",
                (unsigned long long)mixed, (unsigned long long)ex);
    }
}

static void print_device(report *r, const cJSON *dev, uint64_t sample_every, bool per_dispatch)
{
    FILE *o = r->out;
    r->devices++;
    uint64_t steps = u64(dev, "steps");
    fprintf(o, "  device %llu: %s%s\n", (unsigned long long)u64(dev, "index"),
            str(dev, "name", "(unnamed)"),
            strcmp(str(dev, "state", "live"), "destroyed") == 0 ? "" : " (never destroyed)");
    const cJSON *fams = cJSON_GetObjectItemCaseSensitive(dev, "queue_families");
    const cJSON *f;
    if (cJSON_GetArraySize(fams) > 0) {
        fprintf(o, "    queue families:");
        const char *sep = " ";
        cJSON_ArrayForEach(f, fams)
        {
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "timed"))) {
                fprintf(o, "%s%llu timed (%llu-bit stamps)", sep,
                        (unsigned long long)u64(f, "family"),
                        (unsigned long long)u64(f, "valid_bits"));
            } else {
                fprintf(o, "%s%llu untimed (%s)", sep, (unsigned long long)u64(f, "family"),
                        str(f, "reason", "no reason given"));
            }
            sep = ", ";
        }
        fprintf(o, "\n");
    }
    fprintf(o, "    steps: %llu%s\n", (unsigned long long)steps,
            has_num(dev, "steps") ? "" : " (not in the summary)");
    const cJSON *col = cJSON_GetObjectItemCaseSensitive(dev, "collections");
    if (cJSON_IsObject(col)) {
        /* issue 26: results are read after the app's waits, not in its submits */
        const uint64_t at = u64(col, "at_submits");
        fprintf(o, "    results read: %llu times after the app's waits, %llu at its submits%s\n",
                (unsigned long long)u64(col, "after_waits"), (unsigned long long)at,
                at > 0 ? " (nothing had been read for 1 s: the app waits in no call the layer "
                         "sees, or seldom; each such read ran inside the app's submit)"
                       : "");
    }
    print_host(r, dev, steps);
    print_cost(r, dev);
    cJSON_ArrayForEach(f, fams)
    {
        print_family_dispatches(r, f);
        print_family_recording(r, f, steps);
    }
    const char *fb = str(dev, "fallback_trace", NULL);
    if (fb != NULL) {
        fprintf(o, "    its own trace (written at its destroy: a context had no spool): %s\n", fb);
    }
    const cJSON *ctxs = cJSON_GetObjectItemCaseSensitive(dev, "contexts");
    int nctx = cJSON_GetArraySize(ctxs);
    const cJSON *c;
    bool any = false;
    cJSON_ArrayForEach(c, ctxs)
    {
        const cJSON *fam = NULL, *fi;
        cJSON_ArrayForEach(fi, fams)
        {
            if (u64(fi, "family") == u64(c, "family")) {
                fam = fi;
            }
        }
        print_context(r, c, fam, steps, sample_every, true);
        any = true;
    }
    (void)nctx;
    if (!any) {
        fprintf(o, "    no queue was timed\n");
    } else {
        r->devices_timed++;
    }
    /* one sample per timed dispatch: a timed dispatch that ran but that no
     * context counts ran after the process's last collection */
    cJSON_ArrayForEach(f, fams)
    {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(f, "dispatches");
        uint64_t timed = u64(d, "executed_timed"), samples = 0;
        cJSON_ArrayForEach(c, ctxs)
        {
            if (u64(c, "family") == u64(f, "family")) {
                const cJSON *snap = cJSON_GetObjectItemCaseSensitive(c, "snapshot");
                samples += u64(cJSON_GetObjectItemCaseSensitive(snap, "timing"), "samples");
            }
        }
        if (per_dispatch && timed > samples) {
            fprintf(o,
                    "    queue family %llu: %llu timed dispatches ran after the last "
                    "collection and were never read (the process ended first): not in the "
                    "trace\n",
                    (unsigned long long)u64(f, "family"), (unsigned long long)(timed - samples));
        }
    }
}

/* One summary; false when it is not a layer summary of version 2 (printed). */
static bool print_summary(report *r, const char *dir, const char *file, cJSON *root)
{
    char path[RUN_PATH_MAX + 512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(root, "devices");
    r->processes++;
    r->mode = str(root, "mode", "");
    r->rotate = u64(root, "rotate");
    r->busy_every = u64(root, "busy_every");
    uint64_t sample_every = u64(root, "sample_every");
    if (sample_every == 0) {
        sample_every = 1;
    }
    FILE *o = r->out;
    fprintf(o, "%s (pid %llu), mode %s, %s: %s\n", str(root, "exe", "?"),
            (unsigned long long)u64(root, "pid"), str(root, "mode", "?"),
            sample_every > 1 ? "sampled" : "every submit", path);
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(root, "ended");
    const char *how = str(end, "how", "unknown");
    const char *by = str(end, "finished_by", "?");
    if (r->child != 0 && (long long)num(root, "pid") == r->child && strcmp(how, "exit") == 0 &&
        !has_num(end, "status")) {
        /* the layer saw it exit; vkprof run knows how */
        if (r->child_signo != 0) {
            fprintf(o, "  ended: killed by signal %d (%s) after the layer's exit; finished by %s\n",
                    r->child_signo, strsignal(r->child_signo), by);
        } else {
            fprintf(o, "  ended: exit status %d; finished by %s\n", r->child_status, by);
        }
    } else if (strcmp(how, "exit") == 0 && has_num(end, "status") && num(end, "status") >= 0) {
        const bool layer = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(end, "layer_saw_exit"));
        fprintf(o, "  ended: exit status %lld%s%s; finished by %s\n", (long long)num(end, "status"),
                layer ? "" : ", ", layer ? "" : str(end, "detail", "without the layer's exit"), by);
    } else if (strcmp(how, "exit") == 0) {
        fprintf(o, "  ended: it exited; finished by %s\n", by);
    } else if (strcmp(how, "signal") == 0) {
        fprintf(o, "  ended: killed by signal %lld (%s): %s; finished by %s\n",
                (long long)num(end, "signal"), str(end, "signal_name", "?"),
                str(end, "detail", "complete up to its last collection"), by);
    } else {
        fprintf(o, "  ended: %s; finished by %s\n", str(end, "detail", "without the layer's exit"),
                by);
    }
    if (sample_every > 1) {
        fprintf(o, "  1 submit in %llu timed\n", (unsigned long long)sample_every);
    }
    if (u64(root, "rotate") > 0) {
        fprintf(o,
                "  rotating window: %llu dispatches timed a step (+1 boundary stamp), the next "
                "step the next ones: per-phase times are estimates\n",
                (unsigned long long)u64(root, "rotate"));
        if (r->busy_every > 1) {
            fprintf(o,
                    "  busy scopes: each command buffer stamped in 1 step in %llu, chosen at "
                    "random, a step of its own (no window in it: its buffers run in flow); the "
                    "others' buffers estimated\n",
                    (unsigned long long)r->busy_every);
        }
    } else if (r->mode != NULL && strcmp(r->mode, "dispatch") == 0 && sample_every <= 1) {
        /* issue 26: the old default, kept for short diagnostic runs */
        fprintf(o, "  every dispatch stamped (--rotate 0): each one runs alone, the GPU "
                   "serialised; the times are isolated, not in flow, and the run is slower\n");
    }
    if (u64(root, "modules") > 0) {
        const bool auto_names = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "auto_names"));
        fprintf(o, "  shader modules: %llu", (unsigned long long)u64(root, "modules"));
        if (auto_names) {
            fprintf(o, ", named from the loaded files' symbols: %llu by address, %llu by content",
                    (unsigned long long)u64(root, "modules_named_by_address"),
                    (unsigned long long)u64(root, "modules_named_by_content"));
        } else {
            fprintf(o, " (names from loaded files off)");
        }
        if (u64(root, "name_map_entries") > 0) {
            fprintf(o, "; a name map of %llu entries",
                    (unsigned long long)u64(root, "name_map_entries"));
        }
        fprintf(o, "\n");
    }
    const char *trace = str(root, "trace", NULL);
    if (trace == NULL) {
        fprintf(o, "  trace: none (%s)\n",
                cJSON_GetArraySize(devs) == 0 ? "no device" : "no context was timed");
    } else {
        char p[RUN_PATH_MAX + 512];
        snprintf(p, sizeof p, "%s/%s", dir, trace);
        fprintf(o, "  trace: %s%s\n", p, is_file(p) ? "" : " (missing)");
    }
    if (u64(root, "contexts_left_out") > 0) {
        fprintf(o, "  %llu contexts are not in the trace (at most %u a trace)\n",
                (unsigned long long)u64(root, "contexts_left_out"), VKPROF_TRACE_SET_MAX);
    }
    if (cJSON_GetArraySize(devs) == 0) {
        fprintf(o, "  no device created\n");
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, devs)
    {
        print_device(r, d, sample_every, strcmp(str(root, "mode", ""), "dispatch") == 0);
    }
    return true;
}

typedef struct sum_file {
    char *name;
    cJSON *root;
    long long pid;
} sum_file;

static int cmp_sum(const void *a, const void *b)
{
    const sum_file *x = a, *y = b;
    if (x->pid != y->pid) {
        return x->pid < y->pid ? -1 : 1; /* pids by number, not as text */
    }
    return strcmp(x->name, y->name);
}

static bool finished_now(const char *base)
{
    for (uint32_t i = 0; i < g_nfinished; i++) {
        if (strcmp(g_finished[i], base) == 0) {
            return true;
        }
    }
    return false;
}

/* Print every summary of dir of this run, or (run_id NULL) of the processes
 * this command finished. Returns the number printed; r gets the counts. */
static size_t print_all(report *r, const char *dir, const char *run_id)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, TOOL ": cannot read %s: %s\n", dir, strerror(errno));
        return 0;
    }
    sum_file *v = calloc(RUN_MAX_FILES, sizeof *v);
    size_t n = 0;
    struct dirent *e;
    while (v != NULL && (e = readdir(d)) != NULL) {
        if (!ends_with(e->d_name, ".summary.json") || e->d_name[0] == '.') {
            continue;
        }
        if (n == RUN_MAX_FILES) {
            fprintf(stderr, TOOL ": more than %u summaries in %s; the rest not read\n",
                    RUN_MAX_FILES, dir);
            break;
        }
        char path[RUN_PATH_MAX + 512], err[256] = "";
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!is_file(path)) {
            continue;
        }
        size_t len = 0;
        char *text = read_file(path, RUN_MAX_SUMMARY, &len, err, sizeof err);
        if (text == NULL) {
            fprintf(stderr, TOOL ": %s: %s\n", path, err);
            continue;
        }
        cJSON *root = cJSON_ParseWithLength(text, len);
        free(text);
        const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "vkprof_layer_summary");
        if (root == NULL || !cJSON_IsNumber(ver) || ver->valuedouble != 2 ||
            !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "devices"))) {
            if (run_id == NULL) {
                fprintf(stderr, TOOL ": %s: not a vkprof layer summary (version 2)\n", path);
            }
            cJSON_Delete(root);
            continue;
        }
        if ((run_id != NULL && strcmp(str(root, "run", ""), run_id) != 0) ||
            (run_id == NULL && !finished_now(str(root, "base", "")))) {
            cJSON_Delete(root); /* another run's: not ours to report */
            continue;
        }
        v[n].name = strdup(e->d_name);
        v[n].root = root;
        v[n].pid = (long long)num(root, "pid");
        n++;
    }
    closedir(d);
    if (v == NULL) {
        return 0;
    }
    qsort(v, n, sizeof *v, cmp_sum);
    for (size_t i = 0; i < n; i++) {
        print_summary(r, dir, v[i].name, v[i].root);
        free(v[i].name);
        cJSON_Delete(v[i].root);
    }
    free(v);
    return n;
}

/* ---- the commands -------------------------------------------------------- */

/* Where the command begins: after "--", or at the first argument that is not
 * an option (or an option's value). 0: no command. */
static int command_start(int argc, char **argv)
{
    static const char *const valued[] = {"-o",      "--output", "--mode",         "--sample",
                                         "--names", "--rotate", "--cost-probe",   "--layer-dir",
                                         "--keep",  "--format", "--trace-events", "--busy"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            return i + 1 < argc ? i + 1 : 0;
        }
        if (a[0] != '-' || a[1] == '\0') {
            return i;
        }
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
            if (strcmp(a, valued[k]) == 0) {
                i++; /* its value */
                break;
            }
        }
    }
    return 0;
}

/* The default mode (issue 26): the rotating window, K = RUN_DEFAULT_ROTATE,
 * with the command buffers' busy scopes in 1 step in RUN_DEFAULT_BUSY_EVERY
 * (run_defaults.h). Every dispatch (--rotate 0) drains the queue after each
 * one: +36 to +64 % of llama.cpp's step time on an H100, and each dispatch
 * timed alone, not in flow (docs/layer.md, "Modes"). Only where nothing
 * else was asked for: no --rotate, --sample or --mode other than dispatch,
 * and none of those in the layer's own variables (which vkprof run passes
 * on), nor steps turned off (the window moves by steps). */
#define RUN_DEFAULT_ROTATE ((uint32_t)VKPROF_RUN_DEFAULT_ROTATE)
#define RUN_DEFAULT_BUSY_EVERY ((uint32_t)VKPROF_RUN_DEFAULT_BUSY_EVERY)

static bool env_set(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0';
}

static void default_rotation(run_opts *o)
{
    const char *mode = getenv("VKPROF_LAYER_MODE"), *steps = getenv("VKPROF_LAYER_STEPS");
    if (o->rotate != UINT32_MAX || o->sample > 0 ||
        (o->mode != NULL && strcmp(o->mode, "dispatch") != 0) || env_set("VKPROF_LAYER_ROTATE") ||
        env_set("VKPROF_LAYER_SAMPLE") ||
        (o->mode == NULL && mode != NULL && mode[0] != '\0' && strcmp(mode, "dispatch") != 0) ||
        (steps != NULL && strcmp(steps, "none") == 0)) {
        return;
    }
    o->rotate = RUN_DEFAULT_ROTATE;
}

int vkprof_cmd_run(int argc, char **argv)
{
    int start = command_start(argc, argv);
    int nopt = start > 0 ? start : argc;
    if (start > 0 && strcmp(argv[start - 1], "--") == 0) {
        nopt = start - 1;
    }
    const char *out = "vkprof-run", *layer_dir = NULL;
    run_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.rotate = UINT32_MAX;
    ro.cost_block = UINT32_MAX;
    const cli_opt opts[] = {
        {"--output", CLI_STR, .str = &out},
        {"--mode", CLI_STR, .str = &ro.mode},
        {"--sample", CLI_U32, .u32 = &ro.sample, .min = 1, .max = 1000000},
        {"--rotate", CLI_U32, .u32 = &ro.rotate, .min = 0, .max = 1u << 20},
        {"--cost-probe", CLI_U32, .u32 = &ro.cost_block, .min = 0, .max = 1u << 20},
        {"--names", CLI_STR, .str = &ro.names},
        {"--keep", CLI_STR, .str = &ro.keep},
        {"--busy", CLI_STR, .str = &ro.busy},
        {"--format", CLI_STR, .str = &ro.format},
        {"--trace-events", CLI_U32, .u32 = &ro.trace_events, .min = 1024, .max = 1u << 26},
        {"--layer-dir", CLI_STR, .str = &layer_dir},
    };
    char **args = calloc((size_t)nopt + 1, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, TOOL ": out of memory\n");
        return 2;
    }
    for (int i = 0; i < nopt; i++) {
        args[i] = strcmp(argv[i], "-o") == 0 && i > 0 ? "--output" : argv[i];
    }
    const cli_spec spec = {
        .tool = TOOL, .opts = opts, .n_opts = sizeof opts / sizeof opts[0], .usage = run_usage};
    int parsed = cli_parse(&spec, nopt, args);
    free(args);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    if (start == 0) {
        fprintf(stderr, TOOL ": no command to run (vkprof run [options] -- CMD ARGS...)\n");
        return 2;
    }
    if (ro.mode != NULL && strcmp(ro.mode, "dispatch") != 0 && strcmp(ro.mode, "label") != 0 &&
        strcmp(ro.mode, "cmdbuf") != 0) {
        fprintf(stderr, TOOL ": unknown --mode '%s' (dispatch|label|cmdbuf)\n", ro.mode);
        return 2;
    }
    if (ro.rotate != UINT32_MAX && ro.rotate > 0 && ro.mode != NULL &&
        strcmp(ro.mode, "dispatch") != 0) {
        fprintf(stderr, TOOL ": --rotate stamps dispatches: it needs --mode dispatch, not '%s'\n",
                ro.mode);
        return 2;
    }
    default_rotation(&ro);
    uint64_t busy_n = 0;
    const char *busy_why = NULL;
    if (ro.busy != NULL && strcmp(ro.busy, "on") != 0 && strcmp(ro.busy, "off") != 0 &&
        !cli_parse_u64(ro.busy, 1, 1000000, &busy_n, &busy_why)) {
        fprintf(stderr, TOOL ": unknown --busy '%s' (on|off|N, N 1..1000000)\n", ro.busy);
        return 2;
    }
    ro.busy_every = (uint32_t)busy_n;
    const bool label_mode = ro.mode != NULL && strcmp(ro.mode, "label") == 0;
    if (ro.busy == NULL && ro.rotate != UINT32_MAX && ro.rotate > 0 && !label_mode &&
        !env_set("VKPROF_LAYER_BUSY") && !env_set("VKPROF_LAYER_BUSY_EVERY")) {
        /* the window's busy scopes, by default in 1 step in N: each stamp
         * a step costs (issue 26; --busy on: in every step) */
        ro.busy_every = RUN_DEFAULT_BUSY_EVERY;
    }
    if (label_mode && ro.busy_every > 1) {
        fprintf(stderr,
                TOOL ": --busy %u: with --mode label the busy scopes hold the regions "
                     "in every step (--busy on)\n",
                ro.busy_every);
        return 2;
    }
    if (ro.busy != NULL && !label_mode &&
        (ro.rotate == 0 || (ro.mode != NULL && strcmp(ro.mode, "dispatch") != 0))) {
        /* the buffers' busy scopes stand beside a rotating window and
         * around label regions; every dispatch and --mode cmdbuf give the
         * busy time already */
        fprintf(stderr, TOOL ": --busy goes with --rotate K (K > 0) or --mode label: every "
                             "dispatch and --mode cmdbuf time all of each step's work already\n");
        return 2;
    }
    if (ro.keep != NULL && strcmp(ro.keep, "first") != 0 && strcmp(ro.keep, "last") != 0) {
        fprintf(stderr, TOOL ": unknown --keep '%s' (first|last)\n", ro.keep);
        return 2;
    }
    if (ro.format != NULL && strcmp(ro.format, "json") != 0 && strcmp(ro.format, "pftrace") != 0 &&
        strcmp(ro.format, "both") != 0) {
        fprintf(stderr, TOOL ": unknown --format '%s' (json|pftrace|both)\n", ro.format);
        return 2;
    }
    char names_abs[PATH_MAX];
    if (ro.names != NULL) {
        char err[RUN_PATH_MAX + 128] = "";
        vkl_name_map *m = vkl_name_map_load(ro.names, err, sizeof err);
        if (m == NULL) {
            fprintf(stderr, TOOL ": --names: %s\n", err);
            return 2;
        }
        vkl_name_map_free(m);
        if (realpath(ro.names, names_abs) == NULL) {
            fprintf(stderr, TOOL ": --names %s: %s\n", ro.names, strerror(errno));
            return 2;
        }
        ro.names = names_abs;
    }
    char layer[RUN_PATH_MAX], out_abs[RUN_PATH_MAX];
    if (!find_layer(layer_dir, layer, sizeof layer)) {
        return 2;
    }
    char layer_abs[PATH_MAX];
    if (realpath(layer, layer_abs) == NULL) {
        fprintf(stderr, TOOL ": %s: %s\n", layer, strerror(errno));
        return 2;
    }
    if (!prepare_dir(out, out_abs, sizeof out_abs)) {
        return 2;
    }
    /* this run's id: its processes are told it, and only theirs are reported */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(ro.run_id, sizeof ro.run_id, "%ld-%llx", (long)getpid(),
             (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec);
    if (!setup_env(layer_abs, out_abs, &ro)) {
        return 2;
    }
    int status = 0, signo = 0;
    pid_t child = 0;
    int started = run_child(argv + start, &status, &signo, &child);
    if (started < 0) {
        return 2;
    }
    if (started > 0) {
        return status; /* 126 or 127, said why */
    }
    if (signo != 0) {
        fprintf(stderr, "\n== vkprof run: %s was killed by signal %d (%s): status %d ==\n",
                argv[start], signo, strsignal(signo), status);
    } else {
        fprintf(stderr, "\n== vkprof run: %s exited with status %d ==\n", argv[start], status);
    }
    /* what the processes that died left: finished here */
    uint32_t left = 0;
    (void)finish_left(out_abs, ro.run_id, "vkprof run", &left);
    report r = {
        .out = stderr, .child = (long long)child, .child_status = status, .child_signo = signo};
    size_t files = print_all(&r, out_abs, ro.run_id);
    if (files == 0) {
        fprintf(stderr,
                TOOL ": %s used no Vulkan: no process of it created an instance with " LAYER_NAME
                     " (nothing in %s)\n",
                argv[start], out_abs);
        return status != 0 ? status : 2;
    }
    if (r.devices == 0) {
        fprintf(stderr,
                TOOL ": %s created no Vulkan device (%u process%s created instances "
                     "only): nothing was timed\n",
                argv[start], r.processes, r.processes == 1 ? "" : "es");
        return status != 0 ? status : 2;
    }
    return status;
}

static void recover_usage(FILE *f)
{
    fprintf(f, "usage: vkprof recover DIR\n"
               "  Finish what processes profiled under the vkprof layer left in DIR/.vkprof/\n"
               "  (they died, or ran without vkprof run and were killed): once a process has\n"
               "  ended, its trace and summary are written to DIR from its spools, the spools\n"
               "  removed, and the report printed. A process still running is left.\n");
}

int vkprof_cmd_recover(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
            recover_usage(stdout);
            return 0;
        }
        recover_usage(stderr);
        return 2;
    }
    char abs[PATH_MAX];
    if (realpath(argv[1], abs) == NULL || !is_dir(abs)) {
        fprintf(stderr, "vkprof recover: %s: not a folder\n", argv[1]);
        return 2;
    }
    uint32_t left = 0;
    uint32_t done = finish_left(abs, NULL, "vkprof recover", &left);
    if (done == 0) {
        fprintf(stderr, "vkprof recover: nothing to finish in %s%s\n", abs,
                left > 0 ? " (its processes are still running)" : "");
        return left > 0 ? 1 : 0;
    }
    /* the summaries just written: those of the processes finished now */
    report r = {.out = stderr};
    (void)print_all(&r, abs, NULL);
    return 0;
}
