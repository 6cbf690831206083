#pragma once
/// @file gemv.cuh
/// CUDA GEMV / skinny GEMM y = x W^T for every weight layout of quantblocks.h (host launchers
/// only; the kernels are static in gemv.cu). All pointers of the arguments are device memory.

#include <cuda_runtime.h>

#include "headroom/kernels/types.h"

namespace headroom::kernels::cuda {

/// True when gemv() runs @p args: any valid problem (validate()) with rows as stored
/// (RowPacking::Interleaved8 is the CPU's: NotSupported). The vectorized path (16-byte
/// loads, one scale per load) is used when rows are 16-byte multiples, W and x are 16-byte
/// aligned and groups are multiples of the weights per load (8 fp16, 16 int8, 32 int4/NF4);
/// other shapes run a correct scalar path. GGML q8_0 / q4_0 rows run a block path (one 32-weight
/// block per lane, its dot scaled once); q4_K / q6_K the scalar path.
bool supportsGemv(const GemvArgs& args);

/// True when gemv() takes the vectorized path for @p args (see supportsGemv).
bool gemvUsesVectorPath(const GemvArgs& args);

/// Enqueues y = x W^T on @p stream: one warp per output row, batch tiles of up to 8 rows of x per
/// block row (W is read ceil(B / 8) times), fp32 accumulation, warp-shuffle reduction.
/// Errors: InvalidArgument, CudaError (launch failure or an earlier asynchronous error).
Status gemv(const GemvArgs& args, cudaStream_t stream);

} // namespace headroom::kernels::cuda
