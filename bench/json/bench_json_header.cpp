// Safetensors header parsing at the sizes an attacker (or a very large model) can send: the
// duplicate-key check and the DOM build must stay linear. Reports bytes per second; the figure
// for bench/RESULTS.md is seconds per 10 MB of header (issue 13's goal: under 1 s per 10 MB).
//   bench_json_header --benchmark_filter=. --benchmark_repetitions=3

#include "headroom/core/importers/safetensors.h"
#include "hostilefiles.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

/// A safetensors file whose header is about @p headerBytes long (~95 bytes per tensor).
const std::vector<std::uint8_t>& fileOf(std::size_t headerBytes)
{
    static std::vector<std::uint8_t> cache10, cache100;
    std::vector<std::uint8_t>& cache = headerBytes < 50'000'000 ? cache10 : cache100;
    if (cache.empty())
        cache = headroom::test::hostile::safetensorsWithTensors(headerBytes / 95);
    return cache;
}

void parseHeader(benchmark::State& state)
{
    const auto& file = fileOf(static_cast<std::size_t>(state.range(0)));
    std::uint64_t header = 0;
    for (int b = 7; b >= 0; --b)
        header = (header << 8) | file[static_cast<std::size_t>(b)];
    for (auto _ : state) {
        auto parsed = headroom::parseSafetensorsBytes(file, "bench.safetensors", file.size());
        if (!parsed)
            state.SkipWithError("the generated header did not parse");
        benchmark::DoNotOptimize(parsed);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * header));
    state.counters["header_MB"] = static_cast<double>(header) / 1e6;
    state.counters["s_per_10MB"] = benchmark::Counter(static_cast<double>(header) / 1e7,
                                                      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

} // namespace

BENCHMARK(parseHeader)->Arg(10'000'000)->Arg(95'000'000)->Unit(benchmark::kMillisecond)->Iterations(2);

BENCHMARK_MAIN();
