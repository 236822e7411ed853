#version 450
// Token embedding lookup: one fp16 row of the table -> fp32 residual stream.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer W { uint w[]; };
layout(std430, binding = 1) writeonly buffer X { vec2 x[]; };
layout(push_constant) uniform PC { uint row; uint dim; } pc;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    uint half_dim = pc.dim / 2u;
    if (i < half_dim) {
        x[i] = unpackHalf2x16(w[pc.row * half_dim + i]);
    }
}
