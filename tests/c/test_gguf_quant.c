/* ggml's block types widened to float32 (core/nn/gguf_quant.c). Each block is built here from
 * chosen scales, mins and codes, packed by this file's own reading of ggml-common.h's layouts
 * (bit by bit, value by value), and each widened value is checked against the format's formula on
 * those chosen numbers, in float32 as ggml computes it (equal, NaN for NaN). The f16 scales are
 * decoded here by their definition (sign, exponent, mantissa), not by the library's converter.
 * Edge cases: scales infinite, NaN, subnormal, negative zero and the largest f16; every code at
 * its extremes; the 6-bit K scales and mins at 0 and 63, Q6_K's int8 scales at -128 and 127.
 * Refusals: a count that is not whole blocks, a dtype that is no block type, a GGUF tensor whose
 * rows are not whole blocks or whose data runs past the file, types no loader reads named. */
#include "check.h"
#include "nn/gguf.h"
#include "nn/gguf_quant.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static int rnd(int n) { return (int)(check_rng(&rng) % (unsigned)n); }

/* IEEE binary16 by its definition. */
static float h2f(uint16_t h) {
    int e = h >> 10 & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
    return h >> 15 ? -v : v;
}
static void put16(unsigned char *p, uint16_t h) { p[0] = (unsigned char)h, p[1] = (unsigned char)(h >> 8); }

/* Scales tried: ordinary values, then the edges. */
static const uint16_t SCALES[] = {0x3C00 /* 1 */,   0x2E66 /* ~0.1 */, 0xB400 /* -0.25 */, 0x1A3D /* ~0.0031 */,
                                  0x0000 /* 0 */,   0x8000 /* -0 */,   0x0001 /* 2^-24 */, 0x03FF /* subnormal */,
                                  0x7BFF /* max */, 0x7C00 /* inf */,  0xFC00 /* -inf */,  0x7E00 /* nan */};
#define N_SCALES (int)(sizeof SCALES / sizeof *SCALES)

static int same(float a, float b) { return (isnan(a) && isnan(b)) || a == b; }

/* codes: random in [0, top], or all 0 / all top (mode 1, 2). */
static void pick_codes(int *c, int n, int top, int mode) {
    for (int i = 0; i < n; i++) c[i] = mode == 1 ? 0 : mode == 2 ? top : rnd(top + 1);
}

static int check_values(const char *what, const float *got, const float *want, int n) {
    for (int i = 0; i < n; i++)
        if (!same(got[i], want[i])) {
            CHECK(0, "%s: value %d is %.9g, the formula gives %.9g", what, i, got[i], want[i]);
            return 0;
        }
    CHECK(1, "%s", what);
    return 1;
}

/* Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0: 32 values; value j's code is in byte j (low nibble) for j <
 * 16 and byte j - 16 (high nibble) after; the fifth bit of value j is bit j of the 32-bit qh. */
static void small_block(emb_dtype dt, uint16_t d, uint16_t m, const int *c, unsigned char *b, float *want) {
    int has_m = dt == EMB_DT_Q4_1 || dt == EMB_DT_Q5_1, five = dt == EMB_DT_Q5_0 || dt == EMB_DT_Q5_1;
    int o = 2 + (has_m ? 2 : 0);
    put16(b, d);
    if (has_m) put16(b + 2, m);
    if (dt == EMB_DT_Q8_0) {
        for (int j = 0; j < 32; j++) b[2 + j] = (unsigned char)(int8_t)c[j], want[j] = (float)c[j] * h2f(d);
        return;
    }
    if (five) {
        uint32_t qh = 0;
        for (int j = 0; j < 32; j++) qh |= (uint32_t)(c[j] >> 4 & 1) << j;
        for (int k = 0; k < 4; k++) b[o + k] = (unsigned char)(qh >> (8 * k));
        o += 4;
    }
    for (int j = 0; j < 16; j++) b[o + j] = (unsigned char)((c[j] & 15) | (c[j + 16] & 15) << 4);
    int off = has_m ? 0 : five ? 16 : 8;
    for (int j = 0; j < 32; j++) want[j] = has_m ? (float)c[j] * h2f(d) + h2f(m) : (float)(c[j] - off) * h2f(d);
}

