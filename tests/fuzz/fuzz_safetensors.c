/* libFuzzer harness over the safetensors header parser: the input is a whole file image. */
#include "nn/safetensors.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    emb_safetensors_header h;
    char err[EMB_ERR_LEN];
    if (emb_safetensors_parse(data, size, "fuzz.safetensors", &h, err) != 0) {
        if (!memchr(err, 0, sizeof err) || !err[0]) __builtin_trap(); /* every failure has a message */
        return 0;
    }
    volatile unsigned sum = 0;
    for (int i = 0; i < h.n; i++) {
        const emb_safetensors_tensor *t = &h.tensors[i];
        if (emb_safetensors_header_find(&h, t->name) != t) __builtin_trap();
        if (t->end > h.data_len || t->begin > t->end) __builtin_trap();
        if (t->end > t->begin) sum += t->data[0] + t->data[t->end - t->begin - 1]; /* in bounds under ASan */
    }
    emb_safetensors_header_free(&h);
    return 0;
}
