#version 450
// Weight generation: a hash of (seed, tensor, element index) gives an integer
// q in [-1023, 1023]; the weight is q * 2^-shift, built as fp16 bits with
// integer arithmetic only (exact, no rounding mode involved). The CPU
// reference (tools/decode/decode_model.c) does the same in C.
// mode 0: fp16 pairs packed in uint32 (element 2i in the low half).
// mode 1: fp32 norm gains 1 + q * 2^-13.
// The words written are data[word_off .. word_off + count): a block of local
// rows of `cols` elements each. Element index e (0-based in the block) is the
// tensor's GLOBAL element (grow0 + e / cols) * gcols + coff + e % cols, so a
// tensor-parallel rank's slice (some of the rows, or some of the columns) gets
// exactly the weights of the whole tensor (gains: cols = gcols = 1).
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Out { uint data[]; };
layout(push_constant) uniform PC {
    uint count;     // uint32 words to write
    uint word_off;  // first word of the block in the buffer
    uint tensor;
    uint seed;
    uint shift;
    uint mode;
    uint grow0;     // global row of the block's first row
    uint cols;      // elements per local row (mode 0: even)
    uint gcols;     // elements per global row
    uint coff;      // global column of local column 0
} pc;

uint global_elem(uint e)
{
    uint r = e / pc.cols;
    return (pc.grow0 + r) * pc.gcols + pc.coff + (e - r * pc.cols);
}

uint lowbias32(uint x)
{
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return x;
}

int gen_q(uint key, uint idx)
{
    return int(lowbias32(idx ^ key) % 2047u) - 1023;
}

uint half_bits(int q, uint shift)
{
    uint s = q < 0 ? 0x8000u : 0u;
    uint m = uint(abs(q));
    if (m == 0u) return s;
    int e = findMSB(m);                 // m = 1.f * 2^e
    int be = e - int(shift) + 15;       // biased exponent
    if (be >= 1) {
        uint mant = (m << uint(10 - e)) & 0x3ffu;
        return s | (uint(be) << 10) | mant;
    }
    return s | (m << (24u - shift));    // subnormal: m * 2^-shift = frac * 2^-24
}

void main()
{
    uint key = lowbias32(lowbias32(pc.seed) ^ (pc.tensor * 0x9e3779b9u));
    uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) {
        if (pc.mode == 0u) {
            uint e = global_elem(2u * i); // cols even: e + 1 is on the same row
            uint lo = half_bits(gen_q(key, e), pc.shift);
            uint hi = half_bits(gen_q(key, e + 1u), pc.shift);
            data[pc.word_off + i] = lo | (hi << 16);
        } else {
            float g = 1.0 + ldexp(float(gen_q(key, global_elem(i))), -13);
            data[pc.word_off + i] = floatBitsToUint(g);
        }
    }
}
