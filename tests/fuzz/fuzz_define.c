/* libFuzzer harness over embed_define's JSON (emb_model_define): the input is the definition. A
 * failure has a message; a model that loads stays within the documented limits and embeds its
 * own vocabulary; the input bytes, as text (NULs and invalid UTF-8 included), tokenize or fail
 * cleanly. */
#include "sqlite-embed/model.h"
#include "model/defined_model.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    emb_model *m;
    char err[EMB_ERR_LEN];
    err[0] = 0;
    if (emb_model_define("f", (const char *)data, size, &m, err) != 0) {
        if (!memchr(err, 0, sizeof err) || !err[0]) __builtin_trap();
        return 0;
    }
    const emb_model_info *in = emb_model_get_info(m);
    if (in->dims->hidden < 1 || in->dims->hidden > EMB_DEFINED_MAX_DIMS || in->dims->vocab_size < 1 ||
        in->dims->vocab_size > EMB_DEFINED_MAX_VOCAB || in->dims->max_positions < 1 ||
        in->dims->max_positions > EMB_DEFINED_MAX_POSITIONS || (uint64_t)in->bytes > EMB_DEFINED_MAX_BYTES)
        __builtin_trap();
    /* the first words of the vocabulary, one per position, as a text */
    size_t cap = 1, len = 0;
    int n = in->dims->vocab_size < in->dims->max_positions ? in->dims->vocab_size : in->dims->max_positions;
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) {
        size_t l;
        const char *w = emb_model_token_text(m, i, &l);
        if (!w) __builtin_trap();
        cap += l + 1;
    }
    char *text = malloc(cap);
    for (int i = 0; i < n; i++) {
        size_t l;
        const char *w = emb_model_token_text(m, i, &l);
        memcpy(text + len, w, l);
        len += l;
        text[len++] = ' ';
    }
    emb_encoding enc;
    emb_model_encoding_init(&enc);
    if (emb_model_tokenize(m, text, len, NULL, 0, &enc, err) != 0 || enc.n != (size_t)n) __builtin_trap();
    for (size_t i = 0; i < enc.n; i++)
        if (enc.tok[i].id != (int32_t)i || !emb_model_token_row(m, enc.tok[i].id, NULL) ||
            !emb_model_position_row(m, (int32_t)i))
            __builtin_trap();
    float *v = malloc((size_t)in->dims->hidden * sizeof(float));
    const char *texts[1] = {text};
    if (emb_model_embed(m, texts, &len, 1, NULL, v, err) != 0) __builtin_trap();
    /* the raw input as a text: words that hold a NUL, invalid UTF-8, prefixes of vocabulary words */
    if (emb_model_tokenize(m, (const char *)data, size, NULL, 0, &enc, err) == 0)
        for (size_t i = 0; i < enc.n; i++)
            if (enc.tok[i].id < 0 || enc.tok[i].id >= in->dims->vocab_size) __builtin_trap();
    emb_model_encoding_free(&enc);
    free(v);
    free(text);
    emb_model_release(m);
    return 0;
}
