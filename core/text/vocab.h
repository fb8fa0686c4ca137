/* Vocabulary: token strings <-> ids. Open-addressing hash table (XXH3 hashes, power-of-two
 * capacity, at most half full), strings kept in one pool. Immutable once built; lookups are
 * thread-safe. */
#ifndef EMBED_VOCAB_H
#define EMBED_VOCAB_H
#include <stddef.h>
#include <stdint.h>

typedef struct emb_vocab emb_vocab;

emb_vocab *emb_vocab_new(void);
void emb_vocab_free(emb_vocab *v);
/* Adds key -> id (0 <= id < INT32_MAX). A key added twice keeps the later id (like a hash map insert).
 * 0 ok, nonzero out of memory / bad id. */
int emb_vocab_add(emb_vocab *v, const char *s, size_t len, int32_t id);
/* id of key, -1 if absent. */
int32_t emb_vocab_find(const emb_vocab *v, const char *s, size_t len);
/* The string last added with this id, NULL if none. */
const char *emb_vocab_token(const emb_vocab *v, int32_t id, size_t *len);
/* max id + 1 */
int32_t emb_vocab_size(const emb_vocab *v);
#endif
