#include "headroom/core/enginepolicy.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>
#include <vector>

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
    policy.source = "built in: usable = card total - " + formatBytes(reserve) + ", a flat reserve (--reserve)";
    return policy;
}

namespace {

// "v0.6.4" -> {"0", "6", "4"}; "0.8.0rc1" -> {"0", "8", "0rc1"}.
std::vector<std::string> versionParts(const std::string& text)
{
    std::string t = text;
    if (!t.empty() && (t[0] == 'v' || t[0] == 'V'))
        t.erase(0, 1);
    std::vector<std::string> parts;
    std::string part;
    for (char c : t) {
        if (c == '.') {
            parts.push_back(part);
            part.clear();
        } else {
            part += c;
        }
    }
    parts.push_back(part);
    return parts;
}

bool allDigits(const std::string& s)
{
    if (s.empty() || s.size() > 9)
        return false;
    for (char c : s)
        if (!std::isdigit(static_cast<unsigned char>(c)))
            return false;
    return true;
}

} // namespace

int compareVersions(const std::string& a, const std::string& b)
{
    const std::vector<std::string> pa = versionParts(a);
    const std::vector<std::string> pb = versionParts(b);
    for (std::size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
        const std::string x = i < pa.size() ? pa[i] : "0";
        const std::string y = i < pb.size() ? pb[i] : "0";
        if (allDigits(x) && allDigits(y)) {
            const long vx = std::stol(x);
            const long vy = std::stol(y);
            if (vx != vy)
                return vx < vy ? -1 : 1;
        } else if (x != y) {
            return x < y ? -1 : 1;
        }
    }
    return 0;
}

bool coversVersion(const EnginePolicy& policy, const std::string& version)
{
    if (!policy.versionFrom.empty() && compareVersions(version, policy.versionFrom) < 0)
        return false;
    if (!policy.versionUntil.empty() && compareVersions(version, policy.versionUntil) >= 0)
        return false;
    return true;
}

} // namespace headroom
