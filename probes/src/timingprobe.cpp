// The timing probe: decode step time against batch and context, prefill time against prompt
// length (BRIEF §2, §4 "Timing"; measurement rules of shared/reference/gpus.md §4 and §6.1:
// device events, warm-up, medians, cold cache by rewriting a buffer of >= 5x the cache).

#include "modelondevice.h"
#include "probeplan.h"
#include "stats.h"

#include "headroom/core/speed/roofline.h"
#include "headroom/probes/probes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace headroom::probes {

TimingProbeOptions cpuTimingDefaults()
{
    TimingProbeOptions o;
    o.batches = {1, 4, 16, 64};
    o.contexts = {16, 1024, 4096, 32768};
    o.prompts = {16, 64};
    o.warmup = 1;
    o.reps = 3;
    return o;
}

ProbeResult runTimingProbe(Device& device, const ModelInputs& inputs, const TimingProbeOptions& options, ProbeProgress& progress)
{
    ProbeResult r;
    r.probe = "timing";
    if (const std::string why = decodeUnsupportedReason(inputs); !why.empty()) {
        r = failedResult("timing", "not supported: " + why);
        r.supported = false;
        return r;
    }
    const Architecture& arch = *inputs.model.architecture;
    const std::uint64_t cap = arch.contextLength > 0 ? arch.contextLength : std::uint64_t{1} << 20;
    const KvLayout layout = kvLayout(arch, inputs.kvDtype);
    const std::uint64_t blockBytes = layout.bytesPerToken().value * kProbeBlockTokens;
    const std::uint64_t batchContext = std::min(options.batchContextTokens, cap);

    struct Point {
        enum Kind { Batch, Context, Prefill } kind;
        std::uint64_t batch;
        std::uint64_t tokens;
        std::uint64_t blocks() const
        {
            return kind == Batch ? batch * ceilDiv(tokens, kProbeBlockTokens) : ceilDiv(tokens, kProbeBlockTokens);
        }
    };
    std::vector<Point> points;
    for (std::uint32_t b : options.batches)
        if (b >= 1 && b <= kProbeMaxBatch)
            points.push_back({Point::Batch, b, batchContext});
    for (std::uint64_t c : options.contexts)
        if (c >= 1 && c <= cap)
            points.push_back({Point::Context, 1, c});
    for (std::uint64_t p : options.prompts)
        if (p >= 1 && p <= cap)
            points.push_back({Point::Prefill, 1, p});

    // Memory: weights + scratch + the largest pool a point needs; points that do not fit the
    // budget are dropped (and named).
    const std::uint64_t weights = detail::formulaWeightBytes(arch, inputs.format).value;
    std::uint64_t maxPrompt = 0;
    for (const Point& p : points)
        if (p.kind == Point::Prefill)
            maxPrompt = std::max(maxPrompt, p.tokens);
    std::uint64_t poolBlocks = 0;
    for (const Point& p : points)
        poolBlocks = std::max(poolBlocks, p.blocks());
    const std::uint64_t tableEntries = std::max(poolBlocks, kProbeMaxBatch * ceilDiv(maxPrompt, kProbeBlockTokens));
    const std::uint64_t scratch = detail::scratchSizes(arch, device.kind(), tableEntries).total();
    if (device.budget()) {
        const std::uint64_t room = saturatingSub(*device.budget(), Bytes{device.allocatedBytes().value + weights + scratch}).value;
        const std::uint64_t fit = room / std::max<std::uint64_t>(blockBytes, 1);
        std::vector<Point> kept;
        for (const Point& p : points) {
            if (p.blocks() <= fit)
                kept.push_back(p);
            else
                r.notes.push_back("skipped (over the budget): " + std::string(p.kind == Point::Prefill ? "prompt " : "batch ")
                                  + std::to_string(p.batch) + " x " + formatThousands(p.tokens) + " tokens");
        }
        points = kept;
        poolBlocks = 0;
        for (const Point& p : points)
            poolBlocks = std::max(poolBlocks, p.blocks());
    }
    if (points.empty())
        return failedResult("timing", "no timing point fits the budget");

    detail::ModelOnDevice model(device, inputs);
    if (auto s = model.allocateWeights(progress, 0.0, 0.1); !s)
        return s.error().code == DeviceError::Code::Cancelled ? cancelledResult("timing") : failedResult("timing", s.error().message);
    if (auto s = model.allocateScratch(tableEntries); !s)
        return failedResult("timing", s.error().message);
    if (auto s = model.allocateKvBlocks(std::max<std::uint64_t>(poolBlocks, 1), &progress); !s)
        return s.error().code == DeviceError::Code::Cancelled ? cancelledResult("timing") : failedResult("timing", s.error().message);

    // Cold cache: a step that streams less than 5x the cache gets a flush buffer rewritten before
    // every timed run (Triton do_bench zeroes 256 MB; FlashInfer rotates >= 5x L2).
    const std::uint64_t flushBytes = 5 * device.cacheBytes().value;
    DeviceBuffer flush;
    if (flushBytes > 0 && model.stepWeightBytes() < flushBytes) {
        auto f = DeviceBuffer::make(device, Bytes{flushBytes}, "cache flush buffer");
        if (f) {
            flush = std::move(*f);
            r.notes.push_back("cold cache: a " + detail::bytesText(flushBytes) + " buffer (5x the cache) is rewritten before each timed run");
        } else {
            r.notes.push_back("cache flush buffer does not fit: timings may be warm (" + f.error().message + ")");
        }
    } else {
        r.notes.push_back("cold cache by construction: each step streams " + detail::bytesText(model.stepWeightBytes())
                          + " of weights, >= 5x the " + detail::bytesText(device.cacheBytes().value) + " cache");
    }

    SpeedInputs speed;
    speed.weightsBytes = Bytes{model.stepWeightBytes()};
    speed.kvBytesPerToken = layout.bytesPerToken();
    speed.layers = arch.layers;
    speed.attentionWidth = std::uint64_t{arch.attentionHeads} * arch.headDim;
    speed.bandwidthGBps = options.bandwidthGBps;
    speed.calibrated = options.bandwidthGBps > 0;

    const std::uint32_t reps = std::max<std::uint32_t>(options.reps, 1);
    nlohmann::json decodeRows = nlohmann::json::array();
    nlohmann::json contextRows = nlohmann::json::array();
    nlohmann::json prefillRows = nlohmann::json::array();
    std::vector<std::pair<std::uint64_t, double>> throughput; // batch -> tokens/s
    double tpot = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const Point& p = points[i];
        std::vector<double> times;
        const auto run = [&]() -> DeviceStatus {
            if (p.kind != Point::Prefill)
                return model.step(&progress);
            for (std::uint64_t start = 0; start < p.tokens; start += kProbeMaxBatch) {
                if (auto s = model.setSequences(detail::prefillChunk(start, std::min<std::uint64_t>(kProbeMaxBatch, p.tokens - start))); !s)
                    return s;
                if (auto s = model.step(&progress); !s)
                    return s;
            }
            return {};
        };
        if (p.kind != Point::Prefill) {
            if (auto s = model.setSequences(detail::packedSequences(p.batch, p.tokens)); !s)
                return failedResult("timing", s.error().message);
        }
        for (std::uint32_t k = 0; k < options.warmup + reps; ++k) {
            if (progress.cancelled())
                return cancelledResult("timing");
            if (flush.get())
                (void)device.fill(flush.get(), static_cast<std::uint8_t>(k), flush.bytes());
            (void)device.synchronize();
            auto ms = device.timeMs(run);
            if (!ms)
                return ms.error().code == DeviceError::Code::Cancelled ? cancelledResult("timing")
                                                                      : failedResult("timing", ms.error().message);
            if (auto s = device.synchronize(); !s)
                return failedResult("timing", s.error().message);
            if (k >= options.warmup)
                times.push_back(*ms);
        }
        const double ms = detail::median(times);
        nlohmann::json j;
        if (p.kind == Point::Prefill) {
            j = {{"prompt_tokens", p.tokens}, {"ttft_ms", ms}, {"tokens_per_s", ms > 0 ? 1e3 * static_cast<double>(p.tokens) / ms : 0.0},
                 {"cv", detail::coefficientOfVariation(times)}};
            if (speed.bandwidthGBps > 0)
                j["predicted_ttft_ms"] = headroom::prefill(speed, p.tokens).stepMs;
            prefillRows.push_back(j);
        } else {
            const double tps = ms > 0 ? 1e3 * static_cast<double>(p.batch) / ms : 0.0;
            j = {{"batch", p.batch}, {"context_tokens", p.tokens}, {"step_ms", ms}, {"tokens_per_s", tps},
                 {"cv", detail::coefficientOfVariation(times)}};
            if (speed.bandwidthGBps > 0)
                j["predicted_step_ms"] = headroom::decodeStep(speed, p.batch, p.tokens).stepMs;
            if (p.kind == Point::Batch) {
                decodeRows.push_back(j);
                throughput.emplace_back(p.batch, tps);
                if (p.batch == 1)
                    tpot = ms;
            } else {
                contextRows.push_back(j);
            }
        }
        progress.report(0.1 + 0.9 * static_cast<double>(i + 1) / static_cast<double>(points.size()),
                        p.kind == Point::Prefill ? "prefill " + formatThousands(p.tokens) + " tokens"
                                                 : "decode batch " + std::to_string(p.batch) + " x " + formatThousands(p.tokens));
    }
    // The knee: the first batch whose next sweep point adds less than 15 % tokens/s.
    std::optional<std::uint64_t> knee;
    for (std::size_t i = 0; i + 1 < throughput.size(); ++i) {
        if (throughput[i + 1].second < 1.15 * throughput[i].second) {
            knee = throughput[i].first;
            break;
        }
    }
    r.set("weights_bytes", weights);
    r.set("step_weight_bytes", model.stepWeightBytes());
    r.set("decode", RawJson{decodeRows.dump()});
    r.set("context", RawJson{contextRows.dump()});
    r.set("prefill", RawJson{prefillRows.dump()});
    r.set("tpot_ms", tpot);
    if (tpot > 0)
        r.set("tokens_per_s_batch1", 1e3 / tpot);
    if (knee)
        r.set("knee_batch", *knee);
    else
        r.set("knee_batch", RawJson{"null"});
    if (speed.bandwidthGBps > 0) {
        const auto predictedKnee = headroom::kneeBatch(speed, batchContext);
        r.set("predicted_knee_batch", predictedKnee ? ProbeValue{*predictedKnee} : ProbeValue{RawJson{"null"}});
        r.notes.push_back("predictions: core roofline with the measured B_read " + std::to_string(speed.bandwidthGBps)
                          + " GB/s and no compute peak (memory-bound bound only)");
    }
    r.notes.push_back(std::string(device.kind() == DeviceKind::Cuda ? "CUDA events" : "steady clock") + "; median of "
                      + std::to_string(reps) + " after " + std::to_string(options.warmup) + " warm-up runs per point");
    r.notes.push_back("prefill runs the prompt in chunks of 64 tokens: batched GEMVs and causal decode attention (token i "
                      "attends to tokens 0..i); TTFT = prefill time; TPOT = decode step at batch 1");
    r.notes.push_back("knee: first batch of the sweep whose next point adds < 15 % tokens/s (null: not reached in the sweep)");
    r.pass = !decodeRows.empty() || !contextRows.empty() || !prefillRows.empty();
    char line[240];
    std::snprintf(line, sizeof line, "TPOT %.2f ms (%.1f tokens/s at batch 1), knee %s, %zu points", tpot,
                  tpot > 0 ? 1e3 / tpot : 0.0, knee ? ("at batch " + std::to_string(*knee)).c_str() : "not reached",
                  points.size());
    r.summary = line;
    return r;
}

} // namespace headroom::probes
