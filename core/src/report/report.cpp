#include "headroom/core/report/report.h"
#include "headroom/core/probeverdict.h"

#include "headroom/core/enginepolicy.h"
#include "headroom/core/launchflags.h"
#include "headroom/core/resolve.h"
#include "headroom/core/speed/roofline.h"
#include "headroom/core/version.h"

#include "headroom/core/safetext.h"

#include "importers/jsonutil.h"
#include "planjson.h"
#include "reportjson.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "reportschema.inc"

namespace headroom {

using nlohmann::json;

namespace {

constexpr const char* kMasked = "<masked>";

std::string nowUtc()
{
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// Three decimals are what a person reads; fewer digits keep golden files stable.
double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

json modelJson(const ModelProfile& m, const PlanResult& p)
{
    json j;
    j["id"] = m.id;
    j["name"] = m.name;
    j["source"] = m.source;
    j["content_hash"] = m.contentHash;
    j["parameters"] = p.parameters;
    j["parameters_source"] = p.parametersSource;
    j["exact_weights"] = m.exactWeights.has_value();
    j["warnings"] = m.warnings;
    return j;
}

json cardJson(const Card& c)
{
    json j = {{"id", c.id},
              {"name", c.name},
              {"memory_class", c.memoryClass},
              {"total_bytes", c.totalBytes.value},
              {"bandwidth_gbps", c.bandwidthGBps},
              {"fp16_tflops", c.fp16Tflops},
              {"l2_bytes", c.l2Bytes.value},
              {"anonymous", c.anonymous},
              {"source", c.source}};
    if (c.hostOnly) // the host-only card "cpu": no device memory (total_bytes 0)
        j["host_only"] = true;
    return j;
}

json engineJson(const EnginePolicy& e)
{
    return {{"id", e.id},
            {"name", e.name},
            {"kind", engineKindName(e.kind)},
            {"version", e.version},
            {"memory_fraction", e.memoryFraction},
            {"fixed_reserve_bytes", e.fixedReserve.value},
            {"runtime_bytes", e.runtimeBytes.value},
            {"workspace_bytes", e.workspaceBytes.value},
            {"cuda_graph_bytes", e.cudaGraphBytes.value},
            {"block_tokens", e.blockTokens},
            {"ubatch_tokens", e.ubatchTokens},
            {"flash_attention", e.flashAttention},
            {"source", e.source}};
}

// What `checkReport` needs to rebuild the request with core's resolvers.
json requestJson(const PlanRequest& r)
{
    json j;
    j["model"] = r.model.id;
    j["weights_format"] = r.format.id;
    j["kv_dtype"] = r.kvDtype.id;
    j["card"] = r.card.id;
    j["engine"] = r.engine.requestedVersion.empty() ? r.engine.id : r.engine.id + "@" + r.engine.requestedVersion;
    if (!r.engineSettings.empty()) {
        json settings = json::array();
        for (const EngineSetting& s : r.engineSettings)
            settings.push_back({{"key", s.key}, {"value", s.value}});
        j["engine_settings"] = settings;
    }
    if (r.engine.kind == EngineKind::Flat)
        j["reserve_bytes"] = r.engine.fixedReserve.value;
    j["tensor_parallel"] = r.tensorParallel;
    j["pipeline_parallel"] = r.pipelineParallel;
    if (r.contextTokens)
        j["context_tokens"] = *r.contextTokens;
    if (r.users)
        j["users"] = *r.users;
    if (r.ubatchTokens)
        j["ubatch_tokens"] = *r.ubatchTokens;
    if (r.flashAttention)
        j["flash_attention"] = *r.flashAttention;
    if (r.nominalParameters)
        j["nominal_parameters"] = *r.nominalParameters;
    json measured = json::object();
    if (r.measured.activationPeakBytes)
        measured["activation_peak_bytes"] = r.measured.activationPeakBytes->value;
    if (r.measured.runtimeBytes)
        measured["runtime_bytes"] = r.measured.runtimeBytes->value;
    if (r.measured.cudaGraphBytes)
        measured["cuda_graph_bytes"] = r.measured.cudaGraphBytes->value;
    if (!measured.empty())
        j["measured"] = measured;
    return j;
}

json launchJson(const LaunchFlags& f)
{
    json flags = json::array();
    for (const LaunchFlag& flag : f.flags)
        flags.push_back({{"name", flag.name}, {"value", flag.value}, {"kind", launchFlagKindName(flag.kind)}, {"note", flag.note}});
    return {{"engine", launchEngineName(f.engine)},
            {"users", f.point.users},
            {"context_tokens", f.point.contextTokens},
            {"context_lowered", f.point.lowered},
            {"command", f.command},
            {"flags", flags},
            {"notes", f.notes}};
}

// BRIEF §2: the decode step streams the weights and the caches; step >= max(bytes / bandwidth,
// FLOPs / peak). A ceiling on tokens/s from datasheet figures, replaced by measured speed.
std::optional<json> rooflineJson(const PlanRequest& r, const PlanResult& p)
{
    if (r.card.bandwidthGBps <= 0 || !p.speed || !p.verdict.loads())
        return std::nullopt; // speed only for what loads
    // A layer split's speed is the split's (the plan's note "split speed: ... tokens/s", from
    // planspeed.h SpeedSummary::split), not this all-on-GPU ceiling of weights the card cannot hold.
    if (p.speed->split)
        return std::nullopt;
    auto point = launchPoint(p);
    const std::uint64_t users = point ? point->users : 1;
    const std::uint64_t context = point ? point->contextTokens : 0;
    // The core's speed model (core/speed/roofline.h) with the plan's own inputs.
    const SpeedInputs& in = p.speed->inputs;
    const StepEstimate e = decodeStep(in, users, context);
    json j;
    j["users"] = users;
    j["context_tokens"] = context;
    j["bytes_per_step"] = static_cast<std::uint64_t>(e.memoryMs / 1e3 * in.bandwidthGBps * 1e9);
    j["flops_per_step"] = round3(e.computeMs / 1e3 * in.peakTflops * 1e12);
    j["bandwidth_gbps"] = in.bandwidthGBps;
    j["fp16_tflops"] = in.peakTflops;
    j["decode_step_floor_ms"] = round3(e.stepMs);
    j["tokens_per_second_per_user_max"] = round3(e.perSequenceTokensPerSecond);
    j["tokens_per_second_total_max"] = round3(e.tokensPerSecond);
    j["bound"] = e.computeBound ? "compute" : "memory";
    j["source"] = "roofline lower bound on the decode step: max(bytes moved / "
                  "bandwidth, FLOPs / fp16 peak), card datasheet figures; probes measure the real step";
    return j;
}

// One line per valijson error: "/pointer: description".
void collectErrors(valijson::ValidationResults& results, std::vector<std::string>& out)
{
    valijson::ValidationResults::Error error;
    while (results.popError(error) && out.size() < 20) {
        std::string pointer;
        for (const std::string& part : error.context) {
            if (part == "<root>")
                continue;
            std::string token = part.size() >= 2 && part.front() == '[' && part.back() == ']' ? part.substr(1, part.size() - 2) : part;
            pointer += "/" + token;
        }
        out.push_back((pointer.empty() ? "/" : pointer) + ": " + error.description);
    }
}

const valijson::Schema* reportSchema(std::string* problem)
{
    static std::once_flag once;
    static std::unique_ptr<valijson::Schema> schema;
    static std::string error;
    std::call_once(once, [] {
        try {
            const json raw = json::parse(reportSchemaText());
            auto s = std::make_unique<valijson::Schema>();
            valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
            valijson::adapters::NlohmannJsonAdapter adapter(raw);
            parser.populateSchema(adapter, *s);
            schema = std::move(s);
        } catch (const std::exception& e) {
            error = std::string("the embedded report schema is invalid: ") + e.what();
        }
    });
    if (!schema && problem)
        *problem = error;
    return schema.get();
}

tl::expected<json, ReportError> block(const std::string& text, const char* name)
{
    if (text.empty())
        return json();
    auto doc = reportdetail::parse(text, name);
    if (!doc)
        return doc;
    if (!doc->is_object())
        return tl::unexpected(ReportError{std::string(name) + " block: expected a JSON object"});
    return doc;
}

/// The lists of inputs a report keeps once per id, in the order of first use.
constexpr std::array<const char*, 5> kInputLists = {"models", "cards", "engines", "weights_formats", "kv_dtypes"};

/// What one plan contributes to a report: its request, its plan, its what-fits cell, and its
/// entry (with the id it is kept under) in each of kInputLists.
struct PlanEntry {
    json request;
    json plan;
    json cell;
    std::array<std::pair<std::string, json>, kInputLists.size()> lists;
};

PlanEntry planEntry(const PlanRequest& r, const PlanResult& p, std::size_t index)
{
    PlanEntry e;
    e.lists = {{{r.model.id, modelJson(r.model, p)},
                {r.card.id, cardJson(r.card)},
                {r.engine.id, engineJson(r.engine)},
                {p.formatId, json{{"id", p.formatId}, {"description", r.format.description}}},
                {p.kvDtypeId, json{{"id", p.kvDtypeId}, {"bytes_per_value", r.kvDtype.bytesPerValue()}}}}};
    e.request = requestJson(r);
    e.plan = planJsonObject(p);
    if (auto flags = launchFlags(r, p))
        e.plan["launch"] = launchJson(*flags);
    else
        e.plan["launch_error"] = flags.error();
    if (auto roof = rooflineJson(r, p))
        e.plan["roofline"] = *roof;
    e.cell = json{{"plan_index", index},
                  {"model", p.modelId},
                  {"weights_format", p.formatId},
                  {"card", p.cardId},
                  {"fits", p.fits},
                  {"weights_bytes", p.weightsBytes.value},
                  {"usable_bytes", p.usableBytes.value},
                  {"max_resident_tokens", p.maxResidentTokens},
                  {"users", p.users},
                  {"context_tokens", p.contextTokens},
                  {"verdict", verdictJsonObject(p.verdict)}};
    if (p.maxContext)
        e.cell["max_context"] = *p.maxContext;
    if (p.maxUsers)
        e.cell["max_users"] = *p.maxUsers;
    return e;
}

/// kInputLists as plans fill them: each entry once per id, in the order of first use.
class InputLists {
public:
    void add(PlanEntry& e)
    {
        for (std::size_t k = 0; k < kInputLists.size(); ++k)
            if (m_seen[k].insert(e.lists[k].first).second)
                m_lists[k].push_back(std::move(e.lists[k].second));
    }
    /// List @p k of kInputLists (an empty array before any plan).
    json list(std::size_t k) const { return m_lists[k].is_null() ? json::array() : m_lists[k]; }

private:
    std::array<json, kInputLists.size()> m_lists;
    std::array<std::set<std::string>, kInputLists.size()> m_seen;
};

/// The keys of a report that no plan gives: schema_version, kind, title, tool, created_utc.
json reportHeader(const std::string& title, const std::string& createdUtc)
{
    json doc;
    doc["schema_version"] = kReportSchemaVersion;
    doc["kind"] = "headroom-capacity-report";
    doc["title"] = title.empty() ? std::string("Capacity report") : safeText(title);
    doc["tool"] = {{"name", "headroom"}, {"version", toolVersion()}};
    doc["created_utc"] = createdUtc.empty() ? nowUtc() : createdUtc;
    return doc;
}

/// "report: 20000 plans, more than the 4096 a report may hold", or empty.
std::string planCountProblem(std::size_t plans)
{
    if (plans <= kMaxReportPlans)
        return {};
    return "report: " + std::to_string(plans) + " plans, more than the " + std::to_string(kMaxReportPlans) + " a report may hold";
}

tl::expected<json, ReportError> buildReport(const ReportInput& input)
{
    if (input.requests.size() != input.plans.size())
        return tl::unexpected(ReportError{"report: " + std::to_string(input.requests.size()) + " requests but "
                                          + std::to_string(input.plans.size()) + " plans"});
    if (const std::string problem = planCountProblem(input.plans.size()); !problem.empty())
        return tl::unexpected(ReportError{problem});
    json doc = reportHeader(input.title, input.createdUtc);
    InputLists lists;
    json requests = json::array(), plans = json::array(), matrix = json::array();
    for (std::size_t i = 0; i < input.plans.size(); ++i) {
        PlanEntry e = planEntry(input.requests[i], input.plans[i], i);
        lists.add(e);
        requests.push_back(std::move(e.request));
        plans.push_back(std::move(e.plan));
        matrix.push_back(std::move(e.cell));
    }
    json inputs = json::object();
    for (std::size_t k = 0; k < kInputLists.size(); ++k)
        inputs[kInputLists[k]] = lists.list(k);
    inputs["requests"] = std::move(requests);
    doc["inputs"] = std::move(inputs);
    doc["what_fits"] = std::move(matrix);
    doc["plans"] = std::move(plans);

    auto probes = block(input.probesJson, "probes");
    if (!probes)
        return tl::unexpected(probes.error());
    if (!probes->is_null())
        doc["probes"] = *probes;
    auto speed = block(input.speedJson, "speed");
    if (!speed)
        return tl::unexpected(speed.error());
    if (!speed->is_null())
        doc["speed"] = *speed;

    const std::vector<std::string> errors = reportdetail::schemaErrors(doc);
    if (!errors.empty())
        return tl::unexpected(ReportError{"the report does not match its schema: " + errors.front()});
    return doc;
}

void maskInPlace(json& doc)
{
    if (doc.contains("tool") && doc["tool"].is_object())
        doc["tool"]["version"] = kMasked;
    if (doc.contains("created_utc"))
        doc["created_utc"] = kMasked;
}

// Rebuilds request i from the report's inputs.requests[i].
tl::expected<PlanRequest, std::string> rebuildRequest(const json& r, const ProfileSet& profiles)
{
    PlanRequest req;
    auto model = resolveModel(r.at("model").get<std::string>(), profiles);
    if (!model)
        return tl::unexpected(model.error());
    req.model = *model;
    const std::string formatId = r.at("weights_format").get<std::string>();
    auto format = resolveFormat(formatId, req.model);
    if (!format && req.model.exactWeights && req.model.exactWeights->formatId == formatId)
        format = resolveFormat("", req.model);
    if (!format)
        return tl::unexpected(format.error());
    req.format = *format;
    auto kv = resolveKvDtype(r.at("kv_dtype").get<std::string>());
    if (!kv)
        return tl::unexpected(kv.error());
    req.kvDtype = *kv;
    auto card = resolveCard(r.at("card").get<std::string>(), profiles);
    if (!card)
        return tl::unexpected(card.error());
    req.card = *card;
    const std::string engineId = r.at("engine").get<std::string>();
    if (engineId == "flat") {
        req.engine = flatReservePolicy(Bytes{r.value("reserve_bytes", std::uint64_t{0})});
    } else {
        auto engine = resolveEngine(engineId, profiles);
        if (!engine)
            return tl::unexpected(engine.error());
        req.engine = *engine;
    }
    if (r.contains("engine_settings")) {
        for (const json& s : r["engine_settings"])
            req.engineSettings.push_back({s.at("key").get<std::string>(), s.at("value").get<std::string>()});
    }
    req.tensorParallel = r.value("tensor_parallel", 1u);
    req.pipelineParallel = r.value("pipeline_parallel", 1u);
    if (r.contains("context_tokens"))
        req.contextTokens = r["context_tokens"].get<std::uint64_t>();
    if (r.contains("users"))
        req.users = r["users"].get<std::uint64_t>();
    if (r.contains("ubatch_tokens"))
        req.ubatchTokens = r["ubatch_tokens"].get<std::uint64_t>();
    if (r.contains("flash_attention"))
        req.flashAttention = r["flash_attention"].get<bool>();
    if (r.contains("nominal_parameters"))
        req.nominalParameters = r["nominal_parameters"].get<std::uint64_t>();
    if (r.contains("measured")) {
        const json& m = r["measured"];
        if (m.contains("activation_peak_bytes"))
            req.measured.activationPeakBytes = Bytes{m["activation_peak_bytes"].get<std::uint64_t>()};
        if (m.contains("runtime_bytes"))
            req.measured.runtimeBytes = Bytes{m["runtime_bytes"].get<std::uint64_t>()};
        if (m.contains("cuda_graph_bytes"))
            req.measured.cudaGraphBytes = Bytes{m["cuda_graph_bytes"].get<std::uint64_t>()};
    }
    return req;
}

/// One drift at @p path (a JSON pointer); only the first kMaxReportedDrifts are kept.
void recordDrift(const std::string& path, std::string reported, std::string now, ReportCheck& check)
{
    ++check.driftCount;
    if (check.drifts.size() < kMaxReportedDrifts)
        check.drifts.push_back(ReportDrift{safeText(path.empty() ? "/" : path), std::move(reported), std::move(now)});
}

/// A JSON pointer token (RFC 6901: "~" as "~0", "/" as "~1").
std::string pointerToken(const std::string& key)
{
    std::string out;
    for (char c : key)
        out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return out;
}

/// A value as compact JSON (invalid UTF-8 cannot occur: the parser refuses it).
std::string jsonText(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

/// Appends to @p check a drift for every value that differs between @p reported and @p now,
/// walking both documents once: linear in their size (json::diff is quadratic in the length of
/// an array that shrinks: nlohmann/json 3.11 inserts each removal in the middle of its result).
/// Recursion is bounded by the parse depth (kMaxReportDepth).
void diffValues(const json& reported, const json& now, const std::string& path, ReportCheck& check)
{
    if (reported.type() != now.type() && !(reported.is_number() && now.is_number())) {
        recordDrift(path, jsonText(reported), jsonText(now), check);
    } else if (reported.is_object()) {
        for (auto it = reported.begin(); it != reported.end(); ++it) {
            const std::string child = path + "/" + pointerToken(it.key());
            if (auto other = now.find(it.key()); other != now.end())
                diffValues(*it, *other, child, check);
            else
                recordDrift(child, jsonText(*it), "(absent)", check);
        }
        for (auto it = now.begin(); it != now.end(); ++it)
            if (!reported.contains(it.key()))
                recordDrift(path + "/" + pointerToken(it.key()), "(absent)", jsonText(*it), check);
    } else if (reported.is_array()) {
        const std::size_t common = std::min(reported.size(), now.size());
        for (std::size_t i = 0; i < common; ++i)
            diffValues(reported[i], now[i], path + "/" + std::to_string(i), check);
        for (std::size_t i = common; i < reported.size(); ++i)
            recordDrift(path + "/" + std::to_string(i), jsonText(reported[i]), "(absent)", check);
        for (std::size_t i = common; i < now.size(); ++i)
            recordDrift(path + "/" + std::to_string(i), "(absent)", jsonText(now[i]), check);
    } else if (reported != now) {
        recordDrift(path, jsonText(reported), jsonText(now), check);
    }
}

/// Diffs the keys of @p reported and @p now at @p path, except those in @p skip.
void diffKeys(const json& reported, const json& now, const std::string& path, std::initializer_list<const char*> skip,
              ReportCheck& check)
{
    const auto skipped = [&](const std::string& key) {
        return std::any_of(skip.begin(), skip.end(), [&](const char* k) { return key == k; });
    };
    json a = json::object(), b = json::object();
    for (auto it = reported.begin(); it != reported.end(); ++it)
        if (!skipped(it.key()))
            a[it.key()] = *it;
    for (auto it = now.begin(); it != now.end(); ++it)
        if (!skipped(it.key()))
            b[it.key()] = *it;
    diffValues(a, b, path, check);
}

/// Diffs the recomputed entries of one input list (@p now) with the report's (@p reported) by
/// their "id": when plans were left unchecked, the report's list also holds their entries.
void diffListById(const json& reported, const json& now, const std::string& path, ReportCheck& check)
{
    std::map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < reported.size(); ++i)
        if (reported[i].is_object() && reported[i].contains("id") && reported[i]["id"].is_string())
            at.emplace(reported[i]["id"].get<std::string>(), i);
    for (const json& entry : now) {
        const auto found = at.find(entry["id"].get<std::string>());
        if (found == at.end())
            recordDrift(path + "/-", "(absent)", jsonText(entry), check);
        else
            diffValues(reported[found->second], entry, path + "/" + std::to_string(found->second), check);
    }
}

/// Why plan @p i of the report is not recomputed without ReportCheckOptions::allowFetch (its
/// model is no profile: a path, a hub repo, an Ollama name, a URL), or empty.
std::string uncheckedReason(const json& request, std::size_t i, const ProfileSet& profiles, const ReportCheckOptions& options)
{
    const std::string model = request.at("model").get<std::string>();
    if (options.allowFetch || profiles.findModel(model))
        return {};
    return "plan " + std::to_string(i) + " (model '" + safeText(model) + "'): not re-checked: the model is no built-in or user "
        "profile, and re-checking it would open or fetch what the report names (a file, a folder, a hub cache, a URL); "
        "allow that with --allow-fetch";
}

tl::expected<ReportCheck, ReportError> checkImpl(const std::string& reportJson, const ProfileSet& profiles,
                                                 const ReportCheckOptions& options)
{
    auto parsed = reportdetail::parse(reportJson, "report");
    if (!parsed)
        return tl::unexpected(parsed.error());
    json& stored = *parsed;
    if (!stored.is_object())
        return tl::unexpected(ReportError{"report: expected a JSON object"});
    if (stored.contains("schema_version") && stored["schema_version"] != kReportSchemaVersion)
        return tl::unexpected(ReportError{"report schema_version " + jsonText(stored["schema_version"]) + ", this build reads "
                                          + std::to_string(kReportSchemaVersion)});
    // Counted before the schema walks them: a few hundred bytes of JSON a request, each one a plan
    // to recompute (review: 20,000 requests in 3.97 MB took 1.5 GB and 17-40 s).
    if (stored.contains("inputs") && stored["inputs"].is_object() && stored["inputs"].contains("requests")
        && stored["inputs"]["requests"].is_array())
        if (const std::string problem = planCountProblem(stored["inputs"]["requests"].size()); !problem.empty())
            return tl::unexpected(ReportError{problem});
    ReportCheck check;
    check.currentVersion = toolVersion();
    check.schemaErrors = reportdetail::schemaErrors(stored);
    if (!check.schemaErrors.empty())
        return check;
    check.reportedVersion = safeText(stored["tool"]["version"].get<std::string>());
    const json& requests = stored["inputs"]["requests"];
    const json& plans = stored["plans"];
    const json& cells = stored["what_fits"];
    if (plans.size() != requests.size() || cells.size() != requests.size())
        return tl::unexpected(ReportError{"report: " + std::to_string(requests.size()) + " requests, " + std::to_string(plans.size())
                                          + " plans and " + std::to_string(cells.size())
                                          + " what_fits cells: a report has one plan and one cell per request"});

    // Recomputed one plan at a time and compared at once: memory is the parsed report and one
    // plan, whatever the number of plans (the whole recomputed report was ~75 KB a plan).
    maskInPlace(stored);
    json header = reportHeader(stored.value("title", std::string()), stored["created_utc"].get<std::string>());
    maskInPlace(header);
    diffKeys(stored, header, "", {"inputs", "what_fits", "plans", "probes", "speed"}, check);
    InputLists lists;
    for (std::size_t i = 0; i < requests.size(); ++i) {
        if (std::string why = uncheckedReason(requests[i], i, profiles, options); !why.empty()) {
            check.unchecked.push_back(std::move(why));
            continue;
        }
        auto req = rebuildRequest(requests[i], profiles);
        if (!req)
            return tl::unexpected(ReportError{"cannot recompute plan " + std::to_string(i) + ": " + req.error()});
        auto plan = makePlan(*req);
        if (!plan)
            return tl::unexpected(ReportError{"cannot recompute plan " + std::to_string(i) + ": " + plan.error()});
        PlanEntry e = planEntry(*req, *plan, i);
        const std::string index = std::to_string(i);
        diffValues(requests[i], e.request, "/inputs/requests/" + index, check);
        diffValues(plans[i], e.plan, "/plans/" + index, check);
        diffValues(cells[i], e.cell, "/what_fits/" + index, check);
        lists.add(e);
        ++check.checkedPlans;
    }
    const json& inputs = stored["inputs"];
    diffKeys(inputs, json::object(), "/inputs", {"requests", "models", "cards", "engines", "weights_formats", "kv_dtypes"},
             check);
    for (std::size_t k = 0; k < kInputLists.size(); ++k) {
        const json now = lists.list(k);
        const std::string path = std::string("/inputs/") + kInputLists[k];
        if (check.unchecked.empty())
            diffValues(inputs[kInputLists[k]], now, path, check);
        else
            diffListById(inputs[kInputLists[k]], now, path, check);
    }
    check.recomputed = true;
    if (stored.contains("probes") && stored["probes"].is_object())
        check.probeVerdictProblems = recheckProbeVerdicts(stored["probes"].dump());
    return check;
}

} // namespace

namespace reportdetail {

tl::expected<json, ReportError> parse(const std::string& text, const char* what)
{
    if (text.size() > kMaxReportBytes)
        return tl::unexpected(ReportError{std::string(what) + ": " + std::to_string(text.size()) + " bytes, more than the "
                                          + std::to_string(kMaxReportBytes) + " a report may have"});
    if (auto at = importers::excessiveNestingAt(text, kMaxReportDepth))
        return tl::unexpected(ReportError{std::string(what) + ": nested deeper than " + std::to_string(kMaxReportDepth)
                                          + " levels (at byte " + std::to_string(*at) + ")"});
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        // "byte N" from nlohmann's message is the useful part for a corrupt file.
        std::string message = e.what();
        if (const auto at = message.find("syntax error"); at != std::string::npos)
            message = message.substr(at);
        return tl::unexpected(ReportError{std::string(what) + ": not valid JSON (at byte " + std::to_string(e.byte) + "): " + message});
    }
}

std::vector<std::string> schemaErrors(const json& doc)
{
    std::string problem;
    const valijson::Schema* schema = reportSchema(&problem);
    if (!schema)
        return {problem};
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter adapter(doc);
    if (validator.validate(*schema, adapter, &results))
        return {};
    std::vector<std::string> out;
    collectErrors(results, out);
    if (out.empty())
        out.push_back("/: does not match report.schema.json");
    return out;
}

std::string serialise(const json& doc) { return doc.dump(2) + "\n"; }

} // namespace reportdetail

const std::string& reportSchemaText()
{
    static const std::string text = kEmbeddedReportSchema;
    return text;
}

tl::expected<std::string, ReportError> buildReportJson(const ReportInput& input)
{
    try {
        auto doc = buildReport(input);
        if (!doc)
            return tl::unexpected(doc.error());
        return reportdetail::serialise(*doc);
    } catch (const std::exception& e) {
        return tl::unexpected(ReportError{std::string("cannot build the report: ") + e.what()});
    }
}

std::vector<std::string> validateReport(const std::string& reportJson)
{
    try {
        auto doc = reportdetail::parse(reportJson, "report");
        if (!doc)
            return {doc.error().message};
        return reportdetail::schemaErrors(*doc);
    } catch (const std::exception& e) {
        return {std::string("report: ") + e.what()};
    }
}

tl::expected<std::string, ReportError> maskVolatileFields(const std::string& reportJson)
{
    try {
        auto doc = reportdetail::parse(reportJson, "report");
        if (!doc)
            return tl::unexpected(doc.error());
        maskInPlace(*doc);
        return reportdetail::serialise(*doc);
    } catch (const std::exception& e) {
        return tl::unexpected(ReportError{std::string("report: ") + e.what()});
    }
}

tl::expected<ReportCheck, ReportError> checkReport(const std::string& reportJson, const ProfileSet& profiles,
                                                   const ReportCheckOptions& options)
{
    // Nothing thrown by nlohmann, valijson or the standard library crosses the core API (STYLE.md §6).
    try {
        return checkImpl(reportJson, profiles, options);
    } catch (const std::exception& e) {
        return tl::unexpected(ReportError{std::string("report: ") + e.what()});
    }
}

} // namespace headroom
