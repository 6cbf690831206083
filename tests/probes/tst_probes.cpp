// The probes on the CPU backend, end to end: device facts, the budget cap, allocation exactness,
// the limit search (within 1 % of the prediction, never above), cancellation within a second,
// child-process crashes, the JSON document, timing and quantization error.

#include <catch2/catch.hpp>

#include "fixtures.h"

#include "headroom/core/importers/ggufreader.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/profiles.h"
#include "headroom/core/parameters.h"
#include "headroom/core/speed/roofline.h"
#include "headroom/probes/moerouting.h"
#include "headroom/probes/probes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <random>
#include <thread>

using namespace headroom;
using namespace headroom::probes;

namespace {

const ProfileSet& profiles()
{
    static const ProfileSet set = [] {
        auto loaded = loadProfiles(test::sourcePath("profiles"));
        REQUIRE(loaded);
        return *loaded;
    }();
    return set;
}

/// qwen2.5-0.5b (24 layers, 14 heads, 2 KV heads of 64: 12,288 B/token in fp16).
ModelInputs qwen(const std::string& format = "bf16", std::uint64_t context = 0, std::uint64_t users = 1)
{
    const ModelProfile* m = profiles().findModel("qwen2.5-0.5b");
    REQUIRE(m);
    ModelInputs in;
    in.model = *m;
    in.format = *findFormat(format);
    in.kvDtype = *findKvDtype("fp16");
    in.contextTokens = context;
    in.users = users;
    return in;
}

/// A tiny llama-style model for the fast timing and cancellation tests.
ModelInputs tiny()
{
    Architecture a;
    a.family = "llama";
    a.layers = 2;
    a.hiddenSize = 256;
    a.attentionHeads = 4;
    a.kvHeads = 2;
    a.headDim = 64;
    a.intermediateSize = 512;
    a.vocabSize = 1000;
    a.contextLength = 4096;
    ModelInputs in;
    in.model.id = "tiny";
    in.model.name = "tiny";
    in.model.architecture = a;
    in.format = *findFormat("int4-g128");
    in.kvDtype = *findKvDtype("fp16");
    return in;
}

std::unique_ptr<Device> cpu(std::optional<Bytes> budget = std::nullopt)
{
    auto d = openDevice(DeviceSpec{DeviceKind::Cpu, 0});
    REQUIRE(d);
    (*d)->setBudget(budget);
    return std::move(*d);
}

/// Cancels once @p after has passed since construction; records when it first said so.
struct TimedCancel final : ProbeProgress {
    explicit TimedCancel(std::chrono::milliseconds after) : deadline(std::chrono::steady_clock::now() + after) {}
    void report(double, std::string_view) override {}
    bool cancelled() const override
    {
        if (std::chrono::steady_clock::now() < deadline)
            return false;
        if (!fired) {
            fired = true;
            firedAt = std::chrono::steady_clock::now();
        }
        return true;
    }
    std::chrono::steady_clock::time_point deadline;
    mutable bool fired = false;
    mutable std::chrono::steady_clock::time_point firedAt;
};

} // namespace

TEST_CASE("device specs parse", "[probes][device]")
{
    CHECK(parseDeviceSpec("cpu")->kind == DeviceKind::Cpu);
    CHECK(parseDeviceSpec("cuda")->index == 0);
    CHECK(parseDeviceSpec("cuda:3")->index == 3);
    CHECK_FALSE(parseDeviceSpec("cuda:"));
    CHECK_FALSE(parseDeviceSpec("cuda:-1"));
    CHECK_FALSE(parseDeviceSpec("gpu"));
    CHECK(toString(DeviceSpec{DeviceKind::Cuda, 2}) == "cuda:2");
    CHECK(parseProbeList("all")->size() == 5);
    CHECK(parseProbeList("limit,allocation")->front() == ProbeKind::Limit);
    CHECK_FALSE(parseProbeList("limit,bogus"));
}

TEST_CASE("CPU device facts", "[probes][device]")
{
    auto d = cpu();
    CHECK_FALSE(d->name().empty());
    auto info = d->memoryInfo();
    REQUIRE(info);
    CHECK(info->totalBytes.value > 0);
    CHECK(info->freeBytes.value > 0);
    CHECK(info->freeBytes <= info->totalBytes);

    DeviceProbeOptions options;
    options.copyBytes = Bytes{32ull << 20}; // small for the test; the CLI uses max(8 x cache, 256 MiB)
    NullProgress progress;
    const ProbeResult r = runDeviceProbe(*d, options, progress);
    INFO(probeResultToJson(r));
    CHECK(r.pass);
    CHECK(r.integer("context_overhead_bytes") == 0u);
    CHECK(r.integer("copy_buffer_bytes") == (32ull << 20));
    CHECK(r.number("copy_bandwidth_gbps").value_or(0) > 0);
    CHECK(r.number("read_bandwidth_gbps").value_or(0) > 0);
    CHECK(r.integer("reps") == 20u);
    CHECK(d->allocatedBytes().value == 0); // the probe freed its buffers
}

TEST_CASE("no CUDA device is reported cleanly", "[probes][device]")
{
    std::string why;
    if (cudaDeviceCount(&why) > 0) {
        WARN("a CUDA device is present; the no-device path is not exercised here");
        return;
    }
    CHECK_FALSE(why.empty());
    auto d = openDevice(DeviceSpec{DeviceKind::Cuda, 0});
    REQUIRE_FALSE(d);
    CHECK(d.error().code == DeviceError::Code::NoDevice);
    CHECK_THAT(d.error().message, Catch::Contains("no CUDA device"));

    ProbeRequest request;
    request.device = DeviceSpec{DeviceKind::Cuda, 0};
    request.model = tiny();
    request.probes = {ProbeKind::Device, ProbeKind::Allocation};
    NullProgress progress;
    const ProbeReport report = runProbes(request, progress);
    CHECK_THAT(report.device.error, Catch::Contains("no CUDA device"));
    REQUIRE(report.results.size() == 2);
    CHECK_FALSE(report.results[0].pass);
    CHECK_FALSE(report.allPassed());
}

