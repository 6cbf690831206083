// CUDA decode attention (split-K "flash decoding", Tri Dao et al. 2023; online softmax of
// Milakov & Gimelshein 2018) over a contiguous or paged fp16 KV cache with GQA.
//
// Kernel 1, grid (splits, H_kv * head chunks, B), 128 threads: the block streams tokens
// [split * chunk, (split + 1) * chunk) of one KV head once for up to 8 query heads. A token is
// handled by L = D / 8 lanes (8 fp16 = one 16-byte load each of K and V); 128 / L tokens are in
// flight per step. Each lane group keeps a running max, sum and its 8 accumulators per query
// head; the groups are merged in shared memory and one partial (max, sum, acc[D]) per
// (sequence, query head, split) goes to the workspace.
// Kernel 2, grid (H, B), D threads: merges the splits and divides by the sum.
// Scores are kept in the log2 domain (q pre-multiplied by scale * log2 e) so that exp2f is used.

#include "attention.cuh"

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "device.cuh"
#include "headroom/formats/quantblocks.h"

namespace headroom::kernels::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kWarpSize = 32;
/// Query heads served per pass over a KV head (registers: 2 x 8 x 8 floats per lane).
constexpr int kMaxHeadsPerPass = 8;
/// fp16 elements per lane per token (one 16-byte load).
constexpr int kDimsPerLane = 8;
/// Largest head size: 32 lanes x 8.
constexpr int kMaxHeadDim = kWarpSize * kDimsPerLane;
/// Blocks the split planner aims for (about two waves on a 132-SM H100/H200).
constexpr std::uint32_t kTargetBlocks = 256;
/// Fewest tokens per split (a split shorter than this is launch overhead).
constexpr std::uint32_t kMinSplitTokens = 64;
static_assert(kMaxHeadDim == 256, "D up to 256");
static_assert(kThreads % kWarpSize == 0, "whole warps");

/// How the tokens are split over blocks; a function of B, H_kv, G and maxSeqTokens() only.
struct SplitPlan {
    std::uint32_t headChunks;  // ceil(G / kMaxHeadsPerPass)
    std::uint32_t splits;      // splits per sequence
    std::uint32_t chunkTokens; // tokens per split (a multiple of 16)
};

SplitPlan planSplits(const DecodeAttentionArgs& a) {
    SplitPlan plan{};
    const std::uint32_t group = a.numHeads / a.numKvHeads;
    plan.headChunks = (group + kMaxHeadsPerPass - 1) / kMaxHeadsPerPass;
    const std::uint32_t maxTokens = a.maxSeqTokens();
    const std::uint64_t baseBlocks = std::uint64_t{a.batch} * a.numKvHeads * plan.headChunks;
    std::uint32_t splits = static_cast<std::uint32_t>((kTargetBlocks + baseBlocks - 1) / baseBlocks);
    const std::uint32_t maxSplits = (maxTokens + kMinSplitTokens - 1) / kMinSplitTokens;
    splits = splits < 1 ? 1 : splits > maxSplits ? maxSplits : splits;
    std::uint32_t chunk = (maxTokens + splits - 1) / splits;
    chunk = (chunk + 15) / 16 * 16;
    plan.chunkTokens = chunk;
    plan.splits = (maxTokens + chunk - 1) / chunk;
    return plan;
}

struct AttentionParams {
    std::uint32_t batch, numHeads, numKvHeads, headDim, group, lanesPerToken;
    float scaleLog2;               // softmax scale * log2(e)
    const std::uint16_t* q;        // fp16 [B][H][D]
    const std::int32_t* seqLens;   // [B]
    const std::uint16_t* k;        // fp16 [B][H_kv][maxTokens][D] or [numBlocks][H_kv][blockTokens][D]
    const std::uint16_t* v;        // same shape as k
    std::uint32_t maxTokens;       // Contiguous: T capacity
    const std::int32_t* blockTable; // Paged: [B][maxBlocksPerSeq]
    std::uint32_t maxBlocksPerSeq, blockTokens, numBlocks;
    std::uint32_t maxSeqTokens;
    SplitPlan plan;
    float* partialMax;  // [B][H][splits]
    float* partialSum;  // [B][H][splits]
    float* partialAcc;  // [B][H][splits][D]
    float* out;         // fp32 [B][H][D]
};

