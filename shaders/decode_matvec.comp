#version 450
// y[out_base + r] (=|+=) dot(W[r, :], x) for an fp16 row-major matrix W
// (two halves per uint, read as uvec4 = 8 weights per 16-byte load).
// One workgroup computes ROWS rows; its 128 threads stride along the row, so
// neighbouring threads read neighbouring 16-byte words (coalesced), each x
// vec4 pair is loaded once for the ROWS rows, and a shared-memory tree adds
// the 128 partial sums. fp32 accumulation.
#define ROWS 4
#define WG 128
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer W { uvec4 w[]; };
layout(std430, binding = 1) readonly buffer X { vec4 x[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(push_constant) uniform PC {
    uint rows;        // rows in this buffer (chunk)
    uint cols;        // multiple of 8
    uint out_base;    // y index of row 0 of this chunk (mod 2^32: a block of
                      // rows that starts inside the chunk may map below 0)
    uint accumulate;  // 1: y += (residual add), 0: y =
    uint group_base;  // first workgroup of this dispatch (split dispatches,
                      // or a block of rows starting at row 4 * group_base)
    uint x_base;      // vec4 index of x[0] in the X buffer (an expert's slot)
} pc;
shared float red[ROWS][WG];
void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint r0 = (gl_WorkGroupID.x + pc.group_base) * ROWS;
    uint n8 = pc.cols / 8u;
    float acc[ROWS];
    for (uint r = 0u; r < ROWS; r++) acc[r] = 0.0;
    for (uint c = tid; c < n8; c += WG) {
        vec4 xa = x[pc.x_base + 2u * c];
        vec4 xb = x[pc.x_base + 2u * c + 1u];
        for (uint r = 0u; r < ROWS; r++) {
            if (r0 + r < pc.rows) {
                uvec4 p = w[(r0 + r) * n8 + c];
                vec4 wa = vec4(unpackHalf2x16(p.x), unpackHalf2x16(p.y));
                vec4 wb = vec4(unpackHalf2x16(p.z), unpackHalf2x16(p.w));
                acc[r] += dot(wa, xa) + dot(wb, xb);
            }
        }
    }
    for (uint r = 0u; r < ROWS; r++) red[r][tid] = acc[r];
    barrier();
    for (uint k = WG / 2u; k > 0u; k >>= 1) {
        if (tid < k) {
            for (uint r = 0u; r < ROWS; r++) red[r][tid] += red[r][tid + k];
        }
        barrier();
    }
    if (tid < ROWS && r0 + tid < pc.rows) {
        uint o = pc.out_base + r0 + tid;
        float v = red[tid][0];
        y[o] = pc.accumulate != 0u ? y[o] + v : v;
    }
}
