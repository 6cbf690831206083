#include "enginelogcase.h"

#include "headroom/core/engines/engine.h"
#include "headroom/core/importers/hfconfig.h"
#include "headroom/core/resolve.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace headroom::test {

namespace {

using nlohmann::json;

constexpr std::uintmax_t kMaxCaseBytes = 1u << 20; // a case is a few KiB; bound what we read

std::string fail(const std::string& file, const std::string& key, const std::string& what)
{
    return file + ": " + key + ": " + what;
}

// Reads a string member; absent -> default, wrong type -> error.
tl::expected<std::string, std::string> stringAt(const json& j, const char* key, const std::string& file,
                                                const std::string& fallback = {}, bool required = false)
{
    if (!j.contains(key)) {
        if (required)
            return tl::unexpected(fail(file, std::string("/") + key, "missing"));
        return fallback;
    }
    if (!j.at(key).is_string())
        return tl::unexpected(fail(file, std::string("/") + key, "expected a string, found " + std::string(j.at(key).type_name())));
    return j.at(key).get<std::string>();
}

tl::expected<PrintedFigure, std::string> parseFigure(const json& f, const std::string& file, std::size_t i)
{
    const std::string at = "/figures/" + std::to_string(i);
    if (!f.is_object())
        return tl::unexpected(fail(file, at, "expected an object"));
    PrintedFigure out;
    auto name = stringAt(f, "name", file, {}, true);
    auto unit = stringAt(f, "unit", file, {}, true);
    if (!name)
        return tl::unexpected(name.error());
    if (!unit)
        return tl::unexpected(unit.error());
    out.name = *name;
    out.unit = *unit;
    if (!f.contains("printed") || !f.at("printed").is_number())
        return tl::unexpected(fail(file, at + "/printed", "expected a number"));
    out.printed = f.at("printed").get<double>();
    if (!(out.printed > 0))
        return tl::unexpected(fail(file, at + "/printed", "expected a positive number"));
    out.headline = f.value("headline", false);
    out.tolerancePct = f.value("tolerance_pct", 2.0);
    out.expectMiss = f.value("expect", std::string("within")) == "miss";
    out.missTerm = f.value("miss_term", std::string());
    out.logLine = f.value("log", std::string());
    return out;
}

// Printed figures in bytes where the unit is a size, else as printed.
double toComparable(double value, const std::string& unit)
{
    if (unit == "GiB")
        return value * static_cast<double>(kGiB);
    if (unit == "MiB")
        return value * static_cast<double>(kMiB);
    return value;
}

double fromBytes(double bytes, const std::string& unit)
{
    if (unit == "GiB")
        return bytes / static_cast<double>(kGiB);
    if (unit == "MiB")
        return bytes / static_cast<double>(kMiB);
    return bytes;
}

// True when the engine unit declares @p key (its spelling or an alias; leading dashes ignored).
bool unitKnows(const std::vector<SettingSpec>& specs, std::string key)
{
    while (!key.empty() && key.front() == '-')
        key.erase(key.begin());
    for (const SettingSpec& spec : specs) {
        if (spec.key == key || std::find(spec.aliases.begin(), spec.aliases.end(), key) != spec.aliases.end())
            return true;
    }
    return false;
}

// The engine's own figure a case figure names (engines/bill.h EngineFigure names).
const EngineFigure* engineFigure(const PlanResult& p, const std::string& caseName)
{
    static const std::map<std::string, std::vector<std::string>> names = {
        {"num_gpu_blocks", {"num_gpu_blocks"}},
        {"kv_cache_tokens", {"gpu_kv_cache_tokens"}},
        {"max_concurrency", {"maximum_concurrency"}},
        {"max_total_num_tokens", {"max_total_num_tokens"}},
        {"max_batch_total_tokens", {"max_batch_total_tokens"}},
        {"max_kv_tokens", {"max_kv_tokens"}},
        {"kv_blocks", {"kv_blocks"}},
        {"kv_buffer_mib", {"kv_buffer", "kv_buffer_bytes", "memory_required_kv"}},
        {"compute_buffer_mib", {"compute_buffer", "compute_buffer_bytes", "memory_graph_full"}},
        {"kv_cells", {"kv_cells", "kv_size"}},
        {"rs_buffer_mib", {"rs_buffer_bytes"}},
        // A layer split (issue 11): llama.cpp's load_tensors / llama_kv_cache lines per device,
        // Ollama's "offload to cuda" line.
        {"offloaded_layers", {"offload_gpu_layers"}},
        {"gpu_model_buffer_mib", {"gpu_weights_bytes"}},
        {"host_model_buffer_mib", {"host_weights_bytes"}},
        {"gpu_kv_buffer_mib", {"gpu_kv_buffer_bytes"}},
        {"host_kv_buffer_mib", {"host_kv_buffer_bytes"}},
        {"layers_offload", {"layers_offload"}},
        {"memory_required_partial", {"memory_required_partial_bytes"}},
        {"memory_required_full", {"memory_required_full_bytes"}},
        {"memory_weights_total", {"memory_weights_total_bytes"}},
        {"memory_weights_repeating", {"memory_weights_repeating_bytes"}},
        {"memory_weights_nonrepeating", {"memory_weights_nonrepeating_bytes"}},
        {"projector_weights_mib", {"projector_weights_bytes"}},
        {"projector_graph_mib", {"projector_graph_bytes"}},
    };
    // A case figure without an alias names the engine figure itself ("offload_gpu_layers",
    // "gpu_weights_bytes", "memory_required_partial_bytes", ...: engines/bill.h EngineFigure names).
    const auto it = names.find(caseName);
    const std::vector<std::string> own = {caseName};
    for (const std::string& n : it == names.end() ? own : it->second)
        for (const EngineFigure& f : p.engineFigures)
            if (f.name == n)
                return &f;
    return nullptr;
}

// An engine figure in the case's unit.
double inCaseUnit(const EngineFigure& f, const std::string& unit)
{
    if (f.unit == "bytes")
        return fromBytes(f.value, unit);
    if (f.unit == "MiB" && unit == "GiB")
        return f.value / 1024.0;
    if (f.unit == "GiB" && unit == "MiB")
        return f.value * 1024.0;
    return f.value;
}

std::optional<double> predictedFigure(const PrintedFigure& f, const PlanResult& p)
{
    if (const EngineFigure* e = engineFigure(p, f.name))
        return inCaseUnit(*e, f.unit);
    const double block = static_cast<double>(p.paging.blockTokens);
    if (f.name == "num_gpu_blocks" || f.name == "kv_blocks")
        return static_cast<double>(p.kvBlocks);
    if (f.name == "kv_cache_tokens")
        return static_cast<double>(p.kvBlocks) * block;
    if (f.name == "max_concurrency")
        return p.maxConcurrency;
    if (f.name == "available_kv_cache_bytes")
        return fromBytes(static_cast<double>(p.kvBudgetBytes.value), f.unit);
    if (f.name == "max_total_num_tokens" || f.name == "max_batch_total_tokens" || f.name == "max_kv_tokens")
        return static_cast<double>(p.maxResidentTokens);
    if (f.name == "kv_cache_bytes")
        return fromBytes(static_cast<double>(p.maxResidentTokens) * static_cast<double>(p.kvBytesPerToken.value), f.unit);
    if (f.name == "kv_cells")
        return static_cast<double>(roundUp(std::max<std::uint64_t>(p.contextTokens, 1), p.paging.cellPadding));
    if (f.name == "kv_buffer_mib") {
        const std::uint64_t cells = roundUp(std::max<std::uint64_t>(p.contextTokens, 1), p.paging.cellPadding);
        return fromBytes(static_cast<double>(kvBytes(p.kv, std::max<std::uint64_t>(p.users, 1), cells, {}, p.ubatchTokens).value),
                         f.unit);
    }
    if (f.name == "compute_buffer_mib") {
        for (const OverheadItem& i : p.overheads)
            if (i.name == "activation_peak")
                return fromBytes(static_cast<double>(i.bytes.value), f.unit);
        return std::nullopt;
    }
    return std::nullopt;
}

std::string fixed(double v, int digits)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string showValue(double v, const std::string& unit)
{
    if (unit == "x")
        return fixed(v, 2) + "x";
    if (unit == "GiB" || unit == "MiB")
        return fixed(v, 2) + " " + unit;
    return formatThousands(static_cast<std::uint64_t>(std::llround(v)));
}

std::string showError(const FigureOutcome& f)
{
    if (!f.predicted)
        return "n/a";
    return (f.errorPct >= 0 ? "+" : "") + fixed(f.errorPct, 2) + " %";
}

std::string verdict(const FigureOutcome& f)
{
    if (!f.predicted)
        return "no figure";
    if (f.within)
        return f.expectMiss ? "within (marked miss)" : "within";
    return "miss";
}

} // namespace

