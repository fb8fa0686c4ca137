/* A model defined with embed_define (architecture "defined"): a vocabulary, its embedding rows
 * and position rows (given, or the sinusoidal formula). Text is split on whitespace; there are
 * no layers, so the input embedding (token row + position row) is also the output. Immutable
 * once made. */
#ifndef EMBED_DEFINED_MODEL_H
#define EMBED_DEFINED_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "base/emb_common.h"
#include "sqlite-embed/model_dims.h"
#include "sqlite-embed/token.h"

/* Limits of a definition, checked before any table is allocated. */
#define EMB_DEFINED_MAX_VOCAB 1000000
#define EMB_DEFINED_MAX_DIMS 4096
#define EMB_DEFINED_MAX_POSITIONS 8192
#define EMB_DEFINED_MAX_BYTES (256u << 20) /* (vocabulary + positions) x dimensions x 4 */

typedef struct emb_defined_model emb_defined_model;

/* Parses {"vocab": [...], "embeddings": [[...]...], "positions": [[...]...] | "sinusoidal"
 * [, "max_positions": N]}, within the limits above. */
int emb_defined_model_from_json(const char *json, size_t len, emb_defined_model **out, char err[EMB_ERR_LEN]);
void emb_defined_model_free(emb_defined_model *m);
int32_t emb_defined_lookup(const emb_defined_model *m, const char *word, size_t len);
/* Splits text on whitespace into enc, one token (and one word) per word; a word outside the
 * vocabulary, more words than positions, or invalid UTF-8 is an error. */
int emb_defined_tokenize(const emb_defined_model *m, const char *text, size_t len, emb_encoding *enc,
                         char err[EMB_ERR_LEN]);
uint64_t emb_defined_fingerprint(const emb_defined_model *m);

/* hidden (the definition's dimensions), vocab_size, max_positions (rows given, or 512 for
 * "sinusoidal" unless "max_positions" says); no layers. */
const emb_model_dims *emb_defined_dims(const emb_defined_model *m);
int emb_defined_sinusoidal(const emb_defined_model *m); /* positions "sinusoidal" */
/* Rows and words by id or position; NULL when out of range. */
const float *emb_defined_token_row(const emb_defined_model *m, int32_t id);
const float *emb_defined_position_row(const emb_defined_model *m, int32_t pos);
const char *emb_defined_token(const emb_defined_model *m, int32_t id, size_t *len);

#endif
