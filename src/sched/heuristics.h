/* The scheduler: a pure function of (analysis, shape, alignment, device) to a
   plan. It runs, and is tested, without a GPU. */
#ifndef TN_HEURISTICS_H
#define TN_HEURISTICS_H

#include "sched/plan.h"

typedef struct tn_schedule_request {
    const tn_analysis *analysis;
    int64_t rows, cols;
    int align;   /* bytes every pointer and row stride is aligned to (power of two) */
    int kind;    /* a tn_plan_kind to force, or -1 to choose */
    const tn_device_props *props;
    int pdl;     /* 1: programmatic dependent launch (sm_90+) */
    unsigned avoid; /* bit 1 << kind: kinds to pass over unless forced (ptxas spilled in their plan) */
    int max_cluster; /* 0, or the largest cluster a plan may take (the driver placed fewer clusters than planned) */
    int no_shared_slice; /* 1: pass over the shared slices (ptxas left their plan under TN_SHARED_SLICE_CTAS an SM) */
    int no_peel;         /* 1: no peeled register plan (the launch's tensors are not at one offset from 16 bytes) */
    int no_pipeline;     /* 1: no pipelined register plan (ptxas spilled in the scheduler's) */
    int wide_slices;     /* 1: heavy fusions keep the wider slices (more vectors a thread in smaller CTAs, so more
                            clusters an SM): the driver placed fewer clusters of the narrower than their rows */
} tn_schedule_request;

/* Fills out; on failure returns 0 with the reason in err. The plan's why
   says, for every kind preferred to the chosen one, why it was passed over. */
int tn_schedule(const tn_schedule_request *req, tn_plan_desc *out, char *err, size_t err_cap);
/* Where the driver places fewer of few-row cluster plan p's clusters than its rows (planned under *req), the
   plan to build instead into next, *req changed to what it was planned under (later re-plans keep it); 0 where
   p stays (cluster.c says which plan and why). */
int tn_schedule_short_clusters(tn_schedule_request *req, const tn_plan_desc *p, tn_plan_desc *next);
/* Every candidate plan of every kind for req (what `tmanorm tune` times); returns how many. */
int tn_schedule_candidates(const tn_schedule_request *req, tn_plan_desc *out, int cap);
/* A kind's own rules for a plan, after tn_plan_desc_check's common ones. */
int tn_kind_check(const tn_plan_desc *p, const tn_analysis *a, const tn_device_props *d, char *err, size_t cap);
/* Shared memory of a tma plan's CTA: the ring (dynamic) and the reduction scratch (static). */
int64_t tn_tma_dynamic_smem(const tn_analysis *a, const tn_plan_desc *p);
int64_t tn_tma_static_smem(const tn_analysis *a, const tn_plan_desc *p);
/* Dynamic shared memory of a cluster plan: its stages (each the CTA's slice of
   one row of every ROW input), an mbarrier per stage, then, with col_cache,
   from a 16-byte boundary, the CTA's slice of every COL input. */
int64_t tn_cluster_dynamic_smem(const tn_analysis *a, const tn_plan_desc *p);
/* Where a cluster plan's cache of its COL slices (col_cache) starts in its dynamic shared memory: after the
   stages and their barriers, 16-byte aligned. */
int64_t tn_cluster_col_offset(const tn_analysis *a, const tn_plan_desc *p);
/* Makes cluster plan p its variant whose slice stays in one stage of shared
   memory, read there by every phase, a cluster a row (shared_slice; no carry,
   no prefetch, ctas_per_sm left to ptxas). */
void tn_cluster_share_slice(const tn_analysis *a, tn_plan_desc *p);
/* A cluster plan streams its slices through at most this many stages. */
#define TN_CLUSTER_MAX_STAGES 2
/* The scheduler's shared slices leave at least this many CTAs an SM (one's copy
   lands while the other reduces), in the smallest cluster that does: bigger
   slices won in tune wherever two fit (cluster.c, share_long_slices). */
#define TN_SHARED_SLICE_CTAS 2
/* ... and run in at least this many waves of CTAs (the last, partial one costs little). */
#define TN_SHARED_SLICE_MIN_WAVES 8
/* ... from this many for clusters of 4: the persistent plan they replace holds clusters of 4 at one CTA an SM,
   which the driver packs onto 10/11 of the SMs (TN_CLUSTER_GPC_SM_SHARE_*), a larger loss than the last wave's
   (cluster.c, share_long_slices). */
