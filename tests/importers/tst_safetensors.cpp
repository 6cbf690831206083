// safetensors headers and model directories: exact bytes from the headers (never the data), the
// cross-check against the index's total_size, and the header failure classes.

#include "fixtures.h"

#include <headroom/core/importers/importedmodel.h>
#include <headroom/core/importers/modeldirectory.h>
#include <headroom/core/importers/safetensors.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <unistd.h>

using namespace headroom;

namespace {

std::filesystem::path tempDir(const std::string& name)
{
    auto dir = std::filesystem::temp_directory_path() / ("headroom-st-" + std::to_string(::getpid())) / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

std::vector<std::uint8_t> withLength(const std::string& json)
{
    std::vector<std::uint8_t> out(8);
    std::uint64_t n = json.size();
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
    out.insert(out.end(), json.begin(), json.end());
    return out;
}

/// Writes header + (sparse) data of @p dataBytes.
void writeShard(const std::filesystem::path& p, const std::string& json, std::uint64_t dataBytes)
{
    auto bytes = withLength(json);
    {
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    REQUIRE(::truncate(p.c_str(), static_cast<off_t>(bytes.size() + dataBytes)) == 0);
}

ImportError rejected(const std::string& json, std::optional<std::uint64_t> data = std::nullopt)
{
    auto r = parseSafetensorsHeader(json, "bad.safetensors", data);
    REQUIRE_FALSE(r.has_value());
    INFO(toString(r.error()));
    return r.error();
}

// A 2-layer llama: embed [32,16], per layer q/k/v/o [16,16], gate/up [24,16], down [16,24],
// 2 norms [16]; final norm [16]; lm_head [32,16] (untied).
const char* kConfig = R"({"model_type":"llama","num_hidden_layers":2,"hidden_size":16,"num_attention_heads":4,
  "num_key_value_heads":4,"intermediate_size":24,"vocab_size":32,"max_position_embeddings":64,
  "torch_dtype":"bfloat16","tie_word_embeddings":false})";

} // namespace

TEST_CASE("safetensors header: exact tensor bytes from dtype and shape", "[importers][safetensors]")
{
    auto h = parseSafetensorsHeader(
        R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[8],"data_offsets":[64,96]},
            "a":{"dtype":"BF16","shape":[4,8],"data_offsets":[0,64]}})",
        "x.safetensors", 96);
    REQUIRE(h.has_value());
    REQUIRE(h->tensors.size() == 2);
    CHECK(h->tensors[0].name == "a"); // in data order
    CHECK(h->tensors[0].type == "bf16");
    CHECK(h->tensors[0].bytes.value == 64);
    CHECK(h->tensors[0].elements == 32);
    CHECK(h->tensors[1].bytes.value == 32);
    CHECK(h->metadata.at("format") == "pt");
    CHECK(h->dataBytes == 96);
}

TEST_CASE("safetensors header failure classes", "[importers][safetensors]")
{
    CHECK(rejected("{oops").code == ImportErrorCode::BadJson);
    CHECK(rejected("[]").code == ImportErrorCode::BadJson);
    CHECK(rejected(R"({"a":{"shape":[1],"data_offsets":[0,2]}})").key == "a.dtype");
    CHECK(rejected(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"a":{"dtype":"F16","shape":[1],"data_offsets":[2,4]}})").code ==
          ImportErrorCode::DuplicateKey);
    CHECK(rejected(R"({"a":{"dtype":"Q9","shape":[1],"data_offsets":[0,2]}})").code == ImportErrorCode::UnknownTensorType);
    CHECK(rejected(R"({"a":{"dtype":"F16","shape":[-1],"data_offsets":[0,2]}})").code == ImportErrorCode::BadDimension);
    CHECK(rejected(R"({"a":{"dtype":"F16","shape":[4294967296,4294967296],"data_offsets":[0,2]}})").code == ImportErrorCode::Overflow);
    CHECK(rejected(R"({"a":{"dtype":"F16","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,2]}})").code == ImportErrorCode::TooManyDimensions);
    {
        auto e = rejected(R"({"a":{"dtype":"F16","shape":[3],"data_offsets":[0,2]}})");
        CHECK(e.code == ImportErrorCode::BadTensorOffset);
        CHECK(e.key == "a.data_offsets");
        CHECK(e.message.find("expected 6") != std::string::npos);
    }
    CHECK(rejected(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"F16","shape":[1],"data_offsets":[1,3]}})").code ==
          ImportErrorCode::BadTensorOffset); // overlap
    CHECK(rejected(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[2,4]}})").code == ImportErrorCode::BadTensorOffset); // hole
    CHECK(rejected(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", 1).code == ImportErrorCode::BadTensorOffset); // past the data
    CHECK(rejected(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,2]}})").code == ImportErrorCode::WrongKeyType);
    CHECK(rejected(std::string(100, '{')).code == ImportErrorCode::NestingTooDeep);

    // The length prefix.
    auto lengthError = [](std::vector<std::uint8_t> bytes) {
        auto r = parseSafetensorsBytes(bytes, "len.safetensors");
        REQUIRE_FALSE(r.has_value());
        return r.error();
    };
    CHECK(lengthError({1, 2, 3}).code == ImportErrorCode::Truncated);
    CHECK(lengthError({0, 0, 0, 0, 0, 0, 0, 0}).code == ImportErrorCode::BadHeaderLength);
    {
        auto e = lengthError({0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, '{', '}'});
        CHECK(e.code == ImportErrorCode::BadHeaderLength);
        CHECK(e.byteOffset == 0u);
    }
}

