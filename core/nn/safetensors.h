/* safetensors reader: the header is validated completely; the file is memory-mapped or read.
 *
 * Layout: 8-byte little-endian header length N, N bytes of JSON (an object mapping
 * tensor names to {"dtype", "shape", "data_offsets"}, plus an optional "__metadata__"
 * object), then the data section. Offsets are relative to the data section. */
#ifndef EMBED_SAFETENSORS_H
#define EMBED_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>
#include "base/emb_common.h"

#define EMB_SAFETENSORS_MAX_DIMS 8
#define EMB_SAFETENSORS_MAX_HEADER (100u << 20) /* same bound as the reference implementation */

typedef enum {
    EMB_DT_BOOL,
    EMB_DT_U8,
    EMB_DT_I8,
    EMB_DT_F8_E5M2,
    EMB_DT_F8_E4M3,
    EMB_DT_I16,
    EMB_DT_U16,
    EMB_DT_F16,
    EMB_DT_BF16,
    EMB_DT_I32,
    EMB_DT_U32,
    EMB_DT_F32,
    EMB_DT_F64,
    EMB_DT_I64,
    EMB_DT_U64,
    /* ggml's block types, from GGUF files only (never a safetensors dtype): nn/gguf_quant.h */
    EMB_DT_Q4_0,
    EMB_DT_Q4_1,
    EMB_DT_Q5_0,
    EMB_DT_Q5_1,
    EMB_DT_Q8_0,
    EMB_DT_Q4_K,
    EMB_DT_Q5_K,
    EMB_DT_Q6_K
} emb_dtype;

typedef struct {
    char *name;
    emb_dtype dtype;
    int ndim;
    int64_t shape[EMB_SAFETENSORS_MAX_DIMS];
    uint64_t begin, end; /* byte offsets into the data section */
    const unsigned char *data; /* begin of the tensor's bytes inside the buffer */
} emb_safetensors_tensor;

typedef struct {
    emb_safetensors_tensor *tensors; /* sorted by name */
    int n;
    uint64_t header_len;
    const unsigned char *data; /* the data section */
    uint64_t data_len;
} emb_safetensors_header;

/* Parse and validate a whole safetensors image held in memory (buf, size bytes).
 * name (may be NULL) prefixes error messages, e.g. the file name. On success
 * out->tensors point into buf; free with emb_safetensors_header_free. */
int emb_safetensors_parse(const void *buf, size_t size, const char *name, emb_safetensors_header *out,
                          char err[EMB_ERR_LEN]);
void emb_safetensors_header_free(emb_safetensors_header *h);
const emb_safetensors_tensor *emb_safetensors_header_find(const emb_safetensors_header *h, const char *name);

const char *emb_dtype_name(emb_dtype d);
/* Bytes per value; 0 for the block types (a block holds several values). */
size_t emb_dtype_size(emb_dtype d);

/* A safetensors file, memory-mapped (read-only, shared with the page cache: changing the file
 * in place changes or, when truncated, breaks the mapping) or read into private memory. */
typedef struct emb_safetensors {
    char *path; /* as given */
    const char *label; /* file name used in messages */
    void *map; /* the whole file: a mapping (mapped) or a malloc'd copy */
    size_t size;
    int mapped;
    emb_safetensors_header h;
} emb_safetensors;

/* Opens path: mapped when use_mmap, else read whole into private memory. Anything but a
 * regular file, and a Git LFS pointer, are errors naming the file. */
int emb_safetensors_open(const char *path, int use_mmap, emb_safetensors **out, char err[EMB_ERR_LEN]);
void emb_safetensors_close(emb_safetensors *sf);
/* Opens path as emb_safetensors_open does, without parsing it: h empty, for a file of another
 * layout whose reader fills h (nn/encoder_gguf.c). */
int emb_safetensors_open_raw(const char *path, int use_mmap, emb_safetensors **out, char err[EMB_ERR_LEN]);
/* Where [p, p + bytes) lies in sf's mapping: its whole pages dropped from this process's memory
 * (read again from the page cache if touched: the mapping is read-only), and 1; else 0 (a
 * private copy is left alone). For weights read once at load (hashed, packed), so that they do
 * not stay resident. */
int emb_safetensors_release(const emb_safetensors *sf, const void *p, size_t bytes);
const emb_safetensors_tensor *emb_safetensors_find(const emb_safetensors *sf, const char *name);

/* Writer (tests, benchmarks, tools): tensors laid out in the order given. misalign
 * (0..7) pads the header so that the data section starts at an offset = misalign mod 8,
 * to exercise unaligned data. */
typedef struct {
    const char *name;
    emb_dtype dtype;
    int ndim;
    int64_t shape[EMB_SAFETENSORS_MAX_DIMS];
    const void *data; /* product(shape) * dtype size bytes */
} emb_safetensors_write_tensor;
int emb_safetensors_write(const char *path, const emb_safetensors_write_tensor *t, int n, int misalign,
                          char err[EMB_ERR_LEN]);
#endif
