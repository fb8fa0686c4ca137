/* Split pre-tokenizer patterns (see tok_split.h). Classes as Oniguruma 6.9.8 (Unicode 14.0)
 * defines them, which HF's tokenizers links: \s = White_Space, \p{L} = L*, \p{N} = N*. */
#include "text/tok_split.h"

#include <stdint.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tok_nstr.h"

static const char *const REGEX[] = {
    NULL,
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};

int emb_tok_split_kind(const char *regex) {
    for (int k = SPLIT_GPT2; k <= SPLIT_LLAMA3; k++)
        if (strcmp(regex, REGEX[k]) == 0) return k;
    return 0;
}

const char *emb_tok_split_regex(int kind) { return kind >= SPLIT_GPT2 && kind <= SPLIT_LLAMA3 ? REGEX[kind] : ""; }

enum { C_L, C_N, C_WS, C_OTHER };

/* Letters and numbers of Unicode 15.0 (utf8proc 2.8.0) that Unicode 14.0 (Oniguruma 6.9.8)
 * does not have: "other" for HF. From Python 3.11's unicodedata (14.0) against utf8proc. */
static const uint32_t NEW15[][2] = {
    {0x1123F, 0x11240}, {0x11F02, 0x11F02}, {0x11F04, 0x11F10}, {0x11F12, 0x11F33},
    {0x11F50, 0x11F59}, {0x1342F, 0x1342F}, {0x13441, 0x13446}, {0x1B132, 0x1B132},
    {0x1B155, 0x1B155}, {0x1D2C0, 0x1D2D3}, {0x1DF25, 0x1DF2A}, {0x1E030, 0x1E06D},
    {0x1E4D0, 0x1E4EB}, {0x1E4F0, 0x1E4F9}, {0x2B739, 0x2B739}, {0x31350, 0x323AF},
};

static int new_in_15(uint32_t c) {
    if (c < 0x1123F) return 0;
    for (size_t i = 0; i < sizeof NEW15 / sizeof NEW15[0]; i++)
        if (c >= NEW15[i][0] && c <= NEW15[i][1]) return 1;
    return 0;
}

static int cls_of(uint32_t c) {
    if (c < 0x80) {
        if ((c | 32) >= 'a' && (c | 32) <= 'z') return C_L;
        if (c >= '0' && c <= '9') return C_N;
        if (tok_is_ws(c)) return C_WS;
        return C_OTHER;
    }
    if (tok_is_ws(c)) return C_WS;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return new_in_15(c) ? C_OTHER : C_L;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return new_in_15(c) ? C_OTHER : C_N;
    default: return C_OTHER;
    }
}

static inline int cls_at(const char *s, size_t i, int *k) {
    return cls_of(tok_get_utf8((const unsigned char *)s + i, k));
}

/* end of the run of class cl starting at i, at most max characters */
static size_t run_end(const char *s, size_t len, size_t i, int cl, size_t max) {
    for (size_t n = 0; i < len && n < max; n++) {
        int k;
        if (cls_at(s, i, &k) != cl) break;
        i += (size_t)k;
    }
    return i;
}

static size_t run_crlf(const char *s, size_t len, size_t i) {
    while (i < len && (s[i] == '\r' || s[i] == '\n')) i++;
    return i;
}

/* 's|'t|'re|'ve|'m|'ll|'d at i, case-insensitive when ci ('ſ' folds to 's' in Oniguruma) */
static size_t contraction(const char *s, size_t len, size_t i, int ci) {
    if (s[i] != '\'' || i + 1 >= len) return 0;
    char a = s[i + 1], b = i + 2 < len ? s[i + 2] : 0;
    if (ci) {
        if (a == '\xc5' && b == '\xbf') return 3;
        a = (char)(a >= 'A' && a <= 'Z' ? a + 32 : a);
        b = (char)(b >= 'A' && b <= 'Z' ? b + 32 : b);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* \s+(?!\S)|\s+ over the whitespace run [i, j): all of it before the end or more whitespace,
 * else all but its last character (left to the next match), else the one character */
static size_t ws_tail(const char *s, size_t len, size_t i, size_t j) {
    if (j < len) {
        size_t p = j - 1;
        while (p > i && ((unsigned char)s[p] & 0xC0) == 0x80) p--;
        if (p > i) return p - i;
    }
    return j - i;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t next_gpt2(const char *s, size_t len, size_t i) {
    size_t m = contraction(s, len, i, 0);
    if (m) return m;
    int k;
    int cl = cls_at(s, i, &k);
    if (s[i] == ' ' && i + 1 < len) { /* " ?" then a run of letters, digits or others */
        int k2;
        int c2 = cls_at(s, i + 1, &k2);
        if (c2 != C_WS) return run_end(s, len, i + 1, c2, SIZE_MAX) - i;
    }
    if (cl != C_WS) return run_end(s, len, i, cl, SIZE_MAX) - i;
    return ws_tail(s, len, i, run_end(s, len, i, C_WS, SIZE_MAX));
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
 * ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t next_qwen(const char *s, size_t len, size_t i, size_t digits) {
    size_t m = contraction(s, len, i, 1);
    if (m) return m;
    int k, k2 = 0;
    int cl = cls_at(s, i, &k);
    size_t j = i + (size_t)k;
    int c2 = j < len ? cls_at(s, j, &k2) : -1;
    if (cl == C_L) return run_end(s, len, i, C_L, SIZE_MAX) - i;
    if (cl != C_N && s[i] != '\r' && s[i] != '\n' && c2 == C_L) return run_end(s, len, j, C_L, SIZE_MAX) - i;
    if (cl == C_N) return run_end(s, len, i, C_N, digits) - i;
    if (s[i] == ' ' && c2 == C_OTHER) return run_crlf(s, len, run_end(s, len, j, C_OTHER, SIZE_MAX)) - i;
    if (cl == C_OTHER) return run_crlf(s, len, run_end(s, len, i, C_OTHER, SIZE_MAX)) - i;
    size_t w = run_end(s, len, i, C_WS, SIZE_MAX), last = 0; /* \s*[\r\n]+: to the last CR / LF */
    for (size_t p = i; p < w; p++)
        if (s[p] == '\r' || s[p] == '\n') last = p + 1;
    if (last) return last - i;
    return ws_tail(s, len, i, w);
}

size_t emb_tok_split_next(int kind, const char *s, size_t len, size_t i) {
    if (kind == SPLIT_GPT2) return next_gpt2(s, len, i);
    return next_qwen(s, len, i, kind == SPLIT_LLAMA3 ? 3 : 1);
}