TEST_CASE("model directory: shard headers summed and cross-checked with total_size", "[importers][safetensors]")
{
    const auto dir = tempDir("model");
    {
        std::ofstream(dir / "config.json") << kConfig;
    }
    // bf16 everywhere; one rotary buffer in f32 (a non-parameter buffer).
    auto tensorJson = [](const std::string& name, std::uint64_t rows, std::uint64_t cols, std::uint64_t& off,
                         const char* dtype = "BF16", std::uint64_t elemBytes = 2) {
        const std::uint64_t n = rows * (cols == 0 ? 1 : cols) * elemBytes;
        std::string shape = cols == 0 ? "[" + std::to_string(rows) + "]"
                                      : "[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
        std::string s = "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
                        ",\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + n) + "]}";
        off += n;
        return s;
    };
    auto vec = [&](const std::string& name, std::uint64_t n, std::uint64_t& off) {
        std::uint64_t o = off;
        std::string s = "\"" + name + "\":{\"dtype\":\"BF16\",\"shape\":[" + std::to_string(n) +
                        "],\"data_offsets\":[" + std::to_string(o) + "," + std::to_string(o + 2 * n) + "]}";
        off += 2 * n;
        return s;
    };
    std::uint64_t off1 = 0, off2 = 0;
    std::string shard1 = "{" + tensorJson("model.embed_tokens.weight", 32, 16, off1);
    std::string shard2 = "{";
    std::vector<std::pair<std::string, int>> names;
    for (int layer = 0; layer < 2; ++layer) {
        std::string& s = layer == 0 ? shard1 : shard2;
        std::uint64_t& off = layer == 0 ? off1 : off2;
        const std::string p = "model.layers." + std::to_string(layer) + ".";
        for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"})
            s += (s.size() > 1 ? "," : "") + tensorJson(p + "self_attn." + m + ".weight", 16, 16, off);
        s += "," + tensorJson(p + "mlp.gate_proj.weight", 24, 16, off);
        s += "," + tensorJson(p + "mlp.up_proj.weight", 24, 16, off);
        s += "," + tensorJson(p + "mlp.down_proj.weight", 16, 24, off);
        s += "," + vec(p + "input_layernorm.weight", 16, off);
        s += "," + vec(p + "post_attention_layernorm.weight", 16, off);
        s += "," + tensorJson(p + "self_attn.rotary_emb.inv_freq", 2, 0, off, "F32", 4);
    }
    shard2 += "," + vec("model.norm.weight", 16, off2);
    shard2 += "," + tensorJson("lm_head.weight", 32, 16, off2);
    shard1 += "}";
    shard2 += "}";
    writeShard(dir / "model-00001-of-00002.safetensors", shard1, off1);
    writeShard(dir / "model-00002-of-00002.safetensors", shard2, off2);
    const std::uint64_t params = 32 * 16 * 2 + 2 * (4 * 256 + 3 * 384 + 32) + 16;
    const std::uint64_t buffers = 2 * 2 * 4;
    REQUIRE(off1 + off2 == params * 2 + buffers);

    // The index: weight_map from the shard headers, total_size as written.
    auto writeIndex = [&](std::uint64_t total) {
        std::string map;
        for (auto [json, shard] : {std::pair{shard1, 1}, std::pair{shard2, 2}}) {
            auto j = parseSafetensorsHeader(json);
            REQUIRE(j.has_value());
            for (const auto& t : j->tensors)
                map += (map.empty() ? "" : ",") + std::string("\"") + t.name + "\":\"model-0000" +
                       std::to_string(shard) + "-of-00002.safetensors\"";
        }
        std::ofstream(dir / "model.safetensors.index.json")
            << R"({"metadata":{"total_size":)" << total << R"(},"weight_map":{)" << map << "}}";
    };
    writeIndex(params * 2 + buffers);
    auto model = importModel(dir);
    REQUIRE(model.has_value());
    CHECK(model->format == "safetensors");
    CHECK(model->exactWeights);
    CHECK(model->tensorCount == 23);
    CHECK(model->parameters == params);           // inv_freq buffers are not parameters
    CHECK(model->weightsBytes.value == params * 2 + buffers);
    CHECK(model->bytesByType.at("bf16").value == params * 2);
    CHECK(model->bytesByType.at("f32").value == buffers);
    CHECK(model->warnings.empty());
    REQUIRE(model->architecture.has_value());
    CHECK(model->architecture->layers == 2);

    // A total_size that disagrees is reported as a warning naming both numbers.
    writeIndex(params * 2 + buffers + 100);
    model = importModel(dir / "model.safetensors.index.json");
    REQUIRE(model.has_value());
    REQUIRE(model->warnings.size() == 1);
    CHECK(model->warnings[0].find("total_size") != std::string::npos);
    CHECK(model->warnings[0].find("difference -100") != std::string::npos);

    // One shard missing: bytes from total_size, parameters from config.json.
    writeIndex(params * 2 + buffers);
    std::filesystem::remove(dir / "model-00002-of-00002.safetensors");
    model = importModel(dir);
    REQUIRE(model.has_value());
    CHECK(model->weightsBytes.value == params * 2 + buffers);
    CHECK(model->tensorCount == 23);
    CHECK_FALSE(model->warnings.empty());

    // A single shard file on its own.
    auto one = importModel(dir / "model-00001-of-00002.safetensors");
    REQUIRE(one.has_value());
    CHECK(one->weightsBytes.value == off1);
    std::filesystem::remove_all(dir);
}

