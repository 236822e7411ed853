#version 450
// Greedy sampling, stage 2: one workgroup reduces the stage-1 partials and
// writes (token id, logit bits) to the host-visible result buffer.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer P { uvec2 part[]; };
layout(std430, binding = 1) writeonly buffer R { uint res[]; };
layout(push_constant) uniform PC { uint n; } pc;
shared float sv[256];
shared uint si[256];
void main()
{
    uint tid = gl_LocalInvocationID.x;
    float bv = -3.402823e38;
    uint bi = 0xffffffffu;
    for (uint i = tid; i < pc.n; i += 256u) {
        float v = uintBitsToFloat(part[i].x);
        uint j = part[i].y;
        if (v > bv || (v == bv && j < bi)) { bv = v; bi = j; }
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
    if (tid == 0u) { res[0] = si[0]; res[1] = floatBitsToUint(sv[0]); }
}
