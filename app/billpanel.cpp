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
    // "How it is priced" takes the width left and wraps inside its row rather than ending in
    // "..."; rows are fitted again whenever a column changes width (as in the matrix).
    horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    horizontalHeader()->setSectionResizeMode(BreakdownModel::Note, QHeaderView::Stretch);
    setWordWrap(true);
    connect(horizontalHeader(), &QHeaderView::sectionResized, this, &QTableView::resizeRowsToContents);
    setAlternatingRowColors(true);
    setAccessibleName(QStringLiteral("Memory bill"));
}

void BillPanel::setPlan(const PlanResult& plan, std::uint64_t users, std::uint64_t contextTokens)
{
    m_model->setPlan(plan, users, contextTokens);
    resizeRowsToContents();
}

void BillPanel::clear() { m_model->clear(); }

} // namespace headroom::app
