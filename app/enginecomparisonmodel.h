#pragma once
// The same model and card under each engine policy, side by side: what each engine lets the
// model use, the KV room it leaves, and the limits that follow.

#include "catalog.h"

#include <QAbstractTableModel>

namespace headroom::app {

/// One engine's plan of the detail cell.
struct EngineRow {
    EnginePolicy policy;
    tl::expected<PlanResult, std::string> plan;
};

/// Every engine of the catalog for (model, format, card) at the selection's point.
std::vector<EngineRow> compareEngines(const Catalog& catalog, const Selection& selection, const std::string& modelId,
                                      const std::string& formatId, const std::string& cardId);

/// One sentence on how an engine sizes memory (from its policy data), e.g. "keeps 1.00 GiB free
/// per device (--fit); cells padded to 256 with flash attention; plans at least 4,096 tokens".
QString explainPolicy(const EnginePolicy& policy);

class EngineComparisonModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Engine, Reserved, Usable, Overheads, KvBudget, ResidentTokens, MaxContext, MaxUsers, Paging, Limit, ColumnCount };
    enum Role {
        RawRole = Qt::UserRole,
        /// True on the Reserved cell of an engine that cannot run the plan (Verdict::engineCannotRun):
        /// the cell holds the verdict's reason and spans the figure columns (FirstFigure..LastFigure).
        ReasonSpanRole,
    };
    /// The figure columns an engine that cannot run the plan leaves to its reason.
    static constexpr int FirstFigure = Reserved;
    /// See FirstFigure.
    static constexpr int LastFigure = Paging;

    explicit EngineComparisonModel(QObject* parent = nullptr);

    void setRows(std::vector<EngineRow> rows);
    const std::vector<EngineRow>& rows() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<EngineRow> m_rows;
};

} // namespace headroom::app
