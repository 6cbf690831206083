// The quantization-error probe: ||W - W_hat||_F / ||W||_F of each runnable weight format on
// synthetic N(0,1) weights (anchors of BRIEF §3, +-0.003) and on the same weights with outliers
// (BRIEF §3: one outlier sets the scale of its whole territory).

#include "headroom/core/importers/ggufreader.h"
#include "headroom/formats/quantblocks.h"
#include "headroom/kernels/quantize.h"
#include "headroom/probes/probes.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

namespace headroom::probes {

namespace {

// Bounds on the real-weights pass: every f32/f16 matrix of the file up to these totals.
constexpr std::uint64_t kMaxRealMatrices = 256;
constexpr std::uint64_t kMaxRealElements = 64ull << 20;

/// One weight matrix of a GGUF file read as floats: [rows = ne1][cols = ne0].
struct RealMatrix {
    std::string name;
    std::uint32_t rows = 0;
    std::uint32_t cols = 0;
    std::vector<float> values;
};

// Reads the 2-D f32/f16 tensors of a little-endian GGUF (header through the importer, data at
// data_offset + tensor offset, gguf.md); other types are skipped. Errors as text.
tl::expected<std::vector<RealMatrix>, std::string> readRealMatrices(const std::string& path)
{
    // The header and the tensor data are read through one descriptor (no re-open by name).
    auto in = RegularFile::open(path);
    if (!in)
        return tl::unexpected(toString(in.error()));
    auto file = readGguf(*in);
    if (!file)
        return tl::unexpected(toString(file.error()));
    if (file->bigEndian)
        return tl::unexpected(path + ": big-endian GGUF tensor data is not read");
    std::vector<RealMatrix> out;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < file->tensors.size() && out.size() < kMaxRealMatrices; ++i) {
        const ImportedTensor& t = file->tensors[i];
        const bool f32 = t.type == "f32";
        if ((!f32 && t.type != "f16") || t.shape.size() != 2 || t.shape[0] < 2 || t.shape[1] < 2)
            continue;
        if (t.shape[0] > 1u << 20 || t.shape[1] > 1u << 20 || total + t.elements > kMaxRealElements)
            continue;
        RealMatrix m;
        m.name = t.name;
        m.cols = static_cast<std::uint32_t>(t.shape[0]);
        m.rows = static_cast<std::uint32_t>(t.shape[1]);
        m.values.resize(t.elements);
        const std::uint64_t at = file->dataOffset + file->tensorOffsets[i];
        bool complete = false;
        if (f32) {
            auto got = in->readAt(at, m.values.data(), t.elements * 4);
            complete = got && *got == t.elements * 4;
        } else {
            std::vector<std::uint16_t> half(t.elements);
            auto got = in->readAt(at, half.data(), t.elements * 2);
            complete = got && *got == t.elements * 2;
            for (std::size_t k = 0; k < half.size(); ++k)
                m.values[k] = formats::halfToFloat(half[k]);
        }
        if (!complete)
            return tl::unexpected(path + ": tensor " + t.name + " ends past the end of the file");
        total += t.elements;
        out.push_back(std::move(m));
    }
    return out;
}

} // namespace

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
        // GGML blocks as llama.cpp stores them (formats/ggmlblocks.h; a partial last block of a
        // row is padded with zeros); no published anchor.
        {"q8_0", formats::ggmlLayout(formats::QuantType::Q8_0), -1},
        {"q4_0", formats::ggmlLayout(formats::QuantType::Q4_0), -1},
        {"q4_k", formats::ggmlLayout(formats::QuantType::Q4_K), -1},
        {"q6_k", formats::ggmlLayout(formats::QuantType::Q6_K), -1},
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
    char outlierNote[160];
    std::snprintf(outlierNote, sizeof outlierNote, "synthetic N(0,1) weights (seed %llu); the outlier set replaces %llu weights by +-%g sigma",
                  static_cast<unsigned long long>(options.seed), static_cast<unsigned long long>(count), options.outlierSigma);
    r.notes.push_back(outlierNote);
    if (options.ggufPath.empty()) {
        r.notes.push_back("real weights: not run (no GGUF given)");
    } else {
        progress.report(1.0, "reading real weights");
        auto matrices = readRealMatrices(options.ggufPath);
        if (!matrices) {
            r.notes.push_back("real weights: " + matrices.error());
            ok = false;
        } else if (matrices->empty()) {
            r.notes.push_back("real weights: " + options.ggufPath + " has no f32/f16 matrix to quantize");
        } else {
            // Mean and worst error over the file's matrices, per format (BRIEF §3 reports both).
            nlohmann::json real = nlohmann::json::array();
            for (const Case& c : cases) {
                double sum = 0;
                double worst = 0;
                std::string worstName;
                std::size_t counted = 0;
                for (const RealMatrix& m : *matrices) {
                    if (progress.cancelled())
                        return cancelledResult("quant-error");
                    const double e = kernels::quantizationError(m.values.data(), m.rows, m.cols, c.layout);
                    if (!std::isfinite(e))
                        continue;
                    sum += e;
                    ++counted;
                    if (e >= worst) {
                        worst = e;
                        worstName = m.name;
                    }
                }
                real.push_back({{"format", c.id}, {"matrices", counted},
                                {"mean_error", counted ? sum / static_cast<double>(counted) : 0.0},
                                {"worst_error", worst}, {"worst_matrix", worstName}});
            }
            r.set("real_weights", RawJson{real.dump()});
            r.notes.push_back("real weights: " + std::to_string(matrices->size()) + " f32/f16 matrices of " + options.ggufPath);
        }
    }
    r.notes.push_back("device independent: the quantizers run on the host (kernels/quantize.h)");
    r.pass = ok;
    char line[200];
    std::snprintf(line, sizeof line, "%zu formats on %u x %u N(0,1) weights%s", done, options.rows, options.cols,
                  anchorShape ? (ok ? ", all within +-0.003 of the published N(0,1) anchors" : ", anchor mismatch") : "");
    r.summary = line;
    return r;
}

} // namespace headroom::probes
