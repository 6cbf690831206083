#include "headroom/core/importers/modeldirectory.h"

#include "headroom/core/importers/hfconfig.h"
#include "headroom/core/importers/regularfile.h"
#include "headroom/core/importers/safetensors.h"
#include "headroom/core/parameters.h"
#include "headroom/core/safetext.h"
#include "headroom/core/weightformat.h"

#include "importshared.h"
#include "importutil.h"
#include "jsonutil.h"

#include <algorithm>
#include <set>

namespace headroom {

using importers::makeError;

namespace importers {

void summarizeTensors(ImportedModel& model)
{
    model.tensorCount = model.tensors.size();
    model.parameters = 0;
    model.weightsBytes = Bytes{0};
    model.bytesByType.clear();
    model.tensorsByType.clear();
    for (const auto& t : model.tensors) {
        if (!isNonParameterBuffer(t.name))
            model.parameters = checkedAdd(model.parameters, t.elements, "parameters");
        model.weightsBytes += t.bytes;
        model.bytesByType[t.type] += t.bytes;
        model.tensorsByType[t.type] += 1;
    }
}

std::string dominantMatrixType(const ImportedModel& model)
{
    std::map<std::string, std::uint64_t> bytes;
    for (const auto& t : model.tensors)
        if (t.shape.size() >= 2)
            bytes[t.type] += t.bytes.value;
    std::string best;
    std::uint64_t most = 0;
    for (const auto& [type, b] : bytes)
        if (b > most) {
            most = b;
            best = type;
        }
    return best;
}

} // namespace importers

namespace {

/// Prices the config's architecture: parameters and weights in its quantization or dtype.
void priceFromConfig(ImportedModel& model, const HfConfig& config, bool setBytes)
{
    const Architecture& arch = config.architecture;
    model.parameters = parameterCount(arch);
    if (!setBytes)
        return;
    const std::string id = config.weightFormatId.value_or(config.checkpointDtype);
    auto format = findFormat(id);
    if (!format) {
        model.warnings.push_back("weight format \"" + id + "\" unknown: priced in bf16");
        format = findFormat("bf16");
    }
    if (!format)
        return;
    WeightBill bill = priceWeights(arch, *format);
    model.weightsBytes = bill.totalBytes;
    model.bytesByType = bill.bytesByType;
    model.exactWeights = false;
}

void applyConfig(ImportedModel& model, const HfConfig& config)
{
    model.architecture = config.architecture;
    model.architectureName = config.modelType;
    model.modelName = config.nameOrPath;
    model.contextLength = config.contextLength;
    model.weightFormatId = config.weightFormatId.value_or(config.checkpointDtype);
    for (const auto& w : config.warnings)
        model.warnings.push_back("config.json: " + w);
}

std::string lowerDtypeToFormat(const std::string& type)
{
    if (type == "f16")
        return "fp16";
    if (type == "f32")
        return "fp32";
    return type; // bf16, ...
}

} // namespace

tl::expected<SafetensorsIndex, ImportError> parseSafetensorsIndex(std::string_view json, const std::string& fileName)
{
    if (json.size() > kSafetensorsIndexMaxBytes)
        return tl::unexpected(makeError(ImportErrorCode::BadValue, fileName,
                                        std::to_string(json.size()) + " bytes, more than the " + std::to_string(kSafetensorsIndexMaxBytes)
                                            + " an index may hold"));
    auto root = importers::parseJson(json, fileName);
    if (!root)
        return tl::unexpected(root.error());
    if (!root->is_object())
        return tl::unexpected(makeError(ImportErrorCode::BadJson, fileName, "expected a JSON object", 0));
    SafetensorsIndex out;
    out.contentHash = fnv1a64(json.data(), json.size());
    try {
        importers::JsonObject top(*root, fileName);
        const nlohmann::json* map = top.objectOf("weight_map");
        if (!map)
            return tl::unexpected(makeError(ImportErrorCode::MissingKey, fileName, "no weight_map", std::nullopt, "weight_map"));
        // The entries move from the DOM into the map, one node at a time (extract): the names are
        // never copied, and the peak is the DOM's, not the DOM plus the map.
        auto& entries = (*root)["weight_map"].get_ref<nlohmann::json::object_t&>();
        while (!entries.empty()) {
            auto node = entries.extract(entries.begin());
            if (!node.mapped().is_string())
                return tl::unexpected(makeError(ImportErrorCode::WrongKeyType, fileName,
                                                std::string("expected a shard file name, found ") + node.mapped().type_name(),
                                                std::nullopt, "weight_map." + node.key()));
            std::string shard = std::move(node.mapped().get_ref<std::string&>());
            if (shard.empty() || shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos ||
                shard == "." || shard == "..")
                return tl::unexpected(makeError(ImportErrorCode::BadValue, fileName,
                                                "shard name \"" + shard + "\" must be a plain file name in the directory",
                                                std::nullopt, "weight_map." + node.key()));
            out.weightMap.emplace_hint(out.weightMap.end(), std::move(node.key()), std::move(shard));
        }
        if (const nlohmann::json* meta = top.objectOf("metadata")) {
            importers::JsonObject m(*meta, fileName, "metadata");
            out.totalSizeBytes = m.uintOf("total_size");
        }
    } catch (const importers::JsonFailure& f) {
        return tl::unexpected(f.error);
    }
    return out;
}

tl::expected<ImportedModel, ImportError> importHfConfig(const std::filesystem::path& path)
{
    auto text = importers::readSmallFile(path, kHfConfigMaxBytes);
    if (!text)
        return tl::unexpected(text.error());
    auto config = parseHfConfig(*text, path.string());
    if (!config)
        return tl::unexpected(config.error());
    ImportedModel model;
    model.format = "hf-config";
    model.formatVersion = config->transformersVersion;
    model.path = path.string();
    applyConfig(model, *config);
    model.contentHash = hashHex(fnv1a64(text->data(), text->size()));
    try {
        priceFromConfig(model, *config, true);
    } catch (const std::exception& e) {
        return tl::unexpected(makeError(ImportErrorCode::Overflow, path.string(), std::string("pricing overflowed: ") + e.what()));
    }
    model.warnings.push_back("no tensor files read: parameters counted from the architecture, weights priced in " +
                             model.weightFormatId.value_or("bf16"));
    return model;
}

tl::expected<ImportedModel, ImportError> importModelDirectory(const std::filesystem::path& dir)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return tl::unexpected(makeError(ImportErrorCode::FileNotFound, dir.string(), "not a directory"));
    ImportedModel model;
    model.format = "safetensors";
    model.formatVersion = "1";
    model.path = dir.string();
    std::uint64_t hash = fnv1a64("", 0);