#define TN_SHARED_SLICE_MIN_WAVES_4 5
/* A tma plan launches a row group a CTA, one stage each, in waves, from this many waves of the CTAs an SM's
   shared memory holds (tma.c, tn_schedule_tma). */
#define TN_TMA_MIN_WAVES 8
/* Grids whose first wave runs this many CTAs an SM or more (by the launch bound, or the registers) take early_l2
   only where that wave's rows move at most half the L2 (others up to the whole L2: heuristics.c, early_l2_fits). */
#define TN_EARLY_L2_CROWDED_CTAS 3

/* tma-ws: shared memory per slot and per CTA, and the register split between
   the producer warp group and C consumer groups (setmaxnreg): the producer
   keeps producer_need, each consumer thread gets an equal share of the rest in
   8-register granules, at most 256; 0 and why where sharing is impossible or
   would not help. The producer needs TN_WS_PRODUCER_REGS, 8 more for each
   further ROW input it copies (ptxas spills the producer's loop below that). */
int64_t tn_ws_stage_bytes(const tn_analysis *a, const tn_plan_desc *p);
int64_t tn_ws_dynamic_smem(const tn_analysis *a, const tn_plan_desc *p);
int64_t tn_ws_static_smem(const tn_analysis *a, const tn_plan_desc *p);
int tn_ws_producer_regs(int stage_inputs);
int tn_ws_register_split(int regs_per_sm, int block_threads, int consumer_groups, int producer_need, int *producer,
                         int *consumer, char *err, size_t cap);
#define TN_WS_PRODUCER_REGS 40
#define TN_WS_MAX_GROUPS 4 /* one producer warp per consumer group, in one warp group */
/* The scheduler picks tma-ws for rows of at least this many bytes (all ROW
   inputs), with at least this many row groups per SM (see tma_ws.c, tn_schedule_tma_ws). */
#define TN_WS_MIN_ROW_BYTES (64 * 1024)
#define TN_WS_MIN_GROUPS_PER_SM 2

/* The cluster plan takes few rows (under half the SMs) of at least
   TN_CLUSTER_FEW_ROW_BYTES, where one SM alone would stream a long row, and
   splits them over up to 8 CTAs while slices stay at least TN_CLUSTER_MIN_SLICE
   bytes: smaller ones spend more on the cluster barrier than they save. */
#define TN_CLUSTER_FEW_ROW_BYTES (64 * 1024)
#define TN_CLUSTER_MIN_SLICE (8 * 1024)
/* Bytes an SM keeps in flight to hold the copy rate (H200: 4.2 TB/s over 132 SMs at ~1 us of latency): a
   problem of fewer rows' bytes is latency-bound, and rows then keep the unpeeled plan (peel_vec). */
#define TN_PEEL_BYTES_AN_SM (32 * 1024)
/* Most CTAs an SM a cluster plan spreads few rows over (cluster_pick,
   spread_short_rows), with one more to spare: every cluster must run at once. */
#define TN_CLUSTER_MAX_CTAS_AN_SM 4

/* Threads a CTA of heavy_few_rows_over_eight's clusters: 4 warps, each reduction's cross-warp step short. */
#define TN_CLUSTER_HEAVY_FEW_THREADS 128
/* The share of the SMs that clusters of 4 or more CTAs are estimated to place on (GPC packing: 120 of 132 on
   the H100, bench/probes/gpc.cu), where a rule needs every cluster at once (cluster.c, gpc_placed_clusters). */
#define TN_CLUSTER_GPC_SM_SHARE_NUM 10
#define TN_CLUSTER_GPC_SM_SHARE_DEN 11
/* Rows one CTA holds in registers are spread over a cluster, where there are
   fewer rows than a quarter of the SMs, above this many bytes and under
   TN_CLUSTER_FEW_ROW_BYTES (see spread_short_rows). */
#define TN_CLUSTER_SHORT_ROW_BYTES (16 * 1024)
/* Rows over a quarter of the SMs (up to half) are spread over clusters only where the bytes the idle SMs
   would take over exceed this many a row: its ROW inputs read and outputs written (the COL ones stay in L2),
   times the share of the SMs that one CTA a row leaves idle. Below it the cluster's exchange costs more than
   those SMs save (see many_rows_spread). */
#define TN_CLUSTER_SPREAD_IDLE_BYTES (68 * 1024)
/* The same for fusions of two or more reduction levels without special functions in two phases (layernorm):
   each level's reduction idles the register plan's one CTA an SM, so clusters pay from fewer bytes. */
