#pragma once
/// @file enginelogcase.h
/// The engine-log corpus of tests/data/engine-logs (format: README.md there): loading a case,
/// planning it from the card total and the engine's settings, comparing every printed figure,
/// and printing the accuracy table as text (the test) and Markdown (docs/accuracy.md).

#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headroom::test {

/// One figure an engine printed.
struct PrintedFigure {
    std::string name;          ///< "kv_cache_tokens", "num_gpu_blocks", "max_total_num_tokens", ... (README)
    double printed = 0;        ///< as printed, in `unit`
    std::string unit;          ///< "tokens", "blocks", "x", "GiB", "MiB"
    bool headline = false;     ///< the case's headline figure (its capacity figure, or its placement figure in a placement-only case)
    double tolerancePct = 2.0; ///< |error| allowed, percent
    bool expectMiss = false;   ///< known miss, explained by missTerm
    std::string missTerm;      ///< the term that causes the miss (after diagnosis)
    std::string logLine;       ///< the line it was read from
};

/// What a case's headline figure measures (the case's `headline_kind`, README "Format").
enum class HeadlineFigureKind {
    Capacity,  ///< default: what the engine can hold (KV tokens/blocks/bytes, a KV or state buffer): counted by issue 9
    Placement, ///< the source prints no capacity figure, only where the weights went: counted under placement only
};

/// One case file.
struct EngineLogCase {
    std::string file;                          ///< path, for errors
    std::string id;
    std::string sourceUrl;
    std::string engine;                        ///< "vllm", "sglang", "tgi", "tensorrt-llm", "llama.cpp", "ollama"
    std::string engineVersion;
    nlohmann::json model;                      ///< {"profile": id} or {"config": {...}}
    std::string weights;
    std::string kvDtype;
    std::string kvDtypeV;                      ///< llama.cpp -ctv, when it differs
    std::optional<std::string> cardProfile;
    std::optional<std::uint64_t> cardTotalBytes;
    std::optional<std::uint64_t> cardFreeBytes; ///< free memory the engine measured at start (card/free_bytes)
    /// card/free_bytes as a list: one GPU of the same card per entry (Ollama's memory.available
    /// "[22.0 GiB 22.0 GiB ...]"); the first is cardFreeBytes, these are the further GPUs' (PlanRequest::moreGpus).
    std::vector<std::uint64_t> moreGpuFreeBytes;
    /// card/library "cpu": the engine ran on the host (Ollama's library=cpu: discover.GetCPUInfo has
    /// no MinimumMemory, so the engine's fixed per-GPU reserve is 0); absent: a GPU.
    bool cardIsHost = false;
    std::uint32_t tensorParallel = 1;
    std::uint32_t pipelineParallel = 1;
    std::map<std::string, std::string> settings; ///< the engine's own spelling
    nlohmann::json inputs;                     ///< measured inputs, when the case names any
    std::vector<std::string> tags;
    std::vector<PrintedFigure> figures;
    HeadlineFigureKind headlineKind = HeadlineFigureKind::Capacity;
};

/// True for a figure that measures capacity: what the engine can hold (vLLM KV cache tokens, GPU
/// blocks, available KV bytes, concurrency; SGLang max_total_num_tokens and K+V sizes; TGI max batch
/// total tokens; TensorRT-LLM KV tokens and blocks; llama.cpp/Ollama KV buffers of any device, KV
/// cells, the recurrent state buffer, --fit's context). Weight sizes and layer counts are not.
bool isCapacityFigure(const std::string& name);

/// Reads one case; errors name the file and the key.
tl::expected<EngineLogCase, std::string> loadEngineLogCase(const std::filesystem::path& file);
/// Reads every *.json of @p dir, sorted by name.
tl::expected<std::vector<EngineLogCase>, std::string> loadEngineLogCases(const std::filesystem::path& dir);

/// One figure compared.
struct FigureOutcome {
    std::string name;
    std::string unit;
    double printed = 0;
    std::optional<double> predicted;  ///< in `unit`; absent when the plan has no such figure
    double errorPct = 0;              ///< (predicted - printed) / printed * 100
    bool headline = false;
    bool within = false;
    double tolerancePct = 2.0;
    bool expectMiss = false;
    std::string missTerm;
};

/// One case compared.
struct CaseOutcome {
    std::string id;
    std::string engine;
    std::string engineVersion;
    std::string error;                 ///< the plan could not be made (input error)
    HeadlineFigureKind headlineKind = HeadlineFigureKind::Capacity;
    std::vector<FigureOutcome> figures;
};

/// Counts over headline capacity figures (issue 9): placement-only cases are left out.
struct AccuracySummary {
    int cases = 0;     ///< capacity cases
    int headline = 0;  ///< headline capacity figures
    int within = 0;    ///< ... within tolerance
    double rate() const { return headline > 0 ? static_cast<double>(within) / headline : 0.0; }
};

/// Counts over placement cases (issue 11): a case whose log prints where things live (llama.cpp's
/// "offloaded N/M layers", a device's model/KV/compute buffer of a split or a CPU run, Ollama's
/// layers.offload), and every placement-only case. Such a case is within when every figure it has is within tolerance: the
/// placement and every per-device byte figure, reproduced from the settings alone.
struct PlacementSummary {
    int cases = 0;
    int within = 0;
    double rate() const { return cases > 0 ? static_cast<double>(within) / cases : 0.0; }
};

/// True for a figure that says where something lives: a layer count of a split
/// (offloaded_layers, layers_offload) or one device's buffer (gpu_/host_ model and KV buffers,
/// cudaN_* per-device figures, Ollama's layers_split_N and memory_required_allocation_N).
bool isPlacementFigure(const std::string& name);

/// Every case compared.
struct AccuracyReport {
    std::vector<CaseOutcome> cases;
    AccuracySummary total() const;
    std::map<std::string, AccuracySummary> byEngine() const;
    PlacementSummary placement() const;
    /// Placement-only cases (headline_kind "placement"), left out of total() and byEngine().
    int placementOnlyCases() const;
    /// True when @p c is a placement case (it has a placement figure, or it is placement-only).
    static bool isPlacementCase(const CaseOutcome& c);
    /// True when every figure of @p c is within its tolerance.
    static bool allWithin(const CaseOutcome& c);
};

/// The plan request of a case: its model, formats, card, engine and settings.
tl::expected<PlanRequest, std::string> planRequestFor(const EngineLogCase& c, const ProfileSet& profiles);

/// Plans every case and compares its figures.
AccuracyReport evaluateEngineLogCases(const std::vector<EngineLogCase>& cases, const ProfileSet& profiles);

/// The table as plain text (one row per figure, then the per-engine summary).
std::string formatAccuracyText(const AccuracyReport& report);
/// docs/accuracy.md.
std::string formatAccuracyMarkdown(const AccuracyReport& report);

} // namespace headroom::test
