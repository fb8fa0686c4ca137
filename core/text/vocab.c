#include "text/vocab.h"

#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

typedef struct {
    uint32_t tag; /* high 32 bits of the hash, 0 = empty slot (real tags are forced nonzero) */
    uint32_t key; /* index into keys[] */
} slot;

typedef struct {
    uint32_t off, len; /* into pool */
    int32_t id;
} key_entry;

struct emb_vocab {
    char *pool;
    size_t pool_len, pool_cap;
    key_entry *keys;
    size_t nkeys, keys_cap;
    slot *slots;
    size_t mask; /* capacity - 1 */
    int32_t *id_key; /* id -> key index (-1 none) */
    size_t id_cap;
    int32_t size; /* max id + 1 */
};

emb_vocab *emb_vocab_new(void) {
    emb_vocab *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->mask = 63;
    v->slots = calloc(64, sizeof *v->slots);
    if (!v->slots) {
        free(v);
        return NULL;
    }
    return v;
}

void emb_vocab_free(emb_vocab *v) {
    if (!v) return;
    free(v->pool);
    free(v->keys);
    free(v->slots);
    free(v->id_key);
    free(v);
}

static inline uint64_t vhash(const char *s, size_t len) { return XXH3_64bits(s, len); }
static inline uint32_t vtag(uint64_t h) {
    uint32_t t = (uint32_t)(h >> 32);
    return t ? t : 1;
}

static int grow_slots(emb_vocab *v) {
    size_t cap = (v->mask + 1) * 2;
    slot *ns = calloc(cap, sizeof *ns);
    if (!ns) return -1;
    for (size_t k = 0; k < v->nkeys; k++) {
        const key_entry *e = &v->keys[k];
        uint64_t h = vhash(v->pool + e->off, e->len);
        size_t i = (size_t)h & (cap - 1);
        while (ns[i].tag) i = (i + 1) & (cap - 1);
        ns[i].tag = vtag(h);
        ns[i].key = (uint32_t)k;
    }
    free(v->slots);
    v->slots = ns;
    v->mask = cap - 1;
    return 0;
}

static long find_key(const emb_vocab *v, const char *s, size_t len, uint64_t h) {
    uint32_t tag = vtag(h);
    size_t i = (size_t)h & v->mask;
    for (;;) {
        const slot *sl = &v->slots[i];
        if (!sl->tag) return -1;
        if (sl->tag == tag) {
            const key_entry *e = &v->keys[sl->key];
            if (e->len == len && memcmp(v->pool + e->off, s, len) == 0) return (long)sl->key;
        }
        i = (i + 1) & v->mask;
    }
}

int emb_vocab_add(emb_vocab *v, const char *s, size_t len, int32_t id) {
    if (id < 0 || id == INT32_MAX || len > 0xffffffu) return -1; /* size = id + 1 must fit */
    uint64_t h = vhash(s, len);
    long k = find_key(v, s, len, h);
    if (k < 0) {
        if ((v->nkeys + 1) * 2 > v->mask + 1 && grow_slots(v)) return -1;
        if (v->nkeys == v->keys_cap) {
            size_t nc = v->keys_cap ? v->keys_cap * 2 : 1024;
            key_entry *nk = realloc(v->keys, nc * sizeof *nk);
            if (!nk) return -1;
            v->keys = nk;
            v->keys_cap = nc;
        }
        if (v->pool_len + len + 1 > v->pool_cap) {
            size_t nc = v->pool_cap ? v->pool_cap * 2 : 16384;
            while (nc < v->pool_len + len + 1) nc *= 2;
            if (nc > 0xffffffffu) return -1;
            char *np = realloc(v->pool, nc);
            if (!np) return -1;
            v->pool = np;
            v->pool_cap = nc;
        }
        memcpy(v->pool + v->pool_len, s, len);
        v->pool[v->pool_len + len] = 0;
        k = (long)v->nkeys++;
        v->keys[k] = (key_entry){(uint32_t)v->pool_len, (uint32_t)len, id};
        v->pool_len += len + 1;
        size_t i = (size_t)h & v->mask;
        while (v->slots[i].tag) i = (i + 1) & v->mask;
        v->slots[i].tag = vtag(h);
        v->slots[i].key = (uint32_t)k;
    } else {
        v->keys[k].id = id;
    }
    if ((size_t)id >= v->id_cap) {
        size_t nc = v->id_cap ? v->id_cap : 1024;
        while (nc <= (size_t)id) nc *= 2;
        int32_t *ni = realloc(v->id_key, nc * sizeof *ni);
        if (!ni) return -1;
        for (size_t j = v->id_cap; j < nc; j++) ni[j] = -1;
        v->id_key = ni;
        v->id_cap = nc;
    }
    v->id_key[id] = (int32_t)k;
    if (id + 1 > v->size) v->size = id + 1;
    return 0;
}

int32_t emb_vocab_find(const emb_vocab *v, const char *s, size_t len) {
    long k = find_key(v, s, len, vhash(s, len));
    return k < 0 ? -1 : v->keys[k].id;
}

const char *emb_vocab_token(const emb_vocab *v, int32_t id, size_t *len) {
    if (id < 0 || id >= v->size || v->id_key[id] < 0) return NULL;
    const key_entry *e = &v->keys[v->id_key[id]];
    if (len) *len = e->len;
    return v->pool + e->off;
}

int32_t emb_vocab_size(const emb_vocab *v) { return v->size; }
