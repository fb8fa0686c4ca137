/* Which copy of the chunks a statement reads. An index in a database file has one copy per
 * process, in the registry, shared by every connection whose read transaction sees the
 * version it shows; a connection that sees another version brings it up to date in place when
 * nobody else holds it, else copies it first, reading only the chunks that changed either way
 * (another process's commit included: the version is read inside the statement's
 * transaction). A transaction that wrote sees rows nobody else may see: it reads a copy of its
 * own (v->own), made from the shared one, until it ends. Indexes not in a file (in-memory,
 * temporary) and format-1 indexes have only the connection's own copy. */
#include "ext_index.h"

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
        if (!(c = to_change(v, c, alone))) return SQLITE_NOMEM;
        int rc = bring_up_to_date(v, c, ver, count, &v->own);
        if (rc != SQLITE_OK) return rc;
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
    if (exact) {
        *out = c;
        return SQLITE_OK;
    }
    if (!(c = to_change(v, c, alone))) return SQLITE_NOMEM;
    if ((rc = bring_up_to_date(v, c, ver, count, out)) != SQLITE_OK) return rc;
    ix_registry_put(v->key, c); /* kept unless another connection put a newer one meanwhile */
    return SQLITE_OK;
}
