#include "workorder.h"

#include "headroom/core/architecturetext.h"
#include "headroom/core/resolve.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdlib>
#include <chrono>
#include <thread>

namespace headroom::probes::detail {

namespace {

using nlohmann::json;

const char* hookName(ChildTestHook hook)
{
    switch (hook) {
    case ChildTestHook::None: return "none";
    case ChildTestHook::Crash: return "crash";
    case ChildTestHook::Abort: return "abort";
    case ChildTestHook::Hang: return "hang";
    }
    return "none";
}

ChildTestHook hookFromName(const std::string& name)
{
    for (ChildTestHook h : {ChildTestHook::Crash, ChildTestHook::Abort, ChildTestHook::Hang})
        if (name == hookName(h))
            return h;
    return ChildTestHook::None;
}

} // namespace

std::string limitWorkOrder(const DeviceSpec& device, std::optional<Bytes> budget, const ModelInputs& model,
                           const LimitProbeOptions& options)
{
    json j;
    j["task"] = "limit";
    j["device"] = toString(device);
    j["budget_bytes"] = budget ? json(budget->value) : json(nullptr);
    j["model"] = {{"id", model.model.id}, {"name", model.model.name},
                  {"architecture", model.model.architecture ? json::parse(architectureToJsonText(*model.model.architecture)) : json(nullptr)}};
    j["format"] = model.format.id;
    j["kv_dtype"] = model.kvDtype.id;
    j["context_tokens"] = model.contextTokens;
    j["users"] = model.users;
    j["verify_frontier"] = options.verifyFrontier;
    j["max_frontier_points"] = options.maxFrontierPoints;
    j["step_layers"] = options.stepLayers;
    j["test_hook"] = hookName(options.testHook);
    return j.dump();
}

std::string contextWorkOrder(const DeviceSpec& device)
{
    json j;
    j["task"] = "context";
    j["device"] = toString(device);
    return j.dump();
}

ProbeResult executeWorkOrder(std::string_view order, ProbeProgress& progress)
{
    const json j = json::parse(order, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return failedResult("worker", "malformed work order");
    try {
        const auto spec = parseDeviceSpec(j.at("device").get<std::string>());
        if (!spec)
            return failedResult("worker", "bad device in the work order");
        const std::string task = j.at("task").get<std::string>();
        if (task == "context") {
            auto device = openDevice(*spec);
            if (!device)
                return failedResult("context", device.error().message);
            auto info = (*device)->memoryInfo();
            if (!info)
                return failedResult("context", info.error().message);
            ProbeResult r;
            r.probe = "context";
            r.pass = true;
            r.summary = "memory seen by a second process";
            r.set("total_bytes", info->totalBytes.value);
            r.set("free_bytes", info->freeBytes.value);
            return r;
        }
        if (task != "limit")
            return failedResult("worker", "unknown task '" + task + "'");
        ModelInputs model;
        model.model.id = j.at("model").at("id").get<std::string>();
        model.model.name = j.at("model").at("name").get<std::string>();
        if (!j.at("model").at("architecture").is_null()) {
            auto arch = architectureFromJsonText(j.at("model").at("architecture").dump());
            if (!arch)
                return failedResult("limit", "work order: " + arch.error());
            if (const std::string problem = validateArchitecture(*arch); !problem.empty())
                return failedResult("limit", "work order: the architecture is out of range: " + problem);
            model.model.architecture = *arch;
        }
        auto format = findFormat(j.at("format").get<std::string>());
        auto kv = findKvDtype(j.at("kv_dtype").get<std::string>());
        if (!format || !kv)
            return failedResult("limit", "unknown weight format or KV dtype in the work order");
        model.format = *format;
        model.kvDtype = *kv;
        model.contextTokens = j.at("context_tokens").get<std::uint64_t>();
        model.users = j.at("users").get<std::uint64_t>();
        LimitProbeOptions options;
        options.verifyFrontier = j.at("verify_frontier").get<bool>();
        options.maxFrontierPoints = j.at("max_frontier_points").get<std::size_t>();
        options.stepLayers = j.at("step_layers").get<std::uint32_t>();
        options.testHook = hookFromName(j.at("test_hook").get<std::string>());
        std::optional<Bytes> budget;
        if (!j.at("budget_bytes").is_null())
            budget = Bytes{j.at("budget_bytes").get<std::uint64_t>()};
        switch (options.testHook) {
        case ChildTestHook::Crash:
            progress.report(0.0, "about to crash (test hook)");
            std::raise(SIGSEGV);
            break;
        case ChildTestHook::Abort:
            std::abort();
        case ChildTestHook::Hang:
            progress.report(0.0, "hanging (test hook)");
            for (;;)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
        case ChildTestHook::None:
            break;
        }
        return runLimitSearch(*spec, budget, model, options, progress);
    } catch (const std::exception& e) {
        return failedResult("worker", std::string("malformed work order: ") + e.what());
    }
}

} // namespace headroom::probes::detail
