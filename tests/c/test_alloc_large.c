/* emb_alloc_large (core/emb_common.h): every size gives writable memory aligned to 64 bytes, and
 * from 2 MiB on to 2 MiB; on a kernel with transparent huge pages, the allocation's whole 2 MiB
 * pieces carry the huge-page advice ("hg" among the VmFlags of /proc/self/smaps) and the tail of
 * the first does not (later ones may reuse memory that an earlier allocation advised). */
#include "check.h"
#include "base/emb_common.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

/* Whether the mapping that holds address a has flag (two letters) among its VmFlags: 1 yes, 0 no,
 * -1 when /proc/self/smaps cannot tell. */
static int vm_flag(const void *a, const char *flag) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int inside = 0, found = -1;
    uintptr_t x = (uintptr_t)a;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line (no field name is hex then '-') */
            inside = x >= lo && x < hi;
            continue;
        }
        if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            found = 0;
            for (char *t = strtok(line + 8, " \n"); t; t = strtok(NULL, " \n"))
                if (strcmp(t, flag) == 0) found = 1;
            break;
        }
    }
    fclose(f);
    return found;
}

/* The advice can be checked: a kernel with transparent huge pages, and /proc/self/smaps readable
 * (a chroot may lack /proc). */
static int thp_kernel(void) {
    return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0 &&
           access("/proc/self/smaps", R_OK) == 0;
}

/* Whether advice given here shows in /proc/self/smaps at all: a 2 MiB piece advised directly with
 * madvise carries "hg". An emulator such as qemu-user (make check-arm64, make check-haswell)
 * accepts the advice and drops it, and shows the host's mappings. */
static int advice_shows(void) {
    unsigned char *m = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 0;
    unsigned char *a = m + (2 * MIB - (uintptr_t)m % (2 * MIB)) % (2 * MIB);
    int shows = madvise(a, 2 * MIB, MADV_HUGEPAGE) == 0 && vm_flag(a, "hg") == 1;
    munmap(m, 4 * MIB);
    return shows;
}

int main(void) {
    int checkable = thp_kernel() && advice_shows();
    const size_t sizes[] = {0, 1, 63, 4096, 2 * MIB - 1, 2 * MIB + 12345, 2 * MIB, 7 * MIB + 3, 8 * MIB};
    int first_large = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        unsigned char *p = emb_alloc_large(n);
        CHECK(p != NULL, "%zu bytes: NULL", n);
        if (!p) continue;
        size_t align = n >= 2 * MIB ? 2 * MIB : 64;
        CHECK((uintptr_t)p % align == 0, "%zu bytes at %p: not aligned to %zu", n, (void *)p, align);
        if (n) {
            memset(p, 0xA5, n);
            CHECK(p[0] == 0xA5 && p[n - 1] == 0xA5, "%zu bytes: not writable end to end", n);
        }
        if (n >= 2 * MIB && checkable) {
            int head = vm_flag(p, "hg");
            CHECK(head == 1, "%zu bytes: its first 2 MiB lack the huge-page advice (%d)", n, head);
            int last = vm_flag(p + (n & ~(2 * MIB - 1)) - 1, "hg");
            CHECK(last == 1, "%zu bytes: its last whole 2 MiB piece lacks the huge-page advice (%d)", n, last);
            if (first_large && n % (2 * MIB)) {
                int tail = vm_flag(p + n - 1, "hg");
                CHECK(tail == 0, "%zu bytes: its tail past the whole 2 MiB pieces carries the advice (%d)", n,
                      tail);
            }
        }
        if (n >= 2 * MIB) first_large = 0;
        free(p);
    }
    if (!thp_kernel()) CHECK_SKIP("huge-page advice: no transparent huge pages or no /proc/self/smaps");
    else if (!checkable)
        CHECK_SKIP("huge-page advice: madvise's does not show in /proc/self/smaps here (an emulator such as "
                   "qemu-user drops it)");
    return check_report();
}
