#include "nn/encoder_config.h"
#include "base/emb_json.h"
#include "base/file.h"
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* How an architecture's config.json names its sizes. */
typedef enum { NAMES_BERT, NAMES_DISTILBERT, NAMES_NOMIC, NAMES_MODERNBERT, N_NAMINGS } naming;

/* An integer key of config.json, by its name in each naming (NULL: not read): the int of
 * emb_encoder_config it fills, its range, and its value when absent (or null) if it may be. */
typedef struct {
    const char *name[N_NAMINGS];
    size_t offset;
    int lo, hi;
    int optional, dflt;
} int_key;

#define DIM(field) offsetof(emb_encoder_config, dims.field)
#define BIG (1 << 20)

/* In the order they are checked (the first bad one is the error). */
static const int_key INT_KEYS[] = {
    {{"hidden_size", "dim", "n_embd", "hidden_size"}, DIM(hidden), 1, 65536, 0, 0},
    {{"num_hidden_layers", "n_layers", "n_layer", "num_hidden_layers"}, DIM(layers), 1, 1024, 0, 0},
    {{"num_attention_heads", "n_heads", "n_head", "num_attention_heads"}, DIM(heads), 1, 4096, 0, 0},
    {{"intermediate_size", "hidden_dim", "n_inner", "intermediate_size"}, DIM(intermediate), 1, 1 << 18, 0, 0},
    {{"max_position_embeddings", "max_position_embeddings", "n_positions", "max_position_embeddings"},
     DIM(max_positions),
     1,
     BIG,
     0,
     0},
    {{"vocab_size", "vocab_size", "vocab_size", "vocab_size"}, DIM(vocab_size), 1, 1 << 24, 0, 0},
    {{"type_vocab_size", NULL, "type_vocab_size", NULL}, DIM(type_vocab), 1, BIG, 1, 2},
    {{"pad_token_id", "pad_token_id", "pad_token_id", "pad_token_id"},
     offsetof(emb_encoder_config, pad_token_id),
     0,
     1 << 24,
     1,
     0},
};

/* The integer keys of naming n into c. */
static int read_ints(const cJSON *root, const char *file, naming n, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    for (size_t i = 0; i < sizeof INT_KEYS / sizeof *INT_KEYS; i++) {
        const int_key *k = &INT_KEYS[i];
        const char *key = k->name[n];
        if (!key) continue;
        int *out = (int *)(void *)((char *)c + k->offset);
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
        int64_t v;
        if (!j || cJSON_IsNull(j)) {
            if (!k->optional) return emb_fail(err, "%s: missing key '%s'", file, key);
            *out = k->dflt;
        } else if (emb_json_int(j, k->lo, k->hi, &v) == 0) {
            *out = (int)v;
        } else if (cJSON_IsNumber(j) && j->valuedouble == floor(j->valuedouble)) {
            return emb_fail(err, "%s: key '%s' = %.15g is out of range [%d, %d]", file, key, j->valuedouble, k->lo,
                            k->hi);
        } else {
            return emb_fail(err, "%s: key '%s' is not an integer", file, key);
        }
    }
    return 0;
}

/* The string at key, or dflt when absent or null; -1 if it is something else. */
static int read_string(const cJSON *root, const char *key, const char *dflt, const char *file, const char **out,
                       char err[EMB_ERR_LEN]) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = dflt;
    if (!a || cJSON_IsNull(a)) return 0;
    if (!cJSON_IsString(a)) return emb_fail(err, "%s: key '%s' is not a string", file, key);
    *out = a->valuestring;
    return 0;
}

/* A boolean key (absent or null: dflt). */
static int read_bool(const cJSON *root, const char *key, int dflt, const char *file, int *out,
                     char err[EMB_ERR_LEN]) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = dflt;
    if (!b || cJSON_IsNull(b)) return 0;
    if (!cJSON_IsBool(b)) return emb_fail(err, "%s: key '%s' is not a boolean", file, key);
    *out = cJSON_IsTrue(b);
    return 0;
}

