#pragma once
/// @file settings.h
/// An engine's own settings, spelled as the engine spells them (vLLM `gpu-memory-utilization`,
/// TensorRT-LLM `free_gpu_memory_fraction`, llama.cpp `ctx-size`/`c`, Ollama `OLLAMA_NUM_PARALLEL`):
/// each engine unit declares the keys it knows (SettingSpec) with their type and default; a plan
/// request carries KEY=VALUE pairs as typed (EngineSetting); parseEngineSettings checks them
/// against the declaration and the profile's per-version defaults and gives typed values.

#include <tl/expected.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// The type of one setting's value.
enum class SettingType {
    Integer, ///< a non-negative whole number ("8192"); bounds in SettingSpec
    Number,  ///< a decimal number ("0.9"); bounds in SettingSpec
    Boolean, ///< true/false, 1/0, on/off, yes/no; a bare KEY (no '=') means true
    Size,    ///< bytes: a whole number or a size with unit ("4GiB", "512MiB", "2GB")
    Choice,  ///< one of SettingSpec::choices (case-sensitive, as the engine accepts it)
    List,    ///< non-negative numbers separated by ',' or '/' ("3,1": llama.cpp --tensor-split), at most 16
    Text,    ///< printable text the engine parses itself (llama.cpp -ot "exps=CPU"); the engine unit checks it
};

/// One setting an engine knows.
struct SettingSpec {
    std::string key;                     ///< canonical spelling ("gpu-memory-utilization", "ctx-size")
    std::vector<std::string> aliases;    ///< other spellings the engine accepts ("c" for ctx-size)
    SettingType type = SettingType::Integer;
    std::string defaultValue;            ///< the engine's default as text; "" = derived (see help)
    std::string help;                    ///< what it does in the plan, and the engine file that reads it
    std::vector<std::string> choices;    ///< Choice: the accepted values
    double minimum = 0;                  ///< Integer/Number/Size: inclusive bounds, used when maximum > minimum
    double maximum = 0;
};

/// One KEY=VALUE pair as the user typed it (`--set max-model-len=8192`, the app's settings field).
struct EngineSetting {
    std::string key;
    std::string value;
};

/// One setting's value after parsing.
struct SettingValue {
    std::string key;                     ///< canonical key
    SettingType type = SettingType::Integer;
    std::string text;                    ///< canonical text ("0.9", "true", "8192"), as `flags` emits it
    std::uint64_t integer = 0;           ///< Integer, Size (bytes), Boolean (0/1)
    double number = 0;                   ///< Number (and Integer/Size as double)
    bool given = false;                  ///< typed by the user; false = the default of the version or derived
};

/// The parsed settings of one plan: every declared key that has a value (given, the profile's
/// default for the version, the unit's default, or derived by the unit from the generic request).
class EngineSettings {
public:
    /// The value of @p key (canonical spelling), or null when it has none.
    const SettingValue* find(const std::string& key) const;
    /// True when the user typed @p key.
    bool given(const std::string& key) const;
    /// Integer or Size value of @p key.
    std::optional<std::uint64_t> integer(const std::string& key) const;
    /// Number value of @p key (Integer and Size converted).
    std::optional<double> number(const std::string& key) const;
    /// Boolean value of @p key.
    std::optional<bool> boolean(const std::string& key) const;
    /// Choice (or any) value of @p key as text.
    std::optional<std::string> text(const std::string& key) const;

    /// Sets a value the unit derived (given = false), replacing a default but never a value the
    /// user gave; used by Engine::configure so that the plan lists every setting it applied.
    void setDerived(SettingValue value);
    /// Every value, in declaration order.
    const std::vector<SettingValue>& values() const { return m_values; }

    /// Stores @p value, replacing the key's earlier value (parseEngineSettings).
    void put(SettingValue value);

private:
    std::vector<SettingValue> m_values;
};

/// Parses @p text as a value of @p spec for @p engineName. Errors: "ENGINE setting 'KEY':
/// expected WHAT, found 'TEXT'".
tl::expected<SettingValue, std::string> parseSettingValue(const SettingSpec& spec, const std::string& text,
                                                          const std::string& engineName);

/// Parses the settings of one plan: the specs' defaults, then @p versionDefaults (the engine
/// profile's `settings`, per version), then @p given in order (a later pair of the same key
/// wins). A key may be written with leading dashes ("--ctx-size") or as an alias. Errors name
/// the key, the engine, what was expected and what was found; an unknown key lists the known
/// ones (and the dash/underscore spelling when that is the mistake).
tl::expected<EngineSettings, std::string> parseEngineSettings(const std::vector<SettingSpec>& specs,
                                                              const std::map<std::string, std::string>& versionDefaults,
                                                              const std::vector<EngineSetting>& given,
                                                              const std::string& engineName);

/// Splits "KEY=VALUE" (a bare "KEY" gives the value "true"). Errors on an empty key.
tl::expected<EngineSetting, std::string> parseSettingArgument(const std::string& argument);

/// The name of a setting type for messages ("a whole number").
const char* settingTypeDescription(SettingType type);

} // namespace headroom
