#include "nn/safetensors.h"
#include "base/emb_json.h"
#include "base/file.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader assumes a little-endian host"
#endif

/* The last eight are GGUF's block types: named, no size per value, never read from a header. */
static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [EMB_DT_BOOL] = {"BOOL", 1},       [EMB_DT_U8] = {"U8", 1},           [EMB_DT_I8] = {"I8", 1},
    [EMB_DT_F8_E5M2] = {"F8_E5M2", 1}, [EMB_DT_F8_E4M3] = {"F8_E4M3", 1}, [EMB_DT_I16] = {"I16", 2},
    [EMB_DT_U16] = {"U16", 2},         [EMB_DT_F16] = {"F16", 2},         [EMB_DT_BF16] = {"BF16", 2},
    [EMB_DT_I32] = {"I32", 4},         [EMB_DT_U32] = {"U32", 4},         [EMB_DT_F32] = {"F32", 4},
    [EMB_DT_F64] = {"F64", 8},         [EMB_DT_I64] = {"I64", 8},         [EMB_DT_U64] = {"U64", 8},
    [EMB_DT_Q4_0] = {"Q4_0", 0},       [EMB_DT_Q4_1] = {"Q4_1", 0},       [EMB_DT_Q5_0] = {"Q5_0", 0},
    [EMB_DT_Q5_1] = {"Q5_1", 0},       [EMB_DT_Q8_0] = {"Q8_0", 0},       [EMB_DT_Q4_K] = {"Q4_K", 0},
    [EMB_DT_Q5_K] = {"Q5_K", 0},       [EMB_DT_Q6_K] = {"Q6_K", 0},
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

const char *emb_dtype_name(emb_dtype d) { return (int)d >= 0 && (int)d < N_DTYPES ? dtypes[d].name : "?"; }
size_t emb_dtype_size(emb_dtype d) { return (int)d >= 0 && (int)d < N_DTYPES ? dtypes[d].size : 0; }

