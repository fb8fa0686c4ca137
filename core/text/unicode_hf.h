/* Character rules of Hugging Face tokenizers' BertNormalizer / BertPreTokenizer, emulated with
 * utf8proc plus a generated exception table (core/unicode_hf_table.c, from
 * tools/gen_unicode_table.py) for the ~600 code points where HF's older Unicode tables (and its
 * Unicode 16 lowercasing) differ from utf8proc 2.8.0. */
#ifndef EMBED_UNICODE_HF_H
#define EMBED_UNICODE_HF_H
#include <stddef.h>
#include <stdint.h>

enum {
    EMB_HF_REMOVED = 1, /* deleted by clean_text: NUL, U+FFFD, Cc/Cf/Co except \t \n \r */
    EMB_HF_WS = 2, /* Rust char::is_whitespace (clean_text maps it to ' ', pre-tokenizer splits) */
    EMB_HF_PUNCT = 4, /* isolated by the pre-tokenizer: ASCII punctuation or P* */
    EMB_HF_CJK = 8, /* padded by handle_chinese_chars */
    EMB_HF_STRIP_ID = 16, /* NFD + drop Mn leaves the character unchanged */
    EMB_HF_LOWER_ID = 32, /* to_lowercase leaves the character unchanged */
    EMB_HF_NONSTARTER = 64 /* its NFD (HF's tables) holds a mark of nonzero combining class */
};

#define EMB_HF_MAXMAP 8 /* longest output of emb_hf_strip / emb_hf_lower */

typedef struct {
    uint32_t cp;
    uint8_t n;
    uint32_t out[4];
} emb_hf_map;

/* Builds the BMP lookup table once (thread-safe, idempotent). emb_hf_flags calls it itself. */
void emb_hf_init(void);
/* The BMP flag table (built on first call): flags of cp < 65536 are table[cp]. */
const uint8_t *emb_hf_bmp_table(void);
/* Flags above for a code point (not a surrogate). */
unsigned emb_hf_flags(uint32_t cp);
/* HF strip_accents of one character: its NFD with nonspacing marks removed. Writes n <= 8
 * code points to out, returns n (0 when the character disappears). */
int emb_hf_strip(uint32_t cp, uint32_t out[EMB_HF_MAXMAP]);
/* HF lowercase (Rust char::to_lowercase, full mapping) of one character; returns n (1..3). */
int emb_hf_lower(uint32_t cp, uint32_t out[EMB_HF_MAXMAP]);

/* One character of HF's NFD of a code point: its canonical combining class (HF's Unicode 9.0
 * tables: 0 for marks assigned later) and whether strip_accents keeps it (not Mn for HF). */
typedef struct {
    uint32_t cp;
    uint8_t ccc;
    uint8_t keep;
} emb_hf_nfd_item;

/* HF's canonical decomposition of one code point (n <= 8 items, in canonical order). HF's NFD
 * then sorts every run of nonzero-class items across characters by class (stable). */
int emb_hf_nfd(uint32_t cp, emb_hf_nfd_item out[EMB_HF_MAXMAP]);

/* generated tables (unicode_hf_table.c); each ends with a 0x110000 sentinel */
extern const uint32_t emb_hf_flip_removed[], emb_hf_flip_punct[], emb_hf_flip_cjk[];
extern const size_t emb_hf_flip_removed_n, emb_hf_flip_punct_n, emb_hf_flip_cjk_n;
extern const emb_hf_map emb_hf_strip_exc[], emb_hf_lower_exc[];
extern const size_t emb_hf_strip_exc_n, emb_hf_lower_exc_n;
/* unicode_hf_ccc.c: nonzero class in utf8proc, 0 in HF (assigned after Unicode 9.0) */
extern const uint32_t emb_hf_ccc_zero[];
extern const size_t emb_hf_ccc_zero_n;
#endif
