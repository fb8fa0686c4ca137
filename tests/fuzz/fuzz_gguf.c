/* libFuzzer harness over the GGUF reader (emb_gguf_parse): the input is the whole file. Every
 * failure has a message naming the file; on success every value, every string of every array
 * and every tensor's first and last byte are read, so that ASan sees any pointer the checks let
 * through past the input (seeds: tests/fuzz/corpus/fuzz_gguf, small files in llama.cpp's layout). */
#include "nn/gguf.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    emb_gguf g;
    char err[EMB_ERR_LEN];
    err[0] = 0;
    /* a copy of exactly size bytes: a read past it is a heap overflow ASan reports */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if (emb_gguf_parse(copy, size, "f.gguf", &g, err) != 0) {
        if (!memchr(err, 0, sizeof err) || strncmp(err, "f.gguf: ", 8) != 0) __builtin_trap();
        free(copy);
        return 0;
    }
    volatile unsigned sink = 0;
    for (uint64_t i = 0; i < g.n_kv; i++) {
        const emb_gguf_kv *kv = &g.kv[i];
        int64_t v;
        double x;
        const char *s;
        size_t len, cur = 0;
        if (emb_gguf_kv_int(kv, &v) == 0) sink += (unsigned)v;
        if (emb_gguf_kv_number(kv, &x) == 0) sink += x > 0;
        if (emb_gguf_kv_string(kv, &s, &len) == 0 && len) sink += (unsigned char)s[len - 1];
        for (uint64_t k = 0; kv->type == EMB_GGUF_ARRAY && kv->elem_type == EMB_GGUF_STRING && k < kv->n; k++)
            if (emb_gguf_array_next_string(kv, &cur, &s, &len) == 0 && len) sink += (unsigned char)s[len - 1];
        if (emb_gguf_find(&g, "general.alignment") == NULL && g.alignment != 32) __builtin_trap();
    }
    for (uint64_t i = 0; i < g.n_tensors; i++) {
        const emb_gguf_tensor *t = &g.tensors[i];
        if (t->bytes) sink += t->data[0] + t->data[t->bytes - 1];
        if ((size_t)(t->data - g.data) % g.alignment) __builtin_trap();
    }
    (void)sink;
    emb_gguf_free(&g);
    free(copy);
    return 0;
}
