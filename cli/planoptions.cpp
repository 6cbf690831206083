#include "planoptions.h"

#include "headroom/core/enginelog/calibration.h"

#include "headroom/core/resolve.h"
#include "headroom/core/speed/splitspeed.h"

namespace headroom::cli {

CLI::Validator sizeValidator()
{
    return CLI::Validator(
        [](std::string& s) -> std::string {
            const std::string problem = sizeProblem(s);
            return problem.empty() ? problem : problem + ", got '" + s + "'";
        },
        "SIZE");
}

void addPlanOptions(CLI::App* cmd, PlanOptions& o, bool multi)
{
    if (multi) {
        cmd->add_option("--model,-m", o.models, "Model profile ids or paths (config.json, model dir, .gguf); several allowed")
            ->expected(1, -1);
        cmd->add_option("--weights,-w", o.formats, "Weight formats (fp16, int4-g128, nf4-b64, q4_k, ...); several allowed")
            ->expected(1, -1);
        cmd->add_option("--card,-c", o.cards, "Card profile ids or sizes (rtx-4090, 8GiB), or cpu for the host alone (no GPU); several allowed")->expected(1, -1);
    } else {
        o.models.resize(1);
        o.formats.resize(1);
        o.cardsAreGpus = true;
        cmd->add_option("--model,-m", o.models[0],
                        std::string("Model profile id or path (config.json, model dir, .gguf); default ") + kDefaultModel);
        cmd->add_option("--weights,-w", o.formats[0], std::string("Weight format (default: the files' format, else ") + kDefaultFormat + ")");
        cmd->add_option("--card,-c", o.cards,
                        "Card profile id or size (default rtx-4090); several (-c rtx-3090 -c rtx-3060) are the GPUs one "
                        "model's layers are placed over, in device order (ollama, llama.cpp; --free/--used apply to each); cpu "
                        "for the host alone, no GPU (llama.cpp on the CPU: --host-ram, --host-bandwidth)")
            ->expected(1, -1);
    }
    cmd->add_option("--params", o.params, "Nominal parameter count replacing the derived one (7e9, 7B)")
        ->check(CLI::Validator([](std::string& s) -> std::string {
                    return parseCount(s) ? std::string() : "expected a parameter count such as 7e9 or 7B, got '" + s + "'";
                }, "COUNT"));
    cmd->add_option("--kv-dtype", o.kvDtype, "KV cache dtype: fp16, bf16, fp32, fp8, q8_0, q4_0, ...")->capture_default_str();
    auto* engine = cmd->add_option("--engine,-e", o.engine,
                                   "Engine policy: vllm, llama.cpp, sglang, tgi, tensorrt-llm, ollama; NAME@VERSION "
                                   "(vllm@0.6) applies that release's rules, the bare name the current release's");
    cmd->add_option("--set", o.settings,
                    "An engine setting as the engine spells it, KEY=VALUE (max-model-len=8192, gpu-memory-utilization=0.85, "
                    "ctx-size=16384); repeatable; `headroom-cli engines` lists each engine's keys")
        ->expected(1)
        ->take_all();
    auto* reserve = cmd->add_option("--reserve", o.reserve, "Flat reserve: usable = card total - SIZE")->check(sizeValidator());
    engine->excludes(reserve);
    cmd->add_option("--calibration", o.calibration,
                    "A calibration from an engine log (headroom-cli log -o FILE); default: the one saved for the card and engine "
                    "in the user profiles folder (calibrations/CARD.ENGINE.json), 'none' for none");
    cmd->add_option("--tp", o.tp, "Tensor-parallel size")->capture_default_str()->check(CLI::Range(1u, 1024u));
    cmd->add_option("--pp", o.pp, "Pipeline-parallel size")->capture_default_str()->check(CLI::Range(1u, 1024u));
    cmd->add_option("--context", o.context, "Context per user in tokens")->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 36));
    cmd->add_option("--users", o.users, "Concurrent users (sequences)")->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 24));
    cmd->add_option("--ubatch", o.ubatch, "Micro-batch of the prefill activation peak, tokens")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 24));
    auto* freeOpt = cmd->add_option("--free", o.free, "Device memory free now (default: the card total)")->check(sizeValidator());
    cmd->add_option("--used", o.used, "Device memory other processes hold now: free = card total - SIZE")
        ->check(sizeValidator())
        ->excludes(freeOpt);
    cmd->add_option("--offload", o.offload,
                    "GPU layers: auto (the engine's placement, default), N (llama.cpp -ngl: output layer included), none (every layer "
                    "on the CPU; the GPU keeps its CUDA context and compute buffer; --card cpu for no GPU at all)")
        ->check([](const std::string& s) {
            return s == "auto" || s == "none" || (!s.empty() && s.size() < 8 && s.find_first_not_of("0123456789") == std::string::npos)
                ? std::string()
                : "expected auto, none or a layer count, got '" + s + "'";
        });
    cmd->add_option("--host-bandwidth", o.hostBandwidth,
                    "Host memory bandwidth for the layers a split keeps there: a DIMM spec (ddr4-3200x2, ddr5-5600) or GB/s "
                    "(a measured read bandwidth); default: dual-channel DDR5-5600, 89.6 GB/s")
        ->check([](const std::string& v) {
            auto b = parseHostBandwidth(v);
            return b ? std::string() : b.error();
        });
    cmd->add_option("--host-ram", o.hostRam, "Host memory free for the engine: what a layer split keeps there must fit (default: not checked)")
        ->check(sizeValidator());
    auto* fa = cmd->add_flag("--flash-attention", o.flashOn, "Flash attention on (default: the engine's)");
    cmd->add_flag("--no-flash-attention", o.flashOff, "Flash attention off: full attention scores count")->excludes(fa);
    auto* draft = cmd->add_option("--draft", o.draft,
                                  "Draft model for speculative decoding (profile id or path): its weights and its KV cache for "
                                  "the same context and users join the bill (vLLM --speculative-config, llama.cpp -md)");
    cmd->add_option("--draft-weights", o.draftWeights,
                    "The draft model's weight format (default: its files' format, else the target's)")
        ->needs(draft);
    cmd->add_flag("--json", o.json, "One JSON document on stdout");
}

