/* A GGUF file's Q8_0 tensors read without widening them (encoder_internal.h): each gets n floats
 * of address space, reserved and inaccessible, for the loaders' pointers (their arithmetic works:
 * Q, K and V cut from one tensor, a gated layer's halves) and its blocks stay in the file. Then
 * emb_encoder_set_weights packs the linear layers' from the blocks themselves
 * (int8_gemm_weights_set_rows_q8_0), or widens them into their own address space when float32
 * (or int8 / bf16 packed from float32) is asked; a tensor that no packing took (an embedding
 * table) is widened there too. A read of a tensor never widened faults at once, never reads
 * garbage. */
#include "nn/encoder_internal.h"
#include "nn/gguf_quant.h"
#include <stdlib.h>
#include <sys/mman.h>

/* ggml's Q8_0 block: an f16 scale and 32 codes. */
#define Q8_BLOCK_BYTES 34

const float *emb_encoder_q8_defer(emb_encoder *e, const emb_safetensors_tensor *t, int fi, int rows, int cols) {
    if (e->nq8 == e->capq8) {
        int nc = e->capq8 ? 2 * e->capq8 : 32;
        emb_q8_tensor *q = realloc(e->q8, (size_t)nc * sizeof *q);
        if (!q) return NULL;
        e->q8 = q;
        e->capq8 = nc;
    }
    size_t n = (size_t)rows * (size_t)cols;
    void *r = mmap(NULL, n * sizeof(float), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) return NULL;
    e->q8[e->nq8++] = (emb_q8_tensor){r, n, rows, cols, t->data, e->files[fi], 0, 0};
    return r;
}

int emb_encoder_q8_hash(emb_encoder *e, const unsigned char *q8, size_t n) {
    enum { CHUNK = 65536 }; /* values a step: a whole number of blocks */
    float *tmp = malloc(CHUNK * sizeof(float));
    if (!tmp) return -1;
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? n - i : CHUNK;
        emb_quant_to_f32(EMB_DT_Q8_0, q8 + i / 32 * Q8_BLOCK_BYTES, m, tmp);
        XXH3_64bits_update(e->hash, tmp, m * sizeof(float));
    }
    free(tmp);
    return 0;
}

emb_q8_tensor *emb_encoder_q8_find(const emb_encoder *e, const float *p, int N, int K,
                                   const unsigned char **rows) {
    for (int i = 0; p && !e->q8_done && i < e->nq8; i++) {
        emb_q8_tensor *t = &e->q8[i];
        if (p < t->range || p >= t->range + t->n || t->cols != K) continue;
        size_t off = (size_t)(p - t->range);
        if (off % (size_t)K || off / (size_t)K + (size_t)N > (size_t)t->rows) return NULL;
        *rows = t->q8 + off / (size_t)K * (size_t)(K / 32) * Q8_BLOCK_BYTES;
        return t;
    }
    return NULL;
}

int emb_encoder_q8_finish(emb_encoder *e) {
    for (int i = 0; !e->q8_done && i < e->nq8; i++) {
        emb_q8_tensor *t = &e->q8[i];
        if (t->widened || t->rows_packed >= t->rows) continue;
        size_t bytes = t->n * sizeof(float);
        void *r = mmap(t->range, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (r == MAP_FAILED) return -1;
        emb_quant_to_f32(EMB_DT_Q8_0, t->q8, t->n, t->range);
        t->widened = 1;
        e->info.converted_bytes += bytes;
    }
    /* every tensor widened or packed: the blocks are read no more, and leave memory */
    for (int i = 0; !e->q8_done && i < e->nq8; i++) {
        emb_q8_tensor *t = &e->q8[i];
        emb_safetensors_release(t->file, t->q8, t->n / 32 * Q8_BLOCK_BYTES);
    }
    e->q8_done = 1;
    return 0;
}

int emb_encoder_q8_pending(const emb_encoder *e, const emb_safetensors *file) {
    for (int i = 0; !e->q8_done && i < e->nq8; i++)
        if (e->q8[i].file == file) return 1;
    return 0;
}

void emb_encoder_q8_free(emb_encoder *e) {
    for (int i = 0; i < e->nq8; i++) munmap(e->q8[i].range, e->q8[i].n * sizeof(float));
    free(e->q8);
    e->q8 = NULL;
    e->nq8 = e->capq8 = 0;
}