__device__ __forceinline__ void load8(const std::uint16_t* p, float (&f)[kDimsPerLane]) {
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        __half2 h;
        memcpy(&h, &words[i], sizeof h);
        const float2 v = __half22float2(h);
        f[2 * i] = v.x;
        f[2 * i + 1] = v.y;
    }
}

/// Row [D] of token t of KV head kvHead of sequence b; nullptr for a block id out of range.
template <bool kPaged>
__device__ __forceinline__ const std::uint16_t* kvRow(const AttentionParams& p, const std::uint16_t* base,
                                                      std::uint32_t b, std::uint32_t kvHead, std::uint32_t t) {
    const std::uint64_t D = p.headDim;
    if constexpr (!kPaged) {
        return base + ((static_cast<std::uint64_t>(b) * p.numKvHeads + kvHead) * p.maxTokens + t) * D;
    } else {
        const std::int32_t block = __ldg(p.blockTable + static_cast<std::uint64_t>(b) * p.maxBlocksPerSeq + t / p.blockTokens);
        if (block < 0 || static_cast<std::uint32_t>(block) >= p.numBlocks)
            return nullptr;
        return base + ((static_cast<std::uint64_t>(block) * p.numKvHeads + kvHead) * p.blockTokens + t % p.blockTokens) * D;
    }
}

