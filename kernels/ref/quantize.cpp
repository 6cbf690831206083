// Host-side quantization of whole matrices and the error metrics.

#include "headroom/kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "parallel.h"

namespace headroom::kernels {

namespace fmt = headroom::formats;

WeightMatrix QuantizedMatrix::view() const {
    WeightMatrix w;
    w.layout = layout;
    w.rows = rows;
    w.cols = cols;
    w.data = data.data();
    w.scales = scales.empty() ? nullptr : scales.data();
    return w;
}

QuantizedMatrix quantizeMatrix(const float* w, std::uint32_t rows, std::uint32_t cols, fmt::QuantLayout layout,
                               unsigned threads) {
    QuantizedMatrix m;
    m.layout = layout;
    m.rows = rows;
    m.cols = cols;
    const std::uint64_t stride = fmt::rowBytes(layout, cols);
    m.data.assign(stride * rows, 0);
    if (layout.type != fmt::QuantType::Fp16)
        m.scales.assign(fmt::scaleCount(layout, rows, cols), 0);
    float tensorScale = 0.0f;
    if (layout.scope == fmt::ScaleScope::Tensor) {
        float absmax = 0.0f;
        for (std::uint64_t i = 0; i < std::uint64_t{rows} * cols; ++i)
            absmax = std::max(absmax, std::fabs(w[i]));
        m.scales[0] = fmt::floatToHalf(absmax / static_cast<float>(fmt::symmetricQmax(fmt::codeBits(layout.type))));
        tensorScale = fmt::halfToFloat(m.scales[0]);
    }
    detail::parallelFor(rows, threads, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t n = begin; n < end; ++n) {
            std::uint16_t* rowScales = m.scales.empty() ? nullptr : m.scales.data() + fmt::rowScaleOffset(layout, n, cols);
            fmt::quantizeRow(layout, w + n * cols, cols, tensorScale, m.data.data() + n * stride, rowScales);
        }
    });
    return m;
}

void dequantizeMatrix(const QuantizedMatrix& m, float* out, unsigned threads) {
    const std::uint64_t stride = fmt::rowBytes(m.layout, m.cols);
    detail::parallelFor(m.rows, threads, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t n = begin; n < end; ++n) {
            const std::uint16_t* rowScales = m.scales.empty() ? nullptr : m.scales.data() + fmt::rowScaleOffset(m.layout, n, m.cols);
            fmt::dequantizeRow(m.layout, m.data.data() + n * stride, rowScales, m.cols, out + n * m.cols);
        }
    });
}

double relativeError(const float* a, const float* b, std::uint64_t count) {
    double diff = 0.0, norm = 0.0;
    for (std::uint64_t i = 0; i < count; ++i) {
        const double d = double(a[i]) - double(b[i]);
        diff += d * d;
        norm += double(a[i]) * double(a[i]);
    }
    if (norm == 0.0)
        return diff == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
    return std::sqrt(diff / norm);
}

double nmse(const float* reference, const float* actual, std::uint64_t count) {
    const double e = relativeError(reference, actual, count);
    return e * e;
}

double quantizationError(const float* w, std::uint32_t rows, std::uint32_t cols, fmt::QuantLayout layout,
                         unsigned threads) {
    const QuantizedMatrix m = quantizeMatrix(w, rows, cols, layout, threads);
    std::vector<float> what(std::uint64_t{rows} * cols);
    dequantizeMatrix(m, what.data(), threads);
    return relativeError(w, what.data(), what.size());
}

} // namespace headroom::kernels
