/* embed_index's in-memory copies of the chunks, and the registry that shares one copy per
 * index between all the connections of the process (a web server's eight connections hold one
 * copy, not eight). A copy is changed only by a holder that holds it alone; the registry's
 * mutex guards every count of holders. */
#include "ix.h"
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void cache_free(ix_cache *c) {
    free(c->records);
    free(c->ids);
    free(c->rows);
    free(c->aux);
    free(c->lists);
    free(c->chunk_ver);
    for (int j = 0; c->meta && j < c->n_meta; j++) emb_meta_column_free(&c->meta[j]); /* NULL: out of memory */
    free(c->meta);
    emb_meta_groups_free(&c->groups);
    emb_ivf_free(&c->ivf);
    emb_ivf_groups_free(&c->ivf_groups);
    free(c);
}

static int uses_aux(emb_storage s, emb_metric m) {
    return s == EMB_STORAGE_F32 ? emb_knn_needs_aux(m) : emb_code_needs_aux(s, m);
}

ix_cache *ix_cache_new(const ix_vtab *v) {
    ix_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->refs = 1;
    c->version = -1;
    c->storage = v->storage;
    c->metric = v->metric;
    c->d = (size_t)v->dims;
    c->rec = v->rec;
    c->chunk = (size_t)v->chunk;
    c->partition = v->partition;
    c->n_meta = v->n_meta;
    if (v->n_meta && !(c->meta = calloc((size_t)v->n_meta, sizeof *c->meta))) {
        free(c);
        return NULL;
    }
    /* lists first: the arrays grow together, each to the room of the others */
    if ((v->ivf && !(c->lists = malloc(sizeof *c->lists))) ||
        (v->chunk_tokens && !(c->rows = malloc(sizeof *c->rows))) || ix_cache_resize(c, 0)) {
        cache_free(c);
        return NULL;
    }
    return c;
}

/* Room for cap rows in every per-row array, keeping the n rows there. */
static int grow(ix_cache *c, size_t cap) {
    unsigned char *r = (unsigned char *)emb_vectors_alloc((cap * c->rec + 3) / 4);
    int64_t *ids = realloc(c->ids, (cap ? cap : 1) * sizeof *ids);
    if (ids) c->ids = ids;
    float *aux = uses_aux(c->storage, c->metric) ? realloc(c->aux, (cap ? cap : 1) * sizeof *aux) : NULL;
    if (aux) c->aux = aux;
    int32_t *lists = c->lists ? realloc(c->lists, (cap ? cap : 1) * sizeof *lists) : NULL;
    if (lists) c->lists = lists;
    int64_t *rows = c->rows ? realloc(c->rows, (cap ? cap : 1) * sizeof *rows) : NULL;
    if (rows) c->rows = rows;
    if (!r || !ids || (uses_aux(c->storage, c->metric) && !aux) || (c->lists && !lists) || (c->rows && !rows)) {
        free(r);
        return -1;
    }
    if (c->n) memcpy(r, c->records, c->n * c->rec);
    free(c->records);
    c->records = r;
    c->cap = cap;
    return 0;
}

int ix_cache_resize(ix_cache *c, size_t n) {
    if (!c->records || n > c->cap) {
        /* room to spare (a sixteenth and a chunk), so that the rows other connections append
         * are read into place rather than into a new array */
        size_t cap = n + n / 16 + c->chunk;
        if (c->cap + c->cap / 4 > cap) cap = c->cap + c->cap / 4;
        if (grow(c, cap)) return -1;
    }
    size_t chunks = (n + c->chunk - 1) / c->chunk;
    sqlite3_int64 *ver = realloc(c->chunk_ver, (chunks ? chunks : 1) * sizeof *ver);
    if (!ver) return -1;
    c->chunk_ver = ver;
    for (size_t i = c->n_chunks; i < chunks; i++) ver[i] = 0;
    c->n_chunks = chunks;
    for (int j = 0; j < c->n_meta; j++)
        if (emb_meta_column_resize(&c->meta[j], n)) return -1;
    c->n = n;
    return 0;
}

void ix_cache_set_aux(ix_cache *c, size_t from, size_t to) {
    if (!c->aux) return;
    for (size_t i = from; i < to; i++) {
        const unsigned char *r = c->records + i * c->rec;
        c->aux[i] = c->storage == EMB_STORAGE_F32 ? emb_knn_aux(c->metric, (const float *)r, c->d)
                                                  : emb_code_aux(c->storage, c->metric, r, c->d);
    }
}

ix_cache *ix_cache_clone(const ix_cache *src) {
    ix_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    /* the shape, field by field: a copy of the whole struct would read src->refs, which other
     * holders change under the registry's lock (ThreadSanitizer) */
    c->refs = 1;
    c->version = src->version;
    c->storage = src->storage;
    c->metric = src->metric;
    c->d = src->d;
    c->rec = src->rec;
    c->chunk = src->chunk;
    c->n_meta = src->n_meta;
    c->partition = src->partition;
    c->lists = src->lists ? malloc(sizeof *c->lists) : NULL;
    c->rows = src->rows ? malloc(sizeof *c->rows) : NULL;
    c->meta = c->n_meta ? calloc((size_t)c->n_meta, sizeof *c->meta) : NULL;
    c->chunk_ver = malloc((src->n_chunks ? src->n_chunks : 1) * sizeof *c->chunk_ver);
    int failed = (src->lists && !c->lists) || (src->rows && !c->rows) || (c->n_meta && !c->meta) || !c->chunk_ver;
    for (int j = 0; j < c->n_meta && !failed; j++) failed = emb_meta_column_copy(&c->meta[j], &src->meta[j]);
    if (!failed) failed = grow(c, src->cap > src->n ? src->cap : src->n);
    if (failed) {
        cache_free(c);
        return NULL;
    }
    /* the rows, and the versions of the chunks they came from; the groups are made again */
    c->n = src->n;
    c->n_chunks = src->n_chunks;
    memcpy(c->records, src->records, src->n * src->rec);
    memcpy(c->ids, src->ids, src->n * sizeof *c->ids);
    if (c->aux) memcpy(c->aux, src->aux, src->n * sizeof *c->aux);
    if (c->lists) memcpy(c->lists, src->lists, src->n * sizeof *c->lists);
    if (c->rows) memcpy(c->rows, src->rows, src->n * sizeof *c->rows);
    memcpy(c->chunk_ver, src->chunk_ver, src->n_chunks * sizeof *c->chunk_ver);
    return c;
}

