// The local model stores (hub cache, Ollama, LM Studio, any folder), built in a temporary home
// folder from the shared fixtures the way each tool lays them out (symlinks in the hub cache).

#include "fixtures.h"

#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "headroom/core/stores/localstores.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace headroom;

namespace {

constexpr const char* kLlamaRevision = "8cca527612d856d7d32bd94f8103728d614eb852"; // HF meta-llama/Llama-2-7b-hf (SOURCES.md)
const std::string kModelDigest = "sha256:" + std::string(64, 'a');
const std::string kProjectorDigest = "sha256:" + std::string(63, 'b') + "c";

void writeText(const fs::path& p, const std::string& text)
{
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

/// A temporary home folder holding the three stores, removed at the end of the test.
class TempHome {
public:
    TempHome()
        : m_root(fs::temp_directory_path() / ("headroom-stores-" + std::to_string(::getpid()) + "-" + std::to_string(s_count++)))
    {
        fs::remove_all(m_root);
        fs::create_directories(m_root);
    }
    ~TempHome() { fs::remove_all(m_root); }
    const fs::path& path() const { return m_root; }
    fs::path hubCache() const { return m_root / ".cache" / "huggingface" / "hub"; }
    fs::path ollama() const { return m_root / ".ollama" / "models"; }
    fs::path lmStudio() const { return m_root / ".lmstudio" / "models"; }

    /// models--meta-llama--Llama-2-7b-hf as huggingface_hub writes it: blobs, refs/main, and a
    /// snapshot of relative symlinks into ../../blobs.
    void addHubRepo()
    {
        const fs::path repo = hubCache() / "models--meta-llama--Llama-2-7b-hf";
        fs::create_directories(repo / "blobs");
        fs::copy_file(test::fixture("hf/Llama-2-7b-hf/config.json"), repo / "blobs" / std::string(40, '1'));
        fs::copy_file(test::fixture("hf/Llama-2-7b-hf/model.safetensors.index.json"), repo / "blobs" / std::string(40, '2'));
        writeText(repo / "refs" / "main", kLlamaRevision);
        const fs::path snap = repo / "snapshots" / kLlamaRevision;
        fs::create_directories(snap);
        fs::create_symlink(fs::path("../../blobs") / std::string(40, '1'), snap / "config.json");
        fs::create_symlink(fs::path("../../blobs") / std::string(40, '2'), snap / "model.safetensors.index.json");
        // An older snapshot of the same repo with the config only (no branch points at it).
        const fs::path old = repo / "snapshots" / std::string(40, 'f');
        fs::create_directories(old);
        fs::create_symlink(fs::path("../../blobs") / std::string(40, '1'), old / "config.json");
        // A dataset beside it is not a model.
        fs::create_directories(hubCache() / "datasets--org--data" / "snapshots" / std::string(40, '3'));
    }

    /// An Ollama store: a GGUF model blob and a projector blob named by a v2 manifest.
    void addOllamaModel(const std::string& manifestText = {})
    {
        fs::create_directories(ollama() / "blobs");
        fs::copy_file(test::fixture("gguf/stories260K.gguf"), ollama() / "blobs" / ("sha256-" + kModelDigest.substr(7)));
        // Stand-in projector: any GGUF file; the real ones are general.architecture "clip".
        fs::copy_file(test::fixture("gguf/llama-2-tiny-random.gguf"), ollama() / "blobs" / ("sha256-" + kProjectorDigest.substr(7)));
        const std::string manifest = manifestText.empty() ? R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
 "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" + std::string(64, 'd') + R"(","size":485},
 "layers":[{"mediaType":"application/vnd.ollama.image.model","digest":")" + kModelDigest + R"(","size":1185376},
  {"mediaType":"application/vnd.ollama.image.projector","digest":")" + kProjectorDigest + R"(","size":1750560},
  {"mediaType":"application/vnd.ollama.image.template","digest":"sha256:)" + std::string(64, 'e') + R"(","size":358}]})"
                                                            : manifestText;
        writeText(ollama() / "manifests" / "registry.ollama.ai" / "library" / "stories" / "260k", manifest);
    }

    /// LM Studio: PUBLISHER/REPO/model.gguf with an mmproj file beside it.
    void addLmStudioModel()
    {
        const fs::path repo = lmStudio() / "ggml-org" / "stories260K-GGUF";
        fs::create_directories(repo);
        fs::copy_file(test::fixture("gguf/stories260K.gguf"), repo / "stories260K.gguf");
        fs::copy_file(test::fixture("gguf/llama-2-tiny-random.gguf"), repo / "mmproj-stories260K-f16.gguf");
    }

    EnvLookup env(std::map<std::string, std::string> extra = {}) const
    {
        extra.emplace("HOME", m_root.string());
        return [extra](const char* name) {
            const auto it = extra.find(name);
            return it == extra.end() ? std::string() : it->second;
        };
    }

