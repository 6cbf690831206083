// bench_ggml_kernels: Headroom's CPU GEMV against ggml's own CPU kernels, in one process, on the
// same weights (issue 12: "Headroom at least as fast as ggml for every format both have, one
// thread and all threads").
//
//   bench_ggml_kernels LIBDIR [VARIANT] [REPS]
//
// LIBDIR: node-llama-cpp's prebuilt binaries (bench/peer/node_modules/@node-llama-cpp/linux-x64/
// bins/linux-x64, npm i -E node-llama-cpp@3.21.1); VARIANT: the ggml CPU library to load
// (default haswell = AVX2/FMA/F16C, the ISA of Headroom's kernels; sapphirerapids is what ggml
// itself picks on this machine); REPS (default 15) interleaved repetitions A, B, A, B, ...
//
// ggml side (what ggml_compute_forward_mul_mat does for one activation row, read at ggml-org/
// llama.cpp ggml/src/ggml-cpu/ggml-cpu.c and repack.cpp): x (fp32) quantized once per call by the
// type's vec_dot_type from_float (q8_0 for q8_0/q4_0, q8_K for q4_K/q6_K), then the rows'
// dot products: the plain vec_dot of ggml_get_type_traits_cpu(type) over each row, and, where the
// library has one, the repacked GEMV of 8 interleaved rows (ggml::cpu::repack::gemv<block_q4_0,
// 8, 8, Q8_0> etc., weights repacked once by ggml's own repack<>); the faster of the two is the
// figure ggml is judged by. Rows are split over threads in contiguous ranges of whole 8-row groups
// with the same std::thread split as Headroom's kernels (kernels/ref/parallel.h), so the
// comparison is of the kernels, not of two thread pools. Headroom side: gemvCpu on fp16 x (its
// activation quantization included), q8_0 / q4_0 packed by packRows8 as the probe does at load.
//
// Each repetition times CALLS calls (about 20 ms of work); the table prints the medians over REPS
// of the CPU time per call (one thread: the calling thread's, all the work, which a descheduled
// thread does not inflate on this shared machine; all threads: the process's, every thread's
// work) and of the wall time, the outputs' agreement (max |y_headroom - y_ggml| / max |y|), and
// ratio = ggml ms / Headroom ms of the medians (above 1: Headroom faster).

#include "headroom/formats/quantblocks.h"
#include "headroom/kernels/cpukernels.h"
#include "headroom/kernels/quantize.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fmt = headroom::formats;
namespace hk = headroom::kernels;

// --- the ggml C ABI used here (ggml/include/ggml.h, ggml-cpu.h; stable across these versions) ---
enum GgmlType : int { kF32 = 0, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14, kQ8_K = 15 };
struct GgmlInitParams {
    std::size_t mem_size;
    void* mem_buffer;
    bool no_alloc;
};
using FromFloat = void (*)(const float* x, void* y, std::int64_t k);
using VecDot = void (*)(int n, float* s, std::size_t bs, const void* x, std::size_t bx, const void* y, std::size_t by, int nrc);
struct TypeTraitsCpu {
    FromFloat from_float;
    VecDot vec_dot;
    int vec_dot_type;
    std::int64_t nrows;
};
using RepackGemv = void (*)(int n, float* s, std::size_t bs, const void* vx, const void* vy, int nr, int nc);
using Repack = int (*)(void* tensor, const void* data, std::size_t size);

struct Ggml {
    void* base = nullptr;
    void* cpu = nullptr;
    void* (*init)(GgmlInitParams) = nullptr;
    void (*free)(void*) = nullptr;
    void* (*newTensor2d)(void*, int, std::int64_t, std::int64_t) = nullptr;
    void* (*getData)(const void*) = nullptr;
    std::size_t (*tensorOverhead)() = nullptr;
    const TypeTraitsCpu* (*traits)(int) = nullptr;
    void (*cpuInit)() = nullptr;

    template <class F>
    void sym(void* lib, const char* name, F& out, bool required = true) {
        out = reinterpret_cast<F>(dlsym(lib, name));
        if (!out && required) {
            std::fprintf(stderr, "bench_ggml_kernels: %s not found in the ggml library: %s\n", name, dlerror());
            std::exit(2);
        }
    }
};

