#pragma once
// What the app plans with: the profiles, the models imported in this session and the GPUs
// detected on this machine (Catalog), what the person chose (Selection), and the plans that
// follow from both. Plans are pure arithmetic (microseconds each: a 36-plan table takes under
// 30 ms in headroom-cli including process start), so they run on the GUI thread; importing a
// model file and probing run on workers (modelimporter.h, proberunner.h).

#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace headroom::app {

/// What the rows of the what-fits matrix are.
enum class MatrixMode {
    Formats, ///< the chosen model in several weight formats
    Models,  ///< every model in the chosen weight format
};

/// Every choice the main window offers.
struct Selection {
    std::string modelId;
    std::string formatId;
    std::string kvDtypeId;
    std::string engineId;
    std::vector<std::string> cardIds;
    std::uint64_t contextTokens = kDefaultContextTokens; ///< the same question as every face (verdict.h)
    std::uint64_t users = kDefaultUsers;
    std::uint64_t ubatchTokens = 512;
    MatrixMode mode = MatrixMode::Formats;
    /// Host memory free for the engine (the CLI's --host-ram): what a layer split keeps in host
    /// memory must fit in it (core's FitLimit::HostMemory, "too large for this machine"); absent:
    /// not checked.
    std::optional<Bytes> hostMemoryBytes;
    /// The host's memory bandwidth in 10^9 B/s (the CLI's --host-bandwidth): the speed of a split's
    /// host layers; absent: core's assumed dual-channel DDR5-5600.
    std::optional<double> hostBandwidthGBps;

    /// The defaults of core/defaults.h: llama-3.1-8b, int4-g128, fp16 KV, vLLM, the 8/16/24 GB cards.
    static Selection defaults();
};

/// Profiles plus what this session added.
class Catalog
{
public:
    Catalog() = default;
    explicit Catalog(ProfileSet profiles);

    const ProfileSet& profiles() const { return m_profiles; }
    /// The user profiles folder of this session (empty: none): calibrations saved from engine
    /// logs live below it, and plans on their card and engine use them.
    const std::filesystem::path& userProfilesDir() const { return m_userProfilesDir; }
    void setUserProfilesDir(std::filesystem::path dir) { m_userProfilesDir = std::move(dir); }
    const std::vector<ModelProfile>& importedModels() const { return m_imported; }
    const std::vector<Card>& detectedCards() const { return m_detected; }

    /// Adds (or replaces, by id) a model read from a file.
    void addImportedModel(ModelProfile model);
    /// Replaces the GPUs detected on this machine.
    void setDetectedCards(std::vector<Card> cards);
    /// Adds an anonymous card of a size ("12GiB"); false when the text is not a size.
    bool addSizedCard(const std::string& sizeText);
    const std::vector<Card>& sizedCards() const { return m_sized; }

    const ModelProfile* findModel(const std::string& id) const;
    const Card* findCard(const std::string& id) const;
    const EnginePolicy* findEngine(const std::string& id) const;

    /// Every model id, profiles first then imports.
    std::vector<std::string> modelIds() const;
    /// Every card: profiles, then sized cards, then detected GPUs.
    std::vector<const Card*> allCards() const;

private:
    ProfileSet m_profiles;
    std::filesystem::path m_userProfilesDir;
    std::vector<ModelProfile> m_imported;
    std::vector<Card> m_detected;
    std::vector<Card> m_sized;
};

/// The weight formats the Formats matrix shows, in order (GPU formats, then GGUF types).
const std::vector<std::string>& matrixFormatIds();

/// One plan of one (model, format, card) under the selection's engine, KV dtype, context, users
/// and micro-batch. @p engineId overrides the selection's engine (engine comparison).
tl::expected<PlanResult, std::string> planFor(const Catalog& catalog, const Selection& selection, const std::string& modelId,
                                              const std::string& formatId, const std::string& cardId,
                                              const std::string& engineId = {});

/// The request planFor makes (for tests and the probe runner).
tl::expected<PlanRequest, std::string> requestFor(const Catalog& catalog, const Selection& selection,
                                                  const std::string& modelId, const std::string& formatId,
                                                  const std::string& cardId, const std::string& engineId = {});

/// One row of the what-fits matrix: one (model, format) against every selected card.
struct MatrixRow {
    std::string modelId;
    std::string formatId;
    std::string label;                                   ///< what the row header shows
    std::vector<tl::expected<PlanResult, std::string>> cells; ///< one per selected card
};

/// The whole matrix for the selection: rows by mode, columns the selection's cards.
std::vector<MatrixRow> computeMatrix(const Catalog& catalog, const Selection& selection);

/// KV bytes at the selection's point (users x context) in a plan's layout and paging.
Bytes kvAtPoint(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens);

} // namespace headroom::app
