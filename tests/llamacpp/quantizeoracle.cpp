// The llama-quantize oracle: real llama.cpp's quantizer decides the tensor types of a GGUF preset.
//
// node-llama-cpp 3.21.1 ships llama.cpp's shared library (bins/<platform>/libllama*.so), whose C API
// exports llama_model_quantize with a dry_run parameter ("calculate and show the final quantization
// size without performing quantization", include/llama.h of the bundled llama.cpp release): the
// quantizer reads only the header, assigns each tensor its type (llama_tensor_get_type in
// src/llama-quant.cpp) and logs it. This program writes GGUF files with the tensor tables of real
// models (F16 matrices, F32 norms and biases, zero data, sparse on disk), dry-runs each preset on
// them and records, per model and preset, how many tensors got each type and their exact bytes
// (ggml_row_size of the library itself). tst_core ([ggufpreset][oracle]) checks Headroom's preset
// rules against the recorded grid (quantize-grid.json); CTest llamacpp_quantize_live re-runs it.
//
// Usage: headroom_quantize_oracle LIB_DIR OUT.json [--workdir DIR] [--compare RECORDED.json]
//   LIB_DIR: the folder holding libllama*.so (node_modules/@node-llama-cpp/linux-x64/bins/linux-x64)
//   --compare: after writing OUT.json, fail unless its models equal RECORDED.json's
// Exit codes: 0 written (and equal), 1 failure or a difference, 2 usage, 77 the library is not there
// (CTest: skipped).
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- the C API, as include/llama.h of
// the llama.cpp release bundled in node-llama-cpp 3.21.1 (llama/gitRelease.bundle, tag v0.4.0)
// declares it. Only the calls this program makes; the struct is laid out field for field.
struct QuantizeParams {
    std::int32_t nthread;
    int ftype;                  // enum llama_ftype
    int output_tensor_type;     // enum ggml_type
    int token_embedding_type;   // enum ggml_type
    bool allow_requantize;
    bool quantize_output_tensor;
    bool only_copy;
    bool pure;
    bool keep_split;
    bool dry_run;
    const void* imatrix;
    const void* kv_overrides;
    const void* tt_overrides;
    const std::int32_t* prune_layers;
    std::size_t max_buf_size;
};
using LogCallback = void (*)(int level, const char* text, void* user);
using DefaultParamsFn = QuantizeParams (*)();
using QuantizeFn = std::uint32_t (*)(const char*, const char*, const QuantizeParams*);
using LogSetFn = void (*)(LogCallback, void*);
using BackendInitFn = void (*)();
using TypeNameFn = const char* (*)(int);
using RowSizeFn = std::size_t (*)(int, std::int64_t);

constexpr int kGgmlF32 = 0;
constexpr int kGgmlF16 = 1;
constexpr int kGgmlTypeCount = 48; // above every type id of the release (GGML_TYPE_COUNT is 41 there)

struct Llama {
    void* handle = nullptr;
    DefaultParamsFn defaultParams = nullptr;
    QuantizeFn quantize = nullptr;
    LogSetFn logSet = nullptr;
    BackendInitFn backendInit = nullptr;
    TypeNameFn typeName = nullptr;
    RowSizeFn rowSize = nullptr;
};

/// Opens libllama*.so in @p dir and finds the calls; an empty handle when it is not there.
Llama openLlama(const fs::path& dir, std::string& why)
{
    Llama l;
    std::error_code ec;
    fs::path lib;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("libllama", 0) == 0 && name.find("common") == std::string::npos &&
            name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0)
            lib = e.path();
    }
    if (lib.empty()) {
        why = "no libllama*.so in " + dir.string();
        return l;
    }
    l.handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!l.handle) {
        why = std::string("dlopen ") + lib.string() + ": " + dlerror();
        return l;
    }
    auto sym = [&](const char* name) { return dlsym(l.handle, name); };
    l.defaultParams = reinterpret_cast<DefaultParamsFn>(sym("llama_model_quantize_default_params"));
    l.quantize = reinterpret_cast<QuantizeFn>(sym("llama_model_quantize"));
    l.logSet = reinterpret_cast<LogSetFn>(sym("llama_log_set"));
    l.backendInit = reinterpret_cast<BackendInitFn>(sym("llama_backend_init"));
    l.typeName = reinterpret_cast<TypeNameFn>(sym("ggml_type_name"));
    l.rowSize = reinterpret_cast<RowSizeFn>(sym("ggml_row_size"));
    if (!l.defaultParams || !l.quantize || !l.logSet || !l.backendInit || !l.typeName || !l.rowSize) {
        why = lib.string() + " lacks one of llama_model_quantize, llama_model_quantize_default_params, "
                             "llama_log_set, llama_backend_init, ggml_type_name, ggml_row_size";
        l.handle = nullptr;
    }
    return l;
}

