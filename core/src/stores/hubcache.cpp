// The Hugging Face hub cache (huggingface_hub `utils/_cache_manager.py`, `file_download.py`):
//   models--ORG--NAME/refs/BRANCH          the commit the branch points at (40 hex, no newline)
//   models--ORG--NAME/snapshots/COMMIT/F   symlinks into ../../blobs/ (copies on Windows without symlinks)
//   models--ORG--NAME/blobs/ETAG           the files' bytes
#include "headroom/core/stores/localstores.h"

#include "headroom/core/importers/regularfile.h"

#include "storeshared.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace headroom {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModelsPrefix = "models--";

/// "models--meta-llama--Llama-2-7b-hf" -> "meta-llama/Llama-2-7b-hf" (scan_cache_dir joins every
/// "--"-separated part after the type with "/").
std::string repoIdOf(const std::string& folder)
{
    std::string rest = folder.substr(std::string(kModelsPrefix).size());
    std::string id;
    std::size_t pos = 0;
    while (true) {
        const auto next = rest.find("--", pos);
        id += rest.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
        if (next == std::string::npos)
            break;
        id += '/';
        pos = next + 2;
    }
    return id;
}

std::string folderOf(const std::string& repoId)
{
    std::string f = kModelsPrefix;
    for (char c : repoId) {
        if (c == '/')
            f += "--";
        else
            f += c;
    }
    return f;
}

bool isHex(const std::string& s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

/// A ref file holds a commit id: 40 hex digits (SHA-1), 64 for SHA-256, maybe a newline.
constexpr std::uint64_t kMaxRefBytes = 80;

/// refs/BRANCH -> commit, for every branch whose file holds a commit id. Each file is opened once
/// and checked through its descriptor (RegularFile: never a FIFO, a device or a directory, no
/// stat-then-open race); one larger than kMaxRefBytes holds no commit id and is skipped unread.
std::map<std::string, std::string> readRefs(const fs::path& repo)
{
    std::map<std::string, std::string> refs;
    std::error_code ec;
    for (fs::directory_iterator it(repo / "refs", ec), end; !ec && it != end; it.increment(ec)) {
        auto file = RegularFile::open(it->path());
        if (!file || file->sizeBytes() > kMaxRefBytes)
            continue;
        auto text = file->readStringAt(0, kMaxRefBytes);
        if (!text)
            continue;
        std::string commit = std::move(*text);
        while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r' || commit.back() == ' '))
            commit.pop_back();
        if (isHex(commit))
            refs[it->path().filename().string()] = commit;
    }
    return refs;
}

void scanRepo(const fs::path& repo, std::vector<LocalModel>& out)
{
    const std::string repoId = repoIdOf(repo.filename().string());
    const auto refs = readRefs(repo);
    for (const fs::path& snapshot : stores::subfolders(repo / "snapshots")) {
        if (out.size() >= kLocalStoreMaxModels)
            return;
        const std::string commit = snapshot.filename().string();
        std::vector<std::string> names;
        for (const auto& [branch, c] : refs)
            if (c == commit)
                names.push_back(branch);
        // A model directory, or a GGUF repository (ORG/NAME-GGUF) whose files are models of their own.
        const std::size_t first = out.size();
        stores::addFolderModels(LocalStoreKind::HubCache, snapshot, repoId, out);
        for (std::size_t i = first; i < out.size(); ++i) {
            out[i].revision = commit;
            out[i].refs = names;
        }
    }
}

} // namespace

std::vector<LocalModel> scanHubCache(const fs::path& hubCache)
{
    std::vector<LocalModel> out;
    for (const fs::path& repo : stores::subfolders(hubCache)) {
        if (repo.filename().string().starts_with(kModelsPrefix))
            scanRepo(repo, out);
        if (out.size() >= kLocalStoreMaxModels)
            break;
    }
    return out;
}

std::optional<fs::path> findInHubCache(const fs::path& hubCache, const std::string& repoId, const std::string& revision)
{
    if (repoId.empty() || repoId.find("..") != std::string::npos || repoId.front() == '/')
        return std::nullopt;
    const fs::path repo = hubCache / folderOf(repoId);
    std::error_code ec;
    if (!fs::is_directory(repo / "snapshots", ec))
        return std::nullopt;
    const auto refs = readRefs(repo);
    const std::string wanted = revision.empty() ? "main" : revision;
    if (const auto it = refs.find(wanted); it != refs.end()) {
        const fs::path snap = repo / "snapshots" / it->second;
        if (fs::is_directory(snap, ec))
            return snap;
    }
    const auto snapshots = stores::subfolders(repo / "snapshots");
    if (!revision.empty()) {
        if (revision.size() < 7 || !isHex(revision))
            return std::nullopt;
        for (const fs::path& s : snapshots)
            if (s.filename().string().starts_with(revision))
                return s;
        return std::nullopt;
    }
    // No refs/main: the snapshot written last.
    std::optional<fs::path> newest;
    fs::file_time_type newestTime{};
    for (const fs::path& s : snapshots) {
        const auto t = fs::last_write_time(s, ec);
        if (!ec && (!newest || t > newestTime)) {
            newest = s;
            newestTime = t;
        }
    }
    return newest;
}

} // namespace headroom
