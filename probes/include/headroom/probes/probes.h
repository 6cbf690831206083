#pragma once
/// @file probes.h
/// The probes (BRIEF §4): device facts, allocation truth, limit search, timing, quantization
/// error. Each takes its inputs, reports progress (fraction and stage), honours cancellation
/// within a second, and returns a ProbeResult with predicted and measured values.
///
/// Predictions come from headroom_core: makePlan() with a flat-reserve policy on an anonymous
/// card of the budget, paged in blocks of 16 tokens, whose reserve is the decode scratch the probe
/// itself allocates (the CPU backend has no context overhead), so on the CPU the allocator's
/// count equals the formula's bytes byte for byte.

#include "headroom/core/kvcache.h"
#include "headroom/core/modelprofile.h"
#include "headroom/core/units.h"
#include "headroom/core/weightformat.h"
#include "headroom/probes/device.h"
#include "headroom/probes/proberesult.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::probes {

/// Tokens per KV block of every probe's paged cache (vLLM's default; kernels kDefaultKvBlockTokens).
inline constexpr std::uint64_t kProbeBlockTokens = 16;
/// Largest GEMV batch of the decode step (kernels::kMaxGemvBatch): sequences beyond it are run
/// as further micro-batches of attention; the GEMVs run once per step for the first 64.
inline constexpr std::uint32_t kProbeMaxBatch = 64;

/// The probes by name.
enum class ProbeKind { Device, Allocation, Limit, Timing, QuantError };

/// "device", "allocation", "limit", "timing", "quant-error".
const char* probeKindName(ProbeKind kind);
/// Parses a comma-separated list of names, or "all" (every probe in the order above).
/// Errors name the unknown entry.
tl::expected<std::vector<ProbeKind>, std::string> parseProbeList(std::string_view text);

/// The model configuration the probes load (resolved by the front end: core/resolve.h).
struct ModelInputs {
    ModelProfile model;             ///< needs an architecture
    WeightFormat format;            ///< weight format (kernel-runnable for the limit and timing probes)
    KvDtype kvDtype;                ///< KV dtype (fp16/bf16 for the decode step)
    std::uint64_t contextTokens = 0;///< per user; 0 = the model's trained context (else 4,096)
    std::uint64_t users = 1;        ///< concurrent sequences
};

/// Why the decode step cannot run @p model on the kernels (recurrent mixers, gated attention
/// outputs, full-KV MLA, sliding windows, per-layer heads, a weight format or KV dtype without
/// kernels, non-llama tensor names); "" when it can (dense, MoE, MLA latent, plain-MLP and
/// MLP-only layers run).
std::string decodeUnsupportedReason(const ModelInputs& model);

/// decodeUnsupportedReason, then whether the decode attention kernel of @p device runs the
/// model's geometry (kernels::supports: CUDA needs a head dim that is a power of two in 8..256 and
/// at most 16 query heads a KV head, which absorbed MLA's H queries over one latent of
/// kv_lora_rank + qk_rope do not meet); "" when both hold.
std::string decodeUnsupportedReasonOn(DeviceKind device, const ModelInputs& model);

/// How a probe that must survive aborts and driver faults runs (the limit search).
struct Isolation {
    /// Where the work runs.
    enum class Mode {
        InProcess, ///< in the caller (no protection; for debugging)
        Fork,      ///< fork() and run in the child; result through a pipe. CPU only: a CUDA
                   ///< context does not survive fork(), so CUDA requests are run as Exec when a
                   ///< worker command is given, else fail with a clear message
        Exec,      ///< fork() + exec of workerCommand, which must call runProbeWorker()
    };
    Mode mode = Mode::Fork;                  ///< default: a child process
    std::vector<std::string> workerCommand;  ///< argv of the worker ("/path/headroom-cli", "probe-worker")
};

/// Options of the device probe.
struct DeviceProbeOptions {
    Bytes copyBytes;        ///< bytes of each copy/read buffer; 0 = max(8 x cache, 256 MiB) (gpus.md §6.1)
    std::uint32_t reps = 20;///< timed repetitions after 2 warm-ups; the median is reported (>= 20 by the contract)
    Isolation isolation;    ///< CUDA: Exec measures the context overhead with a second process
};

/// Device facts: name, total and free memory, the context's own overhead, the copy bandwidth
/// B_copy (device-to-device copy, bytes read + written, median) and the read bandwidth B_read.
/// Keys: total_bytes, free_bytes, context_overhead_bytes, copy_buffer_bytes,
/// copy_bandwidth_gbps, read_bandwidth_gbps, copy_cv, read_cv (10^9 B/s; CV = stdev / mean).
ProbeResult runDeviceProbe(Device& device, const DeviceProbeOptions& options, ProbeProgress& progress);

