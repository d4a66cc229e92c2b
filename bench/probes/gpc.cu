// Probe: how many thread-block clusters the driver places at once (cudaOccupancyMaxActiveClusters), by
// cluster size and CTAs an SM, and the SM slots that leaves idle. A persistent cluster grid takes the
// driver's count; clusters pack into GPCs, so where a GPC's SMs do not divide by the cluster, its last SMs
// stay idle (ncu, H100, rmsnorm 512 x 131072: 30 clusters of 4 at one CTA an SM, 120 of 132 SMs).
// Then, for each cluster size at one CTA an SM, the SMs a full grid of clusters lands on (%smid), and how
// many clusters each SM pair (TPC) and each group of SMs that shared a cluster of 16 took.
#include <cstdlib>
#include <vector>
#include "probe.h"

__global__ void spin(int *smids, long long cycles) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (threadIdx.x == 0) smids[blockIdx.x] = (int)smid;
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}

static int max_clusters(int cl, int per_sm, int threads, const cudaDeviceProp &p, int *out) {
    const size_t smem = p.sharedMemPerMultiprocessor / per_sm - 1024;
    CK(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaFuncSetAttribute(spin, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t c = {};
    cudaLaunchAttribute a[1];
    a[0].id = cudaLaunchAttributeClusterDimension;
    a[0].val.clusterDim.x = cl; a[0].val.clusterDim.y = 1; a[0].val.clusterDim.z = 1;
    c.gridDim = dim3(cl * 64); c.blockDim = dim3(threads); c.dynamicSmemBytes = smem; c.attrs = a; c.numAttrs = 1;
    CK(cudaOccupancyMaxActiveClusters(out, spin, &c));
    return 0;
}

int main() {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    const int sms = p.multiProcessorCount;
    printf("device: %s, %d SMs, %zu bytes of shared memory an SM\n", p.name, sms, p.sharedMemPerMultiprocessor);
    printf("cluster per_sm clusters ctas slots idle_slots idle_pct\n");
    for (int cl = 1; cl <= 16; cl *= 2)
        for (int per_sm = 1; per_sm <= 4; per_sm++) {
            int n = 0;
            if (max_clusters(cl, per_sm, 128, p, &n)) return 1;
            const int slots = sms * per_sm;
            printf("%d %d %d %d %d %d %.1f\n", cl, per_sm, n, n * cl, slots, slots - n * cl,
                   100.0 * (slots - n * cl) / slots);
        }
    // Where the clusters land: a grid of exactly the driver's count at one CTA an SM, every CTA spinning
    // long enough that all are resident together.
    int *d_smids;
    CK(cudaMalloc(&d_smids, sizeof(int) * 16 * sms));
    for (int cl = 2; cl <= 16; cl *= 2) {
        int n = 0;
        if (max_clusters(cl, 1, 128, p, &n)) return 1;
        const size_t smem = p.sharedMemPerMultiprocessor - 1024;
        cudaLaunchConfig_t c = {};
        cudaLaunchAttribute a[1];
        a[0].id = cudaLaunchAttributeClusterDimension;
        a[0].val.clusterDim.x = cl; a[0].val.clusterDim.y = 1; a[0].val.clusterDim.z = 1;
        c.gridDim = dim3(cl * n); c.blockDim = dim3(128); c.dynamicSmemBytes = smem; c.attrs = a; c.numAttrs = 1;
        CK(cudaLaunchKernelEx(&c, spin, d_smids, 20000000LL));
        CK(cudaDeviceSynchronize());
        std::vector<int> ids(cl * n);
        CK(cudaMemcpy(ids.data(), d_smids, sizeof(int) * cl * n, cudaMemcpyDeviceToHost));
        std::vector<int> used(sms, 0);
        for (int id : ids) used[id]++;
        printf("clusters of %d at one an SM: %d placed; SMs unused:", cl, n);
        for (int s = 0; s < sms; s++) if (!used[s]) printf(" %d", s);
        printf("\n");
        if (cl == 16 || cl == 8) {
            printf("  SM groups (one cluster each):");
            for (int k = 0; k < n; k++) {
                printf(" [");
                for (int j = 0; j < cl; j++) printf("%s%d", j ? "," : "", ids[k * cl + j]);
                printf("]");
            }
            printf("\n");
        }
    }
    return 0;
}
