// CUDA kernel benchmarks (gpus.md §6 measurement rules), a plain executable:
// - B_copy: cudaMemcpyAsync device-to-device of 512 MiB, read + write bytes, median of 25 timed
//   with events.
// - GEMV per format as a fraction of B_copy (bytes as Marlin counts them: weights + scales +
//   activations + output), and speed-up over cuBLAS fp16 (cublasGemmEx, fp32 compute) timed in
//   the same harness; L2 kept cold by rotating over copies of the operands totalling > 5x L2.
// - Decode attention, contiguous vs paged (block 16), bytes = K + V read.
// Every figure is the median of >= 20 timed launches; CV (stdev / mean) is printed beside it.
// Prints one table; `--quick` runs fewer shapes.

#include <cuda_runtime.h>
#if HEADROOM_BENCH_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

#include "headroom/formats/quantblocks.h"
#include "headroom/kernels/kernels.h"
#include "headroom/kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fmt = headroom::formats;
namespace hk = headroom::kernels;

constexpr int kTimedRuns = 25;  // >= 20 (gpus.md §6.1)
constexpr int kWarmupRuns = 3;

#define BENCH_CHECK(call)                                                                                              \
    do {                                                                                                               \
        const cudaError_t e_ = (call);                                                                                 \
        if (e_ != cudaSuccess) {                                                                                       \
            std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);              \
            std::exit(2);                                                                                              \
        }                                                                                                              \
    } while (0)

struct Timing {
    double medianUs = 0.0; ///< median microseconds per launch
    double cv = 0.0;       ///< coefficient of variation of the timed launches
};

/// Times launch(i) (i = run index, for buffer rotation) with events around each launch.
Timing timeLaunches(const std::function<void(int)>& launch, cudaStream_t stream) {
    for (int i = 0; i < kWarmupRuns; ++i)
        launch(i);
    std::vector<cudaEvent_t> events(2 * kTimedRuns);
    for (auto& e : events)
        BENCH_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < kTimedRuns; ++i) {
        BENCH_CHECK(cudaEventRecord(events[2 * i], stream));
        launch(kWarmupRuns + i);
        BENCH_CHECK(cudaEventRecord(events[2 * i + 1], stream));
    }
    BENCH_CHECK(cudaStreamSynchronize(stream));
    std::vector<double> us(kTimedRuns);
    for (int i = 0; i < kTimedRuns; ++i) {
        float ms = 0.0f;
        BENCH_CHECK(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
        us[i] = 1000.0 * ms;
    }
    for (auto& e : events)
        cudaEventDestroy(e);
    double mean = 0.0, var = 0.0;
    for (double u : us)
        mean += u / kTimedRuns;
    for (double u : us)
        var += (u - mean) * (u - mean) / kTimedRuns;
    std::sort(us.begin(), us.end());
    return {us[kTimedRuns / 2], std::sqrt(var) / mean};
}

template <class T>
T* deviceCopy(const std::vector<T>& host) {
    T* p = nullptr;
    BENCH_CHECK(cudaMalloc(&p, std::max<std::size_t>(1, host.size()) * sizeof(T)));
    BENCH_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return p;
}

/// Copies of an operand needed so that consecutive launches never find it in L2: total > 5x L2.
int rotationCopies(std::uint64_t bytesPerCopy, std::uint64_t l2Bytes) {
    return static_cast<int>(std::max<std::uint64_t>(2, (5 * l2Bytes) / std::max<std::uint64_t>(1, bytesPerCopy) + 2));
}