static void test_small_blocks(void) {
    static const struct {
        emb_dtype dt;
        int bytes, lo, hi;
        const char *name;
    } T[] = {{EMB_DT_Q4_0, 18, 0, 15, "Q4_0"},
             {EMB_DT_Q4_1, 20, 0, 15, "Q4_1"},
             {EMB_DT_Q5_0, 22, 0, 31, "Q5_0"},
             {EMB_DT_Q5_1, 24, 0, 31, "Q5_1"},
             {EMB_DT_Q8_0, 34, -128, 127, "Q8_0"}};
    for (size_t t = 0; t < sizeof T / sizeof *T; t++)
        for (int s = 0; s < N_SCALES; s++)
            for (int mode = 0; mode < 3; mode++) {
                unsigned char blk[3][34];
                float want[96], got[96];
                int c[32];
                for (int k = 0; k < 3; k++) { /* three blocks end to end: each its own scales */
                    pick_codes(c, 32, T[t].hi - T[t].lo, mode);
                    for (int j = 0; j < 32; j++) c[j] += T[t].lo;
                    small_block(T[t].dt, SCALES[(s + k) % N_SCALES], SCALES[(s + 2 * k + 1) % N_SCALES], c, blk[k],
                                want + 32 * k);
                }
                unsigned char packed[3 * 34];
                for (int k = 0; k < 3; k++) memcpy(packed + k * T[t].bytes, blk[k], (size_t)T[t].bytes);
                char what[64];
                snprintf(what, sizeof what, "%s scale %04x codes %s", T[t].name, SCALES[s],
                         mode == 1   ? "lowest"
                         : mode == 2 ? "highest"
                                     : "random");
                CHECK(emb_quant_to_f32(T[t].dt, packed, 96, got) == 0, "%s widened", what);
                check_values(what, got, want, 96);
            }
}

/* Q4_K / Q5_K's 12 bytes from eight 6-bit scales and mins: sub-blocks 0-3 in the low 6 bits of
 * bytes 0-3 (scales) and 4-7 (mins); 4-7 in bytes 8-11 (scale low nibble, min high nibble) with
 * their top 2 bits in the top 2 bits of bytes 0-3 (scales) and 4-7 (mins). */
