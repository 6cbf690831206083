#include "jsonutil.h"

#include "importutil.h"

#include <cmath>
#include <unordered_set>
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

namespace {

/// SAX handler: nlohmann's own DOM builder, plus a set of the keys seen in each open object.
/// Stops the parse (returns false) at the first duplicate key.
class DuplicateKeySax {
public:
    using json = nlohmann::json;
    DuplicateKeySax() : m_dom(m_root, true) {}

    bool null() { return m_dom.null(); }
    bool boolean(bool v) { return m_dom.boolean(v); }
    bool number_integer(json::number_integer_t v) { return m_dom.number_integer(v); }
    bool number_unsigned(json::number_unsigned_t v) { return m_dom.number_unsigned(v); }
    bool number_float(json::number_float_t v, const json::string_t& s) { return m_dom.number_float(v, s); }
    bool string(json::string_t& v) { return m_dom.string(v); }
    bool binary(json::binary_t& v) { return m_dom.binary(v); }
    bool start_object(std::size_t n)
    {
        m_keys.emplace_back();
        return m_dom.start_object(n);
    }
    bool key(json::string_t& k)
    {
        if (!m_keys.back().insert(k).second) {
            m_duplicate = k;
            return false;
        }
        return m_dom.key(k);
    }
    bool end_object()
    {
        m_keys.pop_back();
        return m_dom.end_object();
    }
    bool start_array(std::size_t n) { return m_dom.start_array(n); }
    bool end_array() { return m_dom.end_array(); }
    bool parse_error(std::size_t pos, const std::string& token, const nlohmann::detail::exception& e)
    {
        return m_dom.parse_error(pos, token, e); // throws the parse_error (allow_exceptions)
    }

    const std::optional<std::string>& duplicate() const { return m_duplicate; }
    json take() { return std::move(m_root); }

private:
    json m_root;
    nlohmann::detail::json_sax_dom_parser<json> m_dom;
    std::vector<std::unordered_set<std::string>> m_keys;
    std::optional<std::string> m_duplicate;
};

} // namespace

std::optional<std::size_t> excessiveNestingAt(std::string_view text, int maxDepth)
{
    // Outside strings only; the scan does not validate (the parser does).
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
            if (++depth > maxDepth)
                return i;
        } else if (c == '}' || c == ']')
            --depth;
    }
    return std::nullopt;
}

tl::expected<nlohmann::json, ImportError> parseJson(std::string_view text, const std::string& file,
                                                    std::uint64_t baseOffset)
{
    if (auto at = excessiveNestingAt(text, kMaxJsonDepth))
        return tl::unexpected(makeError(ImportErrorCode::NestingTooDeep, file,
                                        "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                                        baseOffset + *at));
    // Duplicate keys are refused (nlohmann keeps the last one silently). The check runs in a SAX
    // handler beside the DOM builder, one hash set per open object: linear in the text. (A parser
    // callback would be quadratic: nlohmann's callback DOM builder rescans the parent object at the
    // end of every child, json_sax_dom_callback_parser::end_object in nlohmann/json 3.11.)
    DuplicateKeySax sax;
    try {
        const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
        if (sax.duplicate())
            return tl::unexpected(makeError(ImportErrorCode::DuplicateKey, file,
                                            "key \"" + *sax.duplicate() + "\" appears twice in one object", std::nullopt,
                                            *sax.duplicate()));
        if (!ok)
            return tl::unexpected(makeError(ImportErrorCode::BadJson, file, "invalid JSON", baseOffset));
        return sax.take();
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
