#pragma once
/// @file calibration.h
/// An engine's start-up log turned into a calibration for that card: the plan for the log's own
/// settings is compared with the log per component (weights, activation peak, non-torch memory,
/// CUDA graphs, KV budget, compute and KV buffers), and the measured overheads that make the plan
/// reproduce the log's KV figure exactly (GPU KV cache size / # GPU blocks / max_total_num_tokens
/// / max batch total tokens / tokens in paged KV cache) are kept as MeasuredOverheads. The
/// calibrated plan then answers for other settings on the same card: blocks at another
/// max-model-len and user count, the largest memory fraction that leaves a given amount free, and
/// the --kv-cache-memory / gpu-memory-utilization that holds U users at C tokens.
///
/// What is measured where: the activation peak a log implies is measured at the log's own
/// micro-batch (vLLM max_num_batched_tokens, SGLang chunked_prefill_size): it holds for any
/// max-model-len and user count at that micro-batch (vLLM profiles one max_num_batched_tokens
/// forward pass, gpu_worker.py determine_available_memory), and is re-estimated when another
/// micro-batch is asked for. Weights the plan prices differently from the log are part of the
/// calibrated residual, and the comparison shows them.
///
/// A calibration is saved as a profile overlay (JSON, schema_version 1) keyed by the card (its
/// total memory: a profile id and the same card given as a size match), the engine (and its
/// version when both sides know it) and the model, and every plan that uses it names it in its
/// notes. The model's terms (activation peak, CUDA graphs, a fitted runtime) hold for the model
/// that was measured only; a plan of another model (or another engine version) on that card takes
/// the model-independent terms alone (the non-torch memory / CUDA context the log printed, the
/// card's free memory for the engines that size from it) and says so.

#include "headroom/core/enginelog/enginelog.h"
#include "headroom/core/plan.h"

#include <tl/expected.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headroom {

/// One component of the bill, as the plan predicts it and as the log measured it.
struct ComponentComparison {
    std::string component;            ///< "weights", "activation_peak", "non_torch", "cuda_graphs", "kv_budget", "compute_buffer", "kv_buffer"
    std::optional<Bytes> predicted;   ///< the plan for the log's settings (per device)
    std::optional<Bytes> measured;    ///< what the log printed (per device); absent when it printed none
    std::string how;                  ///< which line, and how the figure was read or derived
};

/// The log's KV figure against the plan's.
struct KvFigureComparison {
    std::string name;                 ///< "kv_cache_tokens", "num_gpu_blocks", "max_total_num_tokens", ...
    std::uint64_t printed = 0;        ///< as the engine printed it
    std::uint64_t predicted = 0;      ///< the uncalibrated plan
    std::uint64_t calibrated = 0;     ///< the calibrated plan (equal to printed when the calibration holds)
};

/// A calibration of one card under one engine, from one log.
struct LogCalibration {
    static constexpr int kSchemaVersion = 1;
    std::string cardId;               ///< the card profile id, or the anonymous size ("79.19GiB")
    Bytes cardTotalBytes;             ///< the total it was measured on
    std::string engine;               ///< engine id ("vllm")
    std::string engineVersion;        ///< as the log printed it, or empty
    std::string modelId;              ///< the model the log ran
    std::string logName;              ///< file name of the log
    std::string logHash;              ///< FNV-1a 64 of the log text (16 hex digits)
    std::uint64_t ubatchTokens = 0;   ///< the micro-batch the activation peak was measured at
    MeasuredOverheads measured;       ///< the overlay applied to plans of the same model
    std::optional<Bytes> nonTorchBytes; ///< model-independent: the non-torch memory the log printed (vLLM non_torch_memory)
    std::optional<Bytes> cardFreeBytes; ///< model-independent: the card's free memory before the engine loaded (llama.cpp, Ollama)
    std::optional<Bytes> cardUsedAtStartBytes; ///< model-independent: in use before the engine sized anything (vLLM init snapshot total - free: the CUDA context)
    std::optional<Bytes> capturedGraphBytes;   ///< the CUDA graphs as captured after the pool ("Graph capturing finished ..., took X GiB"; SGLang "Capture cuda graph end. ... mem usage")
    std::string name() const;         ///< "vllm on 79.19GiB from serve.log (a1b2...)", for plan notes
};

