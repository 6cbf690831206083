#include "memorybar.h"

#include "formatting.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace headroom::app {

MemoryBar::MemoryBar(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setAccessibleName(QStringLiteral("Memory bar"));
}

void MemoryBar::setSegments(std::vector<BillSegment> segments, Bytes cardTotal)
{
    m_segments = std::move(segments);
    m_cardTotal = cardTotal;
    QString description;
    for (std::size_t i = 0; i < m_segments.size(); ++i)
        description += m_segments[i].name + QStringLiteral(" ") + bytesText(m_segments[i].bytes) + QStringLiteral("; ");
    setAccessibleDescription(description);
    update();
}

void MemoryBar::setTotalCaption(const QString& caption)
{
    m_totalCaption = caption;
    update();
}

QSize MemoryBar::sizeHint() const
{
    return {600, minimumSizeHint().height()};
}

QSize MemoryBar::minimumSizeHint() const
{
    return {200, fontMetrics().height() * 2 + 30};
}

QRectF MemoryBar::barRect() const
{
    const int axis = fontMetrics().height() + 4;
    return QRectF(1, 1, width() - 2, height() - axis - 2);
}

std::vector<std::pair<double, double>> MemoryBar::spans() const
{
    std::vector<std::pair<double, double>> out;
    std::uint64_t sum = 0;
    for (const BillSegment& s : m_segments)
        sum += s.bytes.value;
    const auto scale = static_cast<double>(std::max<std::uint64_t>({sum, m_cardTotal.value, 1}));
    const QRectF bar = barRect();
    double x = bar.left();
    for (const BillSegment& s : m_segments) {
        const double w = bar.width() * static_cast<double>(s.bytes.value) / scale;
        out.emplace_back(x, x + w);
        x += w;
    }
    return out;
}

int MemoryBar::segmentAt(int x) const
{
    const auto sp = spans();
    for (std::size_t i = 0; i < sp.size(); ++i)
        if (x >= sp[i].first && x < sp[i].second)
            return static_cast<int>(i);
    return -1;
}

QString MemoryBar::toolTipFor(int i) const
{
    if (i < 0 || i >= static_cast<int>(m_segments.size()))
        return {};
    const BillSegment& s = m_segments[static_cast<std::size_t>(i)];
    const double share = m_cardTotal.value ? 100.0 * static_cast<double>(s.bytes.value) / static_cast<double>(m_cardTotal.value) : 0;
    QString text = QStringLiteral("%1: %2, %3 % of the %4")
                       .arg(s.name, exactBytesText(s.bytes))
                       .arg(share, 0, 'f', 1)
                       .arg(m_totalCaption == QStringLiteral("card total") ? QStringLiteral("card") : m_totalCaption);
    if (!s.note.isEmpty())
        text += QLatin1Char('\n') + s.note;
    return text;
}

QString MemoryBar::legendHtml() const
{
    QStringList items;
    int overhead = 0;
    for (const BillSegment& s : m_segments) {
        const QColor c = segmentColor(s, overhead);
        if (s.kind == BillSegment::Kind::Overhead)
            ++overhead;
        QString text = QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2&nbsp;%3")
                           .arg(c.name(), s.name.toHtmlEscaped(), bytesText(s.bytes).replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
        if (s.kind == BillSegment::Kind::Reserved && !s.note.isEmpty())
            text += QStringLiteral(" (kept free by the engine: %1)").arg(s.note.toHtmlEscaped());
        items << text;
    }
    return items.join(QStringLiteral(" &nbsp; "));
}

bool MemoryBar::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int i = segmentAt(help->pos().x());
        if (i >= 0)
            QToolTip::showText(help->globalPos(), toolTipFor(i), this);
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

void MemoryBar::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const QRectF bar = barRect();
    p.fillRect(bar, palette().color(QPalette::Base));
    const auto sp = spans();
    int overhead = 0;
    for (std::size_t i = 0; i < m_segments.size(); ++i) {
        const BillSegment& s = m_segments[i];
        const QRectF r(sp[i].first, bar.top(), sp[i].second - sp[i].first, bar.height());
        const QColor c = segmentColor(s, overhead);
        if (s.kind == BillSegment::Kind::Overhead)
            ++overhead;
        p.fillRect(r, c);
        if (s.kind == BillSegment::Kind::Over)
            p.fillRect(r, QBrush(QColor(255, 255, 255, 90), Qt::BDiagPattern));
        // A label inside the slice when it fits; small slices are named on hover and in the bill.
        const QString label = QStringLiteral("%1 %2").arg(s.name, bytesText(s.bytes));
        const QString shortLabel = bytesText(s.bytes);
        const int room = static_cast<int>(r.width()) - 8;
        QString shown;
        if (p.fontMetrics().horizontalAdvance(label) <= room)
            shown = label;
        else if (p.fontMetrics().horizontalAdvance(shortLabel) <= room)
            shown = shortLabel;
        if (!shown.isEmpty()) {
            p.setPen(c.lightness() > 150 ? Qt::black : Qt::white);
            p.drawText(r.adjusted(4, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft, shown);
        }
    }
    p.setPen(palette().color(QPalette::Mid));
    p.drawRect(bar.adjusted(0, 0, -1, -1));
    // The card's end, and the axis below.
    std::uint64_t sum = 0;
    for (const BillSegment& s : m_segments)
        sum += s.bytes.value;
    const auto scale = static_cast<double>(std::max<std::uint64_t>({sum, m_cardTotal.value, 1}));
    const double cardX = bar.left() + bar.width() * static_cast<double>(m_cardTotal.value) / scale;
    p.setPen(QPen(palette().color(QPalette::WindowText), 2));
    p.drawLine(QPointF(cardX, bar.top() - 1), QPointF(cardX, bar.bottom() + 4));
    p.setPen(palette().color(QPalette::WindowText));
    const QRectF axis(bar.left(), bar.bottom() + 3, bar.width(), fontMetrics().height());
    p.drawText(axis, Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("0"));
    const QString cardText = QStringLiteral("%1 %2").arg(m_totalCaption, bytesText(m_cardTotal));
    const int tw = fontMetrics().horizontalAdvance(cardText);
    const double tx = std::clamp(cardX - tw, bar.left() + 20, bar.right() - tw);
    p.drawText(QRectF(tx, axis.top(), tw + 2, axis.height()), Qt::AlignLeft | Qt::AlignVCenter, cardText);
}

} // namespace headroom::app
