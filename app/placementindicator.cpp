#include "placementindicator.h"

#include <QGuiApplication>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QPixmap>
#include <QStringList>

namespace headroom::app {

QString placementGlyph(Placement placement)
{
    switch (placement) {
    case Placement::FullGpu: return QStringLiteral("\u25CF");
    case Placement::Partial: return QStringLiteral("\u25D0");
    case Placement::CpuOnly: return QStringLiteral("\u25CB");
    case Placement::TooLarge: return QStringLiteral("\u2715");
    }
    return {};
}

QString placementText(Placement placement)
{
    // core's words, completed as LM Studio says them.
    const QString label = QString::fromStdString(placementLabel(placement));
    switch (placement) {
    case Placement::Partial: return label + QStringLiteral(" offload");
    case Placement::TooLarge: return label + QStringLiteral(" for this machine");
    case Placement::FullGpu:
    case Placement::CpuOnly: return label;
    }
    return label;
}

namespace {

// An icon at 16 and 32 px drawn by @p draw on a transparent pixmap, in the palette's text colour:
// draw(painter, disc, pen) gets the disc inscribed with a margin of one pen width (size / 8).
template <typename Draw>
QIcon drawnIcon(Draw draw)
{
    const QColor ink = QGuiApplication::palette().color(QPalette::Text);
    QIcon icon;
    for (const int size : {16, 32}) {
        QPixmap pm(size, size);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        p.setRenderHint(QPainter::Antialiasing);
        const qreal pen = size / 8.0;
        const QRectF disc(pen, pen, size - 2 * pen, size - 2 * pen);
        draw(p, disc, pen, ink);
        p.end();
        icon.addPixmap(pm);
    }
    return icon;
}

} // namespace

QIcon placementIcon(Placement placement)
{
    return drawnIcon([placement](QPainter& p, const QRectF& disc, qreal pen, const QColor& ink) {
        p.setPen(QPen(ink, pen));
        switch (placement) {
        case Placement::FullGpu:
            p.setBrush(ink);
            p.drawEllipse(disc);
            break;
        case Placement::Partial: {
            p.setBrush(Qt::NoBrush);
            p.drawEllipse(disc);
            QPainterPath half;
            half.moveTo(disc.center());
            half.arcTo(disc, 90, 180);
            half.closeSubpath();
            p.fillPath(half, ink);
            break;
        }
        case Placement::CpuOnly:
            p.setBrush(Qt::NoBrush);
            p.drawEllipse(disc);
            break;
        case Placement::TooLarge:
            p.setPen(QPen(ink, pen * 1.2, Qt::SolidLine, Qt::RoundCap));
            p.drawLine(disc.topLeft(), disc.bottomRight());
            p.drawLine(disc.topRight(), disc.bottomLeft());
            break;
        }
    });
}

QString engineCannotRunGlyph() { return QStringLiteral("\u2298"); }

QString engineCannotRunText() { return QStringLiteral("not supported by the engine"); }

QIcon engineCannotRunIcon()
{
    return drawnIcon([](QPainter& p, const QRectF& disc, qreal pen, const QColor& ink) {
        p.setPen(QPen(ink, pen, Qt::SolidLine, Qt::RoundCap));
        p.setBrush(Qt::NoBrush);
        p.drawEllipse(disc);
        const qreal inset = disc.width() * 0.15;
        p.drawLine(QPointF(disc.left() + inset, disc.bottom() - inset), QPointF(disc.right() - inset, disc.top() + inset));
    });
}

QString placementToolTip(const PlanResult& plan)
{
    const Placement placement = placementOf(plan);
    return QStringLiteral("Placement: ") + placementGlyph(placement) + QLatin1Char(' ') + placementText(placement);
}

QString placementSummary(const PlanResult& plan)
{
    const Placement placement = placementOf(plan);
    const QString detail = QString::fromStdString(plan.verdict.detail);
    // A split's detail names itself ("partial: 26/41 layers, 6.36 GiB RAM", "CPU only: ...").
    if (plan.verdict.state == FitState::PartialOffload && !detail.isEmpty())
        return placementGlyph(placement) + QLatin1Char(' ') + detail;
    QString text = placementGlyph(placement) + QLatin1Char(' ') + placementText(placement);
    if (placement == Placement::TooLarge && !detail.isEmpty())
        text += QStringLiteral(": ") + detail;
    return text;
}

QString placementLegendHtml()
{
    QStringList items;
    for (const Placement p : {Placement::FullGpu, Placement::Partial, Placement::CpuOnly, Placement::TooLarge})
        items << (placementGlyph(p) + QStringLiteral("&nbsp;") + placementText(p).toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
    items << (engineCannotRunGlyph() + QStringLiteral("&nbsp;")
              + engineCannotRunText().toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
    return items.join(QStringLiteral(" &nbsp;"));
}

} // namespace headroom::app
