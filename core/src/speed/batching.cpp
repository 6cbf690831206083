#include "headroom/core/speed/batching.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

namespace headroom {

namespace {

BatchingResult summarise(const std::vector<std::uint64_t>& lengths, const std::vector<std::uint64_t>& done,
                         const std::vector<std::uint64_t>& admitted)
{
    BatchingResult r;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        r.totalTokens += lengths[i];
        r.totalSteps = std::max(r.totalSteps, done[i]);
        r.meanLatencySteps += static_cast<double>(done[i]);
        r.meanServiceSteps += static_cast<double>(done[i] - admitted[i]);
    }
    if (!lengths.empty()) {
        r.meanLatencySteps /= static_cast<double>(lengths.size());
        r.meanServiceSteps /= static_cast<double>(lengths.size());
    }
    r.tokensPerStep = r.totalSteps > 0 ? static_cast<double>(r.totalTokens) / static_cast<double>(r.totalSteps) : 0;
    return r;
}

} // namespace

BatchingResult simulateStaticBatching(const std::vector<std::uint64_t>& lengths, std::uint64_t slots)
{
    slots = std::max<std::uint64_t>(slots, 1);
    std::vector<std::uint64_t> done(lengths.size()), admitted(lengths.size());
    std::uint64_t t = 0;
    for (std::size_t start = 0; start < lengths.size(); start += slots) {
        const std::size_t end = std::min(lengths.size(), start + static_cast<std::size_t>(slots));
        const std::uint64_t longest = *std::max_element(lengths.begin() + static_cast<std::ptrdiff_t>(start),
                                                        lengths.begin() + static_cast<std::ptrdiff_t>(end));
        for (std::size_t i = start; i < end; ++i) {
            admitted[i] = t;
            done[i] = t + longest;
        }
        t += longest;
    }
    return summarise(lengths, done, admitted);
}

BatchingResult simulateContinuousBatching(const std::vector<std::uint64_t>& lengths, std::uint64_t slots)
{
    slots = std::max<std::uint64_t>(slots, 1);
    std::vector<std::uint64_t> done(lengths.size()), admitted(lengths.size());
    std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> freeAt;
    for (std::uint64_t s = 0; s < slots; ++s)
        freeAt.push(0);
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        const std::uint64_t start = freeAt.top();
        freeAt.pop();
        admitted[i] = start;
        done[i] = start + lengths[i];
        freeAt.push(done[i]);
    }
    return summarise(lengths, done, admitted);
}

std::vector<std::uint64_t> skewedOutputLengths(std::uint64_t count, double medianTokens, double sigma)
{
    // Quantiles of a log-normal through the inverse normal CDF (Acklam's rational approximation
    // would do; erfinv via Newton on std::erfc keeps this self-contained and exact enough).
    const auto inverseNormal = [](double p) {
        double x = 0;
        for (int i = 0; i < 60; ++i) {
            const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
            const double pdf = std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
            x -= (cdf - p) / pdf;
        }
        return x;
    };
    std::vector<std::uint64_t> sorted;
    for (std::uint64_t i = 0; i < count; ++i) {
        const double q = (static_cast<double>(i) + 0.5) / static_cast<double>(count);
        sorted.push_back(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(medianTokens * std::exp(sigma * inverseNormal(q))))));
    }
    // Interleave: a long request every few short ones, as real traffic mixes them.
    std::vector<std::uint64_t> out;
    std::size_t lo = 0;
    std::size_t hi = sorted.size();
    bool takeHigh = true;
    while (lo < hi) {
        out.push_back(takeHigh ? sorted[--hi] : sorted[lo++]);
        takeHigh = !takeHigh;
    }
    return out;
}

} // namespace headroom
