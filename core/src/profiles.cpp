#include "headroom/core/profiles.h"

#include "headroom/core/engines/engine.h"
#include "headroom/core/importers/regularfile.h"

#include "architecturejson.h"
#include "importers/importutil.h"
#include "importers/jsonutil.h"

#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

namespace headroom {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Profiles are small hand-written files; anything larger is not a profile.
constexpr std::uintmax_t kMaxProfileFileBytes = 4 * kMiB;

ProfileError makeError(const fs::path& file, std::string key, std::string message)
{
    return ProfileError{file.string(), std::move(key), std::move(message)};
}

/// "string \"32\"", "number 1.5", "null" — what a wrong value actually was.
std::string describeValue(const json& v)
{
    std::string text = v.dump();
    if (text.size() > 40)
        text = text.substr(0, 37) + "...";
    return std::string(v.type_name()) + (v.is_null() ? "" : " " + text);
}

/// Longest string a profile may hold (the longest built-in one, a source note, has 668 bytes). The
/// bound is checked before the schema: valijson matches `pattern` with std::regex, which recurses
/// once per character and overflows the stack on a 30,000-character id.
constexpr std::size_t kMaxProfileStringBytes = 4096;

/// The first string (key or value) longer than kMaxProfileStringBytes, as a JSON pointer, or nullopt.
/// Recursion is bounded by parseJson's depth limit (importers::kMaxJsonDepth).
std::optional<std::string> overlongString(const json& v, const std::string& pointer)
{
    if (v.is_string())
        return v.get_ref<const std::string&>().size() > kMaxProfileStringBytes ? std::optional(pointer) : std::nullopt;
    if (v.is_object()) {
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (it.key().size() > kMaxProfileStringBytes)
                return pointer + "/" + it.key().substr(0, 32) + "...";
            if (auto bad = overlongString(it.value(), pointer + "/" + it.key()))
                return bad;
        }
    } else if (v.is_array()) {
        for (std::size_t i = 0; i < v.size(); ++i)
            if (auto bad = overlongString(v[i], pointer + "/" + std::to_string(i)))
                return bad;
    }
    return std::nullopt;
}

/// Reads and parses one JSON file: a regular file of at most kMaxProfileFileBytes, nested at most
/// importers::kMaxJsonDepth deep, without duplicate keys, its strings at most kMaxProfileStringBytes.
tl::expected<json, ProfileError> readJsonFile(const fs::path& file)
{
    auto text = importers::readSmallFile(file, kMaxProfileFileBytes);
    if (!text)
        return tl::make_unexpected(makeError(file, text.error().key, text.error().message));
    auto doc = importers::parseJson(*text, file.string());
    if (!doc) {
        const ImportError& e = doc.error();
        std::string message = e.message;
        if (e.byteOffset && e.code != ImportErrorCode::BadJson) // parse errors carry the position already
            message += " (byte " + std::to_string(*e.byteOffset) + ")";
        return tl::make_unexpected(makeError(file, e.key.empty() ? "" : "/" + e.key, message));
    }
    if (auto bad = overlongString(*doc, ""))
        return tl::make_unexpected(makeError(file, *bad, "string longer than " + std::to_string(kMaxProfileStringBytes)
                                                             + " bytes (a profile's strings are short)"));
    return std::move(*doc);
}

/// One schema: the parsed valijson schema and its raw JSON (to explain type errors).
struct LoadedSchema {
    fs::path file;
    json raw;
    std::unique_ptr<valijson::Schema> schema;
};

tl::expected<LoadedSchema, ProfileError> loadSchema(const fs::path& file)
{
    auto raw = readJsonFile(file);
    if (!raw)
        return tl::make_unexpected(raw.error());
    LoadedSchema loaded;
    loaded.file = file;
    loaded.raw = std::move(*raw);
    loaded.schema = std::make_unique<valijson::Schema>();
    try {
        valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
        valijson::adapters::NlohmannJsonAdapter adapter(loaded.raw);
        parser.populateSchema(adapter, *loaded.schema);
    } catch (const std::exception& e) {
        return tl::make_unexpected(makeError(file, "", std::string("invalid JSON Schema: ") + e.what()));
    }
    return loaded;
}

