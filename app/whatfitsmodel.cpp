#include "whatfitsmodel.h"

#include "formatting.h"
#include "placementindicator.h"

#include <QGuiApplication>
#include <QPalette>

namespace headroom::app {

WhatFitsModel::WhatFitsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void WhatFitsModel::setMatrix(std::vector<MatrixRow> rows, std::vector<std::string> cardIds, std::vector<QString> cardLabels,
                              std::uint64_t contextTokens)
{
    beginResetModel();
    m_rows = std::move(rows);
    m_cardIds = std::move(cardIds);
    m_cardLabels = std::move(cardLabels);
    m_contextTokens = contextTokens;
    endResetModel();
}

int WhatFitsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int WhatFitsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : FixedColumnCount + static_cast<int>(m_cardIds.size());
}

const MatrixRow* WhatFitsModel::row(int r) const
{
    return r >= 0 && r < static_cast<int>(m_rows.size()) ? &m_rows[static_cast<std::size_t>(r)] : nullptr;
}

const PlanResult* WhatFitsModel::plan(const QModelIndex& index) const
{
    const MatrixRow* r = index.isValid() ? row(index.row()) : nullptr;
    const int card = index.column() - FixedColumnCount;
    if (!r || card < 0 || card >= static_cast<int>(r->cells.size()))
        return nullptr;
    const auto& cell = r->cells[static_cast<std::size_t>(card)];
    return cell ? &*cell : nullptr;
}

std::string WhatFitsModel::cardId(int column) const
{
    const int card = column - FixedColumnCount;
    return card >= 0 && card < static_cast<int>(m_cardIds.size()) ? m_cardIds[static_cast<std::size_t>(card)] : std::string();
}

QModelIndex WhatFitsModel::find(const std::string& modelId, const std::string& formatId, const std::string& cardId) const
{
    for (std::size_t r = 0; r < m_rows.size(); ++r) {
        if (m_rows[r].modelId != modelId || m_rows[r].formatId != formatId)
            continue;
        for (std::size_t c = 0; c < m_cardIds.size(); ++c)
            if (m_cardIds[c] == cardId)
                return index(static_cast<int>(r), FixedColumnCount + static_cast<int>(c));
        return index(static_cast<int>(r), Name);
    }
    return {};
}

Fit WhatFitsModel::fitOf(const tl::expected<PlanResult, std::string>& cell, std::uint64_t)
{
    if (!cell)
        return Fit::Error;
    switch (cell->verdict.state) {
    case FitState::Fits:
        return Fit::Reaches;
    case FitState::FitsWithLess:
        return Fit::Short;
    case FitState::PartialOffload:
        return Fit::Partial;
    case FitState::DoesNotFit:
        return Fit::NoRoom;
    }
    return Fit::NoRoom;
}

QString WhatFitsModel::cellText(const tl::expected<PlanResult, std::string>& cell)
{
    if (!cell)
        return QStringLiteral("error: %1").arg(QString::fromStdString(cell.error()));
    return QString::fromStdString(verdictCellText(cell->verdict));
}

int fitIndex(Fit f) { return static_cast<int>(f); }

QColor fitColor(Fit fit)
{
    const bool dark = QGuiApplication::palette().color(QPalette::Window).lightness() < 128;
    switch (fit) {
    case Fit::Reaches:
        return dark ? QColor(0x1e, 0x5c, 0x32) : QColor(0xc6, 0xef, 0xce);
    case Fit::Short:
        return dark ? QColor(0x6b, 0x55, 0x10) : QColor(0xff, 0xeb, 0x9c);
    case Fit::Partial:
        return dark ? QColor(0x1f, 0x4e, 0x79) : QColor(0xc9, 0xdd, 0xf2);
    case Fit::NoRoom:
    case Fit::Error:
        return dark ? QColor(0x73, 0x22, 0x22) : QColor(0xff, 0xc7, 0xce);
    }
    return {};
}

