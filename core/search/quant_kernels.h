/* The inner loops of core/quant: per kernel set (scalar C, AVX2, AVX-512), the raw quantity
 * of a block of rows (an int8 code dot product, an f16 / f32 float dot product, a Hamming
 * distance) and f16 conversions. quant.c turns the raw quantities into scores. Queries are
 * zero-padded (see emb_code_query) so that the last chunk of a row can be read whole from the
 * query and masked from the row. */
#ifndef EMBED_QUANT_KERNELS_H
#define EMBED_QUANT_KERNELS_H
#include <stddef.h>
#include <stdint.h>

typedef enum { EMB_QPATH_SCALAR, EMB_QPATH_AVX2, EMB_QPATH_AVX512 } emb_qpath;

/* Whether this CPU runs kernel set p. */
int emb_quant_kernels_path_supported(emb_qpath p);
/* The best set this CPU runs. */
emb_qpath emb_quant_kernels_best_path(void);

/* The rows of a block: record (rows ? rows[lo + j] : lo + j) for j < n, each `bytes` long. */
typedef struct {
    const unsigned char *records;
    size_t bytes;
    const size_t *rows;
    size_t lo, n;
} emb_qblock;

static inline size_t emb_qblock_pos(const emb_qblock *b, size_t j) {
    return b->rows ? b->rows[b->lo + j] : b->lo + j;
}

/* int8: out[j] = (float)isum * scale of row j, isum = sum_i q8[i] * code_i exactly (the same
 * on every set). q8, qabs (|q8|): padded to 64; qsum: sum of q8. */
void emb_quant_kernels_int8_dots(emb_qpath p, const int8_t *q8, const uint8_t *qabs, int32_t qsum, size_t d,
                                 const emb_qblock *b, float *out);
/* f16 / f32 rows: out[j] = sum_i qf[i] * x_i (float; qf padded to 16). */
void emb_quant_kernels_f16_dots(emb_qpath p, const float *qf, size_t d, const emb_qblock *b, float *out);
void emb_quant_kernels_f32_dots(emb_qpath p, const float *qf, size_t d, const emb_qblock *b, float *out);
/* bit rows of d bits: out[j] = popcount(qbits ^ row) over the d bits (qbits padded to 64). */
void emb_quant_kernels_hamming(emb_qpath p, const uint8_t *qbits, size_t d, const emb_qblock *b, float *out);

/* n floats to little-endian f16 (nearest even, saturating at +-65504), and back (exact). */
void emb_quant_kernels_f32_to_f16(emb_qpath p, const float *x, size_t n, void *out);
void emb_quant_kernels_f16_to_f32(emb_qpath p, const void *in, size_t n, float *out);

#endif
