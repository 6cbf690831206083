#pragma once
/// @file types.h
/// Problem descriptions shared by every backend of Headroom's kernels (CPU reference, fast CPU,
/// CUDA): plain structs of sizes and pointers, with the shape of every pointer in its comment.
/// No CUDA header here: this file compiles with plain g++ (STYLE dependency rule 3).

#include "headroom/formats/quantblocks.h"

#include <cstddef>
#include <cstdint>

namespace headroom::kernels {

/// Result of a kernel call. Kernels never abort; they return one of these (STYLE §10).
enum class Status {
    Ok,              ///< done (for CUDA: enqueued on the stream without a launch error)
    NotSupported,    ///< valid arguments that this backend does not run (see supports...())
    InvalidArgument, ///< null pointer, zero size, bad layout, too small workspace
    NoDevice,        ///< the CUDA backend was asked for but is not built or finds no GPU
    CudaError,       ///< the CUDA runtime reported an error (launch or earlier asynchronous one)
};

/// A short English name of @p status ("ok", "not supported", ...).
const char* statusName(Status status);

/// Type of the output vector y.
enum class OutputType {
    Fp32, ///< float
    Fp16, ///< IEEE fp16 bits (uint16), rounded to nearest even from the fp32 accumulator
};

/// How the rows of a weight matrix lie in memory.
enum class RowPacking {
    AsStored,     ///< row after row, rowBytes(layout, K) bytes each (GGUF's and every layout's own order)
    /// q8_0 / q4_0 (and q4_K / q6_K, below): each group of 8 rows is interleaved block column by block column, as
    /// ggml's CPU repack lays out Q4_0 for AVX2 (`block_q4_0x8`: the 8 fp16 scales, then the code
    /// bytes of the 8 rows in chunks of 8 bytes, chunk c from row c % 8, its nibbles XOR 0x88;
    /// `make_block_q4_0x8`, ggml/src/ggml-cpu/repack.cpp); q8_0 takes the same chunks of its int8
    /// codes. The N % 8 rows after the last whole group stay as stored. Same bytes as AsStored;
    /// made by packRows8 (cpukernels.h), run by the fast CPU kernels only. q4_K / q6_K: 8 rows per
    /// 256-column superblock in one panel block (as ggml's `block_q4_Kx8`; Headroom's byte order,
    /// kernels/ref/kpanel.h).
    Interleaved8,
};

/// A stored weight matrix W [N, K] (N rows = output features, K = input features), a view.
struct WeightMatrix {
    formats::QuantLayout layout{}; ///< element type and scale territory (quantblocks.h)
    std::uint32_t rows = 0;        ///< N, output features
    std::uint32_t cols = 0;        ///< K, input features
    const std::uint8_t* data = nullptr;   ///< codes [N][formats::rowBytes(layout, K)] bytes
    const std::uint16_t* scales = nullptr; ///< fp16 [formats::scaleCount(layout, N, K)]; null for fp16 and GGML blocks
    RowPacking packing = RowPacking::AsStored; ///< order of the rows in data
};

/// y = x W^T for a batch of B activation rows ("GEMV" for B = 1, skinny GEMM up to B = 64).
/// y[b][n] = sum_k x[b][k] * W_hat[n][k], accumulated in fp32.
struct GemvArgs {
    WeightMatrix weights;           ///< W [N, K]
    const std::uint16_t* x = nullptr; ///< fp16 activations [B][K], row-major
    std::uint32_t batch = 0;        ///< B, 1..kMaxGemvBatch
    void* y = nullptr;              ///< output [B][N], float or fp16 bits per yType
    OutputType yType = OutputType::Fp32; ///< type of y
};

/// Largest batch B the GEMV kernels accept.
inline constexpr std::uint32_t kMaxGemvBatch = 64;

/// How the KV cache of decode attention is laid out.
enum class KvLayout {
    Contiguous, ///< k, v: [B][H_kv][maxTokens][D]
    Paged,      ///< k, v: block pool [numBlocks][H_kv][blockTokens][D]; blockTable [B][maxBlocksPerSeq]
};

/// Default tokens per block of the paged KV cache (vLLM's default block size).
inline constexpr std::uint32_t kDefaultKvBlockTokens = 16;
static_assert(kDefaultKvBlockTokens == 16, "paged KV blocks hold 16 tokens by default (vLLM)");

/// Decode attention: B sequences, each with one new query token, attend over their KV cache.
/// out[b][h] = sum_t softmax_t(scale * q[b][h] . K[b][h / G][t]) V[b][h / G][t], t < seqLens[b],
/// with G = H / H_kv query heads sharing one KV head (GQA; H_kv = H is MHA; Llama's repeat_kv
/// maps query head h to KV head h / G). Softmax and accumulation in fp32.
struct DecodeAttentionArgs {
    std::uint32_t batch = 0;      ///< B, sequences
    std::uint32_t numHeads = 0;   ///< H, query heads (a multiple of numKvHeads)
    std::uint32_t numKvHeads = 0; ///< H_kv, KV heads
    std::uint32_t headDim = 0;    ///< D, elements per head
    float scale = 0.0f;           ///< softmax scale, usually 1 / sqrt(D); 0 means 1 / sqrt(D)
    const std::uint16_t* q = nullptr;   ///< fp16 queries [B][H][D]
    const std::int32_t* seqLens = nullptr; ///< tokens in each sequence's cache [B], 1..maxSeqTokens()
    KvLayout layout = KvLayout::Contiguous; ///< layout of k, v
    const std::uint16_t* k = nullptr; ///< fp16 keys, [B][H_kv][maxTokens][D] or [numBlocks][H_kv][blockTokens][D]
    const std::uint16_t* v = nullptr; ///< fp16 values, same shape as k
    std::uint32_t maxTokens = 0;      ///< Contiguous: token capacity T of each sequence
    const std::int32_t* blockTable = nullptr; ///< Paged: block ids [B][maxBlocksPerSeq]
    std::uint32_t maxBlocksPerSeq = 0; ///< Paged: columns of blockTable
    std::uint32_t blockTokens = kDefaultKvBlockTokens; ///< Paged: tokens per block
    std::uint32_t numBlocks = 0;       ///< Paged: blocks in the pool (block ids are < numBlocks)
    float* out = nullptr;             ///< fp32 output [B][H][D]
    void* workspace = nullptr;        ///< CUDA only: device scratch of attentionWorkspaceBytes() bytes
    std::size_t workspaceBytes = 0;   ///< CUDA only: size of workspace

