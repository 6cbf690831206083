#pragma once
// Helpers of the kernel tests: seeded inputs, NMSE comparison that fails on NaN or an inf
// mismatch, and a dump of the inputs when a comparison fails (STYLE §11).

#include "headroom/formats/quantblocks.h"
#include "headroom/kernels/quantize.h"
#include "headroom/kernels/types.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace headroom::test {

namespace fmt = headroom::formats;
namespace hk = headroom::kernels;

/// n samples of N(0, sigma), seeded.
inline std::vector<float> normalFloats(std::uint64_t n, std::uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> out(n);
    for (float& v : out)
        v = dist(rng);
    return out;
}

/// n fp16 values of N(0, sigma), seeded.
inline std::vector<std::uint16_t> normalHalves(std::uint64_t n, std::uint32_t seed, float sigma = 1.0f) {
    const std::vector<float> f = normalFloats(n, seed, sigma);
    std::vector<std::uint16_t> out(n);
    for (std::uint64_t i = 0; i < n; ++i)
        out[i] = fmt::floatToHalf(f[i]);
    return out;
}

/// Result of comparing a kernel's output with the reference.
struct Comparison {
    bool nanFound = false;     ///< a NaN in either output
    bool infMismatch = false;  ///< an infinity where the other has none (or of the other sign)
    double nmse = 0.0;         ///< sum (ref - out)^2 / sum ref^2 over the finite elements
    std::uint64_t worstIndex = 0; ///< index of the largest absolute difference
};

/// Compares @p actual against @p reference. The NMSE is sum (ref - out)^2 / sum m^2 with
/// m = @p magnitude when given (for sums: sum_k |x_k w_k|, which bounds every partial sum, so
/// that a sum that cancels to nearly 0 does not turn reordering noise into a failure), else m = ref.
inline Comparison compare(const std::vector<float>& reference, const std::vector<float>& actual,
                          const std::vector<float>* magnitude = nullptr) {
    Comparison c;
    double diff = 0.0, norm = 0.0, worst = -1.0;
    for (std::uint64_t i = 0; i < reference.size(); ++i) {
        const float r = reference[i], a = actual[i];
        if (std::isnan(r) || std::isnan(a)) {
            c.nanFound = true;
            continue;
        }
        if (std::isinf(r) || std::isinf(a)) {
            if (r != a)
                c.infMismatch = true;
            continue;
        }
        const double d = double(r) - double(a);
        diff += d * d;
        const double m = magnitude ? double((*magnitude)[i]) : double(r);
        norm += m * m;
        if (std::fabs(d) > worst) {
            worst = std::fabs(d);
            c.worstIndex = i;
        }
    }
    c.nmse = norm > 0.0 ? diff / norm : (diff > 0.0 ? INFINITY : 0.0);
    return c;
}

/// Writes named arrays to @p path as text, one value per line, for a failing case.
inline void dumpInputs(const std::string& path, const std::vector<std::pair<std::string, std::vector<double>>>& arrays) {
    std::ofstream out(path);
    for (const auto& [name, values] : arrays) {
        out << "# " << name << " (" << values.size() << ")\n";
        for (double v : values)
            out << v << '\n';
    }
}

/// fp16 bits to doubles (for dumps).
inline std::vector<double> halvesAsDoubles(const std::uint16_t* h, std::uint64_t n) {
    std::vector<double> out(n);
    for (std::uint64_t i = 0; i < n; ++i)
        out[i] = fmt::halfToFloat(h[i]);
    return out;
}

/// Output y [count] of type @p type as floats.
inline std::vector<float> outputAsFloats(const void* y, hk::OutputType type, std::uint64_t count) {
    std::vector<float> out(count);
    for (std::uint64_t i = 0; i < count; ++i)
        out[i] = type == hk::OutputType::Fp32 ? static_cast<const float*>(y)[i]
                                              : fmt::halfToFloat(static_cast<const std::uint16_t*>(y)[i]);
    return out;
}