/// Escapes one JSON pointer token (RFC 6901).
std::string escapePointerToken(const std::string& token)
{
    std::string out;
    for (char c : token) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

/// valijson's context ["<root>", "[architecture]", "[kv_heads]"] as "/architecture/kv_heads".
std::vector<std::string> contextTokens(const std::vector<std::string>& context)
{
    std::vector<std::string> tokens;
    for (const std::string& part : context) {
        if (part == "<root>")
            continue;
        if (part.size() >= 2 && part.front() == '[' && part.back() == ']')
            tokens.push_back(part.substr(1, part.size() - 2));
        else
            tokens.push_back(part);
    }
    return tokens;
}

std::string pointerOf(const std::vector<std::string>& tokens)
{
    std::string pointer;
    for (const std::string& t : tokens)
        pointer += "/" + escapePointerToken(t);
    return pointer;
}

/// The value at @p tokens in @p doc, or nullptr.
const json* valueAt(const json& doc, const std::vector<std::string>& tokens)
{
    const json* node = &doc;
    for (const std::string& t : tokens) {
        if (node->is_object()) {
            auto it = node->find(t);
            if (it == node->end())
                return nullptr;
            node = &*it;
        } else if (node->is_array()) {
            if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos)
                return nullptr;
            const auto index = std::stoull(t);
            if (index >= node->size())
                return nullptr;
            node = &(*node)[index];
        } else {
            return nullptr;
        }
    }
    return node;
}

/// The subschema describing the value at @p tokens (following properties/items), or nullptr.
const json* schemaAt(const json& schema, const std::vector<std::string>& tokens)
{
    const json* node = &schema;
    for (const std::string& t : tokens) {
        if (auto props = node->find("properties"); props != node->end() && props->contains(t))
            node = &(*props)[t];
        else if (auto items = node->find("items"); items != node->end() && items->is_object())
            node = &*items;
        else
            return nullptr;
    }
    return node;
}

/// Validates @p doc against @p schema; the first (most specific) error names its key.
std::optional<ProfileError> validateAgainst(const LoadedSchema& schema, const json& doc, const fs::path& file)
{
    valijson::Validator validator; // strict types: "32" is not an integer
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter adapter(doc);
    if (validator.validate(*schema.schema, adapter, &results))
        return std::nullopt;
    valijson::ValidationResults::Error error;
    if (!results.popError(error))
        return makeError(file, "", "does not match " + schema.file.filename().string());

    std::vector<std::string> tokens = contextTokens(error.context);
    std::string message = error.description;
    const std::string missing = "Missing required property '";
    const std::string extra = "constraints: '";
    if (message.rfind(missing, 0) == 0) {
        tokens.push_back(message.substr(missing.size(), message.size() - missing.size() - 2));
        message = "missing required key";
    } else if (const auto at = message.find(extra);
               at != std::string::npos && message.rfind("Object contains", 0) == 0) {
        tokens.push_back(message.substr(at + extra.size(), message.size() - at - extra.size() - 2));
        message = "unknown key (not in " + schema.file.filename().string() + ")";
    } else {
        const json* value = valueAt(doc, tokens);
        const json* sub = schemaAt(schema.raw, tokens);
        if (message.find("'type' constraint") != std::string::npos && sub && sub->contains("type"))
            message = "wrong type: expected " + (*sub)["type"].dump();
        else if (message.find("enum values") != std::string::npos && sub && sub->contains("enum"))
            message = "expected one of " + (*sub)["enum"].dump();
        if (value)
            message += ", found " + describeValue(*value);
    }
    return makeError(file, pointerOf(tokens), message);
}

/// schema_version is checked before the schema so that a newer file is refused with both versions.
std::optional<ProfileError> checkVersion(const json& doc, const fs::path& file)
{
    if (!doc.is_object())
        return makeError(file, "", "expected a JSON object, found " + std::string(doc.type_name()));
    auto it = doc.find("schema_version");
    if (it == doc.end())
        return makeError(file, "/schema_version", "missing required key (this build reads schema_version "
                                                      + std::to_string(kProfileSchemaVersion) + ")");
    if (!it->is_number_integer())
        return makeError(file, "/schema_version", "wrong type: expected \"integer\", found " + describeValue(*it));
    if (*it != kProfileSchemaVersion)
        return makeError(file, "/schema_version",
                         "schema_version " + it->dump() + " is not supported: this build reads schema_version "
                             + std::to_string(kProfileSchemaVersion));
    return std::nullopt;
}

// --- conversion of validated documents to the core structs -------------------------------------

std::optional<ProfileError> convert(const json& doc, const fs::path& file, ModelProfile& out)
{
    ModelProfile m;
    m.id = doc.at("id").get<std::string>();
    m.name = doc.at("name").get<std::string>();
    m.source = doc.at("source").get<std::string>();
    m.defaultFormat = doc.at("default_format").get<std::string>();
    Architecture arch;
    std::string key;
    std::string message;
    if (!architectureFromJson(doc.at("architecture"), arch, key, message))
        return makeError(file, "/architecture" + key, message);
    if (const std::string problem = validateArchitecture(arch); !problem.empty())
        return makeError(file, "/architecture", problem);
    m.architecture = std::move(arch);
    if (doc.contains("published_parameters"))
        m.publishedParameters = doc.at("published_parameters").get<std::uint64_t>();
    out = std::move(m);
    return std::nullopt;
}

