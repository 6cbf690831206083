#include "headroom/core/enginelog/logreport.h"

#include "headroom/core/enginepolicy.h"
#include "headroom/core/engines/engine.h"
#include "headroom/core/resolve.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace headroom {

namespace {

std::string gib(double bytes) { return formatFixed(bytes / 1073741824.0, 2) + " GiB"; }

std::string fixed2(double v) { return formatFixed(v, 2); }

std::string signedDiff(const ComponentComparison& c)
{
    if (!c.predicted || !c.measured)
        return "";
    const double d = static_cast<double>(c.predicted->value) - static_cast<double>(c.measured->value);
    return formatFixed(d / 1073741824.0, 2, true) + " GiB";
}

std::string figureLabel(const std::string& name)
{
    if (name == "kv_cache_tokens")
        return "GPU KV cache size (tokens)";
    if (name == "num_gpu_blocks")
        return "# GPU blocks";
    if (name == "max_batch_total_tokens")
        return "max batch total tokens";
    if (name == "max_kv_tokens")
        return "tokens in paged KV cache";
    if (name == "kv_blocks")
        return "KV cache blocks";
    if (name == "available_kv_cache")
        return "available KV cache (bytes)";
    return name; // max_total_num_tokens: SGLang's own word
}

std::uint64_t kvTokens(const PlanResult& p)
{
    return p.kvBlocks ? p.kvBlocks * p.paging.blockTokens : p.maxResidentTokens;
}

/// The profile whose id is the longest prefix, at a '-' boundary, of the repo name the log
/// printed ("meta-llama/Llama-3.1-8B-Instruct" -> llama-3.1-8b; "Meta-" dropped): instruct and
/// chat variants share the base model's architecture, hence its memory.
const ModelProfile* profileNamedLike(const std::string& logModel, const ProfileSet& profiles)
{
    std::string name = logModel.substr(logModel.find_last_of("/\\") == std::string::npos ? 0 : logModel.find_last_of("/\\") + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name.starts_with("meta-"))
        name.erase(0, 5);
    const ModelProfile* best = nullptr;
    for (const ModelProfile& m : profiles.models) {
        const bool matches = name == m.id || (name.starts_with(m.id) && name[m.id.size()] == '-');
        if (matches && (!best || m.id.size() > best->id.size()))
            best = &m;
    }
    return best;
}

/// "0.19.1", "v0.5.7": a dotted release number (not a commit, not a llama.cpp build "b2400").
bool isRelease(const std::string& v)
{
    const std::string_view d = v.starts_with('v') ? std::string_view(v).substr(1) : std::string_view(v);
    return !d.empty() && std::isdigit(static_cast<unsigned char>(d.front())) &&
           d.find_first_not_of("0123456789.") == std::string_view::npos;
}

/// "3, 7, 12-15": line numbers with runs joined.
std::string lineRanges(const std::vector<std::size_t>& lines)
{
    std::string out;
    for (std::size_t i = 0; i < lines.size();) {
        std::size_t j = i;
        while (j + 1 < lines.size() && lines[j + 1] == lines[j] + 1)
            ++j;
        out += (out.empty() ? "" : ", ") + std::to_string(lines[i]) + (j > i ? "-" + std::to_string(lines[j]) : std::string());
        i = j + 1;
    }
    return out;
}

std::vector<std::string> headerLinesOf(const EngineLog& log)
{
    std::vector<std::string> out{log.summary()};
    if (!log.understoodLines.empty())
        out.push_back("Lines understood: " + lineRanges(log.understoodLines));
    if (log.cardTotalBytes)
        out.push_back("Card      " + formatBytes(*log.cardTotalBytes) + " total" +
                      (log.cardFreeBytes ? ", " + formatBytes(*log.cardFreeBytes) + " free at start" : std::string()));
    if (!log.settings.empty()) {
        std::string s = "Settings ";
        for (const auto& [k, v] : log.settings)
            s += ' ' + k + '=' + v;
        out.push_back(s);
    }
    return out;
}

std::string kvFigureLineOf(const KvFigureComparison& f)
{
    const double err = f.printed ? (static_cast<double>(f.predicted) - static_cast<double>(f.printed)) / static_cast<double>(f.printed) * 100.0 : 0;
    return figureLabel(f.name) + ": the log " + formatThousands(f.printed) + ", the plan " + formatThousands(f.predicted) + " ("
        + formatFixed(err, 1, true) + " %" +
           "), calibrated " + formatThousands(f.calibrated) + (f.calibrated == f.printed ? " (exact)" : "");
}

std::vector<std::string> calibrationLinesOf(const LogCalibration& cal)
{
    std::vector<std::string> out{"Calibration " + cal.name()};
    if (cal.measured.activationPeakBytes)
        out.push_back("activation peak " + formatBytes(*cal.measured.activationPeakBytes) + " at a micro-batch of " +
                      formatThousands(cal.ubatchTokens) + " tokens");
    if (cal.measured.runtimeBytes)
        out.push_back("runtime " + formatBytes(*cal.measured.runtimeBytes));
    return out;
}

LogWhatFits whatFitsOf(const PlanRequest& request, const LogComparison& cmp, const LogReportOptions& o)
{
    LogWhatFits w;
    const LogCalibration& cal = cmp.calibration;
    w.heading = cmp.saveRefusal.empty() ? "Calibrated what fits on this card"
                                        : "What fits on this card (not calibrated: the plan's own estimates)";
    w.users = o.users.value_or(16);
    // The context asked: given, else 4 x the log's own (a longer context on the same card), never
    // past the model's trained context; a log that prints no context ran at the engine's default
    // (the plan's context: the trained context for vLLM, SGLang, TensorRT-LLM), and that is asked.
    const std::uint64_t trained = request.model.architecture ? request.model.architecture->contextLength : 0;
    const bool logContext = request.contextTokens.has_value() || givesContextSetting(request);
    const std::uint64_t own = cmp.calibrated.contextTokens;
    std::string contextWhy;
    if (o.contextTokens) {
        w.contextTokens = *o.contextTokens;
    } else if (logContext) {
        w.contextTokens = std::max<std::uint64_t>(own * 4, 4096);
        if (trained > 0 && w.contextTokens > trained) {
            w.contextTokens = std::max(trained, own);
            contextWhy = " (4 x the log's " + formatThousands(own) + ", capped at the model's trained context)";
        } else {
            contextWhy = " (4 x the log's " + formatThousands(own) + ")";
        }
    } else {
        w.contextTokens = own > 0 ? own : std::max<std::uint64_t>(trained, 4096);
        contextWhy = w.contextTokens == trained
                         ? " (the log prints no context: the engine's default, the model's trained context)"
                         : " (the log prints no context: the engine's default)";
    }
    w.fractionFlag = memoryFractionFlag(request.engine.kind);
    w.leaveFreeBytes = o.leaveFreeBytes;
    const std::string ctx = formatThousands(w.contextTokens);
    if (auto at = calibratedAt(request, cal, w.contextTokens, w.users)) {
        w.plan = *at;
        std::string line = "at context " + ctx + contextWhy + " and " + std::to_string(w.users) + " users: ";
        if (at->kvBlocks > 0)
            line += formatThousands(at->kvBlocks) + " blocks (" + formatThousands(at->kvBlocks * at->paging.blockTokens) + " tokens), ";
        else
            line += formatThousands(at->maxResidentTokens) + " tokens, ";
        if (at->maxUsers)
            line += "room for " + formatThousands(*at->maxUsers) + (*at->maxUsers == 1 ? " user" : " users") + " of " + ctx + " tokens: ";
        line += at->verdict.reason;
        w.lines.push_back(line);
    } else {
        w.planError = at.error();
        w.lines.push_back(at.error());
    }
    if (w.fractionFlag.empty())
        return w;
    if (auto f = largestFractionLeaving(request, cal, w.leaveFreeBytes)) {
        w.largestFraction = f->fraction;
        w.heldBeyondFraction = f->held;
        std::string line = "the largest " + w.fractionFlag + " that leaves " + formatBytes(w.leaveFreeBytes) + " free: ";
        if (f->fraction <= 0) {
            line += "none (what the engine holds beside its fraction leaves less)";
        } else {
            line += fixed2(f->fraction);
            const PlanRequest r = atMemoryFraction(request, f->fraction);
            if (auto p = makeCalibratedPlan(r, cal)) {
                w.tokensAtLargestFraction = kvTokens(*p);
                line += " (" + formatThousands(*w.tokensAtLargestFraction) + " tokens of KV)";
            }
        }
        if (!f->held.empty()) {
            line += "; besides " + (f->fraction > 0 ? fixed2(f->fraction) : std::string("the fraction")) + " x " +
                    formatBytes(f->baseBytes) + " the engine holds";
            for (std::size_t i = 0; i < f->held.size(); ++i)
                line += std::string(i ? "," : "") + " " + f->held[i].name + " " + formatBytes(f->held[i].bytes);
        }
        w.lines.push_back(line);
    }
    if (auto s = settingForUsers(request, cal, w.users, w.contextTokens)) {
        w.forUsers = *s;
        std::string line = "to hold " + std::to_string(w.users) + " users of " + ctx + " tokens: a KV pool of " +
                           formatThousands(s->kvCacheBytes.value) + " bytes (" + formatBytes(s->kvCacheBytes) + ")";
        // --kv-cache-memory (EngineArgs kv_cache_memory_bytes) is a V1 flag, printed by v0.19.0's
        // gpu_worker.py in the corpus logs; the V0 engine (the rules before 0.8) never had it, so
        // it is named only from v0.11 on, where it is certainly present.
        if (request.engine.kind == EngineKind::Vllm && compareVersions(appliedEngineVersion(request.engine), "0.11.0") >= 0)
            line += ", --kv-cache-memory " + std::to_string(s->kvCacheBytes.value);
        line += s->possible ? ", or " + w.fractionFlag + ' ' + fixed2(s->memoryFraction)
                            : ": more than this card holds at any " + w.fractionFlag;
        w.lines.push_back(line);
    }
    return w;
}

} // namespace

