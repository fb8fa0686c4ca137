/* The GGUF architectures read. See gguf_arch.h; what their files share is in gguf_meta.c. */
#include "nn/gguf/gguf_arch.h"
#include <stdio.h>
#include <string.h>

static const emb_gguf_arch *const ARCHS[] = {
    &emb_gguf_arch_bert,         &emb_gguf_arch_qwen3, &emb_gguf_arch_nomic_bert,
    &emb_gguf_arch_jina_bert_v2, &emb_gguf_arch_gemma,
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
