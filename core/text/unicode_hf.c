#include "text/unicode_hf.h"

#include <pthread.h>
#include <utf8proc.h>

static int in_set(const uint32_t *a, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a[mid] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && a[lo] == cp;
}

static const emb_hf_map *find_map(const emb_hf_map *a, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && a[lo].cp == cp ? &a[lo] : NULL;
}

static int rule_removed(uint32_t cp) {
    if (cp == 0 || cp == 0xFFFD) return 1;
    if (cp == 9 || cp == 10 || cp == 13) return 0;
    int c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO;
}

static int rust_ws(uint32_t cp) {
    return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

static int rule_punct(uint32_t cp) {
    if (cp < 128)
        return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
               (cp >= 123 && cp <= 126);
    int c = utf8proc_category((utf8proc_int32_t)cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

static int rule_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

static int strip_raw(uint32_t cp, uint32_t out[EMB_HF_MAXMAP]) {
    const emb_hf_map *m = find_map(emb_hf_strip_exc, emb_hf_strip_exc_n, cp);
    if (m) {
        for (int i = 0; i < m->n; i++) out[i] = m->out[i];
        return m->n;
    }
    utf8proc_int32_t buf[16];
    int bc = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, buf, 16, UTF8PROC_DECOMPOSE, &bc);
    if (n <= 0 || n > 16) { /* cannot happen for valid code points; keep the character */
        out[0] = cp;
        return 1;
    }
    int k = 0;
    for (utf8proc_ssize_t i = 0; i < n && k < EMB_HF_MAXMAP; i++)
        if (utf8proc_category(buf[i]) != UTF8PROC_CATEGORY_MN) out[k++] = (uint32_t)buf[i];
    return k;
}

static uint8_t hf_ccc(uint32_t cp) {
    if (in_set(emb_hf_ccc_zero, emb_hf_ccc_zero_n, cp)) return 0;
    return (uint8_t)utf8proc_get_property((utf8proc_int32_t)cp)->combining_class;
}

/* A character HF's strip table lists is one HF does not decompose (it keeps it, or drops it
 * whole); any other decomposes as utf8proc says, each part kept unless it is Mn (its own strip
 * result: the parts are old characters, which the exception table covers too). */
static int nfd_raw(uint32_t cp, emb_hf_nfd_item out[EMB_HF_MAXMAP]) {
    const emb_hf_map *m = find_map(emb_hf_strip_exc, emb_hf_strip_exc_n, cp);
    if (m) {
        out[0] = (emb_hf_nfd_item){cp, hf_ccc(cp), (uint8_t)(m->n > 0)};
        return 1;
    }
    utf8proc_int32_t buf[16];
    int bc = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, buf, 16, UTF8PROC_DECOMPOSE, &bc);
    if (n <= 0 || n > EMB_HF_MAXMAP) { /* cannot happen for valid code points */
        out[0] = (emb_hf_nfd_item){cp, 0, 1};
        return 1;
    }
    for (utf8proc_ssize_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)buf[i];
        const emb_hf_map *mx = find_map(emb_hf_strip_exc, emb_hf_strip_exc_n, x);
        int keep = mx ? mx->n > 0 : utf8proc_category(buf[i]) != UTF8PROC_CATEGORY_MN;
        out[i] = (emb_hf_nfd_item){x, hf_ccc(x), (uint8_t)keep};
    }
    return (int)n;
}

static int lower_raw(uint32_t cp, uint32_t out[EMB_HF_MAXMAP]) {
    const emb_hf_map *m = find_map(emb_hf_lower_exc, emb_hf_lower_exc_n, cp);
    if (m) {
        for (int i = 0; i < m->n; i++) out[i] = m->out[i];
        return m->n;
    }
    out[0] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
    return 1;
}

static unsigned compute_flags(uint32_t cp) {
    unsigned f = 0;
    if (rule_removed(cp) ^ in_set(emb_hf_flip_removed, emb_hf_flip_removed_n, cp)) f |= EMB_HF_REMOVED;
    if (rust_ws(cp)) f |= EMB_HF_WS;
    if (rule_punct(cp) ^ in_set(emb_hf_flip_punct, emb_hf_flip_punct_n, cp)) f |= EMB_HF_PUNCT;
    if (rule_cjk(cp) ^ in_set(emb_hf_flip_cjk, emb_hf_flip_cjk_n, cp)) f |= EMB_HF_CJK;
    uint32_t o[EMB_HF_MAXMAP];
    if (strip_raw(cp, o) == 1 && o[0] == cp) f |= EMB_HF_STRIP_ID;
    if (lower_raw(cp, o) == 1 && o[0] == cp) f |= EMB_HF_LOWER_ID;
    emb_hf_nfd_item d[EMB_HF_MAXMAP];
    int nd = nfd_raw(cp, d);
    for (int i = 0; i < nd; i++)
        if (d[i].ccc) f |= EMB_HF_NONSTARTER;
    return f;
}

static uint8_t bmp[65536];
static pthread_once_t bmp_once = PTHREAD_ONCE_INIT;

static void build_bmp(void) {
    for (uint32_t cp = 0; cp < 65536; cp++)
        bmp[cp] = (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : (uint8_t)compute_flags(cp);
}

void emb_hf_init(void) { pthread_once(&bmp_once, build_bmp); }

const uint8_t *emb_hf_bmp_table(void) {
    emb_hf_init();
    return bmp;
}

unsigned emb_hf_flags(uint32_t cp) {
    if (cp < 65536) {
        emb_hf_init();
        return bmp[cp];
    }
    return compute_flags(cp);
}

int emb_hf_strip(uint32_t cp, uint32_t out[EMB_HF_MAXMAP]) { return strip_raw(cp, out); }
int emb_hf_nfd(uint32_t cp, emb_hf_nfd_item out[EMB_HF_MAXMAP]) { return nfd_raw(cp, out); }
int emb_hf_lower(uint32_t cp, uint32_t out[EMB_HF_MAXMAP]) { return lower_raw(cp, out); }