// ---------------------------------------------------------------- GGUF writer (v3, docs/gguf.md)
struct Tensor {
    std::string name;
    std::vector<std::int64_t> dims; // ne0 first
    int type;
};

struct Kv {
    std::string key;
    enum { U32, F32, Str } kind;
    std::uint32_t u = 0;
    float f = 0;
    std::string s;
};

class Writer {
public:
    void u32(std::uint32_t v) { put(&v, 4); }
    void u64(std::uint64_t v) { put(&v, 8); }
    void f32(float v) { put(&v, 4); }
    void str(const std::string& s)
    {
        u64(s.size());
        m_bytes.append(s);
    }
    std::string& bytes() { return m_bytes; }

private:
    void put(const void* p, std::size_t n) { m_bytes.append(static_cast<const char*>(p), n); }
    std::string m_bytes;
};

std::uint64_t tensorBytes(const Tensor& t, const Llama& l)
{
    std::uint64_t rows = 1;
    for (std::size_t i = 1; i < t.dims.size(); ++i)
        rows *= static_cast<std::uint64_t>(t.dims[i]);
    return rows * l.rowSize(t.type, t.dims[0]);
}

/// Writes the header and extends the file to its full size without writing the data (sparse).
bool writeGguf(const fs::path& file, const std::vector<Kv>& kvs, std::vector<Tensor>& tensors, const Llama& l)
{
    constexpr std::uint64_t align = 32;
    Writer w;
    w.bytes() = "GGUF";
    w.u32(3);
    w.u64(tensors.size());
    w.u64(kvs.size());
    for (const Kv& kv : kvs) {
        w.str(kv.key);
        if (kv.kind == Kv::U32) {
            w.u32(4);
            w.u32(kv.u);
        } else if (kv.kind == Kv::F32) {
            w.u32(6);
            w.f32(kv.f);
        } else {
            w.u32(8);
            w.str(kv.s);
        }
    }
    std::uint64_t offset = 0;
    for (const Tensor& t : tensors) {
        w.str(t.name);
        w.u32(static_cast<std::uint32_t>(t.dims.size()));
        for (std::int64_t d : t.dims)
            w.u64(static_cast<std::uint64_t>(d));
        w.u32(static_cast<std::uint32_t>(t.type));
        w.u64(offset);
        offset += (tensorBytes(t, l) + align - 1) / align * align;
    }
    const std::uint64_t dataStart = (w.bytes().size() + align - 1) / align * align;
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(w.bytes().data(), static_cast<std::streamsize>(w.bytes().size()));
        if (!out)
            return false;
    }
    std::error_code ec;
    fs::resize_file(file, dataStart + offset, ec);
    return !ec;
}

// ---------------------------------------------------------------- the models: each shape from the
// model's published config.json on the Hugging Face hub (the same configs profiles/models cite).
struct Model {
    const char* id;      ///< the profile id in profiles/models
    const char* arch;    ///< GGUF general.architecture
    const char* config;  ///< where the shape comes from
    std::uint32_t layers, hidden, heads, kvHeads, headDim, ffn, vocab;
    bool tied = false;
    bool qkvBias = false;
    bool qkNorm = false;            ///< qwen3: attn_q_norm / attn_k_norm
    std::uint32_t experts = 0;      ///< routed experts (ffn_*_exps), 0 = dense
    std::uint32_t expertsUsed = 0;
    std::uint32_t expertFfn = 0;
    bool ropeFreqs = false;         ///< llama 3.1: rope_freqs.weight (llama3 rope scaling)
};

