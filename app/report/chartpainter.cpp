#include "chartpainter.h"

#include <QFont>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <QStringList>

#include <algorithm>
#include <cmath>

namespace headroom::report {

namespace {

constexpr double kTitlePx = 13;
constexpr double kLabelPx = 11;
constexpr double kTickPx = 10;
constexpr double kBarHeight = 18;
constexpr double kBarGap = 9;
constexpr double kLegendRow = 18;

const QColor kAxis(90, 90, 90);
const QColor kGrid(215, 215, 215);
const QColor kText(34, 34, 34);

// Tableau 10: distinct in colour and in grey.
QColor seriesColor(std::size_t i)
{
    static const QColor palette[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44), QColor(214, 39, 40),
                                     QColor(148, 103, 189), QColor(140, 86, 75), QColor(227, 119, 194), QColor(127, 127, 127),
                                     QColor(188, 189, 34), QColor(23, 190, 207)};
    return palette[i % (sizeof palette / sizeof palette[0])];
}

// Memory segments: weights, runtime, KV cache, kept free.
QColor segmentColor(std::size_t i)
{
    static const QColor palette[] = {QColor(70, 110, 170), QColor(235, 160, 60), QColor(90, 170, 100), QColor(200, 200, 200)};
    return i < 4 ? palette[i] : seriesColor(i);
}

QString thousands(double v)
{
    const auto n = static_cast<long long>(std::llround(v));
    QString digits = QString::number(std::llabs(n));
    for (qsizetype at = digits.size() - 3; at > 0; at -= 3)
        digits.insert(at, ',');
    return n < 0 ? "-" + digits : digits;
}

QString tickText(double v)
{
    if (std::fabs(v) >= 1000 || std::fabs(v - std::round(v)) < 1e-9)
        return thousands(v);
    return QString::number(v, 'g', 3);
}

// 1-2-5 ticks from 0 covering max.
QVector<double> linearTicks(double lo, double hi, int target)
{
    QVector<double> ticks;
    if (hi <= lo)
        hi = lo + 1;
    const double raw = (hi - lo) / std::max(target, 1);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        step = m * mag;
        if (step >= raw)
            break;
    }
    for (double t = std::floor(lo / step) * step; t <= hi + step * 0.5; t += step)
        ticks.push_back(t);
    return ticks;
}

// Powers of two from lo to hi, thinned to at most `target` labels.
QVector<double> log2Ticks(double lo, double hi, int target)
{
    const int a = static_cast<int>(std::floor(std::log2(std::max(lo, 1.0))));
    const int b = static_cast<int>(std::ceil(std::log2(std::max(hi, 1.0))));
    const int stride = std::max(1, (b - a + target - 1) / std::max(target, 1));
    QVector<double> ticks;
    int e = a;
    for (; e <= b; e += stride)
        ticks.push_back(std::ldexp(1.0, e));
    if (ticks.back() < hi) // the last tick must cover the data
        ticks.push_back(std::ldexp(1.0, e));
    if (ticks.size() == 1)
        ticks.push_back(std::ldexp(1.0, a + 1));
    return ticks;
}

struct Axis {
    double lo = 0, hi = 1;
    bool log = false;
    double map(double v, double from, double to) const
    {
        const double f = log ? (std::log2(std::max(v, 1e-12)) - std::log2(lo)) / (std::log2(hi) - std::log2(lo)) : (v - lo) / (hi - lo);
        return from + f * (to - from);
    }
};

// Legend items in rows that wrap at `width`; returns the rows used.
int drawLegend(ChartCanvas& c, const std::vector<QString>& names, const std::vector<QColor>& colors, double x, double y,
               double width, bool boxes, bool draw = true)
{
    double cx = x;
    int rows = 1;
    for (std::size_t i = 0; i < names.size(); ++i) {
        const double w = 22 + c.textWidth(names[i], kLabelPx) + 16;
        if (cx > x && cx + w > x + width) {
            cx = x;
            ++rows;
        }
        const double cy = y + (rows - 1) * kLegendRow;
        if (draw) {
            if (boxes)
                c.rect(QRectF(cx, cy - 5, 14, 10), colors[i], kAxis);
            else {
                c.line(QPointF(cx, cy), QPointF(cx + 16, cy), colors[i], 2.2);
                c.circle(QPointF(cx + 8, cy), 2.6, colors[i]);
            }
            c.text(QPointF(cx + 20, cy), names[i], kLabelPx, false, kText, ChartCanvas::Anchor::Start);
        }
        cx += w;
    }
    return rows;
}

