/* The sentence-transformers Dense layers a GGUF file may carry (EmbeddingGemma: dense_2, dense_3):
 * gguf_dense.c. */
#ifndef EMBED_GGUF_DENSE_H
#define EMBED_GGUF_DENSE_H
#include "model/dense.h"
#include "nn/gguf.h"

/* The Dense layers of a file of architecture arch ("gemma-embedding"; others have none) into
 * dense[0..*n_dense), the first taking hidden values. An EmbeddingGemma file without them is
 * refused unless allow_missing. Those loaded (*n_dense) are the caller's to free, also on an
 * error, which names label (the file) and the tensor or key. */
int emb_gguf_dense_load(const emb_gguf *g, const char *arch, const char *label, int hidden, int allow_missing,
                        emb_dense dense[2], int *n_dense, char err[EMB_ERR_LEN]);
#endif