tl::expected<EngineLogCase, std::string> loadEngineLogCase(const std::filesystem::path& path)
{
    const std::string file = path.string();
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec)
        return tl::unexpected(file + ": cannot read: " + ec.message());
    if (size > kMaxCaseBytes)
        return tl::unexpected(file + ": " + std::to_string(size) + " bytes, more than a case may have (1 MiB)");
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const json j = json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return tl::unexpected(file + ": not a JSON object");
    if (j.value("schema_version", 0) != 1)
        return tl::unexpected(fail(file, "/schema_version", "expected 1"));

    EngineLogCase c;
    c.file = file;
    for (auto [member, key] : {std::pair{&c.id, "id"}, std::pair{&c.sourceUrl, "source_url"},
                               std::pair{&c.engine, "engine"}, std::pair{&c.engineVersion, "engine_version"},
                               std::pair{&c.weights, "weights"}, std::pair{&c.kvDtype, "kv_dtype"}}) {
        auto v = stringAt(j, key, file, {}, true);
        if (!v)
            return tl::unexpected(v.error());
        *member = *v;
    }
    auto kvV = stringAt(j, "kv_dtype_v", file);
    if (!kvV)
        return tl::unexpected(kvV.error());
    c.kvDtypeV = *kvV;
    if (c.id != path.stem().string())
        return tl::unexpected(fail(file, "/id", "expected the file name '" + path.stem().string() + "', found '" + c.id + "'"));
    if (!j.contains("model") || !j.at("model").is_object())
        return tl::unexpected(fail(file, "/model", "expected an object with \"profile\" or \"config\""));
    c.model = j.at("model");
    if (!j.contains("card") || !j.at("card").is_object())
        return tl::unexpected(fail(file, "/card", "expected an object with \"profile\" or \"total_bytes\""));
    const json& card = j.at("card");
    if (card.contains("total_bytes")) {
        if (!card.at("total_bytes").is_number_unsigned())
            return tl::unexpected(fail(file, "/card/total_bytes", "expected a positive integer"));
        c.cardTotalBytes = card.at("total_bytes").get<std::uint64_t>();
    } else if (card.contains("profile") && card.at("profile").is_string()) {
        c.cardProfile = card.at("profile").get<std::string>();
    } else {
        return tl::unexpected(fail(file, "/card", "expected \"profile\" or \"total_bytes\""));
    }
    if (card.contains("free_bytes")) {
        const json& f = card.at("free_bytes");
        const auto positive = [](const json& v) { return v.is_number_unsigned() && v.get<std::uint64_t>() > 0; };
        if (f.is_array()) {
            if (f.empty() || f.size() > 16 || !std::all_of(f.begin(), f.end(), positive))
                return tl::unexpected(fail(file, "/card/free_bytes", "expected a positive integer or a list of 1 to 16 of them"));
            c.cardFreeBytes = f.front().get<std::uint64_t>();
            for (std::size_t k = 1; k < f.size(); ++k)
                c.moreGpuFreeBytes.push_back(f.at(k).get<std::uint64_t>());
        } else {
            if (!positive(f))
                return tl::unexpected(fail(file, "/card/free_bytes", "expected a positive integer or a list of them"));
            c.cardFreeBytes = f.get<std::uint64_t>();
        }
    }
    if (card.contains("library")) {
        if (!card.at("library").is_string() || card.at("library").get<std::string>() != "cpu")
            return tl::unexpected(fail(file, "/card/library", "expected \"cpu\""));
        c.cardIsHost = true;
    }
    const auto parallel = [&](const char* key) -> tl::expected<std::uint32_t, std::string> {
        const json v = j.value(key, json(1));
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > 1024)
            return tl::unexpected(fail(file, std::string("/") + key, "expected an integer in 1..1024"));
        return static_cast<std::uint32_t>(v.get<std::uint64_t>());
    };
    auto tp = parallel("tensor_parallel");
    auto pp = parallel("pipeline_parallel");
    if (!tp)
        return tl::unexpected(tp.error());
    if (!pp)
        return tl::unexpected(pp.error());
    c.tensorParallel = *tp;
    c.pipelineParallel = *pp;
    if (j.contains("settings")) {
        if (!j.at("settings").is_object())
            return tl::unexpected(fail(file, "/settings", "expected an object of strings"));
        for (const auto& [k, v] : j.at("settings").items()) {
            if (!v.is_string())
                return tl::unexpected(fail(file, "/settings/" + k, "expected a string"));
            c.settings[k] = v.get<std::string>();
        }
    }
    c.inputs = j.value("inputs", json::object());
    for (const json& t : j.value("tags", json::array()))
        if (t.is_string())
            c.tags.push_back(t.get<std::string>());
    if (!j.contains("log") || !j.at("log").is_array() || j.at("log").empty())
        return tl::unexpected(fail(file, "/log", "expected the verbatim log lines"));
    if (!j.contains("figures") || !j.at("figures").is_array() || j.at("figures").empty())
        return tl::unexpected(fail(file, "/figures", "expected at least one printed figure"));
    int headlines = 0;
    for (std::size_t i = 0; i < j.at("figures").size(); ++i) {
        auto f = parseFigure(j.at("figures").at(i), file, i);
        if (!f)
            return tl::unexpected(f.error());
        headlines += f->headline ? 1 : 0;
        c.figures.push_back(std::move(*f));
    }
    if (headlines != 1)
        return tl::unexpected(fail(file, "/figures", "expected exactly one headline figure, found " + std::to_string(headlines)));
    const std::string kind = j.value("headline_kind", std::string("capacity"));
    if (kind == "placement")
        c.headlineKind = HeadlineFigureKind::Placement;
    else if (kind != "capacity")
        return tl::unexpected(fail(file, "/headline_kind", "expected \"capacity\" or \"placement\", found \"" + kind + "\""));
    // A capacity case's headline is a capacity figure (issue 9 counts them; a weight size or a layer
    // count is not one), and a placement-only case has none: its source printed no capacity figure.
    for (const PrintedFigure& f : c.figures) {
        const bool capacity = isCapacityFigure(f.name);
        if (f.headline && c.headlineKind == HeadlineFigureKind::Capacity && !capacity)
            return tl::unexpected(fail(file, "/figures", "the headline " + f.name
                                                             + " is not a capacity figure; mark the case \"headline_kind\": \"placement\" when the source prints none"));
        if (c.headlineKind == HeadlineFigureKind::Placement && capacity)
            return tl::unexpected(fail(file, "/headline_kind", "a placement-only case has a capacity figure (" + f.name
                                                                   + "): make it the headline"));
    }
    return c;
}

