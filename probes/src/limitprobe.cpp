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

struct Trial {
    std::uint64_t blocks = 0;
    bool ran = false;
    double stepMs = 0;
    std::string error;
};

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
    r.set("predicted_tokens", predictedTokens);
    r.set("predicted_blocks", predictedBlocks);

    ModelOnDevice model(device, inputs);
    if (auto s = model.allocateWeights(progress, 0.02, 0.3); !s) {
        r.set("verified_tokens", std::uint64_t{0});
        r.set("verified_blocks", std::uint64_t{0});
        r.pass = predictedTokens == 0;
        r.summary = "weights do not fit the budget: " + s.error().message;
        return r;
    }
    if (auto s = model.allocateScratch(blockBound); !s) {
        r.set("verified_tokens", std::uint64_t{0});
        r.set("verified_blocks", std::uint64_t{0});
        r.pass = predictedTokens == 0;
        r.summary = "decode scratch does not fit the budget: " + s.error().message;
        return r;
    }

    std::vector<Trial> trials;
    const auto trial = [&](std::uint64_t blocks) -> bool {
        Trial t;
        t.blocks = blocks;
        if (blocks > blockBound) {
            t.error = "past the block table of the scratch";
        } else if (auto a = model.allocateKvBlocks(blocks, &progress); !a) {
            t.error = a.error().message;
        } else if (auto q = model.setSequences(packedSequences(1, blocks * kProbeBlockTokens)); !q) {
            t.error = q.error().message;
        } else {
            auto ms = device.timeMs([&] { return model.step(&progress, options.stepLayers); });
            if (!ms) {
                t.error = ms.error().message;
            } else if (auto sync = device.synchronize(); !sync) {
                t.error = sync.error().message;
            } else {
                t.ran = true;
                t.stepMs = *ms;
            }
        }
        model.releaseKv();
        trials.push_back(t);
        progress.report(std::min(0.7, 0.3 + 0.05 * static_cast<double>(trials.size())),
                        "trying " + formatThousands(blocks * kProbeBlockTokens) + " tokens");
        return t.ran;
    };

    // Start at the prediction; raise (doubling the step) while it runs, then bisect.
    std::uint64_t lo = 0;            // largest block count known to run (0: none)
    std::uint64_t hi = blockBound + 1; // smallest known to fail
    if (predictedBlocks > 0 && trial(predictedBlocks)) {
        lo = predictedBlocks;
        std::uint64_t stepUp = 1;
        while (lo + stepUp < hi) {
            if (progress.cancelled())
                return cancelledResult("limit");
            if (trial(lo + stepUp)) {
                lo += stepUp;
                stepUp *= 2;
            } else {
                hi = lo + stepUp;
                break;
            }
        }
    } else if (predictedBlocks > 0) {
        hi = predictedBlocks;
    } else {
        hi = std::min<std::uint64_t>(hi, 1);
        if (trial(1)) {
            lo = 1;
            hi = 2;
        }
    }
    while (hi - lo > 1) {
        if (progress.cancelled())
            return cancelledResult("limit");
        const std::uint64_t mid = lo + (hi - lo) / 2;
        if (trial(mid))
            lo = mid;
        else
            hi = mid;
    }
    const std::uint64_t verifiedBlocks = lo;
    const std::uint64_t verifiedTokens = lo * kProbeBlockTokens;
    r.set("verified_tokens", verifiedTokens);
    r.set("verified_blocks", verifiedBlocks);
    double stepAtLimit = 0;
    nlohmann::json trialJson = nlohmann::json::array();
    for (const Trial& t : trials) {
        if (t.ran && t.blocks == verifiedBlocks)
            stepAtLimit = t.stepMs;
        nlohmann::json j = {{"blocks", t.blocks}, {"tokens", t.blocks * kProbeBlockTokens}, {"ran", t.ran}};
        if (t.ran)
            j["step_ms"] = t.stepMs;
        else
            j["error"] = t.error;
        trialJson.push_back(j);
    }
    r.set("step_ms", stepAtLimit);
    r.set("trials", RawJson{trialJson.dump()});
    for (const Trial& t : trials)
        if (!t.ran && t.blocks == verifiedBlocks + 1)
            r.set("first_failure", t.error);

    // Frontier points: one step over the verified pool for each (users x context) of the plan.
    bool frontierOk = true;
    std::size_t checked = 0;
    nlohmann::json frontierJson = nlohmann::json::array();
    if (options.verifyFrontier && verifiedBlocks > 0 && !plan->frontier.empty()) {
        progress.report(0.7, "allocating the verified pool for the frontier");
        if (auto a = model.allocateKvBlocks(verifiedBlocks, &progress); !a) {
            frontierOk = false;
            r.notes.push_back("frontier not checked: the verified pool could not be allocated again: " + a.error().message);
        } else {
            std::size_t total = plan->frontier.size();
            if (options.maxFrontierPoints > 0)
                total = std::min(total, options.maxFrontierPoints);
            for (std::size_t i = 0; i < total; ++i) {
                if (progress.cancelled())
                    return cancelledResult("limit");
                const FrontierPoint& p = plan->frontier[i];
                nlohmann::json j = {{"users", p.users}, {"context_tokens", p.contextTokens}, {"predicted", true}};
                const std::uint64_t need = p.users * ceilDiv(p.contextTokens, kProbeBlockTokens);
                bool ran = false;
                if (need <= verifiedBlocks) {
                    if (auto q = model.setSequences(packedSequences(p.users, p.contextTokens)); !q) {
                        j["error"] = q.error().message;
                    } else {
                        auto ms = device.timeMs([&] { return model.step(&progress, options.stepLayers); });
                        if (ms && device.synchronize()) {
                            ran = true;
                            j["step_ms"] = *ms;
                        } else {
                            j["error"] = ms ? std::string("synchronize failed") : ms.error().message;
                        }
                    }
                } else {
                    j["error"] = "needs " + formatThousands(need) + " blocks, the verified pool has " + formatThousands(verifiedBlocks);
                }
                j["verified"] = ran;
                frontierOk = frontierOk && ran;
                ++checked;
                frontierJson.push_back(j);
                progress.report(0.7 + 0.3 * static_cast<double>(i + 1) / static_cast<double>(total),
                                "frontier: " + formatThousands(p.users) + " users x " + formatThousands(p.contextTokens) + " tokens");
            }
            model.releaseKv();
        }
    }
    r.set("frontier", RawJson{frontierJson.dump()});
    r.set("frontier_points_checked", static_cast<std::uint64_t>(checked));
    r.set("frontier_points_predicted", static_cast<std::uint64_t>(plan->frontier.size()));

    const std::uint32_t ranLayers = options.stepLayers == 0 ? arch.layers : std::min(options.stepLayers, arch.layers);
    r.set("step_layers", std::uint64_t{ranLayers});
    r.set("layers", std::uint64_t{arch.layers});
    if (ranLayers < arch.layers)
        r.notes.push_back("the decode step ran " + std::to_string(ranLayers) + " of " + std::to_string(arch.layers)
                          + " layers (memory was allocated for all of them)");
    r.notes.push_back("prediction: makePlan with a flat reserve of the decode scratch (" + bytesText(scratch.total())
                      + ") on a card of the budget, 16-token blocks");
    r.notes.push_back("each trial allocates the KV pool, touches it, and runs one decode step on synthetic weights: every "
                      "layer's q/k/v/o and gate/up/down GEMVs, paged attention over the whole cache, the logits GEMV");
    r.notes.push_back("frontier points with more than 64 users run attention for every sequence (micro-batches of 64) and "
                      "the GEMVs once at batch 64");
    if (spec.kind == DeviceKind::Cuda)
        r.notes.push_back("a CUDA limit also fails when cudaMalloc does, before the budget: the verified value is what ran");

    const bool withinOnePercent = static_cast<double>(verifiedTokens) >= 0.99 * static_cast<double>(predictedTokens)
        || predictedTokens - std::min(predictedTokens, verifiedTokens) <= kProbeBlockTokens;
    r.pass = verifiedTokens <= predictedTokens && withinOnePercent && frontierOk;
    char line[300];
    std::snprintf(line, sizeof line, "%s resident tokens verified of %s predicted (%.3f%%) under a %s budget; %zu/%zu frontier points ran",
                  formatThousands(verifiedTokens).c_str(), formatThousands(predictedTokens).c_str(),
                  predictedTokens ? 100.0 * static_cast<double>(verifiedTokens) / static_cast<double>(predictedTokens) : 0.0,
                  formatBytes(budget).c_str(), checked, plan->frontier.size());
    r.summary = line;
    if (verifiedTokens > predictedTokens)
        r.notes.push_back("more ran than predicted: the plan under-counts (reported, never claimed)");
    progress.report(1.0, "done");
    return r;
}

} // namespace detail

ProbeResult runLimitProbe(const DeviceSpec& device, std::optional<Bytes> budget, const ModelInputs& model,
                          const LimitProbeOptions& options, ProbeProgress& progress)
{
    const std::string why = decodeUnsupportedReason(model);
    if (!why.empty() && options.testHook == ChildTestHook::None) {
        ProbeResult r = failedResult("limit", "not supported: " + why);
        r.supported = false;
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
