/* The process-wide model registry: names to shared, reference-counted models.
 * Every connection of the process sees the same models. */
#ifndef EMBED_EXT_REGISTRY_H
#define EMBED_EXT_REGISTRY_H
#include "ext_util.h"
#include "sqlite-embed/model.h"

/* Adds m under its name, taking a reference. Returns SQLITE_OK, or SQLITE_CONSTRAINT when
 * the name is taken (then *existing is the model already there, retained). */
int ext_registry_put(emb_model *m, emb_model **existing);
/* The model of that name, retained, or NULL. */
emb_model *ext_registry_get(const char *name);
/* Forgets the name; the model is freed once no statement holds it. Returns 1 if it was there. */
int ext_registry_remove(const char *name);
/* A retained snapshot of all models, in name order; release each and sqlite3_free the array. */
int ext_registry_list(emb_model ***out, int *n);
/* Looks up a model name given as len bytes: the model, retained, or NULL with *err a
 * sqlite3_malloc'd message (no function name; NULL when out of memory). A name that is not
 * valid UTF-8 or contains a NUL is an error of its own, not a miss. */
emb_model *ext_model_named(const char *name, int len, char **err);
/* Reads the model-name argument argv[arg] and returns the model, retained. NULL with no
 * error set when the argument is NULL (the caller returns NULL), NULL with an error set
 * otherwise. The first call of a statement looks the name up; the model is then kept with
 * the argument (sqlite3_set_auxdata), so a statement finishes with the model it started
 * with even if embed_unload runs meanwhile. */
emb_model *ext_model_arg(sqlite3_context *ctx, sqlite3_value **argv, int arg, const char *fn);
/* A table-valued function's model argument: *held is kept while the name stays the same (a
 * statement joining the function to many rows finishes with the model it started with, even if
 * embed_unload runs meanwhile), else released and looked up. SQLITE_OK, or SQLITE_ERROR with
 * *err a sqlite3_malloc'd message (no function name) / SQLITE_NOMEM. */
int ext_model_keep(emb_model **held, sqlite3_value *name, char **err);

#endif