tl::expected<std::vector<EngineLogCase>, std::string> loadEngineLogCases(const std::filesystem::path& dir)
{
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
        if (entry.is_regular_file() && entry.path().extension() == ".json")
            files.push_back(entry.path());
    if (ec)
        return tl::unexpected(dir.string() + ": cannot list: " + ec.message());
    std::sort(files.begin(), files.end());
    std::vector<EngineLogCase> out;
    for (const auto& f : files) {
        auto c = loadEngineLogCase(f);
        if (!c)
            return tl::unexpected(c.error());
        out.push_back(std::move(*c));
    }
    return out;
}

tl::expected<PlanRequest, std::string> planRequestFor(const EngineLogCase& c, const ProfileSet& profiles)
{
    PlanRequest r;
    if (c.model.contains("profile") && c.model.at("profile").is_string()) {
        auto m = resolveModel(c.model.at("profile").get<std::string>(), profiles);
        if (!m)
            return tl::unexpected(c.file + ": /model/profile: " + m.error());
        r.model = std::move(*m);
    } else if (c.model.contains("config") && c.model.at("config").is_object()) {
        auto cfg = parseHfConfig(c.model.at("config").dump(), c.file + " /model/config");
        if (!cfg)
            return tl::unexpected(toString(cfg.error()));
        r.model.id = c.model.value("name", c.id);
        r.model.architecture = cfg->architecture;
    } else {
        return tl::unexpected(c.file + ": /model: expected \"profile\" or \"config\"");
    }
    // The writer's tensor order of the case's GGUF file (modelprofile.h GgufTensorOrder), when the
    // case names it ("sorted", "convert", "ollama"): a fact of the file, said with its reason in the note.
    if (c.model.contains("gguf_tensor_order")) {
        const json& o = c.model.at("gguf_tensor_order");
        const auto order = o.is_string() ? ggufTensorOrderFromId(o.get<std::string>()) : std::nullopt;
        if (!order)
            return tl::unexpected(c.file + ": /model/gguf_tensor_order: expected \"sorted\", \"convert\" or \"ollama\", found "
                                  + o.dump());
        r.model.ggufTensorOrder = *order;
    }
    auto format = resolveFormat(c.weights, r.model);
    if (!format)
        return tl::unexpected(c.file + ": /weights: " + format.error());
    r.format = *format;
    auto kv = resolveKvDtype(c.kvDtype);
    if (!kv)
        return tl::unexpected(c.file + ": /kv_dtype: " + kv.error());
    r.kvDtype = *kv;
    if (c.cardProfile) {
        auto card = resolveCard(*c.cardProfile, profiles);
        if (!card)
            return tl::unexpected(c.file + ": /card/profile: " + card.error());
        r.card = *card;
    } else {
        r.card = anonymousCard(c.id, Bytes{*c.cardTotalBytes});
    }
    if (c.cardFreeBytes)
        r.freeBytes = Bytes{*c.cardFreeBytes};
    for (std::uint64_t f : c.moreGpuFreeBytes)
        r.moreGpus.push_back({r.card, Bytes{f}}); // the same card, its own free memory
    // The profile of the case's version; a version no profile covers runs the current profile's
    // constants with the unit's rules of that version.
    auto engine = resolveEngine(c.engine + "@" + c.engineVersion, profiles);
    if (!engine) {
        engine = resolveEngine(c.engine, profiles);
        if (!engine)
            return tl::unexpected(c.file + ": /engine: " + engine.error());
        engine->requestedVersion = c.engineVersion;
    }
    r.engine = *engine;
    if (c.cardIsHost)
        r.engine.fixedReserve = Bytes{}; // no MinimumMemory on the host (Ollama v0.9.0 discover/gpu.go GetGPUInfo: the cpu GpuInfo sets none)
    r.tensorParallel = c.tensorParallel;
    r.pipelineParallel = c.pipelineParallel;
    // Every setting the unit knows goes through the engine's own settings parser, as a user's
    // `--set KEY=VALUE` does (engines/settings.h parseEngineSettings, then the unit's configure,
    // which reconciles it with the case's tensor_parallel/pipeline_parallel and kv_dtype): a bad
    // value, an unknown alias or a disagreement is an error of the case. Keys the unit does not
    // declare (dtype, prefix caching, ...) do not size memory or are already in the case's
    // weights/kv_dtype; they are skipped.
    const std::vector<SettingSpec>& specs = engineFor(r.engine.kind).settings();
    for (const auto& [key, value] : c.settings)
        if (unitKnows(specs, key))
            r.engineSettings.push_back({key, value});
    if (auto parsed = parseEngineSettings(specs, r.engine.settingDefaults, r.engineSettings, r.engine.name); !parsed)
        return tl::unexpected(c.file + ": /settings: " + parsed.error());
    return r;
}

