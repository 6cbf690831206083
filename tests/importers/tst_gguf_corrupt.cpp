// The corrupt-file suite (STYLE.md §7): one file per failure class, written by the test-only
// GgufWriter; each is rejected with its own code and a message naming the offset or key.

#include "importers/ggufwriter.h"

#include <headroom/core/importers/ggufreader.h>

#include <catch2/catch.hpp>

using namespace headroom;
using headroom::test::GgufWriter;

namespace {

GgufWriter valid()
{
    GgufWriter w;
    w.kvString("general.architecture", "llama");
    w.kvU32("llama.block_count", 1);
    w.kvU32("llama.embedding_length", 64);
    w.kvU32("llama.attention.head_count", 2);
    w.tensor("a.weight", {64, 2}, 0);
    w.tensor("b.weight", {64, 2}, 8);
    return w;
}

ImportError rejected(const std::vector<std::uint8_t>& bytes)
{
    auto r = readGgufBytes(bytes, "corrupt.gguf");
    REQUIRE_FALSE(r.has_value());
    INFO(toString(r.error()));
    CHECK(r.error().file == "corrupt.gguf");
    CHECK_FALSE(r.error().message.empty());
    return r.error();
}

} // namespace

TEST_CASE("the valid base file of the corrupt suite reads", "[importers][gguf][corrupt]")
{
    auto r = readGgufBytes(valid().bytes(), "valid.gguf");
    REQUIRE(r.has_value());
    CHECK(r->tensors.size() == 2);
}

