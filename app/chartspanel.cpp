#include "chartspanel.h"

#include "catalog.h"
#include "formatting.h"
#include "roofline.h"
#include "chartstyle.h"
#include "theme.h"

#include <QGuiApplication>
#include <QHBoxLayout>
#include <QPalette>
#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace headroom::app {

QColor cardColor(std::size_t index)
{
    // Tableau 10 plus two: twelve cards before a colour repeats.
    static const QColor colors[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xe1, 0x57, 0x59), QColor(0x59, 0xa1, 0x4f),
                                    QColor(0xb0, 0x7a, 0xa1), QColor(0xf2, 0x8e, 0x2b), QColor(0x76, 0xb7, 0xb2),
                                    QColor(0xed, 0xc9, 0x48), QColor(0x9c, 0x75, 0x5f), QColor(0xff, 0x9d, 0xa7),
                                    QColor(0x5a, 0x5a, 0x5a), QColor(0x17, 0xbe, 0xcf), QColor(0x8c, 0x56, 0x4b)};
    return colors[index % std::size(colors)];
}

namespace {

QChartView* makeView(QWidget* parent, const QString& accessibleName)
{
    auto* chart = new QChart;
    chart->setMargins(QMargins(2, 2, 6, 2));
    // One legend for the three plots sits above them (ChartsPanel::m_legend).
    chart->legend()->hide();
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(260, 220);
    view->setAccessibleName(accessibleName);
    return view;
}

} // namespace

void resetChart(QChart* chart, const QString& title)
{
    chart->removeAllSeries();
    for (QAbstractAxis* axis : chart->axes())
        chart->removeAxis(axis);
    chart->setTheme(isDarkPalette() ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    chart->setBackgroundRoundness(0);
    // The window's own colours, so that text keeps its contrast after a palette switch.
    const QPalette pal = QGuiApplication::palette();
    chart->setBackgroundBrush(pal.color(QPalette::Base));
    chart->setPlotAreaBackgroundVisible(false);
    chart->setTitleBrush(pal.color(QPalette::WindowText));
    QFont titleFont = chart->titleFont();
    titleFont.setPointSizeF(9.5);
    titleFont.setBold(true);
    chart->setTitleFont(titleFont);
    chart->setTitle(title);
    // Tick labels with the locale's group separators (1,000,000).
    chart->setLocalizeNumbers(true);
    chart->setLocale(QLocale(QLocale::English, QLocale::UnitedStates));
}

// The title of an empty plot says why it is empty.
QString emptyTitle(const QString& title, const QString& why)
{
    return QStringLiteral("%1<br><span style='font-weight:normal; font-size:8pt'>%2</span>").arg(title.toHtmlEscaped(), why.toHtmlEscaped());
}

void styleAxis(QAbstractAxis* axis, const QString& title)
{
    QFont f = axis->labelsFont();
    f.setPointSizeF(8);
    axis->setLabelsFont(f);
    QFont tf = axis->titleFont();
    tf.setPointSizeF(8.5);
    tf.setBold(false);
    axis->setTitleFont(tf);
    axis->setTitleText(title);
    const QPalette pal = QGuiApplication::palette();
    axis->setLabelsBrush(pal.color(QPalette::Text));
    axis->setTitleBrush(pal.color(QPalette::Text));
    QColor grid = pal.color(QPalette::Text);
    grid.setAlpha(45);
    axis->setGridLineColor(grid);
    axis->setLinePenColor(pal.color(QPalette::Mid));
}

void attach(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y)
{
    chart->addSeries(series);
    series->attachAxis(x);
    series->attachAxis(y);
}

namespace {

// The base of a log axis running from 1 to @p top: few enough labels to stay readable in a third
// of 1280 pixels (2 up to 16, 4 up to 256, else 8, 16 past 2^15).
double logAxisBase(double top)
{
    return top > 32768 ? 16 : (top > 256 ? 8 : (top > 16 ? 4 : 2));
}

QString shortCardName(const Card& card)
{
    QString name = QString::fromStdString(card.name.empty() ? card.id : card.name);
    name.remove(QStringLiteral("NVIDIA ")).remove(QStringLiteral("GeForce "));
    return name;
}

} // namespace

ChartsPanel::ChartsPanel(QWidget* parent)
    : QWidget(parent)
{
    m_memory = makeView(this, QStringLiteral("Memory against context"));
    m_frontier = makeView(this, QStringLiteral("Context x concurrency frontier"));
    m_speed = makeView(this, QStringLiteral("Tokens per second against batch"));
    m_legend = new QLabel(this);
    m_legend->setWordWrap(true);
    m_legend->setTextFormat(Qt::RichText);
    auto* row = new QHBoxLayout;
    row->setSpacing(4);
    row->addWidget(m_memory);
    row->addWidget(m_frontier);
    row->addWidget(m_speed);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_legend);
    layout->addLayout(row, 1);
}