    /// Upper bound of seqLens: maxTokens (Contiguous) or maxBlocksPerSeq * blockTokens (Paged).
    std::uint32_t maxSeqTokens() const {
        return layout == KvLayout::Contiguous ? maxTokens : maxBlocksPerSeq * blockTokens;
    }
    /// The softmax scale actually used: scale, or 1 / sqrt(D) when scale is 0.
    float effectiveScale() const;
};

/// The decode step's cache write: the new token's keys and values of each of B sequences go to
/// position seqLens[b] - 1 of its cache (which then holds seqLens[b] tokens, the last one new):
/// K[b][h][seqLens[b] - 1][:] = kNew[b][h][:], and the same for V, for every KV head h. The cache
/// geometry is that of DecodeAttentionArgs (contiguous or paged, same shapes).
struct KvAppendArgs {
    std::uint32_t batch = 0;      ///< B, sequences
    std::uint32_t numKvHeads = 0; ///< H_kv
    std::uint32_t headDim = 0;    ///< D (of K and of V)
    const std::uint16_t* kNew = nullptr; ///< fp16 new keys [B][H_kv][D]
    const std::uint16_t* vNew = nullptr; ///< fp16 new values [B][H_kv][D]
    const std::int32_t* seqLens = nullptr; ///< tokens in each sequence's cache after the write [B], 1..maxSeqTokens()
    KvLayout layout = KvLayout::Contiguous; ///< layout of k, v
    std::uint16_t* k = nullptr;   ///< fp16 keys, written: [B][H_kv][maxTokens][D] or [numBlocks][H_kv][blockTokens][D]
    std::uint16_t* v = nullptr;   ///< fp16 values, same shape as k
    std::uint32_t maxTokens = 0;  ///< Contiguous: token capacity of each sequence
    const std::int32_t* blockTable = nullptr; ///< Paged: block ids [B][maxBlocksPerSeq]
    std::uint32_t maxBlocksPerSeq = 0; ///< Paged: columns of blockTable
    std::uint32_t blockTokens = kDefaultKvBlockTokens; ///< Paged: tokens per block
    std::uint32_t numBlocks = 0;  ///< Paged: blocks in the pool

    /// Upper bound of seqLens: maxTokens (Contiguous) or maxBlocksPerSeq * blockTokens (Paged).
    std::uint32_t maxSeqTokens() const {
        return layout == KvLayout::Contiguous ? maxTokens : maxBlocksPerSeq * blockTokens;
    }
};

/// Checks the sizes, pointers and layout of @p args (not the contents of device memory); GGML
/// block types need K a multiple of their block (ggml's rule); RowPacking::Interleaved8 needs
/// q8_0, q4_0, q4_K or q6_K.
Status validate(const GemvArgs& args);
/// Checks the sizes and pointers of @p args (host-side fields only).
Status validate(const KvAppendArgs& args);
/// Checks the sizes and pointers of @p args (host-side fields only; seqLens and blockTable
/// contents are checked by the CPU kernels, which can read them).
Status validate(const DecodeAttentionArgs& args);

} // namespace headroom::kernels
