#include "headroom/core/probeverdict.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {

using json = nlohmann::json;

/// The verdict recorded in a result or row: "verdict", else the legacy "pass" flag.
std::optional<ProbeVerdict> recordedVerdict(const json& j)
{
    if (j.contains("verdict") && j["verdict"].is_string())
        return parseProbeVerdict(j["verdict"].get<std::string>());
    if (j.contains("pass") && j["pass"].is_boolean())
        return j["pass"].get<bool>() ? ProbeVerdict::Pass : ProbeVerdict::Fail;
    return std::nullopt;
}

std::optional<std::uint64_t> unsignedOf(const json& j, const char* key)
{
    if (j.contains(key) && j[key].is_number_unsigned())
        return j[key].get<std::uint64_t>();
    return std::nullopt;
}

std::optional<double> numberOf(const json& j, const char* key)
{
    if (j.contains(key) && j[key].is_number())
        return j[key].get<double>();
    return std::nullopt;
}

/// The verdict the values of @p r give, or nullopt when the rules do not judge it here.
std::optional<ProbeVerdict> recomputed(const json& r, std::string& why)
{
    const std::string probe = r.value("probe", std::string());
    if (probe == "allocation") {
        const auto m = unsignedOf(r, "measured_bytes"), p = unsignedOf(r, "predicted_bytes");
        if (!m || !p)
            return std::nullopt;
        return allocationVerdict(*m, *p);
    }
    if (probe == "limit") {
        const auto v = unsignedOf(r, "verified_tokens"), p = unsignedOf(r, "predicted_tokens");
        const auto block = unsignedOf(r, "block_tokens");
        if (!v || !p || !block)
            return std::nullopt;
        std::uint64_t checked = 0, ran = 0;
        if (r.contains("frontier") && r["frontier"].is_array())
            for (const json& f : r["frontier"]) {
                ++checked;
                ran += f.value("verified", false) ? 1 : 0;
            }
        return limitVerdict(*v, *p, *block, checked, ran);
    }
    if (probe == "timing") {
        const double tolerance = numberOf(r, "tolerance_fraction").value_or(0.0);
        std::vector<ProbeVerdict> rows;
        for (const char* table : {"decode", "context", "prefill"}) {
            if (!r.contains(table) || !r[table].is_array())
                continue;
            const bool prefill = std::string_view(table) == "prefill";
            for (std::size_t i = 0; i < r[table].size(); ++i) {
                const json& row = r[table][i];
                const auto measured = numberOf(row, prefill ? "ttft_ms" : "step_ms");
                const auto predicted = numberOf(row, prefill ? "predicted_ttft_ms" : "predicted_step_ms");
                const bool calibration = row.value("calibration", false);
                const ProbeVerdict now = calibration || !measured || !predicted
                    ? ProbeVerdict::Measured
                    : timingRowVerdict(*measured, *predicted, tolerance);
                const auto stored = recordedVerdict(row);
                if (stored && *stored != now && why.empty())
                    why = std::string(table) + "[" + std::to_string(i) + "] recorded " + probeVerdictName(*stored)
                        + ", its times give " + probeVerdictName(now);
                rows.push_back(now);
            }
        }
        return combineVerdicts(rows);
    }
    return std::nullopt;
}

} // namespace

const char* probeVerdictName(ProbeVerdict verdict)
{
    switch (verdict) {
    case ProbeVerdict::Pass: return "pass";
    case ProbeVerdict::Fail: return "fail";
    case ProbeVerdict::NotSupported: return "not-supported";
    case ProbeVerdict::Cancelled: return "cancelled";
    case ProbeVerdict::Measured: return "measured";
    }
    return "fail";
}

std::optional<ProbeVerdict> parseProbeVerdict(std::string_view text)
{
    for (ProbeVerdict v : {ProbeVerdict::Pass, ProbeVerdict::Fail, ProbeVerdict::NotSupported, ProbeVerdict::Cancelled,
                           ProbeVerdict::Measured})
        if (text == probeVerdictName(v))
            return v;
    return std::nullopt;
}

ProbeVerdict allocationVerdict(std::uint64_t measuredBytes, std::uint64_t predictedBytes)
{
    return measuredBytes == predictedBytes ? ProbeVerdict::Pass : ProbeVerdict::Fail;
}

ProbeVerdict limitVerdict(std::uint64_t verifiedTokens, std::uint64_t predictedTokens, std::uint64_t blockTokens,
                          std::uint64_t frontierChecked, std::uint64_t frontierRan)
{
    if (verifiedTokens > predictedTokens || frontierRan != frontierChecked)
        return ProbeVerdict::Fail;
    const bool close = static_cast<double>(verifiedTokens) >= 0.99 * static_cast<double>(predictedTokens)
        || predictedTokens - verifiedTokens <= blockTokens;
    return close ? ProbeVerdict::Pass : ProbeVerdict::Fail;
}

ProbeVerdict timingRowVerdict(double measuredMs, double predictedMs, double tolerance)
{
    if (!(predictedMs > 0) || !(tolerance > 0) || !std::isfinite(measuredMs))
        return ProbeVerdict::Measured;
    return std::abs(measuredMs / predictedMs - 1.0) <= tolerance ? ProbeVerdict::Pass : ProbeVerdict::Fail;
}

ProbeVerdict combineVerdicts(const std::vector<ProbeVerdict>& rows)
{
    if (std::find(rows.begin(), rows.end(), ProbeVerdict::Fail) != rows.end())
        return ProbeVerdict::Fail;
    if (std::find(rows.begin(), rows.end(), ProbeVerdict::Pass) != rows.end())
        return ProbeVerdict::Pass;
    return ProbeVerdict::Measured;
}

std::vector<std::string> recheckProbeVerdicts(std::string_view probesJson)
{
    const json doc = json::parse(probesJson, nullptr, false);
    if (doc.is_discarded() || !doc.is_object())
        return {"probes: not a JSON object"};
    if (!doc.contains("results") || !doc["results"].is_array())
        return {"probes: no \"results\" array"};
    std::vector<std::string> problems;
    const json& results = doc["results"];
    for (std::size_t i = 0; i < results.size(); ++i) {
        const json& r = results[i];
        if (!r.is_object())
            continue;
        const std::string name = "results[" + std::to_string(i) + "] (" + r.value("probe", std::string("?")) + ")";
        const auto stored = recordedVerdict(r);
        if (!stored) {
            problems.push_back(name + ": no verdict recorded");
            continue;
        }
        if (*stored == ProbeVerdict::NotSupported || *stored == ProbeVerdict::Cancelled)
            continue;
        std::string why;
        const auto now = recomputed(r, why);
        if (!why.empty())
            problems.push_back(name + ": " + why);
        else if (now && *now != *stored)
            problems.push_back(name + ": recorded " + std::string(probeVerdictName(*stored)) + ", its values give "
                               + probeVerdictName(*now));
    }
    return problems;
}

} // namespace headroom