#define TN_CLUSTER_SPREAD_IDLE_BYTES_LEVELS (44 * 1024)
/* Vectors a thread of a cluster plan keeps for few rows (16 for many): with
   every row already on its own SMs, fewer threads holding more each reduce
   faster (tune, softmax 33 x 98304 bf16: 128 threads x 24 over 4 CTAs
   9.31 us, 256 x 12 11.21). */
#define TN_CLUSTER_FEW_BATCH 24
/* Few rows whose clusters take one CTA an SM each keep at most this many
   vectors a thread: each CTA's time is then its loads' latency plus each
   thread's serial work over its vectors, twice (reduce, then normalize and
   store), so more warps of fewer vectors finish sooner (tune, H200, bf16,
   2026-12-05: rmsnorm 8 x 131072 3.93 us over 8 CTAs of 256 x 8 against 4.64
   at 128 x 16; layernorm 4 x 262144 5.29 at 256 x 8 against 5.74 at 128 x 16,
   both over 16). */
#define TN_CLUSTER_ONE_WAVE_BATCH 8
/* Slices at least this large go on doubling into non-portable clusters of 16
   (sm_90) for few rows, where each of the 16 takes an SM of its own: more SMs
   streaming one long row (tune, H200, bf16, 2026-12-05: rmsnorm 1 x 262144
   3.76 us over 16 CTAs of 32 KiB against 4.45 over 8 of 64 KiB; softmax 4.29
   against 5.51; at 16 KiB slices no gain: rmsnorm 8 x 131072 3.93 either way). */
#define TN_CLUSTER_NONPORTABLE_MIN_SLICE (32 * 1024)
/* ... and, for fusions of special functions in two or more phases, slices at
   least this large, at several CTAs an SM (cluster.c, few_rows_double; the
   smallest measured gain: softmax 33 x 98304's 12 KiB slices, 6.51 us over 16
   CTAs of 128 x 6 against 7.10 over 8 of 256 x 6, H100; 8 KiB unmeasured). */
#define TN_CLUSTER_NONPORTABLE_HEAVY_MIN_SLICE (12 * 1024)

/* Register plan limits, exposed for the tests' invariants. */
/* The fewest vectors a cluster thread is given to keep (slice_batch). */
#define TN_REG_BATCH_TARGET 4
/* Vectors a thread keeps from which a row or slice that does not divide among the threads is avoided (ragged). */
#define TN_RAGGED_MIN_VECTORS 3
/* Rows of up to this many vectors take two a thread, at up to 128 threads
   (short_row_threads): tune on the H200, bf16, 2026-12-04: rmsnorm 16384 x
   1024 17.4 us at 64 threads x 2 against 19.0 at 32 x 4; 4096 x 2048 9.5
   against 11.4; 16384 x 2048 33.0 against 34.5; layernorm and softmax 16384 x
   1024 3-4%. Not 256 x 2 for rows of 512 vectors: layernorm 32768 x 4096 155.0
   us against 130.8 at 128 x 4 (rmsnorm 4096 x 4096 gained, 18.0 against
   18.9). Longer rows gain from more vectors a thread (below). */
#define TN_REG_SHORT_ROW_VECTORS 512
#define TN_REG_SHORT_ROW_THREADS 128
/* Longer rows take up to 8 vectors a thread from 128 threads, so they keep up
   to 8 x 16 bytes in flight per thread and fewer warps meet in each reduction.
   From tune on the H200 (bf16): layernorm 4096 x 16384 69.7 us at 256 threads
   x 8 against 103.5 at 512 x 4; layernorm 10000 x 6144 62.4 us at 128 x 6
   against 65.3 at 256 x 3. */
#define TN_REG_BATCH_LONG 8
#define TN_REG_LONG_ROW_THREADS 128
/* ... and up to 16 once a row has 256 threads: tune on the H200 (bf16),
   softmax 4096 x 24576 99.7 us at 256 threads x 12 against 145.3 at 512 x 6;
   layernorm 4096 x 32768 154.4 at 256 x 16, the best register plan. */
#define TN_REG_BATCH_LONGER 16
#define TN_REG_LONGER_ROW_THREADS 256
/* Few rows are widened to at most this many threads per row: a 1024-thread
   row waits on 32 warps at each reduction (rmsnorm 64 x 20480: 4.05 us at 512
   threads, 5.06 at 1024). */
#define TN_REG_WIDEN_MAX 512
/* Registers a thread needs to hold `words` of row buffer. Measured with the
   compile tier: the unrolled phases keep about one temporary per buffered
   word live (bf16 values unpacked to f32), so a 32-word buffer spills under
   the 64-register cap of a 1024-thread CTA and a 64-word one under the 128
   cap of a 512-thread CTA; f32 layernorm spills at 40 words under 64. */
