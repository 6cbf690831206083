#pragma once
/// @file attention.cuh
/// CUDA decode attention over a contiguous or paged fp16 KV cache with GQA (host launchers only;
/// kernels are static in attention.cu). All pointers of the arguments are device memory.

#include <cuda_runtime.h>

#include <cstddef>

#include "headroom/kernels/types.h"

namespace headroom::kernels::cuda {

/// True when decodeAttention() runs @p args: valid arguments, D in {8, 16, 32, 64, 128, 256}
/// (eight elements per lane, a power-of-two number of lanes per token), q, k, v 16-byte aligned.
/// Any GQA ratio: query heads are served in chunks of up to 8 per pass over a KV head.
bool supportsDecodeAttention(const DecodeAttentionArgs& args);

/// Bytes of device scratch for @p args: per (sequence, query head, split) an fp32 max, sum and
/// D accumulators; depends on B, H, H_kv, D and maxSeqTokens() only.
std::size_t decodeAttentionWorkspaceBytes(const DecodeAttentionArgs& args);

/// Enqueues decode attention on @p stream in two kernels (split-K "flash decoding"): each block
/// streams one split of one sequence's KV head once for all its query heads with an online
/// softmax (exp2 of log2e-scaled scores); a second kernel merges the splits.
/// Preconditions it cannot check on the host: seqLens in 1..maxSeqTokens() and block ids in
/// 0..numBlocks-1 (tokens of an out-of-range block are skipped; a sequence with no token gives 0).
/// Errors: InvalidArgument (also a workspace smaller than decodeAttentionWorkspaceBytes()),
/// NotSupported (see supportsDecodeAttention), CudaError.
Status decodeAttention(const DecodeAttentionArgs& args, cudaStream_t stream);

} // namespace headroom::kernels::cuda