private:
    fs::path m_root;
    static inline int s_count = 0;
};

bool fixturesPresent()
{
    return fs::exists(test::fixture("hf/Llama-2-7b-hf/config.json")) && fs::exists(test::fixture("gguf/stories260K.gguf")) &&
           fs::exists(test::fixture("gguf/llama-2-tiny-random.gguf"));
}

#define REQUIRE_STORE_FIXTURES()                                                                  \
    do {                                                                                          \
        if (!fixturesPresent()) {                                                                 \
            WARN("SKIPPED: fixtures not found below " << HEADROOM_FIXTURES_DIR                   \
                                                      << " (set HEADROOM_FIXTURES_DIR)");        \
            return;                                                                               \
        }                                                                                         \
    } while (false)

} // namespace

TEST_CASE("the standard store locations come from the environment", "[stores]")
{
    TempHome home;
    fs::create_directories(home.hubCache());
    fs::create_directories(home.ollama());
    fs::create_directories(home.lmStudio());
    const LocalStoreRoots roots = defaultLocalStoreRoots(home.env());
    REQUIRE(roots.hubCaches == std::vector<fs::path>{home.hubCache()});
    REQUIRE(roots.ollama == std::vector<fs::path>{home.ollama()});
    REQUIRE(roots.lmStudio == std::vector<fs::path>{home.lmStudio()});

    // HF_HUB_CACHE wins over HF_HOME, which wins over ~/.cache; OLLAMA_MODELS over ~/.ollama.
    const fs::path other = home.path() / "elsewhere";
    fs::create_directories(other / "hub");
    CHECK(defaultLocalStoreRoots(home.env({{"HF_HOME", other.string()}})).hubCaches == std::vector<fs::path>{other / "hub"});
    CHECK(defaultLocalStoreRoots(home.env({{"HF_HUB_CACHE", other.string()}, {"HF_HOME", "/nonexistent"}})).hubCaches ==
          std::vector<fs::path>{other});
    CHECK(defaultLocalStoreRoots(home.env({{"OLLAMA_MODELS", other.string()}})).ollama == std::vector<fs::path>{other});
    // Folders that do not exist are not returned.
    CHECK(defaultLocalStoreRoots(home.env({{"OLLAMA_MODELS", (other / "absent").string()}})).ollama.empty());
}

