/* embed_rerank(model, query, text): a cross-encoder's relevance score of one pair
 * (sqlite-embed/rerank.h); embed_rerank_batch (ext_rerank_table.c) scores many texts at once. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "ext_util.h"
#include "sqlite-embed/rerank.h"

void sql_embed_rerank(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    const char *fn = "embed_rerank", *query, *text;
    int qlen, tlen;
    if (ext_get_input_text(ctx, argv[1], fn, "the query", &query, &qlen) != EXT_OK ||
        ext_get_input_text(ctx, argv[2], fn, "the text", &text, &tlen) != EXT_OK)
        return; /* an error, or NULL in: NULL out */
    emb_model *m = ext_model_arg(ctx, argv, 0, fn);
    if (!m) return;
    char err[EMB_ERR_LEN];
    size_t len = (size_t)tlen;
    float score;
    if (emb_model_rerank(m, query, (size_t)qlen, &text, &len, 1, &score, err)) ext_error(ctx, fn, "%s", err);
    else sqlite3_result_double(ctx, (double)score);
    emb_model_release(m);
}
