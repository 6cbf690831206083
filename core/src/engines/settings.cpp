#include "headroom/core/engines/settings.h"

#include "headroom/core/units.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace headroom {

namespace {

constexpr std::size_t kMaxSettingText = 256; // longer keys/values are rejected, not copied

std::string shown(const std::string& text)
{
    if (text.size() <= 64)
        return "'" + text + "'";
    return "'" + text.substr(0, 64) + "...' (" + std::to_string(text.size()) + " characters)";
}

std::string numberText(double x)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", x);
    return buf;
}

std::string boundsText(const SettingSpec& spec)
{
    if (spec.maximum > spec.minimum)
        return " from " + numberText(spec.minimum) + " to " + numberText(spec.maximum);
    return "";
}

bool inBounds(const SettingSpec& spec, double x)
{
    return !(spec.maximum > spec.minimum) || (x >= spec.minimum && x <= spec.maximum);
}

std::optional<std::uint64_t> parseWhole(const std::string& t)
{
    if (t.empty() || t.size() > 19)
        return std::nullopt;
    for (char c : t)
        if (c < '0' || c > '9')
            return std::nullopt;
    return std::strtoull(t.c_str(), nullptr, 10);
}

std::optional<double> parseDecimal(const std::string& t)
{
    if (t.empty() || t.size() > 40)
        return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const double x = std::strtod(t.c_str(), &end);
    if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(x))
        return std::nullopt;
    return x;
}

std::optional<bool> parseBool(const std::string& t)
{
    std::string l;
    for (char c : t)
        l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l == "true" || l == "1" || l == "on" || l == "yes")
        return true;
    if (l == "false" || l == "0" || l == "off" || l == "no")
        return false;
    return std::nullopt;
}

std::string stripDashes(const std::string& key)
{
    std::size_t i = 0;
    while (i < key.size() && i < 2 && key[i] == '-')
        ++i;
    return key.substr(i);
}

const SettingSpec* findSpec(const std::vector<SettingSpec>& specs, const std::string& key)
{
    for (const SettingSpec& s : specs) {
        if (s.key == key || std::find(s.aliases.begin(), s.aliases.end(), key) != s.aliases.end())
            return &s;
    }
    return nullptr;
}

std::string swapSeparators(std::string key)
{
    for (char& c : key) {
        if (c == '_')
            c = '-';
        else if (c == '-')
            c = '_';
    }
    return key;
}

std::string unknownKey(const std::vector<SettingSpec>& specs, const std::string& key, const std::string& engineName)
{
    std::string msg = "unknown " + engineName + " setting " + shown(key);
    if (const SettingSpec* near = findSpec(specs, swapSeparators(key)))
        msg += ": did you mean '" + near->key + "'?";
    msg += " (known: ";
    for (std::size_t i = 0; i < specs.size(); ++i)
        msg += (i ? ", " : "") + specs[i].key;
    return msg + ")";
}

} // namespace

const char* settingTypeDescription(SettingType type)
{
    switch (type) {
    case SettingType::Integer: return "a whole number";
    case SettingType::Number: return "a number";
    case SettingType::Boolean: return "true or false";
    case SettingType::Size: return "a size in bytes (4294967296, 4GiB, 512MiB)";
    case SettingType::Choice: return "one of";
    case SettingType::List: return "numbers separated by ',' or '/' (3,1)";
    case SettingType::Text: return "printable text";
    }
    return "a value";
}

const SettingValue* EngineSettings::find(const std::string& key) const
{
    for (const SettingValue& v : m_values)
        if (v.key == key)
            return &v;
    return nullptr;
}

bool EngineSettings::given(const std::string& key) const
{
    const SettingValue* v = find(key);
    return v && v->given;
}

std::optional<std::uint64_t> EngineSettings::integer(const std::string& key) const
{
    const SettingValue* v = find(key);
    if (!v || (v->type != SettingType::Integer && v->type != SettingType::Size && v->type != SettingType::Boolean))
        return std::nullopt;
    return v->integer;
}

std::optional<double> EngineSettings::number(const std::string& key) const
{
    const SettingValue* v = find(key);
    if (!v || v->type == SettingType::Choice || v->type == SettingType::List || v->type == SettingType::Text)
        return std::nullopt;
    return v->number;
}

std::optional<bool> EngineSettings::boolean(const std::string& key) const
{
    const SettingValue* v = find(key);
    if (!v || v->type != SettingType::Boolean)
        return std::nullopt;
    return v->integer != 0;
}

std::optional<std::string> EngineSettings::text(const std::string& key) const
{
    const SettingValue* v = find(key);
    if (!v)
        return std::nullopt;
    return v->text;
}

void EngineSettings::setDerived(SettingValue value)
{
    if (given(value.key))
        return;
    value.given = false;
    put(std::move(value));
}

void EngineSettings::put(SettingValue value)
{
    for (SettingValue& v : m_values) {
        if (v.key == value.key) {
            v = std::move(value);
            return;
        }
    }
    m_values.push_back(std::move(value));
}

