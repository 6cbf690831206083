#include "formatting.h"

namespace headroom::app {

QString bytesText(Bytes b)
{
    return QString::fromStdString(formatBytes(b));
}

QString thousands(std::uint64_t n)
{
    return QString::fromStdString(formatThousands(n));
}

QString tokensText(std::uint64_t n)
{
    return thousands(n);
}

QString exactBytesText(Bytes b)
{
    return QStringLiteral("%1 B (%2)").arg(thousands(b.value), bytesText(b));
}

QString fixedText(double value, int decimals, bool sign)
{
    return QString::fromStdString(formatFixed(value, decimals, sign));
}

double toGiB(Bytes b)
{
    return static_cast<double>(b.value) / static_cast<double>(kGiB);
}

} // namespace headroom::app
