#pragma once
// The look every plot of the app shares (chartspanel.cpp defines it): the palette's colours after a
// light/dark switch, small axis fonts, a title that says why a plot is empty.

#include <QString>

class QAbstractAxis;
class QAbstractSeries;
class QChart;

namespace headroom::app {

/// Empties @p chart (series and axes) and gives it the theme of the palette and @p title.
void resetChart(QChart* chart, const QString& title);
/// A title in rich text with @p why on a second, smaller line.
QString emptyTitle(const QString& title, const QString& why);
/// Small labels in the palette's text colour, a faint grid, and @p title.
void styleAxis(QAbstractAxis* axis, const QString& title);
/// Adds @p series to @p chart on axes @p x and @p y.
void attach(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y);

} // namespace headroom::app