template <bool kPaged, int kHeads>
static __global__ void __launch_bounds__(kThreads) attentionSplitKernel(const AttentionParams p) {
    // Per thread: its running max and sum per head, and its 8 accumulators per head
    // (8 heads: 4 + 4 + 32 KiB).
    __shared__ float sharedMax[kThreads][kHeads];
    __shared__ float sharedSum[kThreads][kHeads];
    __shared__ float sharedAcc[kThreads][kHeads * kDimsPerLane]; // [thread][head * 8 + i]

    const std::uint32_t split = blockIdx.x;
    const std::uint32_t kvHead = blockIdx.y / p.plan.headChunks;
    const std::uint32_t headChunk = blockIdx.y % p.plan.headChunks;
    const std::uint32_t b = blockIdx.z;
    const std::uint32_t firstHead = kvHead * p.group + headChunk * kMaxHeadsPerPass;
    const std::uint32_t headsLeft = p.group - headChunk * kMaxHeadsPerPass;
    const int heads = headsLeft < static_cast<std::uint32_t>(kHeads) ? static_cast<int>(headsLeft) : kHeads;

    const int L = static_cast<int>(p.lanesPerToken); // lanes per token, a power of two <= 32
    const int tid = static_cast<int>(threadIdx.x);
    const int laneInToken = tid % L;
    const int tokenSlot = tid / L; // 0 .. kThreads / L - 1
    const int slots = kThreads / L;
    const int d0 = laneInToken * kDimsPerLane;

    std::int32_t seqLen = __ldg(p.seqLens + b);
    seqLen = seqLen < 0 ? 0 : (static_cast<std::uint32_t>(seqLen) > p.maxSeqTokens ? static_cast<std::int32_t>(p.maxSeqTokens) : seqLen);
    const std::uint32_t begin = split * p.plan.chunkTokens;
    std::uint32_t end = begin + p.plan.chunkTokens;
    end = end > static_cast<std::uint32_t>(seqLen) ? static_cast<std::uint32_t>(seqLen) : end;

    float q[kHeads][kDimsPerLane];
    float runMax[kHeads], runSum[kHeads], acc[kHeads][kDimsPerLane];
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
        runMax[g] = -INFINITY;
        runSum[g] = 0.0f;
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) {
            acc[g][i] = 0.0f;
            q[g][i] = 0.0f;
        }
        if (g < heads) {
            load8(p.q + (static_cast<std::uint64_t>(b) * p.numHeads + firstHead + g) * p.headDim + d0, q[g]);
#pragma unroll
            for (int i = 0; i < kDimsPerLane; ++i)
                q[g][i] *= p.scaleLog2;
        }
    }

    // Every lane runs the same number of steps (the shuffles need the whole warp).
    for (std::uint32_t base = begin; base < end; base += static_cast<std::uint32_t>(slots)) {
        const std::uint32_t t = base + static_cast<std::uint32_t>(tokenSlot);
        const std::uint16_t* keyRow = nullptr;
        const std::uint16_t* valueRow = nullptr;
        if (t < end) {
            keyRow = kvRow<kPaged>(p, p.k, b, kvHead, t);
            valueRow = kvRow<kPaged>(p, p.v, b, kvHead, t);
        }
        const bool valid = keyRow != nullptr;
        float key[kDimsPerLane], value[kDimsPerLane];
        if (valid) {
            load8(keyRow + d0, key);
            load8(valueRow + d0, value);
        } else {
#pragma unroll
            for (int i = 0; i < kDimsPerLane; ++i)
                key[i] = value[i] = 0.0f;
        }
#pragma unroll
        for (int g = 0; g < kHeads; ++g) {
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < kDimsPerLane; ++i)
                s = fmaf(q[g][i], key[i], s);
            for (int offset = L / 2; offset > 0; offset /= 2)
                s += __shfl_xor_sync(0xffffffffu, s, offset);
            if (valid && g < heads) {
                const float newMax = fmaxf(runMax[g], s);
                const float correction = exp2f(runMax[g] - newMax); // 0 for the first token
                const float weight = exp2f(s - newMax);
                runSum[g] = fmaf(runSum[g], correction, weight);
#pragma unroll
                for (int i = 0; i < kDimsPerLane; ++i)
                    acc[g][i] = fmaf(acc[g][i], correction, weight * value[i]);
                runMax[g] = newMax;
            }
        }
    }

    // Merge the token slots of the block: slot s wrote its max/sum at [s * L] and its 8 dims at
    // [s * L + laneInToken].
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
        sharedMax[tid][g] = runMax[g];
        sharedSum[tid][g] = runSum[g];
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i)
            sharedAcc[tid][g * kDimsPerLane + i] = acc[g][i];
    }
    __syncthreads();
    const std::uint32_t D = p.headDim;
    for (std::uint32_t item = static_cast<std::uint32_t>(tid); item < static_cast<std::uint32_t>(heads) * D; item += kThreads) {
        const int g = static_cast<int>(item / D);
        const std::uint32_t d = item % D;
        const int lane = static_cast<int>(d / kDimsPerLane);
        const int i = static_cast<int>(d % kDimsPerLane);
        float blockMax = -INFINITY;
        for (int s = 0; s < slots; ++s)
            blockMax = fmaxf(blockMax, sharedMax[s * L][g]);
        float sum = 0.0f, value = 0.0f;
        if (blockMax != -INFINITY) {
            for (int s = 0; s < slots; ++s) {
                const float w = exp2f(sharedMax[s * L][g] - blockMax); // 0 for an empty slot
                sum = fmaf(sharedSum[s * L][g], w, sum);
                value = fmaf(sharedAcc[s * L + lane][g * kDimsPerLane + i], w, value);
            }
        }
        const std::uint64_t head = static_cast<std::uint64_t>(b) * p.numHeads + firstHead + static_cast<std::uint32_t>(g);
        const std::uint64_t at = head * p.plan.splits + split;
        p.partialAcc[at * D + d] = value;
        if (d == 0) {
            p.partialMax[at] = blockMax;
            p.partialSum[at] = sum;
        }
    }
}

static __global__ void attentionMergeKernel(const AttentionParams p) {
    const std::uint32_t h = blockIdx.x;
    const std::uint32_t b = blockIdx.y;
    const std::uint32_t D = p.headDim;
    const std::uint64_t head = static_cast<std::uint64_t>(b) * p.numHeads + h;
    for (std::uint32_t d = threadIdx.x; d < D; d += blockDim.x) {
        float maxAll = -INFINITY;
        for (std::uint32_t s = 0; s < p.plan.splits; ++s)
            maxAll = fmaxf(maxAll, p.partialMax[head * p.plan.splits + s]);
        float sum = 0.0f, value = 0.0f;
        if (maxAll != -INFINITY) {
            for (std::uint32_t s = 0; s < p.plan.splits; ++s) {
                const std::uint64_t at = head * p.plan.splits + s;
                const float w = exp2f(p.partialMax[at] - maxAll);
                sum = fmaf(p.partialSum[at], w, sum);
                value = fmaf(p.partialAcc[at * D + d], w, value);
            }
        }
        p.out[head * D + d] = sum > 0.0f ? value / sum : 0.0f;
    }
}

