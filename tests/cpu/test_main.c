/* CPU tier runner: test_cpu SUITE runs one suite (ctest runs each), no argument runs all. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tn_test_failures, tn_test_checks;

static void *fail_alloc(void *u, size_t n) {
    failing *s = u;
    if (s->countdown-- == 0) return NULL;
    s->live++;
    return malloc(n);
}

static void fail_free(void *u, void *p) {
    failing *s = u;
    s->live--;
    free(p);
}

tn_allocator failing_allocator(failing *state) { return (tn_allocator){fail_alloc, fail_free, state}; }

tn_fusion *test_builtin(tn_context *ctx, tn_builtin op, tn_dtype dt) {
    tn_builtin_options o = {dt, dt, dt, 0};
    tn_fusion *f = NULL;
    tn_fusion_builtin(ctx, op, &o, &f);
    return f;
}

char *test_describe(const tn_plan *plan, tn_describe_what what) {
    size_t n = 0;
    tn_plan_describe(plan, what, NULL, 0, &n);
    char *s = malloc(n ? n : 1);
    s[0] = '\0';
    tn_plan_describe(plan, what, s, n, NULL);
    return s;
}

typedef struct suite {
    const char *name;
    void (*run)(void);
} suite;

static const suite k_suites[] = {{"ir", test_ir},         {"ref", test_ref},         {"sched", test_sched},
                                 {"codegen", test_codegen}, {"early_stores", test_early_stores}, {"compile", test_compile}, {"api", test_api},
                                 {"safety", test_safety},   {"disk_cache", test_disk_cache}};

int main(int argc, char **argv) {
    int ran = 0;
    for (size_t i = 0; i < sizeof k_suites / sizeof k_suites[0]; i++) {
        if (argc > 1 && strcmp(argv[1], k_suites[i].name) != 0) continue;
        printf("== %s\n", k_suites[i].name);
        k_suites[i].run();
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "unknown suite '%s'\n", argv[1]);
        return 2;
    }
    printf("%d checks, %d failed\n", tn_test_checks, tn_test_failures);
    return tn_test_failures ? 1 : 0;
}
