#pragma once
// Internal: splits [0, count) into contiguous ranges over std::thread workers.

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "headroom/kernels/cpukernels.h"

namespace headroom::kernels::detail {

/// Worker count for @p requested (0 = cpuThreads(): the CPUs this process may run on), at most
/// @p work items.
inline unsigned workerCount(unsigned requested, std::uint64_t work) {
    unsigned threads = requested ? requested : cpuThreads();
    return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, work)));
}

/// Calls fn(begin, end) on contiguous ranges of [0, count); the calling thread runs the first.
template <class Fn>
void parallelFor(std::uint64_t count, unsigned requested, Fn&& fn) {
    const unsigned threads = workerCount(requested, count);
    if (threads <= 1) {
        fn(std::uint64_t{0}, count);
        return;
    }
    std::vector<std::thread> workers;
    workers.reserve(threads - 1);
    const std::uint64_t chunk = (count + threads - 1) / threads;
    for (unsigned t = 1; t < threads; ++t) {
        const std::uint64_t begin = std::min<std::uint64_t>(count, t * chunk);
        const std::uint64_t end = std::min<std::uint64_t>(count, begin + chunk);
        if (begin < end)
            workers.emplace_back([&fn, begin, end] { fn(begin, end); });
    }
    fn(std::uint64_t{0}, std::min<std::uint64_t>(count, chunk));
    for (auto& worker : workers)
        worker.join();
}

} // namespace headroom::kernels::detail
