// CPU reference decode attention: two-pass softmax per (sequence, query head), fp32.

#include "headroom/kernels/reference.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kvaccess.h"

namespace headroom::kernels {

namespace fmt = headroom::formats;

Status decodeAttentionRef(const DecodeAttentionArgs& args) {
    if (Status status = validate(args); status != Status::Ok)
        return status;
    if (Status status = detail::checkKvIndices(args); status != Status::Ok)
        return status;
    const std::uint32_t D = args.headDim;
    const std::uint32_t group = args.numHeads / args.numKvHeads;
    const float scale = args.effectiveScale();
    std::vector<float> scores;
    for (std::uint32_t b = 0; b < args.batch; ++b) {
        const auto tokens = static_cast<std::uint32_t>(args.seqLens[b]);
        scores.assign(tokens, 0.0f);
        for (std::uint32_t h = 0; h < args.numHeads; ++h) {
            const std::uint32_t kvHead = h / group;
            const std::uint16_t* q = args.q + (std::uint64_t{b} * args.numHeads + h) * D;
            float maxScore = -std::numeric_limits<float>::infinity();
            for (std::uint32_t t = 0; t < tokens; ++t) {
                const std::uint16_t* key = detail::kvRow(args, args.k, b, kvHead, t);
                float dot = 0.0f;
                for (std::uint32_t d = 0; d < D; ++d)
                    dot += fmt::halfToFloat(q[d]) * fmt::halfToFloat(key[d]);
                scores[t] = dot * scale;
                maxScore = std::max(maxScore, scores[t]);
            }
            float sum = 0.0f;
            for (std::uint32_t t = 0; t < tokens; ++t) {
                scores[t] = std::exp(scores[t] - maxScore);
                sum += scores[t];
            }
            float* out = args.out + (std::uint64_t{b} * args.numHeads + h) * D;
            for (std::uint32_t d = 0; d < D; ++d)
                out[d] = 0.0f;
            for (std::uint32_t t = 0; t < tokens; ++t) {
                const std::uint16_t* value = detail::kvRow(args, args.v, b, kvHead, t);
                const float p = scores[t] / sum;
                for (std::uint32_t d = 0; d < D; ++d)
                    out[d] += p * fmt::halfToFloat(value[d]);
            }
        }
    }
    return Status::Ok;
}

} // namespace headroom::kernels
