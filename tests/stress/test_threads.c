/* Stress: one context shared by 8 threads, released together by a barrier, for
   ThreadSanitizer (make tsan) and every other build.
   - threads 0-3 plan the same fusion at the same shape: one cache key, so they
     meet on one cache entry (0 and 1 even share the fusion object);
   - threads 4-5 plan other fusions and shapes, and fail now and then;
   - threads 6-7 fail on purpose (tn_plan_create with rows = 0 and a cols of
     their own, tn_fusion_verify of a fusion named after the thread) and check
     that tn_context_last_error then holds their own message;
   - every thread calls tn_status_string, tn_nvrtc_version and tn_plan_describe
     of a plan shared by all between its own calls.
   Without a GPU (the context is made for the h200 target); each distinct
   kernel is compiled by NVRTC once, so it runs in seconds.
     test_threads [ROUNDS]   (ctest: stress_threads, 4 rounds) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/cache.h"
#include "tmanorm.h"

#define THREADS 8

typedef struct job {
    int id, rounds;
    tn_context *ctx;
    const tn_fusion *shared; /* threads 0 and 1 plan this one fusion */
    const tn_plan *shared_plan;
    int plans, failures_checked, errors;
    char version[32];
    char *source; /* the generated source of the thread's first plan */
    char error[512];
} job;

static pthread_barrier_t g_start;

static void fail(job *j, const char *fmt, const char *detail) {
    if (!j->errors++) snprintf(j->error, sizeof j->error, fmt, detail);
}

static char *describe(const tn_plan *plan, tn_describe_what what) {
    size_t n = 0;
    if (tn_plan_describe(plan, what, NULL, 0, &n) != TN_STATUS_OK) return NULL;
    char *text = malloc(n);
    if (text && tn_plan_describe(plan, what, text, n, NULL) != TN_STATUS_OK) {
        free(text);
        return NULL;
    }
    return text;
}

/* What every thread does between its own calls: the calls that share static state. */
static void shared_calls(job *j) {
    for (int s = 0; s <= TN_STATUS_INTERNAL; s++)
        if (!tn_status_string((tn_status)s)[0]) fail(j, "tn_status_string %s: empty", "");
    const char *v = tn_nvrtc_version();
    int major = 0, minor = 0;
    if (sscanf(v, "%d.%d", &major, &minor) != 2 || major < 1) fail(j, "tn_nvrtc_version gave '%s'", v);
    else if (!j->version[0]) snprintf(j->version, sizeof j->version, "%s", v);
    else if (strcmp(j->version, v) != 0) fail(j, "tn_nvrtc_version changed to '%s'", v);
    char *text = describe(j->shared_plan, TN_DESCRIBE_RESOURCES);
    if (!text || !strstr(text, "NVRTC")) fail(j, "describe (resources) of the shared plan: %s", text ? text : "failed");
    free(text);
}

static void make_plan(job *j, tn_builtin op, tn_dtype dt, int64_t rows, int64_t cols, const tn_fusion *given) {
    tn_builtin_options o = {dt, dt, dt, 0};
    tn_fusion *own = NULL;
    if (!given && tn_fusion_builtin(j->ctx, op, &o, &own) != TN_STATUS_OK) {
        fail(j, "built-in: %s", tn_context_last_error(j->ctx));
        return;
    }
    tn_plan *plan = NULL;
    if (tn_plan_create(j->ctx, given ? given : own, rows, cols, NULL, &plan) != TN_STATUS_OK) {
        fail(j, "tn_plan_create: %s", tn_context_last_error(j->ctx));
    } else {
        j->plans++;
        if (!j->source) j->source = describe(plan, TN_DESCRIBE_SOURCE);
    }
    tn_plan_destroy(plan);
    tn_fusion_destroy(own);
}

