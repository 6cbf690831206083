#include "catalog.h"

#include "headroom/core/defaults.h"
#include "headroom/core/enginelog/calibration.h"
#include "headroom/core/resolve.h"

#include <algorithm>

namespace headroom::app {

Selection Selection::defaults()
{
    Selection s;
    s.modelId = kDefaultModelId;
    s.formatId = kDefaultWeightFormat;
    s.kvDtypeId = kDefaultKvDtype;
    s.engineId = kDefaultEngineId;
    s.cardIds = kDefaultCardIds;
    return s;
}

Catalog::Catalog(ProfileSet profiles)
    : m_profiles(std::move(profiles))
{
}

void Catalog::addImportedModel(ModelProfile model)
{
    auto it = std::find_if(m_imported.begin(), m_imported.end(), [&](const ModelProfile& m) { return m.id == model.id; });
    if (it != m_imported.end())
        *it = std::move(model);
    else
        m_imported.push_back(std::move(model));
}

void Catalog::setDetectedCards(std::vector<Card> cards)
{
    m_detected = std::move(cards);
}

bool Catalog::addSizedCard(const std::string& sizeText)
{
    const std::optional<Bytes> size = parseSize(sizeText);
    if (!size || size->value == 0)
        return false;
    if (findCard(sizeText))
        return true;
    m_sized.push_back(anonymousCard(sizeText, *size));
    return true;
}

const ModelProfile* Catalog::findModel(const std::string& id) const
{
    for (const ModelProfile& m : m_imported)
        if (m.id == id)
            return &m;
    return m_profiles.findModel(id);
}

const Card* Catalog::findCard(const std::string& id) const
{
    for (const Card& c : m_detected)
        if (c.id == id)
            return &c;
    for (const Card& c : m_sized)
        if (c.id == id)
            return &c;
    return m_profiles.findCard(id);
}

const EnginePolicy* Catalog::findEngine(const std::string& id) const
{
    return m_profiles.findEngine(id);
}

std::vector<std::string> Catalog::modelIds() const
{
    std::vector<std::string> ids;
    for (const ModelProfile& m : m_profiles.models)
        ids.push_back(m.id);
    for (const ModelProfile& m : m_imported)
        ids.push_back(m.id);
    return ids;
}

std::vector<const Card*> Catalog::allCards() const
{
    std::vector<const Card*> out;
    for (const Card& c : m_profiles.cards)
        out.push_back(&c);
    for (const Card& c : m_sized)
        out.push_back(&c);
    for (const Card& c : m_detected)
        out.push_back(&c);
    return out;
}

const std::vector<std::string>& matrixFormatIds()
{
    static const std::vector<std::string> ids = {"fp16", "fp8", "int8-row", "int4-g128", "nf4-b64", "awq-g128",
                                                 "q8_0", "q6_k", "q5_k", "q4_k", "q3_k", "q2_k"};
    return ids;
}

tl::expected<PlanRequest, std::string> requestFor(const Catalog& catalog, const Selection& selection,
                                                  const std::string& modelId, const std::string& formatId,
                                                  const std::string& cardId, const std::string& engineId)
{
    const ModelProfile* model = catalog.findModel(modelId);
    if (!model)
        return tl::unexpected("unknown model '" + modelId + "'");
    auto format = resolveFormat(formatId, *model);
    if (!format)
        return tl::unexpected(format.error());
    auto kv = resolveKvDtype(selection.kvDtypeId);
    if (!kv)
        return tl::unexpected(kv.error());
    const Card* card = catalog.findCard(cardId);
    if (!card)
        return tl::unexpected("unknown card '" + cardId + "'");
    const std::string engineName = engineId.empty() ? selection.engineId : engineId;
    const EnginePolicy* engine = catalog.findEngine(engineName);
    if (!engine)
        return tl::unexpected("unknown engine '" + engineName + "'");
    PlanRequest r;
    r.model = *model;
    r.format = *format;
    r.kvDtype = *kv;
    r.card = *card;
    r.engine = *engine;
    r.contextTokens = selection.contextTokens;
    r.users = selection.users;
    r.hostMemoryBytes = selection.hostMemoryBytes;
    r.hostBandwidthGBps = selection.hostBandwidthGBps;
    // The chosen micro-batch belongs to the chosen engine; a compared engine uses its own. Left at
    // the engine's own value it is not set, so that the engine derives it as the CLI does without
    // --ubatch (SGLang's chunked prefill by card size, for one).
    if (engineName == selection.engineId && selection.ubatchTokens != engine->ubatchTokens)
        r.ubatchTokens = selection.ubatchTokens;
    // A calibration saved from this card's engine log (the Log panel, headroom-cli log --save)
    // applies here as in the CLI, and the plan names it.
    return applySavedCalibration(std::move(r), catalog.userProfilesDir());
}

tl::expected<PlanResult, std::string> planFor(const Catalog& catalog, const Selection& selection, const std::string& modelId,
                                              const std::string& formatId, const std::string& cardId,
                                              const std::string& engineId)
{
    auto request = requestFor(catalog, selection, modelId, formatId, cardId, engineId);
    if (!request)
        return tl::unexpected(request.error());
    return makePlan(*request);
}

std::vector<MatrixRow> computeMatrix(const Catalog& catalog, const Selection& selection)
{
    std::vector<MatrixRow> rows;
    const auto addRow = [&](const std::string& modelId, const std::string& formatId, const std::string& label) {
        MatrixRow row{modelId, formatId, label, {}};
        for (const std::string& card : selection.cardIds)
            row.cells.push_back(planFor(catalog, selection, modelId, formatId, card));
        rows.push_back(std::move(row));
    };
    if (selection.mode == MatrixMode::Formats) {
        std::vector<std::string> formats = matrixFormatIds();
        if (std::find(formats.begin(), formats.end(), selection.formatId) == formats.end())
            formats.insert(formats.begin(), selection.formatId);
        // A model read from files also shows its own format (exact bytes), first.
        if (const ModelProfile* model = catalog.findModel(selection.modelId); model && model->exactWeights)
            if (std::find(formats.begin(), formats.end(), model->exactWeights->formatId) == formats.end())
                formats.insert(formats.begin(), model->exactWeights->formatId);
        for (const std::string& f : formats)
            addRow(selection.modelId, f, f);
    } else {
        for (const std::string& m : catalog.modelIds()) {
            const ModelProfile* model = catalog.findModel(m);
            addRow(m, selection.formatId, model && !model->name.empty() ? model->name : m);
        }
    }
    return rows;
}

Bytes kvAtPoint(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens)
{
    try {
        return kvBytes(plan.kv, users, contextTokens, plan.paging, plan.ubatchTokens);
    } catch (const OverflowError&) {
        return Bytes{UINT64_MAX};
    }
}

} // namespace headroom::app
