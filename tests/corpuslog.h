#pragma once
/// @file corpuslog.h
/// The text of an engine-log corpus case (tests/data/engine-logs/ID.json, key "log": the
/// verbatim lines), one line end after each line, as `headroom-cli log` and the app's Log panel
/// read a log file. Shared by the core and the app tests.

#include "testconfig.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace headroom::test {

/// The lines of corpus case @p id as one text; throws (nlohmann) when the case is missing.
inline std::string corpusLogText(const std::string& id)
{
    std::ifstream in(std::filesystem::path(HEADROOM_ENGINE_LOGS_DIR) / (id + ".json"));
    const nlohmann::json j = nlohmann::json::parse(in);
    std::string text;
    for (const auto& l : j.at("log"))
        text += l.get<std::string>() + "\n";
    return text;
}

} // namespace headroom::test
