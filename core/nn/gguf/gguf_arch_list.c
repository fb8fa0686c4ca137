/* The GGUF architectures read, and what their files share. See gguf_arch.h. */
#include "nn/gguf/gguf_arch.h"
#include <stdio.h>
#include <string.h>

static const emb_gguf_arch *const ARCHS[] = {
    &emb_gguf_arch_bert,
    &emb_gguf_arch_qwen3,
    &emb_gguf_arch_gemma,
};
#define N_ARCHS (sizeof ARCHS / sizeof *ARCHS)

const emb_gguf_arch *emb_gguf_arch_find(const char *name, size_t n) {
    for (size_t i = 0; i < N_ARCHS; i++)
        if (strlen(ARCHS[i]->arch) == n && memcmp(ARCHS[i]->arch, name, n) == 0) return ARCHS[i];
    return NULL;
}

const char *emb_gguf_arch_names(void) {
    static char names[256];
    if (names[0]) return names;
    char buf[256] = "";
    for (size_t i = 0; i < N_ARCHS; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "", ARCHS[i]->arch);
    memcpy(names, buf, sizeof names); /* the same bytes on every thread: a benign race */
    return names;
}

int emb_gguf_meta_int(const emb_gguf *g, const char *key, int64_t lo, int64_t hi, const char *label, int64_t *out,
                      char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *kv = emb_gguf_find(g, key);
    if (!kv) return emb_fail(err, "%s: key '%s' is missing", label, key);
    if (emb_gguf_kv_int(kv, out) || *out < lo || *out > hi)
        return emb_fail(err, "%s: key '%s' is not an integer from %lld to %lld", label, key, (long long)lo,
                        (long long)hi);
    return 0;
}

int emb_gguf_meta_number(const emb_gguf *g, const char *key, const char *label, double *out,
                         char err[EMB_ERR_LEN]) {
    const emb_gguf_kv *kv = emb_gguf_find(g, key);
    if (kv && emb_gguf_kv_number(kv, out)) return emb_fail(err, "%s: key '%s' is not a number", label, key);
    return 0;
}

int64_t emb_gguf_rows_of(const emb_gguf *g, const char *name) {
    const emb_gguf_tensor *t = emb_gguf_find_tensor(g, name);
    return t && t->n_dims == 2 ? t->ne[1] : 0;
}

int emb_gguf_config_parse(const char *json, const char *arch, const char *label, emb_encoder_config *cfg,
                          char err[EMB_ERR_LEN]) {
    char file[160];
    snprintf(file, sizeof file, "%s (its %s.* keys as config.json)", label, arch);
    return emb_encoder_config_parse(json, strlen(json), file, cfg, err);
}
