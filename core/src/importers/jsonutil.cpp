#include "jsonutil.h"

#include "importutil.h"

#include <cmath>
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

/// SAX handler that builds the DOM and refuses a duplicate key through the object being built
/// (its std::map: one O(log n) lookup per key, no copy of the keys). nlohmann's own builder keeps
/// the last of two equal keys silently, and a key set per open object beside it cost a copy of
/// every key (a third of the time and memory of a large index). Stops (returns false) at the
/// first duplicate key; a syntax error is kept for the caller (parse_error).
class DomSax {
public:
    using json = nlohmann::json;

    bool null() { return put(json(nullptr)); }
    bool boolean(bool v) { return put(json(v)); }
    bool number_integer(json::number_integer_t v) { return put(json(v)); }
    bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
    bool number_float(json::number_float_t v, const json::string_t&) { return put(json(v)); }
    bool string(json::string_t& v) { return put(json(std::move(v))); }
    bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
    bool start_object(std::size_t) { return open(json::object()); }
    bool start_array(std::size_t) { return open(json::array()); }
    bool key(json::string_t& k)
    {
        auto& object = m_stack.back()->get_ref<json::object_t&>();
        auto [it, inserted] = object.try_emplace(std::move(k));
        if (!inserted) {
            m_duplicate = it->first;
            return false;
        }
        m_slot = &it->second;
        return true;
    }
    bool end_object()
    {
        m_stack.pop_back();
        return true;
    }
    bool end_array()
    {
        m_stack.pop_back();
        return true;
    }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e)
    {
        m_syntax = {position, e.what()};
        return false;
    }

    const std::optional<std::string>& duplicate() const { return m_duplicate; }
    /// Where the syntax error is (characters read) and what it is, if one was found.
    const std::optional<std::pair<std::size_t, std::string>>& syntaxError() const { return m_syntax; }
    json take() { return std::move(m_root); }

private:
    /// Places @p v as the root, the next array item or the value of the last key; its address.
    json* place(json&& v)
    {
        if (m_stack.empty()) {
            m_root = std::move(v);
            return &m_root;
        }
        json& top = *m_stack.back();
        if (top.is_array()) {
            auto& array = top.get_ref<json::array_t&>();
            array.push_back(std::move(v));
            return &array.back();
        }
        *m_slot = std::move(v);
        return m_slot;
    }
    bool put(json&& v)
    {
        place(std::move(v));
        return true;
    }
    bool open(json&& container)
    {
        m_stack.push_back(place(std::move(container)));
        return true;
    }

    json m_root;
    std::vector<json*> m_stack; ///< the open arrays and objects (an array's last item stays put while it is open)
    json* m_slot = nullptr;     ///< the value of the last key of the innermost object
    std::optional<std::string> m_duplicate;
    std::optional<std::pair<std::size_t, std::string>> m_syntax;
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
    // Duplicate keys are refused (nlohmann keeps the last one silently), through the object being
    // built: linear in the text, with no copy of the keys. (A parser callback would be quadratic:
    // nlohmann's callback DOM builder rescans the parent object at the end of every child,
    // json_sax_dom_callback_parser::end_object in nlohmann/json 3.11.)
    DomSax sax;
    bool ok = false;
    try {
        ok = nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
    } catch (const std::exception& e) {
        return tl::unexpected(makeError(ImportErrorCode::BadJson, file, std::string("invalid JSON: ") + e.what(), baseOffset));
    }
    if (sax.duplicate())
        return tl::unexpected(makeError(ImportErrorCode::DuplicateKey, file,
                                        "key \"" + *sax.duplicate() + "\" appears twice in one object", std::nullopt,
                                        *sax.duplicate()));
    if (const auto& syntax = sax.syntaxError())
        return tl::unexpected(makeError(ImportErrorCode::BadJson, file, "invalid JSON: " + syntax->second,
                                        baseOffset + (syntax->first > 0 ? syntax->first - 1 : 0)));
    if (!ok)
        return tl::unexpected(makeError(ImportErrorCode::BadJson, file, "invalid JSON", baseOffset));
    return sax.take();
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

bool JsonObject::isString(const char* key) const
{
    const nlohmann::json* v = get(key);
    return v && v->is_string();
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
