#include "headroom/core/remote/remotemodel.h"

#include "headroom/core/atomicfile.h"
#include "headroom/core/importers/ggufreader.h"
#include "headroom/core/importers/modeldirectory.h"
#include "headroom/core/importers/safetensors.h"
#include "headroom/core/resolve.h"

#include "importers/importutil.h"
#include "importers/jsonutil.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <set>

namespace headroom {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarkerFile = "headroom-remote.json";

std::string env(const char* name)
{
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

// @p dir as printed to the user: under $HOME as "~/..." (the same folder, without the machine's
// home path; a temporary HOME would otherwise show as a /tmp path).
std::string shownDir(const fs::path& dir)
{
    const std::string text = dir.string();
    std::string home = env("HOME");
    while (home.size() > 1 && home.ends_with('/'))
        home.pop_back();
    if (home.size() > 1 && text.size() > home.size() && text.starts_with(home) && text[home.size()] == '/')
        return "~" + text.substr(home.size());
    return text;
}

bool isCommit(const std::string& rev)
{
    return rev.size() == 40 && std::all_of(rev.begin(), rev.end(), [](unsigned char c) { return std::isxdigit(c); });
}

/// One file of a mirror: its URL, real size, and the bytes read from its start.
struct MirrorFile {
    std::string name;
    std::string url;
    std::uint64_t totalBytes = 0;
    std::string head;     ///< the first head.size() bytes of the file
    bool whole = false;   ///< head is the whole file
};

class Fetcher {
public:
    Fetcher(HttpClient& http, const RemoteOptions& options) : m_http(http), m_options(options) {}

    /// GET of a whole small file; 404 gives nullopt.
    tl::expected<std::optional<HttpResponse>, RemoteError> whole(const std::string& url, std::uint64_t maxBytes)
    {
        HttpRequest r = request(url);
        r.maxBodyBytes = maxBytes;
        auto resp = send(r);
        if (!resp)
            return tl::unexpected(resp.error());
        if (resp->status == 404)
            return std::optional<HttpResponse>();
        if (resp->status != 200)
            return tl::unexpected(statusError(url, *resp));
        return std::optional<HttpResponse>(std::move(*resp));
    }

    /// Bytes [begin, begin + count) of @p url; the file's total size goes to @p total.
    tl::expected<std::string, RemoteError> range(const std::string& url, std::uint64_t begin, std::uint64_t count,
                                                 std::uint64_t& total)
    {
        HttpRequest r = request(url);
        r.rangeBegin = begin;
        r.rangeEnd = begin + count - 1;
        r.maxBodyBytes = count;
        auto resp = send(r);
        if (!resp)
            return tl::unexpected(resp.error());
        if (resp->status == 200) {
            // A server that ignores Range sends the whole file: fine only when that is all there is.
            if (begin == 0 && resp->body.size() <= count && resp->totalBytes && *resp->totalBytes == resp->body.size()) {
                total = resp->body.size();
                return std::move(resp->body);
            }
            return tl::unexpected(RemoteError{url + ": the server ignored the Range request (HTTP 200 for bytes " +
                                                  std::to_string(begin) + "-" + std::to_string(begin + count - 1) + ")",
                                              std::nullopt});
        }
        if (resp->status != 206)
            return tl::unexpected(statusError(url, *resp));
        if (!resp->totalBytes)
            return tl::unexpected(RemoteError{url + ": HTTP 206 without the file's size in Content-Range", std::nullopt});
        total = *resp->totalBytes;
        const std::uint64_t expected = begin >= total ? 0 : std::min(count, total - begin);
        if (resp->body.size() != expected)
            return tl::unexpected(RemoteError{url + ": asked for bytes " + std::to_string(begin) + "-" +
                                                  std::to_string(begin + count - 1) + " of " + std::to_string(total) +
                                                  ", received " + std::to_string(resp->body.size()) + " bytes, expected " +
                                                  std::to_string(expected),
                                              std::nullopt});
        return std::move(resp->body);
    }

private:
    HttpRequest request(const std::string& url) const
    {
        HttpRequest r;
        r.url = url;
        // The token goes to the hub only, never to another host a URL names.
        if (!m_options.token.empty() && url.starts_with(m_options.endpoint + "/"))
            r.headers.push_back("Authorization: Bearer " + m_options.token);
        return r;
    }

    tl::expected<HttpResponse, RemoteError> send(const HttpRequest& r)
    {
        auto resp = m_http.get(r);
        if (!resp) {
            std::string hint;
            if (resp.error().kind == HttpError::Kind::Offline)
                hint = " (offline? models read before are in " + shownDir(m_options.cacheDir) + ")";
            return tl::unexpected(RemoteError{resp.error().message + hint, std::nullopt});
        }
        return std::move(*resp);
    }

    static RemoteError statusError(const std::string& url, const HttpResponse& resp)
    {
        std::string why;
        if (resp.status == 401 || resp.status == 403)
            why = ": the repo is gated or private: accept its licence on the hub and set HF_TOKEN";
        else if (resp.status == 404)
            why = ": no such repo, revision or file";
        else if (resp.status == 429)
            why = ": rate limited: try again later, or set HF_TOKEN";
        return RemoteError{url + ": HTTP " + std::to_string(resp.status) + why, std::nullopt};
    }

    HttpClient& m_http;
    const RemoteOptions& m_options;
};

std::string safeName(const std::string& s)
{
    std::string out;
    for (char c : s)
        out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
    if (out.empty() || out == "." || out == "..")
        out = "_";
    return out;
}

fs::path mirrorDir(const RemoteSource& source, const RemoteOptions& options)
{
    if (source.kind == RemoteSource::Kind::HubRepo) {
        std::string repo;
        for (char c : source.repoId)
            repo += c == '/' ? std::string("--") : std::string(1, c); // as the hub cache names repos
        return options.cacheDir / "hf" / safeName(repo) / safeName(source.revision + (source.ggufTag.empty() ? "" : ":" + source.ggufTag));
    }
    return options.cacheDir / "url" / hashHex(fnv1a64(source.url.data(), source.url.size()));
}

std::string urlFileName(const std::string& url)
{
    std::string path = url.substr(0, url.find_first_of("?#"));
    std::string name = safeName(path.substr(path.rfind('/') + 1));
    if (!name.ends_with(".gguf"))
        name += ".gguf";
    return name;
}

/// "PREFIX-0000k-of-0000N.gguf" (llama.cpp llama_split_path "%s-%05d-of-%05d.gguf") split into
/// (PREFIX, k, N); k = N = 1 for any other name.
struct SplitName {
    std::string prefix;
    unsigned index = 1;
    unsigned count = 1;
};

SplitName splitName(const std::string& path)
{
    static const std::regex re(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)", std::regex::icase);
    std::smatch m;
    if (!std::regex_match(path, m, re))
        return {path, 1, 1};
    return {m[1].str(), static_cast<unsigned>(std::stoul(m[2].str())), static_cast<unsigned>(std::stoul(m[3].str()))};
}

std::string partName(const std::string& prefix, unsigned index, unsigned count)
{
    char b[32];
    std::snprintf(b, sizeof b, "-%05u-of-%05u.gguf", index, count);
    return prefix + b;
}

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

bool isModelGguf(const std::string& path)
{
    if (!lower(path).ends_with(".gguf"))
        return false;
    const std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    for (const char* sidecar : {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"})
        if (name.find(sidecar) != std::string::npos)
            return false;
    return true;
}

/// The most a mirror's marker may hold, bytes (it names a few files; ours are a few KiB).
constexpr std::uint64_t kMaxMarkerBytes = 1u << 20;

/// A usable cached mirror: complete (marker present) and fresh for a branch or URL. The marker is
/// read as untrusted (the cache folder is the user's to edit): opened once and checked through
/// its descriptor (a regular file, at most kMaxMarkerBytes; never a FIFO, a device), nesting
/// bounded, each field the type we wrote; anything else is no usable mirror (it is fetched again).
std::optional<nlohmann::json> cachedMarker(const fs::path& dir, bool acceptStale, std::chrono::seconds ttl, bool isCommitRev)
{
    const fs::path file = dir / kMarkerFile;
    auto text = importers::readSmallFile(file, kMaxMarkerBytes);
    if (!text)
        return std::nullopt;
    auto parsed = importers::parseJson(*text, file.string());
    if (!parsed || !parsed->is_object())
        return std::nullopt;
    nlohmann::json j = std::move(*parsed);
    const auto is = [&](const char* key, nlohmann::json::value_t type) {
        const auto it = j.find(key);
        return it != j.end() && (it->type() == type || (type == nlohmann::json::value_t::number_integer && it->is_number_unsigned()));
    };
    using T = nlohmann::json::value_t;
    if (!is("schema_version", T::number_unsigned) || j["schema_version"].get<std::uint64_t>() != 1 || !is("fetched_unix_s", T::number_integer)
        || !is("source", T::string) || !is("commit", T::string) || !is("target", T::string))
        return std::nullopt;
    if (!acceptStale && !isCommitRev) {
        const auto fetched = j["fetched_unix_s"].get<std::int64_t>();
        const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
        if (fetched > now || now - fetched > ttl.count())
            return std::nullopt;
    }
    return j;
}

/// Writes the mirror into a temporary folder beside @p dir, then renames it into place.
tl::expected<void, RemoteError> writeMirror(const fs::path& dir, const std::vector<MirrorFile>& files, const nlohmann::json& marker)
{
    std::error_code ec;
    fs::create_directories(dir.parent_path(), ec);
    std::random_device rd;
    const fs::path tmp = dir.parent_path() / (".tmp-" + dir.filename().string() + "-" + std::to_string(rd()));
    fs::create_directories(tmp, ec);
    if (ec)
        return tl::unexpected(RemoteError{"cannot create the cache folder " + tmp.string() + ": " + ec.message(), std::nullopt});
    auto fail = [&](const std::string& what) {
        fs::remove_all(tmp, ec);
        return tl::unexpected(RemoteError{what, std::nullopt});
    };
    for (const MirrorFile& f : files) {
        const fs::path p = tmp / f.name;
        {
            std::ofstream out(p, std::ios::binary);
            out.write(f.head.data(), static_cast<std::streamsize>(f.head.size()));
            if (!out)
                return fail("cannot write " + p.string());
        }
        // The rest of a weights file is a hole of its real length: never read, no disk used.
        if (!f.whole) {
            fs::resize_file(p, f.totalBytes, ec);
            if (ec)
                return fail("cannot size " + p.string() + ": " + ec.message());
        }
    }
    if (auto w = writeFileAtomically(tmp / kMarkerFile, marker.dump(2)); !w)
        return fail(w.error());
    fs::remove_all(dir, ec);
    fs::rename(tmp, dir, ec);
    if (ec)
        return fail("cannot move the mirror into " + dir.string() + ": " + ec.message());
    return {};
}

std::string targetOf(const std::vector<MirrorFile>& files)
{
    for (const MirrorFile& f : files)
        if (lower(f.name).ends_with(".gguf"))
            return f.name; // the first part: splits are fetched in order
    return "";
}

nlohmann::json markerFor(const RemoteSource& source, const std::string& commit, const std::vector<MirrorFile>& files)
{
    nlohmann::json j;
    j["schema_version"] = 1;
    j["source"] = source.kind == RemoteSource::Kind::HubRepo ? "hf://" + source.repoId + "@" + source.revision : source.url;
    j["commit"] = commit;
    j["target"] = targetOf(files);
    j["fetched_unix_s"] = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    j["files"] = nlohmann::json::array();
    for (const MirrorFile& f : files)
        j["files"].push_back({{"name", f.name}, {"url", f.url}, {"size_bytes", f.totalBytes}, {"read_bytes", f.head.size()}});
    return j;
}

tl::expected<std::vector<MirrorFile>, RemoteError> fetchHubGguf(const RemoteSource& source, const RemoteOptions& options, Fetcher& fetch);

tl::expected<std::vector<MirrorFile>, RemoteError> fetchHubRepo(const RemoteSource& source, const RemoteOptions& options,
                                                                Fetcher& fetch, std::string& commit)
{
    const std::string base = options.endpoint + "/" + source.repoId + "/resolve/" + source.revision + "/";
    std::vector<MirrorFile> files;
    auto config = fetch.whole(base + "config.json", kRemoteMaxJsonBytes);
    if (!config)
        return tl::unexpected(config.error());
    if (!*config) {
        // No config.json: a GGUF repo, read as llama.cpp -hf reads it.
        auto gguf = fetchHubGguf(source, options, fetch);
        if (gguf)
            return gguf;
        return tl::unexpected(RemoteError{base + "config.json: HTTP 404: no such repo or revision, or no config.json; as a GGUF repo: " +
                                              gguf.error().message,
                                          std::nullopt});
    }
    // The hub names the commit a branch resolved to (huggingface_hub file_download.py, HUGGINGFACE_HEADER_X_REPO_COMMIT).
    if (auto it = (*config)->headers.find("x-repo-commit"); it != (*config)->headers.end() && isCommit(it->second))
        commit = it->second;
    else if (isCommit(source.revision))
        commit = source.revision;
    files.push_back({"config.json", base + "config.json", (*config)->body.size(), (*config)->body, true});

    std::vector<std::string> shards;
    auto index = fetch.whole(base + "model.safetensors.index.json", kRemoteMaxJsonBytes);
    if (!index)
        return tl::unexpected(index.error());
    if (*index) {
        auto parsed = parseSafetensorsIndex((*index)->body, base + "model.safetensors.index.json");
        if (!parsed)
            return tl::unexpected(RemoteError{toString(parsed.error()), parsed.error()});
        std::set<std::string> unique;
        for (const auto& [tensor, shard] : parsed->weightMap)
            unique.insert(shard);
        if (unique.size() > kRemoteMaxShards)
            return tl::unexpected(RemoteError{base + "model.safetensors.index.json names " + std::to_string(unique.size()) +
                                                  " shards, more than " + std::to_string(kRemoteMaxShards),
                                              std::nullopt});
        shards.assign(unique.begin(), unique.end());
        files.push_back({"model.safetensors.index.json", base + "model.safetensors.index.json", (*index)->body.size(),
                         (*index)->body, true});
    } else {
        shards.push_back("model.safetensors");
    }
    for (const std::string& shard : shards) {
        const std::string url = base + shard;
        std::uint64_t total = 0;
        auto length = fetch.range(url, 0, 8, total);
        if (!length)
            return tl::unexpected(length.error());
        if (length->size() < 8)
            return tl::unexpected(RemoteError{url + ": the file has " + std::to_string(total) + " bytes, fewer than the 8-byte header length", std::nullopt});
        std::uint64_t n = 0;
        for (int i = 7; i >= 0; --i)
            n = (n << 8) | static_cast<unsigned char>((*length)[static_cast<std::size_t>(i)]);
        if (n == 0 || n > kSafetensorsMaxHeaderBytes || n > total - 8)
            return tl::unexpected(RemoteError{url + ": header length " + std::to_string(n) + ", expected 1.." +
                                                  std::to_string(std::min<std::uint64_t>(kSafetensorsMaxHeaderBytes, total - 8)),
                                              std::nullopt});
        auto header = fetch.range(url, 8, n, total);
        if (!header)
            return tl::unexpected(header.error());
        files.push_back({shard, url, total, *length + *header, false});
    }
    return files;
}

/// The GGUF header of @p url, grown by range requests until it parses (see the file comment).
tl::expected<MirrorFile, RemoteError> fetchGgufHeader(const std::string& url, const std::string& name, const RemoteOptions& options,
                                                      Fetcher& fetch)
{
    std::uint64_t total = 0;
    std::uint64_t want = std::max<std::uint64_t>(options.ggufFirstRangeBytes, 64);
    auto first = fetch.range(url, 0, want, total);
    if (!first)
        return tl::unexpected(first.error());
    std::string bytes = std::move(*first);
    while (true) {
        auto parsed = readGgufBytes(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), url, total);
        if (parsed)
            break;
        // The header goes on past what was read: read as much again (gguf.cpp's Truncated
        // "the file ends before ..." while bytes remain on the server).
        const bool more = parsed.error().code == ImportErrorCode::Truncated && bytes.size() < total &&
                          parsed.error().message.starts_with("the file ends before");
        if (!more)
            return tl::unexpected(RemoteError{toString(parsed.error()), parsed.error()});
        if (bytes.size() >= kRemoteGgufMaxHeaderBytes)
            return tl::unexpected(RemoteError{url + ": the GGUF header is larger than " + std::to_string(kRemoteGgufMaxHeaderBytes) + " bytes",
                                              std::nullopt});
        const std::uint64_t next = std::min<std::uint64_t>({bytes.size(), total - bytes.size(), kRemoteGgufMaxHeaderBytes - bytes.size()});
        auto chunk = fetch.range(url, bytes.size(), next, total);
        if (!chunk)
            return tl::unexpected(chunk.error());
        bytes += *chunk;
    }
    const bool whole = bytes.size() == total;
    return MirrorFile{name, url, total, std::move(bytes), whole};
}

/// Every part of a (possibly split) GGUF at @p url (the parts are its siblings, PREFIX-0000k-of-0000N.gguf).
tl::expected<std::vector<MirrorFile>, RemoteError> fetchGgufParts(const std::string& url, const RemoteOptions& options, Fetcher& fetch)
{
    const std::string path = url.substr(0, url.find_first_of("?#"));
    const std::string query = url.substr(path.size());
    const SplitName split = splitName(path);
    if (split.count == 0 || split.index == 0 || split.index > split.count || split.count > kRemoteMaxShards)
        return tl::unexpected(RemoteError{url + ": a split part " + std::to_string(split.index) + " of " + std::to_string(split.count) +
                                              ", expected 1 <= part <= count <= " + std::to_string(kRemoteMaxShards),
                                          std::nullopt});
    std::vector<MirrorFile> files;
    for (unsigned k = 1; k <= split.count; ++k) {
        const std::string part = split.count == 1 ? url : partName(split.prefix, k, split.count) + query;
        auto f = fetchGgufHeader(part, urlFileName(part), options, fetch);
        if (!f)
            return tl::unexpected(f.error());
        files.push_back(std::move(*f));
    }
    return files;
}

/// The repo's file list (the hub's tree API), GGUF paths only.
tl::expected<std::vector<std::string>, RemoteError> listHubGgufs(const RemoteSource& source, const RemoteOptions& options, Fetcher& fetch)
{
    const std::string url = options.endpoint + "/api/models/" + source.repoId + "/tree/" + source.revision + "?recursive=true";
    auto list = fetch.whole(url, kRemoteMaxJsonBytes);
    if (!list)
        return tl::unexpected(list.error());
    if (!*list)
        return tl::unexpected(RemoteError{url + ": HTTP 404: no such repo or revision", std::nullopt});
    const nlohmann::json j = nlohmann::json::parse((*list)->body, nullptr, false);
    if (j.is_discarded() || !j.is_array())
        return tl::unexpected(RemoteError{url + ": expected a JSON array of the repo's files, found " +
                                              (j.is_discarded() ? std::string("no JSON") : std::string(j.type_name())),
                                          std::nullopt});
    if (j.size() > kRemoteMaxListedFiles)
        return tl::unexpected(RemoteError{url + ": lists " + std::to_string(j.size()) + " files, more than " +
                                              std::to_string(kRemoteMaxListedFiles),
                                          std::nullopt});
    std::vector<std::string> paths;
    for (const auto& e : j)
        if (e.is_object() && e.value("type", "") == "file" && e.contains("path") && e["path"].is_string()) {
            const std::string p = e["path"].get<std::string>();
            if (lower(p).ends_with(".gguf") && p.size() < 1024 && p.find("..") == std::string::npos)
                paths.push_back(p);
        }
    return paths;
}

/// The GGUF of a hub repo that llama.cpp -hf REPO[:TAG] loads, with all its split parts.
tl::expected<std::vector<MirrorFile>, RemoteError> fetchHubGguf(const RemoteSource& source, const RemoteOptions& options, Fetcher& fetch)
{
    auto paths = listHubGgufs(source, options, fetch);
    if (!paths)
        return tl::unexpected(paths.error());
    const auto pick = pickHubGguf(*paths, source.ggufTag);
    if (!pick) {
        std::string listed;
        for (std::size_t i = 0; i < paths->size() && i < 20; ++i)
            listed += (i ? ", " : "") + (*paths)[i];
        return tl::unexpected(RemoteError{"hf://" + source.repoId + "@" + source.revision + ": no GGUF file" +
                                              (source.ggufTag.empty() ? std::string() : " for the preset " + source.ggufTag) +
                                              (listed.empty() ? std::string(" in the repo") : "; the repo has " + listed),
                                          std::nullopt});
    }
    const std::string base = options.endpoint + "/" + source.repoId + "/resolve/" + source.revision + "/";
    const SplitName split = splitName(*pick);
    for (unsigned k = 1; k <= split.count && split.count <= kRemoteMaxShards; ++k)
        if (split.count > 1 && std::find(paths->begin(), paths->end(), partName(split.prefix, k, split.count)) == paths->end())
            return tl::unexpected(RemoteError{"hf://" + source.repoId + "@" + source.revision + ": " + *pick + " is part 1 of " +
                                                  std::to_string(split.count) + ", but the repo lists no " +
                                                  partName(split.prefix, k, split.count),
                                              std::nullopt});
    return fetchGgufParts(base + *pick, options, fetch);
}

/// The model file or folder inside a mirror: the first GGUF part when it holds GGUFs, else the folder.
fs::path mirrorTarget(const RemoteSource& source, const fs::path& dir, const nlohmann::json& marker)
{
    const std::string target = marker.value("target", "");
    if (!target.empty() && target == safeName(target))
        return dir / target;
    return source.kind == RemoteSource::Kind::Url ? dir / urlFileName(source.url) : dir;
}

tl::expected<ImportedModel, RemoteError> importMirror(const fs::path& target, const std::string& note)
{
    auto imported = importModel(target);
    if (!imported)
        return tl::unexpected(RemoteError{toString(imported.error()), imported.error()});
    imported->warnings.push_back(note);
    return std::move(*imported);
}

std::mutex g_clientMutex;
std::shared_ptr<HttpClient> g_client;

} // namespace

std::optional<std::string> pickHubGguf(const std::vector<std::string>& paths, const std::string& tag)
{
    const auto firstPart = [](const std::string& p) { return splitName(p).index == 1; };
    const std::vector<std::string> tags = tag.empty() ? std::vector<std::string>{"Q4_K_M", "Q8_0"} : std::vector<std::string>{tag};
    for (const std::string& t : tags) {
        const std::string want = lower(t);
        for (const std::string& p : paths) {
            const std::string lp = lower(p);
            if (isModelGguf(p) && firstPart(p) && (lp.find(want + ".") != std::string::npos || lp.find(want + "-") != std::string::npos))
                return p;
        }
    }
    if (tag.empty())
        for (const std::string& p : paths)
            if (isModelGguf(p) && firstPart(p))
                return p;
    return std::nullopt;
}

RemoteOptions remoteOptionsFromEnvironment()
{
    RemoteOptions o;
    if (const std::string c = env("HEADROOM_REMOTE_CACHE"); !c.empty())
        o.cacheDir = c;
    else if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
        o.cacheDir = fs::path(xdg) / "headroom" / "remote";
    else if (const std::string home = env("HOME"); !home.empty())
        o.cacheDir = fs::path(home) / ".cache" / "headroom" / "remote";
    else
        o.cacheDir = fs::temp_directory_path() / "headroom-remote";
    if (std::string e = env("HF_ENDPOINT"); !e.empty()) {
        while (e.ends_with('/'))
            e.pop_back();
        o.endpoint = e;
    }
    o.token = env("HF_TOKEN");
    if (o.token.empty())
        o.token = env("HUGGING_FACE_HUB_TOKEN");
    const std::string offline = env("HF_HUB_OFFLINE");
    o.offlineOnly = offline == "1" || offline == "true" || offline == "ON" || offline == "YES";
    return o;
}

std::optional<RemoteSource> parseRemoteSource(const std::string& arg)
{
    RemoteSource s;
    if (arg.starts_with("https://") || arg.starts_with("http://")) {
        const std::string path = arg.substr(0, arg.find_first_of("?#"));
        if (!path.ends_with(".gguf") || arg.size() > 4096)
            return std::nullopt;
        s.kind = RemoteSource::Kind::Url;
        s.url = arg;
        return s;
    }
    // ORG/NAME[@REV][:TAG], llama.cpp's -hf REPO:TAG (common_download_split_repo_tag).
    std::string repoArg = arg;
    const std::size_t bodyAt = arg.starts_with("hf://") ? 5 : 0;
    if (const auto colon = arg.rfind(':'); colon != std::string::npos && colon >= bodyAt) {
        const std::string tag = arg.substr(colon + 1);
        const bool valid = !tag.empty() && tag.size() <= 64 &&
                           std::all_of(tag.begin(), tag.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
        if (!valid)
            return std::nullopt;
        s.ggufTag = tag;
        repoArg = arg.substr(0, colon);
    }
    const auto repo = parseRepoId(repoArg);
    if (!repo)
        return std::nullopt;
    s.repoId = repo->id;
    s.revision = repo->revision.empty() ? "main" : repo->revision;
    return s;
}

tl::expected<ImportedModel, RemoteError> importRemoteModel(const RemoteSource& source, HttpClient& http, const RemoteOptions& options)
{
    const fs::path dir = mirrorDir(source, options);
    const bool pinned = source.kind == RemoteSource::Kind::HubRepo && isCommit(source.revision);
    if (auto marker = cachedMarker(dir, options.offlineOnly, options.branchTtl, pinned))
        return importMirror(mirrorTarget(source, dir, *marker), "read from the cache " + shownDir(dir) + " (" + marker->value("source", "") + " @ " +
                                                            marker->value("commit", "") + ")");
    if (options.offlineOnly)
        return tl::unexpected(RemoteError{"HF_HUB_OFFLINE is set and " + shownDir(dir) + " holds no copy of the headers", std::nullopt});

    Fetcher fetch(http, options);
    std::string commit;
    auto files = source.kind == RemoteSource::Kind::Url ? fetchGgufParts(source.url, options, fetch)
                 : source.ggufTag.empty()               ? fetchHubRepo(source, options, fetch, commit)
                                                        : fetchHubGguf(source, options, fetch);
    if (!files) {
        // Offline or failing: a stale copy still answers, saying so.
        if (auto stale = cachedMarker(dir, true, options.branchTtl, pinned))
            return importMirror(mirrorTarget(source, dir, *stale),
                                "the network failed (" + files.error().message + "): used the older copy in " + shownDir(dir));
        return tl::unexpected(files.error());
    }
    std::uint64_t fetched = 0;
    for (const MirrorFile& f : *files)
        fetched += f.head.size();
    if (auto w = writeMirror(dir, *files, markerFor(source, commit, *files)); !w)
        return tl::unexpected(w.error());
    auto model = importMirror(targetOf(*files).empty() ? dir : dir / targetOf(*files), "read " + std::to_string(fetched) + " bytes of headers over HTTP" +
                                               (commit.empty() ? std::string() : " at commit " + commit) + "; cached in " + shownDir(dir));
    if (!model) {
        std::error_code ec;
        fs::remove_all(dir, ec); // never keep a mirror that does not import
    }
    return model;
}

void setDefaultHttpClient(std::shared_ptr<HttpClient> client)
{
    std::lock_guard lock(g_clientMutex);
    g_client = std::move(client);
}

std::shared_ptr<HttpClient> defaultHttpClient()
{
    std::lock_guard lock(g_clientMutex);
    return g_client;
}

} // namespace headroom
