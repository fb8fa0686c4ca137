/* embed_rerank(model, query, text [, options]): a cross-encoder's relevance score of one pair
 * (sqlite-embed/rerank.h); embed_rerank_batch (ext_rerank_table.c) scores many texts at once. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "ext_util.h"
#include "sqlite-embed/rerank.h"
#include <cjson/cJSON.h>
#include <string.h>

#define RERANK_OPTIONS_EXAMPLE "{\"activation\": \"none\"}"

/* {"activation": "none" | "sigmoid"}: the logit, or its sigmoid, instead of the folder's choice. */
static int rerank_options(const cJSON *root, emb_rerank_score *kind, char **err) {
    *kind = EMB_RERANK_ACTIVATION;
    for (const cJSON *item = root ? root->child : NULL; item; item = item->next) {
        if (strcmp(item->string, "activation") != 0) {
            *err = sqlite3_mprintf("unknown option \"%s\" (known: activation)", item->string);
            return -1;
        }
        if (cJSON_IsString(item) && strcmp(item->valuestring, "none") == 0) *kind = EMB_RERANK_LOGIT;
        else if (cJSON_IsString(item) && strcmp(item->valuestring, "sigmoid") == 0) *kind = EMB_RERANK_SIGMOID;
        else {
            *err = sqlite3_mprintf("option \"activation\" must be \"none\" (the logit) or \"sigmoid\"");
            return -1;
        }
    }
    return 0;
}

int ext_rerank_options(sqlite3_value *val, emb_rerank_score *kind, char **err) {
    *kind = EMB_RERANK_ACTIVATION;
    *err = NULL;
    if (sqlite3_value_type(val) == SQLITE_NULL) return 0;
    if (sqlite3_value_type(val) != SQLITE_TEXT) {
        *err = sqlite3_mprintf("options must be a JSON object such as '%s'", RERANK_OPTIONS_EXAMPLE);
        return -1;
    }
    cJSON *root = NULL;
    if (ext_json_object((const char *)sqlite3_value_text(val), sqlite3_value_bytes(val), RERANK_OPTIONS_EXAMPLE,
                        &root, err))
        return -1;
    int rc = rerank_options(root, kind, err);
    cJSON_Delete(root);
    return rc;
}

void sql_embed_rerank(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "embed_rerank", *query, *text;
    int qlen, tlen;
    emb_rerank_score kind = EMB_RERANK_ACTIVATION;
    char *why = NULL;
    if (argc == 4 && ext_rerank_options(argv[3], &kind, &why)) {
        ext_error_take(ctx, fn, why);
        return;
    }
    if (ext_get_input_text(ctx, argv[1], fn, "the query", &query, &qlen) != EXT_OK ||
        ext_get_input_text(ctx, argv[2], fn, "the text", &text, &tlen) != EXT_OK)
        return; /* an error, or NULL in: NULL out */
    emb_model *m = ext_model_arg(ctx, argv, 0, fn);
    if (!m) return;
    char err[EMB_ERR_LEN];
    size_t len = (size_t)tlen;
    float score;
    if (emb_model_rerank_with(m, query, (size_t)qlen, &text, &len, 1, kind, &score, err))
        ext_error(ctx, fn, "%s", err);
    else sqlite3_result_double(ctx, (double)score);
    emb_model_release(m);
}