std::optional<ProfileError> convert(const json& doc, const fs::path& file, Card& out)
{
    Card c;
    c.id = doc.at("id").get<std::string>();
    c.name = doc.at("name").get<std::string>();
    c.memoryClass = doc.at("memory_class").get<std::string>();
    c.totalBytes = Bytes{doc.at("total_bytes").get<std::uint64_t>()};
    c.bandwidthGBps = doc.at("bandwidth_gbps").get<double>();
    c.fp16Tflops = doc.at("fp16_tflops").get<double>();
    c.l2Bytes = Bytes{doc.at("l2_bytes").get<std::uint64_t>()};
    c.source = doc.at("source").get<std::string>();
    // Card has no field for the note; keep it with the source so that it is shown where the source is.
    if (const auto note = doc.at("total_note").get<std::string>(); !note.empty())
        c.source += ". Total: " + note;
    c.anonymous = false;
    c.totalEstimated = doc.contains("total_estimated") && doc.at("total_estimated").get<bool>();
    if (const auto link = doc.find("interconnect"); link != doc.end()) {
        c.interconnect = parseInterconnect(link->get<std::string>());
        if (!c.interconnect) // the schema's enum names the same values; kept for a schema out of step
            return makeError(file, "/interconnect", "unknown interconnect " + link->dump());
    }
    out = std::move(c);
    return std::nullopt;
}

std::optional<ProfileError> convert(const json& doc, const fs::path& file, EnginePolicy& out)
{
    EnginePolicy e;
    e.id = doc.at("id").get<std::string>();
    e.name = doc.at("name").get<std::string>();
    if (!parseEngineKind(doc.at("kind").get<std::string>(), e.kind))
        return makeError(file, "/kind", "unknown engine kind " + doc.at("kind").dump());
    e.version = doc.at("version").get<std::string>();
    e.memoryFraction = doc.at("memory_fraction").get<double>();
    e.fixedReserve = Bytes{doc.at("fixed_reserve_bytes").get<std::uint64_t>()};
    e.runtimeBytes = Bytes{doc.at("runtime_bytes").get<std::uint64_t>()};
    e.workspaceBytes = Bytes{doc.at("workspace_bytes").get<std::uint64_t>()};
    e.cudaGraphBytes = Bytes{doc.at("cuda_graph_bytes").get<std::uint64_t>()};
    e.blockTokens = doc.at("block_tokens").get<std::uint64_t>();
    e.cellPaddingFlash = doc.at("cell_padding_flash").get<std::uint64_t>();
    e.cellPaddingNoFlash = doc.at("cell_padding_no_flash").get<std::uint64_t>();
    e.minContextTokens = doc.at("min_context_tokens").get<std::uint64_t>();
    e.ubatchTokens = doc.at("ubatch_tokens").get<std::uint64_t>();
    e.flashAttention = doc.at("flash_attention").get<bool>();
    e.logitsOnDevice = doc.at("logits_on_device").get<bool>();
    e.fragmentationFraction = doc.at("fragmentation_fraction").get<double>();
    e.source = doc.at("source").get<std::string>();
    if (const auto v = doc.find("versions"); v != doc.end()) {
        e.versionFrom = v->value("from", std::string());
        e.versionUntil = v->value("until", std::string());
        if (!e.versionFrom.empty() && !e.versionUntil.empty() && compareVersions(e.versionFrom, e.versionUntil) >= 0)
            return makeError(file, "/versions", "expected from < until, found " + e.versionFrom + " and " + e.versionUntil);
    }
    if (const auto s = doc.find("settings"); s != doc.end()) {
        for (const auto& [key, value] : s->items())
            e.settingDefaults[key] = value.is_string() ? value.get<std::string>() : value.dump();
        // The engine unit declares its keys: a default it does not know, or of the wrong type, is an error here.
        auto parsed = parseEngineSettings(engineFor(e.kind).settings(), e.settingDefaults, {}, e.name);
        if (!parsed)
            return makeError(file, "/settings", parsed.error());
    }
    if (const auto r = doc.find("rules"); r != doc.end()) {
        for (const auto& [rule, where] : r->items())
            e.ruleSources[rule] = where.get<std::string>();
    }
    out = std::move(e);
    return std::nullopt;
}