static void pack_k_scales(const int sc[8], const int mn[8], unsigned char s[12]) {
    for (int j = 0; j < 4; j++) {
        s[j] = (unsigned char)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (unsigned char)(mn[j] | (mn[j + 4] >> 4) << 6);
        s[j + 8] = (unsigned char)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
}

/* Q4_K (five 0) / Q5_K (five 1): value i is in sub-block i / 32; in group g = i / 64, byte g * 32 +
 * i % 32 holds it, low nibble for the group's first 32, high for its second; Q5_K's fifth bit is
 * bit (i / 32) of qh[i % 32]. value = d * scale - dmin * min, as floats in that order. */
static void k45_block(int five, uint16_t d, uint16_t dmin, const int sc[8], const int mn[8], const int *c,
                      unsigned char *b, float *want) {
    unsigned char *qh = b + 16, *qs = b + 16 + (five ? 32 : 0);
    put16(b, d);
    put16(b + 2, dmin);
    pack_k_scales(sc, mn, b + 4);
    memset(b + 16, 0, five ? 160 : 128);
    for (int i = 0; i < 256; i++) {
        qs[i / 64 * 32 + i % 32] |= (unsigned char)((c[i] & 15) << (i / 32 % 2 * 4));
        if (five) qh[i % 32] |= (unsigned char)((c[i] >> 4 & 1) << (i / 32));
        float ds = h2f(d) * (float)sc[i / 32], dm = h2f(dmin) * (float)mn[i / 32];
        want[i] = ds * (float)c[i] - dm;
    }
}

/* Q6_K: value i of half h = i / 128 (r = i % 128, k = r / 32, l = r % 32): its low 4 bits in
 * ql[64h + l + 32 (k odd)], low nibble for k < 2, high for k >= 2; its top 2 bits at bits 2k of
 * qh[32h + l]; its scale the int8 scales[i / 16]; value = d * scale * (code - 32). */
static void q6k_block(uint16_t d, const int sc[16], const int *c, unsigned char *b, float *want) {
    memset(b, 0, 210);
    for (int i = 0; i < 256; i++) {
        int h = i / 128, r = i % 128, k = r / 32, l = r % 32;
        b[64 * h + l + 32 * (k & 1)] |= (unsigned char)((c[i] & 15) << (k >= 2 ? 4 : 0));
        b[128 + 32 * h + l] |= (unsigned char)((c[i] >> 4) << (2 * k));
        want[i] = h2f(d) * (float)sc[i / 16] * (float)(c[i] - 32);
    }
    for (int j = 0; j < 16; j++) b[192 + j] = (unsigned char)(int8_t)sc[j];
    put16(b + 208, d);
}

static void test_k_blocks(void) {
    for (int s = 0; s < N_SCALES; s++)
        for (int mode = 0; mode < 3; mode++) {
            unsigned char b[2 * 210];
            float want[512], got[512];
            int c[256], sc[16], mn[8];
            char what[64];
            for (int five = 0; five < 2; five++) {
                int bytes = five ? 176 : 144;
                for (int k = 0; k < 2; k++) {
                    pick_codes(c, 256, five ? 31 : 15, mode);
                    pick_codes(sc, 8, 63, mode);
                    pick_codes(mn, 8, 63, mode ? 3 - mode : 0); /* mins at the other extreme */
                    k45_block(five, SCALES[(s + k) % N_SCALES], SCALES[(s + 5 * k + 3) % N_SCALES], sc, mn, c,
                              b + k * bytes, want + 256 * k);
                }
                snprintf(what, sizeof what, "%s d %04x codes %s", five ? "Q5_K" : "Q4_K", SCALES[s],
                         mode == 1   ? "lowest"
                         : mode == 2 ? "highest"
                                     : "random");
                CHECK(emb_quant_to_f32(five ? EMB_DT_Q5_K : EMB_DT_Q4_K, b, 512, got) == 0, "%s widened", what);
                check_values(what, got, want, 512);
            }
            for (int k = 0; k < 2; k++) {
                pick_codes(c, 256, 63, mode);
                pick_codes(sc, 16, 255, mode);
                for (int j = 0; j < 16; j++) sc[j] -= 128;
                q6k_block(SCALES[(s + k) % N_SCALES], sc, c, b + k * 210, want + 256 * k);
            }
            snprintf(what, sizeof what, "Q6_K d %04x codes %s", SCALES[s],
                     mode == 1   ? "lowest"
                     : mode == 2 ? "highest"
                                 : "random");
            CHECK(emb_quant_to_f32(EMB_DT_Q6_K, b, 512, got) == 0, "%s widened", what);
            check_values(what, got, want, 512);
        }
}

/* Scales and mins that differ in every sub-block, so that a sub-block read with its neighbour's
 * scale shows: scale j = j + 1 (j + 3 for Q6_K, sign alternating), codes all one value. */
static void test_k_sub_block_order(void) {
    int c[256], sc[16], mn[8];
    unsigned char b[210];
    float want[256], got[256];
    for (int i = 0; i < 256; i++) c[i] = 9;
    for (int j = 0; j < 8; j++) sc[j] = 8 * j + 7, mn[j] = 63 - 8 * j;
    k45_block(0, 0x3C00, 0x3800, sc, mn, c, b, want);
    emb_quant_to_f32(EMB_DT_Q4_K, b, 256, got);
    check_values("Q4_K sub-blocks each with their own 6-bit scale and min", got, want, 256);
    CHECK(got[0] == 7.0f * 9 - 0.5f * 63 && got[255] == 63.0f * 9 - 0.5f * 7, "Q4_K ends: %g %g", got[0],
          got[255]);
    for (int j = 0; j < 16; j++) sc[j] = (j % 2 ? -1 : 1) * (j + 3);
    for (int i = 0; i < 256; i++) c[i] = 40;
    q6k_block(0x3C00, sc, c, b, want);
    emb_quant_to_f32(EMB_DT_Q6_K, b, 256, got);
    check_values("Q6_K sub-blocks of 16 each with their own scale", got, want, 256);
    CHECK(got[16] == -4.0f * 8 && got[255] == -18.0f * 8, "Q6_K: %g %g", got[16], got[255]);
}

static void test_refusals(void) {
    float out[300];
    unsigned char z[300] = {0};
    out[0] = 42;
    CHECK(emb_quant_to_f32(EMB_DT_Q4_0, z, 33, out) == -1 && out[0] == 42, "33 values are not whole Q4_0 blocks");
    CHECK(emb_quant_to_f32(EMB_DT_Q4_K, z, 32, out) == -1, "32 values are not a whole Q4_K block");
    CHECK(emb_quant_to_f32(EMB_DT_F32, z, 32, out) == -1, "F32 is not a block type");
    CHECK(emb_quant_dtype(EMB_DT_Q6_K) && !emb_quant_dtype(EMB_DT_F16), "block dtypes");
    static const uint32_t unread[] = {EMB_GGML_Q2_K,    EMB_GGML_Q3_K,   EMB_GGML_Q8_K,   EMB_GGML_Q8_1,
                                      EMB_GGML_IQ2_XXS, EMB_GGML_IQ4_NL, EMB_GGML_IQ4_XS, EMB_GGML_TQ2_0};
    for (size_t i = 0; i < sizeof unread / sizeof *unread; i++)
        CHECK(emb_quant_dtype_of_ggml(unread[i]) == -1 && emb_ggml_type_name(unread[i]),
              "type %u not read, named %s", unread[i], emb_ggml_type_name(unread[i]));
    CHECK(emb_quant_dtype_of_ggml(EMB_GGML_Q5_K) == EMB_DT_Q5_K, "Q5_K's dtype");
    CHECK(strcmp(emb_dtype_name(EMB_DT_Q4_K), "Q4_K") == 0 && emb_dtype_size(EMB_DT_Q4_K) == 0, "Q4_K named");
}

/* A GGUF image of one tensor "t": ne0 x ne1 values of type, its data cut to data_bytes. */
static unsigned char *image(uint32_t type, uint64_t ne0, uint64_t ne1, size_t data_bytes, size_t *size) {
    unsigned char *b = calloc(1, 256 + data_bytes);
    size_t n = 0;
#define PUT(v, k)                                                                                                 \
    for (int i_ = 0; i_ < (k); i_++) b[n++] = (unsigned char)((uint64_t)(v) >> (8 * i_));
    memcpy(b, "GGUF", 4), n = 4;
    PUT(3, 4) PUT(1, 8) PUT(0, 8); /* version, one tensor, no pairs */
    PUT(1, 8) b[n++] = 't'; /* name */
    PUT(2, 4) PUT(ne0, 8) PUT(ne1, 8) PUT(type, 4) PUT(0, 8);
#undef PUT
    n = (n + 31) / 32 * 32;
    *size = n + data_bytes;
    return b;
}

static void test_gguf_tensors(void) {
    char err[EMB_ERR_LEN];
    emb_gguf g;
    size_t size;
    unsigned char *b = image(EMB_GGML_Q4_K, 256, 2, 288, &size);
    CHECK(emb_gguf_parse(b, size, "k.gguf", &g, err) == 0 && g.tensors[0].bytes == 288, "Q4_K 2 rows: %s", err);
    emb_gguf_free(&g);
    free(b);
    b = image(EMB_GGML_Q4_K, 32, 8, 144, &size);
    CHECK(emb_gguf_parse(b, size, "rows.gguf", &g, err) == -1 && strstr(err, "rows.gguf") && strstr(err, "'t'") &&
              strstr(err, "not whole Q4_K blocks of 256"),
          "rows of 32 refused for Q4_K: %s", err);
    free(b);
    b = image(EMB_GGML_Q5_0, 40, 1, 22, &size);
    CHECK(emb_gguf_parse(b, size, "q5.gguf", &g, err) == -1 && strstr(err, "not whole Q5_0 blocks of 32"),
          "rows of 40 refused for Q5_0: %s", err);
    free(b);
    b = image(EMB_GGML_Q6_K, 256, 1, 209, &size);
    CHECK(emb_gguf_parse(b, size, "cut.gguf", &g, err) == -1 && strstr(err, "cut.gguf") &&
              strstr(err, "past the end of the file"),
          "a Q6_K block one byte short refused: %s", err);
    free(b);
    b = image(EMB_GGML_IQ4_XS, 256, 1, 136, &size);
    CHECK(emb_gguf_parse(b, size, "iq.gguf", &g, err) == 0 &&
              strcmp(emb_ggml_type_name(g.tensors[0].type), "IQ4_XS") == 0,
          "IQ4_XS parses, named (refused by the loader): %s", err);
    emb_gguf_free(&g);
    free(b);
}

int main(void) {
    test_small_blocks();
    test_k_blocks();
    test_k_sub_block_order();
    test_refusals();
    test_gguf_tensors();
    return check_report();
}
