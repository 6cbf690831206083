#pragma once
/// @file kernels.h
/// The kernels facade: one entry point per operation, dispatched to a backend (CPU reference,
/// fast CPU, CUDA). Compiles with plain g++; CUDA streams are passed as an opaque pointer.
/// Whether CUDA was built is a run-time question (builtWithCuda()), never a public macro.

#include "headroom/kernels/types.h"

#include <cstddef>
#include <cstdint>

namespace headroom::kernels {

/// Where a kernel runs.
enum class Backend {
    CpuRef, ///< the reference loops of reference.h (host pointers)
    Cpu,    ///< the threaded, vectorized CPU kernels of cpukernels.h (host pointers)
    Cuda,   ///< the CUDA kernels (device pointers; asynchronous on the given stream)
};

/// "cpu-ref", "cpu" or "cuda".
const char* backendName(Backend backend);

/// True when this build contains the CUDA kernels.
bool builtWithCuda();

/// True when @p backend can run here: always for the CPU backends; for Cuda when it is built
/// and cudaGetDeviceCount reports at least one device (any error counts as none).
bool backendAvailable(Backend backend);

/// True when @p backend runs this GEMV (valid arguments, supported layout and sizes).
bool supports(Backend backend, const GemvArgs& args);

/// True when @p backend runs this decode attention (Cuda: D a power of two 8..256 and
/// H / H_kv <= 16).
bool supports(Backend backend, const DecodeAttentionArgs& args);

/// y = x W^T on @p backend (shapes in GemvArgs). @p stream: the cudaStream_t for Cuda (nullptr
/// = default stream), ignored by the CPU backends. Errors: InvalidArgument, NotSupported,
/// NoDevice (Cuda not built), CudaError.
Status gemv(Backend backend, const GemvArgs& args, void* stream = nullptr);

/// Device scratch bytes that decodeAttention needs on @p backend (0 for the CPU backends);
/// depends on B, H, D and maxSeqTokens() only.
std::size_t attentionWorkspaceBytes(Backend backend, const DecodeAttentionArgs& args);

/// Decode attention on @p backend (shapes in DecodeAttentionArgs); for Cuda, args.workspace
/// must hold attentionWorkspaceBytes() bytes of device memory. Errors as gemv().
Status decodeAttention(Backend backend, const DecodeAttentionArgs& args, void* stream = nullptr);

/// Writes the new token's K and V of every sequence into its cache (KvAppendArgs) on @p backend
/// (both CPU backends run the same copy loop). The CPU checks seqLens and block ids (an index
/// outside the cache is InvalidArgument, nothing written); CUDA skips out-of-range rows.
/// Errors: InvalidArgument, NoDevice (Cuda not built), CudaError.
Status appendKv(Backend backend, const KvAppendArgs& args, void* stream = nullptr);

/// out[i] = fp16(in[i]) for i < @p count (round to nearest even), on @p backend: the fp32
/// attention output becomes the fp16 input of the o projection. Errors: InvalidArgument
/// (null pointers, count 0), NoDevice, CudaError.
Status floatToHalf(Backend backend, const float* in, std::uint16_t* out, std::size_t count, void* stream = nullptr);

} // namespace headroom::kernels
