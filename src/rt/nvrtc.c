/* NVRTC: CUDA C -> CUBIN for the context's architecture, with ptxas' report. */
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rt/runtime.h"
#include "rt/nvrtc.h"
#include "util/alloc.h"

const char *const tn_nvrtc_options[TN_NVRTC_OPTION_COUNT] = {"--std=c++17", "-Xptxas=-v"};

static char g_version[32];
static pthread_once_t g_version_once = PTHREAD_ONCE_INIT;

static void read_version(void) {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    snprintf(g_version, sizeof g_version, "%d.%d", major, minor);
}

const char *tn_nvrtc_version(void) {
    pthread_once(&g_version_once, read_version);
    return g_version;
}

void tn_parse_ptxas_log(const char *log, tn_resources *res) {
    const char *s;
    if ((s = strstr(log, "Used "))) sscanf(s, "Used %d registers", &res->registers);
    if ((s = strstr(log, "bytes stack frame")))
        while (s > log && s[-1] != '.' && s[-1] != '\n') s--;
    if (s) sscanf(s, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &res->stack_bytes,
                  &res->spill_store_bytes, &res->spill_load_bytes);
    if ((s = strstr(log, "bytes smem"))) {
        while (s > log && s[-1] != ',' && s[-1] != '\n') s--;
        sscanf(s, " %d bytes smem", &res->static_smem_bytes);
    }
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The CUBIN target for arch, or the newest virtual arch NVRTC knows when the
   GPU is newer than NVRTC (then PTX, which the driver compiles). */
static int pick_target(const char *arch, char *opt, size_t cap) {
    int archs[64], n = 0, want = 0;
    sscanf(arch, "sm_%d", &want);
    if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0 && n <= 64 &&
        nvrtcGetSupportedArchs(archs) == NVRTC_SUCCESS && want > archs[n - 1]) {
        snprintf(opt, cap, "--gpu-architecture=compute_%d", archs[n - 1]);
        return 1;
    }
    snprintf(opt, cap, "--gpu-architecture=%s", arch);
    return 0;
}

tn_status tn_nvrtc_compile(tn_context *ctx, const char *source, const char *arch, char **image,
                           size_t *image_size, char **log_out, double *ms) {
    nvrtcProgram prog = NULL;
    char *log = NULL, *img = NULL;
    tn_status st = TN_STATUS_OK;
    char target[64];
    int ptx = pick_target(arch, target, sizeof target);
    const char *opts[1 + TN_NVRTC_OPTION_COUNT] = {target};
    for (int i = 0; i < TN_NVRTC_OPTION_COUNT; i++) opts[1 + i] = tn_nvrtc_options[i];
    double t0 = now_ms();
    nvrtcResult r = nvrtcCreateProgram(&prog, source, "tmanorm_kernel.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        st = tn_set_error(ctx, TN_STATUS_COMPILE_ERROR, "nvrtcCreateProgram: %s", nvrtcGetErrorString(r));
        goto done;
    }
    /* PTX output takes no ptxas option (the last one). */
    nvrtcResult cr = nvrtcCompileProgram(prog, ptx ? TN_NVRTC_OPTION_COUNT : 1 + TN_NVRTC_OPTION_COUNT, opts);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    log = tn_alloc(&ctx->base.alloc, log_size + 1);
    if (!log) {
        st = tn_set_error(ctx, TN_STATUS_OUT_OF_MEMORY, "nvrtc: out of memory");
        goto done;
    }
    log[0] = '\0';
    nvrtcGetProgramLog(prog, log);
    if (cr != NVRTC_SUCCESS) {
        st = tn_set_error(ctx, TN_STATUS_COMPILE_ERROR,
                          "NVRTC failed to compile the generated kernel for %s (%s):\n%s\n"
                          "(tmanorm explain --source prints the source; compile it with nvcc -arch=%s to reproduce)",
                          arch, nvrtcGetErrorString(cr), log, arch);
        goto done;
    }
    size_t size = 0;
    r = ptx ? nvrtcGetPTXSize(prog, &size) : nvrtcGetCUBINSize(prog, &size);
    img = r == NVRTC_SUCCESS ? tn_alloc(&ctx->base.alloc, size) : NULL;
    if (!img) {
        st = tn_set_error(ctx, r == NVRTC_SUCCESS ? TN_STATUS_OUT_OF_MEMORY : TN_STATUS_COMPILE_ERROR,
                          "nvrtc: could not read the compiled image");
        goto done;
    }
    r = ptx ? nvrtcGetPTX(prog, img) : nvrtcGetCUBIN(prog, img);
    if (r != NVRTC_SUCCESS) {
        st = tn_set_error(ctx, TN_STATUS_COMPILE_ERROR, "nvrtc: %s", nvrtcGetErrorString(r));
        goto done;
    }
    *image = img;
    *image_size = size;
    *log_out = log;
    img = log = NULL;
    *ms = now_ms() - t0;
done:
    tn_free(&ctx->base.alloc, img);
    tn_free(&ctx->base.alloc, log);
    if (prog) nvrtcDestroyProgram(&prog);
    return st;
}
