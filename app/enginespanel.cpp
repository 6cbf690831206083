#include "enginespanel.h"
#include "wholerowstable.h"

#include <QAbstractTextDocumentLayout>

#include <QEvent>
#include <QHeaderView>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextLayout>
#include <QSortFilterProxyModel>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QTextBrowser>

namespace headroom::app {

namespace {

// A text browser whose viewport margins can be set from outside (QAbstractScrollArea keeps it protected).
class MarginBrowser : public QTextBrowser
{
public:
    using QAbstractScrollArea::setViewportMargins;
};

// The reason of an engine that cannot run the plan spans the figure columns: it asks for no width
// of its own column when the columns are fitted to their contents (no rect given), and for the
// height of its text wrapped in the spanned width when the row is fitted (QTableView passes it).
class ReasonSpanDelegate : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override
    {
        const QSize hint = QStyledItemDelegate::sizeHint(option, index);
        if (index.data(EngineComparisonModel::ReasonSpanRole).toBool() && option.rect.width() <= 0)
            return {0, hint.height()};
        return hint;
    }
};


} // namespace

EnginesPanel::EnginesPanel(QWidget* parent) : QSplitter(Qt::Vertical, parent)
{
    m_model = new EngineComparisonModel(this);
    m_view = new WholeRowsTable;
    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(m_model);
    proxy->setSortRole(EngineComparisonModel::RawRole);
    m_view->setModel(proxy);
    m_view->setItemDelegate(new ReasonSpanDelegate(m_view));
    // Spans follow the rows when they are sorted.
    connect(proxy, &QAbstractItemModel::layoutChanged, this, &EnginesPanel::spanReasons);
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
    // The table, like the text below it, ends on a whole row wherever it is scrolled to.
    connect(m_view->verticalHeader(), &QHeaderView::sectionResized, this, &EnginesPanel::fitWholeRows);
    // The binding limit of each engine is in the text below (and the Engine column's tooltip).
    m_view->setColumnHidden(EngineComparisonModel::Limit, true);
    m_view->setAlternatingRowColors(true);
    m_why = new MarginBrowser;
    m_why->setOpenLinks(false);
    m_why->installEventFilter(this);
    m_why->verticalScrollBar()->setSingleStep(m_why->fontMetrics().lineSpacing());
    addWidget(m_view);
    addWidget(m_why);
    setStretchFactor(0, 3);
    setStretchFactor(1, 2);
    setSizes({260, 160});
}

void EnginesPanel::setRows(std::vector<EngineRow> rows)
{
    // Paragraphs without margins (a hanging indent for each engine) keep every line on one grid,
    // so that fitWholeLines() can end the view on a whole line.
    QString why = QStringLiteral("<p style=\"margin:0\">The same model, format and card under each engine's own memory rule. They differ in "
                                 "how much of the card they take (a fraction of the total, or the total less a fixed reserve), "
                                 "what they subtract before the KV cache (profiled activation peak, runtime, CUDA graphs), "
                                 "and how they page the cache (blocks per sequence, or padded cells).</p>");
    for (const EngineRow& r : rows) {
        why += QStringLiteral("<p style=\"margin:0; margin-left:14px; text-indent:-10px\">• <b>%1</b>: %2")
                   .arg(QString::fromStdString(r.policy.name).toHtmlEscaped(), explainPolicy(r.policy).toHtmlEscaped());
        if (r.plan)
            why += QStringLiteral(". <i>%1</i>").arg(QString::fromStdString(r.plan->verdict.reason).toHtmlEscaped());
        else
            why += QStringLiteral(". <i>%1</i>").arg(QString::fromStdString(r.plan.error()).toHtmlEscaped());
        why += QStringLiteral("</p>");
    }
    m_why->setHtml(why);
    fitWholeLines();
    m_model->setRows(std::move(rows));
    spanReasons();
    m_view->resizeRowsToContents();
    fitWholeRows();
}

void EnginesPanel::spanReasons()
{
    m_view->clearSpans();
    const QAbstractItemModel* shown = m_view->model();
    for (int r = 0; r < shown->rowCount(); ++r)
        if (shown->index(r, EngineComparisonModel::FirstFigure).data(EngineComparisonModel::ReasonSpanRole).toBool())
            m_view->setSpan(r, EngineComparisonModel::FirstFigure, 1,
                            EngineComparisonModel::LastFigure - EngineComparisonModel::FirstFigure + 1);
}

void EnginesPanel::fitWholeRows() { static_cast<WholeRowsTable*>(m_view)->fitWholeRows(); }

void EnginesPanel::fitWholeLines()
{
    auto* browser = static_cast<MarginBrowser*>(m_why);
    browser->setViewportMargins(0, 0, 0, 0);
    const QTextDocument* doc = m_why->document();
    doc->documentLayout()->documentSize(); // lays the document out at the current width
    const double visible = m_why->contentsRect().height();
    double lastBottom = 0;
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
        const double top = doc->documentLayout()->blockBoundingRect(b).top();
        for (int i = 0; b.layout() && i < b.layout()->lineCount(); ++i) {
            const double bottom = top + b.layout()->lineAt(i).rect().bottom();
            if (bottom > visible)
                return browser->setViewportMargins(0, 0, 0, static_cast<int>(visible - lastBottom));
            lastBottom = bottom;
        }
    }
}

bool EnginesPanel::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_why && event->type() == QEvent::Resize)
        fitWholeLines();
    return QSplitter::eventFilter(watched, event);
}

void EnginesPanel::clear()
{
    m_model->setRows({});
    m_view->clearSpans();
    m_why->clear();
}

} // namespace headroom::app
