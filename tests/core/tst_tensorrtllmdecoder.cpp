// TensorRT-LLM's C++ runtime decoder buffers (engines/tensorrtllmdecoder.h), one term a buffer
// at stated shapes and versions: the 0.19 RTX 5090 case of tests/data/engine-logs (max_batch_size
// 2048, max_seq_len 2048, Llama-3.1's 128,256 tokens), beam search, TP padding, and the versions
// where each buffer appears (release/0.5.0 and release/v0.7.1 branches; 0.9's batched sampling;
// the draft logits up to 0.13; none in the 1.x PyTorch backend).

#include "headroom/core/engines/tensorrtllmdecoder.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace headroom::tensorrtllm;

namespace {

/// The bytes of the buffer @p name, or -1 when the version does not allocate it.
long long bytesOf(const std::vector<DecoderBuffer>& buffers, const std::string& name)
{
    const auto it = std::find_if(buffers.begin(), buffers.end(), [&](const DecoderBuffer& b) { return b.name == name; });
    return it == buffers.end() ? -1 : static_cast<long long>(it->bytes);
}

std::vector<std::string> names(const std::vector<DecoderBuffer>& buffers)
{
    std::vector<std::string> out;
    for (const DecoderBuffer& b : buffers)
        out.push_back(b.name);
    return out;
}

DecoderShape rtx5090Case()
{
    DecoderShape s;
    s.maxBatchSize = 2048;
    s.maxBeamWidth = 1;
    s.maxSequenceLength = 2048;
    s.vocabSize = 128'256;
    return s;
}

} // namespace

TEST_CASE("TensorRT-LLM 0.19 decoder: every buffer of max_batch_size 2048 x Llama-3.1's vocabulary", "[engines][tensorrt-llm][decoder]")
{
    const std::vector<DecoderBuffer> b = decoderBuffers("0.19.0", rtx5090Case());
    // [2048, 1, 2048] int32 / fp32: 16 MiB each.
    CHECK(bytesOf(b, "decoder_output_ids") == 2048LL * 2048 * 4);
    CHECK(bytesOf(b, "decoder_parent_ids") == 2048LL * 2048 * 4);
    CHECK(bytesOf(b, "decoder_log_probs") == 2048LL * 2048 * 4);
    CHECK(bytesOf(b, "decoder_log_probs_tiled") == 2048LL * 2048 * 4);
    CHECK(bytesOf(b, "decoder_gathered_ids") == -1); // aliases the output ids without beam search
    // [2048, 128,256] x 4 B = 1,050,673,152 B (0.98 GiB) each.
    CHECK(bytesOf(b, "decoder_logits_copy") == 1'050'673'152LL);
    CHECK(bytesOf(b, "penalty_workspace") == 1'050'673'152LL);
    CHECK(bytesOf(b, "embedding_bias") == 1'050'673'152LL);
    // Top-k: the temp log-probs plus 2048 x 1024 x 8 blocks x (int32 + fp32) = 128 MiB.
    CHECK(bytesOf(b, "sampling_workspace") == 1'050'673'152LL + 2048LL * 1024 * 8 * 8);
    CHECK(bytesOf(b, "draft_logits") == -1); // only with external draft tokens after 0.13
    CHECK(b.size() == 8);
    for (const DecoderBuffer& buffer : b) {
        INFO(buffer.name);
        CHECK_FALSE(buffer.source.empty());
    }
}

TEST_CASE("TensorRT-LLM decoder: beam search adds the gathered ids and a second penalty workspace", "[engines][tensorrt-llm][decoder]")
{
    DecoderShape s;
    s.maxBatchSize = 8;
    s.maxBeamWidth = 4;
    s.maxSequenceLength = 4096;
    s.vocabSize = 32'000;
    const std::vector<DecoderBuffer> b = decoderBuffers("0.19.0", s);
    CHECK(bytesOf(b, "decoder_output_ids") == 8LL * 4 * 4096 * 4);
    CHECK(bytesOf(b, "decoder_gathered_ids") == 8LL * 4 * 4096 * 4);
    CHECK(bytesOf(b, "penalty_workspace") == 8LL * 4 * 32'000 * 4 * 2);
    CHECK(bytesOf(b, "decoder_logits_copy") == 8LL * 4 * 32'000 * 4);
    // The embedding bias and the sampling scratch are per slot, not per beam.
    CHECK(bytesOf(b, "embedding_bias") == 8LL * 32'000 * 4);
}

TEST_CASE("TensorRT-LLM decoder: the vocabulary is padded to the TP size, the penalty workspace is not", "[engines][tensorrt-llm][decoder]")
{
    DecoderShape s;
    s.maxBatchSize = 16;
    s.vocabSize = 32'001;
    s.tensorParallel = 2;
    CHECK(paddedVocab(s) == 32'002);
    const std::vector<DecoderBuffer> b = decoderBuffers("0.19.0", s);
    CHECK(bytesOf(b, "embedding_bias") == 16LL * 32'002 * 4);
    CHECK(bytesOf(b, "decoder_logits_copy") == 16LL * 32'002 * 4);
    CHECK(bytesOf(b, "penalty_workspace") == 16LL * 32'001 * 4);
    // A float16 logits engine halves the logits-typed buffers only.
    s.logitsBytes = 2;
    const std::vector<DecoderBuffer> half = decoderBuffers("0.19.0", s);
    CHECK(bytesOf(half, "embedding_bias") == 16LL * 32'002 * 2);
    CHECK(bytesOf(half, "penalty_workspace") == 16LL * 32'001 * 4);
}

TEST_CASE("TensorRT-LLM decoder: each buffer from the version that allocates it at start-up", "[engines][tensorrt-llm][decoder]")
{
    const DecoderShape s = rtx5090Case();
    using V = std::vector<std::string>;
    // release/0.5.0: output and parent ids; per-slot decoders allocate the rest on the first step.
    CHECK(names(decoderBuffers("0.5.0", s)) == V{"decoder_output_ids", "decoder_parent_ids"});
    // release/v0.7.1 adds the log probs; 0.8 is taken with 0.7.
    const V logProbs{"decoder_output_ids", "decoder_parent_ids", "decoder_log_probs"};
    CHECK(names(decoderBuffers("0.7.1", s)) == logProbs);
    CHECK(names(decoderBuffers("0.8.0", s)) == logProbs);
    // 0.9's batched sampling: the layers preallocate, the draft logits are reshaped for every engine.
    CHECK(names(decoderBuffers("0.9.0", s)) == V{"decoder_output_ids", "decoder_parent_ids", "decoder_log_probs",
                                                 "decoder_logits_copy", "sampling_workspace", "penalty_workspace",
                                                 "embedding_bias", "draft_logits"});
    CHECK(bytesOf(decoderBuffers("0.13.0", s), "draft_logits") == 1'050'673'152LL);
    CHECK(bytesOf(decoderBuffers("0.13.0", s), "decoder_log_probs_tiled") == 2048LL * 2048 * 4);
    CHECK(bytesOf(decoderBuffers("0.10.0", s), "decoder_log_probs_tiled") == -1);
    CHECK(bytesOf(decoderBuffers("0.14.0", s), "draft_logits") == -1);
    // The PyTorch backend (1.x, and the current release) preallocates none.
    CHECK(decoderBuffers("1.0.0", s).empty());
    CHECK(decoderBuffers("", s).empty());
}