size_t ix_cache_bytes(const ix_cache *c) {
    size_t b = c->cap * (c->rec + sizeof *c->ids + (c->aux ? sizeof *c->aux : 0) +
                         (c->lists ? sizeof *c->lists : 0) + (c->rows ? sizeof *c->rows : 0));
    for (int j = 0; j < c->n_meta; j++) b += emb_meta_column_bytes(&c->meta[j]);
    b += c->groups.n * sizeof *c->groups.order + c->ivf.lists * c->ivf.d * sizeof(float);
    b += (c->ivf_groups.n + c->ivf_groups.lists + 2) * sizeof(size_t);
    return b;
}

/* ---------- the registry ---------- */

typedef struct entry {
    char *key;
    ix_cache *copy; /* NULL while a holder brings it up to date */
    int users; /* connections attached */
    char progress[128]; /* long work under way on the index, for embed_index_status; "" none */
    struct entry *next;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;

void ix_cache_retain(ix_cache *c) {
    pthread_mutex_lock(&lock);
    c->refs++;
    pthread_mutex_unlock(&lock);
}

void ix_cache_release(ix_cache *c) {
    if (!c) return;
    pthread_mutex_lock(&lock);
    int last = --c->refs == 0;
    pthread_mutex_unlock(&lock);
    if (last) cache_free(c);
}

static entry *find(const char *key) {
    for (entry *e = entries; e; e = e->next)
        if (!strcmp(e->key, key)) return e;
    return NULL;
}

ix_cache *ix_registry_take(const char *key, sqlite3_int64 ver, int *exact, int *owned) {
    *exact = *owned = 0;
    pthread_mutex_lock(&lock);
    entry *e = find(key);
    ix_cache *c = e ? e->copy : NULL;
    if (c && c->version == ver) {
        c->refs++;
        *exact = 1;
    } else if (c && c->refs == 1) {
        e->copy = NULL; /* the registry's reference passes to the caller */
        *owned = 1;
    } else if (c) {
        c->refs++;
    }
    pthread_mutex_unlock(&lock);
    return c;
}

void ix_registry_put(const char *key, ix_cache *c) {
    ix_cache *old = NULL;
    pthread_mutex_lock(&lock);
    entry *e = find(key);
    if (e && c->version >= 0 && (!e->copy || e->copy->version < c->version)) {
        old = e->copy;
        e->copy = c;
        c->refs++;
    }
    pthread_mutex_unlock(&lock);
    ix_cache_release(old);
}

int ix_registry_attach(const char *key) {
    pthread_mutex_lock(&lock);
    entry *e = find(key);
    if (!e && (e = calloc(1, sizeof *e)) != NULL) {
        if (!(e->key = strdup(key))) {
            free(e);
            e = NULL;
        } else {
            e->next = entries;
            entries = e;
        }
    }
    if (e) e->users++;
    pthread_mutex_unlock(&lock);
    return e ? 0 : -1;
}

void ix_registry_detach(const char *key) {
    ix_cache *drop = NULL;
    pthread_mutex_lock(&lock);
    for (entry **p = &entries; *p; p = &(*p)->next) {
        entry *e = *p;
        if (strcmp(e->key, key)) continue;
        if (--e->users == 0) {
            *p = e->next;
            drop = e->copy;
            free(e->key);
            free(e);
        }
        break;
    }
    pthread_mutex_unlock(&lock);
    ix_cache_release(drop);
}

sqlite3_int64 ix_registry_bytes(void) {
    sqlite3_int64 b = 0;
    pthread_mutex_lock(&lock);
    for (entry *e = entries; e; e = e->next)
        if (e->copy) b += (sqlite3_int64)ix_cache_bytes(e->copy);
    pthread_mutex_unlock(&lock);
    return b;
}

void ix_progress(const char *key, const char *fmt, ...) {
    if (!key) return;
    char text[128] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&lock);
    entry *e = find(key);
    if (e) memcpy(e->progress, text, sizeof text);
    pthread_mutex_unlock(&lock);
}

sqlite3_int64 ix_registry_status(const char *prefix, char *progress, size_t room) {
    sqlite3_int64 b = 0;
    size_t len = strlen(prefix);
    if (room) progress[0] = 0;
    pthread_mutex_lock(&lock);
    for (entry *e = entries; e; e = e->next) {
        if (strncmp(e->key, prefix, len)) continue;
        if (e->copy) b += (sqlite3_int64)ix_cache_bytes(e->copy);
        if (e->progress[0] && room) snprintf(progress, room, "%s", e->progress);
    }
    pthread_mutex_unlock(&lock);
    return b;
}
