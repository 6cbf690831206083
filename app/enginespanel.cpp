#include "enginespanel.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTextBrowser>

namespace headroom::app {

EnginesPanel::EnginesPanel(QWidget* parent) : QSplitter(Qt::Vertical, parent)
{
    m_model = new EngineComparisonModel(this);
    m_view = new QTableView;
    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(m_model);
    proxy->setSortRole(EngineComparisonModel::RawRole);
    m_view->setModel(proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(-1, Qt::AscendingOrder);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 8);
    // The figures keep their whole text; the engine's name takes the width left and wraps in its
    // row (rows are fitted again whenever a column changes width).
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(EngineComparisonModel::Engine, QHeaderView::Stretch);
    m_view->setWordWrap(true);
    connect(m_view->horizontalHeader(), &QHeaderView::sectionResized, m_view, &QTableView::resizeRowsToContents, Qt::QueuedConnection);
    // The binding limit of each engine is in the text below (and the Engine column's tooltip).
    m_view->setColumnHidden(EngineComparisonModel::Limit, true);
    m_view->setAlternatingRowColors(true);
    m_why = new QTextBrowser;
    m_why->setOpenLinks(false);
    addWidget(m_view);
    addWidget(m_why);
    setStretchFactor(0, 3);
    setStretchFactor(1, 2);
    setSizes({260, 160});
}

void EnginesPanel::setRows(std::vector<EngineRow> rows)
{
    QString why = QStringLiteral("<p>The same model, format and card under each engine's own memory rule. They differ in "
                                 "how much of the card they take (a fraction of the total, or the total less a fixed reserve), "
                                 "what they subtract before the KV cache (profiled activation peak, runtime, CUDA graphs), "
                                 "and how they page the cache (blocks per sequence, or padded cells).</p><ul>");
    for (const EngineRow& r : rows) {
        why += QStringLiteral("<li><b>%1</b>: %2").arg(QString::fromStdString(r.policy.name).toHtmlEscaped(), explainPolicy(r.policy).toHtmlEscaped());
        if (r.plan)
            why += QStringLiteral(". <i>%1</i>").arg(QString::fromStdString(r.plan->verdict.reason).toHtmlEscaped());
        else
            why += QStringLiteral(". <i>%1</i>").arg(QString::fromStdString(r.plan.error()).toHtmlEscaped());
        why += QStringLiteral("</li>");
    }
    why += QStringLiteral("</ul>");
    m_why->setHtml(why);
    m_model->setRows(std::move(rows));
}

void EnginesPanel::clear()
{
    m_model->setRows({});
    m_why->clear();
}

} // namespace headroom::app
