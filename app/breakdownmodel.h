#pragma once
// The memory bill of one plan at the chosen point (users x context): weights, each overhead,
// the KV cache at that point, what stays free, the engine's reserve, and (when the point does
// not fit) the overflow. Shared by the stacked memory bar and the bill table.

#include "headroom/core/plan.h"

#include <QAbstractTableModel>
#include <QColor>
#include <QString>

#include <vector>

namespace headroom::app {

/// One slice of the card.
struct BillSegment {
    enum class Kind { Weights, Overhead, Kv, Free, Reserved, Over };
    Kind kind = Kind::Weights;
    QString name;   ///< "weights", "activation_peak", "KV cache", "free", "utilization_headroom", "over by"
    Bytes bytes;
    QString note;   ///< how it was priced
    bool host = false; ///< kept in host RAM (a layer split's host side, splitbill.h), not on the card
};

/// The slices in bar order; their sum is the card total when weights and overheads fit in
/// usable, plus the KV beyond usable ("KV over by").
std::vector<BillSegment> billSegments(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens);

/// A colour per slice kind (overheads cycle through a few shades), readable in both palettes.
QColor segmentColor(const BillSegment& segment, int overheadIndex);

class BreakdownModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Item, ExactBytes, Size, Share, Note, ColumnCount };
    enum Role { RawRole = Qt::UserRole };

    explicit BreakdownModel(QObject* parent = nullptr);

    void setPlan(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens);
    void clear();
    /// Every row: the card's slices, then (with a layer split) the host RAM's.
    const std::vector<BillSegment>& segments() const { return m_segments; }
    /// The card's slices (the memory bar's row): with a layer split, its GPU side.
    std::vector<BillSegment> cardSegments() const;
    /// What stays in host RAM (the memory bar's host row); empty when nothing does.
    std::vector<BillSegment> hostSegments() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<BillSegment> m_segments;
    Bytes m_cardTotal;
};

} // namespace headroom::app
