#version 450
// RMSNorm: out = x * (1 / sqrt(mean(x^2) + eps)) * g. One workgroup.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(std430, binding = 2) writeonly buffer O { float o[]; };
layout(push_constant) uniform PC { uint n; float eps; } pc;
shared float red[256];
void main()
{
    uint tid = gl_LocalInvocationID.x;
    float s = 0.0;
    for (uint i = tid; i < pc.n; i += 256u) {
        float v = x[i];
        s += v * v;
    }
    red[tid] = s;
    barrier();
    for (uint k = 128u; k > 0u; k >>= 1) {
        if (tid < k) red[tid] += red[tid + k];
        barrier();
    }
    float scale = 1.0 / sqrt(red[0] / float(pc.n) + pc.eps);
    for (uint i = tid; i < pc.n; i += 256u) {
        o[i] = (x[i] * scale) * g[i];
    }
}
