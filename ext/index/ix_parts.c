/* A chunked index's parts (CREATE ... embed_index(model = 'm', chunk_tokens = N)): a row's text
 * is stored once, in NAME_rows, and cut into chunks of at most N tokens (emb_model_chunks);
 * each chunk's text is embedded as a text of its own and placed at a position of the chunks
 * like a row of an unchunked index, under a part id. NAME_parts maps a part id to its row,
 * chunk number and byte offsets, and to its position; a row's parts have consecutive ids from
 * the one in the row's loc. A search groups the parts it finds by row (ix_group_hits). */
#include "ix.h"
#include "base/utf8.h"
#include "sqlite-embed/chunk.h"
#include <stdlib.h>
#include <string.h>

/* The parts of one flush: for part p, its row's index in the flush, chunk number and offsets. */
typedef struct {
    size_t n, cap;
    size_t *row;
    emb_chunk *span;
    int32_t *chunk;
} part_list;

static void parts_free(part_list *p) {
    sqlite3_free(p->row);
    sqlite3_free(p->span);
    sqlite3_free(p->chunk);
}

static int parts_push(part_list *p, size_t row, int32_t chunk, int64_t start, int64_t end) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        size_t *r = sqlite3_realloc64(p->row, cap * sizeof *r);
        if (r) p->row = r;
        emb_chunk *s = sqlite3_realloc64(p->span, cap * sizeof *s);
        if (s) p->span = s;
        int32_t *c = sqlite3_realloc64(p->chunk, cap * sizeof *c);
        if (c) p->chunk = c;
        if (!r || !s || !c) return SQLITE_NOMEM;
        p->cap = cap;
    }
    p->row[p->n] = row;
    p->chunk[p->n] = chunk;
    p->span[p->n] = (emb_chunk){start, end, 0};
    p->n++;
    return SQLITE_OK;
}

/* The chunks of the n texts. A text without any (only white space) is one part, the whole
 * text, so that every row can be found, as in an index without chunks. */
static int cut_texts(ix_vtab *v, char *const *texts, const size_t *lens, size_t n, part_list *p) {
    int rc;
    emb_model *m = ix_model(v, &rc);
    if (!m) return rc;
    emb_chunk_options opt = {v->chunk_tokens, v->chunk_overlap};
    char err[EMB_ERR_LEN];
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        emb_chunk *ch = NULL;
        size_t nc = 0;
        if (emb_model_chunks(m, texts[i], lens[i], &opt, &ch, &nc, err)) {
            rc = ix_error(v, "%s", err);
            break;
        }
        for (size_t j = 0; rc == SQLITE_OK && j < nc; j++)
            rc = parts_push(p, i, (int32_t)j, ch[j].start, ch[j].end);
        if (rc == SQLITE_OK && nc == 0) rc = parts_push(p, i, 0, 0, (int64_t)lens[i]);
        free(ch);
    }
    emb_model_release(m);
    return rc;
}

/* The id after the largest part id: where a flush's parts begin. */
static int next_part_id(ix_vtab *v, size_t n, sqlite3_int64 *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_MAX_PART, &rc);
    if (!s) return rc;
    int step = sqlite3_step(s);
    sqlite3_int64 max = step == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    if (step != SQLITE_ROW) return ix_sql_error(v, step);
    if (max < 0 || max > INT64_MAX - (sqlite3_int64)n - 1)
        return ix_corrupt(v, "parts", "its largest part id %lld leaves no room for more", (long long)max);
    *out = max + 1;
    return SQLITE_OK;
}

/* Records the parts (ids first ..) in NAME_parts and each row's first part in NAME_rows. */
static int record_parts(ix_vtab *v, const int64_t *rows, const part_list *p, sqlite3_int64 first) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_NEW_PART, &rc), *r = s ? ix_stmt(v, IX_STMT_SET_ROW_LOC, &rc) : NULL;
    for (size_t i = 0; r && rc == SQLITE_OK && i < p->n; i++) {
        sqlite3_bind_int64(s, 1, first + (sqlite3_int64)i);
        sqlite3_bind_int64(s, 2, rows[p->row[i]]);
        sqlite3_bind_int64(s, 3, p->chunk[i]);
        sqlite3_bind_int64(s, 4, p->span[i].start);
        sqlite3_bind_int64(s, 5, p->span[i].end);
        rc = ix_run(v, s);
        if (rc == SQLITE_OK && p->chunk[i] == 0) {
            sqlite3_bind_int64(r, 1, rows[p->row[i]]);
            sqlite3_bind_int64(r, 2, first + (sqlite3_int64)i);
            rc = ix_run(v, r);
        }
    }
    return rc;
}