std::vector<QString> seriesNames(const Chart& chart)
{
    std::vector<QString> names;
    if (chart.kind == Chart::Kind::Lines)
        for (const Series& s : chart.series)
            names.push_back(QString::fromStdString(s.name));
    else
        for (const std::string& s : chart.segmentNames)
            names.push_back(QString::fromStdString(s));
    return names;
}

// The measuring canvas: only textWidth is used.
class NullCanvas : public ChartCanvas {
public:
    void line(QPointF, QPointF, const QColor&, double, bool) override {}
    void polyline(const QVector<QPointF>&, const QColor&, double) override {}
    void rect(const QRectF&, const QColor&, const QColor&) override {}
    void circle(QPointF, double, const QColor&) override {}
    void text(QPointF, const QString&, double, bool, const QColor&, Anchor, bool, bool) override {}
};

int legendRows(const Chart& chart, double width)
{
    NullCanvas n;
    const std::vector<QString> names = seriesNames(chart);
    return drawLegend(n, names, std::vector<QColor>(names.size()), 0, 0, width, false, false);
}

QString elide(const ChartCanvas& c, const QString& s, double px, double width)
{
    if (c.textWidth(s, px) <= width)
        return s;
    QString out = s;
    while (out.size() > 1 && c.textWidth(out + QStringLiteral("…"), px) > width)
        out.chop(1);
    return out + QStringLiteral("…");
}

void drawLines(const Chart& chart, const QRectF& area, ChartCanvas& c)
{
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (const Series& s : chart.series)
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            xmin = std::min(xmin, s.x[i]);
            xmax = std::max(xmax, s.x[i]);
            ymin = std::min(ymin, s.y[i]);
            ymax = std::max(ymax, s.y[i]);
        }
    if (xmin > xmax)
        return;
    QVector<double> xt = chart.logX ? log2Ticks(xmin, xmax, 10) : linearTicks(std::min(0.0, xmin), xmax, 8);
    QVector<double> yt = chart.logY ? log2Ticks(ymin, ymax, 8) : linearTicks(std::min(0.0, ymin), ymax, 6);
    Axis ax{xt.front(), xt.back(), chart.logX};
    Axis ay{yt.front(), yt.back(), chart.logY};

    double yLabelWidth = 0;
    for (double t : yt)
        yLabelWidth = std::max(yLabelWidth, c.textWidth(tickText(t), kTickPx));
    const int rows = legendRows(chart, area.width() - 20);
    const double top = area.top() + 26;
    const double left = area.left() + 22 + yLabelWidth + 8;
    const double right = area.right() - std::max(14.0, c.textWidth(tickText(xt.back()), kTickPx) / 2 + 4);
    const double bottom = area.bottom() - 8 - rows * kLegendRow - 8 - 16 - 18;
    const QRectF plot(QPointF(left, top), QPointF(right, bottom));

    c.text(QPointF(area.left() + 4, area.top() + 10), QString::fromStdString(chart.title), kTitlePx, true, kText,
           ChartCanvas::Anchor::Start);
    for (double t : yt) {
        const double y = ay.map(t, plot.bottom(), plot.top());
        c.line(QPointF(plot.left(), y), QPointF(plot.right(), y), kGrid, 0.8, true);
        c.text(QPointF(plot.left() - 6, y), tickText(t), kTickPx, false, kAxis, ChartCanvas::Anchor::End);
    }
    double lastLabelEnd = -1e300;
    for (double t : xt) {
        const double x = ax.map(t, plot.left(), plot.right());
        c.line(QPointF(x, plot.top()), QPointF(x, plot.bottom()), kGrid, 0.8, true);
        const QString label = tickText(t);
        const double w = c.textWidth(label, kTickPx);
        if (x - w / 2 > lastLabelEnd + 4) {
            c.text(QPointF(x, plot.bottom() + 11), label, kTickPx, false, kAxis, ChartCanvas::Anchor::Middle);
            lastLabelEnd = x + w / 2;
        }
    }
    c.line(plot.bottomLeft(), plot.bottomRight(), kAxis, 1);
    c.line(plot.bottomLeft(), plot.topLeft(), kAxis, 1);
    c.text(QPointF((plot.left() + plot.right()) / 2, plot.bottom() + 30), QString::fromStdString(chart.xLabel), kLabelPx, false,
           kText, ChartCanvas::Anchor::Middle);
    c.text(QPointF(area.left() + 10, (plot.top() + plot.bottom()) / 2), QString::fromStdString(chart.yLabel), kLabelPx, false,
           kText, ChartCanvas::Anchor::Middle, true, true);

    std::vector<QColor> colors;
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
        const Series& series = chart.series[s];
        const QColor color = seriesColor(s);
        colors.push_back(color);
        QVector<QPointF> pts;
        for (std::size_t i = 0; i < series.x.size(); ++i)
            pts.push_back(QPointF(ax.map(series.x[i], plot.left(), plot.right()), ay.map(series.y[i], plot.bottom(), plot.top())));
        c.polyline(pts, color, 2.2);
        for (const QPointF& p : pts)
            c.circle(p, 2.8, color);
    }
    drawLegend(c, seriesNames(chart), colors, area.left() + 20, plot.bottom() + 50, area.width() - 20, false);
}

