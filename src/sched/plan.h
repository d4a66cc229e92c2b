/* A plan: plain data saying how one fusion runs at one shape on one GPU.
   It prints as text and JSON, reads back from JSON, and is checked against
   the fusion and the device before any kernel is generated from it. */
#ifndef TN_PLAN_DESC_H
#define TN_PLAN_DESC_H

#include <stdint.h>

#include "sched/analysis.h"
#include "util/strbuf.h"

typedef enum tn_plan_kind {
    TN_PLAN_REGISTER = 0, /* the row lives in registers: one read, one write */
    TN_PLAN_LOOPED,       /* rows beyond the on-chip budget: one pass over memory per phase */
    TN_PLAN_TMA,          /* rows in shared memory, filled by bulk copies through a ring of stages (sm_90) */
    TN_PLAN_TMA_WS,       /* tma, warp-specialized: a producer warp fills each consumer warp group's ring (sm_90) */
    TN_PLAN_CLUSTER,      /* tma, each row split over a cluster of CTAs that meet through distributed shared memory (sm_90) */
    TN_PLAN_KIND_COUNT
} tn_plan_kind;

#define TN_MAX_STAGES 32
#define TN_MAX_CLUSTER 8 /* the portable cluster size: the most the scheduler chooses but for few long rows */
/* The most a plan may have on sm_90 (few long rows, and tune's candidates), launched with the non-portable
   attribute where the driver says such clusters run at all (the plan build asks it and refuses them otherwise). */
#define TN_MAX_CLUSTER_NONPORTABLE 16
/* The largest cluster a plan may have on a device of compute capability cc_major.x (1: no clusters). */
int tn_max_cluster(int cc_major);

