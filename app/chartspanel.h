#pragma once
// The three plots of the detail: memory against context (a line per card, its usable limit
// dashed), the context x concurrency frontier per card, and decode tokens/s against batch
// (roofline estimate per card, and measured points when probed).

#include "headroom/core/plan.h"

#include <QWidget>

#include <cstdint>
#include <vector>

QT_BEGIN_NAMESPACE
class QChart;
class QChartView;
class QLabel;
QT_END_NAMESPACE

namespace headroom::app {

/// One card's plan of the detail's (model, format).
struct CardPlan {
    Card card;
    PlanResult plan;
};

/// A measured decode step.
struct MeasuredSpeed {
    std::uint64_t batch = 0;
    double tokensPerSecond = 0;
};

class ChartsPanel : public QWidget
{
    Q_OBJECT
public:
    explicit ChartsPanel(QWidget* parent = nullptr);

    void setPlans(std::vector<CardPlan> plans, std::uint64_t users, std::uint64_t contextTokens);
    void setMeasured(std::vector<MeasuredSpeed> measured);
    /// Re-themes the charts after a palette change.
    void refreshTheme();

    QChart* memoryChart() const;
    QChart* frontierChart() const;
    QChart* speedChart() const;
    /// The legend shared by the three plots (rich text).
    QString legendText() const;

private:
    void rebuild();

    QChartView* m_memory = nullptr;
    QChartView* m_frontier = nullptr;
    QChartView* m_speed = nullptr;
    QLabel* m_legend = nullptr;
    std::vector<CardPlan> m_plans;
    std::vector<MeasuredSpeed> m_measured;
    std::uint64_t m_users = 1;
    std::uint64_t m_context = 0;
};

/// A colour per card index, the same in every plot.
QColor cardColor(std::size_t index);

} // namespace headroom::app
