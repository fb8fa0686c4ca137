#include "encoder_config.h"
#include "emb_json.h"
#include "file.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { snprintf(err, EMB_ERR_LEN, __VA_ARGS__); goto fail; } while (0)

/* integer key; required unless def is given (has_def). */
static int get_int(const cJSON *root, const char *key, int has_def, int def, int lo, int hi, int *out,
                   const char *file, char err[EMB_ERR_LEN]) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) {
        if (has_def) { *out = def; return 0; }
        snprintf(err, EMB_ERR_LEN, "%s: missing key '%s'", file, key);
        return -1;
    }
    int64_t v;
    if (emb_json_int(j, lo, hi, &v)) {
        if (cJSON_IsNumber(j) && j->valuedouble == floor(j->valuedouble))
            snprintf(err, EMB_ERR_LEN, "%s: key '%s' = %.15g is out of range [%d, %d]", file, key, j->valuedouble, lo, hi);
        else
            snprintf(err, EMB_ERR_LEN, "%s: key '%s' is not an integer", file, key);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int emb_encoder_config_parse(const char *json, size_t len, const char *file, emb_encoder_config *out, char err[EMB_ERR_LEN]) {
    emb_encoder_config c;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) FAIL("%s: not a JSON object", file);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *type = NULL;
    if (cJSON_IsString(mt)) type = mt->valuestring;
    else if (mt && !cJSON_IsNull(mt)) FAIL("%s: key 'model_type' is not a string", file);
    else {
        /* old configs without model_type: infer from architectures[0] */
        const cJSON *ar = cJSON_GetObjectItemCaseSensitive(root, "architectures");
        const cJSON *a0 = cJSON_IsArray(ar) ? ar->child : NULL;
        if (cJSON_IsString(a0) && strncmp(a0->valuestring, "DistilBert", 10) == 0) type = "distilbert";
        else if (cJSON_IsString(a0) && strncmp(a0->valuestring, "Bert", 4) == 0) type = "bert";
        else FAIL("%s: missing key 'model_type'", file);
    }
    const int BIG = 1 << 20;
    const char *act = NULL;
    if (strcmp(type, "bert") == 0) {
        c.arch = EMB_ARCH_BERT;
        c.arch_name = "bert";
        if (get_int(root, "hidden_size", 0, 0, 1, 65536, &c.hidden, file, err) ||
            get_int(root, "num_hidden_layers", 0, 0, 1, 1024, &c.layers, file, err) ||
            get_int(root, "num_attention_heads", 0, 0, 1, 4096, &c.heads, file, err) ||
            get_int(root, "intermediate_size", 0, 0, 1, 1 << 18, &c.intermediate, file, err) ||
            get_int(root, "max_position_embeddings", 0, 0, 1, BIG, &c.max_positions, file, err) ||
            get_int(root, "vocab_size", 0, 0, 1, 1 << 24, &c.vocab_size, file, err) ||
            get_int(root, "type_vocab_size", 1, 2, 1, BIG, &c.type_vocab, file, err) ||
            get_int(root, "pad_token_id", 1, 0, 0, 1 << 24, &c.pad_token_id, file, err))
            goto fail;
        const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_eps");
        if (eps && !cJSON_IsNull(eps)) {
            /* at least float's smallest normal: a smaller one would round to 0 and divide by it */
            if (!cJSON_IsNumber(eps) || !(eps->valuedouble >= FLT_MIN) || eps->valuedouble > 1)
                FAIL("%s: key 'layer_norm_eps' is not a positive number (from 1.2e-38 to 1)", file);
            c.ln_eps = (float)eps->valuedouble;
        } else c.ln_eps = 1e-12f;
        const cJSON *pe = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
        if (pe && !cJSON_IsNull(pe) && !(cJSON_IsString(pe) && strcmp(pe->valuestring, "absolute") == 0))
            FAIL("%s: position_embedding_type '%.40s' is not supported (only \"absolute\")", file,
                 cJSON_IsString(pe) ? pe->valuestring : "?");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
        if (a && !cJSON_IsString(a)) FAIL("%s: key 'hidden_act' is not a string", file);
        act = a ? a->valuestring : "gelu";
    } else if (strcmp(type, "distilbert") == 0) {
        c.arch = EMB_ARCH_DISTILBERT;
        c.arch_name = "distilbert";
        if (get_int(root, "dim", 0, 0, 1, 65536, &c.hidden, file, err) ||
            get_int(root, "n_layers", 0, 0, 1, 1024, &c.layers, file, err) ||
            get_int(root, "n_heads", 0, 0, 1, 4096, &c.heads, file, err) ||
            get_int(root, "hidden_dim", 0, 0, 1, 1 << 18, &c.intermediate, file, err) ||
            get_int(root, "max_position_embeddings", 0, 0, 1, BIG, &c.max_positions, file, err) ||
            get_int(root, "vocab_size", 0, 0, 1, 1 << 24, &c.vocab_size, file, err) ||
            get_int(root, "pad_token_id", 1, 0, 0, 1 << 24, &c.pad_token_id, file, err))
            goto fail;
        c.type_vocab = 0;
        c.ln_eps = 1e-12f; /* DistilBERT's LayerNorms are built with eps=1e-12 */
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "sinusoidal_pos_embds");
        if (s && !cJSON_IsNull(s) && !cJSON_IsBool(s)) FAIL("%s: key 'sinusoidal_pos_embds' is not a boolean", file);
        c.sinusoidal = cJSON_IsTrue(s);
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "activation");
        if (a && !cJSON_IsString(a)) FAIL("%s: key 'activation' is not a string", file);
        act = a ? a->valuestring : "gelu";
    } else {
        FAIL("%s: model_type '%.40s' is not supported (supported: bert, distilbert)", file, type);
    }
    if (strcmp(act, "gelu") != 0)
        FAIL("%s: activation '%.40s' is not supported (only \"gelu\", exact erf)", file, act);
    c.act = EMB_ACT_GELU;
    if (c.hidden % c.heads != 0)
        FAIL("%s: hidden size %d is not a multiple of the number of attention heads %d", file, c.hidden, c.heads);
    cJSON_Delete(root);
    *out = c;
    return 0;
fail:
    cJSON_Delete(root);
    return -1;
}

int emb_encoder_config_load(const char *dir, emb_encoder_config *out, char err[EMB_ERR_LEN]) {
    char path[4096];
    if (emb_path_join(path, sizeof path, dir, "config.json", err)) return -1;
    char *txt;
    size_t len;
    if (emb_read_file(path, EMB_CONFIG_MAX_BYTES, &txt, &len, err)) return -1;
    int rc = emb_encoder_config_parse(txt, len, "config.json", out, err);
    free(txt);
    return rc;
}
