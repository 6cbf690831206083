#pragma once
// Draws the charts of a report document (headroom::report::Chart) as vectors, once, onto two
// canvases: a QPainter (PDF, screen) and SVG text (the HTML report). Sizes are in pixels of a
// 96 dpi page; fonts are set in pixels so that a scaled printer painter keeps their proportions.

#include "headroom/core/report/reportdocument.h"

#include <QColor>
#include <QFont>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <QVector>

class QPainter;

namespace headroom::report {

/// What a chart is drawn on.
class ChartCanvas {
public:
    /// Horizontal anchor of a text.
    enum class Anchor { Start, Middle, End };
    virtual ~ChartCanvas() = default;
    /// A straight line; @p dashed for grid lines.
    virtual void line(QPointF a, QPointF b, const QColor& color, double width, bool dashed = false) = 0;
    /// A polyline through @p points.
    virtual void polyline(const QVector<QPointF>& points, const QColor& color, double width) = 0;
    /// A filled rectangle, optionally stroked.
    virtual void rect(const QRectF& r, const QColor& fill, const QColor& stroke = Qt::transparent) = 0;
    /// A filled circle of radius @p r.
    virtual void circle(QPointF centre, double r, const QColor& fill) = 0;
    /// Text with its baseline's anchor point at @p at (middle of the text height when @p vcenter);
    /// @p rotated: read bottom to top.
    virtual void text(QPointF at, const QString& text, double pixelSize, bool bold, const QColor& color, Anchor anchor,
                      bool vcenter = true, bool rotated = false) = 0;
    /// Width of @p text in pixels at @p pixelSize.
    double textWidth(const QString& text, double pixelSize, bool bold = false) const;
};

/// The height (pixels) @p chart needs at @p width.
double chartHeight(const Chart& chart, double width);

/// Draws @p chart into @p area.
void drawChart(const Chart& chart, const QRectF& area, ChartCanvas& canvas);

/// A canvas over a QPainter.
class PainterCanvas : public ChartCanvas {
public:
    explicit PainterCanvas(QPainter& painter) : m_painter(painter) {}
    void line(QPointF a, QPointF b, const QColor& color, double width, bool dashed) override;
    void polyline(const QVector<QPointF>& points, const QColor& color, double width) override;
    void rect(const QRectF& r, const QColor& fill, const QColor& stroke) override;
    void circle(QPointF centre, double r, const QColor& fill) override;
    void text(QPointF at, const QString& text, double pixelSize, bool bold, const QColor& color, Anchor anchor, bool vcenter,
              bool rotated) override;

private:
    QPainter& m_painter;
};

/// A canvas that writes SVG elements.
class SvgCanvas : public ChartCanvas {
public:
    void line(QPointF a, QPointF b, const QColor& color, double width, bool dashed) override;
    void polyline(const QVector<QPointF>& points, const QColor& color, double width) override;
    void rect(const QRectF& r, const QColor& fill, const QColor& stroke) override;
    void circle(QPointF centre, double r, const QColor& fill) override;
    void text(QPointF at, const QString& text, double pixelSize, bool bold, const QColor& color, Anchor anchor, bool vcenter,
              bool rotated) override;
    /// The complete <svg> element, @p width x @p height pixels (scales with its container).
    QString svg(double width, double height) const;

private:
    QString m_body;
};

/// The font every chart uses: DejaVu Sans (installed with fonts-dejavu-core) at @p pixelSize.
QFont chartFont(double pixelSize, bool bold);

} // namespace headroom::report
