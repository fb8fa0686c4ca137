/* The GGUF reader (core/nn/gguf.c) on images written here byte by byte, as the GGUF
 * specification lays them out (independently of the reader): every value type read back, arrays
 * of numbers and of strings, tensors found by name with their dimensions, types, sizes and data
 * at the file's alignment; then every way the file can lie (magic, version, counts, lengths,
 * types, dimensions, offsets, alignment, duplicates), and every truncation of a valid file, each
 * an error naming the file, never a read out of bounds (ASan in make asan). */
#include "check.h"
#include "nn/gguf.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned char *b;
    size_t n, cap;
} buf;
static void put(buf *o, const void *p, size_t n) {
    if (o->n + n > o->cap) {
        o->cap = (o->n + n) * 2 + 64;
        o->b = realloc(o->b, o->cap);
    }
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void u32(buf *o, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(o, b, 4);
}
static void u64(buf *o, uint64_t v) {
    u32(o, (uint32_t)v);
    u32(o, (uint32_t)(v >> 32));
}
static void str(buf *o, const char *s) {
    u64(o, strlen(s));
    put(o, s, strlen(s));
}
static void key(buf *o, const char *k, uint32_t type) {
    str(o, k);
    u32(o, type);
}
static void f32v(buf *o, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u32(o, u);
}
static void pad_to(buf *o, size_t align) {
    while (o->n % align) put(o, "", 1);
}

/* A valid image: 13 pairs (every scalar type, a string, a string array; 14 with
 * general.alignment), three tensors (F32 2 x 3, Q8_0 one block of 32, F16 4), each at a multiple
 * of align (32 when 0: the key left out). */
static buf valid(uint32_t version, uint32_t align) {
    buf o = {0};
    put(&o, "GGUF", 4);
    u32(&o, version);
    u64(&o, 3);
    u64(&o, align ? 14 : 13);
    key(&o, "a.u8", EMB_GGUF_U8), put(&o, "\xFE", 1);
    key(&o, "a.i8", EMB_GGUF_I8), put(&o, "\xFE", 1);
    key(&o, "a.u16", EMB_GGUF_U16), put(&o, "\x34\x12", 2);
    key(&o, "a.i16", EMB_GGUF_I16), put(&o, "\xFE\xFF", 2);
    key(&o, "a.u32", EMB_GGUF_U32), u32(&o, 4000000000u);
    key(&o, "a.i32", EMB_GGUF_I32), u32(&o, (uint32_t)-7);
    key(&o, "a.f32", EMB_GGUF_F32), f32v(&o, 1e-6f);
    key(&o, "a.bool", EMB_GGUF_BOOL), put(&o, "\x01", 1);
    key(&o, "a.u64", EMB_GGUF_U64), u64(&o, 1ull << 40);
    key(&o, "a.i64", EMB_GGUF_I64), u64(&o, (uint64_t)-5);
    key(&o, "a.f64", EMB_GGUF_F64);
    double d = 0.1;
    put(&o, &d, 8);
    key(&o, "general.name", EMB_GGUF_STRING), str(&o, "tiny ▁model");
    key(&o, "tokens", EMB_GGUF_ARRAY), u32(&o, EMB_GGUF_STRING), u64(&o, 3);
    str(&o, "[CLS]"), str(&o, ""), str(&o, "▁héllo");
    if (align) key(&o, "general.alignment", EMB_GGUF_U32), u32(&o, align);
    size_t al = align ? align : 32;
    /* tensors: name, dims, ne..., type, offset */
    str(&o, "w"), u32(&o, 2), u64(&o, 3), u64(&o, 2), u32(&o, EMB_GGML_F32), u64(&o, 0);
    str(&o, "q"), u32(&o, 1), u64(&o, 32), u32(&o, EMB_GGML_Q8_0), u64(&o, al);
    str(&o, "h"), u32(&o, 1), u64(&o, 4), u32(&o, EMB_GGML_F16), u64(&o, al + (34 + al - 1) / al * al);
    pad_to(&o, al);
    for (int i = 0; i < 6; i++) f32v(&o, (float)i + 0.5f);
    pad_to(&o, al);
    unsigned char q[34] = {0x00, 0x3C}; /* f16 1.0, then 32 codes */
    for (int i = 0; i < 32; i++) q[2 + i] = (unsigned char)(i - 16);
    put(&o, q, 34);
    pad_to(&o, al);
    put(&o, "\x00\x3C\x00\x40\x00\xC0\x00\x00", 8);
    return o;
}

static void reads_back(uint32_t version, uint32_t align) {
    char err[EMB_ERR_LEN] = "";
    buf o = valid(version, align);
    emb_gguf g;
    int rc = emb_gguf_parse(o.b, o.n, "t.gguf", &g, err);
    CHECK(rc == 0, "v%u align %u parses: %s", version, align, err);
    if (rc) {
        free(o.b);
        return;
    }
    int64_t i;
    double x;
    const char *s;
    size_t len, cur = 0;
    CHECK(g.version == version && g.alignment == (align ? align : 32) && g.n_kv == (align ? 14u : 13u) &&
              g.n_tensors == 3,
          "header");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.u8"), &i) == 0 && i == 254, "u8");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.i8"), &i) == 0 && i == -2, "i8");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.u16"), &i) == 0 && i == 0x1234, "u16");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.i16"), &i) == 0 && i == -2, "i16");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.u32"), &i) == 0 && i == 4000000000ll, "u32");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.i32"), &i) == 0 && i == -7, "i32");
    CHECK(emb_gguf_kv_number(emb_gguf_find(&g, "a.f32"), &x) == 0 && x == (double)1e-6f, "f32");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.bool"), &i) == 0 && i == 1, "bool");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.u64"), &i) == 0 && i == 1ll << 40, "u64");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.i64"), &i) == 0 && i == -5, "i64");
    CHECK(emb_gguf_kv_number(emb_gguf_find(&g, "a.f64"), &x) == 0 && x == 0.1, "f64");
    CHECK(emb_gguf_kv_number(emb_gguf_find(&g, "a.i32"), &x) == 0 && x == -7, "an integer as a number");
    CHECK(emb_gguf_kv_int(emb_gguf_find(&g, "a.f32"), &i) != 0, "a float is not an integer");
    CHECK(emb_gguf_kv_string(emb_gguf_find(&g, "general.name"), &s, &len) == 0 && len == strlen("tiny ▁model") &&
              memcmp(s, "tiny ▁model", len) == 0,
          "string");
    CHECK(emb_gguf_find(&g, "a.u") == NULL && emb_gguf_find(&g, "a.u80") == NULL, "no prefix matches");
    const emb_gguf_kv *tok = emb_gguf_find(&g, "tokens");
    static const char *want[] = {"[CLS]", "", "▁héllo"};
    CHECK(tok && tok->type == EMB_GGUF_ARRAY && tok->elem_type == EMB_GGUF_STRING && tok->n == 3, "string array");
    for (int k = 0; tok && k < 3; k++)
        CHECK(emb_gguf_array_next_string(tok, &cur, &s, &len) == 0 && len == strlen(want[k]) &&
                  memcmp(s, want[k], len) == 0,
              "tokens[%d]", k);
    CHECK(emb_gguf_array_next_string(emb_gguf_find(&g, "a.u8"), &cur, &s, &len) != 0, "not an array");
    const emb_gguf_tensor *w = emb_gguf_find_tensor(&g, "w"), *q = emb_gguf_find_tensor(&g, "q"),
                          *h = emb_gguf_find_tensor(&g, "h");
    CHECK(w && w->n_dims == 2 && w->ne[0] == 3 && w->ne[1] == 2 && w->ne[2] == 1 && w->type == EMB_GGML_F32 &&
              w->bytes == 24,
          "tensor w");
    float f5;
    if (w) memcpy(&f5, w->data + 20, 4);
    CHECK(w && f5 == 5.5f && ((w->data - (const unsigned char *)o.b) % (align ? align : 32)) == 0,
          "w's data, aligned");
    CHECK(q && q->type == EMB_GGML_Q8_0 && q->bytes == 34 && q->data[0] == 0 && q->data[1] == 0x3C &&
              (signed char)q->data[2] == -16,
          "tensor q");
    CHECK(h && h->type == EMB_GGML_F16 && h->bytes == 8 && h->data[3] == 0x40, "tensor h");
    CHECK(emb_gguf_find_tensor(&g, "x") == NULL, "no tensor x");
    CHECK(strcmp(emb_ggml_type_name(EMB_GGML_Q4_K), "Q4_K") == 0 && emb_ggml_type_name(99) == NULL, "type names");
    emb_gguf_free(&g);
    free(o.b);
}

