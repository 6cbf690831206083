#include "workorder.h"

#include "headroom/core/resolve.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdlib>
#include <chrono>
#include <thread>

namespace headroom::probes::detail {

namespace {

using nlohmann::json;

json archToJson(const Architecture& a)
{
    json j;
    j["family"] = a.family;
    j["layers"] = a.layers;
    j["hidden_size"] = a.hiddenSize;
    j["attention_heads"] = a.attentionHeads;
    j["kv_heads"] = a.kvHeads;
    j["kv_heads_per_layer"] = a.kvHeadsPerLayer;
    j["head_dim"] = a.headDim;
    j["value_head_dim"] = a.valueHeadDim;
    j["intermediate_size"] = a.intermediateSize;
    j["vocab_size"] = a.vocabSize;
    j["tied_embeddings"] = a.tiedEmbeddings;
    j["qkv_bias"] = a.qkvBias;
    j["output_proj_bias"] = a.outputProjBias;
    j["mlp_bias"] = a.mlpBias;
    j["qk_norm"] = a.qkNorm;
    j["norm"] = a.norm == NormKind::RmsNorm ? "rmsnorm" : "layernorm";
    j["mlp"] = a.mlp == MlpKind::Gated ? "gated" : "plain";
    j["norms_per_layer"] = a.normsPerLayer;
    j["position_embedding_rows"] = a.positionEmbeddingRows;
    j["context_length"] = a.contextLength;
    j["moe"] = {{"expert_count", a.moe.expertCount}, {"experts_per_token", a.moe.expertsPerToken},
                {"shared_experts", a.moe.sharedExperts}, {"expert_ffn_size", a.moe.expertFfnSize},
                {"dense_first_layers", a.moe.denseFirstLayers}};
    j["mla"] = {{"kv_lora_rank", a.mla.kvLoraRank}, {"qk_rope_head_dim", a.mla.qkRopeHeadDim},
                {"qk_nope_head_dim", a.mla.qkNopeHeadDim}, {"v_head_dim", a.mla.vHeadDim}, {"q_lora_rank", a.mla.qLoraRank}};
    std::vector<bool> sliding = a.sliding.slidingLayers;
    j["sliding"] = {{"window_tokens", a.sliding.windowTokens}, {"layers", sliding}};
    return j;
}

Architecture archFromJson(const json& j)
{
    Architecture a;
    a.family = j.at("family").get<std::string>();
    a.layers = j.at("layers").get<std::uint32_t>();
    a.hiddenSize = j.at("hidden_size").get<std::uint64_t>();
    a.attentionHeads = j.at("attention_heads").get<std::uint32_t>();
    a.kvHeads = j.at("kv_heads").get<std::uint32_t>();
    a.kvHeadsPerLayer = j.at("kv_heads_per_layer").get<std::vector<std::uint32_t>>();
    a.headDim = j.at("head_dim").get<std::uint32_t>();
    a.valueHeadDim = j.at("value_head_dim").get<std::uint32_t>();
    a.intermediateSize = j.at("intermediate_size").get<std::uint64_t>();
    a.vocabSize = j.at("vocab_size").get<std::uint64_t>();
    a.tiedEmbeddings = j.at("tied_embeddings").get<bool>();
    a.qkvBias = j.at("qkv_bias").get<bool>();
    a.outputProjBias = j.at("output_proj_bias").get<bool>();
    a.mlpBias = j.at("mlp_bias").get<bool>();
    a.qkNorm = j.at("qk_norm").get<bool>();
    a.norm = j.at("norm").get<std::string>() == "rmsnorm" ? NormKind::RmsNorm : NormKind::LayerNorm;
    a.mlp = j.at("mlp").get<std::string>() == "gated" ? MlpKind::Gated : MlpKind::Plain;
    a.normsPerLayer = j.at("norms_per_layer").get<std::uint32_t>();
    a.positionEmbeddingRows = j.at("position_embedding_rows").get<std::uint64_t>();
    a.contextLength = j.at("context_length").get<std::uint64_t>();
    const json& moe = j.at("moe");
    a.moe.expertCount = moe.at("expert_count").get<std::uint32_t>();
    a.moe.expertsPerToken = moe.at("experts_per_token").get<std::uint32_t>();
    a.moe.sharedExperts = moe.at("shared_experts").get<std::uint32_t>();
    a.moe.expertFfnSize = moe.at("expert_ffn_size").get<std::uint64_t>();
    a.moe.denseFirstLayers = moe.at("dense_first_layers").get<std::uint32_t>();
    const json& mla = j.at("mla");
    a.mla.kvLoraRank = mla.at("kv_lora_rank").get<std::uint32_t>();
    a.mla.qkRopeHeadDim = mla.at("qk_rope_head_dim").get<std::uint32_t>();
    a.mla.qkNopeHeadDim = mla.at("qk_nope_head_dim").get<std::uint32_t>();
    a.mla.vHeadDim = mla.at("v_head_dim").get<std::uint32_t>();
    a.mla.qLoraRank = mla.at("q_lora_rank").get<std::uint32_t>();
    a.sliding.windowTokens = j.at("sliding").at("window_tokens").get<std::uint64_t>();
    a.sliding.slidingLayers = j.at("sliding").at("layers").get<std::vector<bool>>();
    return a;
}

const char* hookName(ChildTestHook hook)
{
    switch (hook) {
    case ChildTestHook::None: return "none";
    case ChildTestHook::Crash: return "crash";
    case ChildTestHook::Abort: return "abort";
    case ChildTestHook::Hang: return "hang";
    }
    return "none";
}

ChildTestHook hookFromName(const std::string& name)
{
    for (ChildTestHook h : {ChildTestHook::Crash, ChildTestHook::Abort, ChildTestHook::Hang})
        if (name == hookName(h))
            return h;
    return ChildTestHook::None;
}

} // namespace

std::string limitWorkOrder(const DeviceSpec& device, std::optional<Bytes> budget, const ModelInputs& model,
                           const LimitProbeOptions& options)
{
    json j;
    j["task"] = "limit";
    j["device"] = toString(device);
    j["budget_bytes"] = budget ? json(budget->value) : json(nullptr);
    j["model"] = {{"id", model.model.id}, {"name", model.model.name},
                  {"architecture", model.model.architecture ? archToJson(*model.model.architecture) : json(nullptr)}};
    j["format"] = model.format.id;
    j["kv_dtype"] = model.kvDtype.id;
    j["context_tokens"] = model.contextTokens;
    j["users"] = model.users;
    j["verify_frontier"] = options.verifyFrontier;
    j["max_frontier_points"] = options.maxFrontierPoints;
    j["step_layers"] = options.stepLayers;
    j["test_hook"] = hookName(options.testHook);
    return j.dump();
}

std::string contextWorkOrder(const DeviceSpec& device)
{
    json j;
    j["task"] = "context";
    j["device"] = toString(device);
    return j.dump();
}

ProbeResult executeWorkOrder(std::string_view order, ProbeProgress& progress)
{
    const json j = json::parse(order, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return failedResult("worker", "malformed work order");
    try {
        const auto spec = parseDeviceSpec(j.at("device").get<std::string>());
        if (!spec)
            return failedResult("worker", "bad device in the work order");
        const std::string task = j.at("task").get<std::string>();
        if (task == "context") {
            auto device = openDevice(*spec);
            if (!device)
                return failedResult("context", device.error().message);
            auto info = (*device)->memoryInfo();
            if (!info)
                return failedResult("context", info.error().message);
            ProbeResult r;
            r.probe = "context";
            r.pass = true;
            r.summary = "memory seen by a second process";
            r.set("total_bytes", info->totalBytes.value);
            r.set("free_bytes", info->freeBytes.value);
            return r;
        }
        if (task != "limit")
            return failedResult("worker", "unknown task '" + task + "'");
        ModelInputs model;
        model.model.id = j.at("model").at("id").get<std::string>();
        model.model.name = j.at("model").at("name").get<std::string>();
        if (!j.at("model").at("architecture").is_null())
            model.model.architecture = archFromJson(j.at("model").at("architecture"));
        auto format = findFormat(j.at("format").get<std::string>());
        auto kv = findKvDtype(j.at("kv_dtype").get<std::string>());
        if (!format || !kv)
            return failedResult("limit", "unknown weight format or KV dtype in the work order");
        model.format = *format;
        model.kvDtype = *kv;
        model.contextTokens = j.at("context_tokens").get<std::uint64_t>();
        model.users = j.at("users").get<std::uint64_t>();
        LimitProbeOptions options;
        options.verifyFrontier = j.at("verify_frontier").get<bool>();
        options.maxFrontierPoints = j.at("max_frontier_points").get<std::size_t>();
        options.stepLayers = j.at("step_layers").get<std::uint32_t>();
        options.testHook = hookFromName(j.at("test_hook").get<std::string>());
        std::optional<Bytes> budget;
        if (!j.at("budget_bytes").is_null())
            budget = Bytes{j.at("budget_bytes").get<std::uint64_t>()};
        switch (options.testHook) {
        case ChildTestHook::Crash:
            progress.report(0.0, "about to crash (test hook)");
            std::raise(SIGSEGV);
            break;
        case ChildTestHook::Abort:
            std::abort();
        case ChildTestHook::Hang:
            progress.report(0.0, "hanging (test hook)");
            for (;;)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
        case ChildTestHook::None:
            break;
        }
        return runLimitSearch(*spec, budget, model, options, progress);
    } catch (const std::exception& e) {
        return failedResult("worker", std::string("malformed work order: ") + e.what());
    }
}

} // namespace headroom::probes::detail
