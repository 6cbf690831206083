#pragma once
// Helpers the engine units share (private to core/src/engines/): priced items, the runtime
// overheads every GPU engine pays, the KV budget, and the reconciliation of a generic request
// field (--context, --ubatch, ...) with the engine's own spelling of it.

#include "headroom/core/engines/engine.h"
#include "headroom/core/interconnect.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace headroom::engines {

/// One priced item.
OverheadItem item(const char* name, Bytes bytes, std::string note);

/// floor(total * f).
Bytes fraction(Bytes total, double f);

/// "90%" (three significant digits).
std::string percent(double f);

/// The setup every engine starts from: the generic request fields with the profile's defaults
/// (ubatch, flash attention, block size and cell padding, minimum context), context = the
/// model's trained context unless given.
EngineSetup baseSetup(const PlanRequest& request, const Architecture& arch);

/// The items every GPU engine pays inside its usable memory: the CUDA context and non-torch
/// memory, the library workspace, the activation peak of one forward pass of
/// setup.ubatchTokens (with the logits of min(ubatch, 256) outputs when the profile keeps them
/// on the device) when @p activations, and the CUDA-graph pool; each replaced by its measured
/// figure when given (MeasuredOverheads).
void addRuntimeItems(const EngineInputs& in, bool activations, std::vector<OverheadItem>& out);

/// Completes @p bill: KV budget = usable - weights - overheads (0 when negative), less the
/// profile's fragmentation fraction of it (an item of its own).
void finishBudget(const EngineInputs& in, EngineBill& bill);

/// True when weights and overheads fit inside the bill's usable memory.
bool weightsFit(const EngineInputs& in, const EngineBill& bill);

/// Values as the unit derived them (given = false), for EngineSettings::setDerived.
SettingValue derivedInteger(const std::string& key, std::uint64_t n);
SettingValue derivedNumber(const std::string& key, double x);
SettingValue derivedBoolean(const std::string& key, bool b);
SettingValue derivedChoice(const std::string& key, const std::string& text);

/// Reconciles a generic count (@p option, e.g. "--context") with the engine's twin setting
/// @p key: both given and different is an error naming both; the setting alone sets the count;
/// the count alone (or @p fallback when neither) is recorded as the setting's derived value.
/// Returns the agreed value (nullopt when neither and no fallback).
tl::expected<std::optional<std::uint64_t>, std::string>
reconcileCount(std::optional<std::uint64_t> generic, const std::string& option, EngineSettings& settings,
               const std::string& key, const std::string& engineName, std::optional<std::uint64_t> fallback = std::nullopt);

/// The same for --tp/--pp, whose generic value 1 counts as not given.
tl::expected<std::uint32_t, std::string> reconcileParallel(std::uint32_t generic, const std::string& option,
                                                           EngineSettings& settings, const std::string& key,
                                                           const std::string& engineName);

/// The same for flash attention: @p key is Boolean, or a Choice of on/off/auto (@p autoValue
/// is what "auto" means here).
tl::expected<bool, std::string> reconcileFlash(std::optional<bool> generic, bool engineDefault, EngineSettings& settings,
                                               const std::string& key, const std::string& engineName, bool autoValue = true);

/// The same for the KV dtype: @p key's value (mapped to a kvcache.h id by @p toKvId, "" = the
/// engine default, i.e. 16-bit) and the request's dtype (a 16-bit dtype counts as not given).
/// Returns the kvcache.h id the engine will use.
tl::expected<std::string, std::string> reconcileKvDtype(const KvDtype& generic, EngineSettings& settings,
                                                        const std::string& key, const std::string& engineName,
                                                        std::string (*toKvId)(const std::string& engineValue),
                                                        std::string (*fromKvId)(const std::string& kvId));

/// True for the 16-bit KV dtypes (fp16, bf16), the engines' default.
bool isDefaultKvDtype(const std::string& kvId);

/// True when @p kvId (a kvcache.h id; "" = the engine's 16-bit default) is the default or one of
/// @p accepted: the engines' allow-lists of KV cache dtypes.
bool kvDtypeAccepted(const std::string& kvId, std::initializer_list<const char*> accepted);

/// The refusal of the GGUF engines (llama.cpp, Ollama) for a format that is no GGML type: they
/// load GGUF files whose tensors are GGML types (F32, F16, BF16, Q8_0, Q4_K, ...; ggml/include/ggml.h
/// ggml_type, src/llama-model-loader.cpp; Ollama fs/ggml/type.go FileType), never GPTQ/AWQ,
/// bitsandbytes, fp8 or int checkpoints. nullopt for a GGML or float format.
std::optional<EngineRefusal> ggufFormatRefusal(const PlanRequest& request);

/// A SettingSpec in one expression (the units' tables).
SettingSpec makeSpec(std::string key, SettingType type, std::string defaultValue, std::string help, double minimum = 0,
                     double maximum = 0, std::vector<std::string> choices = {}, std::vector<std::string> aliases = {});

/// The `interconnect` setting (core/interconnect.h): the link between the ranks, overriding the
/// card profile's; declared by the units that price TP > 1 by link (vLLM, SGLang).
SettingSpec interconnectSpec();

/// The link a plan prices its ranks' collectives by, and where it comes from.
struct PlanInterconnect {
    Interconnect link = kDefaultInterconnect;
    std::string origin; ///< "set", "the h100-sxm profile's", "assumed: the card profile gives none"
    /// "interconnect=pcie (set)": the words of a bill note.
    std::string note() const;
};

/// The `interconnect` setting when given, else the card profile's link, else kDefaultInterconnect.
PlanInterconnect planInterconnect(const PlanRequest& request, const EngineSettings& settings);

/// Records the plan's link as the setting's derived value (when not given), so that the plan lists
/// it; only for plans of more than one rank.
void recordInterconnect(const PlanRequest& request, EngineSettings& settings);

/// Bounds of counts: tokens up to 2^36, sequences up to 2^24.
inline constexpr double kMaxTokens = 68719476736.0;
inline constexpr double kMaxSequences = 16777216.0;

} // namespace headroom::engines
