// CUDA GEMV / skinny GEMM y = x W^T over the layouts of quantblocks.h.
// One warp per output row; each lane streams 16-byte loads of its row (GGML q8_0 / q4_0: whole
// 32-weight blocks), decodes them in registers and accumulates fp32 partial sums for a tile of up
// to 8 rows of x; a warp shuffle reduces.

#include "gemv.cuh"

#include <cuda_fp16.h>

#include <cstdint>

#include "device.cuh"
#include "headroom/formats/quantblocks.h"

namespace headroom::kernels::cuda {

namespace fmt = headroom::formats;

namespace {

/// Warps (= output rows) per block: 128 threads, 16 resident blocks per SM on sm_80..sm_90.
constexpr int kWarpsPerBlock = 4;
constexpr int kWarpSize = 32;
/// Largest batch tile: each lane keeps this many fp32 partial sums.
constexpr int kMaxBatchTile = 8;
static_assert(kWarpsPerBlock * kWarpSize <= 1024, "block size limit");
static_assert(kMaxGemvBatch % kMaxBatchTile == 0, "batch tiles cover kMaxGemvBatch evenly");

/// Weights in one 16-byte load of a row.
__host__ __device__ constexpr int weightsPerLoad(fmt::QuantType type) {
    return type == fmt::QuantType::Fp16 ? 8 : type == fmt::QuantType::Int8 ? 16 : 32;
}
static_assert(weightsPerLoad(fmt::QuantType::Int4) * 4 / 8 == 16, "32 int4 codes fill 16 bytes");
static_assert(fmt::kNf4BlockWeights % weightsPerLoad(fmt::QuantType::Nf4) == 0, "an NF4 block is whole loads");

/// Everything a GEMV kernel needs, passed by value.
struct GemvParams {
    fmt::QuantLayout layout;
    std::uint32_t rows;          // N
    std::uint32_t cols;          // K
    std::uint32_t batch;         // B
    std::uint64_t rowBytes;      // bytes of one stored row
    const std::uint8_t* data;    // [N][rowBytes]
    const std::uint16_t* scales; // fp16 [scaleCount(layout, N, K)], null for fp16
    const std::uint16_t* x;      // fp16 [B][K]
    void* y;                     // [B][N] float or fp16
    bool yHalf;                  // y is fp16
};

/// Two fp16 in one 32-bit word -> floats.
__device__ __forceinline__ float2 halves2(std::uint32_t word) {
    __half2 h;
    static_assert(sizeof h == sizeof word, "half2 is 4 bytes");
    memcpy(&h, &word, sizeof h);
    return __half22float2(h);
}

/// Word @p i (0..3) of a 16-byte load; i is a compile-time constant after unrolling.
__device__ __forceinline__ std::uint32_t wordOf(const uint4& v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// Decodes weights 8s..8s+7 of a 16-byte load into w (without the scale).
template <fmt::QuantType kType>
__device__ __forceinline__ void decode8(const uint4& raw, int s, const float* nf4Levels, float (&w)[8]) {
    if constexpr (kType == fmt::QuantType::Fp16) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float2 f = halves2(wordOf(raw, i));
            w[2 * i] = f.x;
            w[2 * i + 1] = f.y;
        }
    } else if constexpr (kType == fmt::QuantType::Int8) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const std::uint32_t word = wordOf(raw, 2 * s + i);
#pragma unroll
            for (int j = 0; j < 4; ++j)
                w[4 * i + j] = static_cast<float>(static_cast<std::int8_t>((word >> (8 * j)) & 0xffu));
        }
    } else {
        const std::uint32_t word = wordOf(raw, s); // 4 bytes = 8 codes, low nibble first
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const std::uint32_t code = (word >> (4 * j)) & 0xfu;
            if constexpr (kType == fmt::QuantType::Int4)
                w[j] = static_cast<float>(static_cast<int>(code << 28) >> 28);
            else
                w[j] = nf4Levels[code];
        }
    }
}