/// How much of a calibration applies to a plan.
enum class CalibrationScope {
    Whole,            ///< the same card, engine (version) and model: every measured term
    ModelIndependent, ///< the same card and engine, another model or version: non-torch and free memory only
    None,             ///< another card or engine: nothing
};
/// The scope of @p calibration for @p request (card by total bytes, equal to the 0.01 GiB engines
/// print totals to; engine kind; engine version when both are known; model id), and why, in a
/// sentence for the plan's notes.
std::pair<CalibrationScope, std::string> calibrationScope(const PlanRequest& request, const LogCalibration& calibration);

/// The whole comparison of a log with the plan for its settings.
struct LogComparison {
    PlanRequest request;              ///< the plan request for the log's own settings (uncalibrated)
    PlanResult predicted;             ///< the plan before calibration
    PlanResult calibrated;            ///< the plan with the calibration
    std::vector<ComponentComparison> components; ///< per component, predicted against measured
    std::optional<KvFigureComparison> kvFigure;  ///< absent when the log printed no KV figure
    LogCalibration calibration;       ///< what to save
    std::vector<std::string> notes;   ///< what could not be calibrated, and why
    /// Empty when the calibration may be saved; else why not (no KV figure fitted, the fit missed
    /// the printed figure, nothing measured): a failed analysis is never saved.
    std::string saveRefusal;
};

/// The plan's value of the KV figure @p name a log prints ("kv_cache_tokens", "num_gpu_blocks",
/// "max_total_num_tokens", "max_batch_total_tokens", "max_kv_tokens", "kv_blocks",
/// "available_kv_cache"): the engine unit's own figure of that name when it has one (TensorRT-LLM
/// up to 0.8 prints its tokens before block rounding, engines/tensorrtllm.cpp), else from the
/// pool: blocks, blocks x block tokens, the budget bytes, or the resident tokens.
std::uint64_t plannedKvFigure(const PlanResult& plan, const std::string& name);

/// The engine profile id of a log's engine ("vllm" -> "vllm"), as profiles/engines names them.
std::string engineProfileId(const EngineLog& log);

/// The context per sequence a log ran at, and the setting it was read from: the per-sequence
/// spellings first (llama.cpp n_ctx_seq, vLLM max-model-len, SGLang context-length, TensorRT-LLM
/// max_seq_len, Ollama num_ctx), else a runner's total over its slots divided by the slots
/// (llama.cpp n_ctx / -c / the kv_size of its KV cache line, Ollama's runner --ctx-size = num_ctx x
/// OLLAMA_NUM_PARALLEL; the slots
/// from n_seq_max, --parallel or OLLAMA_NUM_PARALLEL), else Ollama's OLLAMA_CONTEXT_LENGTH.
std::optional<std::pair<std::uint64_t, std::string>> contextFromLog(const EngineLog& log);

/// True when @p request gives its context as an engine setting, in any spelling the engine unit
/// declares (max-model-len, context-length, TGI max-total-tokens / MAX_TOTAL_TOKENS, ctx-size,
/// num_ctx, max_seq_len).
bool givesContextSetting(const PlanRequest& request);

/// Applies the settings the log printed, in the engine's spelling, to @p request:
/// gpu-memory-utilization / mem-fraction-static / free_gpu_memory_fraction -> the memory fraction;
/// max-model-len / context-length / n_ctx_seq / -c -> context; max-num-batched-tokens /
/// chunked-prefill-size / n_ubatch -> micro-batch; tensor-parallel-size / tp -> TP;
/// pipeline-parallel-size -> PP; n_seq_max / OLLAMA_NUM_PARALLEL / --parallel -> users;
/// block-size / tokens_per_block -> block. Any other numeric setting the engine unit declares
/// (TensorRT-LLM max_batch_size, vLLM max-num-seqs, ...) and the request does not give goes to
/// PlanRequest::engineSettings in its canonical spelling. Returns the KEY=VALUE it applied.
std::vector<std::string> applyLogSettings(const EngineLog& log, PlanRequest& request);

