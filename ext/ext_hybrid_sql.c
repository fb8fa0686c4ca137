/* embed_hybrid's SQL helpers: statements kept between calls, and the tables its arguments name,
 * found in the schema and checked to be virtual tables of the right module (a small lexer
 * reads the module's name from the table's CREATE statement). */
#include "ext_hybrid.h"
#include <string.h>

/* ---------- statements, kept between calls ---------- */

/* A prepared statement for sql (sqlite3_malloc'd, taken): a kept one that nobody is stepping,
 * else a new one, kept in a slot whose statement is idle. *owned: the caller finalizes it
 * (every slot busy, which only a call nested inside one of these statements could cause). */
int hy_stmt_get(hybrid_vtab *v, char *sql, sqlite3_stmt **out, int *owned) {
    *out = NULL;
    *owned = 0;
    if (!sql) return SQLITE_NOMEM;
    for (int i = 0; i < HY_N_CACHED; i++)
        if (v->cache[i].sql && strcmp(v->cache[i].sql, sql) == 0 && !sqlite3_stmt_busy(v->cache[i].stmt)) {
            sqlite3_free(sql);
            *out = v->cache[i].stmt;
            return SQLITE_OK;
        }
    int rc = sqlite3_prepare_v3(v->db, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_free(sql);
        return rc == SQLITE_NOMEM ? rc : (hy_fail(v, "%s", sqlite3_errmsg(v->db)), rc);
    }
    for (int tries = 0; tries < HY_N_CACHED; tries++) {
        cached_stmt *slot = &v->cache[v->next];
        v->next = (v->next + 1) % HY_N_CACHED;
        if (slot->stmt && sqlite3_stmt_busy(slot->stmt)) continue;
        sqlite3_finalize(slot->stmt);
        sqlite3_free(slot->sql);
        slot->sql = sql;
        slot->stmt = *out;
        return SQLITE_OK;
    }
    sqlite3_free(sql);
    *owned = 1;
    return SQLITE_OK;
}

void hy_stmt_done(sqlite3_stmt *s, int owned) {
    if (owned) {
        sqlite3_finalize(s);
    } else {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
    }
}

/* Steps s once: SQLITE_ROW, SQLITE_DONE, or an error code with the statement's message. */
int hy_stmt_step(hybrid_vtab *v, sqlite3_stmt *s) {
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE && rc != SQLITE_NOMEM) hy_fail(v, "%s", sqlite3_errmsg(v->db));
    return rc;
}

/* ---------- the tables ---------- */

/* Skips spaces and SQL comments. */
static const char *skip_space(const char *p) {
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') p++;
        if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else {
            return p;
        }
    }
}

/* The SQL token at p (a word, or a quoted or bracketed name): its text without the quotes in
 * *tok, *len; returns the position after it, or NULL when there is none. */
static const char *next_token(const char *p, const char **tok, size_t *len) {
    p = skip_space(p);
    if (*p == '"' || *p == '\'' || *p == '`' || *p == '[') {
        char close = *p == '[' ? ']' : *p;
        const char *q = p + 1;
        while (*q && !(*q == close && (close == ']' || q[1] != close))) q += *q == close ? 2 : 1;
        if (!*q) return NULL;
        *tok = p + 1;
        *len = (size_t)(q - p - 1);
        return q + 1;
    }
    const char *q = p;
    while (*q == '_' || *q == '$' || (*q >= '0' && *q <= '9') || ((*q | 0x20) >= 'a' && (*q | 0x20) <= 'z') ||
           (unsigned char)*q >= 0x80)
        q++;
    if (q == p) return NULL;
    *tok = p;
    *len = (size_t)(q - p);
    return q;
}

static int token_is(const char *tok, size_t len, const char *word) {
    return len == strlen(word) && sqlite3_strnicmp(tok, word, (int)len) == 0;
}

/* The module of a virtual table from its statement as sqlite_schema keeps it:
 * CREATE VIRTUAL TABLE <name> USING <module>[(<arguments>)]. */
static int module_of(const char *sql, const char **mod, size_t *len) {
    static const char *const words[] = {"CREATE", "VIRTUAL", "TABLE", NULL, "USING"};
    const char *p = sql, *tok;
    size_t n;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!(p = next_token(p, &tok, &n)) || (words[i] && !token_is(tok, n, words[i]))) return 0;
    return next_token(p, mod, len) != NULL;
}