/// y[b][n] for one row n per warp and batch rows b0 .. b0 + kBatchTile - 1.
/// kVector: 16-byte loads of W and x (alignment and group conditions checked by the launcher), or
/// for q8_0 / q4_0 one whole block per lane; else one weight per lane per step through
/// formats::loadWeight.
template <fmt::QuantType kType, int kBatchTile, bool kVector>
static __global__ void __launch_bounds__(kWarpsPerBlock * kWarpSize) gemvKernel(const GemvParams p) {
    __shared__ float nf4Levels[fmt::kNf4Levels];
    if constexpr (kType == fmt::QuantType::Nf4) {
        if (threadIdx.x < fmt::kNf4Levels)
            nf4Levels[threadIdx.x] = fmt::nf4Level(threadIdx.x);
        __syncthreads();
    }
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const std::uint32_t n = blockIdx.x * kWarpsPerBlock + static_cast<std::uint32_t>(warp);
    const std::uint32_t b0 = blockIdx.y * kBatchTile;
    if (n >= p.rows)
        return; // whole warp leaves together; no block-wide barrier follows
    const std::uint32_t tile = p.batch - b0 < kBatchTile ? p.batch - b0 : kBatchTile;
    const std::uint8_t* __restrict__ row = p.data + n * p.rowBytes;
    const std::uint16_t* __restrict__ rowScales =
        p.scales ? p.scales + fmt::rowScaleOffset(p.layout, n, p.cols) : nullptr;
    const std::uint16_t* __restrict__ x = p.x + static_cast<std::uint64_t>(b0) * p.cols;

    float acc[kBatchTile];
#pragma unroll
    for (int bt = 0; bt < kBatchTile; ++bt)
        acc[bt] = 0.0f;

    if constexpr (kVector && (kType == fmt::QuantType::Q8_0 || kType == fmt::QuantType::Q4_0)) {
        // GGML blocks of 32 weights, one block per lane per step: the fp16 scale d, then 32 int8
        // codes (q8_0, 34 bytes) or 16 bytes of nibbles, weight j in the low nibble of byte j and
        // weight j + 16 in its high nibble, both offset by 8 (q4_0, 18 bytes; ggml-quants.c
        // dequantize_row_q8_0 / dequantize_row_q4_0). The block's dot is scaled once.
        constexpr bool kQ4 = kType == fmt::QuantType::Q4_0;
        constexpr std::uint32_t kBlockBytes = kQ4 ? 18 : 34;
        const std::uint32_t blocks = p.cols / 32;
        for (std::uint32_t blk = static_cast<std::uint32_t>(lane); blk < blocks; blk += kWarpSize) {
            const std::uint8_t* __restrict__ b = row + static_cast<std::uint64_t>(blk) * kBlockBytes;
            const float d = fmt::halfToFloat(static_cast<std::uint16_t>(__ldg(b) | (__ldg(b + 1) << 8)));
            float w[32];
            if constexpr (kQ4) {
#pragma unroll
                for (int j = 0; j < 16; ++j) {
                    const int q = __ldg(b + 2 + j);
                    w[j] = static_cast<float>((q & 0xf) - 8);
                    w[j + 16] = static_cast<float>((q >> 4) - 8);
                }
            } else {
#pragma unroll
                for (int j = 0; j < 32; ++j)
                    w[j] = static_cast<float>(static_cast<std::int8_t>(__ldg(b + 2 + j)));
            }
            const std::uint64_t k0 = static_cast<std::uint64_t>(blk) * 32;
#pragma unroll
            for (int bt = 0; bt < kBatchTile; ++bt) {
                if (bt < static_cast<int>(tile)) {
                    const std::uint16_t* __restrict__ xb = x + static_cast<std::uint64_t>(bt) * p.cols + k0;
                    float dot = 0.0f;
#pragma unroll
                    for (int j = 0; j < 32; ++j)
                        dot = fmaf(w[j], fmt::halfToFloat(__ldg(xb + j)), dot);
                    acc[bt] = fmaf(dot, d, acc[bt]);
                }
            }
        }
    } else if constexpr (kVector) {
        constexpr int kPerLoad = weightsPerLoad(kType);
        const std::uint32_t loads = p.cols / kPerLoad;
        const uint4* __restrict__ rowVec = reinterpret_cast<const uint4*>(row);
#pragma unroll 4
        for (std::uint32_t c = static_cast<std::uint32_t>(lane); c < loads; c += kWarpSize) {
            const uint4 raw = __ldg(rowVec + c);
            const std::uint32_t k0 = c * kPerLoad;
            float scale = 1.0f;
            if constexpr (kType != fmt::QuantType::Fp16)
                scale = fmt::halfToFloat(__ldg(rowScales + fmt::scaleIndexInRow(p.layout, k0)));
            float partial[kBatchTile];
#pragma unroll
            for (int bt = 0; bt < kBatchTile; ++bt)
                partial[bt] = 0.0f;
#pragma unroll
            for (int s = 0; s < kPerLoad / 8; ++s) {
                float w[8];
                decode8<kType>(raw, s, nf4Levels, w);
#pragma unroll
                for (int bt = 0; bt < kBatchTile; ++bt) {
                    if (bt < static_cast<int>(tile)) {
                        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + static_cast<std::uint64_t>(bt) * p.cols + k0 + 8 * s));
#pragma unroll
                        for (int i = 0; i < 4; ++i) {
                            const float2 xf = halves2(wordOf(xv, i));
                            partial[bt] = fmaf(w[2 * i], xf.x, partial[bt]);
                            partial[bt] = fmaf(w[2 * i + 1], xf.y, partial[bt]);
                        }
                    }
                }
            }
#pragma unroll
            for (int bt = 0; bt < kBatchTile; ++bt)
                acc[bt] = fmaf(partial[bt], scale, acc[bt]);
        }
    } else {
        for (std::uint32_t k = static_cast<std::uint32_t>(lane); k < p.cols; k += kWarpSize) {
            const float w = fmt::loadWeight(p.layout, row, rowScales, k);
#pragma unroll
            for (int bt = 0; bt < kBatchTile; ++bt)
                if (bt < static_cast<int>(tile))
                    acc[bt] = fmaf(w, fmt::halfToFloat(x[static_cast<std::uint64_t>(bt) * p.cols + k]), acc[bt]);
        }
    }

