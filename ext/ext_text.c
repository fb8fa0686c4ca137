/* Functions of a model and a text: embed_token_ids, contextual_embedding, embed. Their results
 * depend on the registry, so none is deterministic. */
#include "ext_functions.h"
#include "ext_registry.h"
#include "sqlite-embed/pooling.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYER_ARG 10000

/* Reads the (model, text [, text_b]) arguments shared by these functions. Returns the
 * model retained, or NULL (error set, or a NULL argument: the result stays NULL). A NULL
 * text_b is no second text. */
static emb_model *model_and_text(sqlite3_context *ctx, sqlite3_value **argv, int with_b, const char *fn,
                                 const char **text, int *len, const char **b, int *blen) {
    *b = NULL;
    *blen = 0;
    if (ext_get_input_text(ctx, argv[1], fn, "the text", text, len) != EXT_OK) return NULL;
    if (with_b && ext_get_input_text(ctx, argv[2], fn, "text_b", b, blen) == EXT_ERROR) return NULL;
    return ext_model_arg(ctx, argv, 0, fn);
}

void sql_embed_token_ids(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "embed_token_ids", *text, *b;
    int len, blen;
    emb_model *m = model_and_text(ctx, argv, argc == 3, fn, &text, &len, &b, &blen);
    if (!m) return;
    emb_encoding enc;
    emb_model_encoding_init(&enc);
    char err[EMB_ERR_LEN];
    if (emb_model_tokenize(m, text, (size_t)len, b, (size_t)blen, &enc, err)) {
        ext_error(ctx, fn, "%s", err);
    } else {
        sqlite3_str *s = sqlite3_str_new(NULL);
        sqlite3_str_appendchar(s, 1, '[');
        for (size_t i = 0; i < enc.n; i++) sqlite3_str_appendf(s, i ? ",%d" : "%d", enc.tok[i].id);
        sqlite3_str_appendchar(s, 1, ']');
        int slen = sqlite3_str_length(s);
        char *json = sqlite3_str_finish(s);
        if (!json) sqlite3_result_error_nomem(ctx);
        else {
            sqlite3_result_text(ctx, json, slen, sqlite3_free);
            sqlite3_result_subtype(ctx, 'J');
        }
    }
    emb_model_encoding_free(&enc);
    emb_model_release(m);
}

void sql_contextual_embedding(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "contextual_embedding", *text, *b;
    int len, blen;
    sqlite3_int64 index, layer = -1;
    if (ext_get_int(ctx, argv[2], fn, "the token index", 0, 1 << 30, &index) != EXT_OK) return;
    if (argc == 4 && ext_get_int(ctx, argv[3], fn, "the layer", 0, MAX_LAYER_ARG, &layer) != EXT_OK) return;
    emb_model *m = model_and_text(ctx, argv, 0, fn, &text, &len, &b, &blen);
    if (!m) return;
    const emb_model_info *info = emb_model_get_info(m);
    if (layer < 0) layer = info->dims->layers;
    emb_encoding enc;
    emb_model_encoding_init(&enc);
    char err[EMB_ERR_LEN];
    float *hidden = NULL;
    if (emb_model_require_vectors(info, "vectors", err)) {
        ext_error(ctx, fn, "%s", err);
    } else if (info->is_static) {
        ext_error(ctx, fn,
                  "model '%s' is a static embedding model: a token's vector is its table row whatever the "
                  "context (embed_tokens shows the rows)",
                  info->name);
    } else if (layer > info->dims->layers) {
        ext_error(ctx, fn, "layer %lld is out of range: model '%s' has %d layers (0 is the input embedding)",
                  layer, info->name, info->dims->layers);
    } else if (emb_model_tokenize(m, text, (size_t)len, NULL, 0, &enc, err)) {
        ext_error(ctx, fn, "%s", err);
    } else if ((size_t)index >= enc.n) {
        ext_error(ctx, fn, "token index %lld is out of range: the text has %lld tokens", index, (long long)enc.n);
    } else if (!(hidden = sqlite3_malloc64(enc.n * (size_t)info->dims->hidden * sizeof(float)))) {
        sqlite3_result_error_nomem(ctx);
    } else if (emb_model_hidden_states(m, &enc, (int)layer, hidden, err)) {
        ext_error(ctx, fn, "%s", err);
    } else {
        ext_result_vector(ctx, hidden + (size_t)index * (size_t)info->dims->hidden, (size_t)info->dims->hidden);
    }
    sqlite3_free(hidden);
    emb_model_encoding_free(&enc);
    emb_model_release(m);
}

/* options: {"pooling": a mode, "normalize": true | false, "dims": n, "truncate": true | false,
 * "prompt_name": a prompt of the model's folder, "prompt": a literal text}; *prompt_name keeps
 * the name (in root, which the caller frees) until the model is known. */
