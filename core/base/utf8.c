#include "base/utf8.h"
#include <stdint.h>
#include <string.h>

int emb_utf8_valid(const char *text, size_t n, size_t *bad_at) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) { /* eight ASCII bytes at a time */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned lo = 0x80, hi = 0xBF; /* the second byte's range excludes overlongs and surrogates */
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else goto bad;
        if (i + need >= n || s[i + 1] < lo || s[i + 1] > hi) goto bad;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80) goto bad;
        i += need + 1;
    }
    return 1;
bad:
    if (bad_at) *bad_at = i;
    return 0;
}
