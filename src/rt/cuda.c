/* libcuda loaded at run time (see cuda.h). */
#include "rt/cuda.h"

#include <dlfcn.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>

static tn_cuda_api g_api;
static const tn_cuda_api *g_loaded;
static const char *g_why = "libcuda was not loaded";
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

typedef struct symbol {
    const char *name;
    size_t offset;
} symbol;

#define SYM(field, name) {name, offsetof(tn_cuda_api, field)}
static const symbol k_symbols[] = {
    SYM(Init, "cuInit"),
    SYM(DriverGetVersion, "cuDriverGetVersion"),
    SYM(DeviceGetCount, "cuDeviceGetCount"),
    SYM(DeviceGet, "cuDeviceGet"),
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(DeviceGetName, "cuDeviceGetName"),
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(CtxGetCurrent, "cuCtxGetCurrent"),
    SYM(CtxSetCurrent, "cuCtxSetCurrent"),
    SYM(CtxSynchronize, "cuCtxSynchronize"),
    SYM(ModuleLoadData, "cuModuleLoadData"),
    SYM(ModuleUnload, "cuModuleUnload"),
    SYM(ModuleGetFunction, "cuModuleGetFunction"),
    SYM(FuncGetAttribute, "cuFuncGetAttribute"),
    SYM(FuncSetAttribute, "cuFuncSetAttribute"),
    SYM(LaunchKernel, "cuLaunchKernel"),
    SYM(LaunchKernelEx, "cuLaunchKernelEx"),
    SYM(OccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters"),
    SYM(GetErrorString, "cuGetErrorString"),
    SYM(StreamIsCapturing, "cuStreamIsCapturing"),
    SYM(MemAlloc, "cuMemAlloc_v2"),
    SYM(MemFree, "cuMemFree_v2"),
    SYM(MemGetInfo, "cuMemGetInfo_v2"),
    SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    SYM(MemsetD8, "cuMemsetD8_v2"),
    SYM(StreamCreate, "cuStreamCreate"),
    SYM(StreamDestroy, "cuStreamDestroy_v2"),
    SYM(StreamSynchronize, "cuStreamSynchronize"),
    SYM(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    SYM(StreamEndCapture, "cuStreamEndCapture"),
    SYM(GraphInstantiate, "cuGraphInstantiateWithFlags"),
    SYM(GraphLaunch, "cuGraphLaunch"),
    SYM(GraphExecDestroy, "cuGraphExecDestroy"),
    SYM(GraphDestroy, "cuGraphDestroy"),
    SYM(EventCreate, "cuEventCreate"),
    SYM(EventRecord, "cuEventRecord"),
    SYM(EventSynchronize, "cuEventSynchronize"),
    SYM(EventElapsedTime, "cuEventElapsedTime"),
    SYM(EventDestroy, "cuEventDestroy_v2"),
};
#undef SYM

static void load_once(void) {
    static char why[256];
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, sizeof why, "no CUDA driver: dlopen(libcuda.so.1) failed: %s", dlerror());
        g_why = why;
        return;
    }
    for (size_t i = 0; i < sizeof k_symbols / sizeof k_symbols[0]; i++) {
        void *fn = dlsym(lib, k_symbols[i].name);
        if (!fn) {
            snprintf(why, sizeof why, "the CUDA driver lacks %s (too old?)", k_symbols[i].name);
            g_why = why;
            return;
        }
        /* POSIX guarantees a function pointer round-trips through void *. */
        *(void **)((char *)&g_api + k_symbols[i].offset) = fn;
    }
    CUresult r = g_api.Init(0);
    if (r != CUDA_SUCCESS) {
        snprintf(why, sizeof why, "cuInit failed: %s (no GPU visible?)", tn_cuda_error_text(r));
        g_why = why;
        return;
    }
    g_loaded = &g_api;
}

const tn_cuda_api *tn_cuda_load(const char **why) {
    pthread_once(&g_once, load_once);
    if (!g_loaded && why) *why = g_why;
    return g_loaded;
}

const char *tn_cuda_error_text(CUresult r) {
    static __thread char text[160];
    const char *s = NULL;
    if (g_api.GetErrorString) g_api.GetErrorString(r, &s);
    snprintf(text, sizeof text, "CUDA error %d (%s)", (int)r, s ? s : "unknown");
    return text;
}
