#pragma once
// Medians and coefficients of variation of timed repetitions (private to headroom_probes).

#include <algorithm>
#include <cmath>
#include <vector>

namespace headroom::probes::detail {

/// The median of @p v (mean of the two middle values for an even count); 0 when empty.
inline double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Coefficient of variation: sample standard deviation / mean; 0 for fewer than 2 values.
inline double coefficientOfVariation(const std::vector<double>& v)
{
    if (v.size() < 2)
        return 0;
    double mean = 0;
    for (double x : v)
        mean += x;
    mean /= static_cast<double>(v.size());
    double sq = 0;
    for (double x : v)
        sq += (x - mean) * (x - mean);
    return mean > 0 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) / mean : 0;
}

} // namespace headroom::probes::detail
