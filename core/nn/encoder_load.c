/* Loading an encoder: config.json, the safetensors files (one, or the shards of an index), then
 * the architecture's own loader (nn/arch/) for every tensor under the checkpoint's prefix, and
 * the fingerprint of what is used: the config's numbers here, the tensors as they are read. */
#include "nn/encoder_internal.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "nn/arch/arch.h"
#include "nn/relpos.h"
#include "nn/encoder_gguf.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for one more file in e->files; -1 when out of memory. */
static int grow_files(emb_encoder *e, char err[EMB_ERR_LEN]) {
    emb_safetensors **n = realloc(e->files, (size_t)(e->nfiles + 1) * sizeof *n);
    if (n) e->files = n;
    unsigned char *u = n ? realloc(e->in_place, (size_t)(e->nfiles + 1)) : NULL;
    if (!u) return emb_fail(err, "out of memory");
    e->in_place = u;
    return 0;
}

static int add_file(emb_encoder *e, const char *path, int use_mmap, char err[EMB_ERR_LEN]) {
    if (grow_files(e, err) || emb_safetensors_open(path, use_mmap, &e->files[e->nfiles], err)) return -1;
    e->in_place[e->nfiles++] = 0;
    return 0;
}

/* A GGUF file: its config and tensors (nn/encoder_gguf.h) as the one weight file. */
static int open_gguf(emb_encoder *e, const char *path, int use_mmap, char err[EMB_ERR_LEN]) {
    emb_safetensors *sf;
    if (emb_encoder_gguf_open(path, use_mmap, &e->cfg, &sf, err)) return -1;
    if (grow_files(e, err)) {
        emb_safetensors_close(sf);
        return -1;
    }
    snprintf(e->src_label, sizeof e->src_label, "%s", sf->label);
    e->files[e->nfiles] = sf;
    e->in_place[e->nfiles++] = 0;
    return 0;
}

/* Closes the files none of whose tensors is used in place (all converted or unused), so that
 * only what the model needs stays mapped or in memory. */
static void drop_unused_files(emb_encoder *e) {
    int kept = 0;
    for (int i = 0; i < e->nfiles; i++) {
        if (e->in_place[i] || emb_encoder_q8_pending(e, e->files[i])) e->files[kept++] = e->files[i];
        else emb_safetensors_close(e->files[i]);
    }
    e->nfiles = kept;
}

/* The shards that model.safetensors.index.json's weight_map (in root) names, each opened once. */
static int open_shards(emb_encoder *e, const char *dir, const cJSON *root, int use_mmap, char err[EMB_ERR_LEN]) {
    const char *idx = "model.safetensors.index.json";
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(wm)) return emb_fail(err, "%s: no \"weight_map\" object", idx);
    for (const cJSON *it = wm->child; it; it = it->next) {
        if (!cJSON_IsString(it))
            return emb_fail(err, "%s: weight_map entry '%.100s' is not a file name", idx, it->string);
        const char *f = it->valuestring;
        size_t fl = strlen(f);
        if (!fl || strchr(f, '/') || strchr(f, '\\') || f[0] == '.' || fl < 12 ||
            strcmp(f + fl - 12, ".safetensors") != 0)
            return emb_fail(err, "%s: shard name '%.100s' is not a plain *.safetensors file name", idx, f);
        int seen = 0;
        for (int i = 0; i < e->nfiles && !seen; i++) seen = strcmp(e->files[i]->label, f) == 0;
        if (seen) continue;
        if (e->nfiles >= 4096) return emb_fail(err, "%s: too many shards", idx);
        char path[4096];
        if (emb_path_join(path, sizeof path, dir, f, err) || add_file(e, path, use_mmap, err)) return -1;
    }
    if (e->nfiles == 0) return emb_fail(err, "%s: weight_map is empty", idx);
    return 0;
}

static int open_weights(emb_encoder *e, const char *dir, int use_mmap, char err[EMB_ERR_LEN]) {
    char path[4096];
    if (emb_path_join(path, sizeof path, dir, "model.safetensors", err)) return -1;
    if (emb_path_exists(path)) {
        snprintf(e->src_label, sizeof e->src_label, "model.safetensors");
        return add_file(e, path, use_mmap, err);
    }
    if (emb_path_join(path, sizeof path, dir, "model.safetensors.index.json", err)) return -1;
    if (!emb_path_exists(path))
        return emb_fail(err,
                        "%s: no model.safetensors or model.safetensors.index.json (PyTorch .bin checkpoints are "
                        "not supported)",
                        dir);
    snprintf(e->src_label, sizeof e->src_label, "model.safetensors.index.json");
    cJSON *root;
    if (emb_json_read_file(path, 64u << 20, &root, err)) return -1;
    int rc = open_shards(e, dir, root, use_mmap, err);
    cJSON_Delete(root);
    return rc;
}