Ggml loadGgml(const std::string& dir, const std::string& variant) {
    Ggml g;
    g.base = dlopen((dir + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!g.base) {
        std::fprintf(stderr, "bench_ggml_kernels: cannot load %s/libggml-base.so: %s\n", dir.c_str(), dlerror());
        std::exit(2);
    }
    const std::string cpu = dir + "/libggml-cpu-" + variant + ".so";
    g.cpu = dlopen(cpu.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!g.cpu) {
        std::fprintf(stderr, "bench_ggml_kernels: cannot load %s: %s\n", cpu.c_str(), dlerror());
        std::exit(2);
    }
    g.sym(g.base, "ggml_init", g.init);
    g.sym(g.base, "ggml_free", g.free);
    g.sym(g.base, "ggml_new_tensor_2d", g.newTensor2d);
    g.sym(g.base, "ggml_get_data", g.getData);
    g.sym(g.base, "ggml_tensor_overhead", g.tensorOverhead);
    g.sym(g.cpu, "ggml_get_type_traits_cpu", g.traits);
    g.sym(g.cpu, "ggml_cpu_init", g.cpuInit);
    g.cpuInit();
    return g;
}

/// ggml's repacked GEMV and repack of a type (8 interleaved rows), or nulls where the library has none.
struct RepackFns {
    RepackGemv gemv = nullptr;
    Repack repack = nullptr;
};

RepackFns repackFns(Ggml& g, fmt::QuantType type) {
    RepackFns r;
    switch (type) {
    case fmt::QuantType::Q4_0:
        g.sym(g.cpu, "_ZN4ggml3cpu6repack4gemvI10block_q4_0Ll8ELl8EL9ggml_type8EEEviPfmPKvS7_ii", r.gemv, false);
        g.sym(g.cpu, "_ZN4ggml3cpu6repack6repackI10block_q4_0Ll8ELl8EEEiP11ggml_tensorPKvm", r.repack, false);
        break;
    case fmt::QuantType::Q4_K:
        g.sym(g.cpu, "_ZN4ggml3cpu6repack4gemvI10block_q4_KLl8ELl8EL9ggml_type15EEEviPfmPKvS7_ii", r.gemv, false);
        g.sym(g.cpu, "_ZN4ggml3cpu6repack6repackI10block_q4_KLl8ELl8EEEiP11ggml_tensorPKvm", r.repack, false);
        break;
    case fmt::QuantType::Q6_K:
        g.sym(g.cpu, "_ZN4ggml3cpu6repack4gemvI10block_q6_KLl8ELl8EL9ggml_type15EEEviPfmPKvS7_ii", r.gemv, false);
        g.sym(g.cpu, "_ZN4ggml3cpu6repack6repackI10block_q6_KLl8ELl8EEEiP11ggml_tensorPKvm", r.repack, false);
        break;
    default: break;
    }
    if (!r.gemv || !r.repack)
        r = {};
    return r;
}

int ggmlTypeOf(fmt::QuantType t) {
    switch (t) {
    case fmt::QuantType::Q4_0: return kQ4_0;
    case fmt::QuantType::Q8_0: return kQ8_0;
    case fmt::QuantType::Q4_K: return kQ4_K;
    case fmt::QuantType::Q6_K: return kQ6_K;
    default: return -1;
    }
}

/// fn(begin, end) over contiguous ranges of [0, count) on @p threads threads (the caller runs the
/// first), as kernels/ref/parallel.h splits rows.
void splitOver(std::uint64_t count, unsigned threads, const std::function<void(std::uint64_t, std::uint64_t)>& fn) {
    if (threads <= 1) {
        fn(0, count);
        return;
    }
    std::vector<std::thread> workers;
    const std::uint64_t chunk = (count + threads - 1) / threads;
    for (unsigned t = 1; t < threads; ++t) {
        const std::uint64_t b = std::min(count, t * chunk), e = std::min(count, b + chunk);
        if (b < e)
            workers.emplace_back([&fn, b, e] { fn(b, e); });
    }
    fn(0, std::min(count, chunk));
    for (auto& w : workers)
        w.join();
}

/// Median and best of @p v.
std::pair<double, double> medianBest(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v.front()};
}

struct Case {
    const char* format;
    fmt::QuantLayout layout;
    fmt::QuantType ggmlType; ///< ggml's format of the same weights (int4-g128: q4_0, its nearest in bytes)
    std::uint32_t k, n;
};

double relDiff(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, mag = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, double(std::fabs(a[i] - b[i])));
        mag = std::max(mag, double(std::fabs(b[i])));
    }
    return mag > 0 ? diff / mag : diff;
}

