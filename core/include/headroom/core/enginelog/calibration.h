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
/// A calibration is saved as a profile overlay (JSON, schema_version 1) named after the card
/// and the engine, and every plan that uses it names it in its notes.

#include "headroom/core/enginelog/enginelog.h"
#include "headroom/core/plan.h"

#include <tl/expected.hpp>

#include <filesystem>
#include <optional>
#include <string>
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
    MeasuredOverheads measured;       ///< the overlay applied to plans
    std::string name() const;         ///< "vllm on 79.19GiB from serve.log (a1b2...)", for plan notes
};

/// The whole comparison of a log with the plan for its settings.
struct LogComparison {
    PlanRequest request;              ///< the plan request for the log's own settings (uncalibrated)
    PlanResult predicted;             ///< the plan before calibration
    PlanResult calibrated;            ///< the plan with the calibration
    std::vector<ComponentComparison> components; ///< per component, predicted against measured
    std::optional<KvFigureComparison> kvFigure;  ///< absent when the log printed no KV figure
    LogCalibration calibration;       ///< what to save
    std::vector<std::string> notes;   ///< what could not be calibrated, and why
};

/// The engine profile id of a log's engine ("vllm" -> "vllm"), as profiles/engines names them.
std::string engineProfileId(const EngineLog& log);

/// Applies the settings the log printed, in the engine's spelling, to @p request:
/// gpu-memory-utilization / mem-fraction-static / free_gpu_memory_fraction -> the memory fraction;
/// max-model-len / context-length / n_ctx_seq / -c -> context; max-num-batched-tokens /
/// chunked-prefill-size / n_ubatch -> micro-batch; tensor-parallel-size / tp -> TP;
/// pipeline-parallel-size -> PP; n_seq_max / OLLAMA_NUM_PARALLEL / --parallel -> users;
/// block-size / tokens_per_block -> block. Returns the keys it applied.
std::vector<std::string> applyLogSettings(const EngineLog& log, PlanRequest& request);

/// Compares @p log with the plan of @p request (already holding the log's settings) and
/// calibrates. Errors: the plan cannot be made, or the log carries no figure to compare.
tl::expected<LogComparison, std::string> compareWithLog(const EngineLog& log, const PlanRequest& request,
                                                        const std::string& logName, const std::string& logText);

/// @p request with the calibration's measured overheads (and its micro-batch when the request
/// asks for none); MeasuredOverheads::source names the calibration, so every plan made from it
/// says so in its notes.
PlanRequest withCalibration(PlanRequest request, const LogCalibration& calibration);
/// makePlan of withCalibration, with the calibration named in the notes.
tl::expected<PlanResult, std::string> makeCalibratedPlan(const PlanRequest& request, const LogCalibration& calibration);

/// The calibrated plan at @p contextTokens per user for @p users sequences.
tl::expected<PlanResult, std::string> calibratedAt(const PlanRequest& request, const LogCalibration& calibration,
                                                   std::uint64_t contextTokens, std::uint64_t users);

/// The largest memory fraction (vLLM gpu-memory-utilization, SGLang mem-fraction-static, TGI
/// cuda-memory-fraction; to 0.01, rounded down) that leaves @p freeBytes of the card unclaimed:
/// the engine claims fraction x total (vLLM gpu_worker.py requested_memory), so the fraction is
/// floor((total - free) / total, 0.01). nullopt for engines without a fraction.
std::optional<double> largestFractionLeaving(const PlanRequest& request, Bytes freeBytes);

/// What holds @p users sequences of @p contextTokens each on the calibrated plan.
struct SettingForUsers {
    Bytes kvCacheBytes;               ///< the KV pool they need: users x ceil(C / block) blocks (vLLM --kv-cache-memory)
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
/// The calibration saved for @p card under @p engine in @p userProfilesDir (calibrationPath), if
/// any and if it was measured on a card of the same total; errors name the file.
tl::expected<std::optional<LogCalibration>, std::string> findSavedCalibration(const std::filesystem::path& userProfilesDir,
                                                                            const Card& card, const std::string& engine);
/// @p request with the calibration saved for its card and engine in @p userProfilesDir
/// (findSavedCalibration) when it was measured at the request's micro-batch (or the request asks
/// for none); unchanged for a flat reserve, without a saved calibration, or at another
/// micro-batch (a measured peak holds at its own micro-batch only). Every face plans through
/// this, so a saved calibration is used, and named, everywhere. Errors: the saved file is unreadable.
tl::expected<PlanRequest, std::string> applySavedCalibration(PlanRequest request, const std::filesystem::path& userProfilesDir);
/// Reads a calibration file (at most 1 MiB).
tl::expected<LogCalibration, std::string> readCalibration(const std::filesystem::path& file);

/// The overlay file name for a calibration: "calibrations/<card>.<engine>.json" below a profiles folder.
std::filesystem::path calibrationPath(const std::filesystem::path& userProfilesDir, const LogCalibration& calibration);

} // namespace headroom