/// Allocates the weights (every tensor of listTensors in its packed layout, tensorBytes each)
/// and the paged KV cache for users x contextTokens (kvBytes with 16-token blocks), touches every
/// page, and compares the allocator's count (and on CUDA the driver's free memory) with the
/// formula. Keys: predicted_bytes, measured_bytes, predicted_weights_bytes,
/// measured_weights_bytes, predicted_kv_bytes, measured_kv_bytes, driver_measured_bytes (CUDA),
/// kv_bytes_per_token, users, context_tokens. Pass: measured == predicted exactly.
ProbeResult runAllocationProbe(Device& device, const ModelInputs& model, ProbeProgress& progress);

/// Test hooks of the limit probe's child process.
enum class ChildTestHook {
    None,  ///< normal run
    Crash, ///< the child raises SIGSEGV after starting (a driver fault)
    Abort, ///< the child calls std::abort()
    Hang,  ///< the child loops forever (only cancellation ends it)
};

/// Options of the limit probe.
struct LimitProbeOptions {
    bool verifyFrontier = true;          ///< also run a decode step at each frontier point
    std::size_t maxFrontierPoints = 0;   ///< 0 = every point of the plan's frontier
    /// Layers the decode step runs (0 = all). Fewer layers keep CPU tests fast; the memory is
    /// still allocated for every layer, and the result says how many ran (`step_layers`).
    std::uint32_t stepLayers = 0;
    Isolation isolation;                 ///< where the search runs (default: a child process)
    ChildTestHook testHook = ChildTestHook::None; ///< tests only
};

/// The largest resident tokens that run, proved with as few full-cache steps as the proof needs
/// (issue 12): weights and decode scratch allocated once; the KV pool of the predicted N blocks
/// allocated and touched once; one more block allocated on top of it (raised by doubling extra
/// allocations while they fit, bisected on allocations, never re-touching the pool; bisected on
/// whole pools only when the prediction itself does not fit); then one real decode step over the
/// whole pool at the limit (every layer's q/k/v GEMVs, the new token's K and V written into the
/// paged cache, paged decode attention over the whole cache, o and MLP GEMVs, the logits GEMV) on
/// synthetic weights. Each frontier point (users x context from the plan) is checked by its blocks
/// against the verified pool plus one decode step over its own sequences. Time grows linearly with
/// the budget (the pool is touched once; each step reads it once). Runs in a child process
/// (Isolation): a crash becomes a failed result naming the signal; cancellation kills the child.
/// Keys: predicted_tokens, verified_tokens, predicted_blocks, allocated_blocks, verified_blocks,
/// block_tokens, budget_bytes, weights_bytes, workspace_bytes, kv_bytes_per_token, step_ms (the
/// step at the limit), trials [{blocks, tokens, extra, allocated, error}], allocation_trials,
/// full_steps, frontier [{users, context_tokens, blocks, predicted, verified, step_ms}].
/// Verdict: limitVerdict (core/probeverdict.h). A budget above the device's free memory is
/// refused (budgetRefusal).
ProbeResult runLimitProbe(const DeviceSpec& device, std::optional<Bytes> budget, const ModelInputs& model,
                          const LimitProbeOptions& options, ProbeProgress& progress);

/// Options of the timing probe.
struct TimingProbeOptions {
    std::vector<std::uint32_t> batches{1, 2, 4, 8, 16, 32, 64};      ///< decode batch sweep (1..64)
    std::uint64_t batchContextTokens = 512;                           ///< context of each sequence in the batch sweep
    std::vector<std::uint64_t> contexts{16, 256, 1024, 4096, 16384, 32768}; ///< context sweep at batch 1 (capped at the model's)
    std::vector<std::uint64_t> prompts{128, 512, 2048};               ///< prefill prompt lengths
    std::uint32_t warmup = 2;            ///< untimed runs before each point
    std::uint32_t reps = 10;             ///< timed runs per point; the median is reported
    double bandwidthGBps = 0;            ///< measured B_read for the roofline prediction (0 = none)
};

/// CPU defaults: batches 1, 4, 16 at 512 tokens; contexts 4,096 and 16,384; prompts 16 and 64;
/// one warm-up and 3 timed runs (a loaded 2-core host takes ~0.15-0.3 s per bf16 step of a 0.5B
/// model).
TimingProbeOptions cpuTimingDefaults();

