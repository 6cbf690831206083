#pragma once
// The stacked memory bar of one plan at the chosen point: weights, each overhead, the KV cache,
// free, the engine's reserve, and any overflow, with exact figures on hover.

#include "breakdownmodel.h"

#include <QWidget>

namespace headroom::app {

class MemoryBar : public QWidget
{
    Q_OBJECT
public:
    explicit MemoryBar(QWidget* parent = nullptr);

    void setSegments(std::vector<BillSegment> segments, Bytes cardTotal);
    /// The words before the total on the axis: "card total" (the default), "host memory".
    void setTotalCaption(const QString& caption);
    const QString& totalCaption() const { return m_totalCaption; }
    const std::vector<BillSegment>& segments() const { return m_segments; }

    /// The segment under x (widget coordinates), or -1.
    int segmentAt(int x) const;
    /// The hover text of segment @p i: "KV cache: 4,294,967,296 B (4.00 GiB), 16.9 % of the card\n<note>".
    QString toolTipFor(int i) const;
    /// Rich text naming every segment with its colour and size, the engine's reserve with what it is
    /// ("utilization_headroom 2.36 GiB: 1 - 90% of the card total"), so that small slices are explained too.
    QString legendHtml() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRectF barRect() const;
    std::vector<std::pair<double, double>> spans() const;   // [x0, x1) per segment

    std::vector<BillSegment> m_segments;
    Bytes m_cardTotal;
    QString m_totalCaption = QStringLiteral("card total");
};

} // namespace headroom::app
