#pragma once
/// @file remotemodel.h
/// Models read over HTTP, header only: a Hugging Face repo (`hf://ORG/NAME[@REV]` or `ORG/NAME`)
/// or the URL of a .gguf file. Only what sizing needs is fetched, never the weights:
/// - Hugging Face: `config.json`, `model.safetensors.index.json` (or the single
///   `model.safetensors`), and of each shard the 8-byte header length then one range request for
///   the JSON header (safetensors README "Format"). URLs are the hub's
///   `{endpoint}/{repo}/resolve/{revision}/{file}` (huggingface_hub `file_download.py`
///   `hf_hub_url`; endpoint from HF_ENDPOINT, default https://huggingface.co); HF_TOKEN is sent
///   as `Authorization: Bearer` to that endpoint only.
/// - GGUF: range requests from byte 0, growing (doubling) until the whole header and tensor table
///   parse, up to kRemoteGgufMaxHeaderBytes. gguf-parser-go reads remote files the same way: a
///   `Range: bytes=B-E` reader over HTTP with a 4 MiB buffer (`util/httpx/file.go` `SeekerFile`,
///   at 6abbcbd1), never the tensor data. A split model (`PREFIX-0000k-of-0000N.gguf`, llama.cpp's
///   `llama_split_path`) is read as all N parts, whichever part the URL names.
/// - A GGUF repo on the hub (`hf://ORG/NAME:Q4_K_M`, or a repo without config.json): the file list
///   `{endpoint}/api/models/{repo}/tree/{revision}?recursive=true` (llama.cpp `common/hf-cache.cpp`
///   `get_repo_files`), then the file llama.cpp's `-hf ORG/NAME[:TAG]` would load (`common/download.cpp`
///   `find_best_model`, at 0216dab3): the first model GGUF (no "mmproj", "imatrix", "mtp-",
///   "eagle3-", "dflash-", "dspark-" in its name; of a split, part 1) whose path holds TAG followed by
///   '.' or '-' (any case); without a TAG, Q4_K_M, then Q8_0, then the first model GGUF. All its
///   split parts are read.
///
/// What was read is kept on disk (the cache folder, by default `$XDG_CACHE_HOME/headroom/remote`
/// or `~/.cache/headroom/remote`) as a mirror of the repo: small files whole, and each weights
/// file as a sparse file of its real length holding only its header bytes (the holes are never
/// read, and take no disk space). The mirror is then read by the ordinary importers, so a remote
/// model imports exactly as the same files on disk would. A mirror is written to a temporary
/// folder and renamed into place complete, with `headroom-remote.json` (schema_version 1: the
/// URLs, sizes and the commit) last; a cached commit is reused for ever, a branch for 24 hours.
///
/// The network is reached only through an HttpClient that the caller supplies: core never opens
/// a socket itself (libcurl lives in headroom_remote, remote/curlhttpclient.h).

#include "headroom/core/importers/importedmodel.h"

#include <tl/expected.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// One GET, optionally of a byte range.
struct HttpRequest {
    std::string url;                         ///< http:// or https://
    std::optional<std::uint64_t> rangeBegin; ///< first byte wanted (a `Range: bytes=B-E` header)
    std::optional<std::uint64_t> rangeEnd;   ///< last byte wanted, inclusive
    std::vector<std::string> headers;        ///< extra "Name: value" lines (Authorization)
    std::uint64_t maxBodyBytes = 16u << 20;  ///< the transfer is refused past this many body bytes
};

/// A completed response (any status).
struct HttpResponse {
    long status = 0;                         ///< 200, 206, 404, ...
    std::string body;                        ///< the body (at most maxBodyBytes)
    std::optional<std::uint64_t> totalBytes; ///< the whole file's size: Content-Range's total for a 206, Content-Length for a 200
    std::map<std::string, std::string> headers; ///< response headers, names in lower case (the last response after redirects)
};

/// Why a request got no response.
struct HttpError {
    enum class Kind {
        Offline,   ///< name resolution or connection failed (no network, nothing listening)
        Timeout,   ///< connect or transfer timed out (after the retries)
        Truncated, ///< the body ended before its declared length
        TooLarge,  ///< the body would exceed maxBodyBytes
        Protocol,  ///< anything else the HTTP library reports
    };
    Kind kind = Kind::Protocol; ///< the failure class
    std::string message;        ///< the library's words, with the URL
};

