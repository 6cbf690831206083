// CPU reference GEMV: one weight at a time, fp32 accumulation (STYLE §9).

#include "headroom/kernels/reference.h"

#include <cstdint>

namespace headroom::kernels {

namespace fmt = headroom::formats;

Status gemvRef(const GemvArgs& args) {
    if (Status status = validate(args); status != Status::Ok)
        return status;
    if (args.weights.packing != RowPacking::AsStored)
        return Status::NotSupported; // the reference reads rows as stored
    const WeightMatrix& w = args.weights;
    const std::uint64_t stride = fmt::rowBytes(w.layout, w.cols);
    for (std::uint32_t b = 0; b < args.batch; ++b) {
        for (std::uint32_t n = 0; n < w.rows; ++n) {
            const std::uint8_t* row = w.data + n * stride;
            const std::uint16_t* scales = w.scales ? w.scales + fmt::rowScaleOffset(w.layout, n, w.cols) : nullptr;
            float acc = 0.0f;
            for (std::uint32_t k = 0; k < w.cols; ++k)
                acc += fmt::halfToFloat(args.x[std::uint64_t{b} * w.cols + k]) * fmt::loadWeight(w.layout, row, scales, k);
            const std::uint64_t at = std::uint64_t{b} * w.rows + n;
            if (args.yType == OutputType::Fp32)
                static_cast<float*>(args.y)[at] = acc;
            else
                static_cast<std::uint16_t*>(args.y)[at] = fmt::floatToHalf(acc);
        }
    }
    return Status::Ok;
}

} // namespace headroom::kernels