/// The engine settings of @p plan that neither the log (@p fromLog: applyLogSettings' KEY=VALUE)
/// nor @p request (its engineSettings) gave, as KEY=VALUE: the defaults the plan assumed. A
/// setting counts as given when any spelling of the same generic field was (n_ctx_seq gives ctx-size).
std::vector<std::string> assumedSettings(const PlanResult& plan, const PlanRequest& request, const std::vector<std::string>& fromLog);

/// Compares @p log with the plan of @p request (already holding the log's settings) and
/// calibrates. Errors: the plan cannot be made, or the log carries no figure to compare.
tl::expected<LogComparison, std::string> compareWithLog(const EngineLog& log, const PlanRequest& request,
                                                        const std::string& logName, const std::string& logText);

/// @p request with the calibration's measured overheads (and its micro-batch when the request
/// asks for none) as far as calibrationScope allows; MeasuredOverheads::source names the
/// calibration and the scope, so every plan made from it says so in its notes.
PlanRequest withCalibration(PlanRequest request, const LogCalibration& calibration);
/// makePlan of withCalibration, with the calibration named in the notes.
tl::expected<PlanResult, std::string> makeCalibratedPlan(const PlanRequest& request, const LogCalibration& calibration);

/// The calibrated plan at @p contextTokens per user for @p users sequences.
tl::expected<PlanResult, std::string> calibratedAt(const PlanRequest& request, const LogCalibration& calibration,
                                                   std::uint64_t contextTokens, std::uint64_t users);

/// @p request at memory fraction @p fraction (EnginePolicy::memoryFraction), without the engine
/// settings that spell it (gpu-memory-utilization, mem-fraction-static, cuda-memory-fraction, ...).
PlanRequest atMemoryFraction(PlanRequest request, double fraction);

/// The largest memory fraction that leaves a given amount of the card free.
struct FractionLeaving {
    double fraction = 0;              ///< to 0.01, rounded down; 0 when no fraction leaves that much
    Bytes baseBytes;                  ///< what the fraction multiplies (FractionHolding::baseBytes)
    std::vector<OverheadItem> held;   ///< what the engine holds beyond fraction x base (measured where the log printed it)
    /// The KV pool that leaves exactly the amount free (total - free - held - the weights and
    /// overheads priced inside the claim): vLLM's --kv-cache-memory for it, which vLLM itself prints
    /// "to fully utilize gpu memory" for its 150 MiB buffer (v1/worker/gpu_worker.py v0.19.0).
    Bytes kvCacheBytes;
};
/// The largest memory fraction (vLLM gpu-memory-utilization, SGLang mem-fraction-static, TGI
/// cuda-memory-fraction; to 0.01, rounded down) whose engine leaves @p freeBytes of the card
/// free as nvidia-smi counts it: floor((total - free - held) / base, 0.01), with base and held from
/// the engine unit (Engine::fractionHolding: vLLM claims fraction x total and holds the CUDA
/// context of its init snapshot and the CUDA graphs captured after the pool beside it; SGLang
/// claims fraction x its free memory at start-up and keeps graphs and activations in the rest),
/// for the calibrated plan of @p request, with the log's measured terms (LogCalibration
/// cardUsedAtStartBytes, capturedGraphBytes). nullopt for engines without a fraction of the card.
std::optional<FractionLeaving> largestFractionLeaving(const PlanRequest& request, const LogCalibration& calibration, Bytes freeBytes);

/// What holds @p users sequences of @p contextTokens each on the calibrated plan.
struct SettingForUsers {
    /// The KV pool they need (vLLM --kv-cache-memory): per user every token of the full-attention
    /// layers and at most the window of the sliding-window layers, in whole blocks; for vLLM the
    /// smallest pool whose plan holds them by vLLM's own per-request accounting (its sliding-window
    /// groups keep window - 1 + max_num_batched_tokens tokens, kv_cache_interface.py).
    Bytes kvCacheBytes;
    double memoryFraction = 0;        ///< the smallest fraction (to 0.01, rounded up) whose pool holds them
    bool possible = false;            ///< false when even a fraction of 1.0 is too small
};
/// See SettingForUsers; the fraction is checked by planning at it.
tl::expected<SettingForUsers, std::string> settingForUsers(const PlanRequest& request, const LogCalibration& calibration,
                                                           std::uint64_t users, std::uint64_t contextTokens);

