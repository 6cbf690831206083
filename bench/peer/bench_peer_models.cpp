// bench_peer_models: the model files of the llama.cpp decode comparison (bench/peer/run.sh) and
// Headroom's prediction for them.
//
//   bench_peer_models write DIR              writes qwen2.5-0.5b and llama-1b shapes in Q8_0 and Q4_0
//                                            (sparse files, zero weights: timing only), one path a line
//   bench_peer_models write-ffn DIR          writes one-layer models whose step is the FFN's GEMVs of
//                                            4096 x 14336 and 896 x 4864 (Llama-3-8B's and Qwen2.5-0.5B's
//                                            MLP; vocab 256) in Q8_0 and Q4_0, every byte written (0x11)
//   bench_peer_models predict FILE GBPS CTX  Headroom's decode tokens/s of FILE at batch 1 with CTX
//                                            cached tokens on a device of GBPS (10^9 B/s): the core
//                                            roofline (speed/roofline.h) with the file's exact tensor bytes

#include "ggufwriter.h"

#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/speed/planspeed.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Shape {
    const char* id;
    const char* arch;
    std::uint32_t layers, hidden, heads, kvHeads, ffn, vocab;
    bool tied;
};

// Shapes from the models' config.json: Qwen2.5-0.5B, and Llama-3.2-1B.
constexpr Shape kShapes[] = {
    {"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 4864, 151936, true},
    {"llama-3.2-1b", "llama", 16, 2048, 32, 8, 8192, 128256, true},
};

// The kernel shapes of issue 12 as one-layer models: gate and up 14336 x 4096 and down 4096 x 14336
// (Llama-3-8B) are 81 % of the step's weights beside the attention projections (32 heads, 8 KV
// heads of 128); 896 x 4864 (Qwen2.5-0.5B) 77 %.
constexpr Shape kFfnShapes[] = {
    {"ffn-4096x14336", "llama", 1, 4096, 32, 8, 14336, 256, true},
    {"ffn-896x4864", "qwen2", 1, 896, 14, 2, 4864, 256, true},
};

/// A byte-level vocabulary of @p n placeholder tokens (llama.cpp needs a tokenizer to load).
std::vector<std::string> vocab(std::uint32_t n)
{
    std::vector<std::string> out;
    out.reserve(n);
    for (std::uint32_t i = 0; i < 256 && i < n; ++i)
        out.push_back(std::string("<0x") + "0123456789ABCDEF"[i / 16] + "0123456789ABCDEF"[i % 16] + ">");
    for (std::uint32_t i = static_cast<std::uint32_t>(out.size()); i < n; ++i)
        out.push_back("<t" + std::to_string(i) + ">");
    return out;
}

bool write(const Shape& s, std::uint32_t type, const char* typeName, const std::filesystem::path& file, bool fill = false)
{
    headroom::test::GgufWriter w;
    w.writeData = false;
    const std::string a = s.arch;
    w.kvString("general.architecture", a);
    w.kvString("general.name", std::string(s.id) + "-" + typeName);
    w.kvU32("general.alignment", 32);
    w.kvU32(a + ".block_count", s.layers);
    w.kvU32(a + ".context_length", 32768);
    w.kvU32(a + ".embedding_length", s.hidden);
    w.kvU32(a + ".feed_forward_length", s.ffn);
    w.kvU32(a + ".attention.head_count", s.heads);
    w.kvU32(a + ".attention.head_count_kv", s.kvHeads);
    w.kvF32(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
    w.kvF32(a + ".rope.freq_base", 10000.0f);
    w.kvString("tokenizer.ggml.model", "llama");
    w.kvStringArray("tokenizer.ggml.tokens", vocab(s.vocab));
    const std::uint64_t head = s.hidden / s.heads;
    const std::uint64_t q = std::uint64_t{s.heads} * head, kv = std::uint64_t{s.kvHeads} * head;
    constexpr std::uint32_t f32 = 0;
    w.tensor("token_embd.weight", {s.hidden, s.vocab}, type);
    w.tensor("output_norm.weight", {s.hidden}, f32);
    for (std::uint32_t i = 0; i < s.layers; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        w.tensor(b + "attn_norm.weight", {s.hidden}, f32);
        w.tensor(b + "attn_q.weight", {s.hidden, q}, type);
        w.tensor(b + "attn_k.weight", {s.hidden, kv}, type);
        w.tensor(b + "attn_v.weight", {s.hidden, kv}, type);
        w.tensor(b + "attn_output.weight", {q, s.hidden}, type);
        w.tensor(b + "ffn_norm.weight", {s.hidden}, f32);
        w.tensor(b + "ffn_gate.weight", {s.hidden, s.ffn}, type);
        w.tensor(b + "ffn_up.weight", {s.hidden, s.ffn}, type);
        w.tensor(b + "ffn_down.weight", {s.ffn, s.hidden}, type);
    }
    const std::vector<std::uint8_t> header = w.bytes();
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
        if (!out)
            return false;
    }
    std::error_code ec;
    std::filesystem::resize_file(file, w.dataOffset() + w.dataBytes(), ec); // sparse zero weights
    if (ec || !fill)
        return !ec;
    // Every data byte 0x11 (fp16 scales 0x1111, int8 codes 17, nibbles 1): real pages, finite sums.
    std::fstream out(file, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(w.dataOffset()));
    const std::vector<char> chunk(1 << 20, 0x11);
    for (std::uint64_t left = w.dataBytes(); left > 0;) {
        const std::uint64_t n = std::min<std::uint64_t>(left, chunk.size());
        out.write(chunk.data(), static_cast<std::streamsize>(n));
        left -= n;
    }
    return static_cast<bool>(out);
}

int predict(const char* file, double gbps, std::uint64_t context)
{
    auto m = headroom::importModel(file);
    if (!m || !m->architecture) {
        std::fprintf(stderr, "bench_peer_models: %s: %s\n", file, m ? "no architecture" : m.error().message.c_str());
        return 1;
    }
    const auto fp16 = headroom::findKvDtype("fp16");
    const headroom::Bytes kvPerToken = headroom::kvLayout(*m->architecture, *fp16).bytesPerToken();
    const headroom::SpeedInputs in = headroom::speedInputs(*m->architecture, m->weightsBytes, kvPerToken, gbps, 0);
    const headroom::StepEstimate e = headroom::decodeStep(in, 1, context);
    std::printf("{\"file\": \"%s\", \"weights_bytes\": %llu, \"kv_bytes_per_token\": %llu, \"bandwidth_gbps\": %.4f, "
                "\"context_tokens\": %llu, \"predicted_step_ms\": %.4f, \"predicted_tokens_per_s\": %.4f}\n",
                file, static_cast<unsigned long long>(m->weightsBytes.value), static_cast<unsigned long long>(kvPerToken.value), gbps,
                static_cast<unsigned long long>(context), e.stepMs, e.tokensPerSecond);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    const std::string cmd = argc > 1 ? argv[1] : "";
    if ((cmd == "write" || cmd == "write-ffn") && argc == 3) {
        std::filesystem::create_directories(argv[2]);
        const bool ffn = cmd == "write-ffn";
        for (const Shape& s : ffn ? std::vector<Shape>(std::begin(kFfnShapes), std::end(kFfnShapes))
                                  : std::vector<Shape>(std::begin(kShapes), std::end(kShapes)))
            for (const auto& [type, name] : {std::pair{8u, "q8_0"}, std::pair{2u, "q4_0"}}) {
                const auto file = std::filesystem::path(argv[2]) / (std::string(s.id) + "-" + name + ".gguf");
                if (!write(s, type, name, file, ffn)) {
                    std::fprintf(stderr, "bench_peer_models: cannot write %s\n", file.c_str());
                    return 1;
                }
                std::printf("%s\n", file.c_str());
            }
        return 0;
    }
    if (cmd == "predict" && argc == 5)
        return predict(argv[2], std::atof(argv[3]), std::strtoull(argv[4], nullptr, 10));
    std::fprintf(stderr, "usage: bench_peer_models write DIR | write-ffn DIR | predict FILE GBPS CONTEXT\n");
    return 2;
}
