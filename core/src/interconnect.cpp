#include "headroom/core/interconnect.h"

namespace headroom {

const char* interconnectName(Interconnect link)
{
    switch (link) {
    case Interconnect::NvSwitch: return "nvswitch";
    case Interconnect::NvLink: return "nvlink";
    case Interconnect::PciePeer: return "pcie-p2p";
    case Interconnect::Pcie: return "pcie";
    case Interconnect::Network: return "network";
    }
    return "?";
}

const std::vector<std::string>& interconnectNames()
{
    static const std::vector<std::string> names = {
        interconnectName(Interconnect::NvSwitch), interconnectName(Interconnect::NvLink),
        interconnectName(Interconnect::PciePeer), interconnectName(Interconnect::Pcie),
        interconnectName(Interconnect::Network),
    };
    return names;
}

std::optional<Interconnect> parseInterconnect(std::string_view name)
{
    for (Interconnect link : {Interconnect::NvSwitch, Interconnect::NvLink, Interconnect::PciePeer, Interconnect::Pcie,
                              Interconnect::Network})
        if (name == interconnectName(link))
            return link;
    return std::nullopt;
}

} // namespace headroom
