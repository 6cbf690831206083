// CPU kernel benchmarks: GEMV per weight format on Llama-3-8B's MLP shape 4096 -> 14336
// (K = 4096, N = 14336) and Qwen2.5-0.5B's 896 -> 4864, as a fraction of C_read, the multi-threaded read-only streaming bandwidth
// measured in the same run over a buffer of at least 4x the last-level cache (gpus.md §6.5).
// Bytes are counted as Marlin does: weights + scales + activations + output.

#include <benchmark/benchmark.h>

#include "headroom/formats/quantblocks.h"
#include "headroom/kernels/cpukernels.h"
#include "headroom/kernels/quantize.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

namespace fmt = headroom::formats;
namespace hk = headroom::kernels;

/// A GEMV shape: K input features -> N output features.
struct Shape {
    std::uint32_t cols; ///< K
    std::uint32_t rows; ///< N
    const char* name;
};
/// Llama-3-8B's MLP up projection and Qwen2.5-0.5B's (the bench/peer models' shapes).
constexpr Shape kShapes[] = {{4096, 14336, "4096x14336"}, {896, 4864, "896x4864"}};

/// Last-level cache bytes: the larger of what sysconf and a 32 MiB floor say (VMs often
/// report the host's L3, or nothing).
std::uint64_t llcBytes() {
    const long reported = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return std::max<std::uint64_t>(reported > 0 ? static_cast<std::uint64_t>(reported) : 0, 32ull << 20);
}

/// Sums words [begin, end) with 8 independent integer sums (vectorizable, never optimised away).
std::uint64_t sumWords(const std::uint64_t* data, std::uint64_t begin, std::uint64_t end) {
    std::uint64_t acc[8] = {};
    for (std::uint64_t i = begin; i + 8 <= end; i += 8)
        for (int j = 0; j < 8; ++j)
            acc[j] += data[i + j];
    std::uint64_t sum = 0;
    for (auto a : acc)
        sum += a;
    return sum;
}

/// C_read in bytes/s: all hardware threads stream disjoint parts of a buffer >= 4x LLC, median of 7.
double readBandwidth() {
    static const double measured = [] {
        const std::uint64_t bytes = 4 * llcBytes();
        const std::uint64_t words = bytes / 8;
        std::unique_ptr<std::uint64_t[]> buffer(new std::uint64_t[words]);
        const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
        auto run = [&](bool touch) {
            std::vector<std::thread> workers;
            std::vector<std::uint64_t> sums(threads);
            for (unsigned t = 0; t < threads; ++t)
                workers.emplace_back([&, t] {
                    const std::uint64_t begin = words * t / threads, end = words * (t + 1) / threads;
                    if (touch)
                        for (std::uint64_t i = begin; i < end; ++i)
                            buffer[i] = i;
                    else
                        sums[t] = sumWords(buffer.get(), begin, end);
                });
            for (auto& w : workers)
                w.join();
            benchmark::DoNotOptimize(sums.data());
        };
        run(true); // first touch by the threads that read
        std::vector<double> rates;
        for (int i = 0; i < 7; ++i) {
            const auto start = std::chrono::steady_clock::now();
            run(false);
            const std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
            rates.push_back(double(bytes) / s.count());
        }
        std::sort(rates.begin(), rates.end());
        return rates[rates.size() / 2];
    }();
    return measured;
}

/// N(0, 0.02) weights of shape @p s, seeded.
const std::vector<float>& weights(int s) {
    static std::map<int, std::vector<float>> cache;
    auto it = cache.find(s);
    if (it == cache.end()) {
        std::vector<float> v(std::uint64_t{kShapes[s].rows} * kShapes[s].cols);
        std::mt19937 rng(42);
        std::normal_distribution<float> dist(0.0f, 0.02f);
        for (float& x : v)
            x = dist(rng);
        it = cache.emplace(s, std::move(v)).first;
    }
    return it->second;
}

enum class Format { Fp16, Int8Tensor, Int8Row, Int8G128, Int4Tensor, Int4Row, Int4G128, Nf4B64, Int8G32, Int4G32,
                    Q8_0, Q4_0, Q4_K, Q6_K, Q8_0x8, Q4_0x8 };

/// True for the formats whose rows are packed by packRows8 (RowPacking::Interleaved8).
bool packedFormat(Format f) {
    return f == Format::Q8_0x8 || f == Format::Q4_0x8;
}

