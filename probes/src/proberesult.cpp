#include "headroom/probes/proberesult.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace headroom::probes {

namespace {

using Json = nlohmann::ordered_json;

Json valueToJson(const ProbeValue& value)
{
    return std::visit(
        [](const auto& v) -> Json {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, RawJson>) {
                Json parsed = Json::parse(v.text, nullptr, false);
                return parsed.is_discarded() ? Json(v.text) : parsed;
            } else if constexpr (std::is_same_v<T, double>) {
                return std::isfinite(v) ? Json(v) : Json(nullptr);
            } else {
                return Json(v);
            }
        },
        value);
}

Json resultToJson(const ProbeResult& r)
{
    Json j;
    j["probe"] = r.probe;
    j["verdict"] = probeVerdictName(r.verdict());
    j["pass"] = r.pass;
    j["summary"] = r.summary;
    if (r.cancelled)
        j["cancelled"] = true;
    if (!r.supported)
        j["supported"] = false;
    for (const auto& [key, value] : r.values)
        j[key] = valueToJson(value);
    j["notes"] = r.notes;
    return j;
}

} // namespace

ProbeVerdict ProbeResult::verdict() const
{
    if (cancelled)
        return ProbeVerdict::Cancelled;
    if (!supported)
        return ProbeVerdict::NotSupported;
    if (!judged)
        return ProbeVerdict::Measured;
    return pass ? ProbeVerdict::Pass : ProbeVerdict::Fail;
}

void ProbeResult::setVerdict(ProbeVerdict verdict)
{
    pass = verdict == ProbeVerdict::Pass;
    judged = verdict != ProbeVerdict::Measured;
    supported = verdict != ProbeVerdict::NotSupported;
    cancelled = verdict == ProbeVerdict::Cancelled;
}

void ProbeResult::set(std::string key, ProbeValue value)
{
    for (auto& [k, v] : values) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    values.emplace_back(std::move(key), std::move(value));
}

const ProbeValue* ProbeResult::find(std::string_view key) const
{
    for (const auto& [k, v] : values)
        if (k == key)
            return &v;
    return nullptr;
}

std::optional<std::uint64_t> ProbeResult::integer(std::string_view key) const
{
    const ProbeValue* v = find(key);
    if (!v)
        return std::nullopt;
    if (const auto* u = std::get_if<std::uint64_t>(v))
        return *u;
    if (const auto* i = std::get_if<std::int64_t>(v); i && *i >= 0)
        return static_cast<std::uint64_t>(*i);
    return std::nullopt;
}

std::optional<double> ProbeResult::number(std::string_view key) const
{
    const ProbeValue* v = find(key);
    if (!v)
        return std::nullopt;
    if (const auto* u = std::get_if<std::uint64_t>(v))
        return static_cast<double>(*u);
    if (const auto* i = std::get_if<std::int64_t>(v))
        return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(v))
        return *d;
    return std::nullopt;
}

std::optional<std::string> ProbeResult::text(std::string_view key) const
{
    const ProbeValue* v = find(key);
    if (const auto* s = v ? std::get_if<std::string>(v) : nullptr)
        return *s;
    return std::nullopt;
}

std::optional<bool> ProbeResult::flag(std::string_view key) const
{
    const ProbeValue* v = find(key);
    if (const auto* b = v ? std::get_if<bool>(v) : nullptr)
        return *b;
    return std::nullopt;
}

ProbeResult failedResult(std::string probe, std::string summary)
{
    ProbeResult r;
    r.probe = std::move(probe);
    r.pass = false;
    r.summary = std::move(summary);
    return r;
}

ProbeResult cancelledResult(std::string probe)
{
    ProbeResult r = failedResult(std::move(probe), "cancelled");
    r.cancelled = true;
    return r;
}

std::string probeResultToJson(const ProbeResult& result, int indent)
{
    return resultToJson(result).dump(indent);
}

std::string probeResultsToJson(const DeviceSummary& device, const std::vector<ProbeResult>& results, int indent)
{
    Json doc;
    doc["schema_version"] = kProbeSchemaVersion;
    Json d;
    d["spec"] = device.spec;
    d["name"] = device.name;
    d["total_bytes"] = device.totalBytes;
    d["free_bytes"] = device.freeBytes;
    d["budget_bytes"] = device.budgetBytes ? Json(*device.budgetBytes) : Json(nullptr);
    Json facts = Json::object();
    for (const auto& [k, v] : device.facts)
        facts[k] = v;
    d["facts"] = facts;
    if (!device.error.empty())
        d["error"] = device.error;
    doc["device"] = d;
    Json list = Json::array();
    for (const ProbeResult& r : results)
        list.push_back(resultToJson(r));
    doc["results"] = list;
    doc["pass"] = device.error.empty() && std::none_of(results.begin(), results.end(), [](const ProbeResult& r) {
        return r.verdict() == ProbeVerdict::Fail || r.verdict() == ProbeVerdict::Cancelled;
    });
    return doc.dump(indent);
}

std::optional<ProbeResult> probeResultFromJson(std::string_view text)
{
    const Json j = Json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("probe") || !j["probe"].is_string())
        return std::nullopt;
    ProbeResult r;
    for (const auto& item : j.items()) {
        const std::string& key = item.key();
        const Json& v = item.value();
        if (key == "probe") {
            r.probe = v.get<std::string>();
        } else if (key == "pass" && v.is_boolean()) {
            r.pass = v.get<bool>();
        } else if (key == "verdict" && v.is_string()) {
            if (const auto verdict = parseProbeVerdict(v.get<std::string>()))
                r.judged = *verdict != ProbeVerdict::Measured;
        } else if (key == "summary" && v.is_string()) {
            r.summary = v.get<std::string>();
        } else if (key == "cancelled" && v.is_boolean()) {
            r.cancelled = v.get<bool>();
        } else if (key == "supported" && v.is_boolean()) {
            r.supported = v.get<bool>();
        } else if (key == "notes" && v.is_array()) {
            for (const Json& n : v)
                if (n.is_string())
                    r.notes.push_back(n.get<std::string>());
        } else if (v.is_boolean()) {
            r.set(key, v.get<bool>());
        } else if (v.is_number_unsigned()) {
            r.set(key, v.get<std::uint64_t>());
        } else if (v.is_number_integer()) {
            r.set(key, v.get<std::int64_t>());
        } else if (v.is_number_float()) {
            r.set(key, v.get<double>());
        } else if (v.is_string()) {
            r.set(key, v.get<std::string>());
        } else if (v.is_null()) {
            r.set(key, RawJson{"null"});
        } else {
            r.set(key, RawJson{v.dump()});
        }
    }
    return r;
}

} // namespace headroom::probes