int ix_place_texts(ix_vtab *v, const int64_t *rows, char *const *texts, const size_t *lens, size_t n) {
    part_list p = {0};
    int rc = cut_texts(v, texts, lens, n, &p);
    size_t d = (size_t)v->dims;
    const char **ptr = rc == SQLITE_OK ? sqlite3_malloc64((p.n + 1) * sizeof *ptr) : NULL;
    size_t *len = ptr ? sqlite3_malloc64((p.n + 1) * sizeof *len) : NULL;
    int64_t *ids = len ? sqlite3_malloc64((p.n + 1) * sizeof *ids) : NULL;
    float *vecs = ids ? sqlite3_malloc64((p.n + 1) * d * sizeof *vecs) : NULL;
    if (rc == SQLITE_OK && !vecs) rc = SQLITE_NOMEM;
    sqlite3_int64 first = 0;
    if (rc == SQLITE_OK) rc = next_part_id(v, p.n, &first);
    for (size_t i = 0; rc == SQLITE_OK && i < p.n; i++) {
        ptr[i] = texts[p.row[i]] + p.span[i].start;
        len[i] = (size_t)(p.span[i].end - p.span[i].start);
        ids[i] = first + (sqlite3_int64)i;
    }
    /* the chunks of every row of the flush together, IX_EMBED_STEP a call (the model sorts each
     * call's by length); between calls an interrupt is honoured and the progress shown */
    for (size_t at = 0; rc == SQLITE_OK && at < p.n; at += IX_EMBED_STEP) {
        size_t k = p.n - at < IX_EMBED_STEP ? p.n - at : IX_EMBED_STEP;
        ix_progress(v->key, "insert: embedding chunks, %zu of %zu pending", at, p.n);
        rc = ix_interrupted(v, "insert");
        if (rc == SQLITE_OK) rc = ix_embed_texts(v, IX_ROLE_DOCUMENT, ptr + at, len + at, k, vecs + at * d);
    }
    ix_progress(v->key, NULL);
    if (rc == SQLITE_OK) rc = record_parts(v, rows, &p, first);
    if (rc == SQLITE_OK && p.n) rc = ix_place(v, ids, vecs, p.n);
    sqlite3_free(ptr);
    sqlite3_free(len);
    sqlite3_free(ids);
    sqlite3_free(vecs);
    parts_free(&p);
    return rc;
}

typedef struct {
    sqlite3_int64 id, loc;
} part_loc;

static int by_loc_desc(const void *a, const void *b) {
    sqlite3_int64 x = ((const part_loc *)a)->loc, y = ((const part_loc *)b)->loc;
    return (x < y) - (x > y);
}

/* The parts of row `rowid`, which begin at part id `first`, into *out (sqlite3_malloc'd), from the
 * last position down. */
static int row_parts(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 first, part_loc **out, size_t *n) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_ROW_PARTS, &rc);
    *out = NULL;
    *n = 0;
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, first);
    size_t cap = 0;
    int step = SQLITE_DONE;
    while (rc == SQLITE_OK && (step = sqlite3_step(s)) == SQLITE_ROW && sqlite3_column_int64(s, 1) == rowid) {
        sqlite3_int64 id = sqlite3_column_int64(s, 0);
        if (id != first + (sqlite3_int64)*n || sqlite3_column_type(s, 2) != SQLITE_INTEGER) {
            rc = ix_corrupt(v, "parts", "part %lld of rowid %lld is %s", (long long)id, (long long)rowid,
                            sqlite3_column_type(s, 2) != SQLITE_INTEGER ? "at no position" : "out of order");
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            part_loc *grown = sqlite3_realloc64(*out, cap * sizeof *grown);
            if (!grown) {
                rc = SQLITE_NOMEM;
                break;
            }
            *out = grown;
        }
        (*out)[(*n)++] = (part_loc){id, sqlite3_column_int64(s, 2)};
    }
    sqlite3_reset(s);
    if (rc == SQLITE_OK && step != SQLITE_ROW && step != SQLITE_DONE) rc = ix_sql_error(v, step);
    if (rc == SQLITE_OK && *n == 0)
        rc = ix_corrupt(v, "parts", "rowid %lld's first part %lld is missing", (long long)rowid, (long long)first);
    if (rc == SQLITE_OK) qsort(*out, *n, sizeof **out, by_loc_desc);
    return rc;
}

int ix_unplace_row(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 first) {
    part_loc *p;
    size_t n;
    /* from the last position down: each hole is filled from the end of the array, which then
     * holds none of this row's other parts, so their positions stay as read */
    int rc = row_parts(v, rowid, first, &p, &n);
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) rc = ix_unplace(v, p[i].id, p[i].loc);
    sqlite3_stmt *s = rc == SQLITE_OK ? ix_stmt(v, IX_STMT_DELETE_PARTS, &rc) : NULL;
    if (s) {
        sqlite3_bind_int64(s, 1, first);
        sqlite3_bind_int64(s, 2, first + (sqlite3_int64)n);
        rc = ix_run(v, s);
    }
    sqlite3_free(p);
    return rc;
}

int ix_touch_row(ix_vtab *v, sqlite3_int64 rowid, sqlite3_int64 first) {
    part_loc *p;
    size_t n;
    int rc = row_parts(v, rowid, first, &p, &n);
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) /* each chunk once: the parts come by position */
        if (i == 0 || p[i].loc / v->chunk != p[i - 1].loc / v->chunk) rc = ix_touch_chunk(v, p[i].loc / v->chunk);
    sqlite3_free(p);
    return rc;
}