TEST_CASE("the hub cache lists each snapshot with its exact bytes", "[stores][hf-cache]")
{
    REQUIRE_STORE_FIXTURES();
    TempHome home;
    home.addHubRepo();
    const auto models = scanHubCache(home.hubCache());
    REQUIRE(models.size() == 2);
    // Snapshots sort by commit: 8cca... before ffff....
    const LocalModel& m = models[0];
    CHECK(m.store == LocalStoreKind::HubCache);
    CHECK(m.name == "meta-llama/Llama-2-7b-hf");
    CHECK(m.revision == kLlamaRevision);
    CHECK(m.refs == std::vector<std::string>{"main"});
    REQUIRE(m.model);
    CHECK(m.model->exactWeights);
    CHECK(m.model->weightsBytes.value == 13'476'839'424ull); // the index's metadata.total_size
    CHECK(m.model->architecture->layers == 32);
    // The config-only snapshot is priced from its architecture: not exact.
    REQUIRE(models[1].model);
    CHECK(models[1].refs.empty());
    CHECK_FALSE(models[1].model->exactWeights);
}

TEST_CASE("a repo id resolves through the hub cache at a branch, a commit or a prefix", "[stores][hf-cache]")
{
    REQUIRE_STORE_FIXTURES();
    TempHome home;
    home.addHubRepo();
    const fs::path snap = home.hubCache() / "models--meta-llama--Llama-2-7b-hf" / "snapshots" / kLlamaRevision;
    CHECK(findInHubCache(home.hubCache(), "meta-llama/Llama-2-7b-hf") == snap);
    CHECK(findInHubCache(home.hubCache(), "meta-llama/Llama-2-7b-hf", "main") == snap);
    CHECK(findInHubCache(home.hubCache(), "meta-llama/Llama-2-7b-hf", kLlamaRevision) == snap);
    CHECK(findInHubCache(home.hubCache(), "meta-llama/Llama-2-7b-hf", "8cca527") == snap);
    CHECK(findInHubCache(home.hubCache(), "meta-llama/Llama-2-7b-hf", "ffffffff")->filename() == std::string(40, 'f'));
    CHECK_FALSE(findInHubCache(home.hubCache(), "meta-llama/Llama-2-7b-hf", "8cc")); // too short to be a commit
    CHECK_FALSE(findInHubCache(home.hubCache(), "meta-llama/Llama-2-7b-hf", "dev"));
    CHECK_FALSE(findInHubCache(home.hubCache(), "meta-llama/Llama-2-13b-hf"));
    CHECK_FALSE(findInHubCache(home.hubCache(), "../models--meta-llama--Llama-2-7b-hf"));

    // -m ORG/NAME through resolveModel reads the cache named by HF_HUB_CACHE.
    ::setenv("HF_HUB_CACHE", home.hubCache().c_str(), 1);
    ProfileSet none;
    auto profile = resolveModel("meta-llama/Llama-2-7b-hf", none);
    auto atRevision = resolveModel("meta-llama/Llama-2-7b-hf@8cca527", none);
    ::unsetenv("HF_HUB_CACHE");
    REQUIRE(profile);
    REQUIRE(profile->exactWeights);
    CHECK(profile->exactWeights->totalBytes.value == 13'476'839'424ull);
    CHECK(profile->name == "meta-llama/Llama-2-7b-hf");
    CHECK(profile->source.find(std::string("hf-cache meta-llama/Llama-2-7b-hf@") + kLlamaRevision) != std::string::npos);
    REQUIRE(atRevision);
    CHECK(atRevision->exactWeights->totalBytes.value == 13'476'839'424ull);
}

namespace {

/// stories260K planned with the stand-in projector: its tensors and the projector's 1,026,144
/// bytes as type "mmproj", and a warning that says @p said.
void checkProjectorCounted(const tl::expected<ModelProfile, std::string>& model, const std::string& said)
{
    REQUIRE(model.has_value());
    REQUIRE(model->exactWeights);
    CHECK(model->exactWeights->totalBytes.value == 1'171'200 + 1'026'144);
    CHECK(model->exactWeights->bytesByType.at("mmproj").value == 1'026'144);
    CHECK(std::any_of(model->warnings.begin(), model->warnings.end(),
                      [&](const std::string& w) { return w.find(said) != std::string::npos; }));
}

} // namespace

TEST_CASE("Ollama manifests name the GGUF blob and the projector", "[stores][ollama]")
{
    REQUIRE_STORE_FIXTURES();
    TempHome home;
    home.addOllamaModel();
    const auto models = scanOllamaStore(home.ollama());
    REQUIRE(models.size() == 1);
    const LocalModel& m = models[0];
    CHECK(m.store == LocalStoreKind::Ollama);
    CHECK(m.name == "stories:260k");
    CHECK(m.revision == "aaaaaaaaaaaa");
    CHECK(m.path == home.ollama() / "blobs" / ("sha256-" + std::string(64, 'a')));
    REQUIRE(m.model);
    CHECK(m.model->format == "gguf");
    CHECK(m.model->weightsBytes.value == 1'171'200); // 48 f32 tensors of stories260K
    CHECK(m.projectorBytes.value == 1'026'144);      // the tensor table of the projector blob
    CHECK(m.warnings.empty());
    // Picked, the projector is planned with the model, not only listed: Ollama loads both.
    const auto profile = localModelProfile(m);
    REQUIRE(profile);
    REQUIRE(profile->exactWeights);
    CHECK(profile->exactWeights->totalBytes.value == 1'171'200 + 1'026'144);
    CHECK(profile->exactWeights->bytesByType.at("mmproj").value == 1'026'144);
    CHECK(profile->source.find("+ projector") != std::string::npos);
}

TEST_CASE("an LM Studio pick and a hub-cache GGUF pick plan the mmproj beside the model", "[stores][lm-studio]")
{
    REQUIRE_STORE_FIXTURES();
    TempHome home;
    home.addLmStudioModel();
    const auto models = scanLmStudio(home.lmStudio());
    REQUIRE(models.size() == 1);
    const auto profile = localModelProfile(models[0]);
    REQUIRE(profile);
    CHECK(profile->exactWeights->bytesByType.at("mmproj").value == 1'026'144);

    // ORG/NAME:TAG from the hub cache: the GGUF llama.cpp -hf picks and the repo's mmproj.
    const fs::path repo = home.hubCache() / "models--ggml-org--stories260K-GGUF";
    fs::create_directories(repo / "refs");
    writeText(repo / "refs" / "main", std::string(40, '4'));
    const fs::path snap = repo / "snapshots" / std::string(40, '4');
    fs::create_directories(snap);
    fs::copy_file(test::fixture("gguf/stories260K.gguf"), snap / "stories260K-F32.gguf");
    fs::copy_file(test::fixture("gguf/llama-2-tiny-random.gguf"), snap / "mmproj-stories260K-f16.gguf");
    ::setenv("HF_HUB_CACHE", home.hubCache().c_str(), 1);
    auto picked = resolveModel("ggml-org/stories260K-GGUF:F32", ProfileSet{});
    ::unsetenv("HF_HUB_CACHE");
    REQUIRE(picked);
    REQUIRE(picked->exactWeights);
    CHECK(picked->exactWeights->totalBytes.value == 1'171'200 + 1'026'144);
    CHECK(picked->exactWeights->bytesByType.at("mmproj").value == 1'026'144);
}

TEST_CASE("a damaged Ollama store gives errors per model, not a failed listing", "[stores][ollama]")
{
    REQUIRE_STORE_FIXTURES();
    SECTION("a digest that is not sha256 hex")
    {
        TempHome home;
        home.addOllamaModel(R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:../../etc/passwd","size":1}]})");
        const auto models = scanOllamaStore(home.ollama());
        REQUIRE(models.size() == 1);
        REQUIRE(models[0].error);
        CHECK(models[0].error->code == ImportErrorCode::BadValue);
        CHECK(models[0].error->key == "digest");
    }
    SECTION("not JSON")
    {
        TempHome home;
        home.addOllamaModel("{\"schemaVersion\":2,\"layers\":[");
        const auto models = scanOllamaStore(home.ollama());
        REQUIRE(models.size() == 1);
        REQUIRE(models[0].error);
        CHECK(models[0].error->code == ImportErrorCode::BadJson);
    }
    SECTION("a manifest of another version")
    {
        TempHome home;
        home.addOllamaModel(R"({"schemaVersion":1,"layers":[]})");
        const auto models = scanOllamaStore(home.ollama());
        REQUIRE(models.size() == 1);
        REQUIRE(models[0].error);
        CHECK(models[0].error->code == ImportErrorCode::UnsupportedVersion);
    }
    SECTION("a blob whose size differs from the manifest")
    {
        TempHome home;
        home.addOllamaModel(R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":")" +
                            kModelDigest + R"(","size":99}]})");
        const auto models = scanOllamaStore(home.ollama());
        REQUIRE(models.size() == 1);
        REQUIRE(models[0].model);
        REQUIRE(models[0].warnings.size() == 1);
        CHECK(models[0].warnings[0].find("is 1185376 bytes; the manifest says 99") != std::string::npos);
    }
    SECTION("a missing blob")
    {
        TempHome home;
        home.addOllamaModel(R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
                            std::string(64, '0') + R"(","size":99}]})");
        const auto models = scanOllamaStore(home.ollama());
        REQUIRE(models.size() == 1);
        REQUIRE(models[0].error);
        CHECK(models[0].error->code == ImportErrorCode::FileNotFound);
    }
}