static int parse_options(sqlite3_context *ctx, sqlite3_value *val, emb_embed_options *opt, int *truncate,
                         const char **prompt_name, cJSON **root) {
    const char *fn = "embed";
    *truncate = 1;
    *opt = (emb_embed_options){-1, -1, 0, NULL};
    *prompt_name = NULL;
    ext_rc r = ext_get_options(ctx, val, fn, "{\"pooling\": \"cls\", \"normalize\": false}", root);
    if (r != EXT_OK) return r == EXT_ERROR ? -1 : 0;
    for (const cJSON *item = (*root)->child; item; item = item->next) {
        const char *k = item->string;
        if (strcmp(k, "pooling") == 0) {
            emb_pool_mode mode;
            if (!cJSON_IsString(item) || emb_pool_mode_parse(item->valuestring, &mode) != 0)
                return ext_error(
                           ctx, fn,
                           "option \"pooling\" must be \"mean\", \"cls\", \"max\", \"mean_sqrt_len_tokens\", "
                           "\"weightedmean\" or \"lasttoken\""),
                       -1;
            opt->pool = (int)mode;
        } else if (strcmp(k, "normalize") == 0 || strcmp(k, "truncate") == 0) {
            if (!cJSON_IsBool(item)) return ext_error(ctx, fn, "option \"%s\" must be true or false", k), -1;
            if (k[0] == 'n') opt->normalize = cJSON_IsTrue(item);
            else *truncate = cJSON_IsTrue(item);
        } else if (strcmp(k, "dims") == 0) {
            double d = cJSON_IsNumber(item) ? item->valuedouble : 0;
            if (!(d >= 1 && d <= 1 << 30 && d == (double)(int)d))
                return ext_error(ctx, fn, "option \"dims\" must be a whole number of dimensions from 1"), -1;
            opt->dims = (int)d;
        } else if (strcmp(k, "prompt") == 0 || strcmp(k, "prompt_name") == 0) {
            if (!cJSON_IsString(item)) return ext_error(ctx, fn, "option \"%s\" must be a string", k), -1;
            if (k[6]) *prompt_name = item->valuestring;
            else opt->prompt = item->valuestring;
        } else {
            return ext_error(
                       ctx, fn,
                       "unknown option \"%s\" (known: pooling, normalize, dims, truncate, prompt, prompt_name)",
                       k),
                   -1;
        }
    }
    if (opt->prompt && *prompt_name)
        return ext_error(ctx, fn, "options \"prompt\" and \"prompt_name\" are two prompts: give one"), -1;
    return 0;
}

/* With "truncate": false, a text over the model's limit is an error giving its token count (as
 * Hugging Face TEI does) instead of a vector of its first tokens. 1 when the error is set. */
static int over_limit(sqlite3_context *ctx, const emb_model *m, const char *text, int len) {
    const emb_model_info *info = emb_model_get_info(m);
    if (info->max_tokens <= 0) return 0;
    emb_encoding enc;
    char err[EMB_ERR_LEN];
    emb_model_encoding_init(&enc);
    int rc = emb_model_tokenize_limit(m, text, (size_t)len, NULL, 0, 0, &enc, err);
    if (rc) ext_error(ctx, "embed", "%s", err);
    else if (enc.n > (size_t)info->max_tokens)
        ext_error(ctx, "embed",
                  "the text has %lld tokens, more than model '%s' takes (%d) and \"truncate\" is false: "
                  "embed_chunks cuts it into texts that fit",
                  (long long)enc.n, info->name, info->max_tokens);
    rc = rc || enc.n > (size_t)info->max_tokens;
    emb_model_encoding_free(&enc);
    return rc;
}

/* The prompt a name stands for in model m's folder; NULL and the error set if it has none. */
static const char *named_prompt(sqlite3_context *ctx, const emb_model *m, const char *name) {
    const char *p = emb_model_prompt(m, name);
    const emb_model_info *info = emb_model_get_info(m);
    if (!p)
        ext_error(ctx, "embed", "model '%s' has no prompt named \"%s\" (its prompts: %s)", info->name, name,
                  info->prompts ? info->prompts : "none");
    return p;
}

void sql_embed(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    const char *fn = "embed", *text, *b, *prompt_name = NULL;
    int len, blen, truncate = 1;
    emb_embed_options opt = {-1, -1, 0, NULL};
    cJSON *root = NULL;
    if (argc == 3 && parse_options(ctx, argv[2], &opt, &truncate, &prompt_name, &root)) {
        cJSON_Delete(root);
        return;
    }
    emb_model *m = model_and_text(ctx, argv, 0, fn, &text, &len, &b, &blen);
    if (!m) {
        cJSON_Delete(root);
        return;
    }
    const emb_model_info *info = emb_model_get_info(m);
    float *out = NULL;
    char err[EMB_ERR_LEN];
    size_t slen = (size_t)len;
    size_t width = info->has_vectors ? (size_t)emb_model_embed_dims(m, &opt) : 0;
    if (emb_model_require_vectors(info, "vectors", err)) ext_error(ctx, fn, "%s", err);
    else if (prompt_name && !(opt.prompt = named_prompt(ctx, m, prompt_name))) {
        /* the error is set */
    } else if (!truncate && over_limit(ctx, m, text, len)) {
        /* the error is set */
    } else if (width > (size_t)info->dimensions)
        ext_error(ctx, fn, "option \"dims\" is %lld, but model '%s' makes vectors of %d dimensions",
                  (long long)width, info->name, info->dimensions);
    else if (!(out = sqlite3_malloc64(width * sizeof(float)))) sqlite3_result_error_nomem(ctx);
    else if (emb_model_embed(m, &text, &slen, 1, &opt, out, err)) {
        ext_error(ctx, fn, "%s", err);
        sqlite3_free(out);
    } else {
        ext_result_vector_owned(ctx, out, width);
    }
    cJSON_Delete(root);
    emb_model_release(m);
}
