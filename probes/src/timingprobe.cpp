// The timing probe: decode step time against batch and context, prefill time against prompt
// length (BRIEF §2, §4 "Timing"; measurement rules of shared/reference/gpus.md §4 and §6.1:
// device events, warm-up, medians, cold cache by rewriting a buffer of >= 5x the cache).

#include "modelondevice.h"
#include "probeplan.h"
#include "stats.h"

#include "headroom/core/probeverdict.h"
#include "headroom/core/speed/calibration.h"
#include "headroom/core/speed/roofline.h"
#include "headroom/probes/probes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace headroom::probes {

namespace {
/// Timed runs, at least, of each of the two points that calibrate the speed model (the batch-1
/// decode step with the fewest cached tokens, the longest prefill): every other row is predicted
/// from their medians. On this project's loaded 2-core machine one 100-token prefill of the test
/// model took 5.3 to 25 ms between runs (tst_probes at load 11, 2026-12-01), so a median of 3 let
/// one slow prefill set the compute peak.
constexpr std::uint32_t kCalibrationReps = 7;
} // namespace

TimingProbeOptions cpuTimingDefaults()
{
    TimingProbeOptions o;
    o.batches = {1, 4, 16};
    o.contexts = {4096, 16384};
    o.prompts = {16, 64};
    o.warmup = 1;
    o.reps = 3;
    return o;
}

