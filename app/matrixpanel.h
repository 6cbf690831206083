#pragma once
// The What-fits panel: the caption (the question, from the selection) and the matrix of models or
// weight formats against cards. Its model is WhatFitsModel; choosing a cell says which.

#include "catalog.h"

#include <QWidget>

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace headroom::app {

class WhatFitsModel;

class MatrixPanel : public QWidget
{
    Q_OBJECT
public:
    explicit MatrixPanel(QWidget* parent = nullptr);

    /// Recomputes the matrix and the caption for @p selection.
    void setSelection(const Catalog& catalog, const Selection& selection);
    /// Makes (model, format, card) the current cell without a cellChosen signal.
    void showCurrent(const std::string& modelId, const std::string& formatId, const std::string& cardId);
    /// The height that shows the caption, the header and every row (at least 4).
    int preferredHeight() const;

    WhatFitsModel* model() const { return m_model; }
    QTableView* view() const { return m_view; }
    QLabel* caption() const { return m_caption; }

protected:
    void resizeEvent(QResizeEvent* event) override;

Q_SIGNALS:
    /// A cell was chosen; @p cardId is empty for a fixed column (the row's model or format only).
    void cellChosen(const std::string& modelId, const std::string& formatId, const std::string& cardId);

private:
    /// Shares the width left of the fixed columns among the cards, none below m_minCardWidth
    /// (the view scrolls sideways beyond that).
    void fitCardColumns();

    WhatFitsModel* m_model = nullptr;
    int m_minCardWidth = 0; ///< pixels: the longest word of a card's header
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_view = nullptr;
    QLabel* m_caption = nullptr;
};

/// The matrix caption of a selection: the question in words, from the selection (never a cell).
QString matrixCaption(const Catalog& catalog, const Selection& selection);

} // namespace headroom::app
