#pragma once
/// @file localstores.h
/// The models a user already has on disk: the Hugging Face hub cache, Ollama's store, LM Studio's
/// models folder, and any folder given. Each model found is read by the importers (header only),
/// so it carries the exact bytes of its own files.
///
/// Layouts, as the tools that write them define them:
/// - Hugging Face hub cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`
///   (huggingface_hub `constants.py`); `models--ORG--NAME/snapshots/REV/FILE` symlinks into
///   `../../blobs/`, `refs/BRANCH` holds the commit a branch points at; the repo id is the folder
///   name without `models--`, its `--` separators read as `/` (huggingface_hub
///   `utils/_cache_manager.py`, `scan_cache_dir`).
/// - Ollama: `$OLLAMA_MODELS`, else `~/.ollama/models` (ollama `envconfig/config.go` `Models()`, at
///   fb307609); `manifests/HOST/NAMESPACE/MODEL/TAG` (`types/model/name.go` `Name.Filepath()`,
///   defaults registry.ollama.ai / library / latest) is a Docker v2 manifest (`manifest/manifest.go`
///   `Manifest`: schemaVersion, mediaType, config, layers[] of {mediaType, digest, size}); a layer of
///   media type `application/vnd.ollama.image.model` is the GGUF, `...image.projector` the vision
///   projector (`server/create.go`); layer `sha256:HEX` lives at `blobs/sha256-HEX`
///   (`manifest/paths.go` `BlobsPath`, which accepts only `^sha256[:-][0-9a-fA-F]{64}$`).
/// - LM Studio: `~/.lmstudio/models/PUBLISHER/REPO/*.gguf` (and the pre-0.3 `~/.cache/lm-studio/models`);
///   files named `mmproj*.gguf` are vision projectors of the models beside them.
///
/// Everything read is untrusted: manifests are bounded to 1 MiB, walks to a depth and a count.

#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/importers/importerror.h"
#include "headroom/core/modelprofile.h"
#include "headroom/core/units.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Which tool's store a model was found in.
enum class LocalStoreKind { HubCache, Ollama, LmStudio, Folder };

/// Stable lower-case name ("hf-cache", "ollama", "lm-studio", "folder").
const char* localStoreKindName(LocalStoreKind kind);

/// The folders to search. Built from the environment by @ref defaultLocalStoreRoots, or by hand.
struct LocalStoreRoots {
    std::vector<std::filesystem::path> hubCaches;  ///< Hugging Face hub caches (folders holding models--*)
    std::vector<std::filesystem::path> ollama;     ///< Ollama model folders (holding manifests/ and blobs/)
    std::vector<std::filesystem::path> lmStudio;   ///< LM Studio models folders (PUBLISHER/REPO/*.gguf)
    std::vector<std::filesystem::path> folders;    ///< any folders: searched for model directories and .gguf files
};

/// Reads one environment variable; empty when unset. The default reads the process environment.
using EnvLookup = std::function<std::string(const char* name)>;

/// The process environment (std::getenv).
std::string processEnv(const char* name);

/// The standard locations, from HF_HUB_CACHE / HF_HOME / HOME, OLLAMA_MODELS / HOME and HOME.
/// Only folders that exist are returned.
LocalStoreRoots defaultLocalStoreRoots(const EnvLookup& env = processEnv);

/// One model found in a store.
struct LocalModel {
    LocalStoreKind store = LocalStoreKind::Folder;     ///< where it was found
    std::string name;                 ///< "meta-llama/Llama-2-7b-hf", "llama3.2:3b", "PUBLISHER/REPO/FILE.gguf", or the path
                                      ///< (findLocalModels makes name, revision, refs, warnings safe to print: safetext.h;
                                      ///< the paths stay as they are, to be opened)
    std::string revision;             ///< hub snapshot commit, Ollama manifest digest's first 12 hex, else empty
    std::vector<std::string> refs;    ///< hub branches pointing at this snapshot ("main")
    std::filesystem::path path;       ///< what importModel reads: a snapshot folder, a blob, a .gguf file
    std::filesystem::path projectorPath;  ///< the vision projector (Ollama projector layer, LM Studio mmproj*.gguf), if any
    Bytes projectorBytes;             ///< the projector's tensor bytes (from its GGUF tensor table), 0 without one
    std::optional<ImportedModel> model;   ///< the import, when it succeeded
    std::optional<ImportError> error;     ///< why the import failed (the listing keeps going)
    std::vector<std::string> warnings;    ///< store-level findings (manifest size differs from the blob, ...)
};

