#version 450
// Softmax over the n_pos scores of one head (one workgroup per head), in place.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer S { float s[]; };
layout(push_constant) uniform PC { uint n_pos; uint stride; } pc;
shared float red[256];
void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint base = gl_WorkGroupID.x * pc.stride;
    float m = -3.402823e38;
    for (uint t = tid; t < pc.n_pos; t += 256u) m = max(m, s[base + t]);
    red[tid] = m;
    barrier();
    for (uint k = 128u; k > 0u; k >>= 1) {
        if (tid < k) red[tid] = max(red[tid], red[tid + k]);
        barrier();
    }
    m = red[0];
    barrier();
    float sum = 0.0;
    for (uint t = tid; t < pc.n_pos; t += 256u) {
        float e = exp(s[base + t] - m);
        s[base + t] = e;
        sum += e;
    }
    red[tid] = sum;
    barrier();
    for (uint k = 128u; k > 0u; k >>= 1) {
        if (tid < k) red[tid] += red[tid + k];
        barrier();
    }
    float inv = 1.0 / red[0];
    for (uint t = tid; t < pc.n_pos; t += 256u) s[base + t] *= inv;
}