/* A number key in [lo, hi] (absent or null: dflt). */
static int read_number(const cJSON *root, const char *key, double dflt, double lo, double hi, const char *file,
                       double *out, char err[EMB_ERR_LEN]) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = dflt;
    if (!n || cJSON_IsNull(n)) return 0;
    if (!cJSON_IsNumber(n) || !(n->valuedouble >= lo && n->valuedouble <= hi))
        return emb_fail(err, "%s: key '%s' is not a number from %g to %g", file, key, lo, hi);
    *out = n->valuedouble;
    return 0;
}

/* The LayerNorm epsilon at key (absent or null: dflt): at least float's smallest normal (a
 * smaller one would round to 0 and divide by it), at most 1. */
static int read_eps(const cJSON *root, const char *key, double dflt, const char *file, emb_encoder_config *c,
                    char err[EMB_ERR_LEN]) {
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, key);
    c->ln_eps = (float)dflt;
    if (!eps || cJSON_IsNull(eps)) return 0;
    if (!cJSON_IsNumber(eps) || !(eps->valuedouble >= FLT_MIN) || eps->valuedouble > 1)
        return emb_fail(err, "%s: key '%s' is not a positive number (from 1.2e-38 to 1)", file, key);
    c->ln_eps = (float)eps->valuedouble;
    return 0;
}

/* The activation named by key (absent: "gelu"), which must be gelu. */
static int read_activation(const cJSON *root, const char *key, const char *file, char err[EMB_ERR_LEN]) {
    const char *act;
    if (read_string(root, key, "gelu", file, &act, err)) return -1;
    if (strcmp(act, "gelu") != 0)
        return emb_fail(err, "%s: activation '%.40s' is not supported (only \"gelu\", exact erf)", file, act);
    return 0;
}

/* A key that, when present with other than its harmless value, asks for something not built. */
static int refuse_if(int bad, const char *file, const char *what, char err[EMB_ERR_LEN]) {
    return bad ? emb_fail(err, "%s: %s is not supported", file, what) : 0;
}

/* Every projection and norm of BERT and RoBERTa has a bias. */
static void all_biases(emb_encoder_config *c) {
    c->qkv_bias = c->out_bias = c->ffn_in_bias = c->ffn_out_bias = c->norm_bias = 1;
}

/* JinaBERT v2's feed-forward: feed_forward_type "geglu" / "reglu" (gated_layers, wo, layernorm)
 * or "original" (BERT's intermediate / output). */
static int read_jina(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    c->arch = EMB_ARCH_JINA_BERT;
    c->arch_name = "jina_bert";
    c->pos_kind = EMB_POS_ALIBI;
    const char *ff;
    if (read_string(root, "feed_forward_type", "original", file, &ff, err)) return -1;
    if (strcmp(ff, "original") == 0) return read_activation(root, "hidden_act", file, err);
    c->gated = 1;
    c->ffn_in_bias = 0; /* gated_layers has no bias */
    if (strcmp(ff, "geglu") == 0) c->act = EMB_ACT_GELU;
    else if (strcmp(ff, "reglu") == 0) c->act = EMB_ACT_RELU;
    else
        return emb_fail(err, "%s: JinaBERT feed_forward_type '%.40s' is not supported (geglu, reglu, original)",
                        file, ff);
    return 0;
}

