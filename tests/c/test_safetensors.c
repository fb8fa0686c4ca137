/* safetensors header parser (from memory buffers) and F16/BF16 conversion. */
#include "check.h"
#include "math/half.h"
#include "nn/safetensors.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Build an image: 8-byte length, header text, data_len zero bytes. */
static unsigned char *image(const char *hdr, size_t data_len, size_t *size) {
    size_t n = strlen(hdr);
    *size = 8 + n + data_len;
    unsigned char *b = calloc(1, *size + 1);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(b + 8, hdr, n);
    return b;
}

static int parse(const char *hdr, size_t data_len, char err[EMB_ERR_LEN], emb_safetensors_header *h) {
    size_t size;
    unsigned char *b = image(hdr, data_len, &size);
    emb_safetensors_header tmp;
    if (!h) h = &tmp;
    err[0] = 0;
    int rc = emb_safetensors_parse(b, size, "t.safetensors", h, err);
    if (h == &tmp && rc == 0) emb_safetensors_header_free(h);
    if (h != &tmp && rc == 0) { /* keep b alive only for the structure checks below: data pointers unused */
    }
    free(b);
    return rc;
}

#define BAD(hdr, dlen, needle)                                                                                    \
    do {                                                                                                          \
        char e_[EMB_ERR_LEN];                                                                                     \
        int rc_ = parse(hdr, dlen, e_, NULL);                                                                     \
        CHECK(rc_ != 0 && strstr(e_, needle) && strstr(e_, "t.safetensors"),                                      \
              "expected error '%s' for %s, got rc %d '%s'", needle, hdr, rc_, e_);                                \
    } while (0)
#define GOOD(hdr, dlen)                                                                                           \
    do {                                                                                                          \
        char e_[EMB_ERR_LEN];                                                                                     \
        int rc_ = parse(hdr, dlen, e_, NULL);                                                                     \
        CHECK(rc_ == 0, "expected %s to parse: %s", hdr, e_);                                                     \
    } while (0)

