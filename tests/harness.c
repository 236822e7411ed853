#include "harness.h"
#include "sim.h"

#include <string.h>

int th_failures = 0;
const char *th_case = "setup";

void th_gpu_init(th_gpu *g)
{
    th_gpu_init_ex(g, NULL);
}

void th_gpu_init_ex(th_gpu *g, const vku_device_options *opt)
{
    memset(g, 0, sizeof *g);
    if (getenv("XDG_RUNTIME_DIR") == NULL) {
        /* keeps the loader quiet; harmless */
    }
    if (vku_instance_create(&g->inst, true, "vkprof tests") != VK_SUCCESS) {
        fprintf(stderr, "FAIL: cannot create a Vulkan instance with the validation layer\n");
        exit(1);
    }
    VkPhysicalDevice phys;
    char err[256] = "";
    if (vku_pick_device(g->inst.instance, getenv("VKPROF_TEST_DEVICE"), &phys, err, sizeof err) !=
        VK_SUCCESS) {
        fprintf(stderr, "FAIL: %s\n", err);
        exit(1);
    }
    uint32_t fam = vku_compute_family(phys);
    if (fam == UINT32_MAX || vku_device_create_ex(&g->dev, phys, fam, opt) != VK_SUCCESS) {
        fprintf(stderr, "FAIL: cannot create a device with a compute queue\n");
        exit(1);
    }
    printf("device: %s, family %u, sync2 %d\n", g->dev.props.deviceName, fam, g->dev.sync2);
}

void th_busy_init(th_gpu *g, vku_busy *busy, uint32_t count)
{
    if (vku_busy_create(&g->dev, count, busy) != VK_SUCCESS) {
        fprintf(stderr, "FAIL: cannot create the busy pipeline\n");
        exit(1);
    }
}

void th_gpu_finish(th_gpu *g)
{
    vku_device_destroy(&g->dev);
    uint32_t msgs = g->inst.messages;
    vku_instance_destroy(&g->inst);
    if (msgs != 0) {
        fprintf(stderr, "FAIL: %u validation message(s)\n", msgs);
        th_failures += (int)msgs;
    }
}

VkCommandBuffer th_alloc_cmd(th_gpu *g)
{
    VkCommandBuffer c = VK_NULL_HANDLE;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = g->dev.cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    CHECK_VK(vkAllocateCommandBuffers(g->dev.device, &ai, &c));
    return c;
}

void th_begin_cmd(VkCommandBuffer c)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK_VK(vkBeginCommandBuffer(c, &bi));
}

void th_submit_wait(th_gpu *g, vkprof_context ctx, uint32_t count, const VkCommandBuffer *cmds)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = count,
                       .pCommandBuffers = cmds};
    CHECK_VK(vkResetFences(g->dev.device, 1, &g->dev.fence));
    if (ctx != NULL) {
        CHECK_VK(vkprof_queue_submit(ctx, g->dev.queue, 1, &si, g->dev.fence));
    } else {
        CHECK_VK(vkQueueSubmit(g->dev.queue, 1, &si, g->dev.fence));
    }
    CHECK_VK(vkWaitForFences(g->dev.device, 1, &g->dev.fence, VK_TRUE, UINT64_C(60000000000)));
}

vkprof_timing_stats th_stats(vkprof_context ctx)
{
    vkprof_timing_stats t;
    memset(&t, 0, sizeof t);
    CHECK(vkprof_get_timing_stats(ctx, &t) == VKPROF_OK);
    CHECK_EQ_U64(t.samples, t.scopes_collected + t.scopes_dropped + t.scopes_pending);
    return t;
}

vkprof_phase_stats th_phase(vkprof_context ctx, vkprof_phase p)
{
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    memset(st, 0, sizeof st);
    uint32_t n = 0;
    CHECK(vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, NULL) == VKPROF_OK);
    CHECK(p < VKPROF_MAX_PHASES);
    return st[p < VKPROF_MAX_PHASES ? p : 0];
}

void th_log_fn(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    th_log *l = user;
    l->calls++;
    if (level == VKPROF_LOG_ERROR) {
        l->errors++;
    } else if (level == VKPROF_LOG_WARN) {
        l->warnings++;
    }
    l->last_code = code;
    snprintf(l->last, sizeof l->last, "%s", msg);
    if (!l->quiet) {
        printf("  log: %s (%s)\n", msg, vkprof_result_name(code));
    }
}

int th_done(void)
{
    printf("%s: %d failure(s)\n", th_failures ? "FAILED" : "PASSED", th_failures);
    return th_failures ? 1 : 0;
}

char *th_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) {
        n = ftell(f);
    }
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
    }
    if (buf != NULL) {
        size_t got = fread(buf, 1, (size_t)n, f);
        buf[got] = '\0';
    }
    fclose(f);
    return buf;
}

vkprof_context_desc th_desc(const th_gpu *g, th_log *log, bool sim)
{
    vkprof_context_desc d = vku_vkprof_desc(&g->inst, &g->dev);
    if (sim) {
        d.get_instance_proc_addr = sim_get_instance_proc_addr;
        d.get_device_proc_addr = sim_get_device_proc_addr;
    }
    if (log != NULL) {
        d.log = th_log_fn;
        d.log_user = log;
    }
    return d;
}

vkprof_context th_ctx(const vkprof_context_desc *d)
{
    vkprof_context ctx = NULL;
    CHECK(vkprof_create(d, &ctx) == VKPROF_OK);
    return ctx;
}
