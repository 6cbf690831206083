#pragma once
/// @file quantize.h
/// Host-side quantization of whole matrices (into owned buffers) and the quantization error
/// ||W - W_hat||_F / ||W||_F (BRIEF §3). Formulas in formats/quantblocks.h.

#include "headroom/kernels/types.h"

#include <cstdint>
#include <vector>

namespace headroom::kernels {

/// A stored weight matrix that owns its bytes.
struct QuantizedMatrix {
    formats::QuantLayout layout{}; ///< element type and scale territory
    std::uint32_t rows = 0;        ///< N
    std::uint32_t cols = 0;        ///< K
    std::vector<std::uint8_t> data;    ///< codes [N][rowBytes(layout, K)]
    std::vector<std::uint16_t> scales; ///< fp16 [scaleCount(layout, N, K)]

    /// A view for the kernels (valid while this object lives and is not resized).
    WeightMatrix view() const;
    /// Bytes of codes plus scales.
    std::uint64_t storageBytes() const { return data.size() + 2 * scales.size(); }
};

/// Quantizes @p w [rows][cols] (row-major fp32) into @p layout. Rows are processed in parallel
/// when @p threads != 1 (0 = hardware concurrency). @p layout must be formats::layoutValid.
QuantizedMatrix quantizeMatrix(const float* w, std::uint32_t rows, std::uint32_t cols,
                               formats::QuantLayout layout, unsigned threads = 0);

/// Dequantizes @p matrix into @p out [rows][cols].
void dequantizeMatrix(const QuantizedMatrix& matrix, float* out, unsigned threads = 0);

/// ||a - b||_F / ||a||_F over @p count elements, summed in double; 0 when a is all zero and
/// equal to b, infinity when a is all zero and b is not.
double relativeError(const float* a, const float* b, std::uint64_t count);

/// The quantization error ||W - W_hat||_F / ||W||_F of @p w [rows][cols] stored in @p layout.
double quantizationError(const float* w, std::uint32_t rows, std::uint32_t cols,
                         formats::QuantLayout layout, unsigned threads = 0);

/// Normalised mean squared error sum (a - b)^2 / sum a^2 of @p b against the reference @p a
/// (ggml test-backend-ops' NMSE); used with a per-op tolerance.
double nmse(const float* reference, const float* actual, std::uint64_t count);

} // namespace headroom::kernels