/// Every *.json file directly in @p dir, sorted by name. Missing folder: empty list. A *.json
/// that is no regular file (a FIFO, a device, a socket, a folder, a link to one) is left out,
/// with a warning naming it in @p special when given (the user folder).
tl::expected<std::vector<fs::path>, ProfileError> listJsonFiles(const fs::path& dir, std::vector<ProfileError>* special = nullptr)
{
    std::vector<fs::path> files;
    std::error_code ec;
    if (!fs::exists(dir, ec))
        return files;
    if (!fs::is_directory(dir, ec))
        return tl::make_unexpected(makeError(dir, "", "not a folder"));
    fs::directory_iterator it(dir, ec);
    if (ec)
        return tl::make_unexpected(makeError(dir, "", "cannot list folder: " + ec.message()));
    const std::size_t before = special ? special->size() : 0;
    for (const fs::directory_entry& entry : it) {
        std::error_code typeEc;
        if (entry.path().extension() != ".json")
            continue;
        if (entry.is_regular_file(typeEc))
            files.push_back(entry.path());
        else if (special)
            special->push_back(makeError(entry.path(), "", specialFileKind(entry.path()) + ", not a regular file"));
    }
    std::sort(files.begin(), files.end());
    if (special)
        std::sort(special->end() - static_cast<std::ptrdiff_t>(special->size() - before), special->end(),
                  [](const ProfileError& a, const ProfileError& b) { return a.file < b.file; });
    return files;
}

/// Checks a profile must pass before its schema: none for models and engines.
template <typename T>
std::optional<ProfileError> checkBeforeSchema(const json&, const fs::path&)
{
    return std::nullopt;
}

/// A card's total against the largest card size (card.h cardSizeProblem), before the schema: the
/// schema validator reads integers as signed 64-bit, so 2^63 bytes read as negative ("below the
/// minimum of 1").
template <>
std::optional<ProfileError> checkBeforeSchema<Card>(const json& doc, const fs::path& file)
{
    const auto total = doc.find("total_bytes");
    if (total == doc.end() || !total->is_number_unsigned())
        return std::nullopt;
    if (const std::string problem = cardSizeProblem(total->get<std::uint64_t>()); !problem.empty())
        return makeError(file, "/total_bytes", problem);
    return std::nullopt;
}

/// Loads one profile file: read, version, schema, conversion.
template <typename T>
tl::expected<T, ProfileError> loadOne(const fs::path& file, const LoadedSchema& schema)
{
    auto doc = readJsonFile(file);
    if (!doc)
        return tl::make_unexpected(doc.error());
    if (auto error = checkVersion(*doc, file))
        return tl::make_unexpected(*error);
    if (auto error = checkBeforeSchema<T>(*doc, file))
        return tl::make_unexpected(*error);
    if (auto error = validateAgainst(schema, *doc, file))
        return tl::make_unexpected(*error);
    T item;
    if (auto error = convert(*doc, file, item))
        return tl::make_unexpected(*error);
    return item;
}

/// Loads every profile of one kind from @p dir (validated against @p schema); ids must be unique
/// within the folder. With @p skipped (the user folder), a bad file is skipped and its error
/// appended there; without it (the built-in folder), the first error is returned.
template <typename T>
std::optional<ProfileError> loadKind(const fs::path& dir, const LoadedSchema& schema, std::vector<T>& out,
                                     std::vector<ProfileError>* skipped = nullptr)
{
    auto files = listJsonFiles(dir, skipped);
    if (!files) {
        if (!skipped)
            return files.error();
        skipped->push_back(files.error());
        return std::nullopt;
    }
    std::map<std::string, fs::path> seen;
    for (const fs::path& file : *files) {
        auto item = loadOne<T>(file, schema);
        if (item) {
            if (auto [it, inserted] = seen.emplace(item->id, file); !inserted)
                item = tl::make_unexpected(makeError(file, "/id", "duplicate id \"" + item->id + "\" (also in "
                                                                      + it->second.string() + ")"));
        }
        if (!item) {
            if (!skipped)
                return item.error();
            skipped->push_back(item.error());
            continue;
        }
        out.push_back(std::move(*item));
    }
    return std::nullopt;
}

/// A user entry replaces the built-in entry with the same id; new ids are appended.
template <typename T>
void overlay(std::vector<T>& base, std::vector<T>&& user)
{
    for (T& item : user) {
        auto it = std::find_if(base.begin(), base.end(), [&](const T& b) { return b.id == item.id; });
        if (it != base.end())
            *it = std::move(item);
        else
            base.push_back(std::move(item));
    }
}

