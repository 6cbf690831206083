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
    }
    return {};
}

QVariant ProbeResultsModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const ProbeRow& r = m_rows[static_cast<std::size_t>(index.row())];
    const auto signedDiff = static_cast<double>(r.measured) - static_cast<double>(r.predicted);
    if (role == Qt::BackgroundRole && index.column() == Verdict)
        return fitColor(r.pass ? Fit::Reaches : Fit::NoRoom);
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
            return r.pass;
        default:
            return data(index, Qt::DisplayRole);
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Probe:
        return r.probe;
    case Quantity:
        return r.quantity;
    case Predicted:
        return valueText(r.unit, r.predicted);
    case Measured:
        return valueText(r.unit, r.measured);
    case Difference:
        if (r.predicted == 0)
            return QStringLiteral("-");
        return QStringLiteral("%1%2 %").arg(signedDiff >= 0 ? QStringLiteral("+") : QString())
            .arg(100.0 * signedDiff / static_cast<double>(r.predicted), 0, 'f', 2);
    case Verdict:
        return r.pass ? QStringLiteral("pass") : QStringLiteral("FAIL");
    case Note:
        return r.note;
    default:
        return {};
    }
}

QVariant ProbeResultsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* names[ColumnCount] = {"Probe", "Quantity", "Predicted", "Measured", "Difference", "Verdict", "Note"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

} // namespace headroom::app
