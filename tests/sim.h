/* An interposed Vulkan function table for tests: it forwards to the real
 * device (lavapipe) and counts every vkCmd* the library records, and it can
 * simulate what no available device has (other timestampPeriod and valid
 * bits, missing entry points, chosen query results). Handed to the library
 * as desc.get_instance_proc_addr / get_device_proc_addr. */
#ifndef VKPROF_TEST_SIM_H
#define VKPROF_TEST_SIM_H

#include "vkutil.h"

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
    int64_t drift_ppb;
    uint64_t drift_ref_ns; /* host ns where the simulated drift is zero */
    int64_t drift_offset_ns;
    uint64_t calib_calls;

    /* what the library did */
    uint64_t cmd_calls; /* every vkCmd* recorded */
    uint64_t cmd_reset;
    uint64_t cmd_timestamp;  /* vkCmdWriteTimestamp */
    uint64_t cmd_timestamp2; /* vkCmdWriteTimestamp2(KHR) */
    uint64_t pools_created;
    uint64_t pools_destroyed;
    uint64_t results_calls;
    uint64_t unknown_cmd_lookups; /* vkCmd* names the sim does not wrap */
    VkPipelineStageFlags2 last_stage2;
    VkQueryResultFlags last_result_flags;
} sim_state;

extern sim_state g_sim;

void sim_reset(void);
PFN_vkVoidFunction VKAPI_CALL sim_get_instance_proc_addr(VkInstance inst, const char *name);
PFN_vkVoidFunction VKAPI_CALL sim_get_device_proc_addr(VkDevice dev, const char *name);

#endif
