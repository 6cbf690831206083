#pragma once
/// @file kvappend.cuh
/// CUDA cache write of the decode step and the fp32 -> fp16 conversion (host launchers; device
/// pointers).

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "headroom/kernels/types.h"

namespace headroom::kernels::cuda {

/// Enqueues the KvAppendArgs write on @p stream: grid (B, H_kv), one thread per element of D.
/// Rows whose seqLens or block id fall outside the cache are skipped (device data is not read on
/// the host). Errors: InvalidArgument, CudaError.
Status appendKv(const KvAppendArgs& args, cudaStream_t stream);

/// Enqueues out[i] = __float2half_rn(in[i]) for i < @p count. Errors: InvalidArgument, CudaError.
Status floatToHalf(const float* in, std::uint16_t* out, std::size_t count, cudaStream_t stream);

} // namespace headroom::kernels::cuda
