// headroom-cli speed: the roofline decode/prefill model, batching and speculative decoding.

#include "commands.h"
#include "planoptions.h"
#include "texttable.h"

#include "headroom/core/planjson.h"
#include "headroom/core/speed/batching.h"
#include "headroom/core/speed/speculative.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

namespace headroom::cli {

namespace {

using Align = TextTable::Align;

struct SpeedOptions {
    PlanOptions plan;
    double acceptance = 0.8;
    unsigned draftTokens = 4;
    double draftCost = 0.1;
    unsigned requests = 64;
    std::optional<unsigned> slots; ///< default: the users the plan runs
    double medianOutputTokens = 18;
    double outputSigma = 1.06;
};

// A split over several GPUs: each device's share of the step at its own bandwidth (splitspeed.h:
// the devices run one after the other), ": CUDA0 13.0 ms at 936 GB/s, CUDA1 17.5 ms at 360 GB/s".
std::string splitDevicesText(const SplitDecode& d)
{
    if (d.speed.devicesMs.size() < 2 || d.devicesBandwidthGBps.size() != d.speed.devicesMs.size())
        return "";
    std::string out;
    for (std::size_t n = 0; n < d.speed.devicesMs.size(); ++n)
        out += (n ? ", CUDA" : ": CUDA") + std::to_string(n) + " " + formatFixed(d.speed.devicesMs[n], 1) + " ms at "
               + formatFixed(d.devicesBandwidthGBps[n], 0) + " GB/s";
    return out;
}

void printRoofline(const PlanResult& p)
{
    const SpeedSummary& s = *p.speed;
    std::cout << (s.split ? "Roofline of the layer split: " : "Roofline: ") << p.modelId << " " << p.formatId << " on " << p.cardId << " (" << formatFixed(s.bandwidthGBps, 0)
              << " GB/s, " << formatFixed(s.peakTflops, 1) << " TFLOP/s fp16" << (s.calibrated ? ", measured" : ", datasheet")
              << "), context " << formatThousands(s.contextTokens) << " tokens\n\n";
    TextTable t;
    t.addColumn("batch", Align::Right);
    t.addColumn("step ms", Align::Right);
    t.addColumn("tokens/s", Align::Right);
    t.addColumn("per sequence", Align::Right);
    t.addColumn("bound");
    for (const SpeedPoint& pt : s.curve)
        t.addRow({std::to_string(pt.batch), formatFixed(pt.stepMs, 3), formatFixed(pt.tokensPerSecond, 1),
                  formatFixed(pt.tokensPerSecond / static_cast<double>(pt.batch), 1), pt.computeBound ? "compute" : "memory"});
    t.print(std::cout, "  ");
    std::cout << "\n  TTFT (prefill of " << formatThousands(s.contextTokens) << " tokens): " << formatFixed(s.ttftMs, 1) << " ms\n";
    std::cout << "  TPOT at " << formatThousands(s.users) << (s.users == 1 ? " user: " : " users: ") << formatFixed(s.tpotMs, 2) << " ms ("
              << formatFixed(s.aggregateTokensPerSecond, 1) << " tokens/s in all)\n";
    if (s.split)
        std::cout << "  knee: not modelled for a split (the host's compute is not priced; every step memory-bound)\n";
    else
        std::cout << "  knee: " << (s.kneeBatch ? "batch " + std::to_string(*s.kneeBatch) : std::string("beyond batch 1,024"))
                  << " (decode turns compute-bound)\n";
    if (s.split)
        std::cout << "  layer split: " << s.split->gpuLayers << " of " << s.split->totalLayers << " layers on the GPU: about "
                  << formatFixed(s.split->speed.tokensPerSecond, 1) << " tokens/s for one sequence (GPU " << formatFixed(s.split->speed.gpuMs, 1)
                  << " ms" << splitDevicesText(*s.split) << ", host " << formatFixed(s.split->speed.hostMs, 1) << " ms at " << formatFixed(s.split->hostBandwidthGBps, 1) << " GB/s"
                  << (s.split->hostBandwidthAssumed ? " assumed" : "") << ", PCIe " << formatFixed(s.split->speed.linkMs, 2)
                  << " ms a token; the table and TPOT above are the split's, memory-bound)\n";
    if (p.maxUsers)
        std::cout << "  memory allows " << formatThousands(*p.maxUsers) << " users at this context\n";
}

void printBatching(const SpeedOptions& o, unsigned slots)
{
    const auto lengths = skewedOutputLengths(o.requests, o.medianOutputTokens, o.outputSigma);
    const BatchingResult st = simulateStaticBatching(lengths, slots);
    const BatchingResult ct = simulateContinuousBatching(lengths, slots);
    std::cout << "\nBatching: " << o.requests << " requests, " << slots << " slots, output lengths log-normal (median "
              << formatFixed(o.medianOutputTokens, 0) << ", total " << formatThousands(st.totalTokens) << " tokens)\n\n";
    TextTable t;
    t.addColumn("schedule");
    t.addColumn("steps", Align::Right);
    t.addColumn("tokens/step", Align::Right);
    t.addColumn("mean latency (steps)", Align::Right);
    t.addColumn("mean in service (steps)", Align::Right);
    t.addRow({"static", formatThousands(st.totalSteps), formatFixed(st.tokensPerStep, 2), formatFixed(st.meanLatencySteps, 1),
              formatFixed(st.meanServiceSteps, 1)});
    t.addRow({"continuous", formatThousands(ct.totalSteps), formatFixed(ct.tokensPerStep, 2), formatFixed(ct.meanLatencySteps, 1),
              formatFixed(ct.meanServiceSteps, 1)});
    t.print(std::cout, "  ");
    std::cout << "  continuous: " << formatFixed(ct.tokensPerStep / st.tokensPerStep, 2) << "x throughput, "
              << formatFixed(st.meanLatencySteps / ct.meanLatencySteps, 2) << "x lower mean latency\n";
}

void printSpeculative(const SpeedOptions& o)
{
    std::cout << "\nSpeculative decoding: acceptance " << o.acceptance << ", draft " << o.draftTokens << " tokens, draft cost "
              << o.draftCost << " of a target step\n";
    std::cout << "  " << formatFixed(speculativeTokensPerVerification(o.acceptance, o.draftTokens), 2)
              << " tokens per verification, speed-up " << formatFixed(speculativeSpeedup(o.acceptance, o.draftTokens, o.draftCost), 2)
              << "x\n";
}

// The batching simulation for @p slots, and the speculative-decoding figures: what the text prints.
nlohmann::json batchingJson(const SpeedOptions& o, unsigned slots)
{
    const auto lengths = skewedOutputLengths(o.requests, o.medianOutputTokens, o.outputSigma);
    const auto one = [](const BatchingResult& r) {
        return nlohmann::json{{"steps", r.totalSteps}, {"tokens_per_step", r.tokensPerStep}, {"mean_latency_steps", r.meanLatencySteps},
                              {"mean_service_steps", r.meanServiceSteps}};
    };
    return {{"requests", o.requests},
            {"slots", slots},
            {"static", one(simulateStaticBatching(lengths, slots))},
            {"continuous", one(simulateContinuousBatching(lengths, slots))}};
}

nlohmann::json speculativeJson(const SpeedOptions& o)
{
    return {{"acceptance", o.acceptance},
            {"draft_tokens", o.draftTokens},
            {"draft_cost", o.draftCost},
            {"tokens_per_verification", speculativeTokensPerVerification(o.acceptance, o.draftTokens)},
            {"speedup", speculativeSpeedup(o.acceptance, o.draftTokens, o.draftCost)}};
}

void run(const SpeedOptions& o, CliContext& ctx)
{
    if (o.acceptance < 0 || o.acceptance > 1)
        return ctx.fail("--acceptance must be within 0..1, got " + std::to_string(o.acceptance));
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    auto requests = buildRequests(o.plan, *profiles, &ctx.calibrations());
    if (!requests)
        return ctx.fail(requests.error());
    auto plans = runPlans(*requests);
    if (!plans)
        return ctx.fail(plans.error());
    const PlanResult& p = plans->front();
    ctx.answered(p.verdict.fits());
    const std::uint64_t running = std::max<std::uint64_t>(1, std::min<std::uint64_t>(p.users, p.maxUsers.value_or(p.users)));
    const unsigned slots = o.slots.value_or(static_cast<unsigned>(std::min<std::uint64_t>(running, 4096)));
    if (o.plan.json) {
        // The plan's own JSON (its verdict; `speed` only when it loads, else `speed_unavailable`),
        // with the batching and speculative blocks for a plan that runs.
        nlohmann::json j = nlohmann::json::parse(planToJson(p));
        if (p.verdict.loads() && p.speed) {
            j["batching"] = batchingJson(o, slots);
            j["speculative"] = speculativeJson(o);
        }
        std::cout << j.dump(2) << '\n';
        return;
    }
    if (!p.verdict.loads()) {
        // Speed only for what loads: a plan that does not fit has none.
        std::cout << "No speed for " << p.modelId << " " << p.formatId << " on " << p.cardId << ": " << p.verdict.reason << '\n';
        return;
    }
    if (!p.speed)
        return ctx.fail("card '" + p.cardId + "' has no bandwidth figure: use a card profile (headroom-cli cards)");
    if (p.verdict.state != FitState::Fits)
        std::cout << "note: " << p.verdict.reason << "; the figures below assume the users asked for\n\n";
    printRoofline(p);
    printBatching(o, slots);
    printSpeculative(o);
}

} // namespace

void registerSpeedCommand(CLI::App& app, CliContext& ctx)
{
    auto opts = std::make_shared<SpeedOptions>();
    CLI::App* cmd = app.add_subcommand("speed", "Decode tokens/s against batch, TTFT, the knee; batching and speculative decoding");
    addPlanOptions(cmd, opts->plan, false);
    cmd->add_option("--acceptance", opts->acceptance, "Speculative decoding: acceptance rate a")->capture_default_str();
    cmd->add_option("--draft-tokens", opts->draftTokens, "Speculative decoding: draft length g (tokens a step)")->capture_default_str()->check(CLI::Range(1u, 64u));
    cmd->add_option("--draft-cost", opts->draftCost, "Speculative decoding: draft step cost c (fraction of a target step)")
        ->capture_default_str()->check(CLI::Range(0.0, 10.0));
    cmd->add_option("--requests", opts->requests, "Batching simulation: requests")->capture_default_str()->check(CLI::Range(1u, 100000u));
    cmd->add_option("--slots", opts->slots, "Batching simulation: concurrent slots (default: the users the plan runs)")
        ->check(CLI::Range(1u, 4096u));
    addCheckFlag(cmd, ctx);
    cmd->callback([opts, &ctx] { run(*opts, ctx); });
}

} // namespace headroom::cli
