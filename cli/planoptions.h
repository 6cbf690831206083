#pragma once
// The options plan, table, frontier (and report, flags, probe) share, and their resolution into
// core plan requests.

#include "commands.h"

#include "headroom/core/defaults.h"
#include "headroom/core/plan.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace headroom::cli {

/// What the user typed; lists for the matrix commands.
struct PlanOptions {
    std::vector<std::string> models;
    std::vector<std::string> formats;
    std::vector<std::string> cards;
    std::string params;
    std::string kvDtype = "fp16";
    std::string engine;
    std::string reserve;
    std::string free;    ///< --free SIZE: device memory free now
    std::string used;    ///< --used SIZE: held by the desktop and other processes (free = total - SIZE)
    std::string offload; ///< --offload auto|N|none: GPU layers (N counted as llama.cpp -ngl)
    std::string hostRam; ///< --host-ram SIZE: host memory a split may use
    std::string hostBandwidth; ///< --host-bandwidth SPEC: ddr5-5600x2 or GB/s, the host layers' speed
    unsigned tp = 1;
    unsigned pp = 1;
    std::optional<std::uint64_t> context;
    std::optional<std::uint64_t> users;
    std::optional<std::uint64_t> ubatch;
    bool flashOn = false;   ///< --flash-attention
    bool flashOff = false;  ///< --no-flash-attention
    bool json = false;
    std::string calibration; ///< --calibration FILE (`headroom-cli log -o`); "none" turns the saved one off
    std::vector<std::string> settings; ///< --set KEY=VALUE, the engine's own settings
    std::string draft;        ///< --draft MODEL: a draft model for speculative decoding, in the bill
    std::string draftWeights; ///< --draft-weights FORMAT (default: the draft's files' format, else the target's)
    /// Set by addPlanOptions for the one-plan commands: several --card values are the GPUs of that
    /// one plan (CUDA0, CUDA1, ... in order: PlanRequest::card and moreGpus), not a matrix.
    bool cardsAreGpus = false;
};

/// Registers the options on @p cmd; @p multi makes --model/--weights/--card take several values.
void addPlanOptions(CLI::App* cmd, PlanOptions& o, bool multi);

/// CLI11 validator of a size option ("8GiB", "24GB", "16384MiB"): a negative size says so.
CLI::Validator sizeValidator();

/// One request per (model, format, card), in that nesting order, with the question defaults of
/// verdict.h applied, and the calibration of --calibration FILE or the one saved in
/// @p calibrations (none without). Errors name the bad input (a --reserve the card cannot hold
/// among them).
tl::expected<std::vector<PlanRequest>, std::string> buildRequests(const PlanOptions& o, const ProfileSet& profiles,
                                                                 const CalibrationFolder* calibrations = nullptr);

/// Fills the matrix defaults for what is not given: the default model and the 8/16/24 GB cards
/// (table, report). The format and the question (users, context) default in buildRequests, the
/// same for every command: the files' format else int4-g128, and withQuestionDefaults().
void applyMatrixDefaults(PlanOptions& o);

/// Runs every request; the first error stops.
tl::expected<std::vector<PlanResult>, std::string> runPlans(const std::vector<PlanRequest>& requests);

inline constexpr const char* kDefaultModel = kDefaultModelId;
inline constexpr const char* kDefaultFormat = kDefaultWeightFormat;
inline const std::vector<std::string>& kDefaultCards = kDefaultCardIds;
inline constexpr const char* kDefaultEngine = kDefaultEngineId;

} // namespace headroom::cli