/// m[b][r] = sum_k |x[b][k] w_hat[r][k]| over the dequantized weights of @p m and the fp16 x
/// [@p batch][K]: the scale of compare() for GEMV outputs [B][N].
inline std::vector<float> gemvMagnitude(const hk::QuantizedMatrix& m, const std::vector<std::uint16_t>& x,
                                        std::uint32_t batch) {
    const std::uint32_t n = m.rows, k = m.cols;
    std::vector<float> what(std::uint64_t{n} * k), magnitude(std::uint64_t{batch} * n);
    hk::dequantizeMatrix(m, what.data(), 1);
    for (std::uint32_t b = 0; b < batch; ++b)
        for (std::uint32_t r = 0; r < n; ++r) {
            double sum = 0.0;
            for (std::uint32_t c = 0; c < k; ++c)
                sum += std::fabs(double(what[std::uint64_t{r} * k + c]) * fmt::halfToFloat(x[std::uint64_t{b} * k + c]));
            magnitude[std::uint64_t{b} * n + r] = static_cast<float>(sum);
        }
    return magnitude;
}

/// Name of a layout for messages ("int4-g128", "nf4-b64").
inline std::string layoutName(fmt::QuantLayout layout) {
    switch (layout.type) {
    case fmt::QuantType::Fp16: return "fp16";
    case fmt::QuantType::Nf4: return "nf4-b64";
    case fmt::QuantType::Q8_0: return "q8_0";
    case fmt::QuantType::Q4_0: return "q4_0";
    case fmt::QuantType::Q4_K: return "q4_K";
    case fmt::QuantType::Q6_K: return "q6_K";
    default: break;
    }
    std::string name = layout.type == fmt::QuantType::Int8 ? "int8" : "int4";
    switch (layout.scope) {
    case fmt::ScaleScope::Tensor: return name + "-tensor";
    case fmt::ScaleScope::Row: return name + "-row";
    case fmt::ScaleScope::Group: return name + "-g" + std::to_string(layout.groupWeights);
    default: return name;
    }
}

/// Every layout the kernels are tested in (group 128 and an odd-sized group of 6).
inline std::vector<fmt::QuantLayout> testedLayouts() {
    using fmt::ScaleScope;
    return {fmt::fp16Layout(),
            fmt::symmetricLayout(8, ScaleScope::Tensor),
            fmt::symmetricLayout(8, ScaleScope::Row),
            fmt::symmetricLayout(8, ScaleScope::Group, 128),
            fmt::symmetricLayout(4, ScaleScope::Tensor),
            fmt::symmetricLayout(4, ScaleScope::Row),
            fmt::symmetricLayout(4, ScaleScope::Group, 128),
            fmt::symmetricLayout(4, ScaleScope::Group, 6),
            fmt::nf4Layout()};
}

/// A seeded decode-attention problem with its own buffers, contiguous and paged views of one cache.
struct AttentionProblem {
    std::uint32_t batch, heads, kvHeads, headDim, maxTokens, blockTokens;
    std::vector<std::uint16_t> q, k, v, kPool, vPool;
    std::vector<std::int32_t> seqLens, blockTable;
    std::uint32_t maxBlocks = 0, numBlocks = 0;

    /// Random q, K, V; sequence lengths in 1..maxTokens (the last one is maxTokens); the paged pool
    /// holds the same tokens in shuffled blocks.
    AttentionProblem(std::uint32_t b, std::uint32_t h, std::uint32_t hkv, std::uint32_t d, std::uint32_t t,
                     std::uint32_t blockTokens_, std::uint32_t seed)
        : batch(b), heads(h), kvHeads(hkv), headDim(d), maxTokens(t), blockTokens(blockTokens_) {
        q = normalHalves(std::uint64_t{b} * h * d, seed);
        k = normalHalves(std::uint64_t{b} * hkv * t * d, seed + 1);
        v = normalHalves(std::uint64_t{b} * hkv * t * d, seed + 2);
        std::mt19937 rng(seed + 3);
        seqLens.resize(b);
        for (std::uint32_t i = 0; i < b; ++i)
            seqLens[i] = i + 1 == b ? static_cast<std::int32_t>(t) : static_cast<std::int32_t>(1 + rng() % t);
        maxBlocks = (t + blockTokens - 1) / blockTokens;
        numBlocks = b * maxBlocks + 3; // spare blocks stay unused
        std::vector<std::int32_t> ids(numBlocks);
        for (std::uint32_t i = 0; i < numBlocks; ++i)
            ids[i] = static_cast<std::int32_t>(i);
        std::shuffle(ids.begin(), ids.end(), rng);
        blockTable.assign(std::uint64_t{b} * maxBlocks, -1);
        kPool.assign(std::uint64_t{numBlocks} * hkv * blockTokens * d, 0x7e00); // NaN where unused
        vPool = kPool;
        for (std::uint32_t s = 0; s < b; ++s) {
            for (std::uint32_t i = 0; i < maxBlocks; ++i)
                blockTable[s * maxBlocks + i] = ids[s * maxBlocks + i];
            for (std::uint32_t hk0 = 0; hk0 < hkv; ++hk0)
                for (std::uint32_t tok = 0; tok < t; ++tok) {
                    const std::uint64_t src = ((std::uint64_t{s} * hkv + hk0) * t + tok) * d;
                    const std::uint64_t block = static_cast<std::uint64_t>(blockTable[s * maxBlocks + tok / blockTokens]);
                    const std::uint64_t dst = ((block * hkv + hk0) * blockTokens + tok % blockTokens) * d;
                    std::copy(k.begin() + src, k.begin() + src + d, kPool.begin() + dst);
                    std::copy(v.begin() + src, v.begin() + src + d, vPool.begin() + dst);
                }
        }
    }

