/* The process-wide model registry: names to shared, reference-counted models.
 * Every connection of the process sees the same models. */
#ifndef EMBED_EXT_REGISTRY_H
#define EMBED_EXT_REGISTRY_H
#include "ext_util.h"
#include "model.h"

/* Adds m under its name, taking a reference. Returns SQLITE_OK, or SQLITE_CONSTRAINT when
 * the name is taken (then *existing is the model already there, retained). */
int ext_registry_put(emb_model *m, emb_model **existing);
/* The model of that name, retained, or NULL. */
emb_model *ext_registry_get(const char *name);
/* Forgets the name; the model is freed once no statement holds it. Returns 1 if it was there. */
int ext_registry_remove(const char *name);
/* A retained snapshot of all models, in name order; release each and sqlite3_free the array. */
int ext_registry_list(emb_model ***out, int *n);
/* Reads a model-name argument and returns the model, retained. NULL with no error set when
 * the argument is NULL (the caller returns NULL), NULL with an error set otherwise. */
emb_model *ext_model_arg(sqlite3_context *ctx, sqlite3_value *val, const char *fn);

#endif