void printRow(const char* what, const std::string& shape, int batch, const Timing& t, double bytes, double copyBw,
              double speedup) {
    const double gbps = bytes / (t.medianUs * 1e-6) / 1e9;
    std::printf("%-22s %-16s %4d %10.2f %9.1f %8.3f %8s %6.2f%%\n", what, shape.c_str(), batch, t.medianUs, gbps,
                gbps / copyBw, speedup > 0 ? (std::to_string(speedup).substr(0, 5) + "x").c_str() : "-", 100.0 * t.cv);
}

} // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("no usable CUDA device: benchmarks skipped\n");
        return 77;
    }
    cudaDeviceProp prop{};
    BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
    const std::uint64_t l2 = static_cast<std::uint64_t>(prop.l2CacheSize);
    cudaStream_t stream;
    BENCH_CHECK(cudaStreamCreate(&stream));
    std::printf("device: %s, %d SMs, L2 %llu MiB, %.1f GiB\n", prop.name, prop.multiProcessorCount,
                static_cast<unsigned long long>(l2 >> 20), double(prop.totalGlobalMem) / (1ull << 30));

    // --- B_copy ---
    const std::size_t copyBytes = 512ull << 20;
    void *src = nullptr, *dst = nullptr;
    BENCH_CHECK(cudaMalloc(&src, copyBytes));
    BENCH_CHECK(cudaMalloc(&dst, copyBytes));
    BENCH_CHECK(cudaMemset(src, 1, copyBytes));
    const Timing copy = timeLaunches([&](int) { BENCH_CHECK(cudaMemcpyAsync(dst, src, copyBytes, cudaMemcpyDeviceToDevice, stream)); }, stream);
    const double copyBw = 2.0 * copyBytes / (copy.medianUs * 1e-6) / 1e9;
    BENCH_CHECK(cudaFree(src));
    BENCH_CHECK(cudaFree(dst));
    std::printf("B_copy (cudaMemcpyAsync D2D 512 MiB, read + write): %.1f GB/s, CV %.2f%%\n\n", copyBw, 100.0 * copy.cv);
    std::printf("%-22s %-16s %4s %10s %9s %8s %8s %7s\n", "kernel", "shape (K->N)", "B", "median us", "GB/s",
                "/B_copy", "vs cuBLAS", "CV");

#if HEADROOM_BENCH_HAVE_CUBLAS
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "cublasCreate failed\n");
        return 2;
    }
    cublasSetStream(handle, stream);
#endif

    struct Shape {
        std::uint32_t k, n;
    };
    std::vector<Shape> shapes = {{4096, 14336}, {14336, 4096}, {4096, 4096}};
    if (quick)
        shapes.resize(1);
    struct Fmt {
        const char* name;
        fmt::QuantLayout layout;
    };
    const Fmt formats[] = {{"fp16", fmt::fp16Layout()},
                           {"int8-row", fmt::symmetricLayout(8, fmt::ScaleScope::Row)},
                           {"int8-tensor", fmt::symmetricLayout(8, fmt::ScaleScope::Tensor)},
                           {"int4-row", fmt::symmetricLayout(4, fmt::ScaleScope::Row)},
                           {"int4-g128", fmt::symmetricLayout(4, fmt::ScaleScope::Group, 128)},
                           {"nf4-b64", fmt::nf4Layout()},
                           // GGML blocks as GGUF stores them (formats/ggmlblocks.h)
                           {"q8_0", fmt::ggmlLayout(fmt::QuantType::Q8_0)},
                           {"q4_0", fmt::ggmlLayout(fmt::QuantType::Q4_0)},
                           {"q4_K", fmt::ggmlLayout(fmt::QuantType::Q4_K)},
                           {"q6_K", fmt::ggmlLayout(fmt::QuantType::Q6_K)}};
    std::mt19937 rng(1);
    for (const Shape& shape : shapes) {
        const std::string shapeName = std::to_string(shape.k) + "->" + std::to_string(shape.n);
        std::vector<float> w(std::uint64_t{shape.n} * shape.k);
        std::normal_distribution<float> dist(0.0f, 0.02f);
        for (float& v : w)
            v = dist(rng);
        for (const int batch : {1, 2, 4, 16}) {
            if (quick && batch != 1)
                continue;
            std::vector<std::uint16_t> x(static_cast<std::uint64_t>(batch) * shape.k);
            for (auto& v : x)
                v = fmt::floatToHalf(dist(rng) * 50.0f);
            std::uint16_t* dX = deviceCopy(x);
            float* dY = nullptr;
            BENCH_CHECK(cudaMalloc(&dY, static_cast<std::uint64_t>(batch) * shape.n * sizeof(float)));
            double cublasUs = 0.0;
#if HEADROOM_BENCH_HAVE_CUBLAS
            {
                // y[B][N] = x[B][K] W[N][K]^T; cuBLAS is column-major: W is the K x N matrix A, op(A) = A^T.
                const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), shape.n, shape.k, fmt::fp16Layout());
                const int copies = rotationCopies(m.storageBytes(), l2);
                std::vector<std::uint8_t*> dW(copies);
                for (auto& p : dW)
                    p = deviceCopy(m.data);
                const float alpha = 1.0f, beta = 0.0f;
                const Timing t = timeLaunches([&](int i) {
                    cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(shape.n), batch, static_cast<int>(shape.k),
                                 &alpha, dW[i % copies], CUDA_R_16F, static_cast<int>(shape.k), dX, CUDA_R_16F,
                                 static_cast<int>(shape.k), &beta, dY, CUDA_R_32F, static_cast<int>(shape.n),
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                }, stream);
                cublasUs = t.medianUs;
                printRow("cublas fp16", shapeName, batch, t, double(m.storageBytes() + 2 * x.size() + 4ull * batch * shape.n), copyBw, 1.0);
                for (auto* p : dW)
                    cudaFree(p);
            }
