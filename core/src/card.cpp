#include "headroom/core/card.h"

namespace headroom {

std::string cardSizeProblem(std::uint64_t totalBytes)
{
    if (totalBytes == 0)
        return "a card has at least 1 byte";
    if (totalBytes > kMaxCardBytes)
        return formatThousands(totalBytes) + " bytes is more than the largest card size, 1024TiB (" + formatThousands(kMaxCardBytes)
            + " bytes)";
    return {};
}

Card anonymousCard(std::string_view sizeText, Bytes size)
{
    Card card;
    card.id = std::string(sizeText);
    card.name = "Anonymous " + std::string(sizeText) + " card";
    card.memoryClass = formatBytes(size);
    card.totalBytes = size;
    card.source = "size given by the user (" + std::string(sizeText) + " = " + formatThousands(size.value)
        + " B); bandwidth, compute and L2 unknown";
    card.anonymous = true;
    return card;
}

Card hostCard(double bandwidthGBps)
{
    Card card;
    card.id = std::string(kHostCardId);
    card.name = "CPU only (no GPU): the host's RAM and memory bandwidth";
    card.memoryClass = "host RAM";
    card.bandwidthGBps = bandwidthGBps;
    card.source = "no GPU: the host's RAM (--host-ram, not checked when absent) and memory bandwidth (--host-bandwidth)";
    card.hostOnly = true;
    return card;
}

} // namespace headroom
