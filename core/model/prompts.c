#include "model/prompts.h"
#include "base/emb_json.h"
#include "base/file.h"
#include "base/utf8.h"
#include <stdlib.h>
#include <string.h>

void emb_prompts_free(emb_prompts *p) {
    for (int i = 0; i < p->n; i++) {
        free(p->name[i]);
        free(p->text[i]);
    }
    free(p->json);
    memset(p, 0, sizeof *p);
    p->default_index = -1;
}

const char *emb_prompts_find(const emb_prompts *p, const char *name) {
    for (int i = 0; name && i < p->n; i++)
        if (strcmp(p->name[i], name) == 0) return p->text[i];
    return NULL;
}

const char *emb_prompts_first(const emb_prompts *p, const char *const *names, int n) {
    for (int i = 0; i < n; i++) {
        const char *t = emb_prompts_find(p, names[i]);
        if (t) return t;
    }
    return NULL;
}

static const char *FILE_NAME = "config_sentence_transformers.json";

/* The "prompts" object: each a name and a string of valid UTF-8 without NUL. */
static int read_prompts(const cJSON *obj, emb_prompts *p, char err[EMB_ERR_LEN]) {
    if (!obj || cJSON_IsNull(obj)) return 0;
    if (!cJSON_IsObject(obj)) return emb_fail(err, "%s: key 'prompts' is not an object", FILE_NAME);
    for (const cJSON *it = obj->child; it; it = it->next) {
        if (p->n == EMB_PROMPTS_MAX) return emb_fail(err, "%s: more than %d prompts", FILE_NAME, EMB_PROMPTS_MAX);
        if (!cJSON_IsString(it)) return emb_fail(err, "%s: prompt '%.60s' is not a string", FILE_NAME, it->string);
        size_t len = strlen(it->valuestring);
        if (len > EMB_PROMPT_MAX_BYTES || !emb_utf8_valid(it->valuestring, len, NULL))
            return emb_fail(err, "%s: prompt '%.60s' is not UTF-8 text of at most %d bytes", FILE_NAME, it->string,
                            EMB_PROMPT_MAX_BYTES);
        p->name[p->n] = strdup(it->string);
        p->text[p->n] = strdup(it->valuestring);
        if (!p->name[p->n] || !p->text[p->n++]) return emb_fail(err, "out of memory");
    }
    if (p->n && !(p->json = cJSON_PrintUnformatted(obj))) return emb_fail(err, "out of memory");
    return 0;
}

static int read_default(const cJSON *d, emb_prompts *p, char err[EMB_ERR_LEN]) {
    if (!d || cJSON_IsNull(d)) return 0;
    if (!cJSON_IsString(d)) return emb_fail(err, "%s: key 'default_prompt_name' is not a string", FILE_NAME);
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->name[i], d->valuestring) == 0) p->default_index = i;
    if (p->default_index < 0)
        return emb_fail(err, "%s: default_prompt_name '%.60s' is not one of its prompts", FILE_NAME,
                        d->valuestring);
    return 0;
}

int emb_prompts_load(const char *dir, emb_prompts *p, char err[EMB_ERR_LEN]) {
    memset(p, 0, sizeof *p);
    p->default_index = -1;
    char path[4096];
    if (emb_path_join(path, sizeof path, dir, FILE_NAME, err)) return -1;
    if (!emb_path_exists(path)) return 0;
    cJSON *root;
    if (emb_json_read_file(path, EMB_CONFIG_MAX_BYTES, &root, err)) return -1;
    int rc = cJSON_IsObject(root) ? 0 : emb_fail(err, "%s: not a JSON object", FILE_NAME);
    if (rc == 0) rc = read_prompts(cJSON_GetObjectItemCaseSensitive(root, "prompts"), p, err);
    if (rc == 0) rc = read_default(cJSON_GetObjectItemCaseSensitive(root, "default_prompt_name"), p, err);
    cJSON_Delete(root);
    if (rc) emb_prompts_free(p);
    return rc;
}
