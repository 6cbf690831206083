#include "wholerowstable.h"

#include <algorithm>

namespace headroom::app {

void WholeRowsTable::fitWholeRows()
{
    if (m_fitting || !model())
        return;
    m_fitting = true;
    m_bottom = 0;
    applyBottom();
    const int visible = viewport()->height();
    int lastBottom = 0;
    const int first = rowAt(0);
    for (int r = std::max(first, 0); first >= 0 && r < model()->rowCount(); ++r) {
        if (isRowHidden(r))
            continue;
        const int bottom = rowViewportPosition(r) + rowHeight(r);
        if (bottom > visible) {
            if (lastBottom > 0) // a first row taller than the view stays as it is, cut
                m_bottom = visible - lastBottom;
            break;
        }
        lastBottom = bottom;
    }
    applyBottom();
    m_fitting = false;
}

void WholeRowsTable::updateGeometries()
{
    // QTableView sets the headers' room as the left and top margins, and the bottom to 0.
    QTableView::updateGeometries();
    if (m_fitting)
        applyBottom();
    else
        fitWholeRows();
}

void WholeRowsTable::scrollContentsBy(int dx, int dy)
{
    QTableView::scrollContentsBy(dx, dy);
    fitWholeRows();
}

void WholeRowsTable::applyBottom()
{
    const QMargins m = viewportMargins();
    if (m.bottom() != m_bottom)
        setViewportMargins(m.left(), m.top(), m.right(), m_bottom);
}

} // namespace headroom::app