fmt::QuantLayout layoutOf(Format f) {
    using fmt::ScaleScope;
    switch (f) {
    case Format::Fp16: return fmt::fp16Layout();
    case Format::Int8Tensor: return fmt::symmetricLayout(8, ScaleScope::Tensor);
    case Format::Int8Row: return fmt::symmetricLayout(8, ScaleScope::Row);
    case Format::Int8G128: return fmt::symmetricLayout(8, ScaleScope::Group, 128);
    case Format::Int4Tensor: return fmt::symmetricLayout(4, ScaleScope::Tensor);
    case Format::Int4Row: return fmt::symmetricLayout(4, ScaleScope::Row);
    case Format::Int4G128: return fmt::symmetricLayout(4, ScaleScope::Group, 128);
    case Format::Nf4B64: return fmt::nf4Layout();
    case Format::Int8G32: return fmt::symmetricLayout(8, ScaleScope::Group, 32); // q8_0's bytes per weight
    case Format::Int4G32: return fmt::symmetricLayout(4, ScaleScope::Group, 32); // q4_0's bytes per weight
    case Format::Q8_0: return fmt::ggmlLayout(fmt::QuantType::Q8_0); // GGML blocks as GGUF stores them
    case Format::Q4_0: return fmt::ggmlLayout(fmt::QuantType::Q4_0);
    case Format::Q4_K: return fmt::ggmlLayout(fmt::QuantType::Q4_K);
    case Format::Q6_K: return fmt::ggmlLayout(fmt::QuantType::Q6_K);
    case Format::Q8_0x8: return fmt::ggmlLayout(fmt::QuantType::Q8_0); // the same blocks, 8 rows interleaved
    case Format::Q4_0x8: return fmt::ggmlLayout(fmt::QuantType::Q4_0);
    }
    return fmt::fp16Layout();
}

const hk::QuantizedMatrix& matrix(Format f, int s) {
    static std::map<std::pair<Format, int>, hk::QuantizedMatrix> cache;
    auto it = cache.find({f, s});
    if (it == cache.end()) {
        hk::QuantizedMatrix m = hk::quantizeMatrix(weights(s).data(), kShapes[s].rows, kShapes[s].cols, layoutOf(f));
        if (packedFormat(f) && hk::packRows8(m.layout, m.rows, m.cols, m.data.data()) != hk::Status::Ok)
            m = {};
        it = cache.emplace(std::pair{f, s}, std::move(m)).first;
    }
    return it->second;
}

void BM_ReadBandwidth(benchmark::State& state) {
    for (auto _ : state)
        benchmark::DoNotOptimize(readBandwidth());
    state.counters["C_read_bytes_per_second"] = readBandwidth();
    state.counters["buffer_bytes"] = double(4 * llcBytes());
}
BENCHMARK(BM_ReadBandwidth)->Iterations(1);

