#version 450
// Attention scores: s[h, t] = dot(q_h, k_t[kv(h)]) * scale for t < n_pos.
// A group of G = head_dim/4 lanes reads one cached key row as vec4s
// (coalesced); the workgroup covers 128/G positions of one head.
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer QKV { vec4 q[]; };
layout(std430, binding = 1) readonly buffer KC { vec4 kc[]; };
layout(std430, binding = 2) writeonly buffer S { float s[]; };
layout(push_constant) uniform PC {
    uint n_pos; uint head_dim; uint n_heads; uint n_kv; uint stride; float scale;
} pc;
shared float red[128];
void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint g = pc.head_dim / 4u;
    uint lane = tid % g;
    uint t = gl_WorkGroupID.x * (128u / g) + tid / g;
    uint h = gl_WorkGroupID.y;
    uint kvh = h / (pc.n_heads / pc.n_kv);
    uint kv4 = pc.n_kv * g;
    float p = 0.0;
    if (t < pc.n_pos) {
        p = dot(q[h * g + lane], kc[t * kv4 + kvh * g + lane]);
    }
    red[tid] = p;
    barrier();
    for (uint k = g / 2u; k > 0u; k >>= 1) {
        if (lane < k) red[tid] += red[tid + k];
        barrier();
    }
    if (lane == 0u && t < pc.n_pos) {
        s[h * pc.stride + t] = red[tid] * pc.scale;
    }
}
