// Remote imports through core's HttpClient interface with an in-memory server (no sockets): the
// GGUF header read by growing ranges, the mirror cache, offline fallbacks and the token's reach.
// The libcurl transport against a real loopback server is tested by tests/remote/remote_cli_test.py.

#include "fixtures.h"
#include "hostile.h"
#include "hostilefiles.h"

#include "headroom/core/remote/remotemodel.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace headroom;

namespace {

/// Serves files by URL with Range support; can be switched offline.
class MemoryServer final : public HttpClient {
public:
    std::map<std::string, std::string> files;
    std::map<std::string, std::uint64_t> sizes; ///< a file's real size when only its start is held
    std::vector<HttpRequest> requests;
    bool offline = false;

    tl::expected<HttpResponse, HttpError> get(const HttpRequest& r) override
    {
        requests.push_back(r);
        if (offline)
            return tl::unexpected(HttpError{HttpError::Kind::Offline, r.url + ": Could not connect to server"});
        HttpResponse resp;
        const auto it = files.find(r.url);
        if (it == files.end()) {
            resp.status = 404;
            return resp;
        }
        const std::string& f = it->second;
        if (!r.rangeBegin) {
            resp.status = 200;
            resp.body = f;
            resp.totalBytes = f.size();
            return resp;
        }
        const std::uint64_t end = std::min<std::uint64_t>(*r.rangeEnd, f.size() - 1);
        resp.status = 206;
        resp.body = f.substr(*r.rangeBegin, end - *r.rangeBegin + 1);
        resp.totalBytes = sizes.count(r.url) ? sizes[r.url] : f.size();
        if (resp.body.size() > r.maxBodyBytes)
            return tl::unexpected(HttpError{HttpError::Kind::TooLarge, "too large"});
        return resp;
    }
};

std::string slurp(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct TempCache {
    fs::path dir = fs::temp_directory_path() / ("headroom-remote-" + std::to_string(::getpid()));
    TempCache() { fs::remove_all(dir); }
    ~TempCache() { fs::remove_all(dir); }
};

} // namespace

TEST_CASE("remote arguments", "[remote]")
{
    auto hub = parseRemoteSource("hf://meta-llama/Llama-2-7b-hf@8cca527");
    REQUIRE(hub);
    CHECK(hub->kind == RemoteSource::Kind::HubRepo);
    CHECK(hub->repoId == "meta-llama/Llama-2-7b-hf");
    CHECK(hub->revision == "8cca527");
    CHECK(parseRemoteSource("Qwen/Qwen2.5-7B")->revision == "main");
    auto url = parseRemoteSource("https://example.org/m/model-Q4_K_M.gguf?download=true");
    REQUIRE(url);
    CHECK(url->kind == RemoteSource::Kind::Url);
    CHECK_FALSE(parseRemoteSource("https://example.org/m/model.bin"));
    CHECK_FALSE(parseRemoteSource("llama-3.1-8b"));
    CHECK_FALSE(parseRemoteSource("a/b/c"));
    CHECK_FALSE(parseRemoteSource("../x/y"));
}

TEST_CASE("GGUF repos: a preset after ':' and the file llama.cpp -hf would load", "[remote]")
{
    auto t = parseRemoteSource("hf://bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M");
    REQUIRE(t);
    CHECK(t->repoId == "bartowski/Qwen2.5-7B-Instruct-GGUF");
    CHECK(t->revision == "main");
    CHECK(t->ggufTag == "Q4_K_M");
    auto r = parseRemoteSource("unsloth/Qwen3-8B-GGUF@0123abc:q8_0");
    REQUIRE(r);
    CHECK(r->revision == "0123abc");
    CHECK(r->ggufTag == "q8_0");
    CHECK(parseRemoteSource("hf://Qwen/Qwen2.5-7B")->ggufTag.empty());
    CHECK_FALSE(parseRemoteSource("org/name:"));
    CHECK_FALSE(parseRemoteSource("org/name:Q4-K"));

    // common/download.cpp find_best_model (0216dab3): the preset followed by '.' or '-', any
    // case, never a projector, part 1 of a split; without a preset Q4_K_M, then Q8_0, then the first.
    const std::vector<std::string> files = {"mmproj-Qwen-Q4_K_M.gguf", "Qwen-F16.gguf", "Qwen-Q4_K_M.gguf", "Qwen-Q8_0.gguf",
                                            "Q6_K/Qwen-Q6_K-00002-of-00002.gguf", "Q6_K/Qwen-Q6_K-00001-of-00002.gguf"};
    CHECK(pickHubGguf(files, "Q4_K_M") == "Qwen-Q4_K_M.gguf");
    CHECK(pickHubGguf(files, "q6_k") == "Q6_K/Qwen-Q6_K-00001-of-00002.gguf");
    CHECK(pickHubGguf(files, "") == "Qwen-Q4_K_M.gguf");
    CHECK(pickHubGguf({"a-F16.gguf", "a-Q8_0.gguf"}, "") == "a-Q8_0.gguf");
    CHECK(pickHubGguf({"imatrix.gguf", "a-F16.gguf"}, "") == "a-F16.gguf");
    CHECK_FALSE(pickHubGguf({"a-F16.gguf"}, "Q4_K_M"));
    CHECK_FALSE(pickHubGguf({"mmproj-F16.gguf"}, ""));
    CHECK_FALSE(pickHubGguf({"a-Q4_K_M2.gguf"}, "Q4_K_M"));
}

TEST_CASE("a GGUF over HTTP: ranges grow until the header parses, never the tensor data", "[remote]")
{
    const fs::path gguf = test::fixture("gguf/stories260K.gguf");
    HEADROOM_REQUIRE_FIXTURE(gguf);
    TempCache cache;
    MemoryServer server;
    const std::string url = "https://example.org/stories260K.gguf";
    server.files[url] = slurp(gguf);
    RemoteOptions o;
    o.cacheDir = cache.dir;
    o.ggufFirstRangeBytes = 4096; // the header is 14,176 bytes: 4 KiB, then +4, +8 KiB
    o.token = "hf_secret";
    auto m = importRemoteModel(*parseRemoteSource(url), server, o);
    REQUIRE(m);
    CHECK(m->weightsBytes.value == 1'171'200);
    CHECK(m->exactWeights);
    REQUIRE(server.requests.size() == 3);
    CHECK(*server.requests[0].rangeBegin == 0);
    CHECK(*server.requests[1].rangeBegin == 4096);
    CHECK(*server.requests[2].rangeBegin == 8192);
    CHECK(*server.requests[2].rangeEnd == 16383);
    for (const HttpRequest& r : server.requests)
        CHECK(r.headers.empty()); // the token goes to the hub endpoint only
    // The mirror is a sparse file of the real length.
    const fs::path mirrored = m->path;
    CHECK(fs::file_size(mirrored) == 1'185'376);

    // A second import reads the cache, with no request.
    server.requests.clear();
    auto again = importRemoteModel(*parseRemoteSource(url), server, o);
    REQUIRE(again);
    CHECK(server.requests.empty());
    CHECK(again->weightsBytes.value == 1'171'200);
}

TEST_CASE("a hub repo: config.json and the safetensors header, with the token", "[remote]")
{
    const fs::path config = test::fixture("hf/Llama-2-7b-hf/config.json");
    HEADROOM_REQUIRE_FIXTURE(config);
    TempCache cache;
    MemoryServer server;
    RemoteOptions o;
    o.cacheDir = cache.dir;
    o.endpoint = "https://hub.example";
    o.token = "hf_secret";
    const std::string base = "https://hub.example/tiny/llama/resolve/main/";
    server.files[base + "config.json"] = slurp(config);
    // model.safetensors: one F16 tensor [32000, 4096] = 262,144,000 bytes of data after the header.
    const std::string json = R"({"lm_head.weight":{"dtype":"F16","shape":[32000,4096],"data_offsets":[0,262144000]}})";
    std::string st(8, '\0');
    for (int i = 0; i < 8; ++i)
        st[static_cast<std::size_t>(i)] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    st += json;
    server.files[base + "model.safetensors"] = st;
    server.sizes[base + "model.safetensors"] = st.size() + 262'144'000;
    auto m = importRemoteModel(*parseRemoteSource("tiny/llama"), server, o);
    REQUIRE(m);
    CHECK(m->exactWeights);
    CHECK(m->weightsBytes.value == 262'144'000);
    CHECK(m->architecture->layers == 32);
    for (const HttpRequest& r : server.requests)
        CHECK(r.headers == std::vector<std::string>{"Authorization: Bearer hf_secret"});
    REQUIRE(server.requests.size() == 4); // config, index (404), length, header
    CHECK(*server.requests[2].rangeEnd == 7);
    CHECK(*server.requests[3].rangeBegin == 8);
    CHECK(*server.requests[3].rangeEnd == 8 + json.size() - 1);
    CHECK(fs::exists(cache.dir / "hf" / "tiny--llama" / "main" / "headroom-remote.json"));
    CHECK(fs::file_size(cache.dir / "hf" / "tiny--llama" / "main" / "model.safetensors") == st.size() + 262'144'000);
}

TEST_CASE("offline: a clear error, and an older copy still answers", "[remote]")
{
    const fs::path gguf = test::fixture("gguf/stories260K.gguf");
    HEADROOM_REQUIRE_FIXTURE(gguf);
    TempCache cache;
    MemoryServer server;
    const std::string url = "https://example.org/stories260K.gguf";
    server.files[url] = slurp(gguf);
    RemoteOptions o;
    o.cacheDir = cache.dir;
    server.offline = true;
    auto none = importRemoteModel(*parseRemoteSource(url), server, o);
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("offline? models read before are in " + cache.dir.string()) != std::string::npos);