/* The prefix under which the word embeddings exist: "", or the one a task-head save of the
 * architecture puts before the model's own tensors ("bert."; its head tensors are then ignored). */
static int find_prefix(emb_encoder *e, const emb_arch_desc *d, char err[EMB_ERR_LEN]) {
    const char *word = d->word_tensor;
    const char *cands[2] = {"", d->head_prefix};
    for (int i = 0; i < 2; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s%s", cands[i], word);
        if (emb_arch_find(e, name, NULL)) {
            snprintf(e->prefix, sizeof e->prefix, "%s", cands[i]);
            e->info.tensor_prefix = cands[i]; /* a string literal: valid after free */
            return 0;
        }
    }
    return emb_fail(err, "%s: missing tensor '%s' (also looked for '%s%s')", e->src_label, word, cands[1], word);
}

/* The fingerprint starts with the config's numbers (BERT's and DistilBERT's as they always were,
 * so that their fingerprints stay what applications stored; the newer settings after them). */
static void hash_config(emb_encoder *e) {
    const emb_encoder_config *c = &e->cfg;
    int64_t nums[] = {c->arch,
                      c->dims.hidden,
                      c->dims.layers,
                      c->dims.heads,
                      c->dims.intermediate,
                      c->dims.max_positions,
                      c->dims.type_vocab,
                      c->dims.vocab_size,
                      c->sinusoidal,
                      c->act};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) emb_arch_hash_u64(e->hash, (uint64_t)nums[i]);
    double eps = c->ln_eps;
    uint64_t eb;
    memcpy(&eb, &eps, 8);
    emb_arch_hash_u64(e->hash, eb);
    if (c->arch == EMB_ARCH_BERT || c->arch == EMB_ARCH_DISTILBERT) return;
    int64_t more[] = {c->pad_token_id, c->pos_kind,  c->pos_offset,  c->gated,
                      c->pre_norm,     c->rope_dims, c->half_window, c->global_every};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) emb_arch_hash_u64(e->hash, (uint64_t)more[i]);
    double th[2] = {c->rope_theta, c->rope_theta_local};
    for (int i = 0; i < 2; i++) {
        memcpy(&eb, &th[i], 8);
        emb_arch_hash_u64(e->hash, eb);
    }
    /* only where a setting the older ones cannot say is used: the others' fingerprints stay */
    if (c->global_every < 0) XXH3_64bits_update(e->hash, c->local_layers, (size_t)(c->dims.layers + 7) / 8);
    if (c->rel_buckets) emb_arch_hash_u64(e->hash, (uint64_t)c->rel_buckets);
    if (!c->decoder) return;
    int64_t dec[] = {c->head_dim, c->kv_heads, c->causal, c->sandwich, c->qkv_bias, c->out_bias};
    for (size_t i = 0; i < sizeof dec / sizeof dec[0]; i++) emb_arch_hash_u64(e->hash, (uint64_t)dec[i]);
    float f[3] = {c->attn_scale, c->attn_softcap, c->embed_scale};
    XXH3_64bits_update(e->hash, f, sizeof f);
}

/* The zeros that stand for absent biases, and ALiBi's slopes. */
static int make_constants(emb_encoder *e, char err[EMB_ERR_LEN]) {
    const emb_encoder_config *c = &e->cfg;
    size_t n = 3 * (size_t)c->dims.hidden,
           qkv = (size_t)emb_encoder_config_q_width(c) + 2 * (size_t)emb_encoder_config_kv_width(c);
    if (2 * (size_t)c->dims.intermediate > n) n = 2 * (size_t)c->dims.intermediate;
    if (qkv > n) n = qkv; /* the biases of q, k and v of any width */
    float *z = calloc(n, sizeof(float));
    if (!z || emb_arch_own(e, z)) {
        free(z);
        return emb_fail(err, "out of memory");
    }
    e->zeros = z;
    if (c->pos_kind != EMB_POS_ALIBI) return 0;
    e->alibi_slopes = malloc((size_t)c->dims.heads * sizeof(float));
    if (!e->alibi_slopes || emb_arch_own(e, e->alibi_slopes)) {
        free(e->alibi_slopes);
        e->alibi_slopes = NULL;
        return emb_fail(err, "out of memory");
    }
    emb_relpos_alibi_slopes(c->dims.heads, e->alibi_slopes);
    return 0;
}