int main(void) {
    char err[EMB_ERR_LEN];
    emb_safetensors_header h;
    /* valid */
    int rc = parse(
        "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]},"
        "\"a\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}  ",
        32, err, &h);
    CHECK(rc == 0, "valid header: %s", err);
    if (rc == 0) {
        const emb_safetensors_tensor *a = emb_safetensors_header_find(&h, "a"),
                                     *b = emb_safetensors_header_find(&h, "b");
        CHECK(h.n == 2 && a && b && !emb_safetensors_header_find(&h, "c") && a->dtype == EMB_DT_F16 &&
                  a->ndim == 1 && a->shape[0] == 4 && b->dtype == EMB_DT_F32 && b->ndim == 2 && b->shape[1] == 3 &&
                  b->begin == 8 && b->end == 32 && h.data_len == 32,
              "tensor table");
        emb_safetensors_header_free(&h);
    }
    GOOD("{}", 0);
    GOOD("{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4); /* scalar */
    GOOD("{\"z\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[0,0]},\"y\":{\"dtype\":\"I64\",\"shape\":[1]"
         ",\"data_offsets\":[0,8]}}",
         8);
    GOOD("{\"x\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]}}",
         10); /* trailing unused data is allowed */
    GOOD("{\"x\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}\n\t ", 3);
    /* invalid */
    BAD("", 0, "not a JSON object");
    BAD("[1,2]", 0, "not a JSON object");
    BAD("{\"x\":", 0, "not valid JSON");
    BAD("{} x", 0, "unexpected bytes after");
    BAD("{\"x\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'F31'");
    BAD("{\"x\":{\"dtype\":1,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "no dtype");
    BAD("{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "no shape");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "shape entry");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "shape entry");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4, "shape entry");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "dimensions");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "data_offsets span 4");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "data_offsets span 8");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4, "more than");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 3, "outside the data section");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "begin > end");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "data_offsets");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4, "data_offsets");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,1e300]}}", 4, "data_offsets");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"y\":{\"dtype\":\"F32\",\"shape\":[1],"
        "\"data_offsets\":[2,6]}}",
        8, "overlap");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"x\":{\"dtype\":\"F32\",\"shape\":[1],"
        "\"data_offsets\":[4,8]}}",
        8, "twice");
    BAD("{\"x\":[1,2]}", 0, "not an object");
    BAD("{\"__metadata__\":[1]}", 0, "__metadata__");
    BAD("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "empty tensor name");
    /* length field problems */
    {
        unsigned char b[16] = {0};
        CHECK(emb_safetensors_parse(b, 5, "t.safetensors", &h, err) != 0 && strstr(err, "too short"),
              "5-byte file: %s", err);
        b[0] = 200;
        CHECK(emb_safetensors_parse(b, 16, "t.safetensors", &h, err) != 0 && strstr(err, "past the end"),
              "length past end: %s", err);
        memset(b, 0xff, 8);
        CHECK(emb_safetensors_parse(b, 16, "t.safetensors", &h, err) != 0 && strstr(err, "exceeds the limit"),
              "huge length: %s", err);
        memset(b, 0, 8);
        b[3] = 0x10; /* 256 MiB */
        CHECK(emb_safetensors_parse(b, 16, "t.safetensors", &h, err) != 0 && strstr(err, "exceeds the limit"),
              "256 MiB header: %s", err);
    }
    /* writer round trip, misaligned */
    {
        float v[6] = {1, 2, 3, 4, 5, 6};
        emb_safetensors_write_tensor t[2] = {{"w", EMB_DT_F32, 2, {2, 3}, v}, {"u", EMB_DT_U8, 1, {3}, "abc"}};
        const char *path = "/tmp/test_safetensors_rt.safetensors";
        CHECK(emb_safetensors_write(path, t, 2, 2, err) == 0, "write: %s", err);
        emb_safetensors *st = NULL;
        rc = emb_safetensors_open(path, 1, &st, err);
        CHECK(rc == 0, "open: %s", err);
        if (rc == 0) {
            const emb_safetensors_tensor *w = emb_safetensors_find(st, "w");
            CHECK(w && w->ndim == 2 && w->shape[0] == 2 && (8 + st->h.header_len) % 8 == 2 &&
                      memcmp(w->data, v, sizeof v) == 0,
                  "round trip, data section at offset 2 mod 8");
            emb_safetensors_close(st);
        }
        remove(path);
        CHECK(emb_safetensors_open("/nonexistent/x.safetensors", 1, &st, err) != 0 && strstr(err, "cannot open"),
              "missing file: %s", err);
        CHECK(emb_safetensors_open("/tmp", 1, &st, err) != 0 && strstr(err, "not a regular file"), "directory: %s",
              err);
    }
    /* F16 / BF16 */
    CHECK(emb_f16_to_f32(0x3c00) == 1.0f && emb_f16_to_f32(0xc000) == -2.0f &&
              emb_f16_to_f32(0x7bff) == 65504.0f && emb_f16_to_f32(0x0001) == 5.9604644775390625e-8f &&
              emb_f16_to_f32(0x0400) == 6.103515625e-5f && emb_f16_to_f32(0x03ff) == 6.097555160522461e-5f &&
              emb_f16_to_f32(0x3555) == 0.333251953125f,
          "F16 normals and subnormals");
    CHECK(isinf(emb_f16_to_f32(0x7c00)) && emb_f16_to_f32(0xfc00) < 0 && isnan(emb_f16_to_f32(0x7e00)) &&
              signbit(emb_f16_to_f32(0x8000)) && emb_f16_to_f32(0x8000) == 0,
          "F16 inf, nan, -0");
    CHECK(emb_bf16_to_f32(0x3f80) == 1.0f && emb_bf16_to_f32(0xc040) == -3.0f &&
              emb_bf16_to_f32(0x4049) == 3.140625f && isinf(emb_bf16_to_f32(0x7f80)),
          "BF16");
    {
        unsigned char raw[7] = {0xff, 0x00, 0x3c, 0x00, 0xc0, 0x80, 0x3f}; /* unaligned source at raw+1 */
        float o[3];
        emb_f16_to_f32_n(raw + 1, o, 3);
        CHECK(o[0] == 1.0f && o[1] == -2.0f, "F16 bulk, unaligned");
        emb_bf16_to_f32_n(raw + 5, o, 1);
        CHECK(o[0] == 1.0f, "BF16 bulk, unaligned");
        /* all 65536 F16 values: finite ones round-trip through double exactly */
        int bad = 0;
        for (uint32_t u = 0; u < 65536; u++) {
            float f = emb_f16_to_f32((uint16_t)u);
            if (isnan(f) || isinf(f)) continue;
            int ex = (u >> 10) & 31, man = u & 1023;
            double want = ex ? ldexp(1024 + man, ex - 25) : ldexp(man, -24);
            if (u & 0x8000) want = -want;
            if ((double)f != want) bad++;
        }
        CHECK(bad == 0, "all F16 values exact (%d wrong)", bad);
    }
    return check_report();
}