TEST_CASE("LM Studio lists PUBLISHER/REPO/FILE.gguf with its mmproj", "[stores][lm-studio]")
{
    REQUIRE_STORE_FIXTURES();
    TempHome home;
    home.addLmStudioModel();
    const auto models = scanLmStudio(home.lmStudio());
    REQUIRE(models.size() == 1); // the mmproj file is the projector, not a model
    CHECK(models[0].name == "ggml-org/stories260K-GGUF/stories260K.gguf");
    REQUIRE(models[0].model);
    CHECK(models[0].model->weightsBytes.value == 1'171'200);
    CHECK(models[0].projectorPath.filename() == "mmproj-stories260K-f16.gguf");
    CHECK(models[0].projectorBytes.value == 1'026'144);
}

TEST_CASE("a GGUF model planned by path counts the mmproj projector beside it", "[stores][lm-studio]")
{
    REQUIRE_STORE_FIXTURES();
    TempHome home;
    home.addLmStudioModel();
    const fs::path repo = home.lmStudio() / "ggml-org" / "stories260K-GGUF";
    auto model = resolveModel((repo / "stories260K.gguf").string(), ProfileSet{});
    // The model's tensor table plus the projector's (llama.cpp --mmproj loads both).
    checkProjectorCounted(model, "mmproj-stories260K-f16.gguf");
    // The projector planned by itself is not paired with itself.
    CHECK(projectorBeside(repo / "mmproj-stories260K-f16.gguf").empty());
    // Without a projector in the folder the weights are the file's own.
    fs::remove(repo / "mmproj-stories260K-f16.gguf");
    auto alone = resolveModel((repo / "stories260K.gguf").string(), ProfileSet{});
    REQUIRE(alone.has_value());
    CHECK(alone->exactWeights->totalBytes.value == 1'171'200);
}

