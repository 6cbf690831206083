#pragma once
// The detail of one cell: its title, the verdict in words, the memory bar, and the tabs (plots,
// memory bill, engines compared, probes). Each tab is its own panel with its own model; this
// widget only hands them the plan of the cell.

#include "catalog.h"

#include <QWidget>

#include <memory>
#include <optional>

class QLabel;
class QTabWidget;

namespace headroom::app {

class BillPanel;
class ChartsPanel;
class EnginesPanel;
class MemoryBar;
class ProbeBackend;
class ProbePanel;

class DetailPanel : public QWidget
{
    Q_OBJECT
public:
    explicit DetailPanel(std::shared_ptr<ProbeBackend> probeBackend, QWidget* parent = nullptr);

    /// Plans (model, format, card) under @p selection and shows it; an empty @p cardId shows why not.
    void setCell(const Catalog& catalog, const Selection& selection, const std::string& modelId, const std::string& formatId,
                 const std::string& cardId);
    const std::optional<PlanResult>& plan() const { return m_plan; }

    QLabel* title() const { return m_title; }
    QLabel* limits() const { return m_limits; }
    MemoryBar* memoryBar() const { return m_bar; }
    QLabel* memoryLegend() const { return m_barLegend; }
    QTabWidget* tabs() const { return m_tabs; }
    ChartsPanel* charts() const { return m_charts; }
    BillPanel* bill() const { return m_bill; }
    EnginesPanel* engines() const { return m_engines; }
    ProbePanel* probes() const { return m_probes; }

private:
    void showNoPlan(const QString& why);

    std::optional<PlanResult> m_plan;
    QLabel* m_title = nullptr;
    QLabel* m_limits = nullptr;
    MemoryBar* m_bar = nullptr;
    QLabel* m_barLegend = nullptr;
    QTabWidget* m_tabs = nullptr;
    ChartsPanel* m_charts = nullptr;
    BillPanel* m_bill = nullptr;
    EnginesPanel* m_engines = nullptr;
    ProbePanel* m_probes = nullptr;
};

/// The verdict of a plan in one line of rich text: the state in bold, then the reason and the
/// plan's capacity figures ("max context for 4 users", "max users at 8,192", resident tokens).
QString verdictText(const PlanResult& plan);

} // namespace headroom::app