    /// Arguments for the contiguous cache writing into @p out [B][H][D].
    hk::DecodeAttentionArgs contiguous(float* out) const {
        hk::DecodeAttentionArgs a;
        a.batch = batch;
        a.numHeads = heads;
        a.numKvHeads = kvHeads;
        a.headDim = headDim;
        a.q = q.data();
        a.seqLens = seqLens.data();
        a.layout = hk::KvLayout::Contiguous;
        a.k = k.data();
        a.v = v.data();
        a.maxTokens = maxTokens;
        a.out = out;
        return a;
    }

    /// Arguments for the paged cache writing into @p out [B][H][D].
    hk::DecodeAttentionArgs paged(float* out) const {
        hk::DecodeAttentionArgs a = contiguous(out);
        a.layout = hk::KvLayout::Paged;
        a.k = kPool.data();
        a.v = vPool.data();
        a.maxTokens = 0;
        a.blockTable = blockTable.data();
        a.maxBlocksPerSeq = maxBlocks;
        a.blockTokens = blockTokens;
        a.numBlocks = numBlocks;
        return a;
    }

    /// Elements of the output.
    std::uint64_t outCount() const { return std::uint64_t{batch} * heads * headDim; }

    /// The new token of each sequence (position seqLens[b] - 1) as fp16 rows [B][H_kv][D] of @p cache
    /// (k or v of the contiguous cache).
    std::vector<std::uint16_t> lastRows(const std::vector<std::uint16_t>& cache) const {
        std::vector<std::uint16_t> rows(std::uint64_t{batch} * kvHeads * headDim);
        for (std::uint32_t b = 0; b < batch; ++b)
            for (std::uint32_t h = 0; h < kvHeads; ++h) {
                const std::uint64_t src = ((std::uint64_t{b} * kvHeads + h) * maxTokens + static_cast<std::uint32_t>(seqLens[b] - 1)) * headDim;
                std::copy(cache.begin() + src, cache.begin() + src + headDim, rows.begin() + (std::uint64_t{b} * kvHeads + h) * headDim);
            }
        return rows;
    }

    /// Append arguments for the contiguous (@p paged false) or paged cache, writing into @p k, @p v.
    hk::KvAppendArgs append(bool paged, const std::uint16_t* kNew, const std::uint16_t* vNew, std::uint16_t* kOut,
                            std::uint16_t* vOut) const {
        hk::KvAppendArgs a;
        a.batch = batch;
        a.numKvHeads = kvHeads;
        a.headDim = headDim;
        a.kNew = kNew;
        a.vNew = vNew;
        a.seqLens = seqLens.data();
        a.layout = paged ? hk::KvLayout::Paged : hk::KvLayout::Contiguous;
        a.k = kOut;
        a.v = vOut;
        a.maxTokens = paged ? 0 : maxTokens;
        a.blockTable = paged ? blockTable.data() : nullptr;
        a.maxBlocksPerSeq = maxBlocks;
        a.blockTokens = blockTokens;
        a.numBlocks = numBlocks;
        return a;
    }
};

} // namespace headroom::test