typedef struct tn_plan_desc {
    tn_plan_kind kind;
    int64_t rows, cols;
    int vec;             /* elements per vector access (a power of two dividing cols) */
    int threads_per_row; /* a power of two up to 32, else a multiple of 32 */
    int rows_per_cta;    /* rows the CTA works on at once (tma-ws: over all its consumer groups) */
    int batch;           /* register: vectors each thread keeps per row; looped: loads in flight; tma: unroll */
    int block_threads;   /* threads_per_row * rows_per_cta, plus the producer's threads (tma-ws) */
    int64_t grid;        /* CTAs launched; each loops over row groups */
    int cc;              /* compute capability the plan targets, e.g. 90 */
    int align_bytes;     /* alignment the plan's vector accesses need */
    int stages;          /* shared-memory slots in the ring (0: no ring); tma-ws: per consumer group */
    int consumer_groups; /* tma-ws: consumer warp groups of 128 threads (0 for the other kinds) */
    int chunks;          /* tma-ws: slots one row group spans (a row longer than a slot streams through several) */
    int producer_regs;   /* tma-ws with register sharing: setmaxnreg of the producer group (0: no sharing) */
    int consumer_regs;   /* ... and of each consumer group */
    int cluster;         /* cluster: CTAs a row is split over (2 to 8; 16 on sm_90 for few long rows and among
                            tune's candidates), each a slice of whole vectors: the
                            first cluster - 1 CTAs take tn_cluster_slice_vectors each, the last the rest;
                            1 for the other kinds */
    int smem_bytes;      /* dynamic shared memory per CTA */
    int ctas_per_sm;     /* CTAs the kernel is compiled to fit on one SM at once (ptxas keeps registers
                            under that share); 0: ptxas chooses */
    int prefetch;        /* cluster: 1 = each CTA has its slice of its next row copied into L2 while it
                            works on this one (cp.async.bulk.prefetch.L2) */
    int carry;           /* register, cluster, tma: 1 = special-function values a later phase needs again
                            (softmax's exp) are kept in f32 registers from the phase that computes them, not
                            recomputed */
    int shared_slice;    /* cluster with stages: 1 = each CTA's slice stays in its shared-memory stage and every
                            phase reads it there (few registers, more CTAs an SM); 0 = taken into registers */
    int col_cache;       /* cluster: 1 = each CTA loads its slice of every COL input (weight, bias) into shared
                            memory once and every row reads it there, not from L2 */
    int cols_early;      /* register, cluster with its slice in registers: 1 = each thread's vectors of every COL
                            input (weight, bias) loaded into registers with the row's own loads, behind them (on
                            the row's `live`), so a row that nothing else hides (the grid in one wave) waits for
                            memory once, not again after its reductions. Rows of TN_COL_IN_REGISTERS_MAX_VECTORS
                            vectors a thread or fewer take them with the row's loads without it too, issued
                            ahead of those (ptxas hoists unconditional loads) */
    int peel;            /* register: 1 = each row's vectors start at its first 16-byte boundary (rows of any
                            length and alignment: odd N, offset views); the elements before it and after the
                            last whole vector, at most 2 vec - 2, are taken one each by the row's first threads.
                            The launch needs every ROW tensor at the same offset from a 16-byte boundary, in
                            its own elements, on every row (else the plan made without peel runs) */
    int pipeline;        /* register: 1 = each CTA loops over several row groups and loads the next one's vectors
                            into registers before it reduces and stores this one (the COL vectors held in
                            registers once for all of them) */
    int online;          /* register, tma, cluster: 1 = a fusion's max(t) and its sum of exp(t - max(t)) (softmax's)
                            reduced as one online pair: each thread's max, then its sum of exp(t - its max), the
                            parts merged by rescaling; one barrier round and one cluster exchange instead of two
                            (tn_analyze_online) */
    int pdl;             /* programmatic dependent launch (sm_90+): 0 off; 1 on, the next kernel triggered at the
                            kernel's top; 2 on, triggered at the top of each CTA's last row group (not tma-ws: a
                            grid that loops over row groups keeps its SMs to the end, see tn_plan_grid_loops);
                            3 on, no trigger: the next kernel is scheduled as this one's CTAs exit */
    int early_l2;        /* register, cluster, with pdl: 1 = before griddepcontrol.wait, the CTA's first row group
                            of every ROW input and its part of every COL input are prefetched into L2
                            (cp.async.bulk.prefetch.L2), so their DRAM latency overlaps the previous kernel's end;
                            that kernel's writes land in L2, so the loads after the wait still see them */
    int l2_slice;        /* cluster: 1 = each CTA's slice of a row stays in global memory and every phase reads it
                            again (from L2: the grid keeps at once only the rows whose re-read inputs fit in two
                            thirds of it), batch vectors a thread in flight; for rows too long for the cluster to
                            hold on chip. No stages, shared_slice, carry, col_cache, cols_early, prefetch */
    int early_stores;    /* register, tma, cluster without l2_slice: 1 = the ROW outputs that need no reduction and
                            that the first reduction phase computes anyway (add_rmsnorm's x + residual) are stored
                            in that phase, before the reductions, where the row stays on chip and its registers
                            leave room (codegen's early_output); 0 = every output after the reductions */
    char why[1024];      /* the scheduler's reasons, one clause per decision */
} tn_plan_desc;

/* Whether a and b are the same plan: kind and every field (the table that prints and parses them); not why. */
int tn_plan_desc_same(const tn_plan_desc *a, const tn_plan_desc *b);
/* Rows of at most this many vectors a thread take their COL vectors (weight, bias) into registers with the row's
   own loads whatever cols_early says: a latency-bound row then waits for memory once, not again after its
   reductions. */
#define TN_COL_IN_REGISTERS_MAX_VECTORS 2
/* Whether p's kind and fields let it take its COL vectors with the row's loads (plan field `cols_early`): register
   plans and cluster plans whose slice is in registers. */
int tn_plan_cols_early_kind(const tn_plan_desc *p);
/* Rows a plan whose inputs are read again in a later phase (looped, cluster with l2_slice) may have in flight
   for those reads to find them in L2: two thirds of it over the re-read bytes of a row, at least one. */
int64_t tn_plan_l2_resident_rows(const tn_analysis *a, const tn_device_props *d, int64_t cols);
/* Whether p's kind and fields let it reduce online pairs (plan field `online`): register, tma and cluster plans
   without peel or pipeline. */
int tn_plan_online_kind(const tn_plan_desc *p);
/* Whether p's kind and fields let it peel (plan field `peel`: vectors from each row's first 16-byte boundary, found
   at run time): register plans and cluster plans whose slice is loaded into registers by plain vector loads (no
   stages, col_cache or l2_slice). */
int tn_plan_peel_kind(const tn_plan_desc *p);
/* Whether p's kind lets it prefetch its first row group before the PDL wait (plan field `early_l2`): register and
   cluster plans. */