TEST_CASE("GGUF corrupt files: one per failure class", "[importers][gguf][corrupt]")
{
    SECTION("bad magic")
    {
        GgufWriter w = valid();
        w.magic = "GGUX";
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::BadMagic);
        CHECK(e.byteOffset == 0u);
        CHECK(e.message.find("GGUX") != std::string::npos);
    }
    SECTION("unsupported version")
    {
        GgufWriter w = valid();
        w.version = 4;
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::UnsupportedVersion);
        CHECK(e.byteOffset == 4u);
        CHECK(e.message.find("version 4") != std::string::npos);
        CHECK(e.message.find("1 to 3") != std::string::npos);
    }
    SECTION("truncated inside the tensor infos")
    {
        auto bytes = valid().header();
        bytes.resize(bytes.size() - 3);
        auto e = rejected(bytes);
        CHECK(e.code == ImportErrorCode::Truncated);
        CHECK(e.key == "b.weight");
        CHECK(e.byteOffset == bytes.size() - 5); // the 8-byte offset field starts 5 bytes before the cut
    }
    SECTION("tensor data past the end of the file")
    {
        auto bytes = valid().bytes();
        bytes.resize(bytes.size() - 1);
        auto e = rejected(bytes);
        CHECK(e.code == ImportErrorCode::Truncated);
        CHECK(e.key == "b.weight");
    }
    SECTION("KV count larger than the file can hold")
    {
        GgufWriter w = valid();
        w.kvCountOverride = 1ull << 40;
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::CountTooLarge);
        CHECK(e.byteOffset == 16u);
    }
    SECTION("tensor count larger than the file can hold")
    {
        GgufWriter w = valid();
        w.tensorCountOverride = ~0ull;
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::CountTooLarge);
        CHECK(e.byteOffset == 8u);
    }
    SECTION("array count larger than the bytes remaining")
    {
        GgufWriter w = valid();
        auto p = w.u32(4);
        auto n = w.u64(1ull << 61);
        p.insert(p.end(), n.begin(), n.end());
        w.kvRaw("huge.array", 9, p);
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::CountTooLarge);
        CHECK(e.key == "huge.array");
        REQUIRE(e.byteOffset.has_value());
    }
    SECTION("string length larger than the bytes remaining")
    {
        GgufWriter w = valid();
        w.kvRaw("long.string", 8, w.u64(1ull << 62));
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::StringTooLong);
        CHECK(e.key == "long.string");
    }
    SECTION("bad value type")
    {
        GgufWriter w = valid();
        w.kvRaw("odd.type", 88, w.u32(0)); // hyllama's test: "Unsupported metadata type: 88"
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::BadValueType);
        CHECK(e.key == "odd.type");
        CHECK(e.message.find("88") != std::string::npos);
    }
    SECTION("bad array element type")
    {
        GgufWriter w = valid();
        auto p = w.u32(13);
        auto n = w.u64(0);
        p.insert(p.end(), n.begin(), n.end());
        w.kvRaw("odd.array", 9, p);
        CHECK(rejected(w.bytes()).code == ImportErrorCode::BadValueType);
    }
    SECTION("duplicate key")
    {
        GgufWriter w = valid();
        w.kvU32("llama.block_count", 2);
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::DuplicateKey);
        CHECK(e.key == "llama.block_count");
        REQUIRE(e.byteOffset.has_value());
    }
    SECTION("wrong key type")
    {
        GgufWriter w = valid();
        w.kvString("llama.context_length", "4096");
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::WrongKeyType);
        CHECK(e.key == "llama.context_length");
        CHECK(e.message.find("integer") != std::string::npos);
        CHECK(e.message.find("string") != std::string::npos);
    }
    SECTION("general.alignment of the wrong type")
    {
        GgufWriter w = valid();
        w.kvU64("general.alignment", 64);
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::WrongKeyType);
        CHECK(e.key == "general.alignment");
    }
    SECTION("non-power-of-two alignment")
    {
        GgufWriter w = valid();
        w.kvU32("general.alignment", 48);
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::BadAlignment);
        CHECK(e.key == "general.alignment");
        CHECK(e.message.find("48") != std::string::npos);
    }
    SECTION("zero alignment")
    {
        GgufWriter w = valid();
        w.kvU32("general.alignment", 0);
        CHECK(rejected(w.bytes()).code == ImportErrorCode::BadAlignment);
    }
    SECTION("too many dimensions")
    {
        GgufWriter w = valid();
        w.tensor("c.weight", {1, 1, 1, 1, 1}, 0);
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::TooManyDimensions);
        CHECK(e.key == "c.weight");
    }
    SECTION("negative (absurd) dimension")
    {
        GgufWriter w = valid();
        w.tensor("c.weight", {32, 1ull << 63}, 0);
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::BadDimension);
        CHECK(e.key == "c.weight");
    }
    SECTION("row not a multiple of the block size")
    {
        GgufWriter w = valid();
        w.tensor("c.weight", {33, 2}, 2); // q4_0 blocks of 32
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::BadDimension);
        CHECK(e.message.find("32") != std::string::npos);
    }
    SECTION("removed tensor type: cannot size")
    {
        GgufWriter w = valid();
        w.tensor("c.weight", {32, 2}, 4); // Q4_2, removed
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::UnknownTensorType);
        CHECK(e.key == "c.weight");
        CHECK(e.message.find("cannot size") != std::string::npos);
    }
    SECTION("unknown tensor type: cannot size")
    {
        GgufWriter w = valid();
        w.tensor("c.weight", {32, 2}, 43); // past GGML_TYPE_COUNT (a fork's TURBO3_0)
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::UnknownTensorType);
        CHECK(e.message.find("43") != std::string::npos);
    }
    SECTION("element count overflow")
    {
        GgufWriter w = valid();
        w.tensor("c.weight", {1ull << 32, 1ull << 32}, 0);
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::Overflow);
        CHECK(e.key == "c.weight");
    }
    SECTION("nesting too deep")
    {
        GgufWriter w = valid();
        w.kvRaw("deep.array", 9, w.nestedArray(static_cast<int>(kGgufMaxNesting) + 1));
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::NestingTooDeep);
        CHECK(e.key == "deep.array");
    }
    SECTION("misplaced tensor offset")
    {
        GgufWriter w;
        w.tensor("a.weight", {64, 2}, 0);
        w.tensor("b.weight", {64, 2}, 0, 8); // not the running offset 512, not aligned
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::BadTensorOffset);
        CHECK(e.key == "b.weight");
        CHECK(e.message.find("expected 512") != std::string::npos);
    }
    SECTION("duplicate tensor name")
    {
        GgufWriter w;
        w.tensor("a.weight", {64, 2}, 0);
        w.tensor("a.weight", {64, 2}, 0);
        auto e = rejected(w.bytes());
        CHECK(e.code == ImportErrorCode::DuplicateTensor);
        CHECK(e.key == "a.weight");
    }
    SECTION("an empty input")
    {
        CHECK(rejected({}).code == ImportErrorCode::Truncated);
    }
}

TEST_CASE("every truncation of a valid file is rejected cleanly", "[importers][gguf][corrupt]")
{
    GgufWriter w = valid();
    w.kvStringArray("tokenizer.ggml.tokens", {"a", "bb", "ccc"});
    w.kvRaw("nested", 9, w.nestedArray(2));
    const auto bytes = w.bytes();
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        auto r = readGgufBytes(cut, "cut.gguf");
        INFO("cut at " << n);
        REQUIRE_FALSE(r.has_value());
        // a cut inside a string or an array shows as a length past the bytes remaining
        const auto code = r.error().code;
        CHECK((code == ImportErrorCode::Truncated || code == ImportErrorCode::StringTooLong ||
               code == ImportErrorCode::CountTooLarge));
    }
}
