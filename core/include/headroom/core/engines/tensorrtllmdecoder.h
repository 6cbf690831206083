#pragma once
/// @file tensorrtllmdecoder.h
/// The buffers TensorRT-LLM's C++ runtime decoder (0.x) allocates when the executor starts, sized
/// by the engine's build limits (max_batch_size, max_beam_width, max sequence length) and the
/// vocabulary, so before the KV cache is sized from the free memory. One term a buffer, each
/// from the version where it is allocated at start-up. Read from NVIDIA/TensorRT-LLM:
///   - cpp/tensorrt_llm/runtime/gptDecoderBatch.cpp GptDecoderBatch::setup (the release/0.5.0
///     and release/v0.7.1 branches, read in the octoml/TensorRT-LLM-release mirror; then the
///     stored versions of NVIDIA/TensorRT-LLM: the first with the fused decoder, 0.9's "batched
///     sampling", then gptDecoderBatched.cpp setup and runtime/decoderState.cpp
///     DecoderState::reshapeBuffers up to the 1.x tree): the joint decoding output ids and parent
///     ids [max_batch_size, beam, max sequence length] int32 (every version, every beam width),
///     the log probs of that shape in fp32 (from 0.7: release/v0.7.1, not in release/0.5.0), the
///     tiled log probs [max sequence length, max_batch_size, beam] fp32 and, with beam search,
///     the gathered ids (from 0.11: the first stored gptDecoderBatched.cpp has them, the last
///     stored gptDecoderBatch.cpp, 0.10's, not; the tag is not pinned), the embedding bias
///     [max_batch_size, vocab padded] in the logits dtype (from 0.9), and from 0.9 to 0.13 the
///     draft logits [max_batch_size, max tokens per step = 1, vocab padded] fp32, reshaped for
///     every engine ("speculative decoding only works for beam width == 1"); the later stored
///     versions reshape them only for external draft tokens (DecodingInput's
///     externalDraftTokensInputs). The move is taken at 0.14, after PR 2297 (2024-10-08, the
///     0.14 cycle: "changed internals concerning speculative decoding logits"); the tag is not
///     pinned.
///   - Up to 0.8 GptDecoderBatch::setup creates one IGptDecoder a slot whose layers allocate
///     their buffers on the first forward pass, after the KV cache is sized (release/v0.7.1:
///     mDecoders[i] = IGptDecoder::create(dtype, vocabSize, vocabSizePadded, stream),
///     DynamicDecodeLayer::allocateBuffer called from forward; 0.8 is not read and taken with
///     0.7). From 0.9 ("Optimized gptDecoderBatch to support batched sampling",
///     docs/source/release-notes.md 0.9.0) the layers take max_batch_size and preallocate in
///     their constructors: layers/dynamicDecodeLayer.cpp allocateBuffer and initializeLayers
///     (mRuntimeLogitsDevice, mPenaltyWorkspaceDevice), later layers/penaltyLayer.cpp
///     allocateWorkspace and runtime/decodingLayerWorkspace.cpp (commit 1a43c7d), and the
///     sampling layer's scratch (kernels/samplingTopKKernels.h getTopKWorkspaceSizes).
/// The C++ default decoding mode (executor/types.h DecodingMode::TopKTopP and BeamSearch:
/// kUsePenalties) enables the occurrence penalties, so the penalty workspace is always there.
/// The PyTorch backend (1.x) samples with torch on the fly and preallocates none of these.
/// Checked against tests/data/engine-logs/tensorrt-llm-*.json ([engine-logs]).

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::tensorrtllm {

/// The build limits and model shape the decoder's buffers are sized by.
struct DecoderShape {
    std::uint64_t maxBatchSize = 1;      ///< max_batch_size (the decoder's slots)
    std::uint64_t maxBeamWidth = 1;      ///< max_beam_width
    std::uint64_t maxSequenceLength = 1; ///< max_seq_len (or max_input_len + max_output_len)
    std::uint64_t vocabSize = 0;         ///< the model's vocabulary
    std::uint32_t tensorParallel = 1;    ///< pads the vocabulary to a multiple of it (getVocabSizePadded)
    std::uint64_t logitsBytes = 4;       ///< the engine's logits dtype (fp32 unless --logits_dtype float16)
};

/// One buffer: its name in the bill, its bytes and where its sizing rule is read.
struct DecoderBuffer {
    std::string name;
    std::uint64_t bytes = 0;
    std::string source;
};

/// TOP_K_MAX of the top-k sampling kernels (cpp/tensorrt_llm/kernels/samplingTopKKernels.h): the
/// top-k layer sizes its scratch for the largest k it accepts, not the k a request asks.
inline constexpr std::uint64_t kTopKMax = 1024;
/// maxBlockPerBeam of getTopKWorkspaceSizes (samplingTopKKernels.h).
inline constexpr std::uint64_t kTopKBlocksPerBeam = 8;

/// The vocabulary padded to a multiple of the TP size (ModelConfig::getVocabSizePadded).
std::uint64_t paddedVocab(const DecoderShape& shape);

/// The decoder buffers of TensorRT-LLM @p version ("0.19.0"; "" = current, the PyTorch backend:
/// none) at @p shape, in allocation order (see the file comment for each rule).
std::vector<DecoderBuffer> decoderBuffers(const std::string& version, const DecoderShape& shape);

} // namespace headroom::tensorrtllm
