#include "model/dense.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "model/tensor_copy.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* activation_function as sentence-transformers writes it (a torch class path), absent: Tanh. */
static int read_activation(const cJSON *a, const char *label, emb_dense_act *out, char err[EMB_ERR_LEN]) {
    static const struct {
        const char *name;
        emb_dense_act act;
    } ACTS[] = {{"torch.nn.modules.linear.Identity", EMB_DENSE_IDENTITY},
                {"torch.nn.modules.activation.Tanh", EMB_DENSE_TANH},
                {"torch.nn.modules.activation.ReLU", EMB_DENSE_RELU},
                {"torch.nn.modules.activation.Sigmoid", EMB_DENSE_SIGMOID},
                {"torch.nn.modules.activation.GELU", EMB_DENSE_GELU}};
    *out = EMB_DENSE_TANH;
    if (!a || cJSON_IsNull(a)) return 0;
    if (!cJSON_IsString(a)) return emb_fail(err, "%.100s: key 'activation_function' is not a string", label);
    for (size_t i = 0; i < sizeof ACTS / sizeof *ACTS; i++)
        if (strcmp(a->valuestring, ACTS[i].name) == 0) {
            *out = ACTS[i].act;
            return 0;
        }
    return emb_fail(err,
                    "%.100s: activation_function '%.80s' is not supported (Identity, Tanh, ReLU, Sigmoid, GELU)",
                    label, a->valuestring);
}

/* An optional key that must equal "sentence_embedding" (a Dense over token vectors is not built). */
static int check_io_name(const cJSON *cfg, const char *key, const char *label, char err[EMB_ERR_LEN]) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!j || cJSON_IsNull(j) || (cJSON_IsString(j) && strcmp(j->valuestring, "sentence_embedding") == 0))
        return 0;
    return emb_fail(err, "%.100s: %s other than \"sentence_embedding\" is not supported", label, key);
}

static int read_config(const cJSON *cfg, const char *label, int in, emb_dense *d, int *bias,
                       char err[EMB_ERR_LEN]) {
    if (!cJSON_IsObject(cfg)) return emb_fail(err, "%.100s: not a JSON object", label);
    int64_t fi, fo;
    if (emb_json_int(cJSON_GetObjectItemCaseSensitive(cfg, "in_features"), 1, 1 << 20, &fi) ||
        emb_json_int(cJSON_GetObjectItemCaseSensitive(cfg, "out_features"), 1, 1 << 20, &fo))
        return emb_fail(err, "%.100s: in_features and out_features must be integers from 1 to 1048576", label);
    if (fi != in)
        return emb_fail(err, "%.100s: in_features %lld, but the vector before it has %d dimensions", label,
                        (long long)fi, in);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(cfg, "bias");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(cfg, "use_residual");
    if ((b && !cJSON_IsBool(b) && !cJSON_IsNull(b)) || (r && !cJSON_IsBool(r) && !cJSON_IsNull(r)))
        return emb_fail(err, "%.100s: keys 'bias' and 'use_residual' must be booleans", label);
    d->in = (int)fi;
    d->out = (int)fo;
    *bias = !cJSON_IsFalse(b);
    d->use_residual = cJSON_IsTrue(r);
    return check_io_name(cfg, "module_input_name", label, err) ||
           check_io_name(cfg, "module_output_name", label, err) ||
           read_activation(cJSON_GetObjectItemCaseSensitive(cfg, "activation_function"), label, &d->act, err);
}

static int read_weights(const char *sub, const char *path, emb_dense *d, int bias, char err[EMB_ERR_LEN]) {
    char file[4096];
    if (emb_path_join(file, sizeof file, sub, "model.safetensors", err)) return -1;
    if (!emb_path_exists(file))
        return emb_fail(err, "%.100s: no model.safetensors (pytorch_model.bin is not read: convert it)", path);
    emb_safetensors *sf;
    if (emb_safetensors_open(file, 0, &sf, err)) return -1;
    int rc = emb_tensor_copy_f32(sf, "linear.weight", d->out, d->in, 1 << 20, 0, &d->w, NULL, NULL, err);
    if (rc == 0 && bias)
        rc = emb_tensor_copy_f32(sf, "linear.bias", d->out, -1, 1 << 20, 0, &d->b, NULL, NULL, err);
    if (rc == 0 && d->use_residual && d->in != d->out)
        rc = emb_tensor_copy_f32(sf, "residual.weight", d->out, d->in, 1 << 20, 0, &d->residual, NULL, NULL, err);
    emb_safetensors_close(sf);
    return rc;
}

int emb_dense_load(const char *dir, const char *path, int in, emb_dense *d, char err[EMB_ERR_LEN]) {
    memset(d, 0, sizeof *d);
    char sub[4096], file[4096], label[160];
    snprintf(label, sizeof label, "%.100s/config.json", path);
    if (emb_path_join(sub, sizeof sub, dir, path, err) ||
        emb_path_join(file, sizeof file, sub, "config.json", err))
        return -1;
    cJSON *cfg;
    if (!emb_path_exists(file))
        return emb_fail(err, "%.100s: missing (modules.json lists a Dense module at '%.60s')", label, path);
    if (emb_json_read_file(file, EMB_CONFIG_MAX_BYTES, &cfg, err)) return -1;
    int bias = 1;
    int rc = read_config(cfg, label, in, d, &bias, err);
    cJSON_Delete(cfg);
    if (rc == 0) rc = read_weights(sub, path, d, bias, err);
    if (rc) emb_dense_free(d);
    return rc;
}

void emb_dense_free(emb_dense *d) {
    free(d->w);
    free(d->b);
    free(d->residual);
    memset(d, 0, sizeof *d);
}

static double activate(emb_dense_act a, double v) {
    switch (a) {
    case EMB_DENSE_TANH: return tanh(v);
    case EMB_DENSE_RELU: return v > 0 ? v : 0;
    case EMB_DENSE_SIGMOID: return 1 / (1 + exp(-v));
    case EMB_DENSE_GELU: return 0.5 * v * erfc(-v / sqrt(2.0));
    default: return v;
    }
}

void emb_dense_apply(const emb_dense *d, const float *x, float *y) {
    for (int o = 0; o < d->out; o++) {
        const float *w = d->w + (size_t)o * (size_t)d->in;
        double s = d->b ? d->b[o] : 0;
        for (int i = 0; i < d->in; i++) s += (double)w[i] * x[i];
        double v = activate(d->act, s);
        if (d->use_residual) {
            if (!d->residual) v += x[o];
            else {
                const float *r = d->residual + (size_t)o * (size_t)d->in;
                double t = 0;
                for (int i = 0; i < d->in; i++) t += (double)r[i] * x[i];
                v += t;
            }
        }
        y[o] = (float)v;
    }
}

uint64_t emb_dense_fingerprint(const emb_dense *d) {
    XXH3_state_t *h = XXH3_createState();
    if (!h) return 0;
    XXH3_64bits_reset(h);
    int32_t head[5] = {d->in, d->out, (int32_t)d->act, d->use_residual, d->b != NULL};
    XXH3_64bits_update(h, head, sizeof head);
    size_t n = (size_t)d->in * (size_t)d->out;
    XXH3_64bits_update(h, d->w, n * sizeof(float));
    if (d->b) XXH3_64bits_update(h, d->b, (size_t)d->out * sizeof(float));
    if (d->residual) XXH3_64bits_update(h, d->residual, n * sizeof(float));
    uint64_t v = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return v;
}