/* Fails with a message only this thread's call can produce, then reads it back. */
static void fail_and_check(job *j, int k) {
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *f = NULL;
    if (tn_fusion_builtin(j->ctx, TN_BUILTIN_RMSNORM, &o, &f) != TN_STATUS_OK) {
        fail(j, "built-in: %s", tn_context_last_error(j->ctx));
        return;
    }
    long long cols = -(1000LL * j->id + k);
    tn_plan *plan = NULL;
    char want[64];
    snprintf(want, sizeof want, "N = %lld)", cols);
    if (tn_plan_create(j->ctx, f, 0, cols, NULL, &plan) != TN_STATUS_INVALID_ARGUMENT || plan)
        fail(j, "tn_plan_create with rows = 0 %s", "did not fail");
    else if (!strstr(tn_context_last_error(j->ctx), want))
        fail(j, "after its own failure the thread read another message: '%.200s'", tn_context_last_error(j->ctx));
    j->failures_checked++;
    tn_fusion_destroy(f);

    /* A fusion the verifier rejects, named after the thread. */
    char name[32];
    snprintf(name, sizeof name, "thread%d_%d", j->id, k);
    tn_value x;
    if (tn_fusion_create(j->ctx, name, &f) != TN_STATUS_OK ||
        tn_fusion_input(f, "x", TN_DTYPE_F32, TN_SHAPE_SCALAR, &x) != TN_STATUS_OK ||
        tn_fusion_output(f, "y", x, TN_DTYPE_F32) != TN_STATUS_OK) {
        fail(j, "builder: %s", tn_context_last_error(j->ctx));
    } else if (tn_fusion_verify(f) != TN_STATUS_INVALID_FUSION) {
        fail(j, "a SCALAR input %s", "verified");
    } else if (!strstr(tn_context_last_error(j->ctx), name)) {
        fail(j, "after its own rejected fusion the thread read another message: '%.200s'",
             tn_context_last_error(j->ctx));
    }
    j->failures_checked++;
    tn_fusion_destroy(f);
}

static void *run(void *arg) {
    job *j = arg;
    pthread_barrier_wait(&g_start);
    for (int r = 0; r < j->rounds; r++) {
        shared_calls(j);
        switch (j->id) {
        case 0:
        case 1: make_plan(j, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, 64, 1024, j->shared); break;
        case 2:
        case 3: make_plan(j, TN_BUILTIN_RMSNORM, TN_DTYPE_BF16, 64, 1024, NULL); break;
        case 4:
            make_plan(j, TN_BUILTIN_SOFTMAX, TN_DTYPE_F16, 8, 4097 + 2 * (r % 2), NULL);
            fail_and_check(j, r);
            break;
        case 5:
            make_plan(j, TN_BUILTIN_LAYERNORM, TN_DTYPE_F32, 3, 1000 + 8 * (r % 2), NULL);
            fail_and_check(j, r);
            break;
        default:
            for (int k = 0; k < 50; k++) {
                fail_and_check(j, r * 50 + k);
                if (k % 10 == 0) shared_calls(j);
            }
            break;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 4;
    tn_context_options co = {0, NULL, "h200", 1};
    tn_context *ctx = NULL;
    tn_builtin_options o = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_fusion *shared = NULL, *other = NULL;
    tn_plan *shared_plan = NULL;
    if (tn_context_create(&co, &ctx) != TN_STATUS_OK || tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &o, &shared) ||
        tn_fusion_builtin(ctx, TN_BUILTIN_ADD_RMSNORM, &o, &other) ||
        tn_plan_create(ctx, other, 16, 512, NULL, &shared_plan) != TN_STATUS_OK) {
        fprintf(stderr, "setup failed: %s\n", tn_context_last_error(ctx));
        return 2;
    }
    pthread_barrier_init(&g_start, NULL, THREADS);
    pthread_t th[THREADS];
    job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (job){.id = i, .rounds = rounds, .ctx = ctx, .shared = shared, .shared_plan = shared_plan};
        if (pthread_create(&th[i], NULL, run, &jobs[i]) != 0) return 2;
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g_start);

    int errors = 0, plans = 0, checked = 0;
    for (int i = 0; i < THREADS; i++) {
        plans += jobs[i].plans;
        checked += jobs[i].failures_checked;
        if (jobs[i].errors) printf("FAIL thread %d: %s (%d errors)\n", i, jobs[i].error, jobs[i].errors);
        errors += jobs[i].errors;
        /* One fusion, one shape: one kernel, whichever thread compiled it. */
        if (i > 0 && i < 4 && (!jobs[i].source || !jobs[0].source || strcmp(jobs[i].source, jobs[0].source))) {
            printf("FAIL thread %d: its plan's source differs from thread 0's\n", i);
            errors++;
        }
        if (strcmp(jobs[i].version, jobs[0].version) != 0) {
            printf("FAIL thread %d: NVRTC version '%s', thread 0 read '%s'\n", i, jobs[i].version, jobs[0].version);
            errors++;
        }
    }
    for (int i = 0; i < THREADS; i++) free(jobs[i].source);
    tn_plan_destroy(shared_plan);
    tn_fusion_destroy(shared);
    tn_fusion_destroy(other);
    tn_context_destroy(ctx);
    printf("threads: %d threads x %d rounds: %d plans made, %d own failures read back, %d errors\n", THREADS, rounds,
           plans, checked, errors);
    return errors ? 1 : 0;
}