/// Bounds on a walk through untrusted folders.
inline constexpr int kLocalStoreMaxDepth = 6;          ///< folder levels below a "folders" root
inline constexpr std::size_t kLocalStoreMaxModels = 4096; ///< models listed per root
inline constexpr std::uint64_t kOllamaMaxManifestBytes = 1ull << 20; ///< real manifests are < 4 KiB

/// The models of one Hugging Face hub cache: one entry per snapshot that holds a model
/// (a config.json or safetensors: the snapshot folder; else each .gguf in it, first shards only).
std::vector<LocalModel> scanHubCache(const std::filesystem::path& hubCache);

/// The models of one Ollama store: one per manifest below manifests/, named as `ollama list`
/// does (MODEL:TAG for registry.ollama.ai/library, else HOST/NAMESPACE/MODEL:TAG).
std::vector<LocalModel> scanOllamaStore(const std::filesystem::path& modelsDir);

/// The models of one LM Studio models folder (PUBLISHER/REPO/*.gguf, or a REPO folder with a config.json).
std::vector<LocalModel> scanLmStudio(const std::filesystem::path& modelsDir);

/// The models below any folder: model directories (config.json or *.safetensors) and .gguf files.
std::vector<LocalModel> scanFolder(const std::filesystem::path& folder);

/// Every model of every root, in the order hub caches, Ollama, LM Studio, folders.
std::vector<LocalModel> findLocalModels(const LocalStoreRoots& roots);

/// The projector a .gguf model file runs with: the mmproj*.gguf in the same folder (llama.cpp
/// --mmproj; LM Studio and the ggml-org GGUF repositories keep it beside the model), the first by
/// name. Empty when @p modelFile is itself a projector, or when none is there.
std::filesystem::path projectorBeside(const std::filesystem::path& modelFile);

/// Adds the vision projector @p projector (a GGUF of its own: general.architecture "clip") that
/// @p model runs with to @p p's exact weights, as bytes of type "mmproj", and says so in the
/// warnings, naming @p how it is loaded ("llama.cpp --mmproj", "Ollama's projector layer"). Nothing
/// when @p model is not a GGUF with an exact tensor table, when its own table already holds a
/// vision tower (v.* tensors, as Ollama's gemma3 blobs do), or when @p projector is empty; a
/// projector that does not read is a warning, not counted.
void addProjectorWeights(ModelProfile& p, const ImportedModel& model, const std::filesystem::path& projector,
                         const std::string& how);

/// The profile of a local model for the faces' model pickers: named by its store's name
/// ("meta-llama/Llama-2-7b-hf", "stories:260k", "PUBLISHER/REPO/FILE.gguf"), id = the path it was
/// imported from (resolveModel reads it again), source = "STORE NAME[@REV] FORMAT VERSION PATH",
/// with the exact bytes of its files: a GGUF model's projector (the Ollama manifest's projector
/// layer, LM Studio's mmproj*.gguf) is counted in them (addProjectorWeights). nullopt when its
/// import failed or gave no architecture.
std::optional<ModelProfile> localModelProfile(const LocalModel& model);

/// The snapshot folder of repo @p repoId ("ORG/NAME") in @p hubCache, at @p revision (a branch
/// name such as "main", a full commit, or a commit prefix of at least 7 hex digits; empty = "main",
/// else the newest snapshot). nullopt when the cache does not hold it.
std::optional<std::filesystem::path> findInHubCache(const std::filesystem::path& hubCache, const std::string& repoId,
                                                    const std::string& revision = {});

} // namespace headroom
