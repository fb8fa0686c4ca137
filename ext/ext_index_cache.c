/* embed_index's in-memory copy of the vectors, one per connection (v->cache), shared by the
 * cursors reading it. Filled by ext_index_search.c; kept in step with the connection's own
 * writes here, when that is exact, and otherwise dropped so that the next search refills it. */
#include "ext_index.h"

void ix_cache_release(ix_cache *c) {
    if (!c || --c->refs > 0) return;
    emb_vec_array_free(&c->a);
    for (int j = 0; j < c->n_meta; j++) emb_meta_column_free(&c->meta[j]);
    sqlite3_free(c->meta);
    emb_meta_groups_free(&c->groups);
    sqlite3_free(c);
}

void ix_drop_cache(ix_vtab *v) {
    ix_cache_release(v->cache);
    v->cache = NULL;
}

/* The copy, if a write to chunks holding `count` vectors at committed `version` can be mirrored
 * in it: it holds exactly those vectors, was filled at that version (another connection may have
 * committed since), and no cursor is reading it. */
static ix_cache *cache_for_write(ix_vtab *v, sqlite3_int64 version, sqlite3_int64 count) {
    if (v->cache && (v->cache->refs != 1 || v->cache->a.n != (size_t)count || v->cache->version != version ||
                     v->cache->n_meta != v->n_meta))
        ix_drop_cache(v);
    if (v->cache && v->cache->grouped) { /* the partition groups are made again when needed */
        emb_meta_groups_free(&v->cache->groups);
        v->cache->grouped = 0;
    }
    return v->cache;
}

void ix_cache_append(ix_vtab *v, sqlite3_int64 version, sqlite3_int64 count, const int64_t *ids,
                     const float *vecs, const emb_meta_column *meta, size_t n) {
    ix_cache *c = cache_for_write(v, version, count);
    if (!c) return;
    int failed = emb_vec_array_append(&c->a, ids, vecs, n);
    for (int j = 0; j < c->n_meta && !failed; j++)
        for (size_t i = 0; i < n && !failed; i++) {
            emb_value x = emb_meta_column_get(&meta[j], i);
            failed = emb_meta_column_push(&c->meta[j], &x);
        }
    if (failed) ix_drop_cache(v);
}

void ix_cache_remove(ix_vtab *v, sqlite3_int64 version, sqlite3_int64 count, sqlite3_int64 loc) {
    ix_cache *c = cache_for_write(v, version, count);
    if (!c) return;
    emb_vec_array_remove(&c->a, (size_t)loc);
    for (int j = 0; j < c->n_meta; j++) emb_meta_column_remove(&c->meta[j], (size_t)loc);
}