const std::vector<Model>& models()
{
    static const std::vector<Model> all = {
        {"llama-3.1-8b", "llama", "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json", 32, 4096, 32, 8,
         128, 14336, 128256, false, false, false, 0, 0, 0, true},
        {"mistral-7b", "llama", "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json", 32, 4096, 32, 8,
         128, 14336, 32000},
        {"qwen2.5-7b", "qwen2", "https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json", 28, 3584, 28, 4, 128,
         18944, 152064, false, true},
        {"qwen2.5-0.5b", "qwen2", "https://huggingface.co/Qwen/Qwen2.5-0.5B/blob/main/config.json", 24, 896, 14, 2, 64,
         4864, 151936, true, true},
        {"deepseek-r1-distill-qwen-14b", "qwen2",
         "https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-14B/blob/main/config.json (the Qwen2.5-14B shapes)",
         48, 5120, 40, 8, 128, 13824, 152064, false, true},
        {"qwen2.5-32b", "qwen2", "https://huggingface.co/Qwen/Qwen2.5-32B/blob/main/config.json", 64, 5120, 40, 8, 128,
         27648, 152064, false, true},
        {"qwen3-8b", "qwen3", "https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json", 36, 4096, 32, 8, 128, 12288,
         151936, false, false, true},
        {"qwen3-30b-a3b", "qwen3moe", "https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json", 48, 2048, 32, 4,
         128, 6144, 151936, false, false, true, 128, 8, 768},
        {"llama-2-70b", "llama", "https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json", 80, 8192, 64,
         8, 128, 28672, 32000},
    };
    return all;
}

std::vector<Tensor> tensorsOf(const Model& m)
{
    std::vector<Tensor> t;
    const std::int64_t q = std::int64_t(m.heads) * m.headDim, kv = std::int64_t(m.kvHeads) * m.headDim;
    t.push_back({"token_embd.weight", {m.hidden, m.vocab}, kGgmlF16});
    t.push_back({"output_norm.weight", {m.hidden}, kGgmlF32});
    if (!m.tied)
        t.push_back({"output.weight", {m.hidden, m.vocab}, kGgmlF16});
    if (m.ropeFreqs)
        t.push_back({"rope_freqs.weight", {m.headDim / 2}, kGgmlF32});
    for (std::uint32_t i = 0; i < m.layers; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        t.push_back({b + "attn_norm.weight", {m.hidden}, kGgmlF32});
        t.push_back({b + "attn_q.weight", {m.hidden, q}, kGgmlF16});
        t.push_back({b + "attn_k.weight", {m.hidden, kv}, kGgmlF16});
        t.push_back({b + "attn_v.weight", {m.hidden, kv}, kGgmlF16});
        if (m.qkvBias) {
            t.push_back({b + "attn_q.bias", {q}, kGgmlF32});
            t.push_back({b + "attn_k.bias", {kv}, kGgmlF32});
            t.push_back({b + "attn_v.bias", {kv}, kGgmlF32});
        }
        if (m.qkNorm) {
            t.push_back({b + "attn_q_norm.weight", {m.headDim}, kGgmlF32});
            t.push_back({b + "attn_k_norm.weight", {m.headDim}, kGgmlF32});
        }
        t.push_back({b + "attn_output.weight", {q, m.hidden}, kGgmlF16});
        t.push_back({b + "ffn_norm.weight", {m.hidden}, kGgmlF32});
        if (m.experts) {
            t.push_back({b + "ffn_gate_inp.weight", {m.hidden, m.experts}, kGgmlF32});
            t.push_back({b + "ffn_gate_exps.weight", {m.hidden, m.expertFfn, m.experts}, kGgmlF16});
            t.push_back({b + "ffn_up_exps.weight", {m.hidden, m.expertFfn, m.experts}, kGgmlF16});
            t.push_back({b + "ffn_down_exps.weight", {m.expertFfn, m.hidden, m.experts}, kGgmlF16});
        } else {
            t.push_back({b + "ffn_gate.weight", {m.hidden, m.ffn}, kGgmlF16});
            t.push_back({b + "ffn_up.weight", {m.hidden, m.ffn}, kGgmlF16});
            t.push_back({b + "ffn_down.weight", {m.ffn, m.hidden}, kGgmlF16});
        }
    }
    return t;
}

