#include "enginecomparisonmodel.h"

#include "formatting.h"
#include "whatfitsmodel.h"

#include <QStringList>

namespace headroom::app {

std::vector<EngineRow> compareEngines(const Catalog& catalog, const Selection& selection, const std::string& modelId,
                                      const std::string& formatId, const std::string& cardId)
{
    std::vector<EngineRow> rows;
    for (const EnginePolicy& e : catalog.profiles().engines)
        rows.push_back({e, planFor(catalog, selection, modelId, formatId, cardId, e.id)});
    return rows;
}

QString explainPolicy(const EnginePolicy& p)
{
    QStringList parts;
    switch (p.kind) {
    case EngineKind::Vllm:
        parts << QStringLiteral("asks for %1 % of the card total (gpu_memory_utilization), then subtracts the profiled peak")
                     .arg(p.memoryFraction * 100, 0, 'f', 0);
        break;
    case EngineKind::LlamaCpp:
        parts << QStringLiteral("--fit keeps %1 free per device").arg(bytesText(p.fixedReserve));
        break;
    case EngineKind::SgLang:
        parts << QStringLiteral("mem_fraction_static from a reserved-memory formula by card size");
        break;
    case EngineKind::Tgi:
        parts << QStringLiteral("uses %1 % of free memory after the warm-up prefill").arg(p.memoryFraction * 100, 0, 'f', 0);
        break;
    case EngineKind::TensorRtLlm:
        parts << QStringLiteral("gives the KV cache %1 % of free memory after a dry run").arg(p.memoryFraction * 100, 0, 'f', 0);
        break;
    case EngineKind::Ollama:
        parts << QStringLiteral("keeps %1 per CUDA GPU; default context by VRAM tier").arg(bytesText(p.fixedReserve));
        break;
    case EngineKind::Flat:
        parts << QStringLiteral("usable = card total - %1").arg(bytesText(p.fixedReserve));
        break;
    }
    if (p.blockTokens > 1)
        parts << QStringLiteral("KV in blocks of %1 tokens per sequence").arg(p.blockTokens);
    if (p.cellPaddingFlash > 1 || p.cellPaddingNoFlash > 1)
        parts << QStringLiteral("cells padded to %1 with flash attention, %2 without").arg(p.cellPaddingFlash).arg(p.cellPaddingNoFlash);
    if (p.minContextTokens > 0)
        parts << QStringLiteral("plans at least %1 tokens").arg(thousands(p.minContextTokens));
    if (p.runtimeBytes.value > 0)
        parts << QStringLiteral("%1 runtime outside its allocator").arg(bytesText(p.runtimeBytes));
    if (p.cudaGraphBytes.value > 0)
        parts << QStringLiteral("%1 of CUDA graphs").arg(bytesText(p.cudaGraphBytes));
    if (p.fragmentationFraction > 0)
        parts << QStringLiteral("%1 % fragmentation").arg(p.fragmentationFraction * 100, 0, 'f', 1);
    return parts.join(QStringLiteral("; "));
}

EngineComparisonModel::EngineComparisonModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void EngineComparisonModel::setRows(std::vector<EngineRow> rows)
{
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
}

int EngineComparisonModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int EngineComparisonModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant EngineComparisonModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const EngineRow& row = m_rows[static_cast<std::size_t>(index.row())];
    const int column = index.column();
    if (column == Engine) {
        if (role == Qt::DisplayRole || role == RawRole)
            return QString::fromStdString(row.policy.name);
        // The engine's name carries the verdict's colour, as the what-fits matrix does.
        if (role == Qt::BackgroundRole)
            return fitColor(WhatFitsModel::fitOf(row.plan, 0));
        if (role == Qt::ToolTipRole)
            return explainPolicy(row.policy) + (row.plan ? QStringLiteral("\n") + QString::fromStdString(row.plan->reason) : QString());
        return {};
    }
    if (!row.plan) {
        if (role == Qt::DisplayRole && column == Limit)
            return QString::fromStdString(row.plan.error());
        return {};
    }
    const PlanResult& p = *row.plan;
    if (p.verdict.engineCannotRun()) {
        // The engine never starts on this plan (verdict.h): no bill, no capacity, only the verdict
        // and its reason, in one cell over the figure columns (EnginesPanel sets the span).
        const bool reasonCell = column == FirstFigure || column == Limit;
        if (role == ReasonSpanRole)
            return column == FirstFigure;
        if (reasonCell && (role == Qt::DisplayRole || role == RawRole || role == Qt::ToolTipRole))
            return QString::fromStdString(p.verdict.reason);
        if (reasonCell && role == Qt::TextAlignmentRole)
            return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
        return {};
    }
    if (role == ReasonSpanRole)
        return false;
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue((column == Limit || column == Paging ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter);
    const auto bytesCell = [&](Bytes b) -> QVariant {
        if (role == Qt::DisplayRole)
            return bytesText(b);
        if (role == RawRole)
            return QVariant::fromValue<quint64>(b.value);
        if (role == Qt::ToolTipRole)
            return exactBytesText(b);
        return {};
    };
    const auto countCell = [&](std::uint64_t n) -> QVariant {
        // Capacity only for an engine that loads the plan (verdict.h): else the reason, below.
        if (!p.verdict.loads()) {
            if (role == Qt::DisplayRole)
                return QStringLiteral("no");
            if (role == Qt::ToolTipRole)
                return QString::fromStdString(p.verdict.reason);
            return role == RawRole ? QVariant::fromValue<quint64>(0) : QVariant();
        }
        if (role == Qt::DisplayRole)
            return thousands(n);
        if (role == RawRole)
            return QVariant::fromValue<quint64>(n);
        return {};
    };
    switch (column) {
    case Reserved:
        return bytesCell(totalBytes(p.reserved));
    case Usable:
        return bytesCell(p.usableBytes);
    case Overheads:
        return bytesCell(totalBytes(p.overheads));
    case KvBudget:
        return bytesCell(p.kvBudgetBytes);
    case ResidentTokens:
        return countCell(p.maxResidentTokens);
    case MaxContext:
        return countCell(p.maxContext.value_or(0));
    case MaxUsers:
        return countCell(p.maxUsers.value_or(0));
    case Paging:
        if (role == Qt::DisplayRole || role == RawRole) {
            if (p.paging.blockTokens > 1)
                return QStringLiteral("%1-token blocks").arg(p.paging.blockTokens);
            if (p.paging.cellPadding > 1)
                return QStringLiteral("pad %1 cells").arg(p.paging.cellPadding);
            return QStringLiteral("none");
        }
        return {};
    case Limit:
        if (role == Qt::DisplayRole || role == RawRole)
            return QString::fromStdString(p.reason);
        if (role == Qt::ToolTipRole)
            return explainPolicy(row.policy);
        return {};
    default:
        return {};
    }
}

QVariant EngineComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == ResidentTokens)
        return QStringLiteral("Max resident tokens: what the KV budget holds in all");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* names[ColumnCount] = {"Engine",          "Kept free", "Usable",      "Overheads",
                                             "KV budget",       "Tokens",    "Max context", "Max users",
                                             "Paging",       "Binding limit"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

} // namespace headroom::app