// The leading " · " parts every category shares ("Llama-3.1-8B · int4-g128 · " when only the card
// differs): said once in the title, so that each bar's label is what tells it apart.
QString sharedLabelPrefix(const std::vector<std::string>& categories)
{
    if (categories.size() < 2)
        return {};
    const QString sep = QStringLiteral(" · ");
    QStringList common = QString::fromStdString(categories.front()).split(sep);
    for (const std::string& s : categories) {
        const QStringList parts = QString::fromStdString(s).split(sep);
        qsizetype n = 0;
        while (n < common.size() && n + 1 < parts.size() && common[n] == parts[n])
            ++n;
        common = common.mid(0, n);
    }
    return common.isEmpty() ? QString() : common.join(sep) + sep;
}

void drawBars(const Chart& chart, const QRectF& area, ChartCanvas& c)
{
    const QString prefix = sharedLabelPrefix(chart.categories);
    const auto label = [&](std::size_t i) { return QString::fromStdString(chart.categories[i]).mid(prefix.size()); };
    double total = 0;
    for (const auto& seg : chart.segments) {
        double sum = 0;
        for (double v : seg)
            sum += v;
        total = std::max(total, sum);
    }
    const QVector<double> xt = linearTicks(0, total, 8);
    const Axis ax{0, xt.back(), false};

    double labelWidth = 0;
    for (std::size_t i = 0; i < chart.categories.size(); ++i)
        labelWidth = std::max(labelWidth, c.textWidth(label(i), kLabelPx));
    labelWidth = std::min(labelWidth, area.width() * 0.34);
    double endWidth = 0;
    for (const std::string& s : chart.barLabels)
        endWidth = std::max(endWidth, c.textWidth(QString::fromStdString(s), kTickPx));
    endWidth = std::min(endWidth, area.width() * 0.25);

    const double top = area.top() + 28;
    const double left = area.left() + 8 + labelWidth + 10;
    const double right = area.right() - endWidth - 14;
    const double barsHeight = static_cast<double>(chart.categories.size()) * (kBarHeight + kBarGap);
    const QRectF plot(QPointF(left, top), QPointF(right, top + barsHeight));

    const QString title = QString::fromStdString(chart.title)
        + (prefix.isEmpty() ? QString() : QStringLiteral(": ") + prefix.chopped(3));
    c.text(QPointF(area.left() + 4, area.top() + 10), title, kTitlePx, true, kText, ChartCanvas::Anchor::Start);
    for (double t : xt) {
        const double x = ax.map(t, plot.left(), plot.right());
        c.line(QPointF(x, plot.top()), QPointF(x, plot.bottom()), kGrid, 0.8, true);
        c.text(QPointF(x, plot.bottom() + 11), tickText(t), kTickPx, false, kAxis, ChartCanvas::Anchor::Middle);
    }
    c.line(plot.bottomLeft(), plot.bottomRight(), kAxis, 1);
    c.text(QPointF((plot.left() + plot.right()) / 2, plot.bottom() + 30), QString::fromStdString(chart.xLabel), kLabelPx, false,
           kText, ChartCanvas::Anchor::Middle);

    for (std::size_t i = 0; i < chart.categories.size(); ++i) {
        const double y = plot.top() + static_cast<double>(i) * (kBarHeight + kBarGap) + kBarGap / 2;
        c.text(QPointF(plot.left() - 8, y + kBarHeight / 2), elide(c, label(i), kLabelPx, labelWidth),
               kLabelPx, false, kText, ChartCanvas::Anchor::End);
        double x0 = 0;
        for (std::size_t s = 0; i < chart.segments.size() && s < chart.segments[i].size(); ++s) {
            const double v = chart.segments[i][s];
            if (v <= 0)
                continue;
            const double a = ax.map(x0, plot.left(), plot.right());
            const double b = ax.map(x0 + v, plot.left(), plot.right());
            c.rect(QRectF(QPointF(a, y), QPointF(b, y + kBarHeight)), segmentColor(s), Qt::white);
            x0 += v;
        }
        if (i < chart.barLabels.size())
            c.text(QPointF(ax.map(x0, plot.left(), plot.right()) + 6, y + kBarHeight / 2),
                   elide(c, QString::fromStdString(chart.barLabels[i]), kTickPx, endWidth + 8), kTickPx, false, kAxis,
                   ChartCanvas::Anchor::Start);
    }
    std::vector<QColor> colors;
    for (std::size_t s = 0; s < chart.segmentNames.size(); ++s)
        colors.push_back(segmentColor(s));
    drawLegend(c, seriesNames(chart), colors, area.left() + 8, plot.bottom() + 50, area.width() - 16, true);
}