std::vector<Kv> metadataOf(const Model& m)
{
    const std::string a = m.arch;
    std::vector<Kv> kv = {
        {"general.architecture", Kv::Str, 0, 0, a},
        {"general.name", Kv::Str, 0, 0, m.id},
        {"general.alignment", Kv::U32, 32},
        {"general.file_type", Kv::U32, 1},
        {a + ".block_count", Kv::U32, m.layers},
        {a + ".context_length", Kv::U32, 4096},
        {a + ".embedding_length", Kv::U32, m.hidden},
        {a + ".feed_forward_length", Kv::U32, m.ffn},
        {a + ".attention.head_count", Kv::U32, m.heads},
        {a + ".attention.head_count_kv", Kv::U32, m.kvHeads},
        {a + ".attention.key_length", Kv::U32, m.headDim},
        {a + ".attention.value_length", Kv::U32, m.headDim},
        {a + ".attention.layer_norm_rms_epsilon", Kv::F32, 0, 1e-6f},
        {a + ".rope.freq_base", Kv::F32, 0, 10000.0f},
        {a + ".vocab_size", Kv::U32, m.vocab},
    };
    if (m.experts) {
        kv.push_back({a + ".expert_count", Kv::U32, m.experts});
        kv.push_back({a + ".expert_used_count", Kv::U32, m.expertsUsed});
        kv.push_back({a + ".expert_feed_forward_length", Kv::U32, m.expertFfn});
    }
    return kv;
}

// ---------------------------------------------------------------- the presets (enum llama_ftype)
struct Preset {
    const char* name;
    int ftype;
};
const std::vector<Preset> kPresets = {
    {"Q4_0", 2},    {"Q4_1", 3},    {"Q5_0", 8},    {"Q5_1", 9},    {"Q8_0", 7},    {"Q2_K", 10},
    {"Q3_K_S", 11}, {"Q3_K_M", 12}, {"Q3_K_L", 13}, {"Q4_K_S", 14}, {"Q4_K_M", 15}, {"Q5_K_S", 16},
    {"Q5_K_M", 17}, {"Q6_K", 18},
};

// ---------------------------------------------------------------- the log
std::string g_log;
void collect(int /*level*/, const char* text, void* /*user*/)
{
    if (text)
        g_log += text;
}

/// "[  12/ 291]   blk.0.attn_v.weight - [ 4096,  1024, 1, 1], type =    f16, size = 8.00 MiB -> 3.28 MiB (q6_K)"
/// or "..., type =    f32, size =    0.016 MiB" (kept): the tensor's name and its new type.
std::map<std::string, std::string> typesFromLog(const std::string& log)
{
    static const std::regex line(R"(\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[[^\]]*\], type =\s*(\w+), size =\s*[\d.]+ MiB(?: ->\s*[\d.]+ MiB \((\w+)\))?)");
    std::map<std::string, std::string> out;
    std::istringstream in(log);
    std::string l;
    while (std::getline(in, l)) {
        std::smatch m;
        if (std::regex_search(l, m, line))
            out[m[1]] = m[3].matched ? m[3].str() : m[2].str();
    }
    return out;
}