/* A JSON number that is a non-negative integer exactly representable in a double. */
static int get_u64(const cJSON *j, uint64_t *out) {
    int64_t v;
    if (emb_json_int(j, 0, INT64_C(1) << 53, &v)) return -1;
    *out = (uint64_t)v;
    return 0;
}

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp(((const emb_safetensors_tensor *)a)->name, ((const emb_safetensors_tensor *)b)->name);
}
static int cmp_tensor_begin(const void *a, const void *b) {
    const emb_safetensors_tensor *x = *(const emb_safetensors_tensor *const *)a,
                                 *y = *(const emb_safetensors_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

void emb_safetensors_header_free(emb_safetensors_header *h) {
    if (!h) return;
    for (int i = 0; i < h->n; i++) free(h->tensors[i].name);
    free(h->tensors);
    memset(h, 0, sizeof *h);
}

/* The 8-byte length and the JSON object it delimits: into *root, and h's data section. */
static int read_json(const unsigned char *b, size_t size, const char *name, cJSON **root,
                     emb_safetensors_header *h, char err[EMB_ERR_LEN]) {
    if (size < 8) return emb_fail(err, "%s: file too short (%zu bytes) for the 8-byte header length", name, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | b[i];
    if (n > EMB_SAFETENSORS_MAX_HEADER)
        return emb_fail(err, "%s: header length %llu exceeds the limit of %u bytes", name, (unsigned long long)n,
                        EMB_SAFETENSORS_MAX_HEADER);
    if (n > size - 8)
        return emb_fail(err, "%s: header length %llu runs past the end of the file (%zu bytes)", name,
                        (unsigned long long)n, size);
    if (n < 2 || b[8] != '{') return emb_fail(err, "%s: header is not a JSON object", name);
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts((const char *)b + 8, (size_t)n, &end, 0);
    if (!*root || !cJSON_IsObject(*root)) return emb_fail(err, "%s: header is not valid JSON", name);
    for (const char *p = end; p < (const char *)b + 8 + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            return emb_fail(err, "%s: unexpected bytes after the header's JSON object", name);
    h->header_len = n;
    h->data = b + 8 + n;
    h->data_len = size - 8 - n;
    return 0;
}

/* One tensor entry `key` of the header into t (its name last, so that a failed entry owns nothing). */
static int read_tensor(const cJSON *e, const char *key, const char *name, const emb_safetensors_header *h,
                       emb_safetensors_tensor *t, char err[EMB_ERR_LEN]) {
    if (!*key) return emb_fail(err, "%s: empty tensor name", name);
    if (!cJSON_IsObject(e)) return emb_fail(err, "%s: tensor '%.100s' is not an object", name, key);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt)) return emb_fail(err, "%s: tensor '%.100s' has no dtype string", name, key);
    int d = -1;
    for (int i = 0; i < N_DTYPES && d < 0; i++)
        if (dtypes[i].size && strcmp(dt->valuestring, dtypes[i].name) == 0) d = i;
    if (d < 0) return emb_fail(err, "%s: tensor '%.100s' has unknown dtype '%.20s'", name, key, dt->valuestring);
    t->dtype = (emb_dtype)d;
    if (!cJSON_IsArray(sh)) return emb_fail(err, "%s: tensor '%.100s' has no shape array", name, key);
    int nd = cJSON_GetArraySize(sh);
    if (nd > EMB_SAFETENSORS_MAX_DIMS)
        return emb_fail(err, "%s: tensor '%.100s' has %d dimensions (at most %d supported)", name, key, nd,
                        EMB_SAFETENSORS_MAX_DIMS);
    uint64_t elems = 1;
    int overflow = 0, k = 0;
    for (const cJSON *s = sh->child; s; s = s->next, k++) {
        uint64_t v;
        if (get_u64(s, &v))
            return emb_fail(err, "%s: tensor '%.100s' has a shape entry that is not a non-negative integer", name,
                            key);
        t->shape[k] = (int64_t)v;
        if (v && elems > UINT64_MAX / v) overflow = 1;
        elems *= v;
    }
    t->ndim = nd;
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2)
        return emb_fail(err, "%s: tensor '%.100s' has no data_offsets [begin, end]", name, key);
    if (get_u64(of->child, &t->begin) || get_u64(of->child->next, &t->end))
        return emb_fail(err, "%s: tensor '%.100s' has data_offsets that are not non-negative integers", name, key);
    if (t->begin > t->end) return emb_fail(err, "%s: tensor '%.100s' has data_offsets begin > end", name, key);
    if (t->end > h->data_len)
        return emb_fail(err, "%s: tensor '%.100s' data [%llu, %llu) lies outside the data section (%llu bytes)",
                        name, key, (unsigned long long)t->begin, (unsigned long long)t->end,
                        (unsigned long long)h->data_len);
    size_t es = dtypes[d].size;
    if (overflow || elems > UINT64_MAX / es || elems * es != t->end - t->begin)
        return emb_fail(err, "%s: tensor '%.100s' shape and dtype %s need %s%llu bytes but data_offsets span %llu",
                        name, key, dtypes[d].name, overflow ? "more than " : "",
                        (unsigned long long)(overflow ? UINT64_MAX : elems * es),
                        (unsigned long long)(t->end - t->begin));
    t->data = h->data + t->begin;
    t->name = strdup(key);
    if (!t->name) return emb_fail(err, "%s: out of memory", name);
    return 0;
}

/* No name twice (JSON allows repeated keys) and no two tensors' bytes overlapping. Sorts h by name. */
static int check_layout(emb_safetensors_header *h, const char *name, char err[EMB_ERR_LEN]) {
    qsort(h->tensors, (size_t)h->n, sizeof *h->tensors, cmp_tensor_name);
    for (int i = 1; i < h->n; i++)
        if (strcmp(h->tensors[i - 1].name, h->tensors[i].name) == 0)
            return emb_fail(err, "%s: tensor '%.100s' appears twice in the header", name, h->tensors[i].name);
    /* sorted by offsets, every non-empty tensor must start at or after the previous end */
    emb_safetensors_tensor **order = malloc((h->n ? (size_t)h->n : 1) * sizeof *order);
    if (!order) return emb_fail(err, "%s: out of memory", name);
    for (int i = 0; i < h->n; i++) order[i] = &h->tensors[i];
    qsort(order, (size_t)h->n, sizeof *order, cmp_tensor_begin);
    uint64_t prev_end = 0;
    const char *prev = NULL;
    int rc = 0;
    for (int i = 0; i < h->n && rc == 0; i++) {
        if (order[i]->begin == order[i]->end) continue;
        if (prev && order[i]->begin < prev_end)
            rc = emb_fail(err, "%s: tensors '%.80s' and '%.80s' overlap in the data section", name, prev,
                          order[i]->name);
        prev_end = order[i]->end;
        prev = order[i]->name;
    }
    free(order);
    return rc;
}

int emb_safetensors_parse(const void *buf, size_t size, const char *name, emb_safetensors_header *out,
                          char err[EMB_ERR_LEN]) {
    cJSON *root = NULL;
    emb_safetensors_header h;
    memset(&h, 0, sizeof h);
    memset(out, 0, sizeof *out);
    if (!name) name = "safetensors";
    int rc = read_json(buf, size, name, &root, &h, err);
    if (rc == 0) {
        int count = 0;
        for (cJSON *e = root->child; e; e = e->next) count++;
        h.tensors = calloc(count ? (size_t)count : 1, sizeof *h.tensors);
        if (!h.tensors) rc = emb_fail(err, "%s: out of memory", name);
    }
    for (cJSON *e = rc == 0 ? root->child : NULL; e && rc == 0; e = e->next) {
        const char *key = e->string ? e->string : "";
        if (strcmp(key, "__metadata__") != 0) {
            rc = read_tensor(e, key, name, &h, &h.tensors[h.n], err);
            if (rc == 0) h.n++;
        } else if (!cJSON_IsObject(e)) {
            rc = emb_fail(err, "%s: __metadata__ is not an object", name);
        }
    }
    if (rc == 0) rc = check_layout(&h, name, err);
    cJSON_Delete(root);
    if (rc) {
        emb_safetensors_header_free(&h);
        return -1;
    }
    *out = h;
    return 0;
}

const emb_safetensors_tensor *emb_safetensors_header_find(const emb_safetensors_header *h, const char *name) {
    int lo = 0, hi = h->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(h->tensors[mid].name, name);
        if (c == 0) return &h->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* The whole file read into private memory (a file changed later cannot reach it). */
static int read_all(int fd, const char *path, void **out, size_t size, char err[EMB_ERR_LEN]) {
    unsigned char *b = emb_alloc_large(size);
    if (!b) return emb_fail(err, "%s: out of memory reading %zu bytes", path, size);
    size_t got;
    int rc = emb_file_read(fd, path, b, size, &got, err);
    if (rc == 0 && got < size) rc = emb_fail(err, "%s: the file shrank while it was read", path);
    if (rc) {
        free(b);
        return -1;
    }
    *out = b;
    return 0;
}

/* The file's bytes into sf->map: mapped, or read. */
static int load_bytes(emb_safetensors *sf, int fd, int use_mmap, char err[EMB_ERR_LEN]) {
    if (sf->size < 8)
        return emb_fail(err, "%s: file too short (%zu bytes) for the 8-byte header length", sf->label, sf->size);
    if (!use_mmap) return read_all(fd, sf->path, &sf->map, sf->size, err);
    void *map = mmap(NULL, sf->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) return emb_fail(err, "%s: mmap failed: %s", sf->path, strerror(errno));
    sf->map = map;
    sf->mapped = 1;
    return 0;
}

static int open_file(const char *path, int use_mmap, int parse, emb_safetensors **out, char err[EMB_ERR_LEN]) {
    *out = NULL;
    emb_safetensors *sf = calloc(1, sizeof *sf);
    if (!sf || !(sf->path = strdup(path))) {
        free(sf);
        return emb_fail(err, "%s: out of memory", path);
    }
    const char *slash = strrchr(sf->path, '/');
    sf->label = slash ? slash + 1 : sf->path;
    int fd = emb_file_open(path, "weights", &sf->size, err);
    int rc = fd < 0 ? -1 : load_bytes(sf, fd, use_mmap, err);
    if (fd >= 0) close(fd);
    if (rc == 0 && parse) rc = emb_safetensors_parse(sf->map, sf->size, sf->label, &sf->h, err);
    if (rc) {
        emb_safetensors_close(sf);
        return -1;
    }
    *out = sf;
    return 0;
}

int emb_safetensors_release(const emb_safetensors *sf, const void *p, size_t bytes) {
    const char *a = p, *base = sf->map;
    if (!sf->mapped || !p || a < base || bytes > sf->size || (size_t)(a - base) > sf->size - bytes) return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)a + page - 1) & ~(page - 1), hi = ((uintptr_t)a + bytes) & ~(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
    return 1;
}

int emb_safetensors_open(const char *path, int use_mmap, emb_safetensors **out, char err[EMB_ERR_LEN]) {
    return open_file(path, use_mmap, 1, out, err);
}
int emb_safetensors_open_raw(const char *path, int use_mmap, emb_safetensors **out, char err[EMB_ERR_LEN]) {
    return open_file(path, use_mmap, 0, out, err);
}

void emb_safetensors_close(emb_safetensors *sf) {
    if (!sf) return;
    emb_safetensors_header_free(&sf->h);
    if (sf->map && sf->mapped) munmap(sf->map, sf->size);
    else free(sf->map);
    free(sf->path);
    free(sf);
}

const emb_safetensors_tensor *emb_safetensors_find(const emb_safetensors *sf, const char *name) {
    return emb_safetensors_header_find(&sf->h, name);
}

int emb_safetensors_write(const char *path, const emb_safetensors_write_tensor *t, int n, int misalign,
                          char err[EMB_ERR_LEN]) {
    size_t cap = 256 + (size_t)n * 512, len = 0;
    char *hdr = malloc(cap);
    FILE *f = NULL;
    if (!hdr) return emb_fail(err, "out of memory");
    len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        uint64_t elems = 1;
        for (int d = 0; d < t[i].ndim; d++) elems *= (uint64_t)t[i].shape[d];
        uint64_t bytes = elems * emb_dtype_size(t[i].dtype);
        if (!emb_dtype_size(t[i].dtype)) {
            free(hdr);
            return emb_fail(err, "%s: tensor '%.40s' has dtype %s, which safetensors does not have", path,
                            t[i].name, emb_dtype_name(t[i].dtype));
        }
        if (strlen(t[i].name) > 150) {
            free(hdr);
            return emb_fail(err, "%s: tensor name '%.40s...' too long", path, t[i].name);
        }
        len += (size_t)snprintf(hdr + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name,
                                emb_dtype_name(t[i].dtype));
        for (int d = 0; d < t[i].ndim; d++)
            len += (size_t)snprintf(hdr + len, cap - len, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
        len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                (unsigned long long)(off + bytes));
        off += bytes;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while ((8 + len) % 8 != (size_t)(misalign & 7)) hdr[len++] = ' ';
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    f = fopen(path, "wb");
    if (!f) {
        free(hdr);
        return emb_fail(err, "%s: cannot create: %s", path, strerror(errno));
    }
    int ok = fwrite(lb, 1, 8, f) == 8 && fwrite(hdr, 1, len, f) == len;
    for (int i = 0; i < n && ok; i++) {
        uint64_t elems = 1;
        for (int d = 0; d < t[i].ndim; d++) elems *= (uint64_t)t[i].shape[d];
        size_t bytes = (size_t)(elems * emb_dtype_size(t[i].dtype));
        ok = fwrite(t[i].data, 1, bytes, f) == bytes;
    }
    ok = (fclose(f) == 0) && ok;
    free(hdr);
    if (!ok) return emb_fail(err, "%s: write failed", path);
    return 0;
}