QString svgColor(const QColor& c)
{
    if (c.alpha() == 0)
        return QStringLiteral("none");
    return c.name(QColor::HexRgb);
}

QString num(double v) { return QString::number(v, 'f', 1); }

QString escapeXml(const QString& s) { return s.toHtmlEscaped(); }

} // namespace

QFont chartFont(double pixelSize, bool bold)
{
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPixelSize(std::max(1, static_cast<int>(std::lround(pixelSize))));
    f.setBold(bold);
    return f;
}

double ChartCanvas::textWidth(const QString& text, double pixelSize, bool bold) const
{
    return QFontMetricsF(chartFont(pixelSize, bold)).horizontalAdvance(text);
}

double chartHeight(const Chart& chart, double width)
{
    const int rows = legendRows(chart, width - 20);
    if (chart.kind == Chart::Kind::StackedBars)
        return 28 + static_cast<double>(chart.categories.size()) * (kBarHeight + kBarGap) + 50 + rows * kLegendRow + 6;
    return std::clamp(width * 0.5, 260.0, 380.0) + rows * kLegendRow;
}

void drawChart(const Chart& chart, const QRectF& area, ChartCanvas& canvas)
{
    if (chart.kind == Chart::Kind::StackedBars)
        drawBars(chart, area, canvas);
    else
        drawLines(chart, area, canvas);
}

void PainterCanvas::line(QPointF a, QPointF b, const QColor& color, double width, bool dashed)
{
    QPen pen(color, width);
    if (dashed)
        pen.setStyle(Qt::DashLine);
    m_painter.setPen(pen);
    m_painter.drawLine(a, b);
}

void PainterCanvas::polyline(const QVector<QPointF>& points, const QColor& color, double width)
{
    QPen pen(color, width);
    pen.setJoinStyle(Qt::RoundJoin);
    m_painter.setPen(pen);
    m_painter.setBrush(Qt::NoBrush);
    m_painter.drawPolyline(points.data(), static_cast<int>(points.size()));
}

void PainterCanvas::rect(const QRectF& r, const QColor& fill, const QColor& stroke)
{
    m_painter.setPen(stroke.alpha() == 0 ? QPen(Qt::NoPen) : QPen(stroke, 0.8));
    m_painter.setBrush(fill);
    m_painter.drawRect(r);
}

