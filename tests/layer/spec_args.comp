#version 450
// test_layer_basic's "spec" case: a compute shader whose local size x is a
// specialisation constant (local_size_x_id: glslang gives it the
// WorkgroupSize builtin), with two more specialisation constants and no
// resources. The layer's dispatch args must show the size and the constants
// the pipeline was created with.
layout(local_size_x_id = 0, local_size_y = 2, local_size_z = 1) in;
layout(constant_id = 1) const uint SCALE = 3u;
layout(constant_id = 2) const float BIAS = 0.25;
shared float s[128];

void main()
{
    uint i = gl_LocalInvocationIndex % 128u;
    s[i] = float(i * SCALE) + BIAS;
    barrier();
}