int typeId(const Llama& l, const std::string& name)
{
    for (int t = 0; t < kGgmlTypeCount; ++t) {
        const char* n = l.typeName(t);
        if (n && name == n)
            return t;
    }
    return -1;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 3) {
        std::cerr << "usage: headroom_quantize_oracle LIB_DIR OUT.json [--workdir DIR] [--compare RECORDED.json]\n";
        return 2;
    }
    const fs::path libDir = argv[1];
    const fs::path outPath = argv[2];
    fs::path work = fs::temp_directory_path() / "headroom-quantize-oracle";
    fs::path recorded;
    for (int i = 3; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--workdir")
            work = argv[i + 1];
        if (std::string(argv[i]) == "--compare")
            recorded = argv[i + 1];
    }

    std::string why;
    const Llama l = openLlama(libDir, why);
    if (!l.handle) {
        std::cout << "SKIP: " << why << "\n";
        return 77;
    }
    l.logSet(collect, nullptr);
    l.backendInit();
    std::error_code ec;
    fs::create_directories(work, ec);

    nlohmann::ordered_json grid;
    grid["source"] = "tests/llamacpp/quantizeoracle.cpp: llama_model_quantize (dry_run) of the llama.cpp shared "
                     "library in node-llama-cpp 3.21.1 (bundled release v0.4.0), on F16 GGUF headers of real shapes";
    grid["models"] = nlohmann::ordered_json::array();
    for (const Model& m : models()) {
        std::vector<Tensor> tensors = tensorsOf(m);
        const fs::path file = work / (std::string(m.id) + "-f16.gguf");
        if (!writeGguf(file, metadataOf(m), tensors, l)) {
            std::cerr << "cannot write " << file << "\n";
            return 1;
        }
        std::map<std::string, const Tensor*> byName;
        for (const Tensor& t : tensors)
            byName[t.name] = &t;
        nlohmann::ordered_json jm;
        jm["id"] = m.id;
        jm["config"] = m.config;
        jm["tensors"] = tensors.size();
        if (m.ropeFreqs)
            jm["rope_freqs_bytes"] = std::uint64_t{m.headDim} / 2 * 4; // F32 rope_freqs.weight: head_dim / 2 values
        jm["presets"] = nlohmann::ordered_json::object();
        for (const Preset& p : kPresets) {
            QuantizeParams params = l.defaultParams();
            params.nthread = 1;
            params.ftype = p.ftype;
            params.dry_run = true;
            g_log.clear();
            const std::uint32_t rc = l.quantize(file.c_str(), (work / "out.gguf").c_str(), &params);
            const auto types = typesFromLog(g_log);
            if (rc != 0 || types.size() != tensors.size()) {
                std::cerr << m.id << " " << p.name << ": llama_model_quantize returned " << rc << ", " << types.size()
                          << " of " << tensors.size() << " tensors in its log\n"
                          << g_log.substr(0, 4000) << "\n";
                return 1;
            }
            std::map<std::string, int> counts;
            std::map<std::string, std::uint64_t> bytes;
            std::uint64_t total = 0;
            for (const auto& [name, type] : types) {
                const int id = typeId(l, type);
                const auto it = byName.find(name);
                if (id < 0 || it == byName.end()) {
                    std::cerr << m.id << " " << p.name << ": unknown tensor or type in the log: " << name << " " << type
                              << "\n";
                    return 1;
                }
                Tensor t = *it->second;
                t.type = id;
                const std::uint64_t b = tensorBytes(t, l);
                ++counts[type];
                bytes[type] += b;
                total += b;
            }
            nlohmann::ordered_json jp;
            jp["tensor_bytes"] = total;
            jp["type_counts"] = counts;
            jp["type_bytes"] = bytes;
            jm["presets"][p.name] = jp;
        }
        fs::remove(file, ec);
        grid["models"].push_back(jm);
    }
    std::ofstream out(outPath, std::ios::trunc);
    out << grid.dump(1) << "\n";
    if (!out) {
        std::cerr << "cannot write " << outPath << "\n";
        return 1;
    }
    std::cout << "wrote " << outPath << "\n";
    if (recorded.empty())
        return 0;
    std::ifstream in(recorded);
    const nlohmann::json old = nlohmann::json::parse(in, nullptr, false);
    if (old.is_discarded() || !old.contains("models")) {
        std::cerr << "cannot read the recorded grid " << recorded << "\n";
        return 1;
    }
    const nlohmann::json now = nlohmann::json::parse(grid.dump());
    if (now.at("models") != old.at("models")) {
        std::cerr << "llama-quantize now types tensors differently from the recorded " << recorded << ":\n"
                  << nlohmann::json::diff(old.at("models"), now.at("models")).dump(1).substr(0, 4000) << "\n";
        return 1;
    }
    std::cout << "equal to " << recorded << " (" << now.at("models").size() << " models)\n";
    return 0;
}