/// Decode step time against batch (1..64) and context, prefill time against prompt length,
/// measured with CUDA events (steady clock on the CPU) after warm-up, medians, cold caches (a
/// buffer of 5x the last-level cache is rewritten before each timed run unless the step itself
/// streams more than that). Prefill runs the prompt in chunks of 64 tokens: batched GEMVs and
/// causal attention. The speed model is then calibrated by what was measured
/// (core/speed/calibration.h): the decode bandwidth from the batch-1 point with the fewest cached
/// tokens, the compute peak from the longest prefill, each the median of at least 7 timed runs
/// (whatever reps says); those rows are marked "calibration" and
/// carry no verdict; every other row shows the measured and the predicted time, their ratio, and
/// a verdict against +-kTimingTolerance (timingRowVerdict). Keys: decode [{batch,
/// context_tokens, step_ms, tokens_per_s, predicted_step_ms, ratio, verdict, calibration?, cv}],
/// context [...], prefill [{prompt_tokens, ttft_ms, tokens_per_s, predicted_ttft_ms, ratio,
/// verdict, ...}], calibrated_bandwidth_gbps, calibrated_peak_tflops, read_bandwidth_gbps and
/// bandwidth_fraction (with the device probe's B_read), tolerance_fraction, rows_judged,
/// rows_within_tolerance, tpot_ms, knee_batch, predicted_knee_batch, weights_bytes.
ProbeResult runTimingProbe(Device& device, const ModelInputs& model, const TimingProbeOptions& options,
                           ProbeProgress& progress);

/// Options of the quantization-error probe.
struct QuantErrorOptions {
    std::uint32_t rows = 896;        ///< synthetic matrix rows (BRIEF §3 anchor shape 896 x 4,864)
    std::uint32_t cols = 4864;       ///< synthetic matrix columns
    std::uint64_t seed = 42;         ///< generator seed
    double outlierFraction = 1.6e-4; ///< share of weights replaced by outliers (692 / 4,358,144 beyond 6 sigma, BRIEF §3)
    double outlierSigma = 24.0;      ///< outlier magnitude in standard deviations (max |w| = 24 std, BRIEF §3)
    std::string ggufPath;            ///< a GGUF with tensor data: its f32/f16 matrices are quantized too; "" = skip
};

/// Relative error ||W - W_hat||_F / ||W||_F of int8-row, int4 (tensor), int4-row, int4-g128 and
/// nf4-b64 on N(0,1) weights (checked against BRIEF §3 anchors +-0.003) and on the same weights
/// with outliers. Keys: formats [{format, bits_per_weight, gaussian_error, anchor_error,
/// outlier_error}], and with a GGUF real_weights [{format, matrices, mean_error, worst_error,
/// worst_matrix}] over its f32/f16 matrices (at most 256 of them, 64 Mi elements). Device
/// independent (the quantizers run on the host).
ProbeResult runQuantErrorProbe(const QuantErrorOptions& options, ProbeProgress& progress);

/// Everything `headroom-cli probe` asks for.
struct ProbeRequest {
    DeviceSpec device;                 ///< where to run
    std::optional<Bytes> budget;       ///< the cap (CPU default: 2 GiB)
    ModelInputs model;                 ///< what to load
    std::vector<ProbeKind> probes;     ///< which probes, in order
    DeviceProbeOptions deviceOptions;  ///< device probe
    LimitProbeOptions limitOptions;    ///< limit probe (its isolation too)
    TimingProbeOptions timingOptions;  ///< timing probe
    QuantErrorOptions quantOptions;    ///< quant-error probe
};

/// The device header and one result per probe.
struct ProbeReport {
    DeviceSummary device;              ///< the device (error set when it could not be opened)
    std::vector<ProbeResult> results;  ///< in the order asked for
    /// True when the device opened and no result failed or was cancelled ("measured" and "not
    /// supported" results are no failure).
    bool allPassed() const;
};

/// Why a @p budget cannot be used on a device with @p freeBytes free (CPU: MemAvailable; CUDA:
/// cudaMemGetInfo's free): a budget above the free memory would drive the machine into the OOM
/// killer (or cudaMalloc failures) instead of emulating a smaller card. "" when it can be used.
std::string budgetRefusal(DeviceKind kind, Bytes budget, Bytes freeBytes);

/// Default budget of the CPU device when none is given: 2 GiB.
inline constexpr std::uint64_t kDefaultCpuBudgetBytes = 2ull << 30;

/// Opens the device and runs the probes in order; progress fractions cover the whole run. A
/// device that cannot be opened gives a report with device.error set and failed results.
/// The timing probe's roofline uses the device probe's B_read when it ran first.
ProbeReport runProbes(const ProbeRequest& request, ProbeProgress& progress);

/// Entry point of the worker process (Isolation::Exec): reads one work order (JSON) from
/// @p inFd until EOF, runs it, writes progress lines and the result line to @p outFd.
/// Returns the process exit code (0 when a result was written).
int runProbeWorker(int inFd, int outFd);

} // namespace headroom::probes
