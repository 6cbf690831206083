#pragma once
// Text of the core's quantities for widgets and models (the core's own formatting, as QString).

#include "headroom/core/units.h"

#include <QString>

namespace headroom::app {

/// "5.31 GiB" (core formatBytes).
QString bytesText(Bytes b);
/// "3,624,960" (core formatThousands).
QString thousands(std::uint64_t n);
/// Tokens: "31,600".
QString tokensText(std::uint64_t n);
/// "5,700,591,616 B (5.31 GiB)".
QString exactBytesText(Bytes b);
/// "1.25", "+0.50", "0.00" (core formatFixed: never "-0.00").
QString fixedText(double value, int decimals, bool sign = false);
/// Bytes as GiB for plots.
double toGiB(Bytes b);

} // namespace headroom::app
