#include "headroom/core/speed/speculative.h"

#include <cmath>

namespace headroom {

double speculativeTokensPerVerification(double a, std::uint32_t g)
{
    if (a >= 1.0)
        return g + 1.0;
    return (1.0 - std::pow(a, g + 1.0)) / (1.0 - a);
}

double speculativeSpeedup(double a, std::uint32_t g, double c)
{
    return speculativeTokensPerVerification(a, g) / (g * c + 1.0);
}

} // namespace headroom