QString ChartsPanel::legendText() const
{
    return m_legend->text();
}

QChart* ChartsPanel::memoryChart() const { return m_memory->chart(); }
QChart* ChartsPanel::frontierChart() const { return m_frontier->chart(); }
QChart* ChartsPanel::speedChart() const { return m_speed->chart(); }

void ChartsPanel::setPlans(std::vector<CardPlan> plans, std::uint64_t users, std::uint64_t contextTokens)
{
    m_plans = std::move(plans);
    m_users = std::max<std::uint64_t>(users, 1);
    m_context = contextTokens;
    rebuild();
}

void ChartsPanel::setMeasured(std::vector<MeasuredSpeed> measured)
{
    m_measured = std::move(measured);
    rebuild();
}

void ChartsPanel::refreshTheme()
{
    rebuild();
}

void ChartsPanel::rebuild()
{
    // --- memory against context, a line per card, its usable limit dashed ---
    QChart* memory = m_memory->chart();
    resetChart(memory, QStringLiteral("Memory vs context, %1 users").arg(thousands(m_users)));
    std::uint64_t xMax = std::max<std::uint64_t>(m_context * 2, 4096);
    for (const CardPlan& cp : m_plans)
        if (cp.plan.modelContextTokens > 0)
            xMax = std::max(xMax, std::min<std::uint64_t>(cp.plan.modelContextTokens, m_context * 4));
    auto* mx = new QValueAxis;
    auto* my = new QValueAxis;
    styleAxis(mx, QStringLiteral("context per user (tokens)"));
    styleAxis(my, QStringLiteral("GiB"));
    mx->setLabelFormat(QStringLiteral("%.0f"));
    mx->setRange(0, static_cast<double>(xMax));
    mx->setTickCount(5);
    memory->addAxis(mx, Qt::AlignBottom);
    memory->addAxis(my, Qt::AlignLeft);
    double yMax = 1;
    // A line per card, drawn until it reaches the card's usable memory (marked with a dot), the
    // largest card first so that the smaller cards' shorter lines stay visible on top.
    std::vector<std::size_t> order(m_plans.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return m_plans[a].plan.usableBytes > m_plans[b].plan.usableBytes;
    });
    for (std::size_t i : order) {
        const PlanResult& p = m_plans[i].plan;
        const QColor color = cardColor(i);
        auto* limit = new QLineSeries;
        limit->setPen(QPen(color, 1.5, Qt::DashLine));
        limit->append(0, toGiB(p.usableBytes));
        limit->append(static_cast<double>(xMax), toGiB(p.usableBytes));
        attach(memory, limit, mx, my);
    }
    for (std::size_t i : order) {
        const PlanResult& p = m_plans[i].plan;
        const QColor color = cardColor(i);
        auto* need = new QLineSeries;
        need->setName(shortCardName(m_plans[i].card));
        need->setPen(QPen(color, 2.5));
        const Bytes fixed = p.weightsBytes + totalBytes(p.overheads);
        const double usable = toGiB(p.usableBytes);
        constexpr int kSamples = 64;
        for (int s = 0; s <= kSamples; ++s) {
            const auto ctx = static_cast<std::uint64_t>(static_cast<double>(xMax) * s / kSamples);
            const double y = toGiB(fixed) + toGiB(kvAtPoint(p, m_users, std::max<std::uint64_t>(ctx, 1)));
            if (y > usable)
                break;
            need->append(static_cast<double>(ctx), y);
        }
        const std::uint64_t maxContext = p.maxContext.value_or(0);
        if (maxContext > 0 && maxContext <= xMax) {
            const double y = toGiB(fixed) + toGiB(kvAtPoint(p, m_users, maxContext));
            need->append(static_cast<double>(maxContext), y);
            auto* end = new QScatterSeries;
            end->setMarkerSize(8);
            end->setColor(color);
            end->setBorderColor(color);
            end->append(static_cast<double>(maxContext), y);
            attach(memory, end, mx, my);
        } else if (p.weightsBytes + totalBytes(p.overheads) > p.usableBytes) {
            need->append(0, toGiB(fixed));
        }
        attach(memory, need, mx, my);
        // Scaled to what is drawn, not to the cards' totals: one huge card does not flatten the rest.
        const double drawn = need->count() > 0 ? need->at(need->count() - 1).y() : toGiB(fixed);
        yMax = std::max({yMax, drawn * 1.15, std::min(usable, drawn * 1.6)});
    }
    std::size_t loadedCards = 0;
    for (const CardPlan& cp : m_plans)
        loadedCards += cp.plan.verdict.loads();
    if (m_plans.empty())
        memory->setTitle(emptyTitle(QStringLiteral("Memory vs context"), QStringLiteral("no card chosen")));
    else if (loadedCards == 0)
        memory->setTitle(emptyTitle(QStringLiteral("Memory vs context, %1 users").arg(thousands(m_users)),
                                    QStringLiteral("the model does not fit on any chosen card")));
    if (m_context > 0 && !m_plans.empty()) {
        auto* chosen = new QLineSeries;
        chosen->setName(QStringLiteral("chosen"));
        chosen->setPen(QPen(palette().color(QPalette::WindowText), 1, Qt::DotLine));
        chosen->append(static_cast<double>(m_context), 0);
        chosen->append(static_cast<double>(m_context), yMax);
        attach(memory, chosen, mx, my);
    }
    my->setRange(0, std::ceil(yMax / 4) * 4);
    my->setTickCount(5);
    my->setLabelFormat(QStringLiteral("%.0f"));

    // --- the frontier: max context per user against users, log-log ---
    QChart* frontier = m_frontier->chart();
    resetChart(frontier, QStringLiteral("Context x concurrency frontier"));
    auto* fx = new QLogValueAxis;
    auto* fy = new QLogValueAxis;
    fx->setBase(2);
    fy->setBase(10);
    styleAxis(fx, QStringLiteral("users"));
    styleAxis(fy, QStringLiteral("tokens per user"));
    fx->setLabelFormat(QStringLiteral("%.0f"));
    fy->setLabelFormat(QStringLiteral("%.0f"));
    frontier->addAxis(fx, Qt::AlignBottom);
    frontier->addAxis(fy, Qt::AlignLeft);
    double fxMax = 2;
    double fyMin = 1e12;
    double fyMax = 10;
    for (std::size_t i = 0; i < m_plans.size(); ++i) {
        // Only the cards the model loads on: a card where the engine would refuse to start has no frontier.
        if (!m_plans[i].plan.verdict.loads())
            continue;
        auto* line = new QLineSeries;
        line->setName(shortCardName(m_plans[i].card));
        line->setPen(QPen(cardColor(i), 2));
        for (const FrontierPoint& f : m_plans[i].plan.frontier) {
            if (f.contextTokens == 0)
                continue;
            line->append(static_cast<double>(f.users), static_cast<double>(f.contextTokens));
            fxMax = std::max(fxMax, static_cast<double>(f.users));
            fyMin = std::min(fyMin, static_cast<double>(f.contextTokens));
            fyMax = std::max(fyMax, static_cast<double>(f.contextTokens));
        }
        attach(frontier, line, fx, fy);
    }
    if (m_context > 0) {
        auto* point = new QScatterSeries;
        point->setName(QStringLiteral("chosen"));
        point->setMarkerSize(9);
        point->setColor(palette().color(QPalette::WindowText));
        point->setBorderColor(palette().color(QPalette::Window));
        point->append(static_cast<double>(m_users), static_cast<double>(m_context));
        attach(frontier, point, fx, fy);
        fyMin = std::min(fyMin, static_cast<double>(m_context));
        fyMax = std::max(fyMax, static_cast<double>(m_context));
        fxMax = std::max(fxMax, static_cast<double>(m_users));
    }
    if (loadedCards == 0)
        frontier->setTitle(emptyTitle(QStringLiteral("Context x concurrency frontier"),
                                      QStringLiteral("nothing fits: no frontier on the chosen cards")));
    // Few enough labels to stay readable in a third of 1280 pixels.
    const double fxTop = std::pow(2.0, std::ceil(std::log2(fxMax)));
    fx->setBase(logAxisBase(fxTop));
    fx->setRange(1, std::pow(fx->base(), std::ceil(std::log(fxTop) / std::log(fx->base()))));
    fy->setRange(std::pow(10.0, std::floor(std::log10(std::max(fyMin, 1.0)))), std::pow(10.0, std::ceil(std::log10(fyMax))));

    // --- decode tokens/s against batch: roofline estimate, and measured points ---
    QChart* speed = m_speed->chart();
    resetChart(speed, QStringLiteral("Tokens/s vs batch (roofline)"));
    auto* sx = new QLogValueAxis;
    auto* sy = new QValueAxis;
    sx->setBase(2);
    sx->setLabelFormat(QStringLiteral("%.0f"));
    styleAxis(sx, QStringLiteral("batch (sequences)"));
    styleAxis(sy, QStringLiteral("tokens/s"));
    sy->setLabelFormat(QStringLiteral("%.0f"));
    speed->addAxis(sx, Qt::AlignBottom);
    speed->addAxis(sy, Qt::AlignLeft);
    double syMax = 10;
    double sxMax = 2;
    std::size_t speedLines = 0;
    for (std::size_t i = 0; i < m_plans.size(); ++i) {
        // Speed only for the cards the model loads on.
        if (!m_plans[i].plan.verdict.loads())
            continue;
        const auto points = rooflineEstimate(m_plans[i].plan, m_plans[i].card, std::max<std::uint64_t>(m_context, 1));
        if (points.empty())
            continue;
        ++speedLines;
        auto* line = new QLineSeries;
        line->setName(shortCardName(m_plans[i].card));
        line->setPen(QPen(cardColor(i), 2));
        auto* beyond = new QLineSeries;
        beyond->setPen(QPen(cardColor(i), 1.5, Qt::DotLine));
        for (const RooflinePoint& r : points) {
            (r.fits ? line : beyond)->append(static_cast<double>(r.batch), r.tokensPerSecond);
            if (r.fits) {
                syMax = std::max(syMax, r.tokensPerSecond);
                sxMax = std::max(sxMax, static_cast<double>(r.batch));
            }
        }
        // The dotted part starts where the solid one ends: batches whose KV does not fit.
        if (line->count() > 0 && beyond->count() > 0)
            beyond->insert(0, line->at(line->count() - 1));
        attach(speed, line, sx, sy);
        attach(speed, beyond, sx, sy);
    }
    if (!m_measured.empty()) {
        auto* measured = new QScatterSeries;
        measured->setName(QStringLiteral("measured"));
        measured->setMarkerSize(8);
        for (const MeasuredSpeed& m : m_measured) {
            measured->append(static_cast<double>(m.batch), m.tokensPerSecond);
            syMax = std::max(syMax, m.tokensPerSecond);
            sxMax = std::max(sxMax, static_cast<double>(m.batch));
        }
        attach(speed, measured, sx, sy);
    }
    if (speedLines == 0 && m_measured.empty())
        speed->setTitle(emptyTitle(QStringLiteral("Tokens/s vs batch (roofline)"),
                                   loadedCards == 0 ? QStringLiteral("the model loads on no chosen card")
                                                    : QStringLiteral("no bandwidth figure for the chosen cards")));
    const double sxTop = std::max(2.0, std::pow(2.0, std::ceil(std::log2(sxMax)) + 1));
    sx->setBase(logAxisBase(sxTop));
    sx->setRange(1, std::pow(sx->base(), std::ceil(std::log(sxTop) / std::log(sx->base()))));
    const double step = std::pow(10.0, std::floor(std::log10(syMax)));
    sy->setRange(0, std::ceil(syMax * 1.1 / step) * step);
    sy->setTickCount(5);

    QString legend;
    for (std::size_t i = 0; i < m_plans.size(); ++i)
        legend += QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2&nbsp;&nbsp; ")
                      .arg(cardColor(i).name(), shortCardName(m_plans[i].card).toHtmlEscaped());
    legend += QStringLiteral("&nbsp;&nbsp;<i>solid: needed (ends at the card's limit) &middot; dashed: usable under the engine "
                             "&middot; dotted: batch beyond the KV budget &middot; &#9679; the chosen point%1</i>")
                  .arg(m_measured.empty() ? QString() : QStringLiteral(" &middot; &#9679; measured"));
    m_legend->setText(legend);
}

} // namespace headroom::app