    std::optional<HfConfig> config;
    const fs::path configPath = dir / "config.json";
    if (fs::exists(configPath, ec)) {
        auto text = importers::readSmallFile(configPath, kHfConfigMaxBytes);
        if (!text)
            return tl::unexpected(text.error());
        auto parsed = parseHfConfig(*text, configPath.string());
        if (!parsed)
            return tl::unexpected(parsed.error());
        config = std::move(*parsed);
        hash = fnv1a64(text->data(), text->size(), hash);
        applyConfig(model, *config);
    }

    // The index (model.safetensors.index.json, or any *.safetensors.index.json).
    std::optional<SafetensorsIndex> index;
    fs::path indexPath = dir / "model.safetensors.index.json";
    std::vector<fs::path> shardFiles;
    std::vector<std::string> specialFiles; // a FIFO, a device, a socket: warned about, never read
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!fs::exists(indexPath, ec) && name.size() > 25 && name.ends_with(".safetensors.index.json"))
            indexPath = it->path();
        if (name.ends_with(".safetensors") && it->is_regular_file(ec))
            shardFiles.push_back(it->path());
        else if (name.ends_with(".safetensors"))
            if (const std::string kind = specialFileKind(it->path()); !kind.empty())
                specialFiles.push_back(safeText(name) + " is " + kind + ", not a regular file: skipped");
    }
    std::sort(specialFiles.begin(), specialFiles.end());
    std::sort(shardFiles.begin(), shardFiles.end());
    // A folder with a config.json and no safetensors index or shards is that config alone.
    if (!fs::exists(indexPath, ec) && shardFiles.empty() && fs::exists(configPath, ec)) {
        auto alone = importHfConfig(configPath);
        if (alone) {
            alone->path = dir.string();
            alone->warnings.push_back("no safetensors index or shards in the folder: read config.json alone");
            alone->warnings.insert(alone->warnings.end(), specialFiles.begin(), specialFiles.end());
        }
        return alone;
    }
    if (fs::exists(indexPath, ec)) {
        auto text = importers::readSmallFile(indexPath, kSafetensorsIndexMaxBytes);
        if (!text)
            return tl::unexpected(text.error());
        auto parsed = parseSafetensorsIndex(*text, indexPath.string());
        if (!parsed)
            return tl::unexpected(parsed.error());
        index = std::move(*parsed);
        hash = fnv1a64(text->data(), text->size(), hash);
    }
    if (!config && !index && shardFiles.empty())
        return tl::unexpected(makeError(ImportErrorCode::FileNotFound, dir.string(),
                                        "no config.json, model.safetensors.index.json or *.safetensors in the directory"));

    try {
        // Which shards the model needs, and which are here.
        std::set<std::string> needed;
        if (index)
            for (const auto& [name, shard] : index->weightMap)
                needed.insert(shard);
        else
            for (const auto& p : shardFiles)
                needed.insert(p.filename().string());
        std::set<std::string> present;
        for (const auto& p : shardFiles)
            present.insert(p.filename().string());
        std::vector<std::string> missing;
        for (const auto& s : needed)
            if (!present.count(s))
                missing.push_back(s);

        for (const auto& shard : needed) {
            if (!present.count(shard))
                continue;
            auto header = readSafetensorsHeader(dir / shard);
            if (!header)
                return tl::unexpected(header.error());
            hash = fnv1a64(&header->contentHash, sizeof header->contentHash, hash);
            for (auto& t : header->tensors)
                model.tensors.push_back(std::move(t));
        }
        importers::summarizeTensors(model);
        const bool complete = missing.empty() && !needed.empty();
        if (index) {
            if (complete) {
                // Cross-check: every indexed tensor was found, and the sum matches total_size.
                std::set<std::string> names;
                for (const auto& t : model.tensors)
                    names.insert(t.name);
                std::uint64_t absent = 0;
                for (const auto& [name, shard] : index->weightMap)
                    absent += names.count(name) == 0;
                if (absent)
                    model.warnings.push_back(std::to_string(absent) + " tensors of the index are in no shard header");
                if (index->totalSizeBytes && *index->totalSizeBytes != model.weightsBytes.value) {
                    const auto a = static_cast<long double>(model.weightsBytes.value);
                    const auto b = static_cast<long double>(*index->totalSizeBytes);
                    model.warnings.push_back("the shard headers sum to " + std::to_string(model.weightsBytes.value) +
                                             " bytes but the index's metadata.total_size is " +
                                             std::to_string(*index->totalSizeBytes) + " (difference " +
                                             std::to_string(static_cast<long long>(a - b)) + " bytes)");
                }
                model.exactWeights = true;
            } else {
                model.tensorCount = index->weightMap.size();
                if (index->totalSizeBytes) {
                    model.weightsBytes = Bytes{*index->totalSizeBytes};
                    model.exactWeights = true;
                    model.warnings.push_back(std::to_string(missing.size()) + " of " + std::to_string(needed.size()) +
                                             " shard files are absent: weights bytes from the index's metadata.total_size");
                } else if (config) {
                    priceFromConfig(model, *config, true);
                    model.warnings.push_back("shards absent and no metadata.total_size: weights priced from config.json");
                }
                if (!config)
                    model.warnings.push_back("no config.json: parameters unknown");
                if (!model.tensors.empty()) {
                    // Partial headers: keep the per-type split of what was read only as tensors.
                    model.bytesByType.clear();
                    model.tensorsByType.clear();
                }
                if (model.bytesByType.empty() && config && index->totalSizeBytes)
                    model.bytesByType[config->weightFormatId ? *config->weightFormatId : config->checkpointDtype] =
                        Bytes{*index->totalSizeBytes};
            }
        } else {
            model.exactWeights = !model.tensors.empty();
        }
        // Parameters: element counts are parameters unless the weights are packed (GPTQ/AWQ
        // int32, bitsandbytes uint8): then count them from the architecture.
        if (config && (!complete || config->weightFormatId))
            priceFromConfig(model, *config, false);
        if (!config && !complete)
            model.parameters = 0;
        if (!model.weightFormatId) {
            const std::string dom = importers::dominantMatrixType(model);
            if (!dom.empty())
                model.weightFormatId = lowerDtypeToFormat(dom);
        }
    } catch (const OverflowError& e) {
        return tl::unexpected(makeError(ImportErrorCode::Overflow, dir.string(), e.what()));
    }
    model.warnings.insert(model.warnings.end(), specialFiles.begin(), specialFiles.end());
    model.contentHash = hashHex(hash);
    return model;
}

