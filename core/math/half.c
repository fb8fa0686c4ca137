#include "math/half.h"
#include <string.h>

static float bits_to_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float emb_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf / nan (quiet payload kept) */
        return bits_to_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return bits_to_f32(sign);
        /* subnormal: value = man * 2^-24, exact in float32 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

float emb_bf16_to_f32(uint16_t h) { return bits_to_f32((uint32_t)h << 16); }

static uint16_t load_le16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

void emb_f16_to_f32_n(const void *src, float *dst, size_t n) {
    const unsigned char *p = src;
    for (size_t i = 0; i < n; i++) dst[i] = emb_f16_to_f32(load_le16(p + 2 * i));
}

void emb_bf16_to_f32_n(const void *src, float *dst, size_t n) {
    const unsigned char *p = src;
    for (size_t i = 0; i < n; i++) dst[i] = emb_bf16_to_f32(load_le16(p + 2 * i));
}