/* bert (and JinaBERT v2, a bert with ALiBi), roberta and xlm-roberta. */
static int read_bert(const cJSON *root, const char *file, const char *type, emb_encoder_config *c,
                     char err[EMB_ERR_LEN]) {
    int roberta = strcmp(type, "bert") != 0;
    c->arch = roberta ? EMB_ARCH_ROBERTA : EMB_ARCH_BERT;
    c->arch_name = roberta ? (strcmp(type, "roberta") == 0 ? "roberta" : "xlm-roberta") : "bert";
    all_biases(c);
    if (read_ints(root, file, NAMES_BERT, c, err) || read_eps(root, "layer_norm_eps", 1e-12, file, c, err))
        return -1;
    const char *pe;
    if (read_string(root, "position_embedding_type", "absolute", file, &pe, err)) return -1;
    if (!roberta && strcmp(pe, "alibi") == 0) return read_jina(root, file, c, err);
    if (strcmp(pe, "absolute") != 0)
        return emb_fail(err, "%s: position_embedding_type '%.40s' is not supported (\"absolute\"%s)", file, pe,
                        roberta ? "" : ", or \"alibi\" for JinaBERT v2");
    if (roberta) {
        /* position ids are padding_idx + 1 + i (transformers' create_position_ids_from_input_ids) */
        const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
        if (!pad || cJSON_IsNull(pad)) c->pad_token_id = 1; /* RobertaConfig's default */
        c->pos_offset = c->pad_token_id + 1;
        if (c->pos_offset >= c->dims.max_positions)
            return emb_fail(err, "%s: pad_token_id %d leaves no position rows (max_position_embeddings %d)", file,
                            c->pad_token_id, c->dims.max_positions);
    }
    return read_activation(root, "hidden_act", file, err);
}

static int read_distilbert(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    c->arch = EMB_ARCH_DISTILBERT;
    c->arch_name = "distilbert";
    all_biases(c);
    if (read_ints(root, file, NAMES_DISTILBERT, c, err)) return -1; /* no token types: type_vocab stays 0 */
    c->ln_eps = 1e-12f; /* DistilBERT's LayerNorms are built with eps=1e-12 */
    if (read_bool(root, "sinusoidal_pos_embds", 0, file, &c->sinusoidal, err)) return -1;
    if (c->sinusoidal) c->pos_kind = EMB_POS_SINUSOIDAL;
    return read_activation(root, "activation", file, err);
}

/* The rotary settings shared by NomicBERT and ModernBERT: the rotated dimensions, which must be
 * an even number of at least 2. */
static int check_rope_dims(const char *file, emb_encoder_config *c, double fraction, char err[EMB_ERR_LEN]) {
    int dh = c->dims.hidden / c->dims.heads;
    c->pos_kind = EMB_POS_ROTARY;
    c->rope_dims = (int)(dh * fraction);
    if (c->rope_dims < 2 || c->rope_dims % 2)
        return emb_fail(err,
                        "%s: %d rotary dimensions per head (head size %d x rotary_emb_fraction %g): must be even "
                        "and at least 2",
                        file, c->rope_dims, dh, fraction);
    return 0;
}

/* nomic_bert (contrastors' NomicBertModel): post-norm BERT with rotary positions, fused Wqkv and
 * a gated MLP fc2(fc11(x) * act(fc12(x))). */
