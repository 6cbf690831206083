#include "jsonutil.h"

#include "importutil.h"

#include <cmath>
#include <set>
#include <vector>

namespace headroom::importers {

const char* jsonTypeName(const nlohmann::json& j)
{
    if (j.is_number_unsigned())
        return "unsigned integer";
    if (j.is_number_integer())
        return "negative integer";
    return j.type_name();
}

tl::expected<nlohmann::json, ImportError> parseJson(std::string_view text, const std::string& file,
                                                    std::uint64_t baseOffset)
{
    // Depth pre-scan (outside strings): deep nesting is refused before the parser recurses.
    int depth = 0;
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"')
            inString = true;
        else if (c == '{' || c == '[') {
            if (++depth > kMaxJsonDepth)
                return tl::unexpected(makeError(ImportErrorCode::NestingTooDeep, file,
                                                "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                                                baseOffset + i));
        } else if (c == '}' || c == ']')
            --depth;
    }
    // Duplicate keys are refused (nlohmann keeps the last one silently): one key set per open object.
    std::vector<std::set<std::string>> keys;
    std::optional<std::string> duplicate;
    auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        switch (event) {
        case nlohmann::json::parse_event_t::object_start: keys.emplace_back(); break;
        case nlohmann::json::parse_event_t::object_end:
            if (!keys.empty())
                keys.pop_back();
            break;
        case nlohmann::json::parse_event_t::key:
            if (!keys.empty() && parsed.is_string() && !keys.back().insert(parsed.get<std::string>()).second && !duplicate)
                duplicate = parsed.get<std::string>();
            break;
        default: break;
        }
        return true;
    };
    try {
        auto j = nlohmann::json::parse(text.begin(), text.end(), callback);
        if (duplicate)
            return tl::unexpected(makeError(ImportErrorCode::DuplicateKey, file,
                                            "key \"" + *duplicate + "\" appears twice in one object", std::nullopt, *duplicate));
        return j;
    } catch (const nlohmann::json::parse_error& e) {
        return tl::unexpected(makeError(ImportErrorCode::BadJson, file,
                                        std::string("invalid JSON: ") + e.what(),
                                        baseOffset + (e.byte > 0 ? e.byte - 1 : 0)));
    } catch (const std::exception& e) {
        return tl::unexpected(makeError(ImportErrorCode::BadJson, file, std::string("invalid JSON: ") + e.what(), baseOffset));
    }
}

const nlohmann::json* JsonObject::get(const char* key) const
{
    if (!m_j.is_object())
        return nullptr;
    auto it = m_j.find(key);
    if (it == m_j.end() || it->is_null())
        return nullptr;
    return &*it;
}

bool JsonObject::has(const char* key) const { return get(key) != nullptr; }

void JsonObject::wrongType(const char* key, const char* expected) const
{
    const nlohmann::json* v = get(key);
    throw JsonFailure{makeError(ImportErrorCode::WrongKeyType, m_file,
                                std::string("expected ") + expected + ", found " + (v ? jsonTypeName(*v) : "nothing"),
                                std::nullopt, path(key))};
}

void JsonObject::fail(ImportErrorCode code, const std::string& key, const std::string& message) const
{
    throw JsonFailure{makeError(code, m_file, message, std::nullopt, path(key))};
}

std::optional<std::uint64_t> JsonObject::uintOf(const char* key) const
{
    const nlohmann::json* v = get(key);
    if (!v)
        return std::nullopt;
    if (v->is_number_unsigned())
        return v->get<std::uint64_t>();
    if (v->is_number_integer())
        fail(ImportErrorCode::BadValue, key, "expected a non-negative integer, found " + v->dump());
    if (v->is_number_float()) {
        const double d = v->get<double>();
        if (d >= 0 && d < 1.8e19 && std::floor(d) == d)
            return static_cast<std::uint64_t>(d);
        fail(ImportErrorCode::BadValue, key, "expected a non-negative integer, found " + v->dump());
    }
    wrongType(key, "an integer");
}

std::optional<double> JsonObject::numberOf(const char* key) const
{
    const nlohmann::json* v = get(key);
    if (!v)
        return std::nullopt;
    if (!v->is_number())
        wrongType(key, "a number");
    return v->get<double>();
}

std::optional<bool> JsonObject::boolOf(const char* key) const
{
    const nlohmann::json* v = get(key);
    if (!v)
        return std::nullopt;
    if (!v->is_boolean())
        wrongType(key, "true or false");
    return v->get<bool>();
}

std::optional<std::string> JsonObject::stringOf(const char* key) const
{
    const nlohmann::json* v = get(key);
    if (!v)
        return std::nullopt;
    if (!v->is_string())
        wrongType(key, "a string");
    return v->get<std::string>();
}

const nlohmann::json* JsonObject::objectOf(const char* key) const
{
    const nlohmann::json* v = get(key);
    if (v && !v->is_object())
        wrongType(key, "an object");
    return v;
}

const nlohmann::json* JsonObject::arrayOf(const char* key) const
{
    const nlohmann::json* v = get(key);
    if (v && !v->is_array())
        wrongType(key, "an array");
    return v;
}

std::optional<std::uint64_t> JsonObject::firstUint(std::initializer_list<const char*> keys, std::string* found) const
{
    for (const char* k : keys)
        if (auto v = uintOf(k)) {
            if (found)
                *found = k;
            return v;
        }
    return std::nullopt;
}

} // namespace headroom::importers
