/* A small test harness: CHECK records a failure with its place and goes on. */
#ifndef TN_TEST_H
#define TN_TEST_H

#include <stdio.h>

#include "tmanorm.h"

extern int tn_test_failures, tn_test_checks;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        tn_test_checks++;                                                 \
        if (!(cond)) {                                                    \
            tn_test_failures++;                                           \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);        \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
        }                                                                 \
    } while (0)

/* An allocator that fails its countdown-th allocation and counts the live blocks. */
typedef struct failing {
    int countdown, live;
} failing;
tn_allocator failing_allocator(failing *state);

/* A context for the built-in h200 target, with no GPU needed. */
tn_context *test_context(void);
/* A built-in with every tensor in dt (NULL if it could not be made). */
tn_fusion *test_builtin(tn_context *ctx, tn_builtin op, tn_dtype dt);
/* tn_plan_describe into a malloc'ed string. */
char *test_describe(const tn_plan *plan, tn_describe_what what);

void test_ir(void);
void test_ref(void);
void test_sched(void);
void test_codegen(void);
void test_early_stores(void);
void test_compile(void);
void test_api(void);
void test_safety(void);
void test_disk_cache(void);

#endif
