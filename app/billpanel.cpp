#include "billpanel.h"

#include "breakdownmodel.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>

namespace headroom::app {

BillPanel::BillPanel(QWidget* parent) : QTableView(parent)
{
    m_model = new BreakdownModel(this);
    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(m_model);
    proxy->setSortRole(BreakdownModel::RawRole);
    setModel(proxy);
    verticalHeader()->hide();
    verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    horizontalHeader()->setStretchLastSection(true);
    setAlternatingRowColors(true);
    setAccessibleName(QStringLiteral("Memory bill"));
}

void BillPanel::setPlan(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens)
{
    m_model->setPlan(plan, users, contextTokens);
}

void BillPanel::clear() { m_model->clear(); }

} // namespace headroom::app
