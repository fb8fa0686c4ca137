/* Minimal test harness for the C suites: CHECK counts, the program ends with
 * check_report(), which prints "N passed, N failed" and returns the exit code. */
#ifndef EMBED_TEST_CHECK_H
#define EMBED_TEST_CHECK_H
#include <stdio.h>
#include <math.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                          \
        if (cond) check_passed++;                                                                                 \
        else {                                                                                                    \
            check_failed++;                                                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                  \
            fprintf(stderr, __VA_ARGS__);                                                                         \
            fputc('\n', stderr);                                                                                  \
        }                                                                                                         \
    } while (0)

/* A check that cannot run on this machine (what it tests does not exist here): says why on
 * stdout, "skip: ...", and counts neither as passed nor as failed. */
#define CHECK_SKIP(...)                                                                                           \
    do {                                                                                                          \
        fputs("skip: ", stdout);                                                                                  \
        printf(__VA_ARGS__);                                                                                      \
        fputc('\n', stdout);                                                                                      \
    } while (0)

#define CHECK_NEAR(a, b, tol, ...) CHECK(fabs((double)(a) - (double)(b)) <= (tol), __VA_ARGS__)

static inline int check_report(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

/* The suites' deterministic random numbers (xorshift64*): the same values on every run. Each
 * suite keeps one state, seeded with any nonzero value. */
static inline unsigned long long check_rng(unsigned long long *state) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

/* Where the golden reference data lives: tests/fixtures (copied from ../shared/golden). */
#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif
#endif
