#include "headroom/core/speed/splitspeed.h"

#include "headroom/core/speed/roofline.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

namespace headroom {

namespace {

// Milliseconds to stream one side's bytes; negative when it has bytes and no bandwidth.
double sideMs(const SplitSide& s, double expertFraction)
{
    const double experts = static_cast<double>(std::min(s.expertBytes.value, s.weightsBytes.value));
    const double bytes = static_cast<double>(s.weightsBytes.value) - experts + experts * expertFraction
        + static_cast<double>(s.kvBytes.value);
    if (bytes <= 0)
        return 0;
    if (!(s.bandwidthGBps > 0))
        return -1;
    return bytes / (s.bandwidthGBps * 1e9) * 1e3;
}

// A whole number in [lo, hi] spelled by all of @p t; nullopt otherwise.
std::optional<unsigned> wholeIn(const std::string& t, unsigned lo, unsigned hi)
{
    if (t.empty() || t.size() > 6 || !std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); }))
        return std::nullopt;
    const unsigned long v = std::strtoul(t.c_str(), nullptr, 10);
    if (v < lo || v > hi)
        return std::nullopt;
    return static_cast<unsigned>(v);
}

} // namespace

tl::expected<double, std::string> parseHostBandwidth(const std::string& spec)
{
    const std::string shown = "\"" + spec.substr(0, 40) + (spec.size() > 40 ? "...\"" : "\"");
    const std::string expected = "expected a DIMM spec (ddr4-3200x2, ddr5-5600) or a bandwidth in GB/s (102), found " + shown;
    std::string s;
    for (char c : spec.substr(0, 64))
        s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s.rfind("ddr", 0) == 0) {
        const std::string::size_type dash = s.find('-');
        const std::string::size_type x = s.find('x', dash == std::string::npos ? 0 : dash);
        if (dash == std::string::npos)
            return tl::unexpected(expected);
        const auto gen = wholeIn(s.substr(3, dash - 3), 3, 5);
        const auto rate = wholeIn(s.substr(dash + 1, x == std::string::npos ? std::string::npos : x - dash - 1), 400, 12800);
        const auto channels = x == std::string::npos ? std::optional<unsigned>(2) : wholeIn(s.substr(x + 1), 1, 24);
        if (!gen || !rate || !channels)
            return tl::unexpected(expected);
        return static_cast<double>(*channels) * 8.0 * static_cast<double>(*rate) / 1000.0;
    }
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !(v > 0) || v > 100000)
        return tl::unexpected(expected);
    return v;
}

SplitSpeed splitDecodeSpeed(const SplitSide& gpu, const SplitSide& host, std::uint32_t expertCount,
                            std::uint32_t expertsPerToken, std::uint32_t crossings, Bytes activationBytes, double linkGBps)
{
    return splitDecodeSpeed(std::vector<SplitSide>{gpu}, host, expertCount, expertsPerToken, crossings, activationBytes, linkGBps);
}

SplitSpeed splitDecodeSpeed(const std::vector<SplitSide>& gpus, const SplitSide& host, std::uint32_t expertCount,
                            std::uint32_t expertsPerToken, std::uint32_t crossings, Bytes activationBytes, double linkGBps)
{
    const double fraction = expertCount > 0 ? expertsTouchedFraction(expertCount, expertsPerToken, 1) : 1.0;
    SplitSpeed out;
    bool unknown = false;
    for (const SplitSide& g : gpus) {
        const double ms = sideMs(g, fraction);
        unknown = unknown || ms < 0;
        out.devicesMs.push_back(std::max(ms, 0.0));
        out.gpuMs += std::max(ms, 0.0);
    }
    out.hostMs = sideMs(host, fraction);
    if (unknown || out.hostMs < 0) {
        out.gpuMs = out.hostMs = 0;
        out.devicesMs.assign(gpus.size(), 0.0);
        return out;
    }
    if (crossings > 0 && linkGBps > 0)
        out.linkMs = static_cast<double>(crossings) * static_cast<double>(activationBytes.value) / (linkGBps * 1e9) * 1e3;
    out.stepMs = out.gpuMs + out.hostMs + out.linkMs;
    out.tokensPerSecond = out.stepMs > 0 ? 1e3 / out.stepMs : 0;
    return out;
}

} // namespace headroom
