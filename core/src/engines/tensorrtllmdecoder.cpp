#include "headroom/core/engines/tensorrtllmdecoder.h"

#include "headroom/core/enginepolicy.h"
#include "headroom/core/units.h"

namespace headroom::tensorrtllm {

namespace {

std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return checkedMul(a, b, "TensorRT-LLM decoder buffers"); }

/// True when @p version is @p release or later ("" = current).
bool atLeast(const std::string& version, const char* release)
{
    return version.empty() || compareVersions(version, release) >= 0;
}

constexpr std::uint64_t kInt32Bytes = 4; ///< TokenIdType / SizeType32
constexpr std::uint64_t kFp32Bytes = 4;  ///< nvFloatType

} // namespace

std::uint64_t paddedVocab(const DecoderShape& shape)
{
    const std::uint64_t tp = shape.tensorParallel > 0 ? shape.tensorParallel : 1;
    return mul((shape.vocabSize + tp - 1) / tp, tp);
}

std::vector<DecoderBuffer> decoderBuffers(const std::string& version, const DecoderShape& shape)
{
    std::vector<DecoderBuffer> out;
    // 1.x: the PyTorch backend's sampler preallocates none of these.
    if (atLeast(version, "1.0"))
        return out;
    const std::uint64_t batch = shape.maxBatchSize;
    const std::uint64_t beams = shape.maxBeamWidth > 0 ? shape.maxBeamWidth : 1;
    const std::uint64_t rows = mul(batch, beams);
    const std::uint64_t idsBytes = mul(mul(rows, shape.maxSequenceLength), kInt32Bytes);
    const std::uint64_t vocabPadded = paddedVocab(shape);

    // Every version: the joint output ids and parent ids [max_batch_size, beam, max sequence length].
    out.push_back({"decoder_output_ids", idsBytes,
                   "output ids, max_batch_size x beam x max sequence length x int32 (runtime/gptDecoderBatch.cpp setup "
                   "dOutput.ids, release/0.5.0 on; decoderState.cpp reshapeBuffers)"});
    out.push_back({"decoder_parent_ids", idsBytes,
                   "parent ids, max_batch_size x beam x max sequence length x int32, reshaped for every beam width "
                   "(gptDecoderBatch.cpp setup dOutput.parentIds, release/0.5.0 on)"});
    if (atLeast(version, "0.7"))
        out.push_back({"decoder_log_probs", mul(mul(rows, shape.maxSequenceLength), kFp32Bytes),
                       "log probs, max_batch_size x beam x max sequence length x fp32 (gptDecoderBatch.cpp setup "
                       "dOutput.logProbs, release/v0.7.1 on)"});
    if (atLeast(version, "0.11")) {
        out.push_back({"decoder_log_probs_tiled", mul(mul(rows, shape.maxSequenceLength), kFp32Bytes),
                       "tiled log probs, max sequence length x max_batch_size x beam x fp32 (gptDecoderBatched.cpp "
                       "setup dOutput.logProbsTiled; decoderState.cpp reshapeBuffers)"});
        if (beams > 1)
            out.push_back({"decoder_gathered_ids", idsBytes,
                           "gathered ids of beam search, max_batch_size x beam x max sequence length x int32 "
                           "(gptDecoderBatched.cpp setup dOutput.gatheredIds; the output ids themselves without beams)"});
    }
    // Up to 0.8 each slot's decoder allocates on its first forward pass: nothing at start-up.
    if (!atLeast(version, "0.9"))
        return out;

    out.push_back({"decoder_logits_copy", mul(mul(rows, vocabPadded), shape.logitsBytes),
                   "the decoder's working copy of the logits, max_batch_size x beam x vocab padded x logits dtype "
                   "(layers/dynamicDecodeLayer.cpp allocateBuffer mRuntimeLogitsDevice; "
                   "runtime/decodingLayerWorkspace.cpp @ 1a43c7d)"});
    // The sampling layer's scratch, the largest of its layers' getWorkspaceSize (layers/samplingLayer.cpp
    // allocateBuffer; the shared scratch of runtime/decodingLayerWorkspace.cpp later): with top-k and
    // top-p both enabled (the default mode) top-k's,
    // temp log-probs batch x vocab x fp32 plus ids and values of batch x TOP_K_MAX x 8 blocks; the
    // AIR top-p buffers (batch x vocab/32 and histograms, kernels/samplingAirTopPKernels.cu
    // getAirTopPWorkspaceSizes @ 04a2cac) are smaller for any vocabulary of 2,048 tokens or more.
    const std::uint64_t topKScratch = mul(mul(batch, kTopKMax * kTopKBlocksPerBeam), kInt32Bytes + kFp32Bytes);
    out.push_back({"sampling_workspace", checkedAdd(mul(mul(batch, vocabPadded), kFp32Bytes), topKScratch, "sampling workspace"),
                   "top-k sampling scratch, max_batch_size x (vocab padded x fp32 + TOP_K_MAX 1,024 x 8 blocks x "
                   "(id + value)) (kernels/samplingTopKKernels.h getTopKWorkspaceSizes)"});
    // The occurrence-penalty workspace (repetition, presence, frequency): token counts per row,
    // a second one for the previous step with beam search.
    const std::uint64_t penalty = mul(mul(rows, shape.vocabSize), kInt32Bytes);
    out.push_back({"penalty_workspace", beams > 1 ? mul(penalty, 2) : penalty,
                   std::string("occurrence-penalty workspace, max_batch_size x max tokens per step (1) x beam x vocab x "
                               "int32") +
                       (beams > 1 ? ", twice with beam search (mPenaltyWorkspacePrevDevice)" : "") +
                       " (layers/dynamicDecodeLayer.cpp initializeLayers; layers/penaltyLayer.cpp allocateWorkspace)"});
    out.push_back({"embedding_bias", mul(mul(batch, vocabPadded), shape.logitsBytes),
                   "per-slot embedding bias, max_batch_size x vocab padded x logits dtype, zeroed for requests "
                   "without one (gptDecoderBatch.cpp setup dInput.embeddingBias; decoderState.cpp reshapeBuffers)"});
    if (!atLeast(version, "0.14"))
        out.push_back({"draft_logits", mul(mul(batch, vocabPadded), kFp32Bytes),
                       "draft logits, max_batch_size x max tokens per step (1) x vocab padded x fp32, reshaped for "
                       "every engine up to 0.13 (gptDecoderBatch.cpp / gptDecoderBatched.cpp setup mDraftLogits)"});
    return out;
}

} // namespace headroom::tensorrtllm