/* The valid image with n bytes at byte offset at replaced by rep (or the file cut at at when
 * rep is NULL): an error whose message holds want. */
static void refused(const char *what, size_t at, const void *rep, size_t n, const char *want) {
    char err[EMB_ERR_LEN] = "";
    buf o = valid(3, 0);
    size_t size = o.n;
    if (rep) memcpy(o.b + at, rep, n);
    else size = at;
    emb_gguf g;
    int rc = emb_gguf_parse(o.b, size, "bad.gguf", &g, err);
    CHECK(rc != 0 && strncmp(err, "bad.gguf: ", 10) == 0 && strstr(err, want), "%s: %s", what,
          rc ? err : "(parsed)");
    if (!rc) emb_gguf_free(&g);
    free(o.b);
}

/* Offsets in valid(3, 0): the header is 24 bytes; "a.u8" (8 + 4 bytes) then its type at 36. */
static void lies(void) {
    refused("magic", 0, "GGUX", 4, "no \"GGUF\" magic");
    refused("version 1", 4, "\x01\0\0\0", 4, "version 1 is not supported");
    refused("version 4", 4, "\x04\0\0\0", 4, "version 4 is not supported");
    refused("tensor count", 8, "\xff\xff\xff\xff\xff\xff\xff\x0f", 8, "counts exceed");
    refused("pair count", 16, "\x00\x00\x00\x00\x01\x00\x00\x00", 8, "counts exceed");
    refused("key length", 24, "\x00\x00\x00\x00\x00\x01\x00\x00", 8, "a key runs past the end");
    refused("empty key", 24, "\x00\x00\x00\x00\x00\x00\x00\x00", 8, "a key is empty");
    refused("value type", 36, "\x0d\0\0\0", 4, "value type 13, which GGUF does not define");
    /* the string array: find "tokens" and make its element type an array, then its count huge */
    buf o = valid(3, 0);
    unsigned char *p = memmem(o.b, o.n, "tokens", 6);
    size_t at = p ? (size_t)(p - o.b) + 6 + 4 : 0; /* after the key and the ARRAY type */
    free(o.b);
    refused("array of arrays", at, "\x09\0\0\0", 4, "an array of value type 9");
    refused("array count", at + 4, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8, "runs past the end");
    o = valid(3, 0);
    p = memmem(o.b, o.n, "\x01\0\0\0\0\0\0\0w\x02\0\0\0", 13); /* tensor w: name, n_dims */
    at = p ? (size_t)(p - o.b) : 0;
    free(o.b);
    refused("n_dims 0", at + 9, "\0\0\0\0", 4, "has 0 dimensions");
    refused("n_dims 5", at + 9, "\x05\0\0\0", 4, "has 5 dimensions");
    refused("dimension overflow", at + 13, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8, "overflow");
    refused("ggml type", at + 29, "\x63\0\0\0", 4, "ggml type 99, which is not known");
    refused("blocks", at + 29, "\x08\0\0\0", 4, "not whole Q8_0 blocks of 32");
    refused("offset", at + 33, "\x00\x40\0\0\0\0\0\0", 8, "past the end of the file");
    refused("alignment", at + 33, "\x04\0\0\0\0\0\0\0", 8, "not aligned");
    refused("duplicate tensor", at + 8, "q", 1, "tensor 'q' appears twice");
    refused("name length", at, "\x40\0\0\0\0\0\0\0", 8, "too long");
    refused("duplicate key", 24 + 8 + 2, "i", 1, "key 'a.i8' appears twice");
}

