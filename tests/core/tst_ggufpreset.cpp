// GGUF presets priced without the file, against the tensor bytes llama.cpp printed when it
// loaded the real files ("model size", "model buffer size" and the "type X: N tensors" counts).
#include "archfixtures.h"
#include "fixtures.h"

#include "headroom/core/ggufpreset.h"
#include "headroom/core/parameters.h"
#include "headroom/core/profiles.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

using namespace headroom;

namespace {

constexpr double kMebi = 1024.0 * 1024.0;
constexpr double kGibi = kMebi * 1024.0;

const ProfileSet& profiles()
{
    static const ProfileSet set = [] {
        auto s = loadProfiles(test::sourcePath("profiles"));
        REQUIRE(s);
        return *s;
    }();
    return set;
}

Architecture profileArch(const char* id)
{
    const ModelProfile* m = profiles().findModel(id);
    REQUIRE(m != nullptr);
    REQUIRE(m->architecture);
    return *m->architecture;
}

/// A figure llama.cpp printed: value in MiB or GiB with the printed number of decimals.
struct Printed {
    double value;
    double unit;     ///< kMebi or kGibi
    int decimals;
    /// Half of the last printed digit, in bytes: the rounding the figure carries.
    double halfUlpBytes() const { return 0.5 * std::pow(10.0, -decimals) * unit; }
};

struct PresetCase {
    const char* label;
    Architecture arch;
    const char* format;
    Printed printed;
    const char* source; ///< where llama.cpp printed it
};

std::map<std::string, int> typeCounts(const Architecture& arch, const WeightFormat& f)
{
    std::map<std::string, int> counts;
    for (const TensorSpec& t : listTensors(arch))
        ++counts[priceTensor(t, f, arch).type];
    return counts;
}

const char* const kCi = "https://github.com/ggml-org/ci/blob/master/llama.cpp/c9/b00a70b080d5c0668608024afc3e0e2fed822f/"
                        "ggml-2-x86-cpu/";

} // namespace

TEST_CASE("presets are named as llama-quantize names them", "[ggufpreset]")
{
    CHECK(findFormat("q4_k_m")->ggufFileType == 15);
    CHECK(findFormat("Q5_K_M")->ggufFileType == 17);
    CHECK(findFormat("gguf-q6_k")->ggufFileType == 18);
    CHECK(findFormat("gguf-q8_0")->ggufFileType == 7);
    CHECK(findFormat("gguf-q4_k_m")->id == "q4_k_m");
    CHECK(findFormat("iq3_m")->ggufFileType == 27);
    CHECK(findFormat("mxfp4_moe")->ggufFileType == 38);
    // the plain GGML ids stay one type for every matrix (llama-quantize --pure)
    CHECK(findFormat("q6_k")->ggufFileType == 0);
    CHECK(findGgufPreset("Q4_K")->fileType == 15); // llama-quantize alias
    CHECK(ggufPresetOfFileType(30)->name == std::string("IQ4_XS"));
    CHECK_FALSE(ggufPresetOfFileType(1)); // F16 is no preset
}

TEST_CASE("Q4_K_M gives use_more_bits layers of attn_v and ffn_down Q6_K", "[ggufpreset]")
{
    // Meta-Llama-3-8B Q4_K_M as llama.cpp loaded it: "type f32: 65, q4_K: 193, q6_K: 33 tensors"
    // (github.com/developer0hye/llama-3-korean-bllossom-8b-q4-docker README.md, mradermacher's
    // quant of a Llama-3-8B fine-tune). use_more_bits(i, 32): layers 0-3, 28-31 and 6, 9, ..., 27
    // = 16 layers; 16 attn_v + 16 ffn_down + output = 33.
    const Architecture a = test::llama31_8b();
    const auto counts = typeCounts(a, *findFormat("q4_k_m"));
    CHECK(counts.at("fp32") == 65);
    CHECK(counts.at("q4_k") == 193);
    CHECK(counts.at("q6_k") == 33);
    CHECK(counts.size() == 3);

    // pythia-1.4b Q4_K_M from llama.cpp's CI (pythia_1_4b-tg-q4_k.log): q4_K 61, q5_K 24, q6_K 13;
    // its fused attn_qkv goes Q5_K (our q, k, v parts: 3 x 24 entries).
    const auto p = typeCounts(test::pythia14b(), *findFormat("q4_k_m"));
    CHECK(p.at("q4_k") == 61);
    CHECK(p.at("q5_k") == 3 * 24);
    CHECK(p.at("q6_k") == 13);
    // Q3_K_M (pythia_1_4b-tg-q3_k.log): q3_K 25, q4_K 71, q5_K 1, q6_K 1.
    const auto q3 = typeCounts(test::pythia14b(), *findFormat("q3_k_m"));
    CHECK(q3.at("q3_k") == 25);
    CHECK(q3.at("q4_k") == 24 * 3 + 24 + 23);
    CHECK(q3.at("q5_k") == 1);
    CHECK(q3.at("q6_k") == 1);
}