namespace {

/// The calibration of --calibration FILE, or the one saved for the request's card and engine.
tl::expected<PlanRequest, std::string> applyCalibration(const PlanOptions& o, const CalibrationFolder* calibrations, PlanRequest r)
{
    if (o.calibration == "none" || r.engine.kind == EngineKind::Flat)
        return r;
    if (o.calibration.empty())
        return calibrations ? applySavedCalibration(std::move(r), *calibrations) : r;
    auto c = readCalibration(o.calibration);
    if (!c)
        return tl::unexpected(c.error());
    if (c->engine != r.engine.id)
        return tl::unexpected(o.calibration + ": a calibration of " + c->engine + ", the plan's engine is " + r.engine.id);
    const bool sameBatch = !r.ubatchTokens || *r.ubatchTokens == c->ubatchTokens;
    return sameBatch ? withCalibration(std::move(r), *c) : r;
}

/// The memory free on @p card by --free SIZE or --used SIZE (total - SIZE); none without either.
tl::expected<std::optional<Bytes>, std::string> freeOn(const PlanOptions& o, const Card& card)
{
    if (o.free.empty() && o.used.empty())
        return std::optional<Bytes>{};
    const Bytes given = *parseSize(o.free.empty() ? o.used : o.free);
    if (given > card.totalBytes)
        return tl::unexpected((o.free.empty() ? "--used " + o.used : "--free " + o.free) + " (" + formatBytes(given)
                              + ") is more than the " + formatBytes(card.totalBytes) + " of card '" + card.id + "'");
    return std::optional<Bytes>{o.free.empty() ? saturatingSub(card.totalBytes, given) : given};
}

} // namespace