/* Every prefix of a valid file: an error, never a crash or a read past the cut. */
static void truncations(void) {
    buf o = valid(3, 64);
    int bad = 0;
    for (size_t n = 0; n < o.n; n++) {
        char err[EMB_ERR_LEN] = "";
        unsigned char *cut = malloc(n ? n : 1); /* its own allocation: ASan sees a read past n */
        memcpy(cut, o.b, n);
        emb_gguf g;
        if (emb_gguf_parse(cut, n, "cut.gguf", &g, err) == 0) {
            emb_gguf_free(&g);
            bad++;
        } else if (strncmp(err, "cut.gguf: ", 10) != 0) {
            bad++;
        }
        free(cut);
    }
    CHECK(bad == 0, "%d of %zu truncations parsed or gave no message naming the file", bad, o.n);
    char err[EMB_ERR_LEN];
    emb_gguf g;
    CHECK(emb_gguf_parse(o.b, o.n, "whole.gguf", &g, err) == 0 && g.alignment == 64, "the whole file parses");
    emb_gguf_free(&g);
    free(o.b);
    o = valid(3, 48);
    CHECK(emb_gguf_parse(o.b, o.n, "a.gguf", &g, err) != 0 && strstr(err, "not a power of two"),
          "alignment 48: %s", err);
    free(o.b);
}

int main(void) {
    reads_back(3, 0);
    reads_back(2, 0);
    reads_back(3, 64);
    lies();
    truncations();
    return check_report();
}
