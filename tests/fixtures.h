#pragma once
// Finds the real model files of ../shared/fixtures for tests; a test that needs one calls
// HEADROOM_REQUIRE_FIXTURE(path) and returns (with a warning saying why) when it is absent.

#include "testconfig.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

namespace headroom::test {

/// Absolute path of a file below the fixtures folder.
inline std::filesystem::path fixture(const std::string& rel)
{
    return std::filesystem::path(HEADROOM_FIXTURES_DIR) / rel;
}

/// Absolute path of a file in this checkout.
inline std::filesystem::path sourcePath(const std::string& rel)
{
    return std::filesystem::path(HEADROOM_SOURCE_DIR) / rel;
}

} // namespace headroom::test

/// Skips the rest of the test case when the fixture is missing (Catch2 v2 has no SKIP).
#define HEADROOM_REQUIRE_FIXTURE(path)                                                       \
    do {                                                                                     \
        if (!std::filesystem::exists(path)) {                                                \
            WARN("SKIPPED: fixture not found: " << (path).string()                           \
                                                << " (set HEADROOM_FIXTURES_DIR)");          \
            return;                                                                          \
        }                                                                                    \
    } while (false)
