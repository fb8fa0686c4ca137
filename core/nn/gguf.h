/* GGUF reader (versions 2 and 3, little-endian), as llama.cpp's gguf.cpp lays the file out:
 * "GGUF", version, tensor count, key-value count; the key-value pairs (a key string, a value
 * type, the value: numbers, bool, strings, arrays of one type); the tensor infos (name, up to 4
 * dimensions, ggml type, offset); the data section at the next multiple of general.alignment
 * (default 32). Every count, length, type, dimension and offset is checked against the file
 * before use: a hostile file is an error naming itself, never a read out of bounds. Values and
 * tensors point into the image (mapped, or read into memory). */
#ifndef EMBED_GGUF_H
#define EMBED_GGUF_H
#include <stddef.h>
#include <stdint.h>
#include "base/emb_common.h"

enum {
    EMB_GGUF_U8,
    EMB_GGUF_I8,
    EMB_GGUF_U16,
    EMB_GGUF_I16,
    EMB_GGUF_U32,
    EMB_GGUF_I32,
    EMB_GGUF_F32,
    EMB_GGUF_BOOL,
    EMB_GGUF_STRING,
    EMB_GGUF_ARRAY,
    EMB_GGUF_U64,
    EMB_GGUF_I64,
    EMB_GGUF_F64,
    EMB_GGUF_N_TYPES
};

/* ggml's tensor types that the reader knows the block layout of (ggml.h's numbering) */
enum {
    EMB_GGML_F32 = 0,
    EMB_GGML_F16 = 1,
    EMB_GGML_Q4_0 = 2,
    EMB_GGML_Q4_1 = 3,
    EMB_GGML_Q5_0 = 6,
    EMB_GGML_Q5_1 = 7,
    EMB_GGML_Q8_0 = 8,
    EMB_GGML_Q8_1 = 9,
    EMB_GGML_Q2_K = 10,
    EMB_GGML_Q3_K = 11,
    EMB_GGML_Q4_K = 12,
    EMB_GGML_Q5_K = 13,
    EMB_GGML_Q6_K = 14,
    EMB_GGML_Q8_K = 15,
    EMB_GGML_IQ2_XXS = 16,
    EMB_GGML_IQ2_XS = 17,
    EMB_GGML_IQ3_XXS = 18,
    EMB_GGML_IQ1_S = 19,
    EMB_GGML_IQ4_NL = 20,
    EMB_GGML_IQ3_S = 21,
    EMB_GGML_IQ2_S = 22,
    EMB_GGML_IQ4_XS = 23,
    EMB_GGML_I8 = 24,
    EMB_GGML_I16 = 25,
    EMB_GGML_I32 = 26,
    EMB_GGML_I64 = 27,
    EMB_GGML_F64 = 28,
    EMB_GGML_IQ1_M = 29,
    EMB_GGML_BF16 = 30,
    EMB_GGML_TQ1_0 = 34,
    EMB_GGML_TQ2_0 = 35,
    EMB_GGML_MXFP4 = 39
};

#define EMB_GGUF_MAX_DIMS 4

typedef struct {
    const char *key; /* not NUL-terminated: key_len bytes */
    size_t key_len;
    uint32_t type; /* EMB_GGUF_* */
    uint32_t elem_type; /* arrays: the elements' type (never ARRAY) */
    uint64_t n; /* arrays: element count; 1 otherwise */
    const unsigned char *value; /* the value's bytes (an array's first element; a string's length) */
} emb_gguf_kv;

typedef struct {
    const char *name; /* not NUL-terminated: name_len bytes */
    size_t name_len;
    uint32_t n_dims;
    int64_t ne[EMB_GGUF_MAX_DIMS]; /* ggml's order: ne[0] is the row length; 1 past n_dims */
    uint32_t type; /* EMB_GGML_* */
    uint64_t offset; /* in the data section */
    uint64_t bytes;
    const unsigned char *data;
} emb_gguf_tensor;

typedef struct {
    uint32_t version;
    uint32_t alignment;
    emb_gguf_kv *kv;
    uint64_t n_kv;
    emb_gguf_tensor *tensors;
    uint64_t n_tensors;
    const unsigned char *data; /* the data section */
    uint64_t data_len;
} emb_gguf;

/* Parses and checks a whole GGUF image of size bytes; label (the file's name) starts every
 * message. On success out points into buf; free with emb_gguf_free. */
int emb_gguf_parse(const void *buf, size_t size, const char *label, emb_gguf *out, char err[EMB_ERR_LEN]);
void emb_gguf_free(emb_gguf *g);

/* The pair of key (NUL-terminated), or NULL. */
const emb_gguf_kv *emb_gguf_find(const emb_gguf *g, const char *key);
/* A scalar pair's value as an integer: any integer type or bool, in range; -1 when the pair is
 * not one or does not fit. */
int emb_gguf_kv_int(const emb_gguf_kv *kv, int64_t *out);
/* A scalar float (F32, F64) or integer value as a double; -1 otherwise. */
int emb_gguf_kv_number(const emb_gguf_kv *kv, double *out);
/* A string value: its bytes (not NUL-terminated) and length; -1 otherwise. */
int emb_gguf_kv_string(const emb_gguf_kv *kv, const char **s, size_t *len);
/* The strings of a string array in order: *cursor 0 for the first, kept between calls; at most
 * kv->n calls. -1 when kv is not a string array. */
int emb_gguf_array_next_string(const emb_gguf_kv *kv, size_t *cursor, const char **s, size_t *len);
/* The tensor of name (NUL-terminated), or NULL. */
const emb_gguf_tensor *emb_gguf_find_tensor(const emb_gguf *g, const char *name);
/* "F32", "Q8_0", ... for a type the reader knows; NULL otherwise. */
const char *emb_ggml_type_name(uint32_t type);
/* The type's block: values per block and bytes per block; 0 for a type not known. */
int emb_ggml_type_block(uint32_t type, uint32_t *values, uint32_t *bytes);
#endif