/// The calibration as JSON text (schema_version 1, keys with units).
std::string calibrationToJson(const LogCalibration& calibration);
/// Reads a calibration; errors name the file, the key and the versions.
tl::expected<LogCalibration, std::string> calibrationFromJson(const std::string& text, const std::string& fileName);
/// Most calibration files read from one folder; more are ignored.
inline constexpr std::size_t kMaxSavedCalibrations = 256;

/// The calibrations saved in @p userProfilesDir/calibrations, read once: every *.json file (not
/// hidden) in name order, at most kMaxSavedCalibrations. The folder is the user's and untrusted:
/// a file that cannot be read as a calibration (not JSON, nested too deep, over 1 MiB, a FIFO, a
/// device, a symlink to one, a folder) is skipped with one warning naming it, so that one bad file
/// never breaks every plan.
struct CalibrationFolder {
    std::vector<std::pair<std::filesystem::path, LogCalibration>> calibrations; ///< the readable ones, by file name
    std::vector<std::string> warnings; ///< "skipped calibration: FILE: why", one a skipped file
};
CalibrationFolder readCalibrationFolder(const std::filesystem::path& userProfilesDir);

/// The best saved calibration for @p request in @p folder: of the files of the request's engine
/// measured on a card of the same total bytes (whatever the card was called: "h100-sxm" and
/// "79.19GiB" of the same total match), the one of the same model, else one of another model
/// (calibrationScope ModelIndependent); of several, the one saved under the card's own name.
struct SavedCalibration {
    std::optional<LogCalibration> calibration; ///< the one that applies, if any
    std::filesystem::path file;                ///< its file
    std::string why;                           ///< when none applies but some exist: why none matched
};
SavedCalibration findSavedCalibration(const CalibrationFolder& folder, const PlanRequest& request);
/// @p request with the calibration findSavedCalibration picks, when it was measured at the
/// request's micro-batch (or the request asks for none); unchanged for a flat reserve or without a
/// saved calibration. When calibrations of the engine exist but none applies (another card total,
/// another micro-batch), MeasuredOverheads::source says why, so the plan's notes name it. Every
/// face plans through this, so a saved calibration is used, and named, everywhere.
PlanRequest applySavedCalibration(PlanRequest request, const CalibrationFolder& folder);
/// applySavedCalibration of readCalibrationFolder(@p userProfilesDir) (its warnings dropped: a
/// face that shows them reads the folder once itself). Never an error: a bad file is skipped.
tl::expected<PlanRequest, std::string> applySavedCalibration(PlanRequest request, const std::filesystem::path& userProfilesDir);
/// Saves @p comparison's calibration to @p file (atomically: the old file stays whole until the new
/// one replaces it), or, with an empty @p file, to calibrationPath in @p userProfilesDir. Refused,
/// leaving any saved calibration as it was, when the comparison's saveRefusal is set. Returns the
/// path written.
tl::expected<std::filesystem::path, std::string> saveCalibration(const LogComparison& comparison,
                                                                 const std::filesystem::path& userProfilesDir,
                                                                 const std::filesystem::path& file = {});
/// Reads a calibration file (at most 1 MiB).
tl::expected<LogCalibration, std::string> readCalibration(const std::filesystem::path& file);

/// The overlay file name for a calibration: "calibrations/<card>.<engine>[@<version>].<model>.json"
/// below a profiles folder (characters other than letters, digits, '-', '.' and '@' spelled '_');
/// a model given as a path is named by its last component and 8 hex digits of the whole path.
std::filesystem::path calibrationPath(const std::filesystem::path& userProfilesDir, const LogCalibration& calibration);

} // namespace headroom
