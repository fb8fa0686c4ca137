/* Which copy of the chunks a statement reads. An index in a database file has one copy per
 * process, in the registry, shared by every connection whose read transaction sees the
 * version it shows; a connection that sees another version brings it up to date in place when
 * nobody else holds it, else copies it first, reading only the chunks that changed either way
 * (another process's commit included: the version is read inside the statement's
 * transaction). A transaction that wrote sees rows nobody else may see: it reads a copy of its
 * own (v->own), made from the shared one, until it ends. Indexes not in a file (in-memory,
 * temporary) and format-1 indexes have only the connection's own copy. */
#include "ix.h"

void ix_drop_own(ix_vtab *v) {
    ix_cache_release(v->own);
    v->own = NULL;
}

/* Brings c (held by the caller alone) to what this transaction sees; released on errors. */
static int bring_up_to_date(ix_vtab *v, ix_cache *c, sqlite3_int64 ver, sqlite3_int64 count, ix_cache **out) {
    int rc = ix_refresh(v, c, count);
    if (rc != SQLITE_OK) {
        ix_cache_release(c);
        return rc;
    }
    c->version = v->dirty ? -1 : ver; /* uncommitted rows show no committed version */
    *out = c;
    return SQLITE_OK;
}

/* Whether copy c has the shape of v's index. The registry's key holds that shape, so a copy
 * of another shape means the registry itself was misled: reported as damage rather than read
 * past the ends of its arrays. */
static int fits(const ix_vtab *v, const ix_cache *c) {
    if (c->d != (size_t)v->dims || c->rec != v->rec || c->chunk != (size_t)v->chunk || c->storage != v->storage ||
        c->metric != v->metric || c->n_meta != v->n_meta || c->partition != v->partition || !c->lists != !v->ivf ||
        !c->rows != !v->chunk_tokens)
        return 0;
    return c->n <= c->cap && c->n_chunks == (c->n + c->chunk - 1) / c->chunk;
}

/* c, taken from the registry, checked against v's index: released on a mismatch. */
static int checked(ix_vtab *v, ix_cache *c) {
    if (!c || fits(v, c)) return SQLITE_OK;
    ix_cache_release(c);
    return ix_corrupt(v, "config",
                      "its uid names a copy of another index's vectors (was the uid copied "
                      "from another index?)");
}

/* A copy to change: c itself when the caller holds it alone, else a clone (c released). */
static ix_cache *to_change(ix_vtab *v, ix_cache *c, int alone) {
    if (!c) return ix_cache_new(v);
    if (alone) return c;
    ix_cache *copy = ix_cache_clone(c);
    ix_cache_release(c);
    return copy;
}

/* The connection's own copy, up to date. */
static int own_snapshot(ix_vtab *v, sqlite3_int64 ver, sqlite3_int64 count, ix_cache **out) {
    ix_cache *c = v->own;
    v->own = NULL;
    if (c && c->version == ver && !v->dirty) {
        v->own = c;
    } else {
        int exact = 0, alone = c && c->refs == 1, taken = 0;
        if (!c && v->key && (c = ix_registry_take(v->key, ver, &exact, &taken)) != NULL && taken)
            ix_registry_put(v->key, c); /* the others keep reading it: this transaction copies it */
        int rc = checked(v, c);
        if (rc != SQLITE_OK) return rc;
        if (!(c = to_change(v, c, alone))) return SQLITE_NOMEM;
        if ((rc = bring_up_to_date(v, c, ver, count, &v->own)) != SQLITE_OK) return rc;
    }
    ix_cache_retain(v->own);
    *out = v->own;
    return SQLITE_OK;
}

int ix_snapshot(ix_vtab *v, ix_cache **out) {
    sqlite3_int64 ver, count;
    *out = NULL;
    int rc = ix_version(v, &ver);
    /* every number read from the shadow tables is checked before it sizes anything */
    if (rc == SQLITE_OK) rc = ix_count(v, &count);
    if (rc != SQLITE_OK) return rc;
    if (!v->key || v->dirty) return own_snapshot(v, ver, count, out);
    ix_drop_own(v); /* a transaction that wrote has ended */
    int exact, alone;
    ix_cache *c = ix_registry_take(v->key, ver, &exact, &alone);
    if ((rc = checked(v, c)) != SQLITE_OK) return rc;
    if (exact) {
        *out = c;
        return SQLITE_OK;
    }
    if (!(c = to_change(v, c, alone))) return SQLITE_NOMEM;
    if ((rc = bring_up_to_date(v, c, ver, count, out)) != SQLITE_OK) return rc;
    ix_registry_put(v->key, c); /* kept unless another connection put a newer one meanwhile */
    return SQLITE_OK;
}
