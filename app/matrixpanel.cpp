#include "matrixpanel.h"
#include "wholerowstable.h"

#include "choicespanel.h"
#include "formatting.h"
#include "placementindicator.h"
#include "whatfitsmodel.h"

#include "headroom/core/verdict.h"

#include <QHeaderView>
#include <QLabel>
#include <QResizeEvent>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QStringList>
#include <QTableView>
#include <QVBoxLayout>

namespace headroom::app {

namespace {

// One legend entry: its words on one line (non-breaking spaces), so that at a narrow width a whole
// entry moves to the next line instead of splitting ("partial" / "offload").
QString legendChip(const QString& text, const QColor& color)
{
    return QStringLiteral("<span style='background:%1'>&nbsp;%2&nbsp;</span>")
        .arg(color.name(), text.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
}

} // namespace

QString matrixCaption(const Catalog& catalog, const Selection& s)
{
    const EnginePolicy* engine = catalog.findEngine(s.engineId);
    const QString caption = QString::fromStdString(headlineCaption(HeadlineKind::MaxContextPerUser, s.users, s.contextTokens));
    return QStringLiteral("<b>What fits</b>: %1 (asked: %2 tokens each), %3 KV, %4. ")
               .arg(caption.toHtmlEscaped(), thousands(s.contextTokens), QString::fromStdString(s.kvDtypeId),
                    engine ? QString::fromStdString(engine->name).toHtmlEscaped() : QString())
        + QStringList{legendChip(QStringLiteral("fits"), fitColor(Fit::Reaches)),
                      legendChip(QStringLiteral("fits with less (the limit in brackets)"), fitColor(Fit::Short)),
                      legendChip(QStringLiteral("partial offload"), fitColor(Fit::Partial)),
                      legendChip(QStringLiteral("does not fit"), fitColor(Fit::NoRoom))}
              .join(QLatin1Char(' '))
        + QStringLiteral(". Placement: ") + placementLegendHtml();
}

MatrixPanel::MatrixPanel(QWidget* parent) : QWidget(parent)
{
    m_model = new WhatFitsModel(this);
    m_view = new WholeRowsTable; // ends on a whole row
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(WhatFitsModel::RawRole);
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(false);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setSelectionBehavior(QAbstractItemView::SelectItems);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_view->horizontalHeader()->setSectionResizeMode(WhatFitsModel::Name, QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(WhatFitsModel::Weights, QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setDefaultAlignment(Qt::Alignment(Qt::AlignCenter | Qt::TextWordWrap));
    // A reason too long for its column wraps onto a second line rather than losing the number
    // that matters ("no: weights + overheads 7.43 > 7.01 GiB"); rows grow to their text.
    m_view->setWordWrap(true);
    m_view->setTextElideMode(Qt::ElideRight);
    m_view->setAccessibleName(QStringLiteral("What fits"));
    m_view->setHorizontalScrollMode(QAbstractItemView::ScrollPerPixel);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 8);
    m_view->verticalHeader()->setMinimumSectionSize(m_view->fontMetrics().height() + 8);
    // Row heights follow the column widths (a vertical ResizeToContents header does not re-measure
    // when the columns stretch, so the rows are fitted again after every column resize).
    connect(m_view->horizontalHeader(), &QHeaderView::sectionResized, this, [this](int column) {
        if (column < WhatFitsModel::FixedColumnCount)
            fitCardColumns();
        m_view->resizeRowsToContents();
    });
    m_caption = new QLabel;
    m_caption->setWordWrap(true);
    m_caption->setToolTip(QStringLiteral("\"no: weights X > Y\": the weights alone exceed Y, the memory the engine lets "
                                         "the model use on that card (its usable bytes). Hover a cell for the whole reason."));

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 0);
    layout->addWidget(m_caption);
    layout->addWidget(m_view, 1);

    const auto onCell = [this](const QModelIndex& proxyIndex) {
        const QModelIndex index = m_proxy->mapToSource(proxyIndex);
        if (const MatrixRow* row = m_model->row(index.row()))
            Q_EMIT cellChosen(row->modelId, row->formatId, m_model->cardId(index.column()));
    };
    connect(m_view, &QTableView::clicked, this, onCell);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this, onCell);
}

void MatrixPanel::setSelection(const Catalog& catalog, const Selection& selection)
{
    // With many cards the size goes on a line of its own, no column gets narrower than its
    // card's longest word (the view scrolls sideways instead), and the header takes three lines.
    const bool many = selection.cardIds.size() > 4;
    const QFontMetrics fm = m_view->horizontalHeader()->fontMetrics();
    int widestWord = 0;
    std::vector<QString> labels;
    for (const std::string& id : selection.cardIds) {
        QString label = cardLabel(*catalog.findCard(id));
        if (many)
            label.replace(QStringLiteral(" ("), QStringLiteral("\n("));
        for (const QString& word : label.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts))
            widestWord = std::max(widestWord, fm.horizontalAdvance(word));
        labels.push_back(label);
    }
    m_model->setMatrix(computeMatrix(catalog, selection), selection.cardIds, labels, selection.contextTokens);
    m_caption->setText(matrixCaption(catalog, selection));
    m_minCardWidth = widestWord + 14;
    const int lines = many ? 3 : 1;
    m_view->horizontalHeader()->setMinimumHeight(lines * fm.height() + 10);
    fitCardColumns();
    m_view->resizeRowsToContents();
}

void MatrixPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    fitCardColumns();
}

void MatrixPanel::fitCardColumns()
{
    QHeaderView* header = m_view->horizontalHeader();
    const int columns = m_model->columnCount();
    const int cards = columns - WhatFitsModel::FixedColumnCount;
    if (cards <= 0)
        return;
    int fixed = 0;
    for (int c = 0; c < WhatFitsModel::FixedColumnCount; ++c)
        fixed += header->sectionSize(c);
    const int available = m_view->viewport()->width() - fixed;
    const int width = std::max(m_minCardWidth, available / cards);
    for (int c = WhatFitsModel::FixedColumnCount; c < columns; ++c)
        header->resizeSection(c, width);
    // The chosen cell stays in sight once the columns have their widths.
    if (m_view->currentIndex().isValid())
        QMetaObject::invokeMethod(m_view, [view = m_view] { view->scrollTo(view->currentIndex()); }, Qt::QueuedConnection);
}

void MatrixPanel::showCurrent(const std::string& modelId, const std::string& formatId, const std::string& cardId)
{
    const QModelIndex current = m_proxy->mapFromSource(m_model->find(modelId, formatId, cardId));
    {
        const QSignalBlocker block(m_view->selectionModel());
        m_view->selectionModel()->setCurrentIndex(current, QItemSelectionModel::ClearAndSelect);
    }
    if (current.isValid())
        m_view->scrollTo(current);
}

int MatrixPanel::preferredHeight() const
{
    const int rows = std::max(m_model->rowCount(), 4);
    return m_caption->sizeHint().height() + m_view->horizontalHeader()->height()
        + rows * m_view->verticalHeader()->defaultSectionSize() + 16;
}

} // namespace headroom::app