tl::expected<std::vector<PlanRequest>, std::string> buildRequests(const PlanOptions& o, const ProfileSet& profiles,
                                                                 const CalibrationFolder* calibrations)
{
    const std::vector<std::string> models = o.models.empty() || o.models[0].empty() ? std::vector<std::string>{kDefaultModel} : o.models;
    const std::vector<std::string> cards = o.cards.empty() || o.cards[0].empty() ? std::vector<std::string>{"rtx-4090"} : o.cards;
    const std::vector<std::string> formats = o.formats.empty() ? std::vector<std::string>{""} : o.formats;

    EnginePolicy engine;
    if (!o.reserve.empty()) {
        engine = flatReservePolicy(*parseSize(o.reserve));
    } else {
        auto e = resolveEngine(o.engine.empty() ? kDefaultEngine : o.engine, profiles);
        if (!e)
            return tl::unexpected(e.error());
        engine = *e;
    }
    auto kv = resolveKvDtype(o.kvDtype);
    if (!kv)
        return tl::unexpected(kv.error());
    std::vector<EngineSetting> settings;
    for (const std::string& arg : o.settings) {
        auto s = parseSettingArgument(arg);
        if (!s)
            return tl::unexpected(s.error());
        settings.push_back(std::move(*s));
    }
    if (!settings.empty() && engine.kind == EngineKind::Flat)
        return tl::unexpected(std::string("--set: the flat reserve (--reserve) has no engine settings; choose --engine"));

    std::optional<ModelProfile> draft;
    if (!o.draft.empty()) {
        auto d = resolveModel(o.draft, profiles);
        if (!d)
            return tl::unexpected("--draft: " + d.error());
        draft = std::move(*d);
    }

    std::vector<PlanRequest> out;
    for (const std::string& m : models) {
        auto model = resolveModel(m, profiles);
        if (!model)
            return tl::unexpected(model.error());
        for (const std::string& f : formats) {
            // One default in every face: the model's own files' format, else kDefaultWeightFormat.
            auto format = resolveFormat(f.empty() && !model->exactWeights ? std::string(kDefaultFormat) : f, *model);
            if (!format)
                return tl::unexpected(format.error());
            // The one-plan commands: the first card is CUDA0, the others the further GPUs.
            std::vector<GpuDevice> moreGpus;
            if (o.cardsAreGpus) {
                for (std::size_t k = 1; k < cards.size(); ++k) {
                    auto more = resolveCard(cards[k], profiles);
                    if (!more)
                        return tl::unexpected(more.error());
                    auto free = freeOn(o, *more);
                    if (!free)
                        return tl::unexpected(free.error());
                    moreGpus.push_back({*more, *free});
                }
            }
            for (const std::string& c : o.cardsAreGpus ? std::vector<std::string>{cards.front()} : cards) {
                auto card = resolveCard(c, profiles);
                if (!card)
                    return tl::unexpected(card.error());
                if (card->hostOnly && !o.hostBandwidth.empty())
                    card->bandwidthGBps = *parseHostBandwidth(o.hostBandwidth);
                if (card->hostOnly && !o.offload.empty() && o.offload != "none" && o.offload != "auto" && o.offload != "0")
                    return tl::unexpected("--offload " + o.offload + " with --card cpu: the host-only card has no GPU to "
                                          "offload layers to (give none, or a GPU card)");
                if (engine.kind == EngineKind::Flat && !card->hostOnly && engine.fixedReserve >= card->totalBytes)
                    return tl::unexpected("--reserve " + o.reserve + " (" + formatBytes(engine.fixedReserve)
                                          + ") leaves nothing of the " + formatBytes(card->totalBytes) + " card '" + card->id + "'");
                PlanRequest r;
                r.model = *model;
                r.format = *format;
                r.kvDtype = *kv;
                r.card = *card;
                r.engine = engine;
                r.tensorParallel = o.tp;
                r.pipelineParallel = o.pp;
                r.contextTokens = o.context;
                r.users = o.users;
                r.ubatchTokens = o.ubatch;
                if (o.flashOn || o.flashOff)
                    r.flashAttention = o.flashOn;
                if (!o.params.empty())
                    r.nominalParameters = parseCount(o.params);
                auto free = freeOn(o, *card);
                if (!free)
                    return tl::unexpected(free.error());
                r.freeBytes = *free;
                r.moreGpus = moreGpus;
                if (!o.hostRam.empty())
                    r.hostMemoryBytes = *parseSize(o.hostRam);
                if (!o.hostBandwidth.empty())
                    r.hostBandwidthGBps = *parseHostBandwidth(o.hostBandwidth);
                r.layerOffloadAsked = !o.offload.empty();
                if (o.offload == "none")
                    r.gpuLayers = 0;
                else if (!o.offload.empty() && o.offload != "auto")
                    r.gpuLayers = static_cast<std::uint32_t>(std::stoul(o.offload));
                r.engineSettings = settings;
                if (draft) {
                    auto df = resolveFormat(o.draftWeights.empty() && !draft->exactWeights ? format->id : o.draftWeights, *draft);
                    if (!df)
                        return tl::unexpected("--draft-weights: " + df.error());
                    r.draft = DraftRequest{*draft, *df};
                }
                // The engine's own settings may answer the question (max-model-len, -np): see verdict.h.
                r = withQuestionDefaults(std::move(r));
                auto calibrated = applyCalibration(o, calibrations, std::move(r));
                if (!calibrated)
                    return tl::unexpected(calibrated.error());
                out.push_back(std::move(*calibrated));
            }
        }
    }
    return out;
}

void applyMatrixDefaults(PlanOptions& o)
{
    if (o.models.empty())
        o.models = {kDefaultModel};
    if (o.cards.empty())
        o.cards = kDefaultCards;
}

tl::expected<std::vector<PlanResult>, std::string> runPlans(const std::vector<PlanRequest>& requests)
{
    std::vector<PlanResult> out;
    for (const PlanRequest& r : requests) {
        auto p = makePlan(r);
        if (!p)
            return tl::unexpected(p.error());
        out.push_back(std::move(*p));
    }
    return out;
}

} // namespace headroom::cli