QVariant WhatFitsModel::data(const QModelIndex& index, int role) const
{
    const MatrixRow* r = index.isValid() ? row(index.row()) : nullptr;
    if (!r)
        return {};
    const int column = index.column();
    const auto firstPlan = [&]() -> const PlanResult* {
        for (const auto& cell : r->cells)
            if (cell)
                return &*cell;
        return nullptr;
    };
    if (column == Name) {
        if (role == Qt::DisplayRole || role == RawRole)
            return QString::fromStdString(r->label);
        if (role == Qt::ToolTipRole)
            return QStringLiteral("%1 in %2").arg(QString::fromStdString(r->modelId), QString::fromStdString(r->formatId));
        return {};
    }
    if (column == Weights) {
        const PlanResult* p = firstPlan();
        if (!p)
            return {};
        if (role == Qt::DisplayRole)
            return bytesText(p->weightsBytes);
        if (role == RawRole)
            return QVariant::fromValue<quint64>(p->weightsBytes.value);
        if (role == Qt::TextAlignmentRole)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        if (role == Qt::ToolTipRole)
            return QStringLiteral("%1 B%2").arg(thousands(p->weightsBytes.value),
                                               p->weightsExact ? QStringLiteral(" (exact, from the files)") : QString());
        return {};
    }
    const int card = column - FixedColumnCount;
    if (card < 0 || card >= static_cast<int>(r->cells.size()))
        return {};
    const auto& cell = r->cells[static_cast<std::size_t>(card)];
    const Fit fit = fitOf(cell, m_contextTokens);
    switch (role) {
    case Qt::DisplayRole:
        return cellText(cell);
    case RawRole:
        return QVariant::fromValue<quint64>(cell ? cell->verdict.headline.value : 0);
    case FitRole:
        return fitIndex(fit);
    // The fit indicator: where the model goes in memory; no placement where the engine cannot run
    // the request at all (verdict.h: only the verdict and its reason are printed for it), but a
    // glyph of its own, the struck circle, so that every refusal carries one.
    case PlacementRole:
        return cell && !cell->verdict.engineCannotRun() ? QVariant(static_cast<int>(placementOf(*cell))) : QVariant();
    case Qt::DecorationRole:
        if (!cell)
            return {};
        return QVariant(cell->verdict.engineCannotRun() ? engineCannotRunIcon() : placementIcon(placementOf(*cell)));
    case Qt::BackgroundRole:
        return fitColor(fit);
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(fit == Fit::Reaches || fit == Fit::Short || fit == Fit::Partial ? Qt::AlignRight | Qt::AlignVCenter
                                                                            : Qt::AlignLeft | Qt::AlignVCenter);
    case Qt::ToolTipRole:
        if (!cell)
            return QString::fromStdString(cell.error());
        return QStringLiteral("%1 %2 on %3\n%4: %5\nweights %6, overheads %7, usable %8 (card total %9)")
            .arg(QString::fromStdString(cell->modelId), QString::fromStdString(cell->formatId), QString::fromStdString(cell->cardId),
                 QString::fromStdString(headlineCaption(cell->verdict.headline)), thousands(cell->verdict.headline.value),
                 bytesText(cell->weightsBytes), bytesText(totalBytes(cell->overheads)), bytesText(cell->usableBytes),
                 bytesText(cell->cardTotalBytes))
            + QLatin1Char('\n') + QString::fromStdString(cell->verdict.reason) + (cell->verdict.engineCannotRun() ? QString() : QLatin1Char('\n') + placementToolTip(*cell));
    default:
        return {};
    }
}

QVariant WhatFitsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= columnCount())
        return QAbstractTableModel::headerData(section, orientation, role);
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    switch (section) {
    case Name:
        return role == Qt::DisplayRole ? QStringLiteral("Model / format") : QStringLiteral("One row per model or weight format");
    case Weights:
        return role == Qt::DisplayRole ? QStringLiteral("Weights") : QStringLiteral("Weight bytes on one device");
    default: {
        const std::size_t card = static_cast<std::size_t>(section - FixedColumnCount);
        if (role == Qt::DisplayRole)
            return m_cardLabels[card];
        return QStringLiteral("Max context per user on %1").arg(QString::fromStdString(m_cardIds[card]));
    }
    }
}

} // namespace headroom::app