std::string memoryFractionFlag(EngineKind kind)
{
    switch (kind) {
    case EngineKind::Vllm: return "--gpu-memory-utilization";
    case EngineKind::SgLang: return "--mem-fraction-static";
    case EngineKind::Tgi: return "--cuda-memory-fraction";
    case EngineKind::TensorRtLlm: return "free_gpu_memory_fraction";
    default: return "";
    }
}

tl::expected<PlanRequest, std::string> logPlanRequest(const EngineLog& log, const LogReportOptions& o, const ProfileSet& profiles,
                                                      std::vector<std::string>* notes, std::vector<std::string>* fromLog)
{
    PlanRequest r;
    auto engine = resolveEngine(engineProfileId(log), profiles);
    if (!engine)
        return tl::unexpected(log.engine.empty() ? "the log is from no engine headroom knows: " + log.summary() : engine.error());
    // The rules of the version the log printed, when a profile covers it (vllm@0.6: the V0
    // profile); a version newer than the rules headroom read is compared with the newest, saying so.
    if (!log.version.empty()) {
        auto versioned = resolveEngine(engineProfileId(log) + "@" + log.version, profiles);
        if (versioned)
            engine = std::move(versioned);
        const bool newer = versioned && isRelease(log.version) && isRelease(engine->version) &&
                           compareVersions(log.version, engine->version) > 0;
        if (notes && (!versioned || newer))
            notes->push_back("This log is from " + engineDisplayName(log.engine) + " " + log.version + ", " +
                             (versioned ? "newer than the rules headroom read (" + engine->name + " " + engine->version + ")"
                                        : "a version headroom has no rules for (" + versioned.error() + ")") +
                             ": compared with the rules of " + engine->name + " " + engine->version +
                             "; the lines listed above were understood.");
    } else if (!o.engineVersion.empty()) {
        auto given = resolveEngine(engineProfileId(log) + "@" + o.engineVersion, profiles);
        if (!given)
            return tl::unexpected("--engine-version " + o.engineVersion + ": " + given.error());
        engine = std::move(given);
    } else if (!log.impliedVersion.empty()) {
        // No version printed, but the lines say which release's rules apply (TensorRT-LLM's C++
        // runtime lines are 0.x's; "Using N tokens in paged KV cache" is 0.8's or older).
        if (auto implied = resolveEngine(engineProfileId(log) + "@" + log.impliedVersion, profiles)) {
            engine = std::move(implied);
            if (notes)
                notes->push_back("No version printed: the lines are " + log.generation + "'s, so the plan applies the rules of " +
                                 engine->name + " at " + log.impliedVersion + ".");
        }
    }
    r.engine = *engine;
    if (o.modelProfile) {
        r.model = *o.modelProfile;
    } else {
        std::string modelArg = o.model;
        if (modelArg.empty()) {
            // vLLM's "model", SGLang's "model_path" (server_args=ServerArgs(model_path='...'), --model-path).
            if (auto it = log.settings.find("model"); it != log.settings.end())
                modelArg = it->second;
            else if (auto path = log.settings.find("model-path"); path != log.settings.end())
                modelArg = path->second;
            else
                return tl::unexpected(std::string("the log names no model: give it with -m (a profile id, a path, or ORG/NAME)"));
        }
        auto model = resolveModel(modelArg, profiles);
        const ModelProfile* like = !model && o.model.empty() ? profileNamedLike(modelArg, profiles) : nullptr;
        if (!model && !like)
            return tl::unexpected(model.error() + (o.model.empty() ? " (the model the log names; give another with -m)" : ""));
        r.model = model ? *model : *like;
        if (like && notes)
            notes->push_back("The log names " + modelArg + ", which cannot be read here (" + model.error() +
                             "); planned with the profile " + like->id + ", its base model (the same architecture); give another with -m.");
    }
    // The weights the log implies when none are given: vLLM's on-the-fly quantization=fp8, or an
    // FP8 checkpoint named so ("RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic") that is planned with
    // its base model's profile (the 16-bit profile would price it at bf16).
    std::string weights = o.weights;
    if (weights.empty() && !o.modelProfile) {
        std::string named;
        for (const char* key : {"model", "model-path"})
            if (auto it = log.settings.find(key); it != log.settings.end() && named.empty())
                named = it->second;
        std::transform(named.begin(), named.end(), named.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        const auto q = log.settings.find("quantization");
        const bool fp8Flag = q != log.settings.end() && q->second == "fp8";
        const bool fp8Name = named.find("fp8") != std::string::npos && !r.model.exactWeights;
        if (fp8Flag || fp8Name) {
            weights = "fp8";
            if (notes)
                notes->push_back(std::string("Weights fp8: ") +
                                 (fp8Flag ? "the log runs with quantization=fp8" : "the model the log names is an FP8 checkpoint") +
                                 "; give others with -w.");
        }
    }
    auto format = resolveFormat(weights, r.model);
    if (!format)
        return tl::unexpected(format.error());
    r.format = *format;
    std::string kv = o.kvDtype;
    if (kv.empty())
        for (const char* key : {"kv-cache-dtype", "kv_cache_dtype"})
            if (auto it = log.settings.find(key); it != log.settings.end() && it->second.starts_with("fp8"))
                kv = "fp8";
    // kv_cache_dtype "auto" is the model's dtype (vLLM CacheConfig, SGLang ServerArgs): the dtype
    // the log printed (vLLM's config line "dtype=torch.bfloat16", SGLang's "Load weight end. ...
    // dtype=torch.bfloat16"), else the weights' 16-bit format.
    if (kv.empty())
        if (auto it = log.settings.find("dtype"); it != log.settings.end()) {
            const std::string& d = it->second;
            if (d == "bfloat16" || d == "torch.bfloat16" || d == "bf16")
                kv = "bf16";
            else if (d == "float16" || d == "torch.float16" || d == "half" || d == "fp16")
                kv = "fp16";
        }
    if (kv.empty() && (r.format.id == "bf16" || r.format.id == "fp16"))
        kv = r.format.id;
    auto kvDtype = resolveKvDtype(kv);
    if (!kvDtype)
        return tl::unexpected(kvDtype.error());
    r.kvDtype = *kvDtype;
    if (o.cardProfile) {
        r.card = *o.cardProfile;
    } else if (!o.card.empty()) {
        auto card = resolveCard(o.card, profiles);
        if (!card)
            return tl::unexpected(card.error());
        r.card = *card;
    } else if (log.cardTotalBytes) {
        r.card = anonymousCard(formatBytes(*log.cardTotalBytes), *log.cardTotalBytes);
    } else {
        return tl::unexpected(std::string("the log prints no card total: give the card with -c (a profile id or a size)"));
    }
    // Given settings first, so that the log's reading of the same setting yields to them.
    r.engineSettings = o.settings;
    std::vector<std::string> applied = applyLogSettings(log, r);
    if (o.tensorParallel)
        r.tensorParallel = *o.tensorParallel;
    if (o.pipelineParallel)
        r.pipelineParallel = *o.pipelineParallel;
    if (fromLog)
        *fromLog = std::move(applied);
    return r;
}

tl::expected<LogReport, LogReportError> analyzeEngineLog(std::string_view text, const std::string& logName,
                                                         const LogReportOptions& options, const ProfileSet& profiles)
{
    using Stage = LogReportError::Stage;
    auto log = parseEngineLog(text);
    if (!log)
        return tl::unexpected(LogReportError{Stage::Read, log.error().message, {}, {}, {}, {}});
    if (log->engine.empty())
        return tl::unexpected(LogReportError{
            Stage::Engine, log->summary() + " Expected the start-up lines of vLLM, SGLang, TGI, TensorRT-LLM, llama.cpp or Ollama.",
            log->summary(), log->warnings, {}, {}});
    std::vector<std::string> requestNotes;
    std::vector<std::string> fromLog;
    auto request = logPlanRequest(*log, options, profiles, &requestNotes, &fromLog);
    // What the log says by itself, shown even when no plan can be made for it.
    std::vector<LogTermRow> terms;
    for (const LogTerm& t : log->terms)
        terms.push_back({t.name, t.device.empty() ? t.rank : t.device, t.printed, std::to_string(t.line)});
    const auto parsedButNotCompared = [&](Stage stage, std::string message) {
        return tl::unexpected(
            LogReportError{stage, std::move(message), log->summary(), log->warnings, headerLinesOf(*log), terms});
    };
    if (!request)
        return parsedButNotCompared(Stage::Request, request.error());
    auto cmp = compareWithLog(*log, *request, logName, std::string(text));
    if (!cmp)
        return parsedButNotCompared(Stage::Compare, cmp.error());

    LogReport report;
    report.headerLines = headerLinesOf(*log);
    report.settingsFromLog = fromLog;
    if (!options.engineVersion.empty() && log->version.empty())
        report.settingsGiven.push_back("engine version " + options.engineVersion);
    if (options.tensorParallel)
        report.settingsGiven.push_back("tensor parallel " + std::to_string(*options.tensorParallel));
    if (options.pipelineParallel)
        report.settingsGiven.push_back("pipeline parallel " + std::to_string(*options.pipelineParallel));
    for (const EngineSetting& s : options.settings)
        report.settingsGiven.push_back(s.key + "=" + s.value);
    report.settingsAssumed = assumedSettings(cmp->predicted, *request, fromLog);
    // The TP size a log does not print is the figure most often wrong: say how to give it.
    for (std::string& a : report.settingsAssumed)
        for (const char* tp : {"tensor-parallel-size=", "tp-size=", "tp_size=", "num-shard="})
            if (a.starts_with(tp) && !options.tensorParallel)
                a += " (the log prints no TP size: set it if the engine ran on more GPUs)";
    const auto joined = [](const std::vector<std::string>& v) {
        std::string out;
        for (const std::string& x : v)
            out += (out.empty() ? "" : ", ") + x;
        return out;
    };
    report.headerLines.push_back("Read from the log: " + (fromLog.empty() ? std::string("no setting") : joined(fromLog)));
    if (!report.settingsGiven.empty())
        report.headerLines.push_back("Given: " + joined(report.settingsGiven));
    if (!report.settingsAssumed.empty())
        report.headerLines.push_back("Assumed (neither printed nor given; the engine's defaults): " + joined(report.settingsAssumed));
    report.headerLines.insert(report.headerLines.end(), requestNotes.begin(), requestNotes.end());
    for (const std::string& w : log->warnings)
        if (w.starts_with("the log ends mid-line"))
            report.headerLines.push_back("Warning: " + w + ".");
    report.terms = terms;
    // The KV dtype the plan ran: an engine's own cache types (llama.cpp -ctk/-ctv the log printed) win over the request's.
    const std::string& kvRan = cmp->predicted.kvDtypeId.empty() ? request->kvDtype.id : cmp->predicted.kvDtypeId;
    report.comparisonTitle = "the plan for these settings: " + request->model.name + ", " + request->format.id + " weights, " +
                             kvRan + " KV, " + request->engine.name;
    for (const ComponentComparison& c : cmp->components)
        report.components.push_back({c.component, c.predicted ? gib(static_cast<double>(c.predicted->value)) : "-",
                                     c.measured ? gib(static_cast<double>(c.measured->value)) : "-", signedDiff(c), c.how});
    if (cmp->kvFigure)
        report.kvFigureLine = kvFigureLineOf(*cmp->kvFigure);
    report.calibrationLines = calibrationLinesOf(cmp->calibration);
    report.whatFits = whatFitsOf(*request, *cmp, options);
    report.log = std::move(*log);
    report.request = std::move(*request);
    report.comparison = std::move(*cmp);
    return report;
}

} // namespace headroom
