#include "breakdownmodel.h"

#include "splitsegments.h"

#include "catalog.h"
#include "formatting.h"

#include <QGuiApplication>
#include <QPalette>

namespace headroom::app {

std::vector<BillSegment> billSegments(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens)
{
    using Kind = BillSegment::Kind;
    std::vector<BillSegment> out;
    out.push_back({Kind::Weights, QStringLiteral("weights"), plan.weightsBytes,
                   QString::fromStdString(plan.formatId) + (plan.weightsExact ? QStringLiteral(", exact from the files") : QString())});
    for (const OverheadItem& o : plan.overheads)
        out.push_back({Kind::Overhead, QString::fromStdString(o.name), o.bytes, QString::fromStdString(o.note)});
    const Bytes kv = kvAtPoint(plan, users, contextTokens);
    const Bytes used = plan.weightsBytes + totalBytes(plan.overheads);
    const Bytes room = saturatingSub(plan.usableBytes, used);
    const Bytes kvShown = kv < room ? kv : room;
    out.push_back({Kind::Kv, QStringLiteral("KV cache"), kvShown,
                   QStringLiteral("%1 users x %2 tokens, %3 B/token").arg(thousands(users), thousands(contextTokens),
                                                                          thousands(plan.kvBytesPerToken.value))});
    out.push_back({Kind::Free, QStringLiteral("free"), saturatingSub(room, kv), QStringLiteral("usable, not used at this point")});
    for (const OverheadItem& r : plan.reserved)
        out.push_back({Kind::Reserved, QString::fromStdString(r.name), r.bytes, QString::fromStdString(r.note)});
    // KV beyond what weights and overheads leave of usable: drawn past the card's end.
    const Bytes over = saturatingSub(kv, room);
    if (over.value > 0)
        out.push_back({Kind::Over, QStringLiteral("KV over by"), over, QStringLiteral("KV at this point beyond what the engine allows")});
    return out;
}

QColor segmentColor(const BillSegment& segment, int overheadIndex)
{
    const bool dark = QGuiApplication::palette().color(QPalette::Window).lightness() < 128;
    using Kind = BillSegment::Kind;
    switch (segment.kind) {
    case Kind::Weights:
        return QColor(0x4e, 0x79, 0xa7);
    case Kind::Overhead: {
        static const QColor shades[] = {QColor(0xf2, 0x8e, 0x2b), QColor(0xed, 0xc9, 0x48), QColor(0xb0, 0x7a, 0xa1),
                                        QColor(0x9c, 0x75, 0x5f), QColor(0xff, 0x9d, 0xa7)};
        return shades[overheadIndex % 5];
    }
    case Kind::Kv:
        return QColor(0x59, 0xa1, 0x4f);
    case Kind::Free:
        return dark ? QColor(0x45, 0x4d, 0x55) : QColor(0xdd, 0xe3, 0xe8);
    case Kind::Reserved:
        return dark ? QColor(0x6c, 0x75, 0x7d) : QColor(0xa0, 0xa8, 0xb0);
    case Kind::Over:
        return QColor(0xd6, 0x27, 0x28);
    }
    return {};
}

BreakdownModel::BreakdownModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void BreakdownModel::setPlan(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens)
{
    beginResetModel();
    // A layer split bills the card's side of the split, then the host RAM's (splitbill.h).
    const SplitBill split = splitBill(plan);
    m_segments = gpuSplitSegments(plan, split);
    if (m_segments.empty())
        m_segments = billSegments(plan, users, contextTokens);
    for (BillSegment& h : app::hostSegments(split)) {
        h.host = true;
        m_segments.push_back(std::move(h));
    }
    m_cardTotal = plan.cardTotalBytes;
    endResetModel();
}

std::vector<BillSegment> BreakdownModel::cardSegments() const
{
    std::vector<BillSegment> out;
    for (const BillSegment& s : m_segments)
        if (!s.host)
            out.push_back(s);
    return out;
}

std::vector<BillSegment> BreakdownModel::hostSegments() const
{
    std::vector<BillSegment> out;
    for (const BillSegment& s : m_segments)
        if (s.host)
            out.push_back(s);
    return out;
}

void BreakdownModel::clear()
{
    beginResetModel();
    m_segments.clear();
    m_cardTotal = Bytes{};
    endResetModel();
}

int BreakdownModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_segments.size());
}

int BreakdownModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant BreakdownModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const BillSegment& s = m_segments[static_cast<std::size_t>(index.row())];
    const double share = m_cardTotal.value ? 100.0 * static_cast<double>(s.bytes.value) / static_cast<double>(m_cardTotal.value) : 0;
    if (role == Qt::TextAlignmentRole && (index.column() == ExactBytes || index.column() == Size || index.column() == Share))
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::DecorationRole && index.column() == Item) {
        int overhead = 0;
        for (int i = 0; i < index.row(); ++i)
            overhead += m_segments[static_cast<std::size_t>(i)].kind == BillSegment::Kind::Overhead;
        return segmentColor(s, overhead);
    }
    if (role == RawRole) {
        switch (index.column()) {
        case Item:
        case Note:
            return data(index, Qt::DisplayRole);
        case Share:
            return s.host ? 0.0 : share;
        default:
            return QVariant::fromValue<quint64>(s.bytes.value);
        }
    }
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    switch (index.column()) {
    case Item:
        return s.host ? QStringLiteral("host RAM: ") + s.name : s.name;
    case ExactBytes:
        return thousands(s.bytes.value);
    case Size:
        return bytesText(s.bytes);
    case Share:
        return s.host ? QStringLiteral("(host)") : QStringLiteral("%1 %").arg(share, 0, 'f', 1);
    case Note:
        return s.note;
    default:
        return {};
    }
}

QVariant BreakdownModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Item:
        return QStringLiteral("Memory");
    case ExactBytes:
        return QStringLiteral("Bytes");
    case Size:
        return QStringLiteral("Size");
    case Share:
        return QStringLiteral("Of card");
    case Note:
        return QStringLiteral("How it is priced");
    default:
        return {};
    }
}

} // namespace headroom::app