#pragma unroll
    for (int bt = 0; bt < kBatchTile; ++bt)
#pragma unroll
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
            acc[bt] += __shfl_xor_sync(0xffffffffu, acc[bt], offset);
    if (lane == 0) {
#pragma unroll
        for (int bt = 0; bt < kBatchTile; ++bt) {
            if (bt < static_cast<int>(tile)) {
                const std::uint64_t at = static_cast<std::uint64_t>(b0 + bt) * p.rows + n;
                if (p.yHalf)
                    static_cast<std::uint16_t*>(p.y)[at] = fmt::floatToHalf(acc[bt]);
                else
                    static_cast<float*>(p.y)[at] = acc[bt];
            }
        }
    }
}

bool aligned16(const void* p) {
    return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

template <fmt::QuantType kType, int kBatchTile>
void launchTile(const GemvParams& p, bool vector, dim3 grid, cudaStream_t stream) {
    const dim3 block(kWarpsPerBlock * kWarpSize);
    if (vector)
        gemvKernel<kType, kBatchTile, true><<<grid, block, 0, stream>>>(p);
    else
        gemvKernel<kType, kBatchTile, false><<<grid, block, 0, stream>>>(p);
}

template <fmt::QuantType kType>
void launchType(const GemvParams& p, bool vector, int tile, cudaStream_t stream) {
    const dim3 grid((p.rows + kWarpsPerBlock - 1) / kWarpsPerBlock, (p.batch + tile - 1) / tile);
    switch (tile) {
    case 1: launchTile<kType, 1>(p, vector, grid, stream); break;
    case 2: launchTile<kType, 2>(p, vector, grid, stream); break;
    case 4: launchTile<kType, 4>(p, vector, grid, stream); break;
    default: launchTile<kType, kMaxBatchTile>(p, vector, grid, stream); break;
    }
}

} // namespace

bool supportsGemv(const GemvArgs& args) {
    return validate(args) == Status::Ok && args.weights.packing == RowPacking::AsStored;
}

bool gemvUsesVectorPath(const GemvArgs& args) {
    const WeightMatrix& w = args.weights;
    if (fmt::isGgmlBlockType(w.layout.type))
        return false;
    const int perLoad = weightsPerLoad(w.layout.type);
    return fmt::rowBytes(w.layout, w.cols) % 16 == 0 && w.cols % 8 == 0 && aligned16(w.data) && aligned16(args.x) &&
           (w.layout.scope != fmt::ScaleScope::Group || w.layout.groupWeights % static_cast<std::uint32_t>(perLoad) == 0);
}

Status gemv(const GemvArgs& args, cudaStream_t stream) {
    if (Status status = validate(args); status != Status::Ok)
        return status;
    if (args.weights.packing != RowPacking::AsStored)
        return Status::NotSupported; // the CPU's interleaved rows (RowPacking::Interleaved8)
    const WeightMatrix& w = args.weights;
    GemvParams p{w.layout, w.rows, w.cols, args.batch, fmt::rowBytes(w.layout, w.cols), w.data, w.scales,
                 args.x, args.y, args.yType == OutputType::Fp16};
    // Smallest power-of-two tile holding the batch, at most kMaxBatchTile (more tiles re-read W).
    const int tile = args.batch == 1 ? 1 : args.batch == 2 ? 2 : args.batch <= 4 ? 4 : kMaxBatchTile;
    const bool vector = gemvUsesVectorPath(args);
    switch (w.layout.type) {
    case fmt::QuantType::Fp16: launchType<fmt::QuantType::Fp16>(p, vector, tile, stream); break;
    case fmt::QuantType::Int8: launchType<fmt::QuantType::Int8>(p, vector, tile, stream); break;
    case fmt::QuantType::Int4: launchType<fmt::QuantType::Int4>(p, vector, tile, stream); break;
    case fmt::QuantType::Nf4: launchType<fmt::QuantType::Nf4>(p, vector, tile, stream); break;
    // q8_0 / q4_0: one 32-weight block per lane (the block path of gemvKernel); K a multiple of
    // 32 is checked by validate() (ggml's rule).
    case fmt::QuantType::Q8_0: launchType<fmt::QuantType::Q8_0>(p, true, tile, stream); break;
    case fmt::QuantType::Q4_0: launchType<fmt::QuantType::Q4_0>(p, true, tile, stream); break;
    case fmt::QuantType::Q4_K:
    case fmt::QuantType::Q6_K: // one weight per lane through formats::loadWeight (the block decode)
        launchType<fmt::QuantType::Q8_0>(p, false, tile, stream);
        break;
    }
    return lastLaunchStatus();
}

} // namespace headroom::kernels::cuda