/* ---------- searches ---------- */

typedef struct {
    int64_t row;
    size_t at;
} row_at;

static int by_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static int by_row_then_at(const void *a, const void *b) {
    const row_at *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* The position in hits of each row's first (nearest) hit, in increasing order, into first (n
 * values); returns how many rows, or (size_t)-1 when out of memory. */
static size_t first_hits(const ix_cache *c, const emb_knn_hit *hits, size_t n, size_t *first) {
    row_at *r = sqlite3_malloc64((n + 1) * sizeof *r);
    size_t distinct = 0;
    if (!r) return (size_t)-1;
    for (size_t i = 0; i < n; i++) r[i] = (row_at){c->rows[hits[i].pos], i};
    qsort(r, n, sizeof *r, by_row_then_at);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || r[i].row != r[i - 1].row) first[distinct++] = r[i].at;
    qsort(first, distinct, sizeof *first, by_size);
    sqlite3_free(r);
    return distinct;
}

size_t ix_count_rows(const ix_cache *c, const emb_knn_hit *hits, size_t n, size_t k, size_t *prefix) {
    *prefix = k < n ? k : n;
    if (!c->rows || n == 0) return n;
    size_t *first = sqlite3_malloc64(n * sizeof *first);
    size_t distinct = first ? first_hits(c, hits, n, first) : (size_t)-1;
    size_t want = k < distinct ? k : distinct;
    if (distinct != (size_t)-1) *prefix = want ? first[want - 1] + 1 : 0;
    sqlite3_free(first);
    return distinct;
}

size_t ix_group_hits(const ix_cache *c, emb_knn_hit *hits, float *vecs, size_t n) {
    if (!c->rows || n == 0) return n;
    size_t *first = sqlite3_malloc64(n * sizeof *first);
    size_t m = first ? first_hits(c, hits, n, first) : (size_t)-1, d = c->d;
    if (m == (size_t)-1) {
        sqlite3_free(first);
        return m;
    }
    for (size_t i = 0; i < m; i++) { /* each row's nearest part, in the hits' order */
        if (vecs && first[i] != i) memcpy(vecs + i * d, vecs + first[i] * d, d * sizeof *vecs);
        hits[i] = hits[first[i]];
    }
    sqlite3_free(first);
    /* equal distances by rowid, as an index without chunks orders them (the hits came by part id):
     * hits sorted by distance already, so only runs of equal ones move */
    for (size_t i = 1; i < m; i++)
        for (size_t j = i;
             j > 0 && hits[j].dist == hits[j - 1].dist && c->rows[hits[j].pos] < c->rows[hits[j - 1].pos]; j--) {
            emb_knn_hit t = hits[j];
            hits[j] = hits[j - 1], hits[j - 1] = t;
            for (size_t x = 0; vecs && x < d; x++) {
                float f = vecs[j * d + x];
                vecs[j * d + x] = vecs[(j - 1) * d + x], vecs[(j - 1) * d + x] = f;
            }
        }
    return m;
}

#define CONT(byte) (((byte)&0xC0) == 0x80) /* a UTF-8 continuation byte */

int ix_part_info(ix_vtab *v, sqlite3_int64 part, sqlite3_int64 row, ix_part *out) {
    int rc;
    sqlite3_stmt *s = ix_stmt(v, IX_STMT_PART, &rc);
    if (!s) return rc;
    sqlite3_bind_int64(s, 1, part);
    int step = sqlite3_step(s), ok = step == SQLITE_ROW, text_ok = 1;
    for (int i = 0; ok && i < 4; i++) ok = sqlite3_column_type(s, i) == SQLITE_INTEGER;
    if (ok) {
        *out = (ix_part){sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3)};
        const unsigned char *t = sqlite3_column_blob(s, 4);
        sqlite3_int64 len = sqlite3_column_bytes(s, 4);
        /* the offsets are inside the text and on its characters' first bytes (a chunk is whole
         * characters), and what they cut out is UTF-8 (else the row's text is what is damaged) */
        ok = sqlite3_column_type(s, 4) != SQLITE_NULL && sqlite3_column_int64(s, 0) == row && out->chunk >= 0 &&
             out->start >= 0 && out->start <= out->end && out->end <= len &&
             (out->start == len || !CONT(t[out->start])) && (out->end == len || !CONT(t[out->end]));
        text_ok = !ok || out->start == out->end ||
                  emb_utf8_valid((const char *)t + out->start, (size_t)(out->end - out->start), NULL);
    }
    sqlite3_reset(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE) return ix_sql_error(v, step);
    if (!ok)
        return ix_corrupt(v, "parts",
                          "part %lld is not a chunk of rowid %lld (chunk number, and byte offsets "
                          "inside the row's text, on the first bytes of its characters)",
                          (long long)part, (long long)row);
    if (!text_ok) return ix_corrupt(v, "rows", "the text of rowid %lld is not valid UTF-8", (long long)row);
    return SQLITE_OK;
}
