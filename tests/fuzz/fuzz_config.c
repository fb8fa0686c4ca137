/* libFuzzer harness over config.json parsing (emb_encoder_config_parse): the input is the file's
 * text. Every failure has a message naming config.json; every success is a configuration the
 * encoder can size from without overflow (the ranges emb_encoder_config_parse promises), with the
 * name and position scheme of its architecture (seeds: every golden config.json, models2 included). */
#include "nn/encoder_config.h"
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    emb_encoder_config c;
    char err[EMB_ERR_LEN];
    err[0] = 0;
    if (emb_encoder_config_parse((const char *)data, size, "config.json", &c, err) != 0) {
        if (!memchr(err, 0, sizeof err) || strncmp(err, "config.json: ", 13) != 0) __builtin_trap();
        return 0;
    }
    if (c.dims.hidden < 1 || c.dims.hidden > 65536 || c.dims.heads < 1 || c.head_dim < 1 || c.kv_heads < 1 ||
        c.dims.heads % c.kv_heads != 0)
        __builtin_trap();
    /* encoders: heads split the hidden width; decoders (Qwen3, Gemma3) name head_dim, even for RoPE */
    if (!c.decoder && (c.dims.hidden % c.dims.heads != 0 || c.head_dim != c.dims.hidden / c.dims.heads))
        __builtin_trap();
    if (c.decoder && (c.head_dim % 2 || c.pos_kind != EMB_POS_ROTARY || c.rope_dims != c.head_dim ||
                      !(c.rope_theta >= 1 && c.rope_theta <= 1e12)))
        __builtin_trap();
    if (c.dims.layers < 1 || c.dims.layers > 1024 || c.dims.intermediate < 1 || c.dims.max_positions < 1 ||
        c.dims.vocab_size < 1)
        __builtin_trap();
    if (!(c.ln_eps > 0) || c.ln_eps > 1) __builtin_trap();
    if (c.arch == EMB_ARCH_BERT && (c.dims.type_vocab < 1 || strcmp(c.arch_name, "bert") != 0)) __builtin_trap();
    if (c.arch == EMB_ARCH_DISTILBERT && (c.dims.type_vocab != 0 || strcmp(c.arch_name, "distilbert") != 0))
        __builtin_trap();
    /* issue 12's architectures: the names and position schemes the header promises */
    static const char *names[] = {"bert",       "distilbert", "roberta", "nomic_bert", "jina_bert",
                                  "modernbert", "mpnet",      "qwen3",   "gemma3_text"};
    if ((unsigned)c.arch > EMB_ARCH_GEMMA3_TEXT) __builtin_trap();
    if (c.decoder != (c.arch == EMB_ARCH_QWEN3 || c.arch == EMB_ARCH_GEMMA3_TEXT)) __builtin_trap();
    if (c.arch == EMB_ARCH_MPNET && (c.pos_offset != 2 || c.rel_buckets < 32 || c.dims.type_vocab != 0))
        __builtin_trap();
    if (c.arch == EMB_ARCH_ROBERTA ? strcmp(c.arch_name, "roberta") != 0 && strcmp(c.arch_name, "xlm-roberta") != 0
                                   : strcmp(c.arch_name, names[c.arch]) != 0)
        __builtin_trap();
    if (c.arch == EMB_ARCH_ROBERTA && c.pos_offset < 0) __builtin_trap();
    if (c.arch == EMB_ARCH_JINA_BERT && c.pos_kind != EMB_POS_ALIBI) __builtin_trap();
    if (c.arch == EMB_ARCH_NOMIC_BERT || c.arch == EMB_ARCH_MODERNBERT) {
        int dh = c.dims.hidden / c.dims.heads;
        if (c.pos_kind != EMB_POS_ROTARY || c.rope_dims < 2 || c.rope_dims % 2 || c.rope_dims > dh)
            __builtin_trap();
        if (!(c.rope_theta >= 1 && c.rope_theta <= 1e12) ||
            !(c.rope_theta_local >= 1 && c.rope_theta_local <= 1e12))
            __builtin_trap();
    }
    /* -1: transformers 5's layer_types following no period */
    if (c.half_window < 0 || c.global_every < -1 ||
        (c.global_every != 0 && c.arch != EMB_ARCH_MODERNBERT && c.arch != EMB_ARCH_GEMMA3_TEXT))
        __builtin_trap();
    for (int l = 0; l < c.dims.layers; l++) /* a local layer only where a window is set */
        if (emb_encoder_config_layer_is_local(&c, l) && c.global_every == 0) __builtin_trap();
    /* the table sizes the loader computes fit in 64 bits */
    volatile uint64_t bytes = (uint64_t)c.dims.vocab_size * (uint64_t)c.dims.hidden * 4u +
                              (uint64_t)c.dims.max_positions * (uint64_t)c.dims.hidden * 4u;
    (void)bytes;
    return 0;
}