/* Where SQLite would find an unqualified table name (temp, main, then attached databases in
 * order), or the name in one schema (?2). */
static const char FIND_TABLE[] =
    "SELECT t.schema, t.type FROM pragma_table_list AS t JOIN pragma_database_list AS d ON d.name = t.schema"
    " WHERE t.name = ?1 COLLATE NOCASE AND (?2 IS NULL OR t.schema = ?2 COLLATE NOCASE)"
    " ORDER BY d.seq <> 1, d.seq LIMIT 1";

/* Looks name up (in schema, when not NULL): *found, and t->schema, *type (sqlite3_malloc'd). */
static int lookup(hybrid_vtab *v, const char *name, int name_len, const char *schema, int schema_len, int *found,
                  table_ref *t, char **type) {
    sqlite3_stmt *s;
    int owned, rc = hy_stmt_get(v, sqlite3_mprintf("%s", FIND_TABLE), &s, &owned);
    if (rc != SQLITE_OK) return rc;
    sqlite3_bind_text(s, 1, name, name_len, SQLITE_STATIC);
    if (schema) sqlite3_bind_text(s, 2, schema, schema_len, SQLITE_STATIC);
    rc = hy_stmt_step(v, s);
    *found = rc == SQLITE_ROW;
    if (*found) {
        t->schema = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(s, 0));
        t->name = sqlite3_mprintf("%.*s", name_len, name);
        *type = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(s, 1));
        rc = t->schema && t->name && *type ? SQLITE_OK : SQLITE_NOMEM;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    hy_stmt_done(s, owned);
    return rc;
}

void hy_table_free(table_ref *t) {
    sqlite3_free(t->schema);
    sqlite3_free(t->name);
    t->schema = t->name = NULL;
}

static const char *kind_of(const char *type) {
    if (strcmp(type, "table") == 0) return "an ordinary table";
    if (strcmp(type, "view") == 0) return "a view";
    if (strcmp(type, "shadow") == 0) return "a shadow table of a virtual table";
    return type;
}

/* The table that argument `arg` names (as SQLite finds an unqualified name, else as
 * schema.table), which must be a virtual table of `module`; `role` ("index") and `kind`
 * ("an embed_index table") name it in errors. */
int hy_find_table(hybrid_vtab *v, const char *arg, const char *role, const char *kind, const char *module,
                  table_ref *t) {
    int found, rc;
    char *type = NULL;
    const char *dot = strchr(arg, '.');
    rc = lookup(v, arg, (int)strlen(arg), NULL, 0, &found, t, &type);
    if (rc == SQLITE_OK && !found && dot)
        rc = lookup(v, dot + 1, (int)strlen(dot + 1), arg, (int)(dot - arg), &found, t, &type);
    if (rc == SQLITE_OK && !found) rc = hy_fail(v, "the %s \"%s\" does not exist", role, arg);
    if (rc == SQLITE_OK && strcmp(type, "virtual") != 0)
        rc = hy_fail(v, "\"%s\" is not %s: it is %s", arg, kind, kind_of(type));
    sqlite3_free(type);
    if (rc != SQLITE_OK) {
        hy_table_free(t);
        return rc;
    }
    sqlite3_stmt *s;
    int owned;
    rc = hy_stmt_get(v,
                     sqlite3_mprintf("SELECT sql FROM \"%w\".sqlite_schema WHERE type = 'table' AND name = ?1 "
                                     "COLLATE NOCASE",
                                     t->schema),
                     &s, &owned);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(s, 1, t->name, -1, SQLITE_STATIC);
        rc = hy_stmt_step(v, s);
        const char *sql = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL, *mod;
        size_t len;
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
            if (!sql || !module_of(sql, &mod, &len))
                rc = hy_fail(v, "\"%s\" is not %s: it is a virtual table of an unknown kind", arg, kind);
            else if (!token_is(mod, len, module))
                rc = hy_fail(v, "\"%s\" is not %s: it is a virtual table using %.*s", arg, kind, (int)len, mod);
            else rc = SQLITE_OK;
        }
        hy_stmt_done(s, owned);
    }
    if (rc != SQLITE_OK) hy_table_free(t);
    return rc;
}