tl::expected<SettingValue, std::string> parseSettingValue(const SettingSpec& spec, const std::string& text,
                                                          const std::string& engineName)
{
    const std::string where = engineName + " setting '" + spec.key + "'";
    if (text.size() > kMaxSettingText)
        return tl::unexpected(where + ": expected " + settingTypeDescription(spec.type) + ", found a value of "
                              + std::to_string(text.size()) + " characters");
    SettingValue v;
    v.key = spec.key;
    v.type = spec.type;
    switch (spec.type) {
    case SettingType::Integer: {
        const auto n = parseWhole(text);
        if (!n || !inBounds(spec, static_cast<double>(*n)))
            return tl::unexpected(where + ": expected a whole number" + boundsText(spec) + ", found " + shown(text));
        v.integer = *n;
        v.number = static_cast<double>(*n);
        v.text = std::to_string(*n);
        break;
    }
    case SettingType::Number: {
        const auto x = parseDecimal(text);
        if (!x || !inBounds(spec, *x))
            return tl::unexpected(where + ": expected a number" + boundsText(spec) + ", found " + shown(text));
        v.number = *x;
        v.text = numberText(*x);
        break;
    }
    case SettingType::Boolean: {
        const auto b = parseBool(text);
        if (!b)
            return tl::unexpected(where + ": expected true or false, found " + shown(text));
        v.integer = *b ? 1 : 0;
        v.number = static_cast<double>(v.integer);
        v.text = *b ? "true" : "false";
        break;
    }
    case SettingType::Size: {
        std::optional<Bytes> size;
        if (const auto n = parseWhole(text))
            size = Bytes{*n};
        else
            size = parseSize(text);
        if (!size || !inBounds(spec, static_cast<double>(size->value)))
            return tl::unexpected(where + ": expected a size in bytes (4294967296, 4GiB, 512MiB)" + boundsText(spec)
                                  + ", found " + shown(text));
        v.integer = size->value;
        v.number = static_cast<double>(size->value);
        v.text = std::to_string(size->value);
        break;
    }
    case SettingType::Choice: {
        if (std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end()) {
            std::string list;
            for (std::size_t i = 0; i < spec.choices.size(); ++i)
                list += (i ? ", " : "") + spec.choices[i];
            return tl::unexpected(where + ": expected one of " + list + ", found " + shown(text));
        }
        v.text = text;
        break;
    }
    case SettingType::List: {
        std::size_t items = 0;
        std::string item;
        bool ok = !text.empty();
        for (std::size_t i = 0; ok && i <= text.size(); ++i) {
            if (i == text.size() || text[i] == ',' || text[i] == '/') {
                const auto x = parseDecimal(item);
                ok = x && *x >= 0 && ++items <= 16;
                item.clear();
            } else {
                item += text[i];
            }
        }
        if (!ok)
            return tl::unexpected(where + ": expected at most 16 non-negative numbers separated by ',' or '/' (3,1), found "
                                  + shown(text));
        v.text = text;
        break;
    }
    case SettingType::Text: {
        const bool printable = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
        if (!printable)
            return tl::unexpected(where + ": expected " + settingTypeDescription(spec.type) + " (ASCII), found " + shown(text));
        v.text = text;
        break;
    }
    }
    return v;
}

tl::expected<EngineSettings, std::string> parseEngineSettings(const std::vector<SettingSpec>& specs,
                                                              const std::map<std::string, std::string>& versionDefaults,
                                                              const std::vector<EngineSetting>& given,
                                                              const std::string& engineName)
{
    EngineSettings out;
    for (const SettingSpec& spec : specs) {
        const auto profiled = versionDefaults.find(spec.key);
        const std::string text = profiled != versionDefaults.end() ? profiled->second : spec.defaultValue;
        if (text.empty())
            continue;
        auto v = parseSettingValue(spec, text, engineName);
        if (!v)
            return tl::unexpected("default of " + v.error());
        out.put(std::move(*v));
    }
    for (const auto& [key, text] : versionDefaults) {
        if (!findSpec(specs, key))
            return tl::unexpected("engine profile default: " + unknownKey(specs, key, engineName));
    }
    for (const EngineSetting& pair : given) {
        const std::string key = stripDashes(pair.key);
        const SettingSpec* spec = findSpec(specs, key);
        if (!spec)
            return tl::unexpected(unknownKey(specs, key, engineName));
        auto v = parseSettingValue(*spec, pair.value, engineName);
        if (!v)
            return tl::unexpected(v.error());
        v->given = true;
        out.put(std::move(*v));
    }
    return out;
}

tl::expected<EngineSetting, std::string> parseSettingArgument(const std::string& argument)
{
    if (argument.size() > 2 * kMaxSettingText)
        return tl::unexpected("--set: expected KEY=VALUE, found an argument of " + std::to_string(argument.size())
                              + " characters");
    const std::size_t eq = argument.find('=');
    EngineSetting s;
    s.key = argument.substr(0, eq);
    s.value = eq == std::string::npos ? "true" : argument.substr(eq + 1);
    if (stripDashes(s.key).empty())
        return tl::unexpected("--set: expected KEY=VALUE (max-model-len=8192), found " + shown(argument));
    return s;
}

} // namespace headroom