void runCase(Ggml& g, const Case& c, unsigned threads, int reps) {
    // Weights N(0, 0.02), activations N(0, 1), seeded; ggml's copy quantized by Headroom into the
    // GGUF block bytes (the formats both read; the outputs' agreement checks it).
    std::vector<float> w(std::uint64_t{c.n} * c.k);
    std::mt19937 rng(42);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    for (float& v : w)
        v = dist(rng);
    std::vector<float> x(c.k);
    std::normal_distribution<float> unit(0.0f, 1.0f);
    for (float& v : x)
        v = unit(rng);
    std::vector<std::uint16_t> xh(c.k);
    for (std::uint32_t i = 0; i < c.k; ++i) {
        xh[i] = fmt::floatToHalf(x[i]);
        x[i] = fmt::halfToFloat(xh[i]); // both sides multiply the same activations
    }

    hk::QuantizedMatrix ours = hk::quantizeMatrix(w.data(), c.n, c.k, c.layout);
    hk::QuantizedMatrix theirs = c.layout.type == c.ggmlType ? ours
                                                             : hk::quantizeMatrix(w.data(), c.n, c.k, fmt::ggmlLayout(c.ggmlType));
    hk::GemvArgs args{ours.view(), xh.data(), 1, nullptr, hk::OutputType::Fp32};
    if (hk::packsRows8(ours.layout) && hk::packRows8(ours.layout, ours.rows, ours.cols, ours.data.data()) == hk::Status::Ok)
        args.weights = ours.view(), args.weights.packing = hk::RowPacking::Interleaved8;
    std::vector<float> yOurs(c.n), yPlain(c.n), yRepack(c.n);
    args.y = yOurs.data();
    hk::CpuOptions options{threads};

    const int type = ggmlTypeOf(c.ggmlType);
    const TypeTraitsCpu* tw = g.traits(type);
    const TypeTraitsCpu* tx = g.traits(tw->vec_dot_type);
    const std::uint64_t rowBytes = fmt::rowBytes(fmt::ggmlLayout(c.ggmlType), c.k);
    // block_q8_0: 34 bytes a 32; block_q8_K: float d, 256 int8, 16 int16 sums = 292 bytes a 256.
    const std::uint64_t xBytes = tw->vec_dot_type == kQ8_K ? std::uint64_t{c.k} / 256 * 292 : std::uint64_t{c.k} / 32 * 34;
    std::vector<std::uint8_t> xq(xBytes + 64);
    const std::uint8_t* W = theirs.data.data();
    const auto plain = [&] {
        tx->from_float(x.data(), xq.data(), c.k);
        splitOver(c.n, threads, [&](std::uint64_t b, std::uint64_t e) {
            for (std::uint64_t r = b; r < e; ++r)
                tw->vec_dot(static_cast<int>(c.k), &yPlain[r], 0, W + r * rowBytes, 0, xq.data(), 0, 1);
        });
    };
    // ggml's repack of the same bytes into a tensor of its own (ggml_new_tensor_2d: ne0 = K, ne1 = N).
    RepackFns rf = repackFns(g, c.ggmlType);
    void* ctx = nullptr;
    const std::uint8_t* packed = nullptr;
    if (rf.gemv && c.n % 8 == 0) {
        ctx = g.init({theirs.data.size() + g.tensorOverhead() + (1u << 20), nullptr, false});
        void* t = g.newTensor2d(ctx, type, c.k, c.n);
        if (rf.repack(t, theirs.data.data(), theirs.data.size()) == 0)
            packed = static_cast<const std::uint8_t*>(g.getData(t));
    }
    const auto repacked = [&] {
        tx->from_float(x.data(), xq.data(), c.k);
        splitOver(c.n / 8, threads, [&](std::uint64_t b, std::uint64_t e) {
            rf.gemv(static_cast<int>(c.k), yRepack.data() + 8 * b, c.n, packed + 8 * b * rowBytes, xq.data(), 1,
                    static_cast<int>(8 * (e - b)));
        });
    };
    const auto headroom = [&] {
        if (hk::gemvCpu(args, options) != hk::Status::Ok) {
            std::fprintf(stderr, "gemvCpu failed\n");
            std::exit(1);
        }
    };

    // Calls per repetition: about 20 ms of Headroom's work. Each repetition gives the wall time
    // and the CPU time per call: the calling thread's with one thread (all the work, and what a
    // descheduled thread does not add), the process's with all threads (the work of every thread,
    // the thread starts included).
    const clockid_t cpuClock = threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID;
    const auto cpuMs = [cpuClock] {
        timespec t{};
        clock_gettime(cpuClock, &t);
        return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
    };
    struct Times {
        std::vector<double> wall, cpu;
    };
    const auto time = [&](const std::function<void()>& f, int calls, Times& out) {
        const double c0 = cpuMs();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i)
            f();
        out.wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / calls);
        out.cpu.push_back((cpuMs() - c0) / calls);
    };
    headroom();
    plain();
    if (packed)
        repacked();
    Times probe;
    time(headroom, 3, probe);
    const int calls = std::max(1, static_cast<int>(20.0 / std::max(1e-3, probe.cpu.back())));
    Times a, p, q;
    for (int r = 0; r < reps; ++r) {
        time(headroom, calls, a);
        time(plain, calls, p);
        if (packed)
            time(repacked, calls, q);
    }
    const double aw = medianBest(a.wall).first, ac = medianBest(a.cpu).first;
    double gw = medianBest(p.wall).first, gc = medianBest(p.cpu).first;
    const char* which = "vec_dot";
    if (packed) {
        const double qw = medianBest(q.wall).first, qc = medianBest(q.cpu).first;
        std::printf("#   ggml %s %ux%u: plain vec_dot %.3f ms CPU, repacked 8x8 gemv %.3f ms CPU (medians); outputs agree to %.2g\n",
                    c.format, c.k, c.n, gc, qc, relDiff(yRepack, yPlain));
        if (qc < gc)
            gw = qw, gc = qc, which = "repack 8x8";
    }
    std::printf("%-10s %6ux%-6u %7u %10.3f %10.3f %-11s %10.3f %10.3f %9.2g %9.2f %10.2f\n", c.format, c.k, c.n, threads, ac, aw,
                which, gc, gw, relDiff(yOurs, yPlain), gc / ac, gw / aw);
    std::fflush(stdout);
    if (ctx)
        g.free(ctx);
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_ggml_kernels LIBDIR [VARIANT (haswell)] [REPS (15)]\n");
        return 2;
    }
    const std::string variant = argc > 2 ? argv[2] : "haswell";
    const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 15;
    Ggml g = loadGgml(argv[1], variant);
    const unsigned all = hk::cpuThreads();
    std::printf("# ggml: libggml-cpu-%s.so from %s; Headroom: %s; %u CPUs; reps %d\n", variant.c_str(), argv[1],
                hk::cpuUsesAvx2() ? "avx2" : "portable", all, reps);
    std::printf("%-10s %13s %7s %10s %10s %-11s %10s %10s %9s %9s %10s\n", "format", "KxN", "threads", "ours_cpu", "ours_wall",
                "ggml_kernel", "ggml_cpu", "ggml_wall", "max_diff", "ratio_cpu", "ratio_wall");
    using fmt::QuantType;
    const fmt::QuantLayout int4g128 = fmt::symmetricLayout(4, fmt::ScaleScope::Group, 128);
    const Case cases[] = {
        {"q4_0", fmt::ggmlLayout(QuantType::Q4_0), QuantType::Q4_0, 4096, 14336},
        {"q4_0", fmt::ggmlLayout(QuantType::Q4_0), QuantType::Q4_0, 896, 4864},
        {"q8_0", fmt::ggmlLayout(QuantType::Q8_0), QuantType::Q8_0, 4096, 14336},
        {"q8_0", fmt::ggmlLayout(QuantType::Q8_0), QuantType::Q8_0, 896, 4864},
        {"q4_K", fmt::ggmlLayout(QuantType::Q4_K), QuantType::Q4_K, 4096, 14336},
        {"q4_K", fmt::ggmlLayout(QuantType::Q4_K), QuantType::Q4_K, 4864, 896},
        {"q6_K", fmt::ggmlLayout(QuantType::Q6_K), QuantType::Q6_K, 4096, 14336},
        {"q6_K", fmt::ggmlLayout(QuantType::Q6_K), QuantType::Q6_K, 4864, 896},
        {"int4-g128", int4g128, QuantType::Q4_0, 4096, 14336},
        {"int4-g128", int4g128, QuantType::Q4_0, 896, 4864},
    };
    const char* only = std::getenv("HEADROOM_BENCH_ONLY"); // e.g. "q4_0": run one format
    for (const Case& c : cases)
        if (!only || std::string(only) == c.format)
            for (unsigned t : {1u, all})
                if (t == 1 || all > 1)
                    runCase(g, c, t, reps);
    return 0;
}