tl::expected<ImportedModel, ImportError> importSafetensorsFile(const std::filesystem::path& path)
{
    auto header = readSafetensorsHeader(path);
    if (!header)
        return tl::unexpected(header.error());
    ImportedModel model;
    model.format = "safetensors";
    model.formatVersion = "1";
    model.path = path.string();
    model.tensors = std::move(header->tensors);
    std::uint64_t hash = header->contentHash;
    try {
        importers::summarizeTensors(model);
        model.exactWeights = true;
        std::error_code ec;
        const auto configPath = path.parent_path() / "config.json";
        if (std::filesystem::exists(configPath, ec)) {
            auto config = readHfConfig(configPath);
            if (!config)
                return tl::unexpected(config.error());
            applyConfig(model, *config);
            model.warnings.push_back("one shard of the model: the architecture comes from config.json, the bytes from this file only");
        }
        if (!model.weightFormatId) {
            const std::string dom = importers::dominantMatrixType(model);
            if (!dom.empty())
                model.weightFormatId = lowerDtypeToFormat(dom);
        }
    } catch (const OverflowError& e) {
        return tl::unexpected(makeError(ImportErrorCode::Overflow, path.string(), e.what()));
    }
    model.contentHash = hashHex(hash);
    return model;
}

} // namespace headroom
