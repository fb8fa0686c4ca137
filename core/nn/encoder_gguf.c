/* See encoder_gguf.h. Each architecture's keys and tensor names are in core/nn/gguf/<arch>.c (as
 * llama.cpp's convert_hf_to_gguf.py writes them; tests/references/gguf_*.py write the same); here
 * the file is opened, its architecture found and its tensors renamed to Hugging Face's names with
 * ggml's dimensions reversed. */
#include "nn/encoder_gguf.h"
#include "nn/gguf.h"
#include "nn/gguf/gguf_arch.h"
#include "nn/gguf_quant.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int emb_gguf_path(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && strcasecmp(path + n - 5, ".gguf") == 0;
}

/* The Hugging Face name of a GGUF tensor ("blk.3.attn_q.bias" -> "encoder.layer.3.attention.self.query.bias"),
 * or 0 when the model has none (the lm_head's "output.weight", anything the converter adds). */
static int hf_name(const emb_gguf_arch *a, const emb_gguf_tensor *t, char *out, size_t cap) {
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
    char *kind = strrchr(name, '.');
    if (!kind || (strcmp(kind, ".weight") != 0 && strcmp(kind, ".bias") != 0)) return 0;
    *kind++ = 0;
    for (size_t i = 0; i < a->n_top; i++)
        if (strcmp(name, a->top[i].gguf) == 0) return snprintf(out, cap, "%s.%s", a->top[i].hf, kind) > 0;
    int layer, used = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0) return 0;
    for (size_t i = 0; i < a->n_layer; i++)
        if (strcmp(name + used, a->layer[i].gguf) == 0)
            return snprintf(out, cap, a->layer_fmt, layer, a->layer[i].hf, kind) > 0;
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const emb_safetensors_tensor *)a)->name, ((const emb_safetensors_tensor *)b)->name);
}

/* One tensor into the table: its name, dtype, shape (ggml's reversed) and its bytes in place; a
 * block type keeps its blocks, widened to float32 by whichever loader takes the tensor. */
static int add_tensor(const emb_gguf_tensor *t, const char *hf, emb_safetensors_tensor *out, const char *label,
                      char err[EMB_ERR_LEN]) {
    memset(out, 0, sizeof *out);
    out->ndim = (int)t->n_dims;
    for (int d = 0; d < out->ndim; d++) out->shape[d] = t->ne[out->ndim - 1 - d];
    out->data = t->data;
    out->end = t->bytes;
    int dt = emb_quant_dtype_of_ggml(t->type);
    if (dt < 0)
        return emb_fail(err,
                        "%s: tensor '%.*s' has type %s, which is not read (F32, F16, BF16, Q4_0, Q4_1, Q5_0, "
                        "Q5_1, Q8_0, Q4_K, Q5_K and Q6_K are)",
                        label, (int)t->name_len, t->name, emb_ggml_type_name(t->type));
    out->dtype = (emb_dtype)dt;
    return (out->name = strdup(hf)) ? 0 : emb_fail(err, "out of memory");
}

static int tensor_table(const emb_gguf_arch *a, const emb_gguf *g, emb_safetensors *sf, char err[EMB_ERR_LEN]) {
    sf->h.tensors = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, sizeof *sf->h.tensors);
    if (!sf->h.tensors) return emb_fail(err, "out of memory");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        char hf[160];
        if (!hf_name(a, &g->tensors[i], hf, sizeof hf)) continue;
        if (add_tensor(&g->tensors[i], hf, &sf->h.tensors[sf->h.n], sf->label, err)) return -1;
        sf->h.n++;
    }
    qsort(sf->h.tensors, (size_t)sf->h.n, sizeof *sf->h.tensors, cmp_name);
    return 0;
}

int emb_gguf_file_open(const char *path, int use_mmap, emb_safetensors **sf, emb_gguf *g, char err[EMB_ERR_LEN]) {
    if (emb_safetensors_open_raw(path, use_mmap, sf, err)) return -1;
    if (emb_gguf_parse((*sf)->map, (*sf)->size, (*sf)->label, g, err) == 0) return 0;
    emb_safetensors_close(*sf);
    *sf = NULL;
    return -1;
}

int emb_gguf_expect(const emb_gguf *g, const char *key, const char *want, const char *label, const char *what,
                    char err[EMB_ERR_LEN]) {
    const char *v = NULL;
    size_t n = 0;
    if (emb_gguf_kv_string(emb_gguf_find(g, key), &v, &n)) return emb_fail(err, "%s: no %s string", label, key);
    if (n == strlen(want) && memcmp(v, want, n) == 0) return 0;
    return emb_fail(err, "%s: %s '%.*s' is not read from GGUF yet (%s is)", label, what, (int)(n > 40 ? 40 : n), v,
                    want);
}

int emb_encoder_gguf_open(const char *path, int use_mmap, emb_encoder_config *cfg, emb_safetensors **file,
                          char err[EMB_ERR_LEN]) {
    emb_safetensors *sf;
    emb_gguf g;
    *file = NULL;
    if (emb_gguf_file_open(path, use_mmap, &sf, &g, err)) return -1;
    const emb_gguf_arch *a = NULL;
    const char *name = NULL;
    size_t n = 0;
    int rc = emb_gguf_kv_string(emb_gguf_find(&g, "general.architecture"), &name, &n)
                 ? emb_fail(err, "%s: no general.architecture string", sf->label)
                 : 0;
    if (rc == 0 && !(a = emb_gguf_arch_find(name, n)))
        rc = emb_fail(err, "%s: architecture '%.*s' is not read from GGUF yet (%s are)", sf->label,
                      (int)(n > 40 ? 40 : n), name, emb_gguf_arch_names());
    if (rc == 0) rc = a->config(&g, sf->label, cfg, err);
    if (rc == 0) rc = tensor_table(a, &g, sf, err);
    emb_gguf_free(&g);
    if (rc) {
        emb_safetensors_close(sf);
        return -1;
    }
    *file = sf;
    return 0;
}
