#include "headroom/core/planjson.h"

#include "planjson.h"

#include "headroom/core/splitbill.h"

namespace headroom {

namespace {

nlohmann::json items(const std::vector<OverheadItem>& list)
{
    nlohmann::json out = nlohmann::json::array();
    for (const OverheadItem& i : list)
        out.push_back({{"name", i.name}, {"bytes", i.bytes.value}, {"note", i.note}});
    return out;
}

nlohmann::json splitItems(const std::vector<SplitBillItem>& list)
{
    nlohmann::json out = nlohmann::json::array();
    for (const SplitBillItem& i : list)
        out.push_back({{"name", i.name}, {"label", i.label}, {"bytes", i.bytes.value}, {"note", i.note}});
    return out;
}

const char* headlineKindId(HeadlineKind kind)
{
    switch (kind) {
    case HeadlineKind::MaxContextPerUser: return "max_context_per_user";
    case HeadlineKind::MaxUsersAtContext: return "max_users_at_context";
    case HeadlineKind::MaxResidentTokens: return "max_resident_tokens";
    }
    return "max_resident_tokens";
}

} // namespace

nlohmann::json verdictJsonObject(const Verdict& v)
{
    const Headline& h = v.headline;
    return {{"state", fitStateId(v.state)},
            {"limit", fitLimitId(v.limit)},
            {"reason", v.reason},
            {"detail", v.detail},
            {"cell", verdictCellText(v)},
            {"headline",
             {{"kind", headlineKindId(h.kind)},
              {"caption", headlineCaption(h)},
              {"value", h.value},
              {"unit", headlineUnit(h.kind)},
              {"users", h.users},
              {"context_tokens", h.contextTokens}}}};
}

nlohmann::json planJsonObject(const PlanResult& p)
{
    nlohmann::json j;
    j["model"] = p.modelId;
    j["weights_format"] = p.formatId;
    j["kv_dtype"] = p.kvDtypeId;
    j["card"] = p.cardId;
    j["engine"] = p.engineId;
    j["engine_version"] = p.engineVersion;
    nlohmann::json settings = nlohmann::json::object();
    for (const SettingValue& v : p.engineSettings) {
        switch (v.type) {
        case SettingType::Integer:
        case SettingType::Size: settings[v.key] = v.integer; break;
        case SettingType::Number: settings[v.key] = v.number; break;
        case SettingType::Boolean: settings[v.key] = v.integer != 0; break;
        case SettingType::Choice:
        case SettingType::List:
        case SettingType::Text: settings[v.key] = v.text; break;
        }
    }
    j["engine_settings"] = settings;
    nlohmann::json given = nlohmann::json::array();
    for (const SettingValue& v : p.engineSettings)
        if (v.given)
            given.push_back(v.key);
    j["engine_settings_given"] = given;
    nlohmann::json figures = nlohmann::json::array();
    for (const EngineFigure& f : p.engineFigures)
        figures.push_back({{"name", f.name}, {"value", f.value}, {"unit", f.unit}, {"printed", f.printed}, {"source", f.source}});
    j["engine_figures"] = figures;
    j["tensor_parallel"] = p.tensorParallel;
    j["pipeline_parallel"] = p.pipelineParallel;
    j["parameters"] = p.parameters;
    j["parameters_source"] = p.parametersSource;
    j["weights_bytes"] = p.weightsBytes.value;
    j["weights_exact"] = p.weightsExact;
    nlohmann::json byRole = nlohmann::json::object();
    for (const auto& [role, bytes] : p.weightsByRole)
        byRole[role] = bytes.value;
    j["weights_by_part_bytes"] = byRole;
    j["kv_bytes_per_token"] = p.kvBytesPerToken.value;
    if (!p.draftModelId.empty()) {
        j["draft_model"] = p.draftModelId;
        j["draft_weights_format"] = p.draftFormatId;
        j["draft_weights_bytes"] = p.draftWeightsBytes.value;
        j["draft_kv_bytes_per_token"] = p.draftKvBytesPerToken.value;
    }
    j["kv_full_bytes_per_token"] = p.kv.fullBytesPerToken.value;
    j["kv_sliding_bytes_per_token"] = p.kv.slidingBytesPerToken.value;
    j["kv_window_tokens"] = p.kv.windowTokens;
    j["kv_block_tokens"] = p.paging.blockTokens;
    j["kv_cell_padding_tokens"] = p.paging.cellPadding;
    j["ubatch_tokens"] = p.ubatchTokens;
    j["flash_attention"] = p.flashAttention;
    j["card_total_bytes"] = p.cardTotalBytes.value;
    j["usable_bytes"] = p.usableBytes.value;
    j["overheads"] = items(p.overheads);
    j["reserved"] = items(p.reserved);
    j["kv_budget_bytes"] = p.kvBudgetBytes.value;
    j["max_resident_tokens"] = p.maxResidentTokens;
    j["kv_blocks"] = p.kvBlocks;
    // The two sides of a layer split (splitbill.h), as `plan` and the reports print them.
    if (p.hostOnly) // the host-only card "cpu" (no GPU); absent otherwise
        j["host_only"] = true;
    if (const SplitBill split = splitBill(p); split.partial)
        j["split_bill"] = {{"gpu_layers", split.gpuLayers},
                           {"total_layers", split.totalLayers},
                           {"layer_split", split.layerSplit},
                           {"host_expert_bytes", split.hostExpertBytes.value},
                           {"host_kv_bytes", split.hostKvBytes.value},
                           {"host_weights_mapped", split.hostWeightsMapped},
                           {"host_weights_note", split.hostWeightsNote},
                           {"context_tokens_per_sequence", split.contextTokensPerSequence},
                           {"sequences", split.sequences},
                           {"resident_tokens", split.residentTokens},
                           {"gpu", splitItems(split.gpu)},
                           {"gpu_bytes", split.gpuBytes().value},
                           {"host", splitItems(split.host)},
                           {"host_bytes", split.hostBytes().value}};
    j["fits"] = p.fits;
    j["reason"] = p.reason;
    j["verdict"] = verdictJsonObject(p.verdict);
    // The verdict in words (verdict.h verdictLabel: "CPU only" for a split with no GPU layer, where
    // the state id stays "partial_offload"), so the reports print core's words.
    j["verdict"]["label"] = verdictLabel(p);
    if (!p.refusals.empty()) {
        nlohmann::json refusals = nlohmann::json::array();
        for (const EngineRefusal& r : p.refusals)
            refusals.push_back({{"limit", fitLimitId(r.limit)}, {"reason", r.reason}});
        j["refusals"] = refusals;
    }
    if (p.sequenceCap)
        j["sequence_cap"] = {{"sequences", p.sequenceCap->sequences}, {"setting", p.sequenceCap->setting}};
    j["context_tokens"] = p.contextTokens;
    j["users"] = p.users;
    j["model_context_tokens"] = p.modelContextTokens;
    if (p.maxUsers)
        j["max_users"] = *p.maxUsers;
    if (p.maxContext)
        j["max_context"] = *p.maxContext;
    if (p.maxConcurrency)
        j["max_concurrency"] = *p.maxConcurrency;
    nlohmann::json frontier = nlohmann::json::array();
    for (const FrontierPoint& f : p.frontier)
        frontier.push_back({{"users", f.users}, {"context_tokens", f.contextTokens}});
    j["frontier"] = frontier;
    j["notes"] = p.notes;
    // Speed only for what loads (verdict.h): a plan that does not fit says why instead.
    if (p.speed && !p.verdict.loads())
        j["speed_unavailable"] = "no speed: " + p.verdict.reason;
    if (p.speed && p.verdict.loads()) {
        const SpeedSummary& s = *p.speed;
        nlohmann::json sj;
        sj["bandwidth_gbps"] = s.bandwidthGBps;
        sj["peak_tflops"] = s.peakTflops;
        sj["calibrated"] = s.calibrated;
        sj["users"] = s.users;
        sj["context_tokens"] = s.contextTokens;
        sj["decode_tokens_per_s"] = s.decodeTokensPerSecond;
        if (s.split)
            sj["split"] = {{"gpu_layers", s.split->gpuLayers},
                           {"total_layers", s.split->totalLayers},
                           {"host_bandwidth_gbps", s.split->hostBandwidthGBps},
                           {"host_bandwidth_assumed", s.split->hostBandwidthAssumed},
                           {"gpu_ms", s.split->speed.gpuMs},
                           {"host_ms", s.split->speed.hostMs},
                           {"link_ms", s.split->speed.linkMs},
                           {"step_ms", s.split->speed.stepMs},
                           {"tokens_per_s", s.split->speed.tokensPerSecond}};
        sj["aggregate_tokens_per_s"] = s.aggregateTokensPerSecond;
        sj["tpot_ms"] = s.tpotMs;
        sj["ttft_ms"] = s.ttftMs;
        if (s.kneeBatch)
            sj["knee_batch"] = *s.kneeBatch;
        nlohmann::json curve = nlohmann::json::array();
        for (const SpeedPoint& pt : s.curve)
            curve.push_back({{"batch", pt.batch}, {"step_ms", pt.stepMs}, {"tokens_per_s", pt.tokensPerSecond},
                             {"compute_bound", pt.computeBound}});
        sj["curve"] = curve;
        j["speed"] = sj;
    }
    return j;
}

std::string planToJson(const PlanResult& plan, int indent) { return planJsonObject(plan).dump(indent); }

std::string plansToJson(const std::vector<PlanResult>& plans, int indent)
{
    nlohmann::json arr = nlohmann::json::array();
    for (const PlanResult& p : plans)
        arr.push_back(planJsonObject(p));
    return arr.dump(indent);
}

} // namespace headroom