TEST_CASE("every store of a home folder, and any folder given", "[stores]")
{
    REQUIRE_STORE_FIXTURES();
    TempHome home;
    home.addHubRepo();
    home.addOllamaModel();
    home.addLmStudioModel();
    LocalStoreRoots roots = defaultLocalStoreRoots(home.env());
    roots.folders.push_back(test::fixture("hf"));
    const auto models = findLocalModels(roots);
    std::map<LocalStoreKind, int> count;
    for (const LocalModel& m : models)
        ++count[m.store];
    CHECK(count[LocalStoreKind::HubCache] == 2);
    CHECK(count[LocalStoreKind::Ollama] == 1);
    CHECK(count[LocalStoreKind::LmStudio] == 1);
    // Every model directory of the fixtures (each has a config.json).
    std::size_t dirs = 0;
    for (const auto& e : fs::directory_iterator(test::fixture("hf")))
        dirs += fs::exists(e.path() / "config.json");
    CHECK(static_cast<std::size_t>(count[LocalStoreKind::Folder]) == dirs);
    for (const LocalModel& m : models)
        if (m.store == LocalStoreKind::Folder && m.path.filename() == "Mistral-7B-v0.1")
            CHECK(m.model->weightsBytes.value == 14'483'464'192ull);
}

TEST_CASE("a GGUF repository in the hub cache lists each model file", "[stores][hf-cache]")
{
    REQUIRE_STORE_FIXTURES();
    TempHome home;
    const fs::path repo = home.hubCache() / "models--ggml-org--stories260K-GGUF";
    fs::create_directories(repo / "blobs");
    fs::copy_file(test::fixture("gguf/stories260K.gguf"), repo / "blobs" / std::string(64, '4'));
    const fs::path snap = repo / "snapshots" / std::string(40, '5');
    fs::create_directories(snap);
    fs::create_symlink(fs::path("../../blobs") / std::string(64, '4'), snap / "stories260K-f32.gguf");
    fs::create_symlink(fs::path("../../blobs") / std::string(64, '4'), snap / "stories260K-00002-of-00002.gguf");
    const auto models = scanHubCache(home.hubCache());
    REQUIRE(models.size() == 1); // the later shard of a split set is not a model of its own
    CHECK(models[0].name == "ggml-org/stories260K-GGUF/stories260K-f32.gguf");
    CHECK(models[0].revision == std::string(40, '5'));
    REQUIRE(models[0].model);
    CHECK(models[0].model->weightsBytes.value == 1'171'200);
}