namespace {

void accumulate(AccuracySummary& s, const CaseOutcome& c)
{
    if (c.headlineKind != HeadlineFigureKind::Capacity)
        return;
    ++s.cases;
    for (const FigureOutcome& f : c.figures)
        if (f.headline) {
            ++s.headline;
            s.within += f.within ? 1 : 0;
        }
}

} // namespace

AccuracySummary AccuracyReport::total() const
{
    AccuracySummary s;
    for (const CaseOutcome& c : cases)
        accumulate(s, c);
    return s;
}

bool isPlacementFigure(const std::string& name)
{
    static const char* const layers[] = {"offloaded_layers", "layers_offload", "gpu_model_buffer_mib",
                                         "host_model_buffer_mib", "gpu_kv_buffer_mib", "host_kv_buffer_mib",
                                         "host_repack_bytes"};
    for (const char* n : layers)
        if (name == n)
            return true;
    // Ollama's per-GPU placement: layers.split and memory.required.allocations, one figure a GPU.
    if (name.rfind("layers_split_", 0) == 0 || name.rfind("memory_required_allocation_", 0) == 0)
        return true;
    // cuda0_kv_buffer_bytes, cuda1_compute_buffer_bytes, ...: one device of a split.
    return name.size() > 5 && name.rfind("cuda", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[4]));
}