static int read_nomic(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    c->arch = EMB_ARCH_NOMIC_BERT;
    c->arch_name = "nomic_bert";
    c->norm_bias = 1;
    if (read_ints(root, file, NAMES_NOMIC, c, err) || read_eps(root, "layer_norm_epsilon", 1e-5, file, c, err))
        return -1;
    const char *act;
    if (read_string(root, "activation_function", "swiglu", file, &act, err)) return -1;
    if (strcmp(act, "swiglu") == 0) c->act = EMB_ACT_SILU;
    else if (strcmp(act, "geglu") == 0) c->act = EMB_ACT_GELU;
    else
        return emb_fail(err, "%s: nomic_bert activation_function '%.40s' is not supported (swiglu, geglu)", file,
                        act);
    c->gated = 1;
    int interleaved, prenorm, parallel, rms, causal;
    if (read_bool(root, "qkv_proj_bias", 1, file, &c->qkv_bias, err) ||
        read_bool(root, "mlp_fc1_bias", 1, file, &c->ffn_in_bias, err) ||
        read_bool(root, "mlp_fc2_bias", 1, file, &c->ffn_out_bias, err) ||
        read_bool(root, "rotary_emb_interleaved", 0, file, &interleaved, err) ||
        read_bool(root, "prenorm", 0, file, &prenorm, err) ||
        read_bool(root, "parallel_block", 0, file, &parallel, err) ||
        read_bool(root, "use_rms_norm", 0, file, &rms, err) || read_bool(root, "causal", 0, file, &causal, err))
        return -1;
    c->out_bias = c->qkv_bias; /* out_proj is built with qkv_proj_bias */
    const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(root, "rotary_scaling_factor");
    const cJSON *scale_base = cJSON_GetObjectItemCaseSensitive(root, "rotary_emb_scale_base");
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(root, "moe_every_n_layers");
    if (refuse_if(interleaved, file, "nomic_bert rotary_emb_interleaved", err) ||
        refuse_if(prenorm, file, "nomic_bert prenorm", err) ||
        refuse_if(parallel, file, "nomic_bert parallel_block", err) ||
        refuse_if(rms, file, "nomic_bert use_rms_norm", err) ||
        refuse_if(causal, file, "nomic_bert causal attention", err) ||
        refuse_if(scaling && !cJSON_IsNull(scaling), file, "nomic_bert rotary_scaling_factor (dynamic NTK)",
                  err) ||
        refuse_if(scale_base && !cJSON_IsNull(scale_base), file, "nomic_bert rotary_emb_scale_base (xPos)", err) ||
        refuse_if(moe && !cJSON_IsNull(moe) && !(cJSON_IsNumber(moe) && moe->valuedouble == 0), file,
                  "nomic_bert mixture of experts (moe_every_n_layers)", err))
        return -1;
    double fraction;
    if (read_number(root, "rotary_emb_base", 10000, 1, 1e12, file, &c->rope_theta, err) ||
        read_number(root, "rotary_emb_fraction", 0, 0, 1, file, &fraction, err))
        return -1;
    if (fraction == 0)
        return emb_fail(err, "%s: nomic_bert with absolute positions (rotary_emb_fraction 0) is not supported",
                        file);
    c->rope_theta_local = c->rope_theta;
    return check_rope_dims(file, c, fraction, err);
}

/* modernbert (transformers' ModernBertModel): pre-norm, rotary with a global and a local base,
 * sliding-window attention on all but every global_attn_every_n_layers-th layer, GeGLU. */
static int read_modernbert(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    c->arch = EMB_ARCH_MODERNBERT;
    c->arch_name = "modernbert";
    c->gated = 1;
    c->pre_norm = 1;
    if (read_ints(root, file, NAMES_MODERNBERT, c, err) || read_eps(root, "norm_eps", 1e-5, file, c, err) ||
        read_activation(root, "hidden_activation", file, err))
        return -1;
    int attn_bias, mlp_bias;
    if (read_bool(root, "norm_bias", 0, file, &c->norm_bias, err) ||
        read_bool(root, "attention_bias", 0, file, &attn_bias, err) ||
        read_bool(root, "mlp_bias", 0, file, &mlp_bias, err))
        return -1;
    c->qkv_bias = c->out_bias = attn_bias;
    c->ffn_in_bias = c->ffn_out_bias = mlp_bias;
    double window, every;
    if (read_number(root, "global_rope_theta", 160000, 1, 1e12, file, &c->rope_theta, err) ||
        read_number(root, "local_rope_theta", c->rope_theta, 1, 1e12, file, &c->rope_theta_local, err) ||
        read_number(root, "local_attention", 128, 0, BIG, file, &window, err) ||
        read_number(root, "global_attn_every_n_layers", 3, 1, 1024, file, &every, err))
        return -1;
    if (window != floor(window) || every != floor(every))
        return emb_fail(err, "%s: local_attention and global_attn_every_n_layers must be integers", file);
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (refuse_if(lt && !cJSON_IsNull(lt), file, "modernbert layer_types (a later config layout)", err)) return -1;
    c->half_window = (int)window / 2;
    c->global_every = (int)every;
    return check_rope_dims(file, c, 1.0, err);
}

