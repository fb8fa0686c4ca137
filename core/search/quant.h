/* Compact codes of float32 vectors (f16, int8, sign bits) and fast approximate scores over
 * arrays of them, for a quantized index: scan the codes, keep the best candidates, rescore
 * those exactly elsewhere.
 *
 * Records (one vector each, no alignment needed):
 *   f32   4d bytes, little-endian float32
 *   f16   2d bytes, IEEE binary16 little-endian, rounded to nearest even; a finite value beyond
 *         the f16 range saturates to +-65504 (an infinite code would turn scores into NaN)
 *   int8  d signed codes in [-127, 127], then the float32 scale (little-endian, unaligned):
 *         scale = max|x_i| / 127, code_i = round(x_i / scale), halves away from zero; a zero
 *         vector has codes 0 and scale 0. Decoded: x^_i = code_i * scale (float32).
 *   bit   ceil(d/8) bytes, bit i (LSB first) of byte i/8 set when x_i > 0: sqlite-vec's
 *         vec_quantize_binary layout; bits past d are 0. Decoded: +1 / -1.
 * Vectors are finite (the SQL layer rejects NaN and infinity).
 *
 * Scores (lower = nearer; one query's scores are comparable across rows), with x^ the decoded
 * row and q the query (for int8, q^ = the query quantized the same way as a row):
 *   cosine  -cos(q, x^)          (int8: -cos(q^, x^); 0 when either is a zero vector)
 *   l2      |x^|^2 - 2 q.x^      (int8: q^; the squared distance less the query's |q|^2)
 *   dot     -q.x^                (int8: q^)
 *   l1      sum |q_i - x^_i|     (float query for every storage; a slow scalar loop)
 *   bit     the Hamming distance between the sign bits of q and the record, for every metric.
 * int8: isum = sum qcode_i * code_i is an exact int32 (d up to 133,000), then
 * q^.x^ = (float)isum * scale * qscale, so int8 and bit scores are bitwise the same on every
 * kernel set; the float sums of f16 / f32 rows differ between sets only by rounding. cosine
 * and l2 use the per-row value emb_code_aux (1/|x^| and |x^|^2), kept beside the records;
 * pass NULL aux and it is computed per row (slowly).
 *
 * Kernels (quant_kernels.c): AVX-512 (F, BW, VL, VNNI, VPOPCNTDQ: Ice Lake, Zen 4 and later;
 * int8 by vpdpbusd on code ^ 0x80, bit by vpopcntq), AVX2 (with FMA, F16C, POPCNT; int8 by
 * vpsignb + vpmaddubsw + vpmaddwd, bit by popcnt), and scalar C, chosen per query from the CPU.
 * At 1,000,000 x 384 a scan reads its records at about the speed of a plain sum of the same
 * bytes (bench/bench_quant_kernels.c). */
#ifndef EMBED_QUANT_H
#define EMBED_QUANT_H
#include "sqlite-embed/vec.h"
#include <stddef.h>
#include <stdint.h>

typedef enum { EMB_STORAGE_F32, EMB_STORAGE_F16, EMB_STORAGE_INT8, EMB_STORAGE_BIT } emb_storage;

/* "f32", "f16", "int8", "bit" (any case); -1 when unknown (out untouched). */
int emb_storage_parse(const char *name, emb_storage *out);
const char *emb_storage_name(emb_storage s);

/* Bytes of one vector's record (see above). */
size_t emb_code_bytes(emb_storage s, size_t d);
/* x (d floats) into one record of emb_code_bytes(s, d) bytes. */
void emb_encode(emb_storage s, const float *x, size_t d, void *record);
/* Whether n records read from elsewhere (a file) hold only finite values: f32 and f16
 * values, int8 scales (also >= 0); bit records always do. */
int emb_codes_finite(emb_storage s, const void *records, size_t n, size_t d);
/* A record back to d floats: f16 exactly; int8 code * scale; bit +1 / -1. */
void emb_decode(emb_storage s, const void *record, size_t d, float *out);
/* Whether scores under (s, m) read per-row values: cosine and l2, except for bit. */
int emb_code_needs_aux(emb_storage s, emb_metric m);
/* The per-row value of a record: cosine 1/|x^| (0 for a zero vector), l2 |x^|^2, otherwise
 * (and for bit) 0. */
float emb_code_aux(emb_storage s, emb_metric m, const void *record, size_t d);

/* A query prepared for scoring records of storage s under metric m. Read-only once made, so
 * one query may be scored from several threads. */
typedef struct {
    emb_storage storage;
    emb_metric metric;
    size_t d, bytes; /* dimensions; bytes of a record */
    int path; /* kernel set (internal: quant_kernels.h) */
    float factor; /* cosine: 1/|q| (int8: qscale/|q^|); int8 l2 / dot: qscale */
    int32_t qsum; /* int8: sum of the query's codes */
    void *mem; /* owned, 64-byte aligned: the query in the forms the kernels read */
    const float *qf; /* d floats, zero-padded to a multiple of 16 */
    const int8_t *q8; /* int8: codes, zero-padded to a multiple of 64 */
    const uint8_t *qabs; /* int8: |codes|, padded likewise */
    const uint8_t *qbits; /* bit: sign bits, padded to a multiple of 64 bytes */
} emb_code_query;

/* 0, or -1 when out of memory. */
int emb_code_query_init(emb_code_query *q, emb_storage s, emb_metric m, const float *x, size_t d);
void emb_code_query_free(emb_code_query *q);

/* The scores of the m records at positions rows[0 .. m-1] (rows NULL: positions 0 .. m-1) of
 * `records` (record i at records + i * q->bytes) into score[0 .. m-1]. aux: the per-row values
 * emb_code_aux, indexed by position (NULL: computed here when needed). */
void emb_code_scores(const emb_code_query *q, const void *records, const float *aux, const size_t *rows, size_t m,
                     float *score);

/* Memory reused between searches. Zero-initialise; free with emb_code_scratch_free. */
typedef struct {
    void *mem;
    size_t cap;
} emb_code_scratch;
void emb_code_scratch_free(emb_code_scratch *s);

/* The at most `keep` positions with the lowest scores among those emb_code_scores would score,
 * into out, sorted by score then position (a NaN score counts as +infinity); returns how many
 * (min(keep, m)), or (size_t)-1 when out of memory. The selection runs fused with the scan, a
 * block of rows at a time. More than 4 MB of records are split between up to `threads`
 * threads (<= 0: the online CPUs; at most 64, and at least 1 MB each); the result does not
 * depend on the number of threads. */
size_t emb_code_candidates(const emb_code_query *q, const void *records, const float *aux, const size_t *rows,
                           size_t m, size_t keep, int threads, emb_code_scratch *scratch, size_t *out);

/* The kernel set new queries (and f16 conversions) use: "avx512", "avx2" or "scalar". */
const char *emb_quant_path(void);
/* For tests and benchmarks: use the named kernel set from now on (NULL: the best this CPU
 * has). Returns -1, changing nothing, for an unknown name or one this CPU lacks. Not
 * thread-safe: call it before any query is made. */
int emb_quant_force_path(const char *name);

#endif
