#version 450
// SwiGLU activation: h = silu(gate) * up. Slot y (gl_WorkGroupID.y: one per
// MoE expert) reads gate = gu[b .. b+n), up = gu[b+n .. b+2n) with
// b = gu_base + 2n * y, and writes h[h_base + n * y ..]. A dense MLP: one
// slot, both bases 0.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer GU { float gu[]; };
layout(std430, binding = 1) writeonly buffer H { float h[]; };
layout(push_constant) uniform PC { uint n; uint gu_base; uint h_base; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) {
        uint slot = gl_WorkGroupID.y;
        uint b = pc.gu_base + 2u * pc.n * slot;
        float g = gu[b + i];
        h[pc.h_base + pc.n * slot + i] = g / (1.0 + exp(-g)) * gu[b + pc.n + i];
    }
}
