/* Public API of libembedcore (installed as <sqlite-embed/model_dims.h>).
 * The sizes of a model, described once. An encoder owns its own (read from config.json), a
 * defined model its own (from its definition), a tokenizer-only model its vocabulary's; the
 * model's emb_model_info points at them. */
#ifndef EMBED_MODEL_DIMS_H
#define EMBED_MODEL_DIMS_H

typedef struct {
    int hidden; /* dimensions of every vector (0: a tokenizer-only model) */
    int layers; /* encoder layers (0: defined and tokenizer-only models) */
    int heads; /* attention heads per layer (0 without layers) */
    int intermediate; /* width of the feed-forward layers (0 without layers) */
    int vocab_size; /* rows of the token table; for a tokenizer-only model, its token ids */
    int max_positions; /* rows of the position table (0: a tokenizer-only model) */
    int type_vocab; /* rows of the token-type table (0: none, as in DistilBERT) */
} emb_model_dims;

#endif
