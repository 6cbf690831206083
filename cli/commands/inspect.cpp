// headroom-cli inspect PATH [--json]: what a model's own files say (config.json, a model
// directory, a .safetensors or a .gguf), read header-only by the core importers.

#include "commands.h"

#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/units.h"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <memory>

namespace headroom::cli {

namespace {

struct InspectOptions {
    std::string path;
    bool json = false;
};

std::optional<std::uint64_t> kvBytesPerToken(const ImportedModel& model)
{
    if (!model.architecture)
        return std::nullopt;
    const auto fp16 = findKvDtype("fp16");
    if (!fp16 || !validateArchitecture(*model.architecture).empty())
        return std::nullopt;
    try {
        return kvLayout(*model.architecture, *fp16).bytesPerToken().value;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

/// The recurrent layers (SSM, linear attention) of a hybrid and their state per sequence, in bytes,
/// with 2-byte elements (vLLM's default, the model dtype) and 4-byte ones (llama.cpp's f32 R/S
/// caches; kvcache.h kvLayout); nullopt for a model without recurrent layers or architecture.
struct RecurrentState {
    std::uint32_t layers = 0;
    std::uint64_t bytes16 = 0; ///< per sequence, 16-bit state (vLLM)
    std::uint64_t bytes32 = 0; ///< per sequence, f32 state (llama.cpp)
};

std::optional<RecurrentState> recurrentState(const ImportedModel& model)
{
    if (!model.architecture || !validateArchitecture(*model.architecture).empty())
        return std::nullopt;
    const auto fp16 = findKvDtype("fp16");
    if (!fp16)
        return std::nullopt;
    try {
        const KvLayout half = kvLayout(*model.architecture, *fp16, *fp16, 1, 0, 0, 2);
        if (half.recurrentLayers == 0)
            return std::nullopt;
        const KvLayout full = kvLayout(*model.architecture, *fp16, *fp16, 1, 0, 0, 4);
        return RecurrentState{half.recurrentLayers, half.stateBytesPerSequence.value, full.stateBytesPerSequence.value};
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::string architectureLine(const ImportedModel& m)
{
    if (!m.architecture)
        return m.architectureName.empty() ? "(none)" : m.architectureName + " (shape unknown)";
    const Architecture& a = *m.architecture;
    std::string s = (m.architectureName.empty() ? a.family : m.architectureName) + ": " + std::to_string(a.layers) +
                    " layers, hidden " + std::to_string(a.hiddenSize) + ", heads " + std::to_string(a.attentionHeads) +
                    "/" + std::to_string(a.kvHeads) + " (query/KV), head_dim " + std::to_string(a.headDim);
    if (a.vocabSize)
        s += ", vocab " + std::to_string(a.vocabSize);
    if (a.moe.enabled())
        s += ", " + std::to_string(a.moe.expertCount) + " experts (top-" + std::to_string(a.moe.expertsPerToken) + ")";
    if (a.mla.enabled())
        s += ", MLA rank " + std::to_string(a.mla.kvLoraRank);
    if (a.sliding.enabled())
        s += ", sliding window " + std::to_string(a.sliding.windowTokens);
    return s;
}

nlohmann::ordered_json toJson(const ImportedModel& m)
{
    nlohmann::ordered_json j;
    j["format"] = m.format;
    j["format_version"] = m.formatVersion;
    j["path"] = m.path;
    j["architecture"] = m.architectureName.empty() && m.architecture ? m.architecture->family : m.architectureName;
    if (m.architecture) {
        const Architecture& a = *m.architecture;
        j["layers"] = a.layers;
        j["hidden_size"] = a.hiddenSize;
        j["attention_heads"] = a.attentionHeads;
        j["kv_heads"] = a.kvHeads;
        j["head_dim"] = a.headDim;
        j["vocab_size"] = a.vocabSize;
    } else {
        j["layers"] = nullptr;
    }
    j["tensor_count"] = m.tensorCount;
    j["parameters"] = m.parameters;
    j["weights_bytes"] = m.weightsBytes.value;
    j["weights_exact"] = m.exactWeights;
    nlohmann::ordered_json byType = nlohmann::ordered_json::object();
    for (const auto& [type, bytes] : m.bytesByType)
        byType[type] = bytes.value;
    j["weights_bytes_by_type"] = byType;
    nlohmann::ordered_json countByType = nlohmann::ordered_json::object();
    for (const auto& [type, n] : m.tensorsByType)
        countByType[type] = n;
    j["tensors_by_type"] = countByType;
    j["weight_format"] = m.weightFormatId ? nlohmann::ordered_json(*m.weightFormatId) : nlohmann::ordered_json(nullptr);
    if (auto kv = kvBytesPerToken(m))
        j["kv_bytes_per_token"] = *kv;
    else
        j["kv_bytes_per_token"] = nullptr;
    j["kv_dtype"] = "fp16";
    if (auto st = recurrentState(m)) {
        j["recurrent_layers"] = st->layers;
        j["state_bytes_per_sequence_16bit"] = st->bytes16;
        j["state_bytes_per_sequence_f32"] = st->bytes32;
    }
    j["context_length_tokens"] = m.contextLength;
    j["content_hash"] = m.contentHash;
    j["warnings"] = m.warnings;
    return j;
}

void printText(const ImportedModel& m, std::ostream& out)
{
    auto row = [&](const char* label, const std::string& value) {
        out << "  " << std::left << std::setw(16) << label << value << "\n";
    };
    out << m.path << "\n";
    row("format", m.format + (m.formatVersion.empty() ? "" : " " + m.formatVersion));
    row("architecture", architectureLine(m));
    row("tensors", formatThousands(m.tensorCount));
    row("parameters", formatThousands(m.parameters) + " (" + formatCount(m.parameters) + ")");
    row("weights", formatThousands(m.weightsBytes.value) + " B (" + formatBytes(m.weightsBytes) + ")" +
                       (m.exactWeights ? ", exact" : ", estimated from the architecture"));
    for (const auto& [type, bytes] : m.bytesByType) {
        std::string line = formatThousands(bytes.value) + " B (" + formatBytes(bytes) + ")";
        if (auto it = m.tensorsByType.find(type); it != m.tensorsByType.end())
            line += ", " + formatThousands(it->second) + " tensors";
        out << "    " << std::left << std::setw(14) << type << line << "\n";
    }
    if (m.weightFormatId)
        row("weight format", *m.weightFormatId);
    if (auto kv = kvBytesPerToken(m))
        row("KV per token", formatThousands(*kv) + " B (fp16 cache)");
    else
        row("KV per token", "unknown (no architecture)");
    if (auto st = recurrentState(m))
        row("state", std::to_string(st->layers) + " recurrent layers, " + formatBytes(Bytes{st->bytes16})
                         + " a sequence in 16 bits (vLLM), " + formatBytes(Bytes{st->bytes32})
                         + " in f32 (llama.cpp), whatever the context");
    row("context length", m.contextLength ? formatThousands(m.contextLength) + " tokens" : std::string("unknown"));
    row("content hash", m.contentHash);
    if (!m.warnings.empty()) {
        out << "warnings:\n";
        for (const auto& w : m.warnings)
            out << "  - " << w << "\n";
    }
}

} // namespace

void registerInspectCommand(CLI::App& app, CliContext& ctx)
{
    auto opts = std::make_shared<InspectOptions>();
    CLI::App* cmd = app.add_subcommand(
        "inspect", "Read a model's own files (config.json, model directory, .safetensors or .gguf) header-only: "
                   "architecture, parameters, exact weight bytes by tensor type, KV bytes per token");
    cmd->add_option("path", opts->path, "A config.json, a model directory, a .safetensors or a .gguf file")->required();
    cmd->add_flag("--json", opts->json, "Print JSON (keys end in their unit)");
    cmd->callback([opts, &ctx] {
        auto model = importModel(opts->path);
        if (!model) {
            ctx.fail(toString(model.error())); // a data error, not a usage error: no usage text
            return;
        }
        if (opts->json)
            std::cout << toJson(*model).dump(2) << "\n";
        else
            printText(*model, std::cout);
        ctx.exitCode = 0;
    });
}

} // namespace headroom::cli