TEST_CASE("rows that are not whole blocks fall back as llama-quantize does", "[ggufpreset]")
{
    // Qwen2.5-0.5B: hidden 896 is not a multiple of 256. Q4_K -> Q5_0, Q6_K -> Q8_0, and the
    // tied token embedding (output rule) -> Q8_0 (nx % qk_k != 0).
    const Architecture a = test::qwen05b();
    const WeightFormat f = *findFormat("q4_k_m");
    for (const TensorSpec& t : listTensors(a)) {
        const std::string type = priceTensor(t, f, a).type;
        if (t.role == TensorRole::TokenEmbedding)
            CHECK(type == "q8_0");
        else if (t.name.find("down_proj") != std::string::npos) // 4864 = 19 x 256
            CHECK((type == "q4_k" || type == "q6_k"));
        else if (t.isMatrix())
            CHECK((type == "q5_0" || type == "q8_0"));
    }
}

TEST_CASE("presets priced without the file match llama.cpp's printed tensor bytes", "[ggufpreset]")
{
    const std::string ci = kCi;
    const std::vector<PresetCase> cases = {
        {"Llama-3-8B Q4_K_M", test::llama31_8b(), "q4_k_m", {4685.30, kMebi, 2},
         "https://github.com/developer0hye/llama-3-korean-bllossom-8b-q4-docker README.md: CPU buffer 281.81 MiB"
         " + CUDA0 buffer 4403.49 MiB (model size 4.58 GiB)"},
        {"Llama-3.1-8B-Instruct Q6_K", test::llama31_8b(), "gguf-q6_k", {6.14, kGibi, 2},
         "https://github.com/ggml-org/llama.cpp/issues/8730 (model size = 6.14 GiB (6.56 BPW))"},
        {"Llama-3-8B-Instruct Q8_0", test::llama31_8b(), "gguf-q8_0", {7.95, kGibi, 2},
         "https://github.com/argilla-io/distilabel/issues/593 (model size = 7.95 GiB (8.50 BPW))"},
        // Ollama library GGUF files (llama.cpp quantizations) as their llama.cpp runner loaded them:
        // the mmap'd CPU buffer covers the whole file when layers are offloaded, and a fully
        // offloaded model is its CUDA0 buffer plus the token_embd the CPU keeps.
        {"Qwen2.5-Coder-7B Q4_K_M", profileArch("qwen2.5-7b"), "q4_k_m", {4460.45, kMebi, 2},
         "https://github.com/ollama/ollama/issues/10125 (load_tensors: CPU_Mapped model buffer size = 4460.45 MiB)"},
        {"Qwen2.5-Coder-32B Q8_0", profileArch("qwen2.5-32b"), "gguf-q8_0", {33202.08, kMebi, 2},
         "https://github.com/ollama/ollama/issues/10125 (load_tensors: CPU_Mapped model buffer size = 33202.08 MiB)"},
        {"DeepSeek-R1-Distill-Qwen-14B Q4_K_M", profileArch("deepseek-r1-distill-qwen-14b"), "q4_k_m", {8566.04, kMebi, 2},
         "https://github.com/ollama/ollama/issues/9091 (CUDA0 model buffer 8148.38 MiB + CPU 417.66 MiB)"},
        {"Qwen3-30B-A3B Q4_K_M", profileArch("qwen3-30b-a3b"), "q4_k_m", {17691.34, kMebi, 2},
         "https://github.com/ggml-org/llama.cpp/issues/13729 (CUDA0 model buffer 10750.86 MiB + CPU_Mapped 6940.48 MiB)"},
        {"pythia-1.4b Q3_K_M", test::pythia14b(), "q3_k_m", {724.27, kMebi, 2}, "pythia_1_4b-tg-q3_k.log"},
        {"pythia-1.4b Q4_K_M", test::pythia14b(), "q4_k_m", {871.81, kMebi, 2}, "pythia_1_4b-tg-q4_k.log"},
        {"pythia-1.4b Q5_K_M", test::pythia14b(), "q5_k_m", {1006.35, kMebi, 2}, "pythia_1_4b-tg-q5_k.log"},
        {"pythia-1.4b Q6_K", test::pythia14b(), "gguf-q6_k", {1108.64, kMebi, 2}, "pythia_1_4b-tg-q6_k.log"},
        {"pythia-1.4b Q8_0", test::pythia14b(), "gguf-q8_0", {1435.23, kMebi, 2}, "pythia_1_4b-tg-q8_0.log"},
    };
    for (const PresetCase& c : cases) {
        const WeightBill bill = priceWeights(c.arch, *findFormat(c.format));
        const double real = c.printed.value * c.printed.unit;
        const double predicted = static_cast<double>(bill.totalBytes.value);
        const double errorPercent = 100.0 * (predicted - real) / real;
        char line[200];
        std::snprintf(line, sizeof line, "%s: printed %.0f B, predicted %.0f B, error %+.3f %%", c.label, real,
                      predicted, errorPercent);
        INFO(line << " (" << (std::string(c.source).rfind("pythia", 0) == 0 ? ci : std::string()) << c.source << ")");
        CHECK(std::abs(errorPercent) < 0.5);                                        // the acceptance bound
        CHECK(std::abs(predicted - real) <= c.printed.halfUlpBytes() + 64.0 * 1024); // and the printed digits
    }
}

