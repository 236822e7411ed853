/* An interposed Vulkan function table for tests: it forwards to the real
 * device (lavapipe) and counts every vkCmd* the library records, and it can
 * simulate what no available device has (other timestampPeriod and valid
 * bits, missing entry points, chosen query results). Handed to the library
 * as desc.get_instance_proc_addr / get_device_proc_addr. */
#ifndef VKPROF_TEST_SIM_H
#define VKPROF_TEST_SIM_H

#include "vkutil.h"

#define SIM_SLOTS 256u   /* slots the per-slot knobs cover (0..SIM_SLOTS-1) */
#define SIM_STAMPS 1024u /* timestamps logged */
#define SIM_QUEUES 2u    /* simulated queues */
#define SIM_HELD 8u      /* submits one simulated queue can hold */

typedef struct sim_state {
    /* what to simulate */
    bool override_valid_bits;
    uint32_t valid_bits;
    bool override_period;
    float period;
    bool hide_timestamp2;
    bool hide_calibration;
    bool fake_results; /* replace query results by fake_value[] */
    uint64_t fake_value[2];
    bool fake_unavailable; /* report results as not available */
    /* calibrated timestamps: 0 as the device has them; 1: the device clock
     * drifts by drift_ppb against the host (device = host + offset + drift);
     * 2: the device offers only DEVICE + CLOCK_MONOTONIC_RAW */
    int calib_mode;
    /* mode 1 for a test that maps the device's real stamps: the simulated
     * device clock runs from the stamps' clock (device = its DEVICE reading
     * + offset + drift), not from the host's. The same on lavapipe, whose
     * stamps are CLOCK_MONOTONIC; on a GPU whose clock counts from its own
     * epoch, the host's would put every stamp decades away. */
    bool calib_on_stamps;
    int64_t drift_ppb;
    uint64_t drift_ref_ns; /* host ns where the simulated drift is zero */
    int64_t drift_offset_ns;
    uint64_t calib_calls;
    /* a death at a chosen moment: the results_calls-th vkGetQueryPoolResults
     * raises SIGKILL before it reads anything (0: never) */
    uint64_t kill_at_results_call;

    /* what the library did */
    uint64_t cmd_calls; /* every vkCmd* recorded */
    uint64_t cmd_reset;
    uint64_t cmd_timestamp;  /* vkCmdWriteTimestamp */
    uint64_t cmd_timestamp2; /* vkCmdWriteTimestamp2(KHR) */
    uint64_t pools_created;
    uint64_t pools_destroyed;
    uint64_t results_calls;
    uint64_t host_resets; /* vkResetQueryPool(EXT) calls */
    uint32_t last_host_reset_first, last_host_reset_count;
    uint64_t unknown_cmd_lookups; /* vkCmd* names the sim does not wrap */
    VkPipelineStageFlags2 last_stage2;
    VkQueryResultFlags last_result_flags;

    /* Per-slot result knobs (ring-mode tests; off unless slot_knobs). Every
     * vkGetQueryPoolResults call with 64-bit values and availability (stride
     * 16) is forwarded to the device first; then, per slot, a result the
     * device has written is reported unavailable (its value left as the
     * caller's buffer held it, as Vulkan leaves it) while a knob holds it, and
     * an available one reports slot[].value instead of the device's value
     * where slot[].fake is set. Nothing ever makes an unwritten slot
     * available. */
    bool slot_knobs;
    uint64_t slot_knob_skips; /* calls with slot_knobs on that the knobs could not apply to */
    struct sim_slot {
        /* knobs */
        bool fake;      /* report `value` when available */
        uint64_t value; /* the fake value */
        uint32_t late;  /* late: the next `late` reads that find it written hide it */
        bool never;     /* never: hidden while set */
        uint32_t after; /* out of order: 1 + a slot that must have been reported available
                         * by an earlier call before this one is (0: none) */
        /* what the sim saw */
        uint64_t reads;          /* calls that covered the slot */
        uint64_t hidden;         /* reads where it was written and a knob hid it */
        uint64_t reported;       /* reads that reported it available */
        uint64_t reported_call;  /* results_calls at the first report (0: never reported) */
        uint64_t device_value;   /* the device's value at the last read that found it written */
        uint64_t reported_value; /* the value of the last report */
    } slot[SIM_SLOTS];

    /* Simulated queues, for a second queue the device does not have (lavapipe
     * has one). While sim_queues is set, vkGetDeviceQueue through the table
     * gives, for indices 0 and 1 of any family, the distinct handles
     * queue[0] and queue[1]: never a driver's handle. vkQueueSubmit and
     * vkQueueSubmit2 through the table on one of them run on the device's
     * real queue 0 of that family: at once, or, while the queue's `hold` is
     * set, only at sim_queue_release() (the queue's latency: work submitted
     * to it runs, and its results come back, after work submitted later to
     * the other queue). Submits on any other queue are forwarded unchanged.
     * A held submit keeps its command buffers and fence (no semaphores, no
     * pNext, at most 4 buffers a batch; anything else is sent at once and
     * counted in `unheld`). */
    bool sim_queues;
    struct sim_queue {
        bool hold;          /* knob: keep submits until sim_queue_release */
        VkQueue real;       /* the device's queue it runs on */
        uint64_t submits;   /* batches submitted to it */
        uint64_t forwarded; /* batches sent to the real queue */
        uint64_t unheld;    /* batches it could not hold: sent at once */
        uint32_t held;      /* batches held now */
        struct sim_held {
            VkCommandBuffer cmd[4];
            uint32_t count;
            VkFence fence; /* on the last batch of a call only, as Vulkan signals it */
        } held_batch[SIM_HELD];
    } queue[SIM_QUEUES];

    /* Every timestamp the library recorded (either entry point), in order:
     * the command buffer and the query slot; stamps past SIM_STAMPS are only
     * counted. */
    uint32_t stamps;
    struct sim_stamp {
        VkCommandBuffer cmd;
        VkQueryPool pool;
        uint32_t query;
    } stamp[SIM_STAMPS];
} sim_state;

extern sim_state g_sim;

void sim_reset(void);
/* Sends what a held simulated queue holds to its real queue, in submission
 * order, and clears its hold; VK_SUCCESS or the first error. */
VkResult sim_queue_release(VkQueue q);
PFN_vkVoidFunction VKAPI_CALL sim_get_instance_proc_addr(VkInstance inst, const char *name);
PFN_vkVoidFunction VKAPI_CALL sim_get_device_proc_addr(VkDevice dev, const char *name);

#endif
