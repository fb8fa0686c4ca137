#include "base/emb_common.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int emb_fail(char err[EMB_ERR_LEN], const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, EMB_ERR_LEN, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int emb_grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > SIZE_MAX / 2) return -1;
        nc *= 2;
    }
    if (elem && nc > SIZE_MAX / elem) return -1;
    void *q = realloc(*p, nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

#define HUGE_PAGE ((size_t)2 << 20)
void *emb_alloc_large(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, bytes >= HUGE_PAGE ? HUGE_PAGE : 64, bytes ? bytes : 1)) return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= HUGE_PAGE) (void)madvise(p, bytes & ~(HUGE_PAGE - 1), MADV_HUGEPAGE); /* advice: may fail */
#endif
    return p;
}
