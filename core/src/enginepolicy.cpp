#include "headroom/core/enginepolicy.h"

#include <array>
#include <utility>

namespace headroom {

namespace {
// One table for both directions, in the order of the enum.
constexpr std::array<std::pair<EngineKind, const char*>, 7> kKindNames = {{
    {EngineKind::Vllm, "vllm"},
    {EngineKind::LlamaCpp, "llama.cpp"},
    {EngineKind::SgLang, "sglang"},
    {EngineKind::Tgi, "tgi"},
    {EngineKind::TensorRtLlm, "tensorrt-llm"},
    {EngineKind::Ollama, "ollama"},
    {EngineKind::Flat, "flat"},
}};
} // namespace

bool parseEngineKind(const std::string& text, EngineKind& out)
{
    for (const auto& [kind, name] : kKindNames) {
        if (text == name) {
            out = kind;
            return true;
        }
    }
    return false;
}

const char* engineKindName(EngineKind kind)
{
    for (const auto& [k, name] : kKindNames) {
        if (k == kind)
            return name;
    }
    return "unknown";
}

EnginePolicy flatReservePolicy(Bytes reserve)
{
    EnginePolicy policy;
    policy.id = "flat";
    policy.name = "Flat reserve";
    policy.kind = EngineKind::Flat;
    policy.version = "built-in";
    policy.memoryFraction = 1.0;
    policy.fixedReserve = reserve;
    policy.runtimeBytes = Bytes{0};
    policy.workspaceBytes = Bytes{0};
    policy.cudaGraphBytes = Bytes{0};
    policy.blockTokens = 1;
    policy.cellPaddingFlash = 1;
    policy.cellPaddingNoFlash = 1;
    policy.minContextTokens = 0;
    // Nothing but the reserve is subtracted: no activation peak, no logits on the device.
    policy.ubatchTokens = 0;
    policy.flashAttention = true;
    policy.logitsOnDevice = false;
    policy.fragmentationFraction = 0;
    policy.source = "built in: usable = card total - " + formatBytes(reserve) + " (BRIEF §1.4 flat reserve)";
    return policy;
}

} // namespace headroom