ProbeResult runTimingProbe(Device& device, const ModelInputs& inputs, const TimingProbeOptions& options, ProbeProgress& progress)
{
    ProbeResult r;
    r.probe = "timing";
    if (const std::string why = decodeUnsupportedReasonOn(device.kind(), inputs); !why.empty()) {
        r = failedResult("timing", "not supported: " + why);
        r.setVerdict(ProbeVerdict::NotSupported);
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
    if (flushBytes > 0 && model.stepTokenWeightBytes() < flushBytes) {
        auto f = DeviceBuffer::make(device, Bytes{flushBytes}, "cache flush buffer");
        if (f) {
            flush = std::move(*f);
            r.notes.push_back("cold cache: a " + detail::bytesText(flushBytes) + " buffer (5x the cache) is rewritten before each timed run");
        } else {
            r.notes.push_back("cache flush buffer does not fit: timings may be warm (" + f.error().message + ")");
        }
    } else {
        r.notes.push_back("cold cache by construction: each step streams " + detail::bytesText(model.stepTokenWeightBytes())
                          + " of weights, >= 5x the " + detail::bytesText(device.cacheBytes().value) + " cache");
    }

    SpeedInputs speed;
    speed.weightsBytes = Bytes{model.stepWeightBytes()};
    // MoE: the routed experts are read in proportion to the experts a batch touches (routeTopK
    // draws them as the speed model's expertsTouchedFraction assumes).
    speed.expertBytes = Bytes{model.stepExpertBytes()};
    speed.expertCount = arch.moe.expertCount;
    speed.expertsPerToken = arch.moe.expertsPerToken;
    speed.activeParameters = model.stepWeightParameters();
    speed.kvBytesPerToken = layout.bytesPerToken();
    speed.layers = arch.layers;
    // Absorbed MLA attends with H queries of kv_lora_rank + qk_rope over the latent.
    speed.attentionWidth = arch.mla.cachesLatent()
        ? std::uint64_t{arch.attentionHeads} * (std::uint64_t{arch.mla.kvLoraRank} + arch.mla.qkRopeHeadDim)
        : std::uint64_t{arch.attentionHeads} * arch.headDim;

    // Calibration (core/speed/calibration.h): the decode bandwidth from the batch-1 decode point
    // with the fewest cached tokens, the compute peak from the longest prefill.
    std::optional<std::size_t> bandwidthPoint, computePoint;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const Point& p = points[i];
        if (p.kind != Point::Prefill && p.batch == 1 && (!bandwidthPoint || p.tokens < points[*bandwidthPoint].tokens))
            bandwidthPoint = i;
        if (p.kind == Point::Prefill && (!computePoint || p.tokens > points[*computePoint].tokens))
            computePoint = i;
    }

    // Measure every point first (medians), then calibrate and judge. The two calibration points
    // take at least kCalibrationReps timed runs: every other row is predicted from their medians.
    const std::uint32_t reps = std::max<std::uint32_t>(options.reps, 1);
    const std::uint32_t calibrationReps = std::max(reps, kCalibrationReps);
    std::vector<double> medians(points.size()), cvs(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) {
        const Point& p = points[i];
        const bool calibrates = i == bandwidthPoint || i == computePoint;
        const std::uint32_t runs = calibrates ? calibrationReps : reps;
        progress.report(0.1 + 0.9 * static_cast<double>(i) / static_cast<double>(points.size()),
                        p.kind == Point::Prefill ? "prefill " + formatThousands(p.tokens) + " tokens"
                                                 : "decode batch " + std::to_string(p.batch) + " x " + formatThousands(p.tokens));
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
        for (std::uint32_t k = 0; k < options.warmup + runs; ++k) {
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
        medians[i] = detail::median(times);
        cvs[i] = detail::coefficientOfVariation(times);
    }

    const double calBandwidth = bandwidthPoint
        ? calibratedBandwidthGBps(speed, 1, points[*bandwidthPoint].tokens, medians[*bandwidthPoint]) : 0.0;
    const double calPeak = computePoint ? calibratedPeakTflops(speed, points[*computePoint].tokens, medians[*computePoint]) : 0.0;
    const SpeedInputs calibrated = calibrate(speed, SpeedCalibration{calBandwidth, calPeak});
    const double tolerance = kTimingTolerance;

    nlohmann::json decodeRows = nlohmann::json::array();
    nlohmann::json contextRows = nlohmann::json::array();
    nlohmann::json prefillRows = nlohmann::json::array();
    std::vector<std::pair<std::uint64_t, double>> throughput; // batch -> tokens/s
    std::vector<ProbeVerdict> rowVerdicts;
    double tpot = 0;
    std::size_t judged = 0, within = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const Point& p = points[i];
        const double ms = medians[i];
        const bool isCalibration = (bandwidthPoint && i == *bandwidthPoint) || (computePoint && i == *computePoint);
        const double predicted = p.kind == Point::Prefill ? headroom::prefill(calibrated, p.tokens).stepMs
                                                          : headroom::decodeStep(calibrated, p.batch, p.tokens).stepMs;
        const ProbeVerdict verdict = isCalibration ? ProbeVerdict::Measured : timingRowVerdict(ms, predicted, tolerance);
        nlohmann::json j;
        if (p.kind == Point::Prefill)
            j = {{"prompt_tokens", p.tokens}, {"ttft_ms", ms}, {"tokens_per_s", ms > 0 ? 1e3 * static_cast<double>(p.tokens) / ms : 0.0},
                 {"predicted_ttft_ms", predicted}};
        else
            j = {{"batch", p.batch}, {"context_tokens", p.tokens}, {"step_ms", ms},
                 {"tokens_per_s", ms > 0 ? 1e3 * static_cast<double>(p.batch) / ms : 0.0}, {"predicted_step_ms", predicted}};
        j["ratio"] = predicted > 0 ? ms / predicted : 0.0;
        j["verdict"] = probeVerdictName(verdict);
        if (isCalibration)
            j["calibration"] = true;
        j["cv"] = cvs[i];
        if (verdict != ProbeVerdict::Measured) {
            ++judged;
            within += verdict == ProbeVerdict::Pass;
        }
        rowVerdicts.push_back(verdict);
        if (p.kind == Point::Prefill) {
            prefillRows.push_back(j);
        } else if (p.kind == Point::Batch) {
            decodeRows.push_back(j);
            throughput.emplace_back(p.batch, ms > 0 ? 1e3 * static_cast<double>(p.batch) / ms : 0.0);
            if (p.batch == 1)
                tpot = ms;
        } else {
            contextRows.push_back(j);
            if (tpot == 0 && p.batch == 1)
                tpot = ms;
        }
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
    r.set("step_expert_bytes", model.stepExpertBytes());
    r.set("step_token_weight_bytes", model.stepTokenWeightBytes());
    r.set("calibrated_bandwidth_gbps", calBandwidth);
    r.set("calibrated_peak_tflops", calPeak);
    if (options.bandwidthGBps > 0) {
        r.set("read_bandwidth_gbps", options.bandwidthGBps);
        r.set("bandwidth_fraction", calBandwidth / options.bandwidthGBps);
    }
    r.set("tolerance_fraction", tolerance);
    r.set("rows_judged", static_cast<std::uint64_t>(judged));
    r.set("rows_within_tolerance", static_cast<std::uint64_t>(within));
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
    const auto predictedKnee = headroom::kneeBatch(calibrated, batchContext);
    r.set("predicted_knee_batch", predictedKnee ? ProbeValue{*predictedKnee} : ProbeValue{RawJson{"null"}});

    char cal[400];
    std::snprintf(cal, sizeof cal,
                  "speed model calibrated by this probe: decode bandwidth %.2f GB/s from the batch-1 step at %s tokens%s; "
                  "compute peak %.3f TFLOP/s from the %s-token prefill; every other row is predicted by the calibrated "
                  "roofline max(bytes / bandwidth, FLOPs / peak) and judged against +-%.0f %%",
                  calBandwidth, bandwidthPoint ? formatThousands(points[*bandwidthPoint].tokens).c_str() : "-",
                  options.bandwidthGBps > 0 ? (" (" + std::to_string(static_cast<int>(100 * calBandwidth / options.bandwidthGBps + 0.5))
                                               + " % of the device probe's read bandwidth)").c_str() : "",
                  calPeak, computePoint ? formatThousands(points[*computePoint].tokens).c_str() : "no",
                  100 * tolerance);
    r.notes.push_back(cal);
    r.notes.push_back(std::string(device.kind() == DeviceKind::Cuda ? "CUDA events" : "steady clock") + "; median of "
                      + std::to_string(reps) + " after " + std::to_string(options.warmup) + " warm-up runs per point ("
                      + std::to_string(calibrationReps) + " for the two calibration points)");
    r.notes.push_back("prefill runs the prompt in chunks of 64 tokens: batched GEMVs and causal decode attention (token i "
                      "attends to tokens 0..i); TTFT = prefill time; TPOT = decode step at batch 1");
    r.notes.push_back("knee: first batch of the sweep whose next point adds < 15 % tokens/s (null: not reached in the sweep)");
    r.setVerdict(combineVerdicts(rowVerdicts));
    char line[300];
    std::snprintf(line, sizeof line, "TPOT %.2f ms (%.1f tokens/s at batch 1), knee %s; %zu of %zu rows within +-%.0f %% of the calibrated model",
                  tpot, tpot > 0 ? 1e3 / tpot : 0.0, knee ? ("at batch " + std::to_string(*knee)).c_str() : "not reached",
                  within, judged, 100 * tolerance);
    r.summary = line;
    return r;
}

} // namespace headroom::probes