bool aligned16(const void* p) {
    return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

template <bool kPaged>
void launchSplit(const AttentionParams& p, int heads, dim3 grid, cudaStream_t stream) {
    switch (heads) {
    case 1: attentionSplitKernel<kPaged, 1><<<grid, kThreads, 0, stream>>>(p); break;
    case 2: attentionSplitKernel<kPaged, 2><<<grid, kThreads, 0, stream>>>(p); break;
    case 3:
    case 4: attentionSplitKernel<kPaged, 4><<<grid, kThreads, 0, stream>>>(p); break;
    default: attentionSplitKernel<kPaged, kMaxHeadsPerPass><<<grid, kThreads, 0, stream>>>(p); break;
    }
}

} // namespace

bool supportsDecodeAttention(const DecodeAttentionArgs& args) {
    if (validate(args) != Status::Ok)
        return false;
    const std::uint32_t D = args.headDim;
    const bool dimOk = D == 8 || D == 16 || D == 32 || D == 64 || D == 128 || D == 256;
    return dimOk && aligned16(args.q) && aligned16(args.k) && aligned16(args.v);
}

std::size_t decodeAttentionWorkspaceBytes(const DecodeAttentionArgs& args) {
    if (validate(args) != Status::Ok)
        return 0;
    const SplitPlan plan = planSplits(args);
    const std::size_t partials = std::size_t{args.batch} * args.numHeads * plan.splits;
    return partials * (2 + std::size_t{args.headDim}) * sizeof(float);
}

Status decodeAttention(const DecodeAttentionArgs& args, cudaStream_t stream) {
    if (Status status = validate(args); status != Status::Ok)
        return status;
    if (!supportsDecodeAttention(args))
        return Status::NotSupported;
    const std::size_t need = decodeAttentionWorkspaceBytes(args);
    if (!args.workspace || args.workspaceBytes < need || !aligned16(args.workspace))
        return Status::InvalidArgument;

    AttentionParams p{};
    p.batch = args.batch;
    p.numHeads = args.numHeads;
    p.numKvHeads = args.numKvHeads;
    p.headDim = args.headDim;
    p.group = args.numHeads / args.numKvHeads;
    p.lanesPerToken = args.headDim / kDimsPerLane;
    p.scaleLog2 = args.effectiveScale() * 1.4426950408889634f; // log2(e)
    p.q = args.q;
    p.seqLens = args.seqLens;
    p.k = args.k;
    p.v = args.v;
    p.maxTokens = args.maxTokens;
    p.blockTable = args.blockTable;
    p.maxBlocksPerSeq = args.maxBlocksPerSeq;
    p.blockTokens = args.blockTokens;
    p.numBlocks = args.numBlocks;
    p.maxSeqTokens = args.maxSeqTokens();
    p.plan = planSplits(args);
    const std::size_t partials = std::size_t{args.batch} * args.numHeads * p.plan.splits;
    auto* floats = static_cast<float*>(args.workspace);
    p.partialMax = floats;
    p.partialSum = floats + partials;
    p.partialAcc = floats + 2 * partials;
    p.out = args.out;

    const dim3 grid(p.plan.splits, args.numKvHeads * p.plan.headChunks, args.batch);
    if (grid.y > 65535 || grid.z > 65535)
        return Status::NotSupported;
    const int heads = static_cast<int>(p.group < kMaxHeadsPerPass ? p.group : kMaxHeadsPerPass);
    if (args.layout == KvLayout::Paged)
        launchSplit<true>(p, heads, grid, stream);
    else
        launchSplit<false>(p, heads, grid, stream);
    if (Status status = lastLaunchStatus(); status != Status::Ok)
        return status;
    const std::uint32_t mergeThreads = args.headDim < 32 ? 32 : args.headDim;
    attentionMergeKernel<<<dim3(args.numHeads, args.batch), mergeThreads, 0, stream>>>(p);
    return lastLaunchStatus();
}

} // namespace headroom::kernels::cuda