    server.offline = false;
    REQUIRE(importRemoteModel(*parseRemoteSource(url), server, o));
    server.offline = true;
    o.branchTtl = std::chrono::seconds(-1); // every copy is stale
    auto stale = importRemoteModel(*parseRemoteSource(url), server, o);
    REQUIRE(stale);
    CHECK(stale->weightsBytes.value == 1'171'200);
    CHECK(stale->warnings.back().find("the network failed") != std::string::npos);

    RemoteOptions offlineOnly = o;
    offlineOnly.offlineOnly = true;
    offlineOnly.cacheDir = cache.dir / "empty";
    auto refused = importRemoteModel(*parseRemoteSource(url), server, offlineOnly);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("HF_HUB_OFFLINE") != std::string::npos);

    // A cache under $HOME is named "~/..." (the app's Log panel and the CLI print it; a temporary
    // HOME showed as a /tmp path).
    const char* oldHome = std::getenv("HOME");
    const std::string savedHome = oldHome ? oldHome : "";
    ::setenv("HOME", (cache.dir.string() + "/").c_str(), 1);
    auto underHome = importRemoteModel(*parseRemoteSource(url), server, offlineOnly);
    if (oldHome)
        ::setenv("HOME", savedHome.c_str(), 1);
    else
        ::unsetenv("HOME");
    REQUIRE_FALSE(underHome);
    INFO(underHome.error().message);
    CHECK(underHome.error().message.find("HF_HUB_OFFLINE is set and ~/empty/url/") != std::string::npos);
    CHECK(underHome.error().message.find(cache.dir.string()) == std::string::npos);
}

