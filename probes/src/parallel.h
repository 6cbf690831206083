#pragma once
// A byte range split over the host's threads (private to headroom_probes).

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "headroom/kernels/cpukernels.h"

namespace headroom::probes::detail {

/// Threads the CPU backend uses: the CPUs this process may run on (kernels::cpuThreads()).
inline unsigned hostThreads()
{
    return kernels::cpuThreads();
}

/// Calls @p fn(begin, end) on [0, bytes) split into one 4 KiB-aligned chunk per thread.
template <class Fn>
void parallelBytes(std::uint64_t bytes, Fn fn)
{
    const unsigned threads = static_cast<unsigned>(std::min<std::uint64_t>(hostThreads(), std::max<std::uint64_t>(1, bytes >> 20)));
    if (threads <= 1) {
        fn(std::uint64_t{0}, bytes);
        return;
    }
    const std::uint64_t chunk = (bytes / threads + 4095) / 4096 * 4096;
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < threads; ++t) {
        const std::uint64_t begin = std::min(bytes, chunk * t);
        const std::uint64_t end = std::min(bytes, begin + chunk);
        if (begin < end)
            workers.emplace_back([=] { fn(begin, end); });
    }
    fn(std::uint64_t{0}, std::min(bytes, chunk));
    for (std::thread& w : workers)
        w.join();
}

} // namespace headroom::probes::detail
