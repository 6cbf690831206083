#pragma once
/// @file logreport.h
/// The whole answer to "here is my engine's start-up log", computed once for every face
/// (`headroom-cli log`, the app's Log panel): the log parsed (enginelog.h), the plan request for
/// the log's own settings, the plan compared with the log per component and calibrated
/// (calibration.h), and the calibrated what-fits for other settings on the same card: the pool
/// at another context and user count, the largest memory fraction that leaves a given amount
/// free, and the KV pool (--kv-cache-memory) or memory fraction that holds U users at C tokens.
///
/// Besides the numbers, the report carries the figures as text (rows and sentences), so the
/// faces print the same strings and never format or decide a figure themselves.

#include "headroom/core/card.h"
#include "headroom/core/enginelog/calibration.h"
#include "headroom/core/enginelog/enginelog.h"
#include "headroom/core/modelprofile.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// What a face adds to the log: the model and formats when the log does not name them, and the
/// question of the calibrated what-fits.
struct LogReportOptions {
    std::string model;                         ///< a profile id, a path or ORG/NAME; empty: the model the log names
    std::optional<ModelProfile> modelProfile;  ///< a model already read (the app's picker); wins over `model`
    std::string weights;                       ///< weight format id; empty: the model's own
    std::string kvDtype;                       ///< KV dtype id; empty: fp16, fp8 when the log says kv-cache-dtype fp8*
    std::string card;                          ///< a card profile id or a size; empty: the total the log printed
    std::optional<Card> cardProfile;           ///< a card already chosen (the app's card list); wins over `card`
    std::string engineVersion;                 ///< --engine-version: the version whose rules apply when the log prints none
    std::optional<std::uint32_t> tensorParallel; ///< --tp: the TP size, for logs that do not print it; wins over the log's
    std::optional<std::uint32_t> pipelineParallel; ///< --pp, likewise
    /// --set KEY=VALUE: settings the log does not print, in the engine's own spelling (engines/settings.h);
    /// they win over the log's own reading of the same setting.
    std::vector<EngineSetting> settings;
    /// What-fits context per user; default: 4 x the log's context capped at the model's trained
    /// context, or, when the log prints no context, the context the plan for the log's settings
    /// uses (the engine's own default: the model's trained context for vLLM, SGLang, TensorRT-LLM).
    std::optional<std::uint64_t> contextTokens;
    std::optional<std::uint64_t> users;        ///< what-fits users; default 16
    Bytes leaveFreeBytes{2ull << 30};          ///< memory to leave free for the largest memory fraction
};

/// Why a log gave no report, and at which step.
/// One measured term, as printed.
struct LogTermRow {
    std::string term;   ///< parser term name ("weights", "kv_cache_tokens")
    std::string where;  ///< device (llama.cpp buffer type) or rank prefix; may be empty
    std::string value;  ///< as the log printed it ("58.11 GiB")
    std::string line;   ///< 1-based line number
};

struct LogReportError {
    enum class Stage {
        Read,    ///< the input exceeds the parser's limits
        Engine,  ///< no line of a known engine was understood
        Request, ///< the plan for the log's settings cannot be set up (model, card, formats)
        Compare, ///< the plan cannot be made or the log carries no figure to compare
    };
    Stage stage = Stage::Read;         ///< where it stopped
    std::string message;               ///< what was expected and what was found
    std::string summary;               ///< EngineLog::summary() when the log was parsed, else empty
    std::vector<std::string> warnings; ///< the parser's warnings (cut lines, lines not read)
    /// Request and Compare stages (the log was parsed): what the log says without a plan, so that a
    /// face still shows it (issue 14: the engine, card, settings and every measured term):
    /// LogReport::headerLines' summary, card and settings lines, and every measured term in log order.
    std::vector<std::string> headerLines;
    std::vector<LogTermRow> terms;
};

/// One component, predicted against measured, as text (GiB to 0.01).
struct LogComponentRow {
    std::string component;  ///< "weights", "activation_peak", "kv_budget", ...
    std::string predicted;  ///< "14.96 GiB", or "-"
    std::string measured;   ///< "14.99 GiB", or "-"
    std::string difference; ///< plan - log, "+0.03 GiB"; empty when either side is absent
    std::string how;        ///< which line, and how the figure was read or derived
};