/* Everything into e, which the caller frees on failure. */
static int load(emb_encoder *e, const char *dir, int use_mmap, char err[EMB_ERR_LEN]) {
    e->first_dtype = -1;
    e->hash = XXH3_createState();
    if (!e->hash) return emb_fail(err, "out of memory");
    XXH3_64bits_reset(e->hash);
    if (emb_gguf_path(dir) ? open_gguf(e, dir, use_mmap, err)
                           : emb_encoder_config_load(dir, &e->cfg, err) || open_weights(e, dir, use_mmap, err))
        return -1;
    const emb_arch_desc *arch = emb_arch_of(e->cfg.arch);
    if (find_prefix(e, arch, err)) return -1;
    hash_config(e);
    if (make_constants(e, err) || arch->load_embeddings(e, err)) return -1;
    const emb_model_dims *d = &e->cfg.dims;
    e->L = calloc((size_t)d->layers, sizeof *e->L);
    if (!e->L) return emb_fail(err, "out of memory");
    for (int l = 0; l < d->layers; l++)
        if (arch->load_layer(e, l, err)) return -1;
    if (arch->load_head(e, err)) return -1;
    e->fingerprint = e->fingerprint_f32 = XXH3_64bits_digest(e->hash);
    XXH3_freeState(e->hash);
    e->hash = NULL;
    emb_encoder_info *in = &e->info;
    in->weight_type = e->mixed ? "mixed" : emb_dtype_name((emb_dtype)e->first_dtype);
    in->has_pooler = e->pool_w != NULL;
    in->n_files = e->nfiles;
    in->used_bytes = in->weight_bytes;
    e->f32_pending = 1; /* packed by emb_encoder_set_weights, once the weight type is known */
    return 0;
}

int emb_encoder_load(const char *dir, emb_encoder **out, char err[EMB_ERR_LEN]) {
    return emb_encoder_load_with(dir, 1, out, err);
}

int emb_encoder_load_open(const char *dir, int use_mmap, emb_encoder **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    emb_encoder *e = calloc(1, sizeof *e);
    if (!e) return emb_fail(err, "out of memory");
    if (load(e, dir, use_mmap, err)) {
        emb_encoder_free(e);
        return -1;
    }
    *out = e;
    return 0;
}

int emb_encoder_load_with(const char *dir, int use_mmap, emb_encoder **out, char err[EMB_ERR_LEN]) {
    if (emb_encoder_load_open(dir, use_mmap, out, err)) return -1;
    if (emb_encoder_set_weights(*out, EMB_WEIGHTS_F32, err) == 0) {
        emb_encoder_close_unused(*out); /* after set_weights: a GGUF file's Q8_0 tensors were read until then */
        return 0;
    }
    emb_encoder_free(*out);
    *out = NULL;
    return -1;
}

void emb_encoder_close_unused(emb_encoder *e) { drop_unused_files(e); }

const emb_safetensors_tensor *emb_encoder_file_tensor(const emb_encoder *e, const char *name, const char **file) {
    int fi = 0;
    const emb_safetensors_tensor *t = emb_arch_find(e, name, &fi);
    if (t && file) *file = e->files[fi]->label;
    return t;
}

void emb_encoder_free(emb_encoder *e) {
    if (!e) return;
    for (int i = 0; i < e->nowned; i++) free(e->owned[i]);
    free(e->owned);
    for (int i = 0; i < e->nfiles; i++) emb_safetensors_close(e->files[i]);
    free(e->files);
    emb_encoder_q8_free(e);
    free(e->in_place);
    emb_encoder_free_weights(e);
    free(e->L);
    if (e->hash) XXH3_freeState(e->hash);
    free(e);
}

const emb_encoder_info *emb_encoder_get_info(const emb_encoder *e) { return &e->info; }
const emb_encoder_config *emb_encoder_get_config(const emb_encoder *e) { return &e->cfg; }
uint64_t emb_encoder_fingerprint(const emb_encoder *e) { return e->fingerprint; }
