#include "headroom/probes/moerouting.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace headroom::probes {

namespace {

/// splitmix64 (Steele, Lea, Flood 2014): a well-mixed 64-bit hash of @p x.
std::uint64_t splitmix64(std::uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

} // namespace

std::vector<std::uint32_t> routeTopK(const float* logits, std::uint32_t tokens, std::uint32_t experts, std::uint32_t k,
                                     std::uint64_t seed)
{
    if (!logits || k == 0 || k > experts || tokens == 0)
        return {};
    std::vector<std::uint32_t> out(std::size_t{tokens} * k);
    std::vector<std::uint32_t> order(experts);
    std::vector<std::uint64_t> priority(experts);
    std::vector<float> row(experts);
    for (std::uint32_t t = 0; t < tokens; ++t) {
        const float* in = logits + std::size_t{t} * experts;
        // NaN sorts last (as -inf): a strict weak order whatever the logits hold.
        for (std::uint32_t e = 0; e < experts; ++e)
            row[e] = std::isnan(in[e]) ? -std::numeric_limits<float>::infinity() : in[e];
        const std::uint64_t tokenKey = splitmix64(seed ^ splitmix64(t));
        for (std::uint32_t e = 0; e < experts; ++e)
            priority[e] = splitmix64(tokenKey + e);
        std::iota(order.begin(), order.end(), 0u);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::uint32_t a, std::uint32_t b) {
            if (row[a] != row[b])
                return row[a] > row[b];
            return priority[a] < priority[b];
        });
        std::copy(order.begin(), order.begin() + k, out.begin() + std::size_t{t} * k);
    }
    return out;
}

} // namespace headroom::probes