/* Architectures asked for by name that are not built, each with what it would need. */
static int refuse_known(const char *type, const char *file, char err[EMB_ERR_LEN]) {
    static const char *const KNOWN[][2] = {
        {"deberta", "DeBERTa (disentangled attention over relative positions)"},
        {"deberta-v2", "DeBERTa-v2/v3 (disentangled attention over relative positions)"},
        {"mpnet", "MPNet (relative position buckets in attention)"},
        {"t5", "T5 (relative position buckets, encoder-decoder)"},
        {"mt5", "mT5 (relative position buckets, encoder-decoder)"},
        {"umt5", "UMT5 (relative position buckets, encoder-decoder)"},
    };
    for (size_t i = 0; i < sizeof KNOWN / sizeof *KNOWN; i++)
        if (strcmp(type, KNOWN[i][0]) == 0)
            return emb_fail(err,
                            "%s: model_type '%s': %s is not supported (supported: bert, distilbert, roberta, "
                            "xlm-roberta, nomic_bert, modernbert, JinaBERT v2)",
                            file, type, KNOWN[i][1]);
    return emb_fail(err,
                    "%s: model_type '%.40s' is not supported (supported: bert, distilbert, roberta, xlm-roberta, "
                    "nomic_bert, modernbert, JinaBERT v2)",
                    file, type);
}

static int read_config(const cJSON *root, const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(root)) return emb_fail(err, "%s: not a JSON object", file);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *type = NULL;
    if (cJSON_IsString(mt)) {
        type = mt->valuestring;
    } else if (mt && !cJSON_IsNull(mt)) {
        return emb_fail(err, "%s: key 'model_type' is not a string", file);
    } else { /* old configs without model_type: infer from architectures[0] */
        const cJSON *ar = cJSON_GetObjectItemCaseSensitive(root, "architectures");
        const cJSON *a0 = cJSON_IsArray(ar) ? ar->child : NULL;
        if (cJSON_IsString(a0) && strncmp(a0->valuestring, "DistilBert", 10) == 0) type = "distilbert";
        else if (cJSON_IsString(a0) && strncmp(a0->valuestring, "Bert", 4) == 0) type = "bert";
        else return emb_fail(err, "%s: missing key 'model_type'", file);
    }
    int rc;
    if (strcmp(type, "bert") == 0 || strcmp(type, "roberta") == 0 || strcmp(type, "xlm-roberta") == 0)
        rc = read_bert(root, file, type, c, err);
    else if (strcmp(type, "distilbert") == 0) rc = read_distilbert(root, file, c, err);
    else if (strcmp(type, "nomic_bert") == 0) rc = read_nomic(root, file, c, err);
    else if (strcmp(type, "modernbert") == 0) rc = read_modernbert(root, file, c, err);
    else return refuse_known(type, file, err);
    if (rc) return rc;
    if (c->dims.hidden % c->dims.heads != 0)
        return emb_fail(err, "%s: hidden size %d is not a multiple of the number of attention heads %d", file,
                        c->dims.hidden, c->dims.heads);
    return 0;
}

int emb_encoder_config_parse(const char *json, size_t len, const char *file, emb_encoder_config *out,
                             char err[EMB_ERR_LEN]) {
    emb_encoder_config c;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    c.act = EMB_ACT_GELU;
    cJSON *root = cJSON_ParseWithLength(json, len);
    int rc = read_config(root, file, &c, err);
    cJSON_Delete(root);
    if (rc == 0) *out = c;
    return rc;
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

const char *emb_pos_kind_name(emb_pos_kind k) {
    static const char *const NAMES[] = {"learned", "sinusoidal", "rotary", "alibi"};
    return NAMES[k];
}

int emb_encoder_config_layer_is_local(const emb_encoder_config *c, int l) {
    return c->global_every > 0 && l % c->global_every != 0;
}

size_t emb_encoder_config_linear_weights(const emb_encoder_config *c) {
    size_t H = (size_t)c->dims.hidden, FF = (size_t)c->dims.intermediate;
    return 4 * H * H + (size_t)(c->gated ? 3 : 2) * H * FF;
}
