/* Code generation: deterministic CUDA C for a (fusion, plan). */
#ifndef TN_CODEGEN_H
#define TN_CODEGEN_H

#include "sched/plan.h"

#define TN_KERNEL_NAME "tn_kernel"

/* Appends the kernel's whole translation unit to sb. f must be verified and
   p checked against it. The kernel's parameters, in order: for each input a
   pointer (ROW inputs also a long long row stride), for each output likewise,
   one float per parameter, then long long M. */
void tn_codegen(const tn_fusion *f, const tn_analysis *a, const tn_plan_desc *p, tn_strbuf *sb);

#endif
