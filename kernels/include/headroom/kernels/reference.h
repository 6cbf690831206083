#pragma once
/// @file reference.h
/// CPU reference kernels: the simplest correct loops, accumulating in fp32 (STYLE §9). Every
/// faster kernel (fast CPU, CUDA) is tested against these. All pointers are host memory.

#include "headroom/kernels/types.h"

namespace headroom::kernels {

/// y = x W^T one weight at a time through formats::loadWeight (shapes in GemvArgs).
/// Errors: InvalidArgument (see validate()); NotSupported for RowPacking::Interleaved8 (every
/// valid layout runs as stored).
Status gemvRef(const GemvArgs& args);

/// Decode attention, two passes per (sequence, query head): all scores, then max, exp, sum and
/// the weighted sum of V (shapes and formula in DecodeAttentionArgs). Contiguous and paged
/// caches go through the same loop, so their results are bit-identical for the same data.
/// Errors: InvalidArgument (also for a seqLens entry outside 1..maxSeqTokens() or a block id
/// outside 0..numBlocks-1).
Status decodeAttentionRef(const DecodeAttentionArgs& args);

} // namespace headroom::kernels
