/* A program outside the tree, built against an installed tmanorm (the public
 * header and library only) by run_consumer.cmake: once through find_package,
 * once through pkg-config. Plans and compiles an RMSNorm for the h200 target,
 * which needs NVRTC but no GPU. */
#include <stdio.h>
#include <string.h>

#include <tmanorm.h>

#define STR2(x) #x
#define STR(x) STR2(x)

int main(void) {
    const char *header = STR(TN_VERSION_MAJOR) "." STR(TN_VERSION_MINOR) "." STR(TN_VERSION_PATCH);
    tn_context_options co = {0, NULL, "h200", 1};
    tn_builtin_options bo = {TN_DTYPE_BF16, TN_DTYPE_BF16, TN_DTYPE_BF16, 0};
    tn_context *ctx = NULL;
    tn_fusion *f = NULL;
    tn_plan *plan = NULL;
    char text[16384];
    size_t needed = 0;
    int rc = 1;

    if (strcmp(tn_version(), header) != 0) {
        fprintf(stderr, "consumer: tn_version() is %s, the header %s\n", tn_version(), header);
        goto done;
    }
    if (tn_context_create(&co, &ctx) != TN_STATUS_OK) {
        fprintf(stderr, "consumer: tn_context_create failed\n");
        goto done;
    }
    if (tn_fusion_builtin(ctx, TN_BUILTIN_RMSNORM, &bo, &f) != TN_STATUS_OK ||
        tn_plan_create(ctx, f, 4096, 4096, NULL, &plan) != TN_STATUS_OK ||
        tn_plan_describe(plan, TN_DESCRIBE_TEXT, text, sizeof text, &needed) != TN_STATUS_OK) {
        fprintf(stderr, "consumer: %s\n", tn_context_last_error(ctx));
        goto done;
    }
    text[strcspn(text, "\n")] = '\0'; /* its first line: the plan's kind */
    printf("consumer: tmanorm %s (%s GPU): %s made\n", tn_version(), tn_context_has_gpu(ctx) ? "a" : "no",
           text);
    rc = 0;
done:
    tn_plan_destroy(plan);
    tn_fusion_destroy(f);
    tn_context_destroy(ctx);
    return rc;
}