void PainterCanvas::circle(QPointF centre, double r, const QColor& fill)
{
    m_painter.setPen(Qt::NoPen);
    m_painter.setBrush(fill);
    m_painter.drawEllipse(centre, r, r);
}

void PainterCanvas::text(QPointF at, const QString& text, double pixelSize, bool bold, const QColor& color, Anchor anchor,
                         bool vcenter, bool rotated)
{
    const QFont font = chartFont(pixelSize, bold);
    const QFontMetricsF fm(font);
    const double w = fm.horizontalAdvance(text);
    double dx = anchor == Anchor::Start ? 0 : anchor == Anchor::Middle ? -w / 2 : -w;
    const double dy = vcenter ? (fm.ascent() - fm.descent()) / 2 : 0;
    m_painter.save();
    m_painter.setFont(font);
    m_painter.setPen(color);
    m_painter.translate(at);
    if (rotated)
        m_painter.rotate(-90);
    m_painter.drawText(QPointF(dx, dy), text);
    m_painter.restore();
}

void SvgCanvas::line(QPointF a, QPointF b, const QColor& color, double width, bool dashed)
{
    m_body += QStringLiteral("<line x1=\"%1\" y1=\"%2\" x2=\"%3\" y2=\"%4\" stroke=\"%5\" stroke-width=\"%6\"%7/>\n")
                  .arg(num(a.x()), num(a.y()), num(b.x()), num(b.y()), svgColor(color), num(width),
                       dashed ? QStringLiteral(" stroke-dasharray=\"4 3\"") : QString());
}

void SvgCanvas::polyline(const QVector<QPointF>& points, const QColor& color, double width)
{
    QString pts;
    for (const QPointF& p : points)
        pts += num(p.x()) + "," + num(p.y()) + " ";
    m_body += QStringLiteral("<polyline points=\"%1\" fill=\"none\" stroke=\"%2\" stroke-width=\"%3\" stroke-linejoin=\"round\"/>\n")
                  .arg(pts.trimmed(), svgColor(color), num(width));
}

void SvgCanvas::rect(const QRectF& r, const QColor& fill, const QColor& stroke)
{
    m_body += QStringLiteral("<rect x=\"%1\" y=\"%2\" width=\"%3\" height=\"%4\" fill=\"%5\" stroke=\"%6\" stroke-width=\"0.8\"/>\n")
                  .arg(num(r.x()), num(r.y()), num(r.width()), num(r.height()), svgColor(fill), svgColor(stroke));
}

void SvgCanvas::circle(QPointF centre, double r, const QColor& fill)
{
    m_body += QStringLiteral("<circle cx=\"%1\" cy=\"%2\" r=\"%3\" fill=\"%4\"/>\n").arg(num(centre.x()), num(centre.y()), num(r), svgColor(fill));
}

void SvgCanvas::text(QPointF at, const QString& text, double pixelSize, bool bold, const QColor& color, Anchor anchor,
                     bool vcenter, bool rotated)
{
    const char* anchorName = anchor == Anchor::Start ? "start" : anchor == Anchor::Middle ? "middle" : "end";
    // dy 0.35em centres a line of text on its anchor, as the painter does with the font metrics.
    m_body += QStringLiteral("<text x=\"%1\" y=\"%2\"%3 font-size=\"%4\"%5 fill=\"%6\" text-anchor=\"%7\"%8>%9</text>\n")
                  .arg(num(at.x()), num(at.y()), vcenter ? QStringLiteral(" dy=\"0.35em\"") : QString(), num(pixelSize),
                       bold ? QStringLiteral(" font-weight=\"bold\"") : QString(), svgColor(color), QLatin1String(anchorName),
                       rotated ? QStringLiteral(" transform=\"rotate(-90 %1 %2)\"").arg(num(at.x()), num(at.y())) : QString(),
                       escapeXml(text));
}

QString SvgCanvas::svg(double width, double height) const
{
    return QStringLiteral("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %1 %2\" width=\"%1\" height=\"%2\" "
                          "font-family=\"DejaVu Sans, Verdana, sans-serif\" role=\"img\">\n%3</svg>")
        .arg(num(width), num(height), m_body);
}

} // namespace headroom::report
