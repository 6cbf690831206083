// The limit probe: the largest resident tokens (and frontier points) that really run, found by
// allocation plus a real decode step, in a child process (BRIEF §4 "Limit search";
// shared/reference/gpus.md §6.4: within 1 % or one block of the prediction, never above it).

#include "modelondevice.h"
#include "probeplan.h"
#include "workorder.h"

#include "headroom/probes/probes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace headroom::probes {

namespace detail {

namespace {

/// Largest block count whose token count still fits the kernels' int32 sequence lengths.
constexpr std::uint64_t kMaxBlocks = (std::uint64_t{1} << 31) / kProbeBlockTokens - 1;

/// One allocation trial of the search.
struct Trial {
    std::uint64_t blocks = 0; ///< KV blocks the trial holds in all (pool + extra)
    bool extra = false;       ///< an extra allocation on top of the resident pool (no re-touching of the pool)
    bool allocated = false;
    std::string error;
};

std::string tokensText(std::uint64_t blocks)
{
    return formatThousands(blocks * kProbeBlockTokens) + " tokens";
}

} // namespace

ProbeResult runLimitSearch(const DeviceSpec& spec, std::optional<Bytes> budgetArg, const ModelInputs& inputs,
                           const LimitProbeOptions& options, ProbeProgress& progress)
{
    ProbeResult r;
    r.probe = "limit";
    progress.report(0.0, "opening the device");
    auto opened = openDevice(spec);
    if (!opened)
        return failedResult("limit", opened.error().message);
    Device& device = **opened;
    auto info = device.memoryInfo();
    if (!info)
        return failedResult("limit", info.error().message);
    Bytes budget;
    if (budgetArg) {
        budget = *budgetArg;
        if (std::string why = budgetRefusal(spec.kind, budget, info->freeBytes); !why.empty())
            return failedResult("limit", why);
    } else {
        // Budget from free, never from total; keep the 1,024 MiB safety margin (gpus.md §6.4).
        budget = saturatingSub(info->freeBytes, Bytes{1024ull << 20});
        r.notes.push_back("no --budget: free memory minus a 1,024 MiB safety margin");
    }
    device.setBudget(budget);
    const Architecture& arch = *inputs.model.architecture;
    const KvLayout layout = kvLayout(arch, inputs.kvDtype);
    const std::uint64_t blockBytes = layout.bytesPerToken().value * kProbeBlockTokens;
    const std::uint64_t blockBound = std::min(kMaxBlocks, budget.value / std::max<std::uint64_t>(blockBytes, 1) + 1);
    const ScratchSizes scratch = scratchSizes(arch, spec.kind, blockBound);
    const std::uint64_t weightsFormula = formulaWeightBytes(arch, inputs.format).value;

    auto plan = probePlan(inputs, budget, Bytes{scratch.total()});
    if (!plan)
        return failedResult("limit", "the plan failed: " + plan.error());
    const std::uint64_t predictedBlocks = plan->kvBlocks;
    const std::uint64_t predictedTokens = plan->maxResidentTokens;
    r.set("budget_bytes", budget.value);
    r.set("weights_bytes", weightsFormula);
    r.set("workspace_bytes", scratch.total());
    r.set("kv_bytes_per_token", layout.bytesPerToken().value);
    r.set("block_tokens", kProbeBlockTokens);
    r.set("predicted_tokens", predictedTokens);
    r.set("predicted_blocks", predictedBlocks);

    ModelOnDevice model(device, inputs);
    const auto nothingFits = [&](const std::string& what, const DeviceError& e) {
        r.set("verified_tokens", std::uint64_t{0});
        r.set("verified_blocks", std::uint64_t{0});
        r.setVerdict(limitVerdict(0, predictedTokens, kProbeBlockTokens, 0, 0));
        r.summary = what + " do not fit the budget: " + e.message;
        return r;
    };
    if (auto s = model.allocateWeights(progress, 0.02, 0.25); !s)
        return s.error().code == DeviceError::Code::Cancelled ? cancelledResult("limit") : nothingFits("the weights", s.error());
    if (auto s = model.allocateScratch(blockBound); !s)
        return nothingFits("the decode scratch buffers", s.error());

    // 1. Allocation only: the pool at the prediction (allocated and touched once), then one more
    //    block on top of it; raised by doubling extra allocations while they fit, bisected on
    //    allocations when the prediction itself does not fit. No decode step yet.
    std::vector<Trial> trials;
    const auto fraction = [&] { return std::min(0.55, 0.3 + 0.03 * static_cast<double>(trials.size())); };
    const auto poolTrial = [&](std::uint64_t blocks) -> bool {
        Trial t;
        t.blocks = blocks;
        progress.report(fraction(), "allocating " + tokensText(blocks));
        if (blocks > blockBound)
            t.error = "past the block table of the scratch";
        else if (auto a = model.allocateKvBlocks(blocks, &progress); !a)
            t.error = a.error().message;
        else
            t.allocated = true;
        if (!t.allocated)
            model.releaseKv();
        trials.push_back(t);
        return t.allocated;
    };
    const auto extraTrial = [&](std::uint64_t extraBlocks) -> bool {
        Trial t;
        t.blocks = model.kvBlocks() + extraBlocks;
        t.extra = true;
        progress.report(fraction(), "allocating " + tokensText(extraBlocks) + " more");
        if (t.blocks > blockBound) {
            t.error = "past the block table of the scratch";
        } else {
            auto b = DeviceBuffer::make(device, Bytes{extraBlocks * blockBytes}, "KV blocks past the pool");
            if (!b)
                t.error = b.error().message;
            else if (auto f = device.fill(b->get(), 0x11, b->bytes()); !f)
                t.error = f.error().message;
            else
                t.allocated = true;
        }
        trials.push_back(t);
        return t.allocated;
    };

    std::uint64_t lo = 0; // largest block count known to allocate
    if (predictedBlocks > 0 && poolTrial(predictedBlocks)) {
        lo = predictedBlocks;
        std::uint64_t up = 1, hiExtra = 0;
        while (lo + up <= blockBound) {
            if (progress.cancelled())
                return cancelledResult("limit");
            if (!extraTrial(up)) {
                hiExtra = up;
                break;
            }
            lo = predictedBlocks + up;
            up *= 2;
        }
        std::uint64_t loExtra = lo - predictedBlocks;
        while (hiExtra > loExtra + 1) {
            const std::uint64_t mid = loExtra + (hiExtra - loExtra) / 2;
            if (extraTrial(mid))
                loExtra = mid;
            else
                hiExtra = mid;
        }
        lo = predictedBlocks + loExtra;
        if (lo > predictedBlocks && !poolTrial(lo)) // the plan under-counts: hold the larger pool to run it
            return failedResult("limit", "more blocks allocated than predicted, but not as one pool: " + trials.back().error);
    } else {
        std::uint64_t hi = predictedBlocks > 0 ? predictedBlocks : 2;
        lo = 0;
        while (hi - lo > 1) {
            if (progress.cancelled())
                return cancelledResult("limit");
            const std::uint64_t mid = lo + (hi - lo) / 2;
            if (poolTrial(mid))
                lo = mid;
            else
                hi = mid;
            model.releaseKv();
        }
        if (lo > 0 && !poolTrial(lo))
            return failedResult("limit", "the pool of " + tokensText(lo) + " allocated once and then no more: " + trials.back().error);
    }
    const std::uint64_t allocatedBlocks = lo;

    // 2. One full decode step over the whole pool at the limit: the proof that what allocates runs.
    double stepAtLimit = 0;
    std::string stepError;
    const auto runStep = [&](std::uint64_t users, std::uint64_t tokens, double& ms, bool distinctOnly) -> std::string {
        if (auto q = model.setSequences(packedSequences(users, tokens)); !q)
            return q.error().message;
        auto t = device.timeMs([&] { return model.step(&progress, options.stepLayers, distinctOnly); });
        if (!t)
            return t.error().message;
        if (auto sync = device.synchronize(); !sync)
            return sync.error().message;
        ms = *t;
        return {};
    };
    if (allocatedBlocks > 0) {
        progress.report(0.6, "one decode step over " + tokensText(allocatedBlocks));
        stepError = runStep(1, allocatedBlocks * kProbeBlockTokens, stepAtLimit, false);
        if (progress.cancelled())
            return cancelledResult("limit");
    }
    const std::uint64_t verifiedBlocks = stepError.empty() ? allocatedBlocks : 0;
    const std::uint64_t verifiedTokens = verifiedBlocks * kProbeBlockTokens;
    r.set("allocated_blocks", allocatedBlocks);
    r.set("verified_tokens", verifiedTokens);
    r.set("verified_blocks", verifiedBlocks);
    r.set("step_ms", stepAtLimit);
    if (!stepError.empty())
        r.set("step_error", stepError);
    nlohmann::json trialJson = nlohmann::json::array();
    for (const Trial& t : trials) {
        nlohmann::json j = {{"blocks", t.blocks}, {"tokens", t.blocks * kProbeBlockTokens}, {"extra", t.extra},
                            {"allocated", t.allocated}};
        if (!t.allocated)
            j["error"] = t.error;
        trialJson.push_back(j);
    }
    r.set("trials", RawJson{trialJson.dump()});
    r.set("allocation_trials", static_cast<std::uint64_t>(trials.size()));
    for (const Trial& t : trials)
        if (!t.allocated && t.blocks == allocatedBlocks + 1)
            r.set("first_failure", t.error);

    // 3. Frontier points: each (users x context) of the plan needs at most the verified pool (the
    //    allocation check) and runs one decode step over its own sequences.
    std::size_t checked = 0, ran = 0, full = 1;
    nlohmann::json frontierJson = nlohmann::json::array();
    if (options.verifyFrontier && verifiedBlocks > 0 && !plan->frontier.empty()) {
        std::size_t total = plan->frontier.size();
        if (options.maxFrontierPoints > 0)
            total = std::min(total, options.maxFrontierPoints);
        for (std::size_t i = 0; i < total; ++i) {
            if (progress.cancelled())
                return cancelledResult("limit");
            const FrontierPoint& p = plan->frontier[i];
            progress.report(0.65 + 0.35 * static_cast<double>(i) / static_cast<double>(total),
                            "frontier: " + formatThousands(p.users) + " users x " + formatThousands(p.contextTokens) + " tokens");
            nlohmann::json j = {{"users", p.users}, {"context_tokens", p.contextTokens}, {"predicted", true}};
            const std::uint64_t need = p.users * ceilDiv(p.contextTokens, kProbeBlockTokens);
            j["blocks"] = need;
            bool ok = false;
            if (need <= verifiedBlocks) {
                double ms = 0;
                const std::string e = runStep(p.users, p.contextTokens, ms, true);
                ok = e.empty();
                if (ok)
                    j["step_ms"] = ms;
                else
                    j["error"] = e;
                ++full;
            } else {
                j["error"] = "needs " + formatThousands(need) + " blocks, the verified pool has " + formatThousands(verifiedBlocks);
            }
            j["verified"] = ok;
            ran += ok;
            ++checked;
            frontierJson.push_back(j);
        }
    }
    model.releaseKv();
    r.set("frontier", RawJson{frontierJson.dump()});
    r.set("frontier_points_checked", static_cast<std::uint64_t>(checked));
    r.set("frontier_points_predicted", static_cast<std::uint64_t>(plan->frontier.size()));
    r.set("full_steps", static_cast<std::uint64_t>(verifiedBlocks > 0 || !stepError.empty() ? full : 0));

    const std::uint32_t ranLayers = options.stepLayers == 0 ? arch.layers : std::min(options.stepLayers, arch.layers);
    r.set("step_layers", std::uint64_t{ranLayers});
    r.set("layers", std::uint64_t{arch.layers});
    // The frontier steps run the first layer of each kind (within the step layers).
    std::uint64_t frontierLayers = 0;
    for (std::uint32_t i : model.distinctLayers())
        frontierLayers += i < ranLayers;
    r.set("frontier_step_layers", frontierLayers);
    if (ranLayers < arch.layers)
        r.notes.push_back("the decode step ran " + std::to_string(ranLayers) + " of " + std::to_string(arch.layers)
                          + " layers (memory was allocated for all of them)");
    r.notes.push_back("prediction: makePlan with a flat reserve of the decode scratch (" + bytesText(scratch.total())
                      + ") on a card of the budget, 16-token blocks");
    r.notes.push_back("search: weights and scratch allocated once; the KV pool allocated and touched once at the prediction, "
                      "then extra blocks on top of it (doubling, then bisection) until one does not fit; one decode step "
                      "over the whole pool at the limit; each frontier point: its blocks within the verified pool, then one "
                      "decode step over its sequences through the first layer of each kind ("
                      + std::to_string(frontierLayers)
                      + " here: layers of one kind run the same kernels on the same shapes, and the step at the limit ran "
                        "every layer over the whole pool)");
    r.notes.push_back(std::string("the decode step on synthetic weights: every layer's ")
                      + (arch.mla.cachesLatent() ? "MLA projections (absorbed: the new latent written into the paged latent cache, "
                                                   "H queries attending over it, as llama.cpp's MLA cache runs)"
                                                 : "q/k/v GEMVs, the new token's K and V written into the paged cache, paged "
                                                   "attention over the whole cache, the o GEMV")
                      + (arch.moe.enabled() ? ", the router GEMV, top-k experts a token and their MLPs, the shared experts"
                                            : ", the MLP GEMVs")
                      + ", the logits GEMV (norms, RoPE and activation functions are not run)");
    r.notes.push_back("frontier points with more than 64 users run attention for every sequence (micro-batches of 64) and "
                      "the GEMVs once at batch 64");
    if (spec.kind == DeviceKind::Cuda)
        r.notes.push_back("a CUDA limit also fails when cudaMalloc does, before the budget: the verified value is what ran");

    r.setVerdict(limitVerdict(verifiedTokens, predictedTokens, kProbeBlockTokens, checked, ran));
    char line[320];
    std::snprintf(line, sizeof line,
                  "%s resident tokens verified of %s predicted (%.3f%%) under a %s budget; %zu/%zu frontier points ran",
                  formatThousands(verifiedTokens).c_str(), formatThousands(predictedTokens).c_str(),
                  predictedTokens ? 100.0 * static_cast<double>(verifiedTokens) / static_cast<double>(predictedTokens) : 0.0,
                  formatBytes(budget).c_str(), ran, plan->frontier.size());
    r.summary = line;
    if (!stepError.empty())
        r.summary = "the pool of " + tokensText(allocatedBlocks) + " allocated but the decode step failed: " + stepError;
    if (verifiedTokens > predictedTokens)
        r.notes.push_back("more ran than predicted: the plan under-counts (reported, never claimed)");
    progress.report(1.0, "done");
    return r;
}

} // namespace detail

ProbeResult runLimitProbe(const DeviceSpec& device, std::optional<Bytes> budget, const ModelInputs& model,
                          const LimitProbeOptions& options, ProbeProgress& progress)
{
    const std::string why = decodeUnsupportedReasonOn(device.kind, model);
    if (!why.empty() && options.testHook == ChildTestHook::None) {
        ProbeResult r = failedResult("limit", "not supported: " + why);
        r.setVerdict(ProbeVerdict::NotSupported);
        return r;
    }
    if (!budget && device.kind == DeviceKind::Cpu) {
        ProbeResult r = failedResult("limit", "the CPU limit probe needs a budget (--budget)");
        return r;
    }
    return detail::runIsolated("limit", detail::limitWorkOrder(device, budget, model, options), options.isolation, device.kind,
                               progress);
}

} // namespace headroom::probes
