// GGUF import: the fixtures of shared/fixtures/gguf against the facts published in
// fixtures/SOURCES.md and reference/peer-expectations.md, synthetic files of every version and
// byte order, quantized sizing from the GGML table, and header-only reads of a sparse 40 GB file.

#include "fixtures.h"
#include "importers/ggufwriter.h"

#include <headroom/core/importers/ggufreader.h>
#include <headroom/core/importers/importedmodel.h>
#include <headroom/core/importers/safetensors.h>
#include <headroom/core/kvcache.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <unistd.h>

using namespace headroom;
using headroom::test::fixture;
using headroom::test::GgufWriter;

namespace {

std::uint64_t kvBytesPerTokenFp16(const Architecture& arch)
{
    return kvLayout(arch, *findKvDtype("fp16")).bytesPerToken().value;
}

std::filesystem::path tempPath(const std::string& name)
{
    auto dir = std::filesystem::temp_directory_path() / ("headroom-tst-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir / name;
}

void writeFile(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes)
{
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// A llama-shaped file: 2 blocks, 64 wide, 4 heads / 2 KV heads, q4_0/q8_0/q6_K/f32 tensors.
GgufWriter smallLlama()
{
    GgufWriter w;
    w.kvString("general.architecture", "llama");
    w.kvU32("llama.block_count", 2);
    w.kvU32("llama.embedding_length", 256);
    w.kvU32("llama.attention.head_count", 4);
    w.kvU32("llama.attention.head_count_kv", 2);
    w.kvU32("llama.context_length", 4096);
    w.kvU32("llama.feed_forward_length", 512);
    w.kvStringArray("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "b"});
    w.tensor("token_embd.weight", {256, 4}, 8);      // q8_0: 4 rows * 8 blocks * 34 = 1,088
    w.tensor("blk.0.attn_q.weight", {256, 256}, 2);  // q4_0: 256 * 8 * 18 = 36,864
    w.tensor("blk.0.ffn_down.weight", {512, 256}, 14); // q6_K: 256 rows * 2 blocks * 210 = 107,520
    w.tensor("output_norm.weight", {256}, 0);        // f32: 1,024
    return w;
}

} // namespace

TEST_CASE("GGUF fixtures import with the published header facts", "[importers][gguf]")
{
    SECTION("stories260K.gguf: v3, 48 F32 tensors, 1,171,200 data bytes from offset 14,176")
    {
        const auto path = fixture("gguf/stories260K.gguf");
        HEADROOM_REQUIRE_FIXTURE(path);
        auto file = readGguf(path);
        REQUIRE(file.has_value());
        CHECK(file->version == 3);
        CHECK(file->tensors.size() == 48);
        CHECK(file->metadata.size() == 19);
        CHECK(file->dataOffset == 14176);
        CHECK(file->dataBytes == 1171200);
        CHECK(file->dataOffset + file->dataBytes == 1185376); // the file's size (SOURCES.md)
        auto model = importModel(path);
        REQUIRE(model.has_value());
        CHECK(model->format == "gguf");
        CHECK(model->formatVersion == "3");
        CHECK(model->tensorCount == 48);
        CHECK(model->weightsBytes.value == 1171200);
        CHECK(model->bytesByType.at("f32").value == 1171200);
        CHECK(model->parameters == 1171200 / 4); // all F32: parameters = bytes / 4
        REQUIRE(model->architecture.has_value());
        const Architecture& a = *model->architecture;
        CHECK(a.layers == 5);
        CHECK(a.hiddenSize == 64);
        CHECK(a.attentionHeads == 8);
        CHECK(a.kvHeads == 4);
        CHECK(a.intermediateSize == 172);
        CHECK(model->contextLength == 2048);
        // BRIEF §1.1: 2 * L * H_kv * d_head * 2 B = 2 * 5 * 4 * 8 * 2
        CHECK(kvBytesPerTokenFp16(a) == 2 * 5 * 4 * 8 * 2);
    }
    SECTION("llama-2-tiny-random.gguf: v3, 12 tensors, 18 KV, data from 724,416 to the end")
    {
        const auto path = fixture("gguf/llama-2-tiny-random.gguf");
        HEADROOM_REQUIRE_FIXTURE(path);
        auto file = readGguf(path);
        REQUIRE(file.has_value());
        CHECK(file->tensors.size() == 12);
        CHECK(file->metadata.size() == 18);
        CHECK(file->dataOffset == 724416);
        CHECK(file->dataOffset + file->dataBytes == 1750560);
        auto model = importModel(path);
        REQUIRE(model.has_value());
        REQUIRE(model->architecture.has_value());
        CHECK(model->architecture->layers == 1);
        CHECK(model->architecture->hiddenSize == 8);
        CHECK(model->architecture->attentionHeads == 2);
        CHECK(model->architecture->kvHeads == 2);
        CHECK(model->architecture->vocabSize == 32000);
        CHECK(model->weightsBytes.value == 1750560 - 724416);
        CHECK(model->tensorsByType.count("f16") == 1);
        CHECK(model->tensorsByType.count("f32") == 1);
        // Parameters are element counts: f16 tensors hold 2 bytes per element, f32 4.
        CHECK(model->parameters ==
              model->bytesByType.at("f16").value / 2 + model->bytesByType.at("f32").value / 4);
    }
    SECTION("hyllama-dummy.gguf: v3, 10 tensors, every scalar type, no architecture")
    {
        const auto path = fixture("gguf/hyllama-dummy.gguf");
        HEADROOM_REQUIRE_FIXTURE(path);
        auto file = readGguf(path);
        REQUIRE(file.has_value());
        CHECK(file->version == 3);
        CHECK(file->tensors.size() == 10);
        CHECK(file->metadata.size() == 15);
        CHECK(file->tensors.front().name == "tensor_0");
        CHECK(file->tensors.front().shape == std::vector<std::uint64_t>{7, 8, 6, 4});
        CHECK(file->tensors.front().type == "f32");
        CHECK(file->tensors.back().name == "tensor_9");
        CHECK(file->tensors.back().shape == std::vector<std::uint64_t>{10, 8, 4});
        auto model = importModel(path);
        REQUIRE(model.has_value());
        CHECK_FALSE(model->architecture.has_value());
        CHECK(model->parameters == model->weightsBytes.value / 4);
    }
    SECTION("vocab-only files: v1 llama, v2 falcon, v3 phi-3 and gpt-2")
    {
        struct Case {
            const char* file;
            std::uint32_t version;
            std::size_t kvs;
            std::uint32_t layers;
            std::uint64_t hidden;
            std::uint32_t heads, kvHeads;
            std::uint64_t ff;
            std::uint64_t context;
        };
        const Case cases[] = {
            {"gguf/ggml-vocab-llama-v1.gguf", 1, 13, 32, 4096, 32, 32, 11008, 2048},
            {"gguf/ggml-vocab-falcon-v2.gguf", 2, 17, 32, 4544, 71, 1, 18176, 0},
            {"gguf/ggml-vocab-phi-3.gguf", 3, 26, 32, 3072, 32, 32, 8192, 4096},
            {"gguf/ggml-vocab-gpt-2.gguf", 3, 16, 12, 768, 12, 12, 0, 1024},
        };
        for (const auto& c : cases) {
            INFO(c.file);
            const auto path = fixture(c.file);
            HEADROOM_REQUIRE_FIXTURE(path);
            auto file = readGguf(path);
            REQUIRE(file.has_value());
            CHECK(file->version == c.version);
            CHECK(file->metadata.size() == c.kvs);
            CHECK(file->tensors.empty());
            auto model = importModel(path);
            REQUIRE(model.has_value());
            CHECK(model->tensorCount == 0);
            CHECK(model->parameters == 0);
            CHECK(model->weightsBytes.value == 0);
            REQUIRE(model->architecture.has_value());
            CHECK(model->architecture->layers == c.layers);
            CHECK(model->architecture->hiddenSize == c.hidden);
            CHECK(model->architecture->attentionHeads == c.heads);
            CHECK(model->architecture->kvHeads == c.kvHeads);
            if (c.ff)
                CHECK(model->architecture->intermediateSize == c.ff);
            if (c.context)
                CHECK(model->contextLength == c.context);
            CHECK(model->architecture->vocabSize > 0);
        }
    }
}

TEST_CASE("GGUF quantized tensors are sized by their block layout", "[importers][gguf]")
{
    GgufWriter w = smallLlama();
    const auto bytes = w.bytes();
    auto file = readGgufBytes(bytes, "small.gguf");
    REQUIRE(file.has_value());
    REQUIRE(file->tensors.size() == 4);
    // ggml-types.md: q8_0 34 B / 32, q4_0 18 B / 32, q6_K 210 B / 256, f32 4 B.
    CHECK(file->tensors[0].bytes.value == 4 * (256 / 32) * 34);
    CHECK(file->tensors[1].bytes.value == 256 * (256 / 32) * 18);
    CHECK(file->tensors[2].bytes.value == 256 * (512 / 256) * 210);
    CHECK(file->tensors[3].bytes.value == 256 * 4);
    CHECK(file->tensors[1].type == "q4_0");
    CHECK(file->tensors[2].type == "q6_K");
    CHECK(file->tensors[1].elements == 65536);
    auto arch = ggufArchitecture(*file);
    REQUIRE(arch.has_value());
    CHECK(arch->kvHeads == 2);
    CHECK(arch->headDim == 64);
    CHECK(arch->vocabSize == 4);
    CHECK(arch->tiedEmbeddings); // no output.weight tensor
}

TEST_CASE("GGUF versions 1-3 and both byte orders read the same header", "[importers][gguf]")
{
    for (std::uint32_t version : {1u, 2u, 3u}) {
        for (bool big : {false, true}) {
            INFO("version " << version << (big ? " big-endian" : ""));
            GgufWriter w;
            w.version = version;
            w.bigEndian = big;
            w.kvString("general.architecture", "llama");
            w.kvU32("llama.block_count", 2);
            w.kvU32("llama.embedding_length", 256);
            w.kvU32("llama.attention.head_count", 4);
            w.kvU32Array("llama.attention.head_count_kv", {2, 1});
            w.kvRaw("t.u8", 0, w.u8(200));
            w.kvRaw("t.u16", 2, w.u16(60000));
            w.kvRaw("t.i64", 11, w.u64(static_cast<std::uint64_t>(-5)));
            w.kvBool("t.bool", true);
            w.kvF32("t.f32", 0.5f);
            w.kvRaw("t.nested", 9, w.nestedArray(3));
            w.tensor("blk.0.attn_q.weight", {256, 256}, 12); // q4_K: 256 rows * 144
            w.tensor("output.weight", {256, 4}, 30);        // bf16
            const auto bytes = w.bytes();
            auto file = readGgufBytes(bytes, "v.gguf");
            REQUIRE(file.has_value());
            CHECK(file->version == version);
            CHECK(file->bigEndian == big);
            CHECK(file->find("t.u8")->u64 == 200);
            CHECK(file->find("t.u16")->u64 == 60000);
            CHECK(file->find("t.i64")->i64 == -5);
            CHECK(file->find("t.bool")->u64 == 1);
            CHECK(file->find("t.f32")->f64 == 0.5);
            CHECK(file->find("t.nested")->items.at(0).items.at(0).items.at(0).u64 == 7);
            CHECK(file->tensors[0].bytes.value == 256 * 144);
            CHECK(file->tensors[1].bytes.value == 256 * 4 * 2);
            auto arch = ggufArchitecture(*file);
            REQUIRE(arch.has_value());
            CHECK(arch->kvHeadsPerLayer == std::vector<std::uint32_t>{2, 1});
            CHECK(arch->kvHeads == 2);
            CHECK_FALSE(arch->tiedEmbeddings);
        }
    }
}

TEST_CASE("GGUF general.alignment pads the data section and every tensor", "[importers][gguf]")
{
    GgufWriter w;
    w.alignment = 64;
    w.kvU32("general.alignment", 64);
    w.tensor("a.weight", {32, 1}, 8); // q8_0: 34 bytes, padded to 64
    w.tensor("b.weight", {16}, 0);    // f32: 64 bytes at offset 64
    auto file = readGgufBytes(w.bytes(), "aligned.gguf");
    REQUIRE(file.has_value());
    CHECK(file->alignment == 64);
    CHECK(file->dataOffset % 64 == 0);
    CHECK(file->tensorOffsets == std::vector<std::uint64_t>{0, 64});
    CHECK(file->dataBytes == 128);
    // An offset that is not the running offset padded to 64 is refused.
    GgufWriter wrong;
    wrong.kvU32("general.alignment", 64);
    wrong.tensor("a.weight", {32, 1}, 8);
    wrong.tensor("b.weight", {16}, 0, 48);
    auto bad = readGgufBytes(wrong.bytes(), "misaligned.gguf");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == ImportErrorCode::BadTensorOffset);
    CHECK(bad.error().key == "b.weight");
}

TEST_CASE("safetensors non-parameter buffers are recognised by name", "[importers]")
{
    CHECK(isNonParameterBuffer("model.layers.0.self_attn.rotary_emb.inv_freq"));
    CHECK(isNonParameterBuffer("h.0.attn.bias"));
    CHECK(isNonParameterBuffer("transformer.h.11.attn.masked_bias"));
    CHECK_FALSE(isNonParameterBuffer("h.0.attn.c_attn.bias"));
    CHECK_FALSE(isNonParameterBuffer("model.layers.0.self_attn.q_proj.weight"));
}

TEST_CASE("GGUF split files are summed", "[importers][gguf]")
{
    GgufWriter a;
    a.kvString("general.architecture", "llama");
    a.kvU32("llama.block_count", 2);
    a.kvU32("llama.embedding_length", 256);
    a.kvU32("llama.attention.head_count", 4);
    a.kvU32("split.count", 2);
    a.tensor("token_embd.weight", {256, 10}, 1);
    GgufWriter b;
    b.kvU32("split.count", 2);
    b.kvU32("split.no", 1);
    b.tensor("output.weight", {256, 10}, 8);
    const auto first = tempPath("m-00001-of-00002.gguf");
    const auto second = tempPath("m-00002-of-00002.gguf");
    writeFile(first, a.bytes());
    writeFile(second, b.bytes());
    auto model = importModel(second); // any shard names the set
    REQUIRE(model.has_value());
    CHECK(model->tensorCount == 2);
    CHECK(model->weightsBytes.value == 256 * 10 * 2 + 10 * 8 * 34);
    CHECK(model->parameters == 2 * 2560);
    REQUIRE(model->architecture.has_value());
    CHECK_FALSE(model->architecture->tiedEmbeddings);
    std::filesystem::remove(second);
    auto missing = importModel(first);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == ImportErrorCode::FileNotFound);
    CHECK(missing.error().file.find("m-00002-of-00002.gguf") != std::string::npos);
    std::filesystem::remove(first);
}

TEST_CASE("GGUF import reads the header only: a sparse 40 GB file imports like a small one", "[importers][gguf][sparse]")
{
    // 20 f32 tensors of 32768 x 16384 = 2 GiB each: 42,949,672,960 bytes of (sparse) data.
    GgufWriter big;
    big.writeData = false;
    big.kvString("general.architecture", "llama");
    big.kvU32("llama.block_count", 20);
    big.kvU32("llama.embedding_length", 32768);
    big.kvU32("llama.attention.head_count", 64);
    for (int i = 0; i < 20; ++i)
        big.tensor("blk." + std::to_string(i) + ".ffn_up.weight", {32768, 16384}, 0);
    const auto header = big.bytes();
    const std::uint64_t total = big.dataOffset() + big.dataBytes();
    REQUIRE(big.dataBytes() == 20ull * 32768 * 16384 * 4);
    const auto path = tempPath("sparse-40GB.gguf");
    writeFile(path, header);
    REQUIRE(::truncate(path.c_str(), static_cast<off_t>(total)) == 0);
    REQUIRE(std::filesystem::file_size(path) == total);

    const auto t0 = std::chrono::steady_clock::now();
    auto model = importModel(path);
    const auto t1 = std::chrono::steady_clock::now();
    REQUIRE(model.has_value());
    CHECK(model->weightsBytes.value == 20ull * 32768 * 16384 * 4);
    CHECK(model->parameters == 20ull * 32768 * 16384);
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    INFO("import of a " << total << "-byte sparse file took " << seconds << " s");
    CHECK(seconds < 1.0); // reading 40 GB would take minutes; the header is ~2 KB

    // The same header over a 4 MB file (the tensor table then points past the end): rejected,
    // in the same time, with the tensor named.
    const auto cut = tempPath("cut.gguf");
    writeFile(cut, header);
    REQUIRE(::truncate(cut.c_str(), 4 << 20) == 0);
    auto truncated = importModel(cut);
    REQUIRE_FALSE(truncated.has_value());
    CHECK(truncated.error().code == ImportErrorCode::Truncated);
    CHECK(truncated.error().key == "blk.19.ffn_up.weight");
    std::filesystem::remove(path);
    std::filesystem::remove(cut);
    std::filesystem::remove_all(path.parent_path());
}
