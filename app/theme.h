#pragma once
// Light and dark palettes on the Fusion style, the same on every platform and in screenshots.

class QApplication;

namespace headroom::app {

/// Applies Fusion with a light or a dark palette to @p app.
void applyTheme(QApplication& app, bool dark);
/// True when the application palette is dark.
bool isDarkPalette();

} // namespace headroom::app
