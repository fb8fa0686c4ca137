/* What the architectures' config.json readers share (arch.h): the integer sizes under each
 * file's own names, typed keys with their ranges, and the checks every reader makes the same way. */
#include "nn/arch/arch.h"
#include "base/emb_json.h"
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* An integer size of config.json: the int of emb_encoder_config it fills, its range, and its
 * value when absent (or null) if it may be. */
typedef struct {
    size_t offset;
    int lo, hi;
    int optional, dflt;
} int_key;

#define DIM(field) offsetof(emb_encoder_config, dims.field)
#define BIG (1 << 20)

/* In the order they are checked (the first bad one is the error), as EMB_ARCH_KEY_* number them. */
static const int_key INT_KEYS[EMB_ARCH_N_KEYS] = {
    {DIM(hidden), 1, 65536, 0, 0},      {DIM(layers), 1, EMB_ENCODER_MAX_LAYERS, 0, 0},
    {DIM(heads), 1, 4096, 0, 0},        {DIM(intermediate), 1, 1 << 18, 0, 0},
    {DIM(max_positions), 1, BIG, 0, 0}, {DIM(vocab_size), 1, 1 << 24, 0, 0},
    {DIM(type_vocab), 1, BIG, 1, 2},    {offsetof(emb_encoder_config, pad_token_id), 0, 1 << 24, 1, 0},
};

int emb_arch_read_ints(const cJSON *root, const char *file, const char *const names[EMB_ARCH_N_KEYS],
                       emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    for (int i = 0; i < EMB_ARCH_N_KEYS; i++) {
        const int_key *k = &INT_KEYS[i];
        const char *key = names[i];
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

int emb_arch_read_string(const cJSON *root, const char *key, const char *dflt, const char *file, const char **out,
                         char err[EMB_ERR_LEN]) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = dflt;
    if (!a || cJSON_IsNull(a)) return 0;
    if (!cJSON_IsString(a)) return emb_fail(err, "%s: key '%s' is not a string", file, key);
    *out = a->valuestring;
    return 0;
}

int emb_arch_read_bool(const cJSON *root, const char *key, int dflt, const char *file, int *out,
                       char err[EMB_ERR_LEN]) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = dflt;
    if (!b || cJSON_IsNull(b)) return 0;
    if (!cJSON_IsBool(b)) return emb_fail(err, "%s: key '%s' is not a boolean", file, key);
    *out = cJSON_IsTrue(b);
    return 0;
}

int emb_arch_read_number(const cJSON *root, const char *key, double dflt, double lo, double hi, const char *file,
                         double *out, char err[EMB_ERR_LEN]) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = dflt;
    if (!n || cJSON_IsNull(n)) return 0;
    if (!cJSON_IsNumber(n) || !(n->valuedouble >= lo && n->valuedouble <= hi))
        return emb_fail(err, "%s: key '%s' is not a number from %g to %g", file, key, lo, hi);
    *out = n->valuedouble;
    return 0;
}

/* At least float's smallest normal (a smaller one would round to 0 and divide by it), at most 1. */
int emb_arch_read_eps(const cJSON *root, const char *key, double dflt, const char *file, emb_encoder_config *c,
                      char err[EMB_ERR_LEN]) {
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, key);
    c->ln_eps = (float)dflt;
    if (!eps || cJSON_IsNull(eps)) return 0;
    if (!cJSON_IsNumber(eps) || !(eps->valuedouble >= FLT_MIN) || eps->valuedouble > 1)
        return emb_fail(err, "%s: key '%s' is not a positive number (from 1.2e-38 to 1)", file, key);
    c->ln_eps = (float)eps->valuedouble;
    return 0;
}

int emb_arch_read_activation(const cJSON *root, const char *key, const char *file, char err[EMB_ERR_LEN]) {
    const char *act;
    if (emb_arch_read_string(root, key, "gelu", file, &act, err)) return -1;
    if (strcmp(act, "gelu") != 0)
        return emb_fail(err, "%s: activation '%.40s' is not supported (only \"gelu\", exact erf)", file, act);
    return 0;
}

int emb_arch_refuse_if(int bad, const char *file, const char *what, char err[EMB_ERR_LEN]) {
    return bad ? emb_fail(err, "%s: %s is not supported", file, what) : 0;
}

void emb_arch_all_biases(emb_encoder_config *c) {
    c->qkv_bias = c->out_bias = c->ffn_in_bias = c->ffn_out_bias = c->norm_bias = 1;
}

int emb_arch_rope_dims(const char *file, emb_encoder_config *c, double fraction, char err[EMB_ERR_LEN]) {
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

int emb_arch_position_offset(const char *file, emb_encoder_config *c, char err[EMB_ERR_LEN]) {
    c->pos_offset = c->pad_token_id + 1;
    if (c->pos_offset >= c->dims.max_positions)
        return emb_fail(err, "%s: pad_token_id %d leaves no position rows (max_position_embeddings %d)", file,
                        c->pad_token_id, c->dims.max_positions);
    return 0;
}

/* One entry of rope_parameters (where: its name in messages): rope_type "default" only, and its
 * rope_theta (absent: *theta as it was). */
int emb_arch_read_rope_entry(const cJSON *o, const char *where, double *theta, char err[EMB_ERR_LEN]) {
    if (!o || cJSON_IsNull(o)) return 0;
    if (!cJSON_IsObject(o)) return emb_fail(err, "%s: not an object", where);
    const char *type;
    double partial;
    if (emb_arch_read_string(o, "rope_type", "default", where, &type, err) ||
        emb_arch_read_number(o, "rope_theta", *theta, 1, 1e12, where, theta, err) ||
        emb_arch_read_number(o, "partial_rotary_factor", 1, 0, 1, where, &partial, err))
        return -1;
    if (strcmp(type, "default") != 0)
        return emb_fail(err, "%s: rope_type '%.40s' is not supported (only \"default\")", where, type);
    return emb_arch_refuse_if(partial != 1, where, "partial_rotary_factor other than 1", err);
}

int emb_arch_read_int(const cJSON *root, const char *key, int dflt, int lo, int hi, const char *file, int *out,
                      char err[EMB_ERR_LEN]) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    int64_t v;
    *out = dflt;
    if (!j || cJSON_IsNull(j)) return 0;
    if (emb_json_int(j, lo, hi, &v))
        return emb_fail(err, "%s: key '%s': not an integer from %d to %d", file, key, lo, hi);
    *out = (int)v;
    return 0;
}
