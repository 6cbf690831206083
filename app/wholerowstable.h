#pragma once
// A table view that ends on a whole row: no half row at its bottom edge (the Engines compared
// table, the What fits matrix).

#include <QTableView>

namespace headroom::app {

/// A table that ends its view on a whole row (no half row at its bottom edge): a bottom viewport
/// margin of what is left below the last whole row, fitted whenever rows, size or scroll change.
class WholeRowsTable : public QTableView
{
public:
    explicit WholeRowsTable(QWidget* parent = nullptr) : QTableView(parent) {}
    /// Sets the bottom margin from the rows now shown; called by itself on every geometry change.
    void fitWholeRows();

protected:
    void updateGeometries() override;
    void scrollContentsBy(int dx, int dy) override;

private:
    void applyBottom();

    bool m_fitting = false;
    int m_bottom = 0; ///< the bottom margin that ends the view on a whole row
};

} // namespace headroom::app
