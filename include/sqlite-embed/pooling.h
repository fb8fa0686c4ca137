/* Public API of libembedcore (installed as <sqlite-embed/pooling.h>).
 * Sentence pooling over a sequence's hidden states (L2 normalisation is emb_vec_normalize in vec.h). */
#ifndef EMBED_POOLING_H
#define EMBED_POOLING_H
typedef enum { EMB_POOL_MEAN, EMB_POOL_CLS, EMB_POOL_MAX } emb_pool_mode;

/* hidden: T rows of H floats; pools over the first len rows (the real tokens).
 * len <= 0 gives a zero vector. */
void emb_pool(const float *hidden, int T, int H, int len, emb_pool_mode mode, float *out);
const char *emb_pool_mode_name(emb_pool_mode m); /* "mean" | "cls" | "max" */
int emb_pool_mode_parse(const char *s, emb_pool_mode *out); /* 0 if s is one of those names */
#endif
