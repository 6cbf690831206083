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
    /// GEMVs of int8/int4 codes (scale territories of whole 32-column blocks) run on the
    /// integer codes with x quantized per 32 columns to int8 (d = max|x| / 127, as ggml's q8_0
    /// activations in its q4_0/q8_0 dot products): an extra relative error of about 2^-8 per
    /// activation; GGML block weights (any B) take x as ggml does, q8_0 blocks for q8_0/q4_0 and
    /// q8_K blocks for q4_K/q6_K (formats/ggmlblocks.h); false keeps the exact fp32 path of the
    /// reference.
    bool quantizeActivations = true;
    /// The 8-row panel kernels use AVX-VNNI (vpdpbusd: 4 int8 products summed into int32 in one
    /// instruction, where AVX2 needs maddubs, madd and an add) when the CPU has it; false keeps
    /// the AVX2 form (the same integer sums; tests both).
    bool vnni = true;
    /// q8_0 / q4_0 GEMMs of B >= 4 run on Intel AMX tiles (TDPBSSD / TDPBUSD, one per 32-column
    /// block for 16 rows x 16 batch rows) where the CPU has AMX-INT8 and the kernel grants it;
    /// false keeps the 8-row panels (the same floats; tests both).
    bool amx = true;
};

/// True when packRows8 can pack matrices of @p layout (q8_0, q4_0, q4_K and q6_K).
bool packsRows8(formats::QuantLayout layout);

/// Rearranges a q8_0 / q4_0 matrix of @p rows x @p cols, stored row after row in @p data
/// (rows x rowBytes bytes), in place into RowPacking::Interleaved8 (types.h): each group of 8 rows
/// becomes K / 32 blocks of [8 fp16 scales][8 x 16 or 8 x 32 code bytes in chunks of 8 bytes,
/// chunk c from row c % 8], q4_0 nibbles XOR 0x88, as ggml's CPU repack of Q4_0 for AVX2
/// (`make_block_q4_0x8`, ggml/src/ggml-cpu/repack.cpp at ggml d99724f2); the rows past the last
/// whole group stay as stored. Done once when weights are loaded, so that the B = 1 GEMV reads one
/// stream of 8 rows and their 8 scales per block column. q4_K / q6_K (K whole superblocks of 256)
/// become K / 256 panel blocks of 8 x 144 / 8 x 210 bytes per group of 8 rows, as ggml's CPU repack
/// of Q4_K (`block_q4_Kx8`, repack.cpp) makes 8 blocks one; the order inside is Headroom's own
/// (kernels/ref/kpanel.h: codes in 4-byte chunks of each row, scales decoded once per 8 rows).
/// Errors: InvalidArgument (another layout, zero sizes, K not whole blocks, null data).
Status packRows8(formats::QuantLayout layout, std::uint32_t rows, std::uint32_t cols, std::uint8_t* data);

/// True when gemvCpu runs @p args (every valid layout, B <= kMaxGemvBatch).
bool supportsGemvCpu(const GemvArgs& args);

/// y = x W^T (shapes in GemvArgs), rows of W split over threads; each row is decoded block by
/// block into fp32 and dotted with the fp32 copy of x (B >= 2: 3-row x 4-batch register tiles);
/// B = 1 int8/int4 rows on the integer codes (CpuOptions::quantizeActivations); GGML q8_0, q4_0,
/// q4_K, q6_K rows as integer block dots with the quantized x (AVX2, or the scalar block dots of
/// ggmlblocks.h with CpuOptions::portable), each row read once for the B activation rows.
/// With AVX2 and quantized activations, q8_0 / q4_0 (B >= 2, or RowPacking::Interleaved8 at any
/// B) and int8 / int4 with whole 32-column scale territories (B >= 2) run as a GEMM on panels of
/// 8 interleaved rows (packed once by packRows8, or per panel for the B rows of one call): x is
/// quantized once per 32 columns, each weight block is loaded once for 4 activation rows and
/// yields the 8 rows' int32 sums in one register; q4_K / q6_K in RowPacking::Interleaved8 (any B)
/// run on their 8-row panels with x quantized once per call to q8_K blocks (AVX-VNNI or AVX2).
/// Interleaved8 rows on the portable or exact
/// paths run on an unpacked copy (slow: for tests and CPUs without AVX2). Errors:
/// InvalidArgument, NotSupported.
Status gemvCpu(const GemvArgs& args, CpuOptions options = {});

/// True when decodeAttentionCpu runs @p args (any valid problem).
bool supportsDecodeAttentionCpu(const DecodeAttentionArgs& args);

/// Decode attention with an online softmax whose pass over a KV head serves all G query heads
/// of the group, so each K and V row is read once (shapes in DecodeAttentionArgs). With AVX2 and
/// D a multiple of 8, the work items are token spans of a sequence (at least 256 tokens, about
/// total tokens / threads; flash-decoding's split of the KV sequence), each over every KV head
/// tile by tile, so a paged block is read whole, and merged by their maxima; otherwise one item
/// per (sequence, KV head). Errors: InvalidArgument, NotSupported.
Status decodeAttentionCpu(const DecodeAttentionArgs& args, CpuOptions options = {});

/// The cache write of KvAppendArgs on the host: every index checked first (InvalidArgument,
/// nothing written), then one row copy per (sequence, KV head) for K and V.
Status appendKvCpu(const KvAppendArgs& args);

/// out[i] = fp16(in[i]) for i < @p count (formats::floatToHalf). Errors: InvalidArgument.
Status floatToHalfCpu(const float* in, std::uint16_t* out, std::size_t count);

/// Whether the AVX2/FMA/F16C build of the CPU loops is used on this machine.
bool cpuUsesAvx2();

} // namespace headroom::kernels
