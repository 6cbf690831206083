#pragma once
/// @file parameters.h
/// Every weight tensor of an architecture, with its shape and role, so that parameters are
/// counted per tensor and each tensor is priced by its format (weightformat.h).
///
/// Tensor names follow Hugging Face transformers' modules (modeling_llama.py, modeling_mixtral.py,
/// modeling_deepseek.py, modeling_falcon.py, modeling_gpt2.py, modeling_opt.py); the counts match
/// the safetensors indexes in shared/fixtures (tests/core/tst_parameters.cpp).

#include "headroom/core/architecture.h"
#include "headroom/core/units.h"
#include "headroom/core/weightformat.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

/// What a tensor does; decides how formats treat it and how parallelism splits it.
enum class TensorRole {
    TokenEmbedding,     ///< [vocab, hidden]; split by vocab under tensor parallelism
    PositionEmbedding,  ///< learned absolute positions [positions, hidden]; replicated
    Output,             ///< lm_head [vocab, hidden] (absent when tied)
    AttentionMatrix,    ///< q/k/v/o and MLA projections
    MlpMatrix,          ///< dense MLP projections
    ExpertMatrix,       ///< routed and shared expert projections
    Router,             ///< MoE gate [experts, hidden]; kept unquantized, replicated
    Norm,               ///< norm weights and biases [n]; replicated
    Bias,               ///< projection biases [n]
    /// Vision tower and projector matrices (architecture.h VisionConfig): kept in 16-bit by every
    /// format (GGUF mmproj files store them f16, quantized checkpoints leave the tower unquantized);
    /// split by tensor parallelism like the text matrices (vLLM's default mm_encoder_tp_mode).
    VisionMatrix,
    VisionVector,       ///< vision norms, biases, class embedding: 16-bit, f32 in GGUF; replicated
    // VisionVector stays the last role: weightBill sizes its per-role table by it.
};

/// One tensor (or `copies` identical tensors, for experts).
struct TensorSpec {
    std::string name;            ///< HF-style name, "model.layers.{i}.self_attn.q_proj.weight" with i filled in
    TensorRole role = TensorRole::Norm;
    std::uint64_t rows = 1;      ///< output features (1 for vectors)
    std::uint64_t cols = 1;      ///< input features / vector length
    std::uint32_t copies = 1;    ///< identical tensors folded into one entry (routed experts)
    std::int32_t layer = -1;     ///< transformer block index; -1 outside the blocks

    /// rows * cols * copies.
    std::uint64_t elements() const;
    /// True for 2-D weight matrices that quantization formats compress.
    bool isMatrix() const;
};

/// Every weight tensor of @p arch in file order (embeddings, blocks, final norm, lm_head).
/// Non-parameter buffers (rotary inv_freq, causal masks) are not listed.
std::vector<TensorSpec> listTensors(const Architecture& arch);

/// Sum of the element counts of listTensors(arch). Throws OverflowError past 2^64.
std::uint64_t parameterCount(const Architecture& arch);

/// Bytes of one tensor in @p format: matrices through matrixBytes (unquantized small tensors,
/// embeddings and routers through the format's rules), vectors through smallTensorBytes. A
/// llama-quantize preset (format.ggufFileType) is priced here in its default type only; pass
/// the architecture for the per-tensor mix.
Bytes tensorBytes(const TensorSpec& tensor, const WeightFormat& format);

/// One tensor priced: its bytes and the type it is stored in ("q6_k", "fp32", "int4-g128").
struct PricedTensor {
    Bytes bytes;
    std::string type;
};

/// Prices @p tensor of @p arch in @p format. For a llama-quantize preset the type is the one
/// llama.cpp's quantizer gives this tensor (ggufpreset.h: output and tied embeddings Q6_K,
/// use_more_bits layers of attn_v / ffn_down, fallbacks for rows that are not whole blocks);
/// norms, biases and routers stay f32. Other formats as tensorBytes().
PricedTensor priceTensor(const TensorSpec& tensor, const WeightFormat& format, const Architecture& arch);

/// The weights bill: total bytes and a breakdown by role name ("attention", "mlp", "experts",
/// "embeddings", "output", "norms", "vision") and by stored type ("q4_k", "fp16").
struct WeightBill {
    std::uint64_t parameters = 0;
    Bytes totalBytes;
    std::map<std::string, Bytes> bytesByRole;
    std::map<std::string, Bytes> bytesByType;
};

/// Every tensor of an architecture with its price in one format: listTensors and priceTensor
/// once each, so that a plan's weights bill, its per-device split and its speed inputs read
/// one list (issue 9: the list was rebuilt, a string per tensor, three times per plan).
/// `priced[i]` is the price of `tensors[i]`.
struct PricedTensors {
    std::vector<TensorSpec> tensors;
    std::vector<PricedTensor> priced;
};

/// listTensors(arch), each priced by priceTensor(t, format, arch), plus in a GGUF format
/// (ggufFileType != 0) the tensors llama.cpp's converter adds that no Hugging Face checkpoint
/// holds (ggufOnlyTensors).
PricedTensors priceTensors(const Architecture& arch, const WeightFormat& format);

/// A priced list and its weights bill, as the process-wide cache of sharedPricedTensors keeps them.
struct PricedTensorsEntry {
    PricedTensors list;
    WeightBill bill;   ///< weightBill(list)
};

/// priceTensors(arch, format) and its weightBill, made once per (architecture, format) in this
/// process and shared: the what-fits grid plans one model in a dozen formats on several cards,
/// and listing ~300 tensors (a name string each) was a third of a plan (issue 9, bench
/// BM_WhatFitsGrid). The cache keeps the 32 most recently made entries, keyed by member-wise
/// equality of both arguments (Architecture::operator==, WeightFormat::operator==), and is safe
/// to call from several threads. The entry is immutable and outlives the cache's eviction of it.
std::shared_ptr<const PricedTensorsEntry> sharedPricedTensors(const Architecture& arch, const WeightFormat& format);

/// Tensors a GGUF file of @p arch holds beyond the checkpoint's: llama's rope_freqs.weight, F32
/// [head_dim / 2], which convert_hf_to_gguf.py LlamaModel.generate_extra_tensors writes when
/// rope_scaling's rope_type is "llama3" (Llama 3.1 / 3.2 / 3.3); layer -1, role Norm (kept F32).
std::vector<TensorSpec> ggufOnlyTensors(const Architecture& arch);

/// The weights bill of an already priced list (the sums of priceWeights).
WeightBill weightBill(const PricedTensors& list);

/// Prices every tensor of @p arch in @p format (through priceTensor): weightBill(priceTensors()).
WeightBill priceWeights(const Architecture& arch, const WeightFormat& format);

/// With only a nominal parameter count: ceil(parameters * nominalBitsPerWeight / 8).
Bytes nominalWeightBytes(std::uint64_t parameters, const WeightFormat& format);

/// Human name of a role for breakdowns ("attention").
const char* roleName(TensorRole role);

} // namespace headroom
