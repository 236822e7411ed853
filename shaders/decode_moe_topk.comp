#version 450
// MoE routing: the top k of n router logits (n <= 256, k <= 16), highest
// first, a tie to the lower expert id (as dec_route_topk in C), and their
// combine weights, a softmax over the chosen logits. One workgroup: k rounds
// of a shared-memory argmax over the experts not yet chosen. Writes ids to
// route[0..k) and the weights' bits to route[k..2k) of a host-visible
// buffer, which the host reads back (moe_host_sync) to record the experts.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer L { float logit[]; };
layout(std430, binding = 1) writeonly buffer R { uint route[]; };
layout(push_constant) uniform PC { uint n; uint k; } pc;
shared float sv[256];
shared uint si[256];
shared float top[16];
void main()
{
    uint tid = gl_LocalInvocationID.x;
    bool live = tid < pc.n;
    float v = live ? logit[tid] : 0.0;
    for (uint j = 0u; j < pc.k; j++) {
        sv[tid] = live ? v : -3.402823e38;
        si[tid] = live ? tid : 0xffffffffu;
        barrier();
        for (uint s = 128u; s > 0u; s >>= 1) {
            if (tid < s) {
                float ov = sv[tid + s]; uint oi = si[tid + s];
                if (ov > sv[tid] || (ov == sv[tid] && oi < si[tid])) { sv[tid] = ov; si[tid] = oi; }
            }
            barrier();
        }
        uint best = si[0];
        if (tid == 0u) {
            route[j] = best;
            top[j] = sv[0];
        }
        if (tid == best) live = false;
        barrier();
    }
    if (tid == 0u) {
        float m = top[0], sum = 0.0;
        for (uint j = 0u; j < pc.k; j++) {
            top[j] = exp(top[j] - m);
            sum += top[j];
        }
        for (uint j = 0u; j < pc.k; j++) route[pc.k + j] = floatBitsToUint(top[j] / sum);
    }
}
