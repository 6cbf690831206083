// Built-in profiles (profiles/): counts, published facts, the user overlay, and one test per
// failure class, each of which must name the file and the key.

#include "fixtures.h"

#include "headroom/core/card.h"
#include "headroom/core/enginepolicy.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/parameters.h"
#include "headroom/core/profiles.h"

// Private core helper (nlohmann is PRIVATE to headroom_core; the test links headroom::json).
#include "../../core/src/architecturejson.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace headroom;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path builtinDir() { return test::sourcePath("profiles"); }

/// A fresh folder under the system temp dir, removed at scope exit.
class TempDir {
public:
    TempDir()
    {
        static std::atomic<int> counter{0};
        m_path = fs::temp_directory_path()
            / ("headroom-profiles-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(m_path);
        fs::create_directories(m_path);
    }
    ~TempDir()
    {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

json readJson(const fs::path& file)
{
    std::ifstream in(file);
    return json::parse(in);
}

void writeText(const fs::path& file, const std::string& text)
{
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

void writeJson(const fs::path& file, const json& j) { writeText(file, j.dump(2)); }

ProfileSet loadBuiltin()
{
    auto set = loadProfiles(builtinDir());
    INFO((set ? std::string() : toString(set.error())));
    REQUIRE(set);
    return *set;
}

/// Loads with @p user as overlay: the bad user file is skipped (the load succeeds) and its
/// error is the one warning; returns it.
ProfileError expectError(const fs::path& user)
{
    auto set = loadProfiles(builtinDir(), user);
    REQUIRE(set);
    REQUIRE(set->warnings.size() == 1);
    INFO(toString(set->warnings.front()));
    return set->warnings.front();
}

KvDtype fp16() { return *findKvDtype("fp16"); }

} // namespace

TEST_CASE("built-in profiles load and have every required entry", "[profiles]")
{
    const ProfileSet set = loadBuiltin();
    CHECK(set.models.size() >= 15);
    CHECK(set.cards.size() == 39);
    CHECK(set.engines.size() == 19); // six engines; vLLM V0, V1 to 0.16 and 0.21 on, SGLang 0.4, TGI 1.0/1.2/1.4/2.0/2.4/3.0/3.1, TensorRT-LLM 0.x and Ollama v0.5 estimator profiles

    for (const char* id : {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "mistral-7b",
                           "mixtral-8x7b", "qwen2.5-0.5b", "qwen2.5-7b", "qwen2.5-32b", "gemma-2-9b", "phi-3-mini-4k",
                           "deepseek-v2-lite", "qwen3-8b", "command-r", "llama-3.2-3b", "gemma-2b"}) {
        INFO(id);
        const ModelProfile* m = set.findModel(id);
        REQUIRE(m);
        CHECK(m->architecture.has_value());
        CHECK_FALSE(m->source.empty());
        CHECK((m->defaultFormat == "bf16" || m->defaultFormat == "fp16"));
    }
    for (const char* id : {"rtx-4060", "rtx-3060-12gb", "rtx-4060-ti-16gb", "rtx-4080", "rtx-3090", "rtx-4090", "l4",
                           "a10", "rtx-5090", "l40s", "a100-80gb", "h100-sxm", "h200"}) {
        INFO(id);
        const Card* c = set.findCard(id);
        REQUIRE(c);
        CHECK(c->bandwidthGBps > 0);
        CHECK(c->fp16Tflops > 0);
        CHECK(c->l2Bytes.value > 0);
        CHECK_FALSE(c->anonymous);
        CHECK_FALSE(c->source.empty());
    }
    for (const char* id : {"vllm", "llama.cpp", "sglang", "tgi", "tensorrt-llm", "ollama"}) {
        INFO(id);
        const EnginePolicy* e = set.findEngine(id);
        REQUIRE(e);
        CHECK(e->id == id);
        CHECK(std::string(engineKindName(e->kind)) == id);
        CHECK_FALSE(e->source.empty());
    }
    // What a user reads is public: a model names its Hugging Face config.json; no profile prints
    // our fixtures, the shared reference folder or the BRIEF (issue 10); those go in "notes".
    for (const auto& m : set.models) {
        INFO(m.id << ": " << m.source);
        CHECK(m.source.rfind("https://huggingface.co/", 0) == 0);
        CHECK(m.source.size() > std::string("https://huggingface.co//blob/main/config.json").size());
        CHECK(m.source.find("/blob/main/config.json") == m.source.size() - std::string("/blob/main/config.json").size());
    }
    const auto internal = [](const std::string& text) {
        for (const char* word : {"fixture", "shared/", "BRIEF", "HEADROOM_FIXTURES"})
            if (text.find(word) != std::string::npos)
                return true;
        return false;
    };
    for (const auto& c : set.cards) {
        INFO(c.id << ": " << c.source);
        CHECK_FALSE(internal(c.source));
    }
    for (const auto& e : set.engines) {
        INFO(e.id << ": " << e.source);
        CHECK_FALSE(internal(e.source));
    }
    CHECK(set.findModel("no-such-model") == nullptr);
    CHECK(set.findCard("no-such-card") == nullptr);
    CHECK(set.findEngine("no-such-engine") == nullptr);
}

TEST_CASE("card profiles store the driver-reported Linux totals of gpus.md", "[profiles]")
{
    const ProfileSet set = loadBuiltin();
    // gpus.md §3.1 / §6.4: bytes = MiB x 1,048,576.
    CHECK(set.findCard("rtx-4090")->totalBytes.value == 25'386'024'960);  // 24,210 MiB
    CHECK(set.findCard("h200")->totalBytes.value == 150'109'880'320);
    CHECK(set.findCard("rtx-4060-ti-16gb")->totalBytes.value == 16'718'495'744); // 15,944 MiB
    CHECK(set.findCard("rtx-3090")->totalBytes.value == 25'294'798'848);  // lower end, 24,123 MiB
    CHECK(set.findCard("rtx-4060")->totalBytes.value == 8'360'296'448);   // 8 GB class, 7,973 MiB
    CHECK(set.findCard("a10")->totalBytes.value == 23'835'181'056);       // 22,731 MiB, ECC on
    CHECK(set.findCard("l40s")->totalBytes.value == 47'675'604'992);      // 45,467 MiB, ECC on
    CHECK(set.findCard("a100-80gb")->totalBytes.value == 85'092'990'976); // 81,151 MiB
    CHECK(set.findCard("h100-sxm")->totalBytes.value == 85'019'590'656);  // 81,081 MiB
    CHECK(set.findCard("rtx-5090")->totalBytes.value == 33'668'726'784);  // 32,109 MiB
    CHECK(set.findCard("rtx-4090")->bandwidthGBps == Approx(1008));
    CHECK(set.findCard("rtx-4090")->memoryClass == "24 GB");
    CHECK(set.findCard("rtx-4090")->l2Bytes.value == 72 * kMiB);
    // Every total lies below its marketing size: drivers report less than the class.
    for (const Card& c : set.cards) {
        INFO(c.id);
        const auto classGb = std::stoull(c.memoryClass);
        CHECK(c.totalBytes.value < classGb * kGiB);
        CHECK(c.totalBytes.value > classGb * kGiB * 85 / 100);
        CHECK((c.totalBytes.value % kMiB == 0 || c.id == "h200"));
    }
}

TEST_CASE("model profiles carry the published shapes", "[profiles]")
{
    const ProfileSet set = loadBuiltin();

    const Architecture& q = *set.findModel("qwen2.5-0.5b")->architecture;
    CHECK(q.layers == 24);
    CHECK(q.attentionHeads == 14);
    CHECK(q.kvHeads == 2);
    CHECK(q.headDim == 64);
    CHECK(q.tiedEmbeddings);
    CHECK(q.qkvBias);
    // BRIEF §1.1: 12,288 B/token in fp16.
    CHECK(kvLayout(q, fp16()).bytesPerToken().value == 12'288);

    const Architecture& l = *set.findModel("llama-3.1-8b")->architecture;
    CHECK(l.layers == 32);
    CHECK(l.kvHeads == 8);
    CHECK(l.headDim == 128);
    CHECK(kvLayout(l, fp16()).bytesPerToken().value == 131'072);
    CHECK(kvLayout(*set.findModel("llama-2-13b")->architecture, fp16()).bytesPerToken().value == 819'200);

    const Architecture& g = *set.findModel("gemma-2-9b")->architecture;
    CHECK(g.headDim == 256);
    CHECK(g.normsPerLayer == 4);
    CHECK(g.tiedEmbeddings);
    REQUIRE(g.sliding.enabled());
    CHECK(g.sliding.windowTokens == 4096);
    // pattern [true, false] expanded over 42 layers: even layers slide.
    REQUIRE(g.sliding.slidingLayers.size() == 42);
    for (std::uint32_t i = 0; i < 42; ++i)
        CHECK(g.sliding.isSliding(i) == (i % 2 == 0));

    const Architecture& mistral = *set.findModel("mistral-7b")->architecture;
    CHECK(mistral.sliding.windowTokens == 4096);
    CHECK(mistral.sliding.slidingLayers.empty()); // every layer slides
    CHECK(mistral.sliding.isSliding(31));

    const Architecture& d = *set.findModel("deepseek-v2-lite")->architecture;
    CHECK(d.mla.kvLoraRank == 512);
    CHECK(d.mla.qkRopeHeadDim == 64);
    CHECK(d.mla.qLoraRank == 0);
    CHECK(d.moe.expertCount == 64);
    CHECK(d.moe.sharedExperts == 2);
    CHECK(d.moe.expertsPerToken == 6);
    CHECK(d.moe.expertFfnSize == 1408);
    CHECK(d.moe.denseFirstLayers == 1);

    const Architecture& mix = *set.findModel("mixtral-8x7b")->architecture;
    CHECK(mix.moe.expertCount == 8);
    CHECK(mix.moe.expertsPerToken == 2);
    CHECK_FALSE(mix.sliding.enabled());

    const Architecture& c = *set.findModel("command-r")->architecture;
    CHECK(c.layers == 40);
    CHECK(c.hiddenSize == 8192);
    CHECK(c.kvHeads == 64);
    CHECK(c.intermediateSize == 22528);
    CHECK(c.vocabSize == 256000);
    CHECK(c.tiedEmbeddings);

    const Architecture& q3 = *set.findModel("qwen3-8b")->architecture;
    CHECK(q3.layers == 36);
    CHECK(q3.qkNorm);
    CHECK_FALSE(q3.tiedEmbeddings);
}

TEST_CASE("every architecture counts its published parameters within 1%", "[profiles][parameters]")
{
    const ProfileSet set = loadBuiltin();
    for (const ModelProfile& m : set.models) {
        INFO(m.id);
        const json doc = readJson(builtinDir() / "models" / (m.id + ".json"));
        if (!doc.contains("published_parameters"))
            continue;
        const auto published = doc.at("published_parameters").get<std::uint64_t>();
        REQUIRE(m.publishedParameters == published);
        const std::uint64_t counted = parameterCount(*m.architecture);
        INFO("counted " << counted << ", published " << published);
        CHECK(std::fabs(static_cast<double>(counted) - static_cast<double>(published))
              <= 0.01 * static_cast<double>(published));
    }
    // Exact where the published count is exact (safetensors totals).
    CHECK(parameterCount(*set.findModel("qwen2.5-0.5b")->architecture) == 494'032'768);
    CHECK(parameterCount(*set.findModel("llama-2-7b")->architecture) == 6'738'415'616);
    CHECK(parameterCount(*set.findModel("gemma-2-9b")->architecture) == 9'241'705'984);
}

TEST_CASE("engine policies follow engines.md", "[profiles]")
{
    const ProfileSet set = loadBuiltin();
    const EnginePolicy& vllm = *set.findEngine("vllm");
    CHECK(vllm.kind == EngineKind::Vllm);
    CHECK(vllm.memoryFraction == Approx(0.9));
    CHECK(vllm.blockTokens == 16);
    CHECK(vllm.flashAttention);

    const EnginePolicy& llama = *set.findEngine("llama.cpp");
    CHECK(llama.kind == EngineKind::LlamaCpp);
    CHECK(llama.fixedReserve.value == 1024 * kMiB);
    CHECK(llama.cellPaddingFlash == 256);
    CHECK(llama.cellPaddingNoFlash == 32);
    CHECK(llama.minContextTokens == 4096);
    CHECK(llama.ubatchTokens == 512);
    CHECK(llama.memoryFraction == Approx(1.0));

    CHECK(set.findEngine("ollama")->fixedReserve.value == 457 * kMiB);
    CHECK(set.findEngine("ollama")->cellPaddingFlash == 256);
    CHECK(set.findEngine("sglang")->memoryFraction == 0); // computed by the rule
    CHECK(set.findEngine("tgi")->memoryFraction == Approx(0.9));
    CHECK(set.findEngine("tgi")->blockTokens == 16);
    CHECK(set.findEngine("tensorrt-llm")->memoryFraction == Approx(0.9));
    CHECK(set.findEngine("tensorrt-llm")->blockTokens == 32);
}

TEST_CASE("engine kinds, the flat reserve and anonymous cards", "[profiles]")
{
    for (EngineKind kind : {EngineKind::Vllm, EngineKind::LlamaCpp, EngineKind::SgLang, EngineKind::Tgi,
                            EngineKind::TensorRtLlm, EngineKind::Ollama, EngineKind::Flat}) {
        EngineKind parsed = EngineKind::Flat;
        REQUIRE(parseEngineKind(engineKindName(kind), parsed));
        CHECK(parsed == kind);
    }
    EngineKind unused = EngineKind::Vllm;
    CHECK_FALSE(parseEngineKind("VLLM", unused));
    CHECK_FALSE(parseEngineKind("", unused));
    CHECK(unused == EngineKind::Vllm);

    const EnginePolicy flat = flatReservePolicy(Bytes{3 * kGiB / 2});
    CHECK(flat.id == "flat");
    CHECK(flat.name == "Flat reserve");
    CHECK(flat.kind == EngineKind::Flat);
    CHECK(flat.fixedReserve.value == 1'610'612'736);
    CHECK(flat.runtimeBytes.value == 0);
    CHECK(flat.workspaceBytes.value == 0);
    CHECK(flat.cudaGraphBytes.value == 0);
    CHECK(flat.fragmentationFraction == 0);
    CHECK(flat.minContextTokens == 0);

    const auto size = parseSize("8GiB");
    REQUIRE(size);
    const Card card = anonymousCard("8GiB", *size);
    CHECK(card.anonymous);
    CHECK(card.id == "8GiB");
    CHECK(card.totalBytes.value == 8'589'934'592);
    CHECK(card.bandwidthGBps == 0);
    CHECK_FALSE(card.name.empty());
}

TEST_CASE("a user folder overlays the built-in profiles", "[profiles]")
{
    TempDir user;
    json card = readJson(builtinDir() / "cards" / "rtx-4090.json");
    card["total_bytes"] = 25'000'000'000ull;
    card["total_note"] = "measured on my desktop with a display attached";
    writeJson(user.path() / "cards" / "my-4090.json", card); // the id decides, not the file name
    json extra = readJson(builtinDir() / "cards" / "rtx-4060.json");
    extra["id"] = "my-card";
    extra["name"] = "My card";
    extra["total_bytes"] = 4 * kGiB;
    writeJson(user.path() / "cards" / "my-card.json", extra);
    writeText(user.path() / "cards" / "README.txt", "not a profile"); // ignored

    auto set = loadProfiles(builtinDir(), user.path());
    INFO((set ? std::string() : toString(set.error())));
    REQUIRE(set);
    CHECK(set->cards.size() == loadBuiltin().cards.size() + 1);
    CHECK(set->findCard("rtx-4090")->totalBytes.value == 25'000'000'000);
    CHECK(set->findCard("my-card")->totalBytes.value == 4 * kGiB);
    CHECK(set->findCard("h200")->totalBytes.value == 150'109'880'320);
    CHECK(set->models.size() == loadBuiltin().models.size());

    // A missing user folder is not an error.
    auto missing = loadProfiles(builtinDir(), user.path() / "does-not-exist");
    CHECK(missing);
}

TEST_CASE("architecture JSON round-trips", "[profiles]")
{
    const ProfileSet set = loadBuiltin();
    for (const ModelProfile& m : set.models) {
        INFO(m.id);
        const Architecture& a = *m.architecture;
        const json j = architectureToJson(a);
        Architecture back;
        std::string key;
        std::string message;
        REQUIRE(architectureFromJson(j, back, key, message));
        CHECK(architectureToJson(back) == j);
        CHECK(back.sliding.slidingLayers == a.sliding.slidingLayers);
        // The file's architecture object is what architectureToJson writes (up to key order).
        CHECK(j == readJson(builtinDir() / "models" / (m.id + ".json")).at("architecture"));
    }

    Architecture a = *set.findModel("llama-3.1-8b")->architecture;
    a.sliding.windowTokens = 1024;
    a.sliding.slidingLayers.assign(a.layers, true);
    a.sliding.slidingLayers[31] = false; // no period shorter than 32
    const json j = architectureToJson(a);
    CHECK(j["sliding_window"]["layers"].size() == 32);
    Architecture back;
    std::string key;
    std::string message;
    REQUIRE(architectureFromJson(j, back, key, message));
    CHECK(back.sliding.slidingLayers == a.sliding.slidingLayers);

    json bad = j;
    bad["sliding_window"]["layers"].erase(0);
    CHECK_FALSE(architectureFromJson(bad, back, key, message));
    CHECK(key == "/sliding_window/layers");
    bad = j;
    bad["layers"] = -1;
    CHECK_FALSE(architectureFromJson(bad, back, key, message));
    CHECK(key == "/layers");
    bad = j;
    bad["colour"] = "blue";
    CHECK_FALSE(architectureFromJson(bad, back, key, message));
    CHECK(key == "/colour");
}

TEST_CASE("profile errors name the file, the key and the problem", "[profiles]")
{
    const json model = readJson(builtinDir() / "models" / "llama-3.1-8b.json");
    TempDir user;
    const fs::path file = user.path() / "models" / "broken.json";

    SECTION("invalid JSON")
    {
        writeText(file, "{ \"schema_version\": 1, \"id\": ");
        const ProfileError e = expectError(user.path());
        CHECK(e.file == file.string());
        CHECK(e.key.empty());
        CHECK_THAT(e.message, Catch::Contains("invalid JSON"));
        CHECK_THAT(toString(e), Catch::StartsWith(file.string() + ": invalid JSON"));
    }
    SECTION("missing key")
    {
        json j = model;
        j["architecture"].erase("kv_heads");
        writeJson(file, j);
        const ProfileError e = expectError(user.path());
        CHECK(e.file == file.string());
        CHECK(e.key == "/architecture/kv_heads");
        CHECK_THAT(e.message, Catch::Contains("missing"));
        CHECK(toString(e) == file.string() + ": /architecture/kv_heads: " + e.message);
    }
    SECTION("missing top-level key")
    {
        json j = model;
        j.erase("source");
        writeJson(file, j);
        const ProfileError e = expectError(user.path());
        CHECK(e.file == file.string());
        CHECK(e.key == "/source");
    }
    SECTION("wrong type")
    {
        json j = model;
        j["architecture"]["layers"] = "32";
        writeJson(file, j);
        const ProfileError e = expectError(user.path());
        CHECK(e.file == file.string());
        CHECK(e.key == "/architecture/layers");
        CHECK_THAT(e.message, Catch::Contains("integer") && Catch::Contains("\"32\""));
    }
    SECTION("value out of range")
    {
        json j = model;
        j["architecture"]["norm"] = "batchnorm";
        writeJson(file, j);
        const ProfileError e = expectError(user.path());
        CHECK(e.key == "/architecture/norm");
        CHECK_THAT(e.message, Catch::Contains("rmsnorm") && Catch::Contains("batchnorm"));
    }
    SECTION("unknown key")
    {
        json j = model;
        j["architecture"]["num_experts"] = 8;
        writeJson(file, j);
        const ProfileError e = expectError(user.path());
        CHECK(e.key == "/architecture/num_experts");
        CHECK_THAT(e.message, Catch::Contains("unknown key"));
    }
    SECTION("schema_version 2")
    {
        json j = model;
        j["schema_version"] = 2;
        writeJson(file, j);
        const ProfileError e = expectError(user.path());
        CHECK(e.file == file.string());
        CHECK(e.key == "/schema_version");
        CHECK_THAT(e.message, Catch::Contains("schema_version 2") && Catch::Contains("schema_version 1"));
    }
    SECTION("duplicate id in one folder")
    {
        writeJson(user.path() / "models" / "a.json", model);
        writeJson(user.path() / "models" / "b.json", model);
        const ProfileError e = expectError(user.path());
        CHECK(e.file == (user.path() / "models" / "b.json").string());
        CHECK(e.key == "/id");
        CHECK_THAT(e.message, Catch::Contains("duplicate id \"llama-3.1-8b\"") && Catch::Contains("a.json"));
    }
    SECTION("architecture the formulas reject")
    {
        json j = model;
        j["architecture"]["kv_heads"] = 3; // does not divide 32 query heads
        writeJson(file, j);
        const ProfileError e = expectError(user.path());
        CHECK(e.key == "/architecture");
        CHECK_THAT(e.message, Catch::Contains("kv_heads 3"));
    }
    SECTION("sliding_window pattern and layers together")
    {
        json j = model;
        j["architecture"]["sliding_window"] = {{"window_tokens", 4096}, {"pattern", {true}}, {"layers", {true}}};
        writeJson(file, j);
        const ProfileError e = expectError(user.path());
        CHECK(e.key == "/architecture/sliding_window");
    }
    SECTION("a malformed card names its file")
    {
        json card = readJson(builtinDir() / "cards" / "rtx-4090.json");
        card["total_bytes"] = -5;
        const fs::path cardFile = user.path() / "cards" / "bad-card.json";
        writeJson(cardFile, card);
        const ProfileError e = expectError(user.path());
        CHECK(e.file == cardFile.string());
        CHECK(e.key == "/total_bytes");
    }
    SECTION("an unknown interconnect of a card names the key and the links (core/interconnect.h)")
    {
        json card = readJson(builtinDir() / "cards" / "rtx-4090.json");
        card["interconnect"] = "infiniband";
        writeJson(user.path() / "cards" / "bad-link.json", card);
        const ProfileError e = expectError(user.path());
        CHECK(e.key == "/interconnect");
        CHECK(e.message.find("pcie-p2p") != std::string::npos);
        CHECK(e.message.find("infiniband") != std::string::npos);
    }
    SECTION("an unknown engine kind")
    {
        json engine = readJson(builtinDir() / "engines" / "vllm.json");
        engine["kind"] = "triton";
        writeJson(user.path() / "engines" / "x.json", engine);
        const ProfileError e = expectError(user.path());
        CHECK(e.key == "/kind");
    }
}

TEST_CASE("a broken built-in folder is refused", "[profiles]")
{
    TempDir dir;
    auto missing = loadProfiles(dir.path() / "nowhere");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().file == (dir.path() / "nowhere").string());

    fs::create_directories(dir.path() / "models");
    auto noSchemas = loadProfiles(dir.path());
    REQUIRE_FALSE(noSchemas);
    CHECK_THAT(noSchemas.error().file, Catch::EndsWith("model.schema.json"));
}

TEST_CASE("default profile folders", "[profiles]")
{
    TempDir dir;
    const fs::path exe = dir.path() / "prefix" / "bin" / "headroom";
    ::unsetenv("HEADROOM_PROFILES");
    // Nothing next to the executable: the source folder compiled into core.
    CHECK(fs::equivalent(defaultProfilesDir(exe), builtinDir()));
    // An installed tree wins.
    fs::create_directories(dir.path() / "prefix" / "share" / "headroom" / "profiles");
    CHECK(defaultProfilesDir(exe) == (dir.path() / "prefix" / "share" / "headroom" / "profiles"));
    ::setenv("HEADROOM_PROFILES", "/opt/profiles", 1);
    CHECK(defaultProfilesDir(exe) == fs::path("/opt/profiles"));
    ::unsetenv("HEADROOM_PROFILES");

    ::setenv("HEADROOM_USER_PROFILES", "/tmp/user-profiles", 1);
    CHECK(defaultUserProfilesDir() == fs::path("/tmp/user-profiles"));
    ::unsetenv("HEADROOM_USER_PROFILES");
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    const std::string savedXdg = xdg ? xdg : "";
    ::setenv("XDG_CONFIG_HOME", "/tmp/xdg", 1);
    CHECK(defaultUserProfilesDir() == fs::path("/tmp/xdg/headroom/profiles"));
    if (savedXdg.empty())
        ::unsetenv("XDG_CONFIG_HOME");
    else
        ::setenv("XDG_CONFIG_HOME", savedXdg.c_str(), 1);
}