/// Args: format, batch B, threads (0 = all), shape (index into kShapes), AMX allowed (CpuOptions::amx).
void BM_Gemv(benchmark::State& state) {
    const auto format = static_cast<Format>(state.range(0));
    const auto batch = static_cast<std::uint32_t>(state.range(1));
    const auto threads = static_cast<unsigned>(state.range(2));
    const int shape = static_cast<int>(state.range(3));
    hk::CpuOptions options{threads};
    options.amx = state.range(4) != 0;
    const double cRead = readBandwidth();
    const hk::QuantizedMatrix& m = matrix(format, shape);
    std::vector<std::uint16_t> x(std::uint64_t{batch} * kShapes[shape].cols);
    std::mt19937 rng(7);
    for (auto& v : x)
        v = fmt::floatToHalf(std::normal_distribution<float>(0.0f, 1.0f)(rng));
    std::vector<float> y(std::uint64_t{batch} * kShapes[shape].rows);
    hk::GemvArgs args{m.view(), x.data(), batch, y.data(), hk::OutputType::Fp32};
    if (packedFormat(format))
        args.weights.packing = hk::RowPacking::Interleaved8;
    for (auto _ : state) {
        if (hk::gemvCpu(args, options) != hk::Status::Ok)
            state.SkipWithError("gemvCpu failed");
        benchmark::ClobberMemory();
    }
    const double bytes = double(m.storageBytes() + 2 * x.size() + 4 * y.size());
    state.counters["bytes_per_second"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["fraction_of_C_read"] = benchmark::Counter(bytes / cRead, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["C_read_bytes_per_second"] = cRead;
    state.SetLabel(std::string(hk::cpuUsesAvx2() ? "avx2 " : "portable ") + std::to_string(m.storageBytes()) + " B");
}

/// Decode attention over one sequence of T tokens per KV head, Qwen2.5-0.5B's heads (H = 14,
/// H_kv = 2, D = 64); Args: tokens T, layout (0 contiguous, 1 paged with scattered blocks, 2 paged
/// with the blocks in order), threads (0 = all). Bytes: K and V read once.
void BM_Attention(benchmark::State& state) {
    const auto tokens = static_cast<std::uint32_t>(state.range(0));
    const auto paged = state.range(1);
    const auto threads = static_cast<unsigned>(state.range(2));
    constexpr std::uint32_t H = 14, Hkv = 2, D = 64, blockTokens = hk::kDefaultKvBlockTokens;
    const double cRead = readBandwidth();
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<std::uint16_t> q(H * D), k(std::uint64_t{Hkv} * tokens * D), v(k.size());
    for (auto* buf : {&q, &k, &v})
        for (auto& x : *buf)
            x = fmt::floatToHalf(dist(rng));
    const std::uint32_t blocks = (tokens + blockTokens - 1) / blockTokens;
    std::vector<std::int32_t> table(blocks), seqLens{static_cast<std::int32_t>(tokens)};
    for (std::uint32_t i = 0; i < blocks; ++i)
        table[i] = static_cast<std::int32_t>(paged == 2 ? i : (i * 7919u) % blocks); // scattered blocks (2: in order)
    std::vector<std::uint16_t> kPool(std::uint64_t{blocks} * Hkv * blockTokens * D), vPool(kPool.size());
    for (std::uint32_t h = 0; h < Hkv; ++h)
        for (std::uint32_t t = 0; t < tokens; ++t) {
            const std::uint64_t src = (std::uint64_t{h} * tokens + t) * D;
            const std::uint64_t dst = ((std::uint64_t(table[t / blockTokens]) * Hkv + h) * blockTokens + t % blockTokens) * D;
            std::copy_n(k.begin() + src, D, kPool.begin() + dst);
            std::copy_n(v.begin() + src, D, vPool.begin() + dst);
        }
    std::vector<float> out(H * D);
    hk::DecodeAttentionArgs a;
    a.batch = 1;
    a.numHeads = H;
    a.numKvHeads = Hkv;
    a.headDim = D;
    a.q = q.data();
    a.seqLens = seqLens.data();
    a.out = out.data();
    if (paged) {
        a.layout = hk::KvLayout::Paged;
        a.k = kPool.data();
        a.v = vPool.data();
        a.blockTable = table.data();
        a.maxBlocksPerSeq = blocks;
        a.blockTokens = blockTokens;
        a.numBlocks = blocks;
    } else {
        a.layout = hk::KvLayout::Contiguous;
        a.k = k.data();
        a.v = v.data();
        a.maxTokens = tokens;
    }
    for (auto _ : state) {
        if (hk::decodeAttentionCpu(a, {threads}) != hk::Status::Ok)
            state.SkipWithError("decodeAttentionCpu failed");
        benchmark::ClobberMemory();
    }
    const double bytes = 2.0 * double(k.size()) * 2;
    state.counters["bytes_per_second"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["fraction_of_C_read"] = benchmark::Counter(bytes / cRead, benchmark::Counter::kIsIterationInvariantRate);
}

const char* const kFormatNames[] = {"fp16", "int8-tensor", "int8-row", "int8-g128",
                                    "int4-tensor", "int4-row", "int4-g128", "nf4-b64", "int8-g32", "int4-g32",
                                    "q8_0", "q4_0", "q4_K", "q6_K", "q8_0-x8", "q4_0-x8"};

void registerAll() {
    // All threads, and one thread (its CPU time is all the work: the figure to read on a loaded machine).
    for (const int threads : {0, 1})
        for (const int paged : {0, 1, 2})
            benchmark::RegisterBenchmark((std::string("BM_Attention/qwen2.5-0.5b/T32768/") +
                                          (paged == 2 ? "paged-in-order" : paged ? "paged" : "contiguous") +
                                          (threads == 1 ? "/threads1" : "/threadsAll")).c_str(),
                                         BM_Attention)
                ->Args({32768, paged, threads})->Unit(benchmark::kMillisecond)->UseRealTime();
    const auto gemv = [](int f, int batch, int threads, int shape) {
        std::string name = std::string("BM_Gemv/") + kFormatNames[f] + "/" + kShapes[shape].name + "/B" + std::to_string(batch);
        if (threads == 1)
            name += "/threads1";
        else
            name += "/threadsAll";
        benchmark::RegisterBenchmark(name.c_str(), BM_Gemv)
            ->Args({f, batch, threads, shape, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
        if (batch >= 2 && f >= static_cast<int>(Format::Q8_0) && f != static_cast<int>(Format::Q4_K) &&
            f != static_cast<int>(Format::Q6_K)) // q8_0 / q4_0 GEMMs on the 8-row panels (CpuOptions::amx = false)
            benchmark::RegisterBenchmark((name + "/panels").c_str(), BM_Gemv)
                ->Args({f, batch, threads, shape, 0})->Unit(benchmark::kMillisecond)->UseRealTime();
    };
    for (int f = 0; f <= static_cast<int>(Format::Q4_0x8); ++f)
        gemv(f, 1, 0, 0);
    // Batch 16 against batch 1 (the GEMM goal: B16 < 2x B1), one thread and all, on both shapes;
    // Qwen2.5-0.5B's MLP has K = 896: whole q8_0/q4_0 blocks, not whole q4_K/q6_K super-blocks.
    for (int shape : {0, 1})
        for (int f : {static_cast<int>(Format::Fp16), static_cast<int>(Format::Int8G32), static_cast<int>(Format::Int4G32),
                      static_cast<int>(Format::Int4G128), static_cast<int>(Format::Q8_0), static_cast<int>(Format::Q4_0),
                      static_cast<int>(Format::Q8_0x8), static_cast<int>(Format::Q4_0x8)}) {
            if (shape == 1)
                gemv(f, 1, 0, shape);
            gemv(f, 16, 0, shape);
            gemv(f, 1, 1, shape);
            gemv(f, 16, 1, shape);
        }
}

} // namespace

int main(int argc, char** argv) {
    registerAll();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