bool isCapacityFigure(const std::string& name)
{
    // The figure names of the README's table that say what the engine can hold.
    static const char* const capacity[] = {"kv_cache_tokens",      "num_gpu_blocks",    "max_concurrency",
                                           "available_kv_cache_bytes", "max_total_num_tokens", "kv_cache_bytes",
                                           "max_batch_total_tokens", "max_kv_tokens",   "kv_blocks",
                                           "kv_buffer_mib",        "gpu_kv_buffer_mib", "host_kv_buffer_mib",
                                           "kv_cells",             "rs_buffer_mib",     "fit_ctx_size"};
    for (const char* n : capacity)
        if (name == n)
            return true;
    // cuda0_kv_buffer_bytes, ...: one device's KV buffer of a split.
    return name.size() > 5 && name.rfind("cuda", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[4]))
        && name.find("_kv_buffer") != std::string::npos;
}

int AccuracyReport::placementOnlyCases() const
{
    return static_cast<int>(std::count_if(cases.begin(), cases.end(), [](const CaseOutcome& c) {
        return c.headlineKind == HeadlineFigureKind::Placement;
    }));
}

bool AccuracyReport::isPlacementCase(const CaseOutcome& c)
{
    if (c.headlineKind == HeadlineFigureKind::Placement)
        return true;
    return std::any_of(c.figures.begin(), c.figures.end(), [](const FigureOutcome& f) { return isPlacementFigure(f.name); });
}