TEST_CASE("fixture directories import from their index", "[importers][safetensors]")
{
    const auto dir = headroom::test::fixture("hf/Mixtral-8x7B-v0.1");
    HEADROOM_REQUIRE_FIXTURE(dir);
    auto model = importModel(dir);
    REQUIRE(model.has_value());
    CHECK(model->weightsBytes.value == 93405585408ull); // SOURCES.md total_size
    CHECK(model->tensorCount == 995);
    CHECK(model->contextLength == 32768);
}

TEST_CASE("importModel refuses what it cannot read", "[importers]")
{
    auto missing = importModel("/nonexistent/model.gguf");
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == ImportErrorCode::FileNotFound);
    const auto dir = tempDir("other");
    std::ofstream(dir / "notes.txt") << "hello";
    auto other = importModel(dir / "notes.txt");
    REQUIRE_FALSE(other.has_value());
    CHECK(other.error().code == ImportErrorCode::UnsupportedFormat);
    auto empty = importModel(tempDir("empty"));
    REQUIRE_FALSE(empty.has_value());
    CHECK(empty.error().code == ImportErrorCode::FileNotFound);
    std::filesystem::remove_all(dir.parent_path());
}

TEST_CASE("llama.cpp's containers before GGUF say what they are and which block layouts they hold", "[importers][legacy]")
{
    // Magics as the little-endian u32 a 2023 file starts with (convert_llama_ggml_to_gguf.py
    // GGMLFormat): 'ggjt' 0x67676a74 is the bytes "tjgg", then the u32 version.
    const auto dir = tempDir("legacy");
    const auto write = [&](const std::string& name, const std::string& magic, std::uint32_t version) {
        std::ofstream out(dir / name, std::ios::binary);
        out << magic;
        for (int i = 0; i < 4; ++i)
            out.put(static_cast<char>((version >> (8 * i)) & 0xFF));
        out << std::string(64, '\0');
        return dir / name;
    };
    const auto v2 = importModel(write("ggml-model-q4_1.bin", "tjgg", 2));
    REQUIRE_FALSE(v2);
    CHECK(v2.error().code == ImportErrorCode::UnsupportedFormat);
    CHECK(v2.error().message.find("a GGJT v2 file, llama.cpp's model format before GGUF (2023)") == 0);
    CHECK(v2.error().message.find("20, 24 and 36 bytes per 32 values against today's 18, 20 and 34") != std::string::npos);
    // Renamed .gguf: the magic decides, not the name.
    const auto renamed = importModel(write("model.gguf", "tjgg", 1));
    REQUIRE_FALSE(renamed);
    CHECK(renamed.error().message.find("a GGJT v1 file") == 0);
    const auto v3 = importModel(write("v3.bin", "tjgg", 3));
    REQUIRE_FALSE(v3);
    CHECK(v3.error().message.find("its blocks are today's") != std::string::npos);
    CHECK(v3.error().message.find("convert_llama_ggml_to_gguf.py") != std::string::npos);
    const auto ggmf = importModel(write("old.bin", "fmgg", 1));
    REQUIRE_FALSE(ggmf);
    CHECK(ggmf.error().message.find("a GGMF v1 file") == 0);
    const auto ggml = importModel(write("oldest.bin", "lmgg", 0));
    REQUIRE_FALSE(ggml);
    CHECK(ggml.error().message.find("a GGML file") == 0);
    // A file too short for its version is still named by its magic.
    std::ofstream(dir / "short.bin", std::ios::binary) << "tjgg";
    const auto shortFile = importModel(dir / "short.bin");
    REQUIRE_FALSE(shortFile);
    CHECK(shortFile.error().message.find("a GGJT file") == 0);
    std::filesystem::remove_all(dir.parent_path());
}