/// The calibrated plan for other settings on the same card.
struct LogWhatFits {
    std::uint64_t contextTokens = 0;            ///< the context asked
    std::uint64_t users = 0;                    ///< the users asked
    std::optional<PlanResult> plan;             ///< calibratedAt(context, users)
    std::string planError;                      ///< why there is no plan
    std::string fractionFlag;                   ///< the engine's memory-fraction flag; empty when it has none
    Bytes leaveFreeBytes;                       ///< the amount asked to be left free
    std::optional<double> largestFraction;      ///< largestFractionLeaving(leaveFreeBytes)
    std::vector<OverheadItem> heldBeyondFraction; ///< what the engine holds beside that fraction (FractionLeaving::held)
    std::optional<std::uint64_t> tokensAtLargestFraction; ///< KV tokens of the calibrated plan at that fraction
    std::optional<SettingForUsers> forUsers;    ///< settingForUsers(users, context)
    std::vector<std::string> lines;             ///< the answers as sentences, in order
    /// "Calibrated what fits on this card", or, when the log calibrated nothing (its
    /// LogComparison::saveRefusal is set), "What fits on this card (not calibrated: the plan's own
    /// estimates)": the heading every face prints above `lines`.
    std::string heading;
};

/// Everything a face shows of a log.
struct LogReport {
    EngineLog log;                              ///< the parsed log
    PlanRequest request;                        ///< the plan request for the log's own settings
    LogComparison comparison;                   ///< predicted vs measured, and the calibration
    std::vector<std::string> headerLines;       ///< the summary, the card, the settings, how the model was chosen
    std::vector<std::string> settingsFromLog;   ///< KEY=VALUE the plan took from the log (its own spelling)
    std::vector<std::string> settingsGiven;     ///< "tensor parallel N", KEY=VALUE given by the face (LogReportOptions)
    std::vector<std::string> settingsAssumed;   ///< KEY=VALUE neither gave: the engine's defaults the plan applied
    std::vector<LogTermRow> terms;              ///< every measured term, in log order
    std::string comparisonTitle;                ///< "the plan for these settings: MODEL, FORMAT weights, KV KV, ENGINE"
    std::vector<LogComponentRow> components;    ///< predicted against measured, per component
    std::string kvFigureLine;                   ///< "GPU KV cache size (tokens): the log N, the plan M (+x %), calibrated N (exact)"; empty without a KV figure
    std::vector<std::string> calibrationLines;  ///< "Calibration NAME", then its measured terms
    LogWhatFits whatFits;                       ///< the calibrated answers for other settings
};

/// The plan request for @p log's own settings: the engine the log implies, the model of
/// @p options (or the one the log names), its formats, the card (or an anonymous card of the
/// printed total), then applyLogSettings. A repo id the log names that cannot be read here
/// (offline, not in a hub cache) falls back to the profile of its base model, by name
/// ("meta-llama/Llama-3.1-8B-Instruct" -> llama-3.1-8b), and a sentence saying so goes to
/// @p notes. Errors say what to give (-m, -c).
/// The engine's rules are those of the version the log printed, else of the version its lines
/// imply (EngineLog::impliedVersion). @p fromLog receives the settings applyLogSettings took.
tl::expected<PlanRequest, std::string> logPlanRequest(const EngineLog& log, const LogReportOptions& options,
                                                      const ProfileSet& profiles, std::vector<std::string>* notes = nullptr,
                                                      std::vector<std::string>* fromLog = nullptr);

/// Parses @p text, plans, compares, calibrates and answers the what-fits (see the file comment).
/// @p logName names the log in the calibration ("serve.log", "stdin").
tl::expected<LogReport, LogReportError> analyzeEngineLog(std::string_view text, const std::string& logName,
                                                         const LogReportOptions& options, const ProfileSet& profiles);

/// The engine's own flag for its memory fraction ("--gpu-memory-utilization" for vLLM,
/// "--mem-fraction-static" SGLang, "--cuda-memory-fraction" TGI, "free_gpu_memory_fraction"
/// TensorRT-LLM); empty for engines without one.
std::string memoryFractionFlag(EngineKind kind);

} // namespace headroom