bool AccuracyReport::allWithin(const CaseOutcome& c)
{
    return c.error.empty()
        && std::all_of(c.figures.begin(), c.figures.end(), [](const FigureOutcome& f) { return f.predicted && f.within; });
}

PlacementSummary AccuracyReport::placement() const
{
    PlacementSummary s;
    for (const CaseOutcome& c : cases)
        if (isPlacementCase(c)) {
            ++s.cases;
            s.within += allWithin(c) ? 1 : 0;
        }
    return s;
}

std::map<std::string, AccuracySummary> AccuracyReport::byEngine() const
{
    std::map<std::string, AccuracySummary> out;
    for (const CaseOutcome& c : cases)
        accumulate(out[c.engine], c);
    return out;
}

AccuracyReport evaluateEngineLogCases(const std::vector<EngineLogCase>& cases, const ProfileSet& profiles)
{
    AccuracyReport report;
    for (const EngineLogCase& c : cases) {
        CaseOutcome out;
        out.id = c.id;
        out.engine = c.engine;
        out.engineVersion = c.engineVersion;
        out.headlineKind = c.headlineKind;
        std::optional<PlanResult> plan;
        if (auto r = planRequestFor(c, profiles); !r) {
            out.error = r.error();
        } else if (auto p = makePlan(*r); !p) {
            out.error = c.file + ": plan: " + p.error();
        } else {
            plan = std::move(*p);
        }
        for (const PrintedFigure& f : c.figures) {
            FigureOutcome o;
            o.name = f.name;
            o.unit = f.unit;
            o.printed = f.printed;
            o.headline = f.headline;
            o.tolerancePct = f.tolerancePct;
            o.expectMiss = f.expectMiss;
            o.missTerm = f.missTerm;
            if (plan)
                o.predicted = predictedFigure(f, *plan);
            if (o.predicted) {
                const double printed = toComparable(f.printed, f.unit);
                const double predicted = toComparable(*o.predicted, f.unit);
                o.errorPct = (predicted - printed) / printed * 100.0;
                o.within = std::fabs(o.errorPct) <= f.tolerancePct;
            }
            out.figures.push_back(std::move(o));
        }
        report.cases.push_back(std::move(out));
    }
    return report;
}

