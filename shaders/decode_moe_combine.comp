#version 450
// MoE combine: x = (residual ? x : 0) + sum_s w[s] * eo[s] (+ eo[k], the
// shared expert, unweighted), s = 0..k-1 in the router's order; the weights
// are the routing buffer's route[k..2k) (decode_moe_topk.comp). A rank that
// does not carry the residual (tensor parallelism) writes its partial sum.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer EO { float eo[]; };
layout(std430, binding = 2) readonly buffer R { uint route[]; };
layout(push_constant) uniform PC { uint n; uint k; uint has_shared; uint residual; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) {
        float acc = pc.residual != 0u ? x[i] : 0.0;
        for (uint s = 0u; s < pc.k; s++) acc += uintBitsToFloat(route[pc.k + s]) * eo[s * pc.n + i];
        if (pc.has_shared != 0u) acc += eo[pc.k * pc.n + i];
        x[i] = acc;
    }
}
