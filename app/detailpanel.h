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
class GpuLayersControl;
class MemoryBar;
class ProbeBackend;
class ProbePanel;
class SplitSpeedChart;

class DetailPanel : public QWidget
{
    Q_OBJECT
public:
    explicit DetailPanel(std::shared_ptr<ProbeBackend> probeBackend, QWidget* parent = nullptr);

    /// Plans (model, format, card) under @p selection and shows it; an empty @p cardId shows why not.
    void setCell(const Catalog& catalog, const Selection& selection, const std::string& modelId, const std::string& formatId,
                 const std::string& cardId);
    const std::optional<PlanResult>& plan() const { return m_plan; }
    /// Plans the cell on show again with @p gpuLayers on the GPU (--offload N; nullopt: the
    /// engine's own split) and shows it: verdict, memory bars, bill and the mark on the speed plot.
    void chooseGpuLayers(std::optional<std::uint32_t> gpuLayers);

    QLabel* title() const { return m_title; }
    QLabel* limits() const { return m_limits; }
    MemoryBar* memoryBar() const { return m_bar; }
    QLabel* memoryLegend() const { return m_barLegend; }
    /// The host RAM row of the memory bar (shown when something stays in host memory).
    MemoryBar* hostBar() const { return m_hostBar; }
    QLabel* hostLegend() const { return m_hostLegend; }
    GpuLayersControl* gpuLayers() const { return m_layers; }
    SplitSpeedChart* splitSpeed() const { return m_splitSpeed; }
    QTabWidget* tabs() const { return m_tabs; }
    ChartsPanel* charts() const { return m_charts; }
    BillPanel* bill() const { return m_bill; }
    EnginesPanel* engines() const { return m_engines; }
    ProbePanel* probes() const { return m_probes; }

private:
    void showNoPlan(const QString& why);
    /// Shows @p p (the cell's plan, or the same with --offload N): verdict, bars, bill, split.
    void showPlan(const PlanResult& p);

    std::optional<PlanResult> m_plan;
    std::optional<PlanRequest> m_request; ///< the cell's request, re-planned by the GPU-layers slider
    /// m_request with the chosen plan's --fit expert placement kept (keepFitPlacement): what the
    /// speed per split and a layer count on the slider plan
    std::optional<PlanRequest> m_stepRequest;
    std::uint64_t m_users = 0;
    std::uint64_t m_context = 0;
    QLabel* m_title = nullptr;
    QLabel* m_limits = nullptr;
    MemoryBar* m_bar = nullptr;
    QLabel* m_barLegend = nullptr;
    MemoryBar* m_hostBar = nullptr;
    QLabel* m_hostLegend = nullptr;
    GpuLayersControl* m_layers = nullptr;
    SplitSpeedChart* m_splitSpeed = nullptr;
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
