#version 450
// RoPE on q and k (interleaved pairs (2i, 2i+1), angle pos * theta^(-2i/hd),
// cos/sin from a host-computed table), then append this token's k (rotated)
// and v to the layer's KV cache at row `pos`. q is rotated in place.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer QKV { float qkv[]; };
layout(std430, binding = 1) writeonly buffer KC { float kc[]; };
layout(std430, binding = 2) writeonly buffer VC { float vc[]; };
layout(std430, binding = 3) readonly buffer T { vec2 cs[]; };
layout(push_constant) uniform PC { uint pos; uint n_heads; uint n_kv; uint head_dim; } pc;
void main()
{
    uint t = gl_GlobalInvocationID.x;
    uint hp = pc.head_dim / 2u;
    uint q_dim = pc.n_heads * pc.head_dim;
    uint kv_dim = pc.n_kv * pc.head_dim;
    uint nq = pc.n_heads * hp;
    uint nk = pc.n_kv * hp;
    if (t < nq + nk) {
        bool is_q = t < nq;
        uint u = is_q ? t : t - nq;
        uint i = u % hp;
        uint idx = (u / hp) * pc.head_dim + 2u * i;
        uint src = is_q ? idx : q_dim + idx;
        vec2 c = cs[pc.pos * hp + i];
        float a = qkv[src], b = qkv[src + 1u];
        float ra = a * c.x - b * c.y;
        float rb = a * c.y + b * c.x;
        if (is_q) {
            qkv[src] = ra;
            qkv[src + 1u] = rb;
        } else {
            kc[pc.pos * kv_dim + idx] = ra;
            kc[pc.pos * kv_dim + idx + 1u] = rb;
        }
    } else if (t < nq + nk + kv_dim) {
        uint j = t - nq - nk;
        vc[pc.pos * kv_dim + j] = qkv[q_dim + kv_dim + j];
    }
}