#define TN_REG_NEED(words) (2 * (words) + 24)
/* ... plus, in a cluster plan, the exchange's remote addresses, barrier and
   phase: layernorm 4096 x 65536 at 1024 threads x 4 vectors (56 by the rule
   above) spilled 16 bytes under the 64-register cap; 8 more were not enough. */
#define TN_CLUSTER_EXCHANGE_REGS 12
/* Fewest registers a thread a cluster kernel is compiled for when it aims at
   several CTAs an SM (ptxas spilled at 40; 168 held 16 vectors with room). */
#define TN_CLUSTER_MIN_REGS 64
/* Rows an SM up to which heavy rows that two of fit in shared memory split over a cluster rather than
   stream through the tma ring (cluster.c, tn_schedule_cluster, heavy_waves). */
#define TN_HEAVY_CLUSTER_ROWS_AN_SM 16
/* Threads a CTA the register plan aims for, in rows of fewer threads: tune on
   the H200 (bf16, 2026-12-04): rmsnorm 16384 x 1024 17.4 us at 2 rows of 64
   threads against 18.1 at 4; 4096 x 2048 9.5 at one row of 128 against 9.9 at
   2; 65536 x 512 the same at 4 rows of 32 as at 16. */
#define TN_BLOCK_TARGET 128
/* Register-plan grids of several waves are compiled for the CTAs an SM the
   row's registers allow where that is at most this many (many_wave_ctas). */
#define TN_REG_BOUND_MAX_CTAS 4
/* The register plan's rows are pipelined over a persistent grid (register.c, pipeline_few_groups) where the
   row's registers leave at most TN_PIPELINE_MAX_CTAS CTAs an SM and the rows come to at most
   TN_PIPELINE_MAX_GROUPS_AN_SM an SM: the CTAs of one wave start together and wait for their loads together,
   and a few waves give their phases no time to drift apart. */
#define TN_PIPELINE_MAX_CTAS 2
#define TN_PIPELINE_MAX_GROUPS_AN_SM 6
/* Lone CTAs (cluster.c, lone_ctas_few_waves) split over looping clusters up to this many rows an SM. A/B on the
   H100 (2026-12-07-h100-s22-ab-lone.log, clusters against one row a CTA): 2.3-2.9 rows an SM 0.878-1.038,
   geomean 0.96; 3.9 (512 rows) 0.944-1.038, about even; 5.3-6 rows (700-792) 0.965-1.055, geomean 1.02. */
#define TN_LONE_MAX_ROWS_AN_SM 4
/* Lone rows under two waves (cluster.c) over clusters that all run at once only where the register plan leaves at
   least 1 in this many SMs idle (an all-at-once split gains only the idle SMs' share of the bytes). */
#define TN_LONE_MIN_IDLE_SHARE 8
/* Rows of at most TN_COL_IN_REGISTERS_MAX_VECTORS vectors a thread take cols_early (their COL loads behind the row's)
   only where the SMs hold at most this many rows each in one wave. H100 A/B of the COL loads on `live` against
   unconditional (2026-12-07-h100-s26-ab-nocolive.log, -s25-ab-colive.log): 0.97-0.99 of the time at up to 3.9 rows
   an SM (rmsnorm 1 x 4096, layernorm and add_rmsnorm 512 x 512, add_rmsnorm 264 x 4096), 1.04-1.06 at 31 (layernorm
   4096 x 512-2048, 16384 x 512), where ptxas, taking them after the first reduction, makes each of an SM's many CTAs
   wait for L2 a second time. */
#define TN_COLS_BEHIND_MAX_ROWS_AN_SM 4
/* Lone rows under two waves split only above this many bytes a row (of the ROW inputs kept on chip: both of
   add_rmsnorm's): each CTA of a cluster of 2 then holds at least a short row's bytes (TN_CLUSTER_SHORT_ROW_BYTES)
   for the exchange it adds. The A/B's gains were at rows of 48-96 KiB an input (2026-12-07-h100-s24-ab-lone-*.log);
   at 24 KiB the choice flipped between cluster shapes every few rows (clusters of 2 all at once, of 8 looping, of 2
   streamed) with nothing measured for any. */
#define TN_LONE_WAVE_MIN_ROW_BYTES (2 * TN_CLUSTER_SHORT_ROW_BYTES)

#endif
