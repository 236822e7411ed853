#version 450
// A compute shader whose run time is proportional to `iterations`: each
// invocation runs a dependent multiply-add chain of that length, then writes
// its result so the compiler cannot drop the loop.
layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
    uint iterations;
    uint count;
} pc;
layout(std430, set = 0, binding = 0) buffer Out { float data[]; };

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    float x = float(i) * 1.0e-6 + data[i];
    float y = 1.0;
    for (uint k = 0u; k < pc.iterations; ++k) {
        y = y * 0.9999 + x;
        x = x * 1.0001 - 1.0e-7;
    }
    data[i] = y;
}
