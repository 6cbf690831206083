#pragma once
// The speed plot per split of the detail view: decode tokens/s of one sequence against the layers
// on the GPU (-ngl 0 .. n_layer + 1), each point core's plan of that --offload N with the shown plan's --fit
// expert overrides kept (offloadsweep.h keepFitPlacement;
// speed/splitspeed.h's step, host layers at the host's bandwidth, GPU layers at the card's). Steps
// that do not load are left out and named in the title; the split on show is marked.

#include "headroom/core/offloadsweep.h"

#include <QWidget>

#include <vector>

class QChartView;
class QLabel;
class QLineSeries;
class QScatterSeries;

namespace headroom::app {

class SplitSpeedChart : public QWidget
{
    Q_OBJECT
public:
    explicit SplitSpeedChart(QWidget* parent = nullptr);

    /// Plots @p steps with the split @p shownLayers marked; @p hostBandwidthText says what the host
    /// side was priced at ("89.6 GB/s assumed: dual-channel DDR5-5600").
    void setSteps(std::vector<OffloadStep> steps, std::uint32_t shownLayers, const QString& hostBandwidthText);
    /// Moves the mark to @p shownLayers.
    void setShown(std::uint32_t shownLayers);
    /// Empties the plot, saying @p why.
    void clear(const QString& why);

    const std::vector<OffloadStep>& steps() const { return m_steps; }
    QLineSeries* speedSeries() const { return m_line; }
    QScatterSeries* shownMark() const { return m_mark; }
    QChartView* view() const { return m_view; }
    QLabel* caption() const { return m_caption; }

private:
    void rebuild();

    QChartView* m_view = nullptr;
    QLabel* m_caption = nullptr;
    QLineSeries* m_line = nullptr;
    QScatterSeries* m_mark = nullptr;
    std::vector<OffloadStep> m_steps;
    std::uint32_t m_shown = 0;
    QString m_hostBandwidth;
};

} // namespace headroom::app