/// The transport: one request in, one response out (retries and timeouts are its business).
class HttpClient {
public:
    virtual ~HttpClient() = default;
    /// Performs @p request. A non-2xx status is a response, not an error.
    virtual tl::expected<HttpResponse, HttpError> get(const HttpRequest& request) = 0;
};

/// Largest GGUF header (metadata + tensor table) fetched: vocabularies of 256k tokens with merges
/// are about 20 MiB; 256 MiB bounds a hostile server.
inline constexpr std::uint64_t kRemoteGgufMaxHeaderBytes = 256ull << 20;
/// First GGUF range: 2 MiB holds the header of most models without a second request.
inline constexpr std::uint64_t kRemoteGgufFirstRangeBytes = 2ull << 20;
/// Largest config.json / index fetched whole.
inline constexpr std::uint64_t kRemoteMaxJsonBytes = 64ull << 20;
/// Most shards of one repo read (the largest public checkpoints have a few hundred).
inline constexpr std::size_t kRemoteMaxShards = 4096;
/// Most entries of a hub file list read (the largest GGUF repos list a few hundred files).
inline constexpr std::size_t kRemoteMaxListedFiles = 100'000;

/// The file of @p paths (repo-relative, in the hub's order) that llama.cpp `-hf REPO[:TAG]` loads
/// (see the file comment); nullopt when none matches. Part 1 for a split model.
std::optional<std::string> pickHubGguf(const std::vector<std::string>& paths, const std::string& tag);

/// Where and how remote models are read.
struct RemoteOptions {
    std::filesystem::path cacheDir;          ///< the mirror folder (see the file comment)
    std::string endpoint = "https://huggingface.co"; ///< the hub (HF_ENDPOINT)
    std::string token;                       ///< HF_TOKEN; empty = anonymous
    std::chrono::seconds branchTtl{24 * 3600}; ///< how long a cached branch (not a commit) is reused
    bool offlineOnly = false;                ///< use the cache only (HF_HUB_OFFLINE=1)
    std::uint64_t ggufFirstRangeBytes = kRemoteGgufFirstRangeBytes; ///< first GGUF range, bytes (tests make it small)
};

/// The options from the environment: HEADROOM_REMOTE_CACHE, else XDG_CACHE_HOME/headroom/remote,
/// else HOME/.cache/headroom/remote; HF_ENDPOINT; HF_TOKEN (or HUGGING_FACE_HUB_TOKEN); HF_HUB_OFFLINE.
RemoteOptions remoteOptionsFromEnvironment();

/// What a remote argument names.
struct RemoteSource {
    enum class Kind { HubRepo, Url };
    Kind kind = Kind::HubRepo; ///< a hub repo or a URL of a .gguf file
    std::string repoId;        ///< "ORG/NAME" (HubRepo)
    std::string revision;      ///< "main" unless given (HubRepo)
    std::string ggufTag;       ///< the GGUF preset after ':' ("Q4_K_M"; HubRepo), empty when none
    std::string url;           ///< the URL (Url)
};

/// `hf://ORG/NAME[@REV][:TAG]`, `ORG/NAME[@REV][:TAG]` (TAG: letters, digits and '_', as llama.cpp's
/// `-hf ORG/NAME:Q4_K_M`) or `http(s)://.../FILE.gguf`; nullopt for anything else.
std::optional<RemoteSource> parseRemoteSource(const std::string& arg);

/// Why a remote import failed: the HTTP side (status, offline) or the files' contents.
struct RemoteError {
    std::string message;             ///< what was asked, of which URL, and what came back
    std::optional<ImportError> import; ///< set when a file arrived but did not import
};

/// Reads @p source through @p http into the mirror and imports it (see the file comment).
/// ImportedModel::path is the mirror; `source` words are in warnings. Errors: offline (with the
/// cache named), HTTP 401/403 (gated repo: set HF_TOKEN), 404 (no such repo/file/revision),
/// servers that ignore ranges and send more than asked, short or overlong bodies, and the
/// importers' errors on what arrived.
tl::expected<ImportedModel, RemoteError> importRemoteModel(const RemoteSource& source, HttpClient& http,
                                                           const RemoteOptions& options);

/// The client resolveModel uses for remote arguments; nullptr (the default) = none, and remote
/// arguments are refused with a message saying so. The CLI and the app set a libcurl client.
void setDefaultHttpClient(std::shared_ptr<HttpClient> client);
/// The client set by setDefaultHttpClient, or nullptr.
std::shared_ptr<HttpClient> defaultHttpClient();

} // namespace headroom