TEST_CASE("the budget cap refuses past N bytes and counts exactly", "[probes][device]")
{
    auto d = cpu(Bytes{1 << 20});
    auto a = d->allocate(Bytes{600'000}, "a");
    REQUIRE(a);
    CHECK(d->allocatedBytes().value == 600'000);
    auto b = d->allocate(Bytes{(1 << 20) - 600'000 + 1}, "b"); // one byte too many
    REQUIRE_FALSE(b);
    CHECK(b.error().code == DeviceError::Code::OutOfBudget);
    CHECK_THAT(b.error().message, Catch::Contains("would pass the budget of 1,048,576 B"));
    CHECK(d->allocatedBytes().value == 600'000); // a refusal allocates nothing
    auto c = d->allocate(Bytes{(1 << 20) - 600'000}, "c"); // exactly to the cap
    REQUIRE(c);
    CHECK(d->allocatedBytes().value == (1u << 20));
    CHECK(d->release(*a));
    CHECK(d->release(*c));
    CHECK(d->allocatedBytes().value == 0);
    CHECK(d->peakBytes().value == (1u << 20));
    CHECK_FALSE(d->release(reinterpret_cast<void*>(0x1000))); // not ours
    CHECK_FALSE(d->allocate(Bytes{0}, "empty"));
}

TEST_CASE("allocation bytes equal the formula's exactly (qwen2.5-0.5b, 2 GiB)", "[probes][allocation]")
{
    auto d = cpu(Bytes{2ull << 30});
    NullProgress progress;

    SECTION("bf16 weights, one user at the model's 32,768 tokens")
    {
        const ProbeResult r = runAllocationProbe(*d, qwen("bf16"), progress);
        INFO(probeResultToJson(r));
        CHECK(r.pass);
        CHECK(r.integer("kv_bytes_per_token") == 12'288u);
        CHECK(r.integer("predicted_kv_bytes") == 32'768u * 12'288u);
        CHECK(r.integer("measured_kv_bytes") == 32'768u * 12'288u);
        CHECK(r.integer("measured_bytes") == r.integer("predicted_bytes"));
        CHECK(r.integer("measured_weights_bytes") == r.integer("predicted_weights_bytes"));
    }
    SECTION("int4-g128 weights, 3 users x 1,000 tokens rounded to 16-token blocks")
    {
        const ProbeResult r = runAllocationProbe(*d, qwen("int4-g128", 1000, 3), progress);
        INFO(probeResultToJson(r));
        CHECK(r.pass);
        CHECK(r.integer("measured_kv_bytes") == 3u * 1008u * 12'288u);
        CHECK(r.integer("measured_bytes") == r.integer("predicted_bytes"));
    }
    SECTION("a cache past the budget is a result, not a crash")
    {
        const ProbeResult r = runAllocationProbe(*d, qwen("bf16", 32768, 8), progress);
        CHECK_FALSE(r.pass);
        CHECK_THAT(r.summary, Catch::Contains("does not fit"));
    }
    CHECK(d->allocatedBytes().value == 0);
}

TEST_CASE("the verified limit is within 1% of the prediction and never above it", "[probes][limit]")
{
    LimitProbeOptions options;
    options.stepLayers = 2;        // the step's cost on 2 shared cores; memory is allocated for all 24
    options.maxFrontierPoints = 3; // users 1, 2, 4
    NullProgress progress;
    const ProbeResult r = runLimitProbe(DeviceSpec{DeviceKind::Cpu, 0}, Bytes{2ull << 30}, qwen("bf16"), options, progress);
    INFO(probeResultToJson(r));
    REQUIRE(r.integer("predicted_tokens"));
    REQUIRE(r.integer("verified_tokens"));
    const std::uint64_t predicted = *r.integer("predicted_tokens");
    const std::uint64_t verified = *r.integer("verified_tokens");
    CHECK(verified <= predicted);
    CHECK(static_cast<double>(verified) >= 0.99 * static_cast<double>(predicted));
    CHECK(predicted > 80'000); // (2 GiB - 942 MiB bf16 weights - scratch) / 12,288 B
    CHECK(r.pass);
    CHECK(r.integer("frontier_points_checked") == 3u);
    CHECK(r.integer("step_layers") == 2u);
    // As few full-cache steps as the proof needs: the pool allocated once at the prediction, one
    // more block refused, one step at the limit and one per frontier point.
    CHECK(r.integer("allocation_trials") == 2u);
    CHECK(r.integer("full_steps") == 4u);
    CHECK(r.integer("frontier_step_layers") == 1u); // 24 layers of one kind: the frontier steps run layer 0
    CHECK(r.verdict() == ProbeVerdict::Pass);
    CHECK_THAT(r.text("first_failure").value_or(""), Catch::Contains("would pass the budget"));
}

TEST_CASE("a limit probe the kernels cannot run is 'not supported'", "[probes][limit]")
{
    ModelInputs in = qwen("bf16");
    in.kvDtype = *findKvDtype("q8_0");
    NullProgress progress;
    const ProbeResult r = runLimitProbe(DeviceSpec{DeviceKind::Cpu, 0}, Bytes{2ull << 30}, in, {}, progress);
    CHECK_FALSE(r.pass);
    CHECK_FALSE(r.supported);
    CHECK(r.verdict() == ProbeVerdict::NotSupported);
    CHECK(nlohmann::json::parse(probeResultToJson(r))["verdict"] == "not-supported");
    CHECK_THAT(r.summary, Catch::Contains("q8_0"));
}

TEST_CASE("a crash in the limit search's child becomes a failed result", "[probes][limit][child]")
{
    NullProgress progress;
    LimitProbeOptions options;
    SECTION("SIGSEGV")
    {
        options.testHook = ChildTestHook::Crash;
        const ProbeResult r = runLimitProbe(DeviceSpec{DeviceKind::Cpu, 0}, Bytes{1 << 30}, tiny(), options, progress);
        CHECK_FALSE(r.pass);
        CHECK_THAT(r.summary, Catch::Contains("SIGSEGV"));
    }
    SECTION("abort")
    {
        options.testHook = ChildTestHook::Abort;
        const ProbeResult r = runLimitProbe(DeviceSpec{DeviceKind::Cpu, 0}, Bytes{1 << 30}, tiny(), options, progress);
        CHECK_FALSE(r.pass);
        CHECK_THAT(r.summary, Catch::Contains("SIGABRT"));
    }
    SECTION("a worker that cannot be executed")
    {
        options.isolation.mode = Isolation::Mode::Exec;
        options.isolation.workerCommand = {"/nonexistent/headroom-cli", "probe-worker"};
        const ProbeResult r = runLimitProbe(DeviceSpec{DeviceKind::Cpu, 0}, Bytes{1 << 30}, tiny(), options, progress);
        CHECK_FALSE(r.pass);
        CHECK_THAT(r.summary, Catch::Contains("cannot run the worker"));
    }
}

TEST_CASE("cancellation is honoured within a second", "[probes][cancel]")
{
    using namespace std::chrono;
    SECTION("a hung child is killed")
    {
        LimitProbeOptions options;
        options.testHook = ChildTestHook::Hang;
        TimedCancel cancel(milliseconds(300));
        const ProbeResult r = runLimitProbe(DeviceSpec{DeviceKind::Cpu, 0}, Bytes{1 << 30}, tiny(), options, cancel);
        const auto returned = steady_clock::now();
        CHECK(r.cancelled);
        CHECK_FALSE(r.pass);
        REQUIRE(cancel.fired);
        CHECK(duration_cast<milliseconds>(returned - cancel.firedAt).count() < 1000);
    }
    SECTION("the in-process probes stop between steps")
    {
        TimedCancel cancel(milliseconds(100));
        ProbeRequest request;
        request.device = DeviceSpec{DeviceKind::Cpu, 0};
        request.budget = Bytes{2ull << 30};
        request.model = qwen("bf16");
        request.probes = {ProbeKind::Allocation, ProbeKind::Limit, ProbeKind::Timing};
        const auto start = steady_clock::now();
        const ProbeReport report = runProbes(request, cancel);
        const auto returned = steady_clock::now();
        REQUIRE(cancel.fired);
        CHECK(duration_cast<milliseconds>(returned - cancel.firedAt).count() < 1000);
        CHECK(duration_cast<milliseconds>(returned - start).count() < 3000);
        for (const ProbeResult& r : report.results)
            CHECK(r.cancelled);
    }
}

TEST_CASE("the JSON document has the device, each probe's pass and the predicted/measured keys", "[probes][json]")
{
    ProbeRequest request;
    request.device = DeviceSpec{DeviceKind::Cpu, 0};
    request.budget = Bytes{1ull << 30};
    request.model = tiny();
    request.model.contextTokens = 1000;
    request.model.users = 2;
    request.probes = {ProbeKind::Allocation, ProbeKind::Limit};
    request.limitOptions.maxFrontierPoints = 2;
    NullProgress progress;
    const ProbeReport report = runProbes(request, progress);
    const std::string text = probeResultsToJson(report.device, report.results);
    const nlohmann::json j = nlohmann::json::parse(text);
    INFO(text);
    CHECK(j["schema_version"] == 1);
    CHECK(j["device"]["spec"] == "cpu");
    CHECK(j["device"]["budget_bytes"] == (1ull << 30));
    CHECK(j["device"]["total_bytes"].get<std::uint64_t>() > 0);
    REQUIRE(j["results"].size() == 2);
    for (const auto& r : j["results"]) {
        CHECK(r.contains("probe"));
        CHECK(r["pass"] == true);
    }
    const auto& alloc = j["results"][0];
    CHECK(alloc["probe"] == "allocation");
    CHECK(alloc["predicted_bytes"] == alloc["measured_bytes"]);
    const auto& limit = j["results"][1];
    CHECK(limit["probe"] == "limit");
    CHECK(limit["verified_tokens"].get<std::uint64_t>() <= limit["predicted_tokens"].get<std::uint64_t>());
    CHECK(limit["frontier"].is_array());
    CHECK(j["pass"] == true);

    // The child's answer round-trips through JSON.
    const auto back = probeResultFromJson(probeResultToJson(report.results[1], -1));
    REQUIRE(back);
    CHECK(back->probe == "limit");
    CHECK(back->integer("verified_tokens") == report.results[1].integer("verified_tokens"));
    CHECK(back->notes == report.results[1].notes);
}

TEST_CASE("timing: decode against batch and context, prefill, TTFT, TPOT and the knee", "[probes][timing]")
{
    auto d = cpu(Bytes{1ull << 30});
    TimingProbeOptions options;
    options.batches = {1, 2, 4};
    options.contexts = {16, 256};
    options.prompts = {16, 100};
    options.warmup = 1;
    options.reps = 3;
    options.bandwidthGBps = 10;
    NullProgress progress;
    const ProbeResult r = runTimingProbe(*d, tiny(), options, progress);
    INFO(probeResultToJson(r));
    // Times on a shared machine are measurements: the verdict is whatever the stated tolerance
    // gives, so the test checks that each row's verdict follows from its own figures.
    CHECK((r.verdict() == ProbeVerdict::Pass || r.verdict() == ProbeVerdict::Fail));
    CHECK(r.number("tolerance_fraction") == kTimingTolerance);
    CHECK(r.number("calibrated_bandwidth_gbps").value_or(0) > 0);
    CHECK(r.number("calibrated_peak_tflops").value_or(0) > 0);
    CHECK(r.integer("rows_judged") == 5u); // 7 points, 2 of them calibrate the model
    const auto decode = nlohmann::json::parse(std::get<RawJson>(*r.find("decode")).text);
    const auto context = nlohmann::json::parse(std::get<RawJson>(*r.find("context")).text);
    const auto prefill = nlohmann::json::parse(std::get<RawJson>(*r.find("prefill")).text);
    REQUIRE(decode.size() == 3);
    CHECK(context.size() == 2);
    CHECK(prefill.size() == 2);
    for (const auto& row : decode) {
        CHECK(row["step_ms"].get<double>() > 0);
        CHECK(row["tokens_per_s"].get<double>() > 0);
        CHECK(row.contains("predicted_step_ms"));
    }
    CHECK(prefill[1]["prompt_tokens"] == 100);
    CHECK(prefill[1]["ttft_ms"].get<double>() > 0);
    // Calibration: the batch-1 step with the fewest tokens (context 16) and the longest prefill.
    CHECK(context[0]["calibration"] == true);
    CHECK(context[0]["verdict"] == "measured");
    // Its prediction is max(bytes / calibrated bandwidth, FLOPs / calibrated peak): the measured
    // time itself, or more when the compute term of one token (the peak from the median of 7
    // prefills) is the larger one. A batched prefill costs less a token than a decode step (here
    // 0.05-0.25 ms a token against 0.27-0.39 ms a step in 5 runs at load 11 on 2 cores, every
    // ratio 1.0), so the row must stay within the timing tolerance: ratio in [0.75, 1].
    CHECK(context[0]["ratio"].get<double>() <= 1.0 + 1e-9);
    CHECK(context[0]["ratio"].get<double>() >= 1.0 - kTimingTolerance);
    CHECK(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& note) {
        return note.find("median of 3 after 1 warm-up runs per point (7 for the two calibration points)") != std::string::npos;
    }));
    CHECK(prefill[1]["calibration"] == true);
    CHECK(prefill[1]["ratio"].get<double>() == Approx(1.0));
    std::size_t within = 0;
    for (const auto* rows : {&decode, &context, &prefill})
        for (const auto& row : *rows) {
            if (row.value("calibration", false))
                continue;
            const bool ok = std::abs(row["ratio"].get<double>() - 1.0) <= kTimingTolerance;
            CHECK(row["verdict"] == (ok ? "pass" : "fail"));
            within += ok;
        }
    CHECK(r.integer("rows_within_tolerance") == within);
    CHECK(r.pass == (within == 5));
    // report --check's rule agrees with the probe's own verdicts.
    const std::string doc = probeResultsToJson(DeviceSummary{}, {r});
    CHECK(recheckProbeVerdicts(doc).empty());
    CHECK(r.number("tpot_ms").value_or(0) > 0);
    CHECK(r.find("knee_batch"));
    CHECK(d->allocatedBytes().value == 0);
}

TEST_CASE("quantization error matches the BRIEF anchors on N(0,1) and grows with outliers", "[probes][quant]")
{
    NullProgress progress;
    const ProbeResult r = runQuantErrorProbe(QuantErrorOptions{}, progress);
    INFO(probeResultToJson(r));
    CHECK(r.pass);
    const auto rows = nlohmann::json::parse(std::get<RawJson>(*r.find("formats")).text);
    REQUIRE(rows.size() == 9);
    for (const auto& row : rows) {
        if (row.contains("anchor_error"))
            CHECK(std::abs(row["gaussian_error"].get<double>() - row["anchor_error"].get<double>()) <= 0.003);
        CHECK(row["outlier_error"].get<double>() >= row["gaussian_error"].get<double>());
    }
    CHECK(rows[3]["format"] == "int4-g128");
    CHECK(rows[3]["bits_per_weight"].get<double>() == Approx(4.125));
}

TEST_CASE("quant-error on the real weights of a GGUF file", "[probes][quant]")
{
    const auto path = headroom::test::fixture("gguf/stories260K.gguf");
    HEADROOM_REQUIRE_FIXTURE(path);
    headroom::probes::QuantErrorOptions options;
    options.rows = 64; // a small synthetic matrix: this test is about the real ones
    options.cols = 256;
    options.ggufPath = path.string();
    headroom::probes::NullProgress progress;
    const auto r = headroom::probes::runQuantErrorProbe(options, progress);
    INFO(r.summary);
    const auto* real = r.find("real_weights");
    REQUIRE(real != nullptr);
    const auto rows = nlohmann::json::parse(std::get<headroom::probes::RawJson>(*real).text);
    // Every 2-D tensor of stories260K is f32 (SOURCES.md: 48 tensors, all F32, 1-D norms aside).
    const auto file = headroom::readGguf(path);
    REQUIRE(file);
    int matrices = 0;
    for (const auto& t : file->tensors)
        matrices += t.shape.size() == 2 ? 1 : 0;
    REQUIRE(rows.size() == 9);
    for (const auto& row : rows) {
        INFO(row.dump());
        CHECK(row.at("matrices").get<int>() == matrices);
        CHECK(row.at("mean_error").get<double>() > 0.0);
        CHECK(row.at("worst_error").get<double>() >= row.at("mean_error").get<double>());
    }
    // Granularity orders the errors on real weights as on synthetic ones (BRIEF §3).
    const auto mean = [&](const char* id) {
        for (const auto& row : rows)
            if (row.at("format") == id)
                return row.at("mean_error").get<double>();
        return -1.0;
    };
    CHECK(mean("int8-row") < mean("int4-g128"));
    CHECK(mean("int4-g128") < mean("int4-row"));
    CHECK(mean("int4-row") < mean("int4"));
}

TEST_CASE("report --check's verdict rules catch a verdict its values do not give", "[probes][verdict]")
{
    CHECK(allocationVerdict(10, 10) == ProbeVerdict::Pass);
    CHECK(allocationVerdict(11, 10) == ProbeVerdict::Fail);
    CHECK(limitVerdict(1600, 1600, 16, 3, 3) == ProbeVerdict::Pass);
    CHECK(limitVerdict(1584, 1600, 16, 0, 0) == ProbeVerdict::Pass);   // one block under
    CHECK(limitVerdict(1568, 1600, 16, 0, 0) == ProbeVerdict::Fail);   // two blocks and > 1 % under
    CHECK(limitVerdict(1616, 1600, 16, 0, 0) == ProbeVerdict::Fail);   // above the prediction
    CHECK(limitVerdict(1600, 1600, 16, 3, 2) == ProbeVerdict::Fail);   // a frontier point did not run
    CHECK(timingRowVerdict(125, 100) == ProbeVerdict::Pass);
    CHECK(timingRowVerdict(126, 100) == ProbeVerdict::Fail);
    CHECK(timingRowVerdict(74, 100) == ProbeVerdict::Fail);
    CHECK(timingRowVerdict(100, 0) == ProbeVerdict::Measured);
    CHECK(timingRowVerdict(100, 100, 0) == ProbeVerdict::Measured);
    CHECK(combineVerdicts({ProbeVerdict::Measured, ProbeVerdict::Pass}) == ProbeVerdict::Pass);
    CHECK(combineVerdicts({ProbeVerdict::Measured}) == ProbeVerdict::Measured);
    CHECK(combineVerdicts({ProbeVerdict::Pass, ProbeVerdict::Fail}) == ProbeVerdict::Fail);

    const char* doc = R"({"results": [
        {"probe": "allocation", "verdict": "pass", "measured_bytes": 10, "predicted_bytes": 10},
        {"probe": "limit", "verdict": "pass", "verified_tokens": 1600, "predicted_tokens": 1600, "block_tokens": 16,
         "frontier": [{"verified": true}, {"verified": false}]},
        {"probe": "timing", "verdict": "pass", "tolerance_fraction": 0.25,
         "decode": [{"step_ms": 10, "predicted_step_ms": 10, "calibration": true, "verdict": "measured"},
                    {"step_ms": 20, "predicted_step_ms": 10, "verdict": "pass"}]},
        {"probe": "limit", "verdict": "not-supported"}]})";
    const auto problems = recheckProbeVerdicts(doc);
    REQUIRE(problems.size() == 2);
    CHECK_THAT(problems[0], Catch::Contains("results[1] (limit): recorded pass, its values give fail"));
    CHECK_THAT(problems[1], Catch::Contains("decode[1] recorded pass, its times give fail"));
    CHECK(recheckProbeVerdicts("[1]").size() == 1);
    CHECK(recheckProbeVerdicts(R"({"results": [{"probe": "timing"}]})").size() == 1);
}

TEST_CASE("a budget above the free memory is refused before anything is allocated", "[probes][budget]")
{
    CHECK(budgetRefusal(DeviceKind::Cpu, Bytes{2ull << 30}, Bytes{4ull << 30}).empty());
    CHECK_THAT(budgetRefusal(DeviceKind::Cpu, Bytes{8ull << 30}, Bytes{4ull << 30}),
               Catch::Contains("larger than the device's free memory, 4.00 GiB (MemAvailable"));
    CHECK_THAT(budgetRefusal(DeviceKind::Cuda, Bytes{8ull << 30}, Bytes{4ull << 30}), Catch::Contains("cudaMemGetInfo"));
    ProbeRequest request;
    request.device = DeviceSpec{};
    request.budget = Bytes{std::uint64_t{1} << 50};
    request.model = tiny();
    request.probes = {ProbeKind::Allocation, ProbeKind::Limit};
    NullProgress progress;
    const ProbeReport report = runProbes(request, progress);
    CHECK_THAT(report.device.error, Catch::Contains("larger than the device's free memory"));
    REQUIRE(report.results.size() == 2);
    CHECK(report.results[1].verdict() == ProbeVerdict::Fail);
    CHECK_FALSE(report.allPassed());
}

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

namespace {

/// In the probe's parent: once the child hangs, send its PID up the pipe and die with SIGKILL.
class DieWhenChildHangs final : public ProbeProgress {
public:
    explicit DieWhenChildHangs(int fd) : m_fd(fd) {}
    void report(double, std::string_view stage) override
    {
        if (stage.find("hanging") == std::string_view::npos)
            return;
        std::ifstream children("/proc/self/task/" + std::to_string(::getpid()) + "/children");
        pid_t child = 0;
        children >> child;
        (void)!::write(m_fd, &child, sizeof child);
        ::raise(SIGKILL);
    }
    bool cancelled() const override { return false; }

private:
    int m_fd;
};

} // namespace

TEST_CASE("hostile 8: the probe's child dies with its parent (kill -9 of the parent)", "[probes][hostile]")
{
    // Orphans are re-parented to this test (a subreaper), so that it can wait for the child.
    REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::fflush(nullptr);
    const pid_t parent = ::fork();
    if (parent == 0) {
        ::close(fds[0]);
        DieWhenChildHangs progress(fds[1]);
        LimitProbeOptions options;
        options.testHook = ChildTestHook::Hang;
        (void)runLimitProbe(DeviceSpec{DeviceKind::Cpu, 0}, Bytes{1 << 30}, tiny(), options, progress);
        ::_exit(3); // not reached: the progress kills this process
    }
    ::close(fds[1]);
    pid_t child = 0;
    const bool got = ::read(fds[0], &child, sizeof child) == static_cast<ssize_t>(sizeof child);
    ::close(fds[0]);
    int status = 0;
    ::waitpid(parent, &status, 0);
    REQUIRE(got);
    REQUIRE(child > 0);
    CHECK(WIFSIGNALED(status));
    // Bound: the hung child (it would loop forever) must be gone within 5 s of its parent's death.
    bool reaped = false;
    for (int i = 0; i < 500 && !reaped; ++i) {
        if (::waitpid(child, &status, WNOHANG) == child)
            reaped = true;
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!reaped)
        ::kill(child, SIGKILL);
    CHECK(reaped);
    if (reaped) {
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == SIGKILL);
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

#include "headroom/core/architecturetext.h"

TEST_CASE("hostile 9: an architecture out of range is refused by the probes before the device is opened", "[probes][hostile]")
{
    // A model's architecture comes from a user's file, profile or work order: 0 layers, a head
    // dimension of 0, heads that KV heads do not divide, or absurd sizes would size allocations
    // (a billion layers x the KV of each) from it. Each is refused with the problem named, before
    // the device is opened: no device name in the report, so nothing was allocated on it.
    struct Case {
        const char* what;
        void (*spoil)(Architecture&);
        const char* problem;
    };
    const Case cases[] = {
        {"0 layers", [](Architecture& a) { a.layers = 0; }, "layers"},
        {"head_dim 0", [](Architecture& a) { a.headDim = 0; }, "head"},
        {"kv heads that do not divide the heads", [](Architecture& a) { a.kvHeads = 3; }, "does not divide"},
        {"a billion layers", [](Architecture& a) { a.layers = 1'000'000'000; }, "layers"},
        {"a hidden size of 2^30", [](Architecture& a) { a.hiddenSize = 1u << 30; }, "hidden"},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        ModelInputs model = tiny();
        c.spoil(*model.model.architecture);
        REQUIRE_FALSE(validateArchitecture(*model.model.architecture).empty());
        ProbeRequest request;
        request.device = DeviceSpec{DeviceKind::Cpu, 0};
        request.model = model;
        request.probes = {ProbeKind::Allocation, ProbeKind::Limit, ProbeKind::Timing};
        NullProgress progress;
        const auto start = std::chrono::steady_clock::now();
        const ProbeReport report = runProbes(request, progress);
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1)); // refused, not run
        CHECK(report.device.name.empty()); // the device was never opened
        REQUIRE(report.results.size() == 3);
        for (const ProbeResult& r : report.results) {
            CHECK(r.verdict() == ProbeVerdict::Fail);
            CHECK_THAT(r.summary, Catch::StartsWith("the model's architecture is out of range: ") && Catch::Contains(c.problem));
        }

        // The same architecture in a work order on the worker's stdin (the exec'd child).
        nlohmann::json order = {{"task", "limit"},
                                {"device", "cpu"},
                                {"budget_bytes", nullptr},
                                {"model", {{"id", "tiny"}, {"name", "tiny"},
                                           {"architecture", nlohmann::json::parse(architectureToJsonText(*model.model.architecture))}}},
                                {"format", "int4-g128"},
                                {"kv_dtype", "fp16"},
                                {"context_tokens", 4096},
                                {"users", 1},
                                {"verify_frontier", false},
                                {"max_frontier_points", 4},
                                {"step_layers", 1},
                                {"test_hook", "none"}};
        int in[2], out[2];
        REQUIRE(::pipe(in) == 0);
        REQUIRE(::pipe(out) == 0);
        const std::string text = order.dump();
        REQUIRE(::write(in[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
        ::close(in[1]);
        CHECK(runProbeWorker(in[0], out[1]) == 0);
        ::close(in[0]);
        ::close(out[1]);
        std::string reply;
        char buf[4096];
        for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
            reply.append(buf, static_cast<std::size_t>(n));
        ::close(out[0]);
        INFO(reply);
        const std::size_t line = reply.rfind("R ");
        REQUIRE(line != std::string::npos);
        const auto result = nlohmann::json::parse(reply.substr(line + 2));
        CHECK(result["pass"] == false);
        CHECK_THAT(result.dump(), Catch::Contains("work order: ") && Catch::Contains(c.problem));
    }
}

namespace {

/// A Qwen3-MoE-shaped tiny model (modeling_qwen3_moe.py: every layer MoE, no shared expert,
/// q/k norms; Qwen3-30B-A3B has 128 experts, 8 a token, 4 KV heads of 128 for 32 heads): 8
/// heads on 2 KV heads (GQA 4), 16 experts of 96, 4 a token.
ModelInputs tinyQwen3Moe(const std::string& format = "q4_0")
{
    ModelInputs in = tiny();
    Architecture& a = *in.model.architecture;
    a.family = "qwen3_moe";
    a.attentionHeads = 8;
    a.kvHeads = 2;
    a.headDim = 32;
    a.qkNorm = true;
    a.moe.expertCount = 16;
    a.moe.expertsPerToken = 4;
    a.moe.expertFfnSize = 96;
    in.model.id = in.model.name = "tiny-qwen3-moe";
    in.format = *findFormat(format);
    return in;
}

/// A DeepSeek-V2-Lite-shaped tiny model (modeling_deepseek.py; V2-Lite: 27 layers, 16 heads,
/// q_lora_rank null, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128, 64 routed experts of
/// 1408, 6 a token, 2 shared, first_k_dense_replace 1): 3 layers, the first dense.
ModelInputs tinyDeepseekV2Lite(const std::string& format = "q8_0", std::uint32_t qLoraRank = 0)
{
    ModelInputs in = tiny();
    Architecture& a = *in.model.architecture;
    a.family = "deepseek2";
    a.layers = 3;
    a.attentionHeads = 4;
    a.kvHeads = 4;
    a.headDim = 96; // qk_nope + qk_rope
    a.valueHeadDim = 64;
    a.mla.kvLoraRank = 128;
    a.mla.qkNopeHeadDim = 64;
    a.mla.qkRopeHeadDim = 32;
    a.mla.vHeadDim = 64;
    a.mla.qLoraRank = qLoraRank;
    a.moe.expertCount = 8;
    a.moe.expertsPerToken = 3;
    a.moe.sharedExperts = 2;
    a.moe.expertFfnSize = 64;
    a.moe.denseFirstLayers = 1;
    in.model.id = in.model.name = "tiny-deepseek-v2-lite";
    in.format = *findFormat(format);
    return in;
}

/// The bytes a decode step reads from matrices, from the tensor list: every matrix and router but
/// the token and position embeddings (read once a token, lookups) unless tied; of which routed experts.
std::pair<std::uint64_t, std::uint64_t> matrixBytes(const ModelInputs& in)
{
    std::uint64_t all = 0, experts = 0;
    const Architecture& a = *in.model.architecture;
    for (const TensorSpec& t : listTensors(a)) {
        if ((!t.isMatrix() && t.role != TensorRole::Router) || t.role == TensorRole::PositionEmbedding
            || (t.role == TensorRole::TokenEmbedding && !a.tiedEmbeddings))
            continue;
        const std::uint64_t b = tensorBytes(t, in.format).value;
        all += b;
        if (t.name.find("mlp.experts.") != std::string::npos)
            experts += b;
    }
    return {all, experts};
}

TimingProbeOptions smallTiming()
{
    TimingProbeOptions o;
    o.batches = {1, 4, 16};
    o.contexts = {16, 128};
    o.prompts = {16, 64};
    o.warmup = 1;
    o.reps = 2;
    return o;
}

} // namespace

TEST_CASE("MoE routing: the top-k of the logits, k distinct experts, ties spread as the speed model assumes", "[probes][moe]")
{
    std::mt19937 rng(7);
    std::normal_distribution<float> dist;
    // {tokens, experts, k}: odd sizes, Mixtral (8, 2), Qwen3-MoE (128, 8), DeepSeek-V2-Lite (64, 6).
    const std::uint32_t shapes[][3] = {{13, 7, 3}, {1, 8, 2}, {64, 128, 8}, {17, 64, 6}, {5, 5, 5}};
    for (const auto& sh : shapes) {
        const std::uint32_t tokens = sh[0], experts = sh[1], k = sh[2];
        INFO(tokens << " tokens, " << experts << " experts, top " << k);
        std::vector<float> logits(std::size_t{tokens} * experts);
        for (float& v : logits)
            v = dist(rng);
        const std::vector<std::uint32_t> picks = routeTopK(logits.data(), tokens, experts, k, 3);
        REQUIRE(picks.size() == std::size_t{tokens} * k);
        for (std::uint32_t t = 0; t < tokens; ++t) {
            // Reference: sort the token's experts by logit (distinct with probability 1).
            std::vector<std::uint32_t> order(experts);
            std::iota(order.begin(), order.end(), 0u);
            std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
                return logits[std::size_t{t} * experts + a] > logits[std::size_t{t} * experts + b];
            });
            for (std::uint32_t j = 0; j < k; ++j)
                CHECK(picks[std::size_t{t} * k + j] == order[j]);
        }
    }
    // Equal logits (the synthetic weights'): k distinct experts a token, and a batch of B touches
    // E (1 - (1 - k/E)^B) experts on average (expertsTouchedFraction).
    for (const auto& [experts, k, batch] : {std::tuple{64u, 6u, 4u}, std::tuple{128u, 8u, 16u}, std::tuple{8u, 2u, 3u}}) {
        INFO(experts << " experts, top " << k << ", batch " << batch);
        const std::vector<float> flat(std::size_t{batch} * experts, 0.25f);
        double touched = 0;
        const int trials = 400;
        for (int seed = 0; seed < trials; ++seed) {
            const std::vector<std::uint32_t> picks = routeTopK(flat.data(), batch, experts, k, static_cast<std::uint64_t>(seed));
            REQUIRE(picks.size() == std::size_t{batch} * k);
            std::vector<bool> seen(experts);
            for (std::uint32_t t = 0; t < batch; ++t) {
                std::vector<bool> mine(experts);
                for (std::uint32_t j = 0; j < k; ++j) {
                    const std::uint32_t e = picks[std::size_t{t} * k + j];
                    REQUIRE(e < experts);
                    CHECK_FALSE(mine[e]);
                    mine[e] = seen[e] = true;
                }
            }
            touched += static_cast<double>(std::count(seen.begin(), seen.end(), true));
        }
        const double expected = experts * expertsTouchedFraction(experts, k, batch);
        CHECK(touched / trials == Approx(expected).epsilon(0.03));
    }
    // NaN logits sort last; refused shapes give nothing.
    const float withNan[4] = {std::nanf(""), 1.0f, 3.0f, 2.0f};
    CHECK(routeTopK(withNan, 1, 4, 3, 0) == std::vector<std::uint32_t>{2, 3, 1});
    CHECK(routeTopK(withNan, 1, 4, 5, 0).empty());
    CHECK(routeTopK(withNan, 1, 4, 0, 0).empty());
}

TEST_CASE("the decode step runs MoE, MLA, plain-MLP and MLP-only models in limit and timing", "[probes][moe][mla]")
{
    ModelInputs plain = tiny();
    plain.model.architecture->family = "gpt2";
    plain.model.architecture->mlp = MlpKind::Plain;
    plain.model.architecture->norm = NormKind::LayerNorm;
    plain.model.architecture->qkvBias = plain.model.architecture->mlpBias = true;
    plain.model.architecture->positionEmbeddingRows = 1024;
    plain.format = *findFormat("fp16");
    ModelInputs mlpOnly = tiny(); // Nemotron-H's "*-*" blocks: attention alone, MLP alone, attention alone
    mlpOnly.model.architecture->layers = 3;
    mlpOnly.model.architecture->hybrid.layerMixers = {MixerKind::Attention, MixerKind::MlpOnly, MixerKind::Attention};
    mlpOnly.model.architecture->hybrid.blockIsMixerOrMlp = true;
    ModelInputs qwenShared = tinyQwen3Moe("q8_0"); // Qwen2-MoE: a shared expert of its own width behind a sigmoid gate
    qwenShared.model.architecture->moe.sharedExpertFfnSize = 160;
    ModelInputs denseQ4_K = tiny(), denseQ6_K = tiny(); // K-quant rows packed in 8-row panels at load (packRows8)
    denseQ4_K.format = *findFormat("q4_k");
    denseQ6_K.format = *findFormat("q6_k");
    // {what, model, layers a frontier step runs: the first of each kind}
    const std::tuple<const char*, ModelInputs, std::uint64_t> models[] = {
        {"qwen3-moe q4_0", tinyQwen3Moe(), 1},
        {"qwen2-moe shared expert q8_0", qwenShared, 1},
        {"deepseek-v2-lite q8_0", tinyDeepseekV2Lite(), 2}, // the dense first layer, then MoE
        {"deepseek-v3 q_lora q4_0", tinyDeepseekV2Lite("q4_0", 96), 2},
        {"gpt2-style plain MLP fp16", plain, 1},
        {"MLP-only layers int4-g128", mlpOnly, 2}, // attention alone, MLP alone (layer 2 is layer 0's kind)
        {"dense q4_K", denseQ4_K, 1},
        {"dense q6_K", denseQ6_K, 1},
    };
    for (const auto& [what, in, frontierLayers] : models) {
        INFO(what);
        REQUIRE(validateArchitecture(*in.model.architecture).empty());
        REQUIRE(decodeUnsupportedReason(in).empty());

        auto d = cpu(Bytes{256ull << 20});
        NullProgress progress;
        const ProbeResult t = runTimingProbe(*d, in, smallTiming(), progress);
        INFO(probeResultToJson(t));
        CHECK(t.supported);
        CHECK((t.verdict() == ProbeVerdict::Pass || t.verdict() == ProbeVerdict::Fail));
        CHECK(t.integer("rows_judged") == 5u);
        CHECK(t.number("calibrated_bandwidth_gbps").value_or(0) > 0);
        // What the step reads: every matrix of the tensor list once (all experts), of which the
        // routed experts; a batch-1 step reads k of E of them.
        const auto [all, experts] = matrixBytes(in);
        CHECK(t.integer("step_weight_bytes") == all);
        CHECK(t.integer("step_expert_bytes") == experts);
        const MoeConfig& moe = in.model.architecture->moe;
        const std::uint64_t token = moe.enabled() ? all - experts + experts / moe.expertCount * moe.expertsPerToken : all;
        CHECK(t.integer("step_token_weight_bytes") == token);
        CHECK(d->allocatedBytes().value == 0);

        LimitProbeOptions options;
        options.maxFrontierPoints = 2;
        const ProbeResult l = runLimitProbe(DeviceSpec{DeviceKind::Cpu, 0}, Bytes{128ull << 20}, in, options, progress);
        INFO(probeResultToJson(l));
        CHECK(l.verdict() == ProbeVerdict::Pass);
        CHECK(l.text("step_error").value_or("") == "");
        CHECK(l.integer("verified_tokens").value_or(0) > 10'000);
        CHECK(l.integer("frontier_points_checked") == 2u);
        CHECK(l.integer("frontier_step_layers") == frontierLayers);
    }
}

TEST_CASE("what the decode step cannot run is 'not supported', with the reason", "[probes][moe][mla]")
{
    const auto reason = [](void (*spoil)(ModelInputs&)) {
        ModelInputs in = tinyDeepseekV2Lite();
        spoil(in);
        return decodeUnsupportedReason(in);
    };
    CHECK_THAT(reason([](ModelInputs& in) { in.model.architecture->mla.fullKvCache = true; }), Catch::Contains("full per-head K/V"));
    CHECK_THAT(reason([](ModelInputs& in) { in.format = *findFormat("int8-row"); }), Catch::Contains("k_b / v_b"));
    CHECK_THAT(reason([](ModelInputs& in) { in.model.architecture->moe.expertsPerToken = 9; }), Catch::Contains("route 9 of 8"));
    CHECK_THAT(reason([](ModelInputs& in) {
                   in.model.architecture->hybrid.layerMixers = {MixerKind::Attention, MixerKind::Mamba2, MixerKind::Attention};
                   in.model.architecture->hybrid.ssm = SsmConfig{256, 16, 4, 4, 64, 1, 0, true, false};
               }),
               Catch::Contains("layer 1 is a mamba2 layer"));
    CHECK_THAT(reason([](ModelInputs& in) {
                   in.model.architecture->sliding.windowTokens = 512;
               }),
               Catch::Contains("sliding-window"));
    // The device's attention kernel: the CPU runs absorbed MLA (H queries over one latent of 160);
    // CUDA's kernel needs a power-of-two head dim and at most 16 heads a KV head.
    CHECK(decodeUnsupportedReasonOn(DeviceKind::Cpu, tinyDeepseekV2Lite()).empty());
    CHECK_THAT(decodeUnsupportedReasonOn(DeviceKind::Cuda, tinyDeepseekV2Lite()),
               Catch::StartsWith("the cuda decode attention kernel does not run 4 query heads on 1 KV heads of 160 (absorbed MLA"));
    ModelInputs mamba = tinyDeepseekV2Lite();
    mamba.model.architecture->mla.fullKvCache = true;
    NullProgress progress;
    auto d = cpu(Bytes{256ull << 20});
    const ProbeResult t = runTimingProbe(*d, mamba, smallTiming(), progress);
    CHECK(t.verdict() == ProbeVerdict::NotSupported);
    CHECK_THAT(t.summary, Catch::StartsWith("not supported: MLA with the full per-head K/V cache"));
}
