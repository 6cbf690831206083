#pragma once
// The memory bar's slices of a layer split (core's splitbill.h): the GPU's own bill (the GPU
// layers' weights and KV, the plan's overheads, free, the engine's reserve) and the host's row
// (weights kept in host memory, with mmap said as mapped file pages, the CPU_REPACK copy, the
// host KV and buffers). Every size is a core figure; this file only picks the slice kinds.

#include "breakdownmodel.h"

#include "headroom/core/splitbill.h"

namespace headroom::app {

/// The GPU row of @p plan's split @p bill; empty when the bill has no GPU side (no layer split).
std::vector<BillSegment> gpuSplitSegments(const PlanResult& plan, const SplitBill& bill);
/// The host row of @p bill; empty when nothing stays in host memory.
std::vector<BillSegment> hostSegments(const SplitBill& bill);

} // namespace headroom::app