std::string formatAccuracyText(const AccuracyReport& report)
{
    std::ostringstream out;
    char line[512];
    std::snprintf(line, sizeof line, "%-46s %-22s %-26s %14s %14s %10s  %s\n", "case", "engine@version", "figure",
                  "printed", "predicted", "error", "verdict / term");
    out << line;
    for (const CaseOutcome& c : report.cases) {
        if (!c.error.empty())
            out << c.id << ": ERROR " << c.error << "\n";
        for (const FigureOutcome& f : c.figures) {
            const std::string term = f.within ? std::string() : (f.missTerm.empty() ? "(unexplained)" : f.missTerm);
            const char* mark = !f.headline ? "" : c.headlineKind == HeadlineFigureKind::Capacity ? " *" : " (p)";
            std::snprintf(line, sizeof line, "%-46s %-22s %-26s %14s %14s %10s  %s", c.id.c_str(),
                          (c.engine + "@" + c.engineVersion).c_str(), (f.name + mark).c_str(),
                          showValue(f.printed, f.unit).c_str(),
                          f.predicted ? showValue(*f.predicted, f.unit).c_str() : "-", showError(f).c_str(),
                          verdict(f).c_str());
            out << line << (term.empty() ? "" : ": ") << term << "\n";
        }
    }
    out << "\nheadline capacity figures (*) within tolerance, per engine (placement-only cases, (p), left out):\n";
    for (const auto& [engine, s] : report.byEngine()) {
        std::snprintf(line, sizeof line, "  %-14s %3d cases, %3d of %3d headline capacity figures within (%5.1f %%)\n",
                      engine.c_str(), s.cases, s.within, s.headline, s.rate() * 100);
        out << line;
    }
    const AccuracySummary all = report.total();
    std::snprintf(line, sizeof line, "  %-14s %3d cases, %3d of %3d headline capacity figures within (%5.1f %%)\n", "all",
                  all.cases, all.within, all.headline, all.rate() * 100);
    out << line;
    std::snprintf(line, sizeof line, "placement-only cases (no capacity figure in the source): %d\n",
                  report.placementOnlyCases());
    out << line;
    const PlacementSummary placed = report.placement();
    std::snprintf(line, sizeof line, "placement cases (every figure within): %d of %d (%.1f %%)\n", placed.within,
                  placed.cases, placed.rate() * 100);
    out << line;
    out << "headline capacity misses:";
    for (const CaseOutcome& c : report.cases)
        for (const FigureOutcome& f : c.figures)
            if (f.headline && !f.within && c.headlineKind == HeadlineFigureKind::Capacity)
                out << "\n  " << c.id << " (" << showError(f) << "): " << (f.missTerm.empty() ? "(unexplained)" : f.missTerm);
    out << "\n";
    return out.str();
}