tl::expected<ProfileSet, ProfileError> loadProfilesImpl(const fs::path& builtinDir, const fs::path& userDir)
{
    std::error_code ec;
    if (!fs::is_directory(builtinDir, ec))
        return tl::make_unexpected(makeError(builtinDir, "", "built-in profile folder not found"));
    auto modelSchema = loadSchema(builtinDir / "schemas" / "model.schema.json");
    if (!modelSchema)
        return tl::make_unexpected(modelSchema.error());
    auto cardSchema = loadSchema(builtinDir / "schemas" / "card.schema.json");
    if (!cardSchema)
        return tl::make_unexpected(cardSchema.error());
    auto engineSchema = loadSchema(builtinDir / "schemas" / "engine.schema.json");
    if (!engineSchema)
        return tl::make_unexpected(engineSchema.error());

    ProfileSet set;
    if (auto error = loadKind(builtinDir / "models", *modelSchema, set.models))
        return tl::make_unexpected(*error);
    if (auto error = loadKind(builtinDir / "cards", *cardSchema, set.cards))
        return tl::make_unexpected(*error);
    if (auto error = loadKind(builtinDir / "engines", *engineSchema, set.engines))
        return tl::make_unexpected(*error);

    // The user folder never breaks every command: a bad file is skipped, with a warning naming it.
    if (userDir.empty() || !fs::exists(userDir, ec))
        return set;
    if (!fs::is_directory(userDir, ec)) {
        set.warnings.push_back(makeError(userDir, "", "user profile path is not a folder (ignored)"));
        return set;
    }
    ProfileSet user;
    loadKind(userDir / "models", *modelSchema, user.models, &set.warnings);
    loadKind(userDir / "cards", *cardSchema, user.cards, &set.warnings);
    loadKind(userDir / "engines", *engineSchema, user.engines, &set.warnings);
    overlay(set.models, std::move(user.models));
    overlay(set.cards, std::move(user.cards));
    overlay(set.engines, std::move(user.engines));
    return set;
}

template <typename T>
const T* findById(const std::vector<T>& items, const std::string& id)
{
    auto it = std::find_if(items.begin(), items.end(), [&](const T& item) { return item.id == id; });
    return it != items.end() ? &*it : nullptr;
}

/// The environment variable @p name, or "" when unset.
std::string env(const char* name)
{
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

bool isDirectory(const fs::path& p)
{
    std::error_code ec;
    return fs::is_directory(p, ec);
}

} // namespace

std::string toString(const ProfileError& error)
{
    if (error.key.empty())
        return error.file + ": " + error.message;
    return error.file + ": " + error.key + ": " + error.message;
}

const ModelProfile* ProfileSet::findModel(const std::string& id) const
{
    return findById(models, id);
}

const Card* ProfileSet::findCard(const std::string& id) const
{
    return findById(cards, id);
}

const EnginePolicy* ProfileSet::findEngine(const std::string& id) const
{
    return findById(engines, id);
}

tl::expected<ProfileSet, ProfileError> loadProfiles(const fs::path& builtinDir, const fs::path& userDir)
{
    // Nothing thrown by nlohmann, valijson or the standard library crosses the core API (STYLE.md §6).
    try {
        return loadProfilesImpl(builtinDir, userDir);
    } catch (const std::exception& e) {
        return tl::make_unexpected(makeError(builtinDir, "", std::string("cannot load profiles: ") + e.what()));
    }
}

fs::path defaultProfilesDir(const fs::path& executablePath)
{
    if (const std::string fromEnv = env("HEADROOM_PROFILES"); !fromEnv.empty())
        return fs::path(fromEnv);
    if (!executablePath.empty()) {
        // Lexically, so that <exe>/.. means the executable's parent even through symlinks.
        const fs::path exeDir = executablePath.parent_path();
        for (const fs::path& candidate : {(exeDir / ".." / "share" / "headroom" / "profiles").lexically_normal(),
                                          (exeDir / ".." / ".." / "profiles").lexically_normal()}) {
            if (isDirectory(candidate))
                return candidate;
        }
    }
#ifdef HEADROOM_SOURCE_PROFILES_DIR
    return fs::path(HEADROOM_SOURCE_PROFILES_DIR);
#else
    return {};
#endif
}

fs::path defaultUserProfilesDir()
{
    if (const std::string fromEnv = env("HEADROOM_USER_PROFILES"); !fromEnv.empty())
        return fs::path(fromEnv);
    if (const std::string xdg = env("XDG_CONFIG_HOME"); !xdg.empty())
        return fs::path(xdg) / "headroom" / "profiles";
    if (const std::string home = env("HOME"); !home.empty())
        return fs::path(home) / ".config" / "headroom" / "profiles";
    return {};
}

} // namespace headroom
