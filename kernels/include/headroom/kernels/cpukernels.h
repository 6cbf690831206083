#pragma once
/// @file cpukernels.h
/// Fast CPU kernels: the same operations as reference.h, split over std::thread workers, with
/// block decoding into small fp32 buffers and fixed-width inner loops that the compiler
/// vectorizes (an AVX2/FMA/F16C build of the loops is chosen at run time when the CPU has it).
/// All pointers are host memory.

#include "headroom/kernels/types.h"

#include <cstddef>
#include <cstdint>

namespace headroom::kernels {

/// CPUs this process may run on: the affinity mask's count (sched_getaffinity, so `taskset -c 0`
/// means 1), else std::thread::hardware_concurrency(); at least 1.
unsigned cpuThreads();

/// Options of the fast CPU kernels.
struct CpuOptions {
    unsigned threads = 0;   ///< worker threads; 0 = cpuThreads()
    bool portable = false;  ///< use the portable loops even where AVX2/FMA/F16C exist (tests both)
    /// B = 1 GEMVs of int8/int4 codes (scale territories of whole 32-column blocks) run on the
    /// integer codes with x quantized per 32 columns to int8 (d = max|x| / 127, as ggml's q8_0
    /// activations in its q4_0/q8_0 dot products): an extra relative error of about 2^-8 per
    /// activation; GGML block weights (any B) take x as ggml does, q8_0 blocks for q8_0/q4_0 and
    /// q8_K blocks for q4_K/q6_K (formats/ggmlblocks.h); false keeps the exact fp32 path of the
    /// reference.
    bool quantizeActivations = true;
};

/// True when gemvCpu runs @p args (every valid layout, B <= kMaxGemvBatch).
bool supportsGemvCpu(const GemvArgs& args);

/// y = x W^T (shapes in GemvArgs), rows of W split over threads; each row is decoded block by
/// block into fp32 and dotted with the fp32 copy of x (B >= 2: 3-row x 4-batch register tiles);
/// B = 1 int8/int4 rows on the integer codes (CpuOptions::quantizeActivations); GGML q8_0, q4_0,
/// q4_K, q6_K rows as integer block dots with the quantized x (AVX2, or the scalar block dots of
/// ggmlblocks.h with CpuOptions::portable), each row read once for the B activation rows. Errors:
/// InvalidArgument, NotSupported.
Status gemvCpu(const GemvArgs& args, CpuOptions options = {});

/// True when decodeAttentionCpu runs @p args (any valid problem).
bool supportsDecodeAttentionCpu(const DecodeAttentionArgs& args);

/// Decode attention with one online-softmax pass per (sequence, KV head) that serves all G
/// query heads of the group, so each KV head is read once (shapes in DecodeAttentionArgs).
/// Errors: InvalidArgument, NotSupported.
Status decodeAttentionCpu(const DecodeAttentionArgs& args, CpuOptions options = {});

/// The cache write of KvAppendArgs on the host: every index checked first (InvalidArgument,
/// nothing written), then one row copy per (sequence, KV head) for K and V.
Status appendKvCpu(const KvAppendArgs& args);

/// out[i] = fp16(in[i]) for i < @p count (formats::floatToHalf). Errors: InvalidArgument.
Status floatToHalfCpu(const float* in, std::uint16_t* out, std::size_t count);

/// Whether the AVX2/FMA/F16C build of the CPU loops is used on this machine.
bool cpuUsesAvx2();

} // namespace headroom::kernels