std::string formatAccuracyMarkdown(const AccuracyReport& report)
{
    std::ostringstream out;
    out << "# Accuracy against real engines\n\n"
           "Generated by `scripts/accuracy.sh` from the engine-log corpus (`tests/data/engine-logs/`, one public "
           "start-up log a case; format and sources in its README). Every case is planned from the card total and "
           "the engine's settings alone (`tst_core \"[engine-logs]\"`), and every figure the engine printed is "
           "compared with the plan's. A headline figure is the case's capacity figure (vLLM KV cache tokens or GPU "
           "blocks, SGLang max_total_num_tokens, TGI max batch total tokens, TensorRT-LLM KV tokens or blocks, "
           "llama.cpp/Ollama KV buffer, llama.cpp recurrent state). A case whose source prints no capacity figure, "
           "only where the weights went, is placement-only (`headline_kind: placement`): it is left out of the "
           "summary and counted under placement. Do not edit by hand.\n\n";
    out << "## Summary (headline capacity figures within 2 %)\n\n| engine | cases | headline capacity figures within | rate |\n|---|---:|---:|---:|\n";
    char line[512];
    for (const auto& [engine, s] : report.byEngine()) {
        std::snprintf(line, sizeof line, "| %s | %d | %d of %d | %.1f %% |\n", engine.c_str(), s.cases, s.within,
                      s.headline, s.rate() * 100);
        out << line;
    }
    const AccuracySummary all = report.total();
    std::snprintf(line, sizeof line, "| **all** | %d | %d of %d | %.1f %% |\n\n", all.cases, all.within, all.headline,
                  all.rate() * 100);
    out << line;
    std::snprintf(line, sizeof line,
                  "%d of %d headline capacity figures within 2 %% (%.1f %%); %d placement-only cases (no capacity "
                  "figure in the source) are not counted here.\n\n",
                  all.within, all.headline, all.rate() * 100, report.placementOnlyCases());
    out << line;
    const PlacementSummary placed = report.placement();
    out << "## Placement (partial offload, per-device buffers)\n\n"
           "A placement case prints where things live: llama.cpp's `offloaded N/M layers`, a device's model, KV or "
           "compute buffer of a split or a CPU run, Ollama's `layers.offload`; every placement-only case is one. It is within when every figure of the "
           "case is within its tolerance (the placement and every per-device byte figure, from the settings alone).\n\n";
    std::snprintf(line, sizeof line, "**%d of %d placement cases within (%.1f %%).**\n\n| case | engine@version | within |\n|---|---|---|\n",
                  placed.within, placed.cases, placed.rate() * 100);
    out << line;
    for (const CaseOutcome& c : report.cases)
        if (AccuracyReport::isPlacementCase(c))
            out << "| `" << c.id << "`"
                << (c.headlineKind == HeadlineFigureKind::Placement ? " (placement-only)" : "") << " | " << c.engine
                << "@" << c.engineVersion << " | " << (AccuracyReport::allWithin(c) ? "yes" : "no") << " |\n";
    out << "\n";
    out << "## Headline capacity misses and the term that causes each\n\n";
    bool any = false;
    for (const CaseOutcome& c : report.cases)
        for (const FigureOutcome& f : c.figures)
            if (f.headline && !f.within && c.headlineKind == HeadlineFigureKind::Capacity) {
                out << "- `" << c.id << "` (" << c.engine << "@" << c.engineVersion << ", " << showError(f)
                    << "): " << (f.missTerm.empty() ? "(unexplained)" : f.missTerm) << "\n";
                any = true;
            }
    if (!any)
        out << "None.\n";
    out << "\n## Every figure\n\n| case | engine@version | figure | printed | predicted | error | verdict |\n"
           "|---|---|---|---:|---:|---:|---|\n";
    for (const CaseOutcome& c : report.cases) {
        if (!c.error.empty())
            out << "| `" << c.id << "` | " << c.engine << "@" << c.engineVersion << " | (input error) | | | | "
                << c.error << " |\n";
        for (const FigureOutcome& f : c.figures) {
            out << "| `" << c.id << "` | " << c.engine << "@" << c.engineVersion << " | " << f.name
                << (!f.headline ? ""
                    : c.headlineKind == HeadlineFigureKind::Capacity ? " **(headline)**"
                                                                    : " **(headline, placement-only)**")
                << " | " << showValue(f.printed, f.unit) << " | "
                << (f.predicted ? showValue(*f.predicted, f.unit) : "-") << " | " << showError(f) << " | "
                << verdict(f);
            if (!f.within && !f.missTerm.empty())
                out << ": " << f.missTerm;
            out << " |\n";
        }
    }
    return out.str();
}

} // namespace headroom::test
