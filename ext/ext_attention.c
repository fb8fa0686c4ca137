/* embed_attention_bias(model, i, j [, layer]): the additive bias a model's attention gives the
 * score of query i and key j, one float per head (core: emb_model_attention_bias). ALiBi's
 * -slope_h * |i - j|, -inf where a sliding-window layer hides the key, 0 otherwise. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "ext_util.h"

void sql_embed_attention_bias(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "embed_attention_bias";
    for (int a = 0; a < argc; a++)
        if (sqlite3_value_type(argv[a]) == SQLITE_NULL) return; /* NULL in, NULL out */
    emb_model *m = ext_model_arg(ctx, argv, 0, fn);
    if (!m) return;
    const emb_model_info *info = emb_model_get_info(m);
    char err[EMB_ERR_LEN];
    sqlite3_int64 i, j, layer = 0;
    float *out = NULL;
    if (info->dims->layers == 0) { /* defined and tokenizer-only models: the core says why */
        float none;
        emb_model_attention_bias(m, 0, 0, 0, &none, err);
        ext_error(ctx, fn, "%s", err);
    } else if (ext_get_int(ctx, argv[1], fn, "the query position i", 0, info->max_tokens - 1, &i) == EXT_OK &&
               ext_get_int(ctx, argv[2], fn, "the key position j", 0, info->max_tokens - 1, &j) == EXT_OK &&
               (argc < 4 || ext_get_int(ctx, argv[3], fn, "the layer", 1, info->dims->layers, &layer) == EXT_OK)) {
        if (!(out = sqlite3_malloc64((size_t)info->dims->heads * sizeof(float)))) sqlite3_result_error_nomem(ctx);
        else if (emb_model_attention_bias(m, (int)layer, i, j, out, err)) ext_error(ctx, fn, "%s", err);
        else {
            ext_result_vector_owned(ctx, out, (size_t)info->dims->heads);
            out = NULL; /* the result's now */
        }
    }
    sqlite3_free(out);
    emb_model_release(m);
}
