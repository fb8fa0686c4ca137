/* The architectures built, each described in its own file: which one reads a config.json's
 * model_type, and the description of an architecture already read. */
#include "nn/arch/arch.h"
#include <string.h>

/* Asked in this order: JinaBERT v2 before BERT, whose model_type it shares. */
static const emb_arch_desc *const ALL[] = {&emb_arch_jina_bert,  &emb_arch_bert,       &emb_arch_roberta,
                                           &emb_arch_distilbert, &emb_arch_nomic_bert, &emb_arch_modernbert,
                                           &emb_arch_mpnet,      &emb_arch_qwen3,      &emb_arch_gemma3_text};

const char emb_arch_supported[] =
    "bert, distilbert, roberta, xlm-roberta, nomic_bert, modernbert, mpnet, qwen3, gemma3_text, JinaBERT v2";

const emb_arch_desc *emb_arch_for_type(const char *type, const cJSON *root) {
    for (size_t i = 0; i < sizeof ALL / sizeof *ALL; i++)
        for (const char *const *t = ALL[i]->model_types; *t; t++)
            if (strcmp(type, *t) == 0 && (!ALL[i]->claims || ALL[i]->claims(root))) return ALL[i];
    return NULL;
}

const emb_arch_desc *emb_arch_of(emb_arch a) {
    for (size_t i = 0; i < sizeof ALL / sizeof *ALL; i++)
        if (ALL[i]->arch == a) return ALL[i];
    return NULL;
}
