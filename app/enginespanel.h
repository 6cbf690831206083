#pragma once
// The Engines compared tab: the detail's model, format and card under every engine, and in
// words each engine's rule and its verdict. Its model is EngineComparisonModel.

#include "enginecomparisonmodel.h"

#include <QSplitter>

class QTableView;
class QTextBrowser;

namespace headroom::app {

class EnginesPanel : public QSplitter
{
    Q_OBJECT
public:
    explicit EnginesPanel(QWidget* parent = nullptr);

    void setRows(std::vector<EngineRow> rows);
    void clear();
    EngineComparisonModel* comparison() const { return m_model; }
    QTextBrowser* explanation() const { return m_why; }
    /// Bottom margin that ends the explanation's view on a whole line (no half line at its edge).
    void fitWholeLines();
    /// Bottom margin that ends the table's view on a whole row (no half row at its edge).
    void fitWholeRows();

    /// Spans the reason of each engine that cannot run the plan over the figure columns.
    void spanReasons();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    EngineComparisonModel* m_model = nullptr;
    QTableView* m_view = nullptr;
    QTextBrowser* m_why = nullptr;
};

} // namespace headroom::app