int tn_plan_early_l2_kind(const tn_plan_desc *p);
/* Whether p's CTAs loop over row groups (a persistent grid: fewer CTAs, or clusters, than row groups; not
   tma-ws, whose consumer groups step on their own). Where pdl is 2, its trigger comes late. */
int tn_plan_grid_loops(const tn_plan_desc *p);
/* Whether p's kind lets it store outputs before its reductions (plan field `early_stores`): register, tma and
   cluster plans that keep the row on chip (not l2_slice, not looped or tma-ws, which read it again or have not
   run so). */
int tn_plan_early_stores_kind(const tn_plan_desc *p);
/* Whether p's kind takes pdl 2 (the trigger at each CTA's last row group): all but tma-ws. */
int tn_plan_late_trigger_kind(const tn_plan_desc *p);

/* One kernel launch of a plan. A plan is carried out as a list of them, in
   order, each through tn_launch (rt/launch.h). */
typedef struct tn_launch_desc {
    const char *kernel; /* its name in the plan's module */
    int64_t grid;
    int block;
    int smem_bytes; /* dynamic */
    int cluster;    /* CTAs per cluster along x (1: no cluster) */
    int pdl;
} tn_launch_desc;

#define TN_MAX_LAUNCHES 2
/* The launches that carry out p; returns how many. */
int tn_plan_desc_launches(const tn_plan_desc *p, tn_launch_desc *out);

const char *tn_plan_kind_name(tn_plan_kind kind);
int tn_plan_kind_from_name(const char *name); /* -1 if unknown */

void tn_plan_desc_text(const tn_plan_desc *p, tn_strbuf *sb);
void tn_plan_desc_json(const tn_plan_desc *p, tn_strbuf *sb);
/* Parses the JSON form. On failure returns 0 and writes the reason to err. */
int tn_plan_desc_parse(const char *json, tn_plan_desc *out, char *err, size_t err_cap);
/* Checks that p can run fusion a at its shape on props with tensors aligned to
   align bytes. On failure returns 0 and writes the reason to err. */
int tn_plan_desc_check(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *props,
                       int align, char *err, size_t err_cap);
/* Threads of a tma-ws CTA that only issue copies: a warp, or a warp group
   when there are several consumer groups (register sharing works per warp group). */
int tn_plan_producer_threads(const tn_plan_desc *p);
/* CTAs an SM the plan's kernel is compiled for (its launch bounds' minimum
   blocks): a tma-ws CTA and, unless sized for more, a cluster CTA run alone on
   their SM; otherwise ctas_per_sm. 0: no bound, ptxas chooses. */
int tn_plan_bound_ctas(const tn_plan_desc *p);
/* Values a thread of a plan with `carry` keeps per row: each carried value of
   each vector it takes of its row (or slice); 0 for kinds that cannot carry
   (the streamed and looped rows). */
int64_t tn_plan_carry_floats(const tn_plan_desc *p, int num_carried);
/* The most a thread may carry: TN_MAX_CARRY_FLOATS, and 64 registers under what
   a thread of the plan's block gets at one CTA an SM (a tma plan of 1024
   threads carrying 64 values spilled at its 64 registers). */
int64_t tn_plan_carry_limit(const tn_plan_desc *p, const tn_device_props *props);
#define TN_MAX_CARRY_FLOATS 128
/* Vectors of a row each of a cluster's first cluster - 1 CTAs takes (its
   slice; the last CTA takes the rest, at least one): ceil(nv / cluster). */
int64_t tn_cluster_slice_vectors(int64_t nv, int cluster);
/* Whether a row of nv vectors splits so over `cluster` CTAs (2 or more):
   every CTA a slice of at least one vector. */
int tn_cluster_slices_fit(int64_t nv, int cluster);
/* ... and every peeled row's too: a row of cols elements whose vectors of vec start at its first 16-byte boundary
   has cols / vec of them at a boundary, (cols - vec + 1) / vec at the latest one; the slices are cut from the
   first count, the last CTA's is the rest, and takes at least one vector in every row. */
int tn_cluster_peeled_slices_fit(int64_t cols, int vec, int cluster);
/* Alignment (bytes, at most 16) the plan's widest access of an element of size
   bytes needs. */
int tn_plan_access_align(const tn_plan_desc *p, int size);

#endif
