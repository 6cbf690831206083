#pragma once
// JSON helpers for the importers (not public API): parsing untrusted text without exceptions
// crossing the API, and typed key access that reports wrong types.

#include "headroom/core/importers/importerror.h"

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace headroom::importers {

/// Deepest JSON nesting accepted (configs nest 3 levels; deeper input is hostile).
inline constexpr int kMaxJsonDepth = 64;

/// Byte offset of the first '{' or '[' (outside strings) that opens a level deeper than
/// @p maxDepth, or nullopt. Lets a caller refuse deep nesting before any recursive code (dump,
/// valijson, destructors) sees it. Linear, no allocation.
std::optional<std::size_t> excessiveNestingAt(std::string_view text, int maxDepth);

/// Parses @p text: BadJson with the byte offset of the syntax error, NestingTooDeep past
/// kMaxJsonDepth. @p baseOffset is added to offsets (the safetensors JSON starts at byte 8).
tl::expected<nlohmann::json, ImportError> parseJson(std::string_view text, const std::string& file,
                                                    std::uint64_t baseOffset = 0);

/// Thrown inside the importers by the typed accessors; caught at the API boundary.
struct JsonFailure {
    ImportError error;
};

/// Typed access to an object's keys: a present key of the wrong type throws JsonFailure
/// (WrongKeyType); a null value counts as absent.
class JsonObject {
public:
    JsonObject(const nlohmann::json& j, std::string file, std::string prefix = {})
        : m_j(j), m_file(std::move(file)), m_prefix(std::move(prefix)) {}

    bool has(const char* key) const;
    /// Whether @p key is present and a string (a key that may be a number or a word, such as
    /// Falcon-H1's mamba_d_head: 64 or "auto").
    bool isString(const char* key) const;
    std::optional<std::uint64_t> uintOf(const char* key) const;
    std::optional<double> numberOf(const char* key) const;
    std::optional<bool> boolOf(const char* key) const;
    std::optional<std::string> stringOf(const char* key) const;
    /// The object at @p key, or nullptr when absent or null (WrongKeyType when another type).
    const nlohmann::json* objectOf(const char* key) const;
    /// The array at @p key, or nullptr when absent or null.
    const nlohmann::json* arrayOf(const char* key) const;
    /// First present key of @p keys as an unsigned integer (the name found goes to @p found).
    std::optional<std::uint64_t> firstUint(std::initializer_list<const char*> keys, std::string* found = nullptr) const;

    [[noreturn]] void wrongType(const char* key, const char* expected) const;
    [[noreturn]] void fail(ImportErrorCode code, const std::string& key, const std::string& message) const;
    std::string path(const std::string& key) const { return m_prefix.empty() ? key : key.empty() ? m_prefix : m_prefix + "." + key; }
    const std::string& file() const { return m_file; }

private:
    const nlohmann::json* get(const char* key) const;
    const nlohmann::json& m_j;
    std::string m_file;
    std::string m_prefix;
};

/// The JSON type name for messages ("string", "number").
const char* jsonTypeName(const nlohmann::json& j);

} // namespace headroom::importers
