#version 450
// SwiGLU activation: h = silu(gate) * up, gate = gu[0..n), up = gu[n..2n).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer GU { float gu[]; };
layout(std430, binding = 1) writeonly buffer H { float h[]; };
layout(push_constant) uniform PC { uint n; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) {
        float g = gu[i];
        h[i] = g / (1.0 + exp(-g)) * gu[pc.n + i];
    }
}
