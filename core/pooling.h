/* Sentence pooling over a sequence's hidden states, and L2 normalisation. */
#ifndef EMBED_POOLING_H
#define EMBED_POOLING_H
typedef enum { EMB_POOL_MEAN, EMB_POOL_CLS, EMB_POOL_MAX } emb_pool_mode;

/* hidden: T rows of H floats; pools over the first len rows (the real tokens).
 * len <= 0 gives a zero vector. */
void emb_pool(const float *hidden, int T, int H, int len, emb_pool_mode mode, float *out);
/* v / max(||v||, 1e-12) like torch.nn.functional.normalize; an all-zero vector stays zero. */
void emb_l2_normalize(float *v, int n);
const char *emb_pool_mode_name(emb_pool_mode m); /* "mean" | "cls" | "max" */
int emb_pool_mode_parse(const char *s, emb_pool_mode *out); /* 0 if s is one of those names */
#endif