#endif
            for (const Fmt& f : formats) {
                if (batch != 1 && std::strcmp(f.name, "int4-g128") != 0 && std::strcmp(f.name, "fp16") != 0)
                    continue;
                const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), shape.n, shape.k, f.layout);
                const int copies = rotationCopies(m.storageBytes(), l2);
                std::vector<hk::GemvArgs> args(copies);
                std::vector<void*> owned;
                for (int c = 0; c < copies; ++c) {
                    std::uint8_t* d = deviceCopy(m.data);
                    std::uint16_t* s = m.scales.empty() ? nullptr : deviceCopy(m.scales);
                    owned.push_back(d);
                    owned.push_back(s);
                    hk::WeightMatrix wm = m.view();
                    wm.data = d;
                    wm.scales = s;
                    args[c] = hk::GemvArgs{wm, dX, static_cast<std::uint32_t>(batch), dY, hk::OutputType::Fp32};
                }
                hk::Status status = hk::Status::Ok;
                const Timing t = timeLaunches([&](int i) {
                    const hk::Status s = hk::gemv(hk::Backend::Cuda, args[i % copies], stream);
                    if (s != hk::Status::Ok)
                        status = s;
                }, stream);
                if (status != hk::Status::Ok)
                    std::printf("%-22s %-16s %4d  %s\n", f.name, shapeName.c_str(), batch, hk::statusName(status));
                else
                    printRow(f.name, shapeName, batch, t, double(m.storageBytes() + 2 * x.size() + 4ull * batch * shape.n),
                             copyBw, cublasUs > 0 ? cublasUs / t.medianUs : 0.0);
                for (void* p : owned)
                    cudaFree(p);
            }
            cudaFree(dX);
            cudaFree(dY);
        }
    }

    // --- decode attention: contiguous vs paged ---
    struct AttnCase {
        std::uint32_t batch, heads, kvHeads, headDim, tokens;
    };
    std::vector<AttnCase> cases = {{1, 32, 32, 128, 8192}, {1, 32, 8, 128, 8192}, {16, 32, 8, 128, 8192}, {1, 32, 8, 128, 512}};
    if (quick)
        cases.resize(2);
    std::printf("\n");
    for (const AttnCase& c : cases) {
        const std::uint64_t kvElems = std::uint64_t{c.batch} * c.kvHeads * c.tokens * c.headDim;
        const double kvBytes = 2.0 * 2.0 * double(kvElems);
        const int copies = rotationCopies(static_cast<std::uint64_t>(kvBytes), l2);
        std::vector<std::uint16_t> q(std::uint64_t{c.batch} * c.heads * c.headDim);
        for (auto& v : q)
            v = fmt::floatToHalf(std::normal_distribution<float>(0.0f, 1.0f)(rng));
        std::uint16_t* dQ = deviceCopy(q);
        std::vector<std::int32_t> lens(c.batch, static_cast<std::int32_t>(c.tokens));
        std::int32_t* dLens = deviceCopy(lens);
        const std::uint32_t blocksPerSeq = (c.tokens + 15) / 16;
        std::vector<std::int32_t> table(std::uint64_t{c.batch} * blocksPerSeq);
        for (std::size_t i = 0; i < table.size(); ++i)
            table[i] = static_cast<std::int32_t>(i);
        std::shuffle(table.begin(), table.end(), rng); // scattered blocks, as after real allocation
        std::int32_t* dTable = deviceCopy(table);
        float* dOut = nullptr;
        BENCH_CHECK(cudaMalloc(&dOut, q.size() * sizeof(float)));
        std::vector<std::uint16_t*> kv(2 * copies);
        for (auto& p : kv) {
            BENCH_CHECK(cudaMalloc(&p, kvElems * 2));
            BENCH_CHECK(cudaMemset(p, 0x3c, kvElems * 2)); // finite fp16 values
        }
        double contiguousUs = 0.0;
        for (const bool paged : {false, true}) {
            hk::DecodeAttentionArgs a;
            a.batch = c.batch;
            a.numHeads = c.heads;
            a.numKvHeads = c.kvHeads;
            a.headDim = c.headDim;
            a.q = dQ;
            a.seqLens = dLens;
            a.layout = paged ? hk::KvLayout::Paged : hk::KvLayout::Contiguous;
            a.maxTokens = c.tokens;
            a.blockTable = dTable;
            a.maxBlocksPerSeq = blocksPerSeq;
            a.blockTokens = 16;
            a.numBlocks = static_cast<std::uint32_t>(table.size());
            a.out = dOut;
            const std::size_t wsBytes = hk::attentionWorkspaceBytes(hk::Backend::Cuda, a);
            void* ws = nullptr;
            BENCH_CHECK(cudaMalloc(&ws, std::max<std::size_t>(16, wsBytes)));
            a.workspace = ws;
            a.workspaceBytes = wsBytes;
            hk::Status status = hk::Status::Ok;
            const Timing t = timeLaunches([&](int i) {
                hk::DecodeAttentionArgs ai = a;
                ai.k = kv[2 * (i % copies)];
                ai.v = kv[2 * (i % copies) + 1];
                const hk::Status s = hk::decodeAttention(hk::Backend::Cuda, ai, stream);
                if (s != hk::Status::Ok)
                    status = s;
            }, stream);
            char name[64], shape[64];
            std::snprintf(name, sizeof name, "%s H%u/%u", paged ? "attn paged16" : "attn contiguous", c.heads, c.kvHeads);
            std::snprintf(shape, sizeof shape, "D%u T%u", c.headDim, c.tokens);
            if (status != hk::Status::Ok) {
                std::printf("%-22s %-16s %4u  %s\n", name, shape, c.batch, hk::statusName(status));
            } else {
                // the "vs cuBLAS" column holds paged / contiguous time for the paged row
                printRow(name, shape, static_cast<int>(c.batch), t, kvBytes, copyBw,
                         paged && contiguousUs > 0 ? t.medianUs / contiguousUs : 0.0);
                if (!paged)
                    contiguousUs = t.medianUs;
            }
            cudaFree(ws);
        }
        for (auto* p : kv)
            cudaFree(p);
        cudaFree(dQ);
        cudaFree(dLens);
        cudaFree(dTable);
        cudaFree(dOut);
    }
    std::printf("\n(attention rows: the 'vs cuBLAS' column of a paged row is paged time / contiguous time)\n");
#if HEADROOM_BENCH_HAVE_CUBLAS
    cublasDestroy(handle);
#endif
    cudaStreamDestroy(stream);
    return 0;
}
