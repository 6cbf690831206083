#include "proberesultsmodel.h"

#include "formatting.h"
#include "whatfitsmodel.h"

namespace headroom::app {

ProbeResultsModel::ProbeResultsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void ProbeResultsModel::setRows(std::vector<ProbeRow> rows)
{
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
}

int ProbeResultsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int ProbeResultsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString ProbeResultsModel::valueText(ProbeUnit unit, std::uint64_t value)
{
    switch (unit) {
    case ProbeUnit::Bytes:
        return QStringLiteral("%1 B (%2)").arg(thousands(value), bytesText(Bytes{value}));
    case ProbeUnit::Tokens:
        return QStringLiteral("%1 tokens").arg(thousands(value));
    case ProbeUnit::Nanoseconds:
        return QStringLiteral("%1 ms").arg(static_cast<double>(value) / 1e6, 0, 'f', 3);
    case ProbeUnit::BytesPerSecond:
        return QStringLiteral("%1 GB/s").arg(static_cast<double>(value) / 1e9, 0, 'f', 2);
    case ProbeUnit::FlopsPerSecond:
        return QStringLiteral("%1 GFLOP/s").arg(static_cast<double>(value) / 1e9, 0, 'f', 1);
    }
    return {};
}

QVariant ProbeResultsModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const ProbeRow& r = m_rows[static_cast<std::size_t>(index.row())];
    const auto signedDiff = static_cast<double>(r.measured) - static_cast<double>(r.predicted);
    const ProbeVerdict verdict = r.verdictOf();
    if (role == Qt::BackgroundRole && index.column() == Verdict) {
        // Only pass and fail are coloured: not supported, cancelled and measured rows are neither.
        if (verdict == ProbeVerdict::Pass)
            return fitColor(Fit::Reaches);
        if (verdict == ProbeVerdict::Fail)
            return fitColor(Fit::NoRoom);
        return {};
    }
    if (role == Qt::TextAlignmentRole && index.column() >= Predicted && index.column() <= Difference)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    if (role == RawRole) {
        switch (index.column()) {
        case Predicted:
            return QVariant::fromValue<quint64>(r.predicted);
        case Measured:
            return QVariant::fromValue<quint64>(r.measured);
        case Difference:
            return signedDiff;
        case Verdict:
            return static_cast<int>(verdict);
        default:
            return data(index, Qt::DisplayRole);
        }
    }
    if (role == Qt::ToolTipRole && (index.column() == Quantity || index.column() == Note))
        return index.column() == Quantity ? r.quantity : r.note;
    // The values' columns are capped in width by the panel: their full text is the tooltip too.
    if (role == Qt::ToolTipRole && (index.column() == Predicted || index.column() == Measured))
        return data(index, Qt::DisplayRole);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Probe:
        return r.probe;
    case Quantity:
        return r.quantity;
    case Predicted:
        return r.predicted == 0 && r.unit != ProbeUnit::Bytes && r.unit != ProbeUnit::Tokens ? QStringLiteral("-") : valueText(r.unit, r.predicted);
    case Measured:
        return verdict == ProbeVerdict::NotSupported ? QStringLiteral("-") : valueText(r.unit, r.measured);
    case Difference:
        if (r.predicted == 0 || (r.measured == 0 && verdict != ProbeVerdict::Pass && verdict != ProbeVerdict::Fail))
            return QStringLiteral("-");
        return fixedText(100.0 * signedDiff / static_cast<double>(r.predicted), 2, true) + QStringLiteral(" %");
    case Verdict:
        return verdictText(verdict);
    case Note:
        return r.note;
    default:
        return {};
    }
}

QString ProbeResultsModel::verdictText(ProbeVerdict verdict)
{
    switch (verdict) {
    case ProbeVerdict::Pass: return QStringLiteral("pass");
    case ProbeVerdict::Fail: return QStringLiteral("FAIL");
    case ProbeVerdict::NotSupported: return QStringLiteral("not supported");
    case ProbeVerdict::Cancelled: return QStringLiteral("cancelled");
    case ProbeVerdict::Measured: return QStringLiteral("measured");
    }
    return {};
}

QVariant ProbeResultsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* names[ColumnCount] = {"Probe", "Quantity", "Predicted", "Measured", "Difference", "Verdict", "Note"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

} // namespace headroom::app
