#include "headroom/core/engines/llamacppmemory.h"

#include <algorithm>

namespace headroom::llamacpp {

namespace {

constexpr std::uint64_t kCellPad = 256;    // GGML_PAD(n_ctx, 256), llama-context.cpp and llama-kv-cache-iswa.cpp
constexpr std::uint32_t kMaxSequences = 256; // LLAMA_MAX_SEQ, src/llama-cparams.h
constexpr std::uint64_t kF32 = 4;

// K and V row widths of layer il: n_embd_k_gqa(il) and n_embd_v_gqa(il) (src/llama-hparams.cpp).
struct LayerRows {
    std::uint64_t k = 0;
    std::uint64_t v = 0; // 0: no V tensor (MLA after the latent-cache change)
};

LayerRows layerRows(const Architecture& arch, std::uint32_t il, MlaCache mla)
{
    // A GGUF converted before the MLA cache (MlaConfig::fullKvCache) is cached per head by every
    // version: its key_length/value_length are the per-head widths.
    if (arch.mla.cachesLatent()) {
        const std::uint64_t latent = std::uint64_t{arch.mla.kvLoraRank} + arch.mla.qkRopeHeadDim;
        if (mla == MlaCache::LatentKOnly)
            return {latent, 0};
        if (mla == MlaCache::LatentKV)
            return {latent, arch.mla.kvLoraRank};
        const std::uint64_t heads = arch.attentionHeads;
        return {heads * (std::uint64_t{arch.mla.qkNopeHeadDim} + arch.mla.qkRopeHeadDim), heads * arch.mla.vHeadDim};
    }
    const std::uint64_t heads = arch.kvHeadsOf(il);
    return {heads * arch.headDim, heads * arch.valueDim()};
}

std::uint64_t slidingCellsPerStream(const Architecture& arch, const ContextSettings& s, const ContextSizes& sizes)
{
    if (s.swaFull)
        return sizes.nCtxSeq;
    const std::uint64_t window = checkedMul(arch.sliding.windowTokens, s.kvUnified ? s.parallel : 1, "sliding window");
    return std::min(sizes.nCtxSeq, roundUp(checkedAdd(window, sizes.nUbatch), kCellPad));
}

bool anySliding(const Architecture& arch)
{
    for (std::uint32_t i = 0; i < arch.layers; ++i)
        if (arch.sliding.isSliding(i))
            return true;
    return false;
}

} // namespace

bool isQuantized(const KvDtype& dtype)
{
    return dtype.blockElements > 1;
}

ContextSizes contextSizes(const Architecture& arch, const ContextSettings& s)
{
    ContextSizes out;
    const std::uint32_t seqs = std::max<std::uint32_t>(s.parallel, 1);
    const std::uint64_t asked = s.ctxSizeTokens == 0 ? arch.contextLength : s.ctxSizeTokens;
    out.nBatch = std::min(asked, s.batchTokens);
    out.nUbatch = std::min(out.nBatch, s.ubatchTokens == 0 ? out.nBatch : s.ubatchTokens);
    out.nCtx = roundUp(asked, kCellPad);
    if (s.kvUnified) {
        out.nCtxSeq = out.nCtx;
        out.streams = 1;
    } else {
        out.nCtxSeq = roundUp(out.nCtx / seqs, kCellPad);
        out.nCtx = checkedMul(out.nCtxSeq, seqs, "n_ctx");
        out.streams = seqs;
    }
    const std::uint64_t tokens = std::min(out.nCtx, out.nUbatch);
    out.reserveOutputs = std::min(tokens, out.nBatch);
    out.reserveTokens = roundUp(tokens, seqs);
    return out;
}

namespace {

// The per-layer walk both kvCache and kvBytesPerLayer use.
template <class PerLayer>
KvCacheBill walkKv(const Architecture& arch, const ContextSettings& s, PerLayer&& perLayer)
{
    const ContextSizes sizes = contextSizes(arch, s);
    KvCacheBill out;
    out.streams = sizes.streams;
    out.cells = sizes.nCtxSeq;
    const bool sliding = arch.sliding.enabled() && anySliding(arch);
    out.slidingCells = sliding ? slidingCellsPerStream(arch, s, sizes) : 0;
    // Without flash attention V is kept transposed and every layer's V row is n_embd_v_gqa_max
    // ([TAG_V_CACHE_VARIABLE] in llama-kv-cache.cpp).
    std::uint64_t vMax = 0;
    for (std::uint32_t i = 0; i < arch.layers; ++i)
        if (arch.hybrid.isAttention(i))
            vMax = std::max(vMax, layerRows(arch, i, s.mlaCache).v);
    out.recurrentCells = std::max<std::uint32_t>(s.parallel, 1);
    for (std::uint32_t i = 0; i < arch.layers; ++i) {
        // A layer's recurrent state (R and S rows of n_seq_max cells), then its K and V; a Falcon-H1
        // layer has both (llama_model::create_memory: filter_attn and filter_recr true for every layer).
        Bytes state;
        if (arch.hybrid.isRecurrent(i)) {
            const RecurrentState shape = recurrentState(arch, i, 1);
            const Bytes r{checkedMul(checkedMul(shape.convElements, out.recurrentCells, "R cache"), kF32, "R cache")};
            const Bytes rs{checkedMul(checkedMul(shape.ssmElements, out.recurrentCells, "S cache"), kF32, "S cache")};
            out.rBytes += r;
            out.sBytes += rs;
            ++out.recurrentLayers;
            state = r + rs;
        }
        if (!arch.hybrid.isAttention(i)) {
            perLayer(i, state);
            continue;
        }
        const LayerRows rows = layerRows(arch, i, s.mlaCache);
        if (rows.k == 0 && rows.v == 0) {
            perLayer(i, state);
            continue;
        }
        const bool slides = sliding && arch.sliding.isSliding(i);
        const std::uint64_t cells = checkedMul(slides ? out.slidingCells : out.cells, out.streams, "KV cells");
        const Bytes k{checkedMul(s.typeK.rowBytes(rows.k), cells, "K cache")};
        Bytes v;
        if (rows.v > 0)
            v = Bytes{checkedMul(s.typeV.rowBytes(s.flashAttention ? rows.v : vMax), cells, "V cache")};
        out.kBytes += k;
        out.vBytes += v;
        (slides ? out.slidingBytes : out.fullBytes) += k + v;
        ++(slides ? out.slidingLayers : out.fullLayers);
        perLayer(i, state + k + v);
    }
    return out;
}

} // namespace

KvCacheBill kvCache(const Architecture& arch, const ContextSettings& s)
{
    return walkKv(arch, s, [](std::uint32_t, Bytes) {});
}

KvLayout kvLayoutPerToken(const Architecture& arch, const ContextSettings& s)
{
    KvLayout out;
    const bool sliding = arch.sliding.enabled() && anySliding(arch) && !s.swaFull;
    out.windowTokens = sliding ? arch.sliding.windowTokens : 0;
    std::uint64_t vMax = 0; // [TAG_V_CACHE_VARIABLE], as in walkKv
    for (std::uint32_t i = 0; i < arch.layers; ++i)
        if (arch.hybrid.isAttention(i))
            vMax = std::max(vMax, layerRows(arch, i, s.mlaCache).v);
    for (std::uint32_t i = 0; i < arch.layers; ++i) {
        if (arch.hybrid.isRecurrent(i)) {
            const RecurrentState shape = recurrentState(arch, i, 1);
            out.stateBytesPerSequence +=
                Bytes{checkedMul(checkedAdd(shape.convElements, shape.ssmElements, "state"), kF32, "state")};
            ++out.recurrentLayers;
        }
        if (!arch.hybrid.isAttention(i))
            continue;
        const LayerRows rows = layerRows(arch, i, s.mlaCache);
        if (rows.k == 0 && rows.v == 0)
            continue;
        Bytes row{s.typeK.rowBytes(rows.k)};
        if (rows.v > 0)
            row += Bytes{s.typeV.rowBytes(s.flashAttention ? rows.v : vMax)};
        if (sliding && arch.sliding.isSliding(i)) {
            out.slidingBytesPerToken += row;
            ++out.slidingLayers;
        } else {
            out.fullBytesPerToken += row;
            ++out.fullLayers;
        }
    }
    return out;
}

std::vector<Bytes> kvBytesPerLayer(const Architecture& arch, const ContextSettings& s)
{
    std::vector<Bytes> out(arch.layers);
    walkKv(arch, s, [&out](std::uint32_t i, Bytes b) { out[i] = b; });
    return out;
}

Bytes outputBufferBytes(const Architecture& arch, const ContextSettings& s)
{
    return Bytes{checkedMul(checkedMul(arch.vocabSize, std::max<std::uint32_t>(s.parallel, 1), "output buffer"), kF32,
                            "output buffer")};
}

ComputeBill computeBuffer(const Architecture& arch, const ContextSettings& s)
{
    const ContextSizes sizes = contextSizes(arch, s);
    const KvCacheBill kv = kvCache(arch, s);
    const std::uint64_t t = sizes.reserveTokens;
    const std::uint64_t embd = checkedMul(checkedMul(arch.hiddenSize, t, "compute buffer"), kF32, "compute buffer");
    ComputeBill out;
    out.logitsBytes = Bytes{checkedMul(checkedMul(arch.vocabSize, sizes.reserveOutputs, "logits"), kF32, "logits")};
    out.outputStageBytes = out.logitsBytes + Bytes{checkedMul(2, embd)} + Bytes{checkedMul(t, kF32)};

    // Masks: one per kind of cache, f32 without flash attention and f16 with it, live across the layers.
    const bool sliding = kv.slidingLayers > 0;
    const bool full = kv.fullLayers > 0;
    const std::uint64_t maskElementBytes = s.flashAttention ? 2 : kF32;
    const std::uint64_t fullKv = kv.cells;
    const std::uint64_t slidingKv = kv.slidingCells;
    std::uint64_t masks = 0;
    if (full)
        masks = checkedAdd(masks, checkedMul(checkedMul(fullKv, t), maskElementBytes));
    if (sliding)
        masks = checkedAdd(masks, checkedMul(checkedMul(slidingKv, t), maskElementBytes));
    std::uint64_t scores = 0;
    if (!s.flashAttention) {
        const std::uint64_t widest = std::max(full ? fullKv : 0, sliding ? slidingKv : 0);
        scores = checkedMul(checkedMul(checkedMul(arch.attentionHeads, widest, "KQ"), t, "KQ"), kF32, "KQ");
    }
    out.attentionStageBytes = Bytes{checkedAdd(checkedAdd(scores, masks), checkedMul(5, embd))};

    std::uint64_t ffn = arch.intermediateSize;
    if (arch.moe.enabled())
        ffn = std::max(ffn, (std::uint64_t{arch.moe.expertsPerToken} + arch.moe.sharedExperts) * arch.moe.expertFfnSize);
    out.ffnStageBytes = Bytes{checkedAdd(checkedMul(2, embd), checkedMul(checkedMul(checkedMul(3, ffn), t), kF32))};

    out.totalBytes = out.outputStageBytes;
    if (out.attentionStageBytes > out.totalBytes) {
        out.totalBytes = out.attentionStageBytes;
        out.binding = "attention";
    }
    if (out.ffnStageBytes > out.totalBytes) {
        out.totalBytes = out.ffnStageBytes;
        out.binding = "ffn";
    }
    out.embdBytes = Bytes{embd};
    out.positionsBytes = Bytes{checkedMul(t, kF32)};
    out.maskDeviceBytes = Bytes{masks};
    out.maskInputBytes = Bytes{s.flashAttention ? checkedMul(masks, 2) : masks}; // built f32, cast to f16 for FA
    const Bytes movedToHost = Bytes{embd} + Bytes{checkedMul(t, kF32)};
    out.hostPartBytes = movedToHost + Bytes{masks};
    out.deviceBytes = saturatingSub(out.totalBytes, movedToHost);
    return out;
}

std::optional<std::string> refusal(const Architecture& arch, const ContextSettings& s)
{
    if (s.parallel > kMaxSequences)
        return "-np " + std::to_string(s.parallel) + ": llama.cpp refuses it (n_seq_max must be <= 256)";
    if (arch.mla.cachesLatent() && s.typeK.id != s.typeV.id)
        return "-ctk " + s.typeK.id + " -ctv " + s.typeV.id
            + ": llama.cpp refuses different K and V cache types for an MLA model";
    if (isQuantized(s.typeV) && !s.flashAttention)
        return "-ctv " + s.typeV.id + " without flash attention: llama.cpp refuses it "
               "(quantized V cache requires flash_attn to be enabled); use -fa on or an f16 V cache";
    if (s.flashAttention) {
        // n_embd_head_k/v: an MLA layer's head is the latent row after the MLA change (576 for
        // DeepSeek), nope + rope (K) and v_head (V) before it.
        std::uint64_t headK = arch.headDim;
        std::uint64_t headV = arch.valueDim();
        if (arch.mla.cachesLatent()) {
            const bool latent = s.mlaCache != MlaCache::FullHeads;
            headK = latent ? std::uint64_t{arch.mla.kvLoraRank} + arch.mla.qkRopeHeadDim
                           : std::uint64_t{arch.mla.qkNopeHeadDim} + arch.mla.qkRopeHeadDim;
            headV = latent ? arch.mla.kvLoraRank : arch.mla.vHeadDim;
        }
        {
            if (isQuantized(s.typeK) && headK % s.typeK.blockElements != 0)
                return "-ctk " + s.typeK.id + ": llama.cpp refuses it (K cache type " + s.typeK.id + " with block size "
                    + std::to_string(s.typeK.blockElements) + " does not divide n_embd_head_k=" + std::to_string(headK) + ")";
            if (isQuantized(s.typeV) && headV > 0 && headV % s.typeV.blockElements != 0)
                return "-ctv " + s.typeV.id + ": llama.cpp refuses it (V cache type " + s.typeV.id + " with block size "
                    + std::to_string(s.typeV.blockElements) + " does not divide n_embd_head_v=" + std::to_string(headV) + ")";
        }
    }
    return std::nullopt;
}

} // namespace headroom::llamacpp
