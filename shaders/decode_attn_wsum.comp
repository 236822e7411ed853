#version 450
// Attention output: o_h = sum_t p[h, t] * v_t[kv(h)]. One workgroup per head:
// G = head_dim/4 lanes read a cached value row as vec4s (coalesced); the
// 128/G slices of the workgroup take every (128/G)-th position, then a
// shared-memory tree adds the slices.
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer S { float s[]; };
layout(std430, binding = 1) readonly buffer VC { vec4 vc[]; };
layout(std430, binding = 2) writeonly buffer O { vec4 o[]; };
layout(push_constant) uniform PC { uint n_pos; uint head_dim; uint n_heads; uint n_kv; uint stride; } pc;
shared vec4 red[128];
void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint g = pc.head_dim / 4u;
    uint lane = tid % g;
    uint slice = tid / g;
    uint nslices = 128u / g;
    uint h = gl_WorkGroupID.x;
    uint kvh = h / (pc.n_heads / pc.n_kv);
    uint kv4 = pc.n_kv * g;
    vec4 acc = vec4(0.0);
    for (uint t = slice; t < pc.n_pos; t += nslices) {
        acc += s[h * pc.stride + t] * vc[t * kv4 + kvh * g + lane];
    }
    red[tid] = acc;
    barrier();
    for (uint k = nslices / 2u; k > 0u; k >>= 1) {
        if (slice < k) red[tid] += red[tid + k * g];
        barrier();
    }
    if (slice == 0u) o[h * g + lane] = red[tid];
}
