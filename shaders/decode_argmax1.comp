#version 450
// Greedy sampling, stage 1: each workgroup finds the largest logit (lowest
// index on ties) in its block of `block` logits.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer L { float l[]; };
layout(std430, binding = 1) writeonly buffer P { uvec2 part[]; };
layout(push_constant) uniform PC { uint n; uint block; } pc;
shared float sv[256];
shared uint si[256];
void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint b0 = gl_WorkGroupID.x * pc.block;
    uint b1 = min(b0 + pc.block, pc.n);
    float bv = -3.402823e38;
    uint bi = 0xffffffffu;
    for (uint i = b0 + tid; i < b1; i += 256u) {
        float v = l[i];
        if (v > bv) { bv = v; bi = i; }
    }
    sv[tid] = bv; si[tid] = bi;
    barrier();
    for (uint k = 128u; k > 0u; k >>= 1) {
        if (tid < k) {
            float ov = sv[tid + k]; uint oi = si[tid + k];
            if (ov > sv[tid] || (ov == sv[tid] && oi < si[tid])) { sv[tid] = ov; si[tid] = oi; }
        }
        barrier();
    }
    if (tid == 0u) part[gl_WorkGroupID.x] = uvec2(floatBitsToUint(sv[0]), si[0]);
}