namespace {

/// GGML's type name ("q4_K", "f32") in Headroom's spelling ("q4_k", "fp32").
std::string headroomTypeName(std::string ggml)
{
    if (ggml == "f32" || ggml == "f16")
        return "fp" + ggml.substr(1);
    for (char& c : ggml)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return ggml;
}

std::string lower(std::string s)
{
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

} // namespace

TEST_CASE("presets get the tensor types real llama-quantize gives them", "[ggufpreset][oracle]")
{
    // tests/llamacpp/quantize-grid.json: llama_model_quantize (dry run) of llama.cpp as shipped in
    // node-llama-cpp 3.21.1, on F16 GGUF files with the tensor tables of the models' published
    // configs (tests/llamacpp/quantizeoracle.cpp writes and re-checks it). Per model and preset:
    // the count of tensors of each type and their exact bytes. Headroom must give the same counts
    // and the same bytes, type by type (llama 3.1's rope_freqs.weight, F32 head_dim / 2 values,
    // included: parameters.h ggufOnlyTensors). One difference is accounted for, not hidden:
    //  - rows that Q2_K/Q3_K blocks do not divide fall back to IQ4_NL in the llama.cpp that wrote
    //    the files of 2024-2025 (Headroom's rule) and to Q4_0 in the bundled release: the same
    //    18 bytes per 32 values, so both sides count them as q4_0 here.
    // The plain GGML ids (q4_0, q6_k, ...) are single types; the presets are their gguf- ids.
    std::ifstream in(test::sourcePath("tests/llamacpp/quantize-grid.json"));
    REQUIRE(in.good());
    const nlohmann::json grid = nlohmann::json::parse(in);
    int compared = 0;
    for (const auto& model : grid.at("models")) {
        const Architecture arch = profileArch(model.at("id").get<std::string>().c_str());
        for (const auto& [preset, want] : model.at("presets").items()) {
            auto format = findFormat("gguf-" + lower(preset));
            if (!format)
                format = findFormat(lower(preset));
            REQUIRE(format);
            REQUIRE(format->ggufFileType != 0);
            const PricedTensors list = priceTensors(arch, *format);
            std::map<std::string, int> counts;
            std::map<std::string, std::uint64_t> gotBytes;
            for (const PricedTensor& t : list.priced) {
                const std::string type = t.type == "iq4_nl" ? "q4_0" : t.type;
                ++counts[type];
                gotBytes[type] += t.bytes.value;
            }
            const WeightBill bill = weightBill(list);
            INFO(model.at("id").get<std::string>() << " " << preset << " (" << model.at("config").get<std::string>()
                                                   << ")");
            std::map<std::string, int> wantCounts;
            for (const auto& [type, n] : want.at("type_counts").items())
                wantCounts[headroomTypeName(type)] = n.get<int>();
            std::string countsText = "headroom";
            for (const auto& [type, n] : counts)
                countsText += " " + type + ":" + std::to_string(n);
            countsText += ", llama-quantize";
            for (const auto& [type, n] : wantCounts)
                countsText += " " + type + ":" + std::to_string(n);
            INFO(countsText);
            CHECK(counts == wantCounts);
            std::map<std::string, std::uint64_t> wantBytes;
            for (const auto& [type, bytes] : want.at("type_bytes").items())
                wantBytes[headroomTypeName(type)] = bytes.get<std::uint64_t>();
            CHECK(gotBytes == wantBytes);
            CHECK(bill.totalBytes.value == want.at("tensor_bytes").get<std::uint64_t>());
            ++compared;
        }
    }
    CHECK(compared >= 9 * 14);
}

TEST_CASE("a dated rule: IQ2_XXS as the quantizer of January 2024 wrote it", "[ggufpreset]")
{
    // llama.cpp b1971 (ggerganov/llama.cpp 1182cf4d, get_k_quant_type): every IQ2_XXS tensor but
    // output (Q5_K), attn_v (Q4_K for 8 experts), the first eighth of ffn_down and token_embd (Q2_K)
    // takes the default type; today's rules also give an 8-expert model's attn_k Q4_K and
    // attn_output Q5_K.
    const std::optional<WeightFormat> dated = findFormat("gguf-iq2_xxs-b1971");
    REQUIRE(dated);
    CHECK(dated->ggufFileType == 19);
    CHECK(dated->ggufRulesBuild == 1971);
    CHECK(dated->id == "gguf-iq2_xxs-b1971"); // prefixed as its undated preset is
    CHECK(findFormat("gguf-iq2_xxs")->ggufRulesBuild == 0);
    CHECK(ggufPresetOfFileType(19)->rulesBuild == 0);       // the file type alone: today's rules
    CHECK(ggufPresetOfFileType(19, 1971)->rulesBuild == 1971);
    CHECK(ggufPresetOfFileType(19, 4000)->rulesBuild == 0);  // a build no dated rule covers

    const Architecture mixtral = profileArch("mixtral-8x7b");
    const auto now = typeCounts(mixtral, *findFormat("gguf-iq2_xxs"));
    const auto then = typeCounts(mixtral, *dated);
    // 32 attn_k (Q4_K today) and 32 attn_output (Q5_K today) go back to IQ2_XXS.
    CHECK(now.at("q4_k") - then.at("q4_k") == 32);
    CHECK(now.at("q5_k") - then.at("q5_k") == 32);
    CHECK(then.at("iq2_xxs") - now.at("iq2_xxs") == 64);
    // The run's own "CPU buffer size = 11712.97 MiB" (llama.cpp#5137, build 1971) within 0.5 %.
    const double real = 11712.97 * kMebi;
    const double predicted = static_cast<double>(priceWeights(mixtral, *dated).totalBytes.value);
    INFO("Mixtral-8x7B IQ2_XXS b1971: printed " << real << " B, predicted " << predicted << " B");
    CHECK(std::abs(predicted - real) / real < 0.005);
}
