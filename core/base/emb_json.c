#include "base/emb_json.h"
#include "base/file.h"
#include <math.h>
#include <stdlib.h>

int emb_json_int(const cJSON *j, int64_t lo, int64_t hi, int64_t *out) {
    if (!cJSON_IsNumber(j)) return -1;
    double v = j->valuedouble;
    if (!(v >= (double)lo && v <= (double)hi) || floor(v) != v) return -1; /* NaN fails too */
    *out = (int64_t)v;
    return 0;
}

int emb_json_read_file(const char *path, size_t max_bytes, cJSON **root, char err[EMB_ERR_LEN]) {
    *root = NULL;
    char *txt;
    size_t len;
    if (emb_read_file(path, max_bytes, &txt, &len, err)) return -1;
    *root = cJSON_ParseWithLength(txt, len);
    free(txt);
    if (!*root) return emb_fail(err, "%s: not valid JSON", path);
    return 0;
}
