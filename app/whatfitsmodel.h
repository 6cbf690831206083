#pragma once
// The what-fits matrix: models or weight formats (rows) against cards (columns). A card cell
// prints core's verdict (verdict.h): the headline number, coloured by the state, with the binding
// limit or why not; the app computes none of it.

#include "catalog.h"

#include <QAbstractTableModel>
#include <QColor>

namespace headroom::app {

/// How a cell answers.
enum class Fit {
    Reaches,   ///< the chosen users each get at least the chosen context
    Short,     ///< fits, but with less context than chosen
    Partial,   ///< loads only with some layers in host memory (llama.cpp / Ollama partial offload)
    NoRoom,    ///< weights + overheads leave no room for one block per user, or the weights alone exceed usable
    Error,     ///< the plan could not be made
};

class WhatFitsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    /// The fixed columns; one column per card follows.
    enum Column { Name, Weights, FixedColumnCount };
    /// RawRole: the sort key; FitRole: the Fit as int; PlacementRole: core's Placement as int
    /// (the fit indicator's shape, placementindicator.h), absent for an error cell and where the
    /// engine cannot run the request (Verdict::engineCannotRun).
    enum Role { RawRole = Qt::UserRole, FitRole, PlacementRole };

    explicit WhatFitsModel(QObject* parent = nullptr);

    void setMatrix(std::vector<MatrixRow> rows, std::vector<std::string> cardIds, std::vector<QString> cardLabels,
                   std::uint64_t contextTokens);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    const MatrixRow* row(int r) const;
    /// The plan of a card cell, or nullptr (fixed column, error).
    const PlanResult* plan(const QModelIndex& index) const;
    /// The card id of a column, or empty for a fixed column.
    std::string cardId(int column) const;
    /// The index of (modelId, formatId, cardId), or invalid.
    QModelIndex find(const std::string& modelId, const std::string& formatId, const std::string& cardId) const;

    static Fit fitOf(const tl::expected<PlanResult, std::string>& cell, std::uint64_t contextTokens);
    /// The verdict's state (fits / fits with less / does not fit); the context is not needed.
    /// The cell text: core's verdictCellText ("31,600", "2,368 (memory)", "no: weights 14.96 > 14.01 GiB").
    static QString cellText(const tl::expected<PlanResult, std::string>& cell);

private:
    std::vector<MatrixRow> m_rows;
    std::vector<std::string> m_cardIds;
    std::vector<QString> m_cardLabels;
    std::uint64_t m_contextTokens = 0;
};

/// Background colour of a fit in the current palette (light or dark).
QColor fitColor(Fit fit);

} // namespace headroom::app
