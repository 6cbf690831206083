#pragma once
// Shared by the report and launch-flag tests: plans built from this checkout's profiles, a
// handcrafted probe block (until headroom_probes writes real ones), and golden-file comparison.

#include "fixtures.h"

#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/report/report.h"
#include "headroom/core/resolve.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace headroom::test {

inline const ProfileSet& sourceProfiles()
{
    static const ProfileSet set = [] {
        auto loaded = loadProfiles(sourcePath("profiles"));
        if (!loaded)
            FAIL("cannot load the profiles of this checkout: " << toString(loaded.error()));
        return *loaded;
    }();
    return set;
}

/// One request from profile ids, as `headroom-cli plan` builds it.
inline PlanRequest profileRequest(const std::string& model, const std::string& format, const std::string& card,
                                  const std::string& engine, std::optional<std::uint64_t> users,
                                  std::optional<std::uint64_t> context, const std::string& kvDtype = "fp16")
{
    const ProfileSet& p = sourceProfiles();
    PlanRequest r;
    auto m = resolveModel(model, p);
    REQUIRE(m);
    r.model = *m;
    auto f = resolveFormat(format, r.model);
    REQUIRE(f);
    r.format = *f;
    auto kv = resolveKvDtype(kvDtype);
    REQUIRE(kv);
    r.kvDtype = *kv;
    auto c = resolveCard(card, p);
    REQUIRE(c);
    r.card = *c;
    auto e = resolveEngine(engine, p);
    REQUIRE(e);
    r.engine = *e;
    r.users = users;
    r.contextTokens = context;
    return r;
}

inline PlanResult planOf(const PlanRequest& r)
{
    auto p = makePlan(r);
    REQUIRE(p);
    return *p;
}

/// A probe block as headroom_probes will write it (handcrafted: device facts of an RTX 4090 run).
inline std::string handcraftedProbes()
{
    return R"({
  "device": {"name": "NVIDIA GeForce RTX 4090", "driver_version": "550.54.14", "cuda_version": "12.4",
             "total_bytes": 25386024960, "free_bytes": 24833425408, "context_overhead_bytes": 314572800,
             "copy_bandwidth_gbps": 912.4},
  "results": [
    {"probe": "kv_allocation", "pass": true, "predicted_bytes": 1073741824, "measured_bytes": 1073741824, "margin_bytes": 0,
     "card": "rtx-4090"},
    {"probe": "limit_search", "pass": true, "predicted_tokens": 47376, "measured_tokens": 46912, "margin_tokens": -464,
     "card": "rtx-4090"},
    {"probe": "decode_step", "pass": false, "predicted_ms": 5.9, "measured_ms": 7.4, "margin_ms": 1.5, "note": "cold L2"}
  ]
})";
}

/// A measured-speed block (handcrafted).
inline std::string handcraftedSpeed()
{
    return R"({"source": "handcrafted test block", "knee_users": 16,
  "points": [{"users": 1, "context_tokens": 1024, "decode_step_ms": 7.4, "tokens_per_second": 135.1},
             {"users": 4, "context_tokens": 1024, "decode_step_ms": 7.9, "tokens_per_second": 506.3},
             {"users": 16, "context_tokens": 1024, "decode_step_ms": 9.8, "tokens_per_second": 1632.7},
             {"users": 32, "context_tokens": 1024, "decode_step_ms": 17.6, "tokens_per_second": 1818.2}]})";
}

/// Compares @p actual with tests/data/golden/@p name (STYLE.md §12). HEADROOM_APPROVE=1 writes the
/// golden file instead. A mismatch writes <build>/golden/@p name.actual and a unified diff beside it.
inline void checkGolden(const std::string& name, const std::string& actual)
{
    const std::filesystem::path golden = sourcePath("tests/data/golden/" + name);
    const char* approve = std::getenv("HEADROOM_APPROVE");
    if (approve && std::string(approve) == "1") {
        std::ofstream(golden, std::ios::binary) << actual;
        WARN("approved " << golden.string());
        return;
    }
    std::string expected;
    if (std::ifstream in{golden, std::ios::binary}) {
        std::ostringstream s;
        s << in.rdbuf();
        expected = s.str();
    }
    if (expected == actual)
        return;
    const std::filesystem::path outDir = std::filesystem::path(HEADROOM_BINARY_DIR) / "golden";
    std::filesystem::create_directories(outDir);
    const std::filesystem::path actualPath = outDir / (name + ".actual");
    const std::filesystem::path diffPath = outDir / (name + ".diff");
    std::ofstream(actualPath, std::ios::binary) << actual;
    std::string diff;
    const std::string command = "diff -u '" + golden.string() + "' '" + actualPath.string() + "' 2>&1";
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
        char buf[4096];
        std::size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0)
            diff.append(buf, n);
        ::pclose(pipe);
    }
    std::ofstream(diffPath, std::ios::binary) << diff;
    FAIL("golden mismatch: " << golden.string() << "\nactual: " << actualPath.string() << "\ndiff: " << diffPath.string()
                             << "\n(re-approve with HEADROOM_APPROVE=1)\n"
                             << diff.substr(0, 4000));
}

} // namespace headroom::test