TEST_CASE("a hostile cache marker (wrong types, deep nesting, a FIFO) is no usable mirror: fetched again, never an abort or a hang",
          "[remote][hostile]")
{
    TempCache cache;
    MemoryServer server;
    const std::string url = "https://example.org/small.gguf";
    const auto bytes = test::hostile::ggufSmallLlama();
    server.files[url] = std::string(bytes.begin(), bytes.end());
    RemoteOptions o;
    o.cacheDir = cache.dir;
    REQUIRE(importRemoteModel(*parseRemoteSource(url), server, o));
    fs::path marker;
    for (const auto& e : fs::recursive_directory_iterator(cache.dir))
        if (e.path().filename() == "headroom-remote.json")
            marker = e.path();
    REQUIRE(!marker.empty());
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    const std::vector<std::pair<const char*, std::string>> markers{
        {"schema_version a string", R"({"schema_version": "1", "source": 7, "commit": [], "target": {}, "fetched_unix_s": "now"})"},
        {"target a number", R"({"schema_version": 1, "source": "x", "commit": "", "target": 5, "fetched_unix_s": 0})"},
        {"nested 100,000 deep", R"({"schema_version": 1, "target": )" + deep + "}"},
        {"not JSON", "{\"schema_version\": 1,"},
        {"a FIFO", ""}};
    for (const auto& [what, text] : markers) {
        INFO(what);
        fs::remove(marker);
        if (std::string(what) == "a FIFO")
            REQUIRE(::mkfifo(marker.c_str(), 0600) == 0);
        else
            std::ofstream(marker, std::ios::binary) << text;
        const std::size_t before = server.requests.size();
        const test::BoundedRun run = test::runBounded(test::timeBound(10), [&] {
            auto m = importRemoteModel(*parseRemoteSource(url), server, o);
            return m && m->architecture && server.requests.size() > before ? 0 : 1; // fetched again
        });
        INFO(run.describe());
        REQUIRE(run.finished);
        CHECK(run.exitCode == 0);
    }
}
