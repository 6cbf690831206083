#include "headroom/core/importers/ggufreader.h"
#include "headroom/core/weightformat.h"

#include "importshared.h"
#include "importutil.h"

#include <cstdio>
#include <map>
#include <regex>

namespace headroom {

using importers::makeError;

namespace {

/// "name-00002-of-00003.gguf" -> (prefix "name", index 2, count 3), llama.cpp's split naming
/// (llama_split_path: "%s-%05d-of-%05d.gguf").
struct SplitName {
    std::string prefix;
    std::uint32_t index = 0;
    std::uint32_t count = 0;
};

std::optional<SplitName> splitName(const std::string& fileName)
{
    static const std::regex re(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)");
    std::smatch m;
    if (!std::regex_match(fileName, m, re))
        return std::nullopt;
    SplitName s{m[1].str(), static_cast<std::uint32_t>(std::stoul(m[2].str())),
                static_cast<std::uint32_t>(std::stoul(m[3].str()))};
    if (s.index < 1 || s.count < 1 || s.index > s.count)
        return std::nullopt;
    return s;
}

std::string splitFileName(const SplitName& s, std::uint32_t index)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "-%05u-of-%05u.gguf", index, s.count);
    return s.prefix + buf;
}

std::string formatIdOfGgmlType(const std::string& type)
{
    if (type == "f16")
        return "fp16";
    if (type == "f32")
        return "fp32";
    if (type == "bf16")
        return "bf16";
    if (auto f = findFormat(type))
        return f->id;
    return type;
}

/// True when two metadata values are the same (arrays: same element type and count).
bool sameValue(const GgufValue& a, const GgufValue& b)
{
    if (a.type != b.type)
        return false;
    if (a.type == GgufValueType::Array)
        return a.elementType == b.elementType && a.count == b.count;
    return a.u64 == b.u64 && a.i64 == b.i64 && a.str == b.str && (a.f64 == b.f64 || (a.f64 != a.f64 && b.f64 != b.f64));
}

/// Warnings for shard @p index (1-based) of a split set whose first shard is @p first: its
/// split.no must be index - 1, and a key it shares with the first shard must hold the same value.
/// llama.cpp reads the model's metadata from the first split only (src/llama-model-loader.cpp:
/// the llama_model_loader constructor reads later splits for their tensors alone), so a later
/// shard that disagrees is a sign of a mixed set.
void checkShardMetadata(const GgufFile& shard, const GgufFile& first, std::uint32_t index, const std::string& name,
                        std::vector<std::string>& warnings)
{
    if (const GgufValue* no = shard.find("split.no"); no && no->asUInt() && *no->asUInt() != index - 1)
        warnings.push_back(name + ": split.no is " + std::to_string(*no->asUInt()) + ", expected " + std::to_string(index - 1) +
                           " for shard " + std::to_string(index));
    std::vector<std::string> differing;
    for (const std::string& key : shard.keyOrder) {
        if (key.starts_with("split."))
            continue;
        const GgufValue* mine = shard.find(key);
        const GgufValue* theirs = first.find(key);
        if (mine && theirs && !sameValue(*mine, *theirs))
            differing.push_back(key);
    }
    if (!differing.empty())
        warnings.push_back(name + ": " + std::to_string(differing.size()) + " metadata key(s) differ from the first shard (" +
                           differing.front() + (differing.size() > 1 ? ", ..." : "") +
                           "); the first shard's values are used, as llama.cpp does");
}

} // namespace

tl::expected<ImportedModel, ImportError> importGguf(const std::filesystem::path& path)
{
    std::vector<std::filesystem::path> files{path};
    const auto split = splitName(path.filename().string());
    if (split && split->count > 1) {
        files.clear();
        for (std::uint32_t i = 1; i <= split->count; ++i) {
            auto p = path.parent_path() / splitFileName(*split, i);
            std::error_code ec;
            if (!std::filesystem::exists(p, ec))
                return tl::unexpected(makeError(ImportErrorCode::FileNotFound, p.string(),
                                                "split shard " + std::to_string(i) + " of " + std::to_string(split->count) +
                                                    " is missing"));
            files.push_back(p);
        }
    }
    ImportedModel model;
    model.format = "gguf";
    model.path = path.string();
    std::uint64_t hash = fnv1a64("", 0);
    std::optional<GgufFile> first;
    // A tensor name in two shards is refused, as llama.cpp does ("invalid model: tensor '%s' is
    // duplicated", src/llama-model-loader.cpp, the llama_model_loader constructor, in the loop
    // over the splits' tensors): summing it would count its bytes twice.
    std::map<std::string, std::uint32_t> shardOfTensor;
    for (std::uint32_t index = 1; index <= files.size(); ++index) {
        const auto& f = files[index - 1];
        auto file = readGguf(f);
        if (!file)
            return tl::unexpected(file.error());
        hash = fnv1a64(&file->contentHash, sizeof file->contentHash, hash);
        for (auto& w : file->warnings)
            model.warnings.push_back(f.filename().string() + ": " + w);
        if (first)
            checkShardMetadata(*file, *first, index, f.filename().string(), model.warnings);
        for (auto& t : file->tensors) {
            if (auto [it, inserted] = shardOfTensor.emplace(t.name, index); !inserted)
                return tl::unexpected(makeError(ImportErrorCode::DuplicateTensor, f.string(),
                                                "tensor \"" + t.name + "\" is in shard " + std::to_string(it->second) +
                                                    " and again in shard " + std::to_string(index),
                                                std::nullopt, t.name));
            model.tensors.push_back(std::move(t));
        }
        file->tensors.clear();
        if (!first)
            first = std::move(*file);
    }
    model.formatVersion = std::to_string(first->version) + (first->bigEndian ? " big-endian" : "");
    if (const GgufValue* n = first->find("general.name"); n && n->type == GgufValueType::String && !n->str.empty() && n->str.size() <= 256)
        model.modelName = n->str;
    if (const GgufValue* a = first->find("general.architecture"))
        model.architectureName = a->str;
    // The architecture needs the tensor list for tied embeddings: give it every shard's names.
    first->tensors = model.tensors;
    std::string why;
    model.architecture = ggufArchitecture(*first, &why);
    first->tensors.clear();
    if (!model.architecture && !why.empty())
        model.warnings.push_back("no architecture: " + why);
    if (model.architecture) {
        model.contextLength = model.architecture->contextLength;
        if (std::string problem = validateArchitecture(*model.architecture); !problem.empty())
            model.warnings.push_back("architecture keys out of range: " + problem);
    }
    try {
        importers::summarizeTensors(model);
    } catch (const OverflowError& e) {
        return tl::unexpected(makeError(ImportErrorCode::Overflow, path.string(), e.what()));
    }
    model.exactWeights = true;
    if (model.tensors.empty())
        model.warnings.push_back("no tensors (vocabulary-only file): parameters and weights are 0");
    const std::string dom = importers::dominantMatrixType(model);
    if (!dom.empty())
        model.weightFormatId = formatIdOfGgmlType(dom);
    if (const GgufValue* n = first->find("split.count"); n && n->asUInt() && *n->asUInt() != files.size())
        model.warnings.push_back("split.count is " + std::to_string(*n->asUInt()) + " but " +
                                 std::to_string(files.size()) + " file(s) were read");
    model.contentHash = hashHex(hash);
    return model;
}

} // namespace headroom
