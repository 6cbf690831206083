#include "splitspeedchart.h"

#include "chartstyle.h"
#include "placementindicator.h"

#include <QGuiApplication>
#include <QLabel>
#include <QPalette>
#include <QStringList>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>

namespace headroom::app {

namespace {

const QString kTitle = QStringLiteral("Decode tokens/s vs GPU layers (one sequence)");

} // namespace

SplitSpeedChart::SplitSpeedChart(QWidget* parent) : QWidget(parent)
{
    auto* chart = new QChart;
    chart->setMargins(QMargins(2, 2, 6, 2));
    chart->legend()->hide();
    m_view = new QChartView(chart);
    m_view->setRenderHint(QPainter::Antialiasing);
    m_view->setMinimumSize(260, 150);
    m_view->setAccessibleName(QStringLiteral("Speed per split"));
    m_caption = new QLabel;
    m_caption->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->setSpacing(2);
    layout->addWidget(m_caption);
    layout->addWidget(m_view, 1);
    clear(QStringLiteral("no plan"));
}

void SplitSpeedChart::setSteps(std::vector<OffloadStep> steps, std::uint32_t shownLayers, const QString& hostBandwidthText)
{
    m_steps = std::move(steps);
    m_shown = shownLayers;
    m_hostBandwidth = hostBandwidthText;
    rebuild();
}

void SplitSpeedChart::setShown(std::uint32_t shownLayers)
{
    m_shown = shownLayers;
    rebuild();
}

void SplitSpeedChart::clear(const QString& why)
{
    m_steps.clear();
    QChart* chart = m_view->chart();
    resetChart(chart, emptyTitle(kTitle, why));
    m_line = nullptr;
    m_mark = nullptr;
    m_caption->clear();
}

void SplitSpeedChart::rebuild()
{
    QChart* chart = m_view->chart();
    resetChart(chart, kTitle);
    m_line = nullptr;
    m_mark = nullptr;
    if (m_steps.empty()) {
        chart->setTitle(emptyTitle(kTitle, QStringLiteral("this engine keeps every layer on the GPU")));
        m_caption->clear();
        return;
    }
    auto* x = new QValueAxis;
    auto* y = new QValueAxis;
    styleAxis(x, QStringLiteral("layers on the GPU (-ngl)"));
    styleAxis(y, QStringLiteral("tokens/s"));
    x->setLabelFormat(QStringLiteral("%.0f"));
    y->setLabelFormat(QStringLiteral("%.0f"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    const QColor ink = QGuiApplication::palette().color(QPalette::Text);
    m_line = new QLineSeries;
    m_line->setName(QStringLiteral("decode tokens/s"));
    m_line->setPen(QPen(QColor(0x4e, 0x79, 0xa7), 2));
    m_line->setPointsVisible(true);
    m_mark = new QScatterSeries;
    m_mark->setName(QStringLiteral("the split on show"));
    m_mark->setMarkerSize(11);
    m_mark->setColor(QColor(0xe1, 0x57, 0x59));
    m_mark->setBorderColor(ink);
    double top = 1;
    QStringList tooLarge; // ranges of layer counts that do not load: "35-41"
    const OffloadStep* shown = nullptr;
    for (std::size_t i = 0; i < m_steps.size(); ++i) {
        const OffloadStep& s = m_steps[i];
        if (s.gpuLayers == m_shown)
            shown = &s;
        if (s.state == FitState::DoesNotFit) {
            const bool starts = i == 0 || m_steps[i - 1].state != FitState::DoesNotFit;
            const bool ends = i + 1 == m_steps.size() || m_steps[i + 1].state != FitState::DoesNotFit;
            if (starts)
                tooLarge << QString::number(s.gpuLayers);
            else if (ends)
                tooLarge.back() += QStringLiteral("–") + QString::number(s.gpuLayers);
            continue;
        }
        m_line->append(s.gpuLayers, s.decodeTokensPerSecond);
        top = std::max(top, s.decodeTokensPerSecond);
    }
    attach(chart, m_line, x, y);
    if (shown && shown->state != FitState::DoesNotFit)
        m_mark->append(shown->gpuLayers, shown->decodeTokensPerSecond);
    attach(chart, m_mark, x, y);
    // Ticks on whole layer counts: every 2, 5, 10 or 20 layers, from 0.
    const std::uint32_t total = m_steps.back().gpuLayers;
    x->setRange(0, static_cast<double>(total));
    x->setTickType(QValueAxis::TicksDynamic);
    x->setTickAnchor(0);
    x->setTickInterval(total <= 20 ? 2 : (total <= 50 ? 5 : (total <= 100 ? 10 : 20)));
    const double step = std::pow(10.0, std::floor(std::log10(top)));
    y->setRange(0, std::ceil(top * 1.1 / step) * step);
    y->setTickCount(5);
    QString caption;
    if (shown) {
        caption = QStringLiteral("%1 %2 of %3 layers on the GPU: ")
                      .arg(placementGlyph(shown->placement))
                      .arg(shown->gpuLayers)
                      .arg(m_steps.back().gpuLayers);
        caption += shown->state == FitState::DoesNotFit
            ? QStringLiteral("does not load")
            : QStringLiteral("about <b>%1 tokens/s</b>").arg(shown->decodeTokensPerSecond, 0, 'f', 1);
        caption += QStringLiteral(". ");
    }
    if (!tooLarge.isEmpty())
        caption += QStringLiteral("Does not load (%1) at %2 layers, left out. ")
                       .arg(placementGlyph(Placement::TooLarge), tooLarge.join(QStringLiteral(", ")));
    caption += QStringLiteral("Host layers at %1.").arg(m_hostBandwidth.toHtmlEscaped());
    m_caption->setText(caption);
}

} // namespace headroom::app
