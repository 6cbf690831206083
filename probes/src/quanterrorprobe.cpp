// The quantization-error probe: ||W - W_hat||_F / ||W||_F of each runnable weight format on
// synthetic N(0,1) weights (anchors of BRIEF §3, +-0.003) and on the same weights with outliers
// (BRIEF §3: one outlier sets the scale of its whole territory).

#include "headroom/kernels/quantize.h"
#include "headroom/probes/probes.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <random>

namespace headroom::probes {

ProbeResult runQuantErrorProbe(const QuantErrorOptions& options, ProbeProgress& progress)
{
    ProbeResult r;
    r.probe = "quant-error";
    const std::uint64_t n = std::uint64_t{options.rows} * options.cols;
    if (n == 0)
        return failedResult("quant-error", "empty matrix");
    progress.report(0.0, "generating synthetic weights");
    std::vector<float> gaussian(n);
    std::mt19937_64 rng(options.seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& w : gaussian)
        w = normal(rng);
    std::vector<float> outliers = gaussian;
    const std::uint64_t count = static_cast<std::uint64_t>(std::llround(options.outlierFraction * static_cast<double>(n)));
    std::uniform_int_distribution<std::uint64_t> pick(0, n - 1);
    for (std::uint64_t i = 0; i < count; ++i)
        outliers[pick(rng)] = static_cast<float>((rng() & 1 ? 1.0 : -1.0) * options.outlierSigma);

    struct Case {
        const char* id;
        formats::QuantLayout layout;
        double anchor; // BRIEF §3 anchor on N(0,1) 896 x 4,864; < 0 = none
    };
    const Case cases[] = {
        {"int8-row", formats::symmetricLayout(8, formats::ScaleScope::Row), 0.0088},
        {"int4", formats::symmetricLayout(4, formats::ScaleScope::Tensor), -1},
        {"int4-row", formats::symmetricLayout(4, formats::ScaleScope::Row), 0.159},
        {"int4-g128", formats::symmetricLayout(4, formats::ScaleScope::Group, 128), 0.117},
        {"nf4-b64", formats::nf4Layout(), 0.092},
    };
    const bool anchorShape = options.rows == 896 && options.cols == 4864;
    constexpr double kTolerance = 0.003; // BRIEF §3: anchors +-0.003
    nlohmann::json rows = nlohmann::json::array();
    bool ok = true;
    std::size_t done = 0;
    for (const Case& c : cases) {
        if (progress.cancelled())
            return cancelledResult("quant-error");
        const double g = kernels::quantizationError(gaussian.data(), options.rows, options.cols, c.layout);
        const double o = kernels::quantizationError(outliers.data(), options.rows, options.cols, c.layout);
        const double bpw = 8.0 * static_cast<double>(formats::matrixStorageBytes(c.layout, options.rows, options.cols))
            / static_cast<double>(n);
        nlohmann::json j = {{"format", c.id}, {"bits_per_weight", bpw}, {"gaussian_error", g}, {"outlier_error", o}};
        if (c.anchor > 0 && anchorShape) {
            j["anchor_error"] = c.anchor;
            const bool within = std::fabs(g - c.anchor) <= kTolerance;
            j["within_anchor"] = within;
            ok = ok && within;
        }
        ok = ok && std::isfinite(g) && std::isfinite(o);
        rows.push_back(j);
        ++done;
        progress.report(static_cast<double>(done) / std::size(cases), std::string("quantizing ") + c.id);
    }
    r.set("rows", std::uint64_t{options.rows});
    r.set("cols", std::uint64_t{options.cols});
    r.set("outliers", count);
    r.set("outlier_sigma", options.outlierSigma);
    r.set("formats", RawJson{rows.dump()});
    r.notes.push_back("synthetic N(0,1) weights (seed " + std::to_string(options.seed) + "); the outlier set replaces "
                      + std::to_string(count) + " weights by +-" + std::to_string(options.outlierSigma) + " sigma");
    r.notes.push_back(options.ggufPath.empty() ? "real weights: not run (no GGUF given)"
                                               : "real weights from a GGUF file are not implemented yet: " + options.ggufPath + " was not read");
    r.notes.push_back("device independent: the quantizers run on the host (kernels/quantize.h)");
    r.pass = ok;
    char line[200];
    std::snprintf(line, sizeof line, "%zu formats on %u x %u N(0,1) weights%s", done, options.rows, options.cols,
                  anchorShape ? (ok ? ", all within +-0.003 of the BRIEF anchors" : ", anchor mismatch") : "");
    r.summary = line;
    return r;
}

} // namespace headroom::probes
