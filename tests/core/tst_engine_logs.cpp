// The engine-log corpus (tests/data/engine-logs, README there): every case is planned from the
// card total and the engine's settings alone, and every figure the engine printed is compared
// with the plan's. Prints the table (case, engine@version, figure, printed, predicted, error %,
// the term that explains a miss); with HEADROOM_ACCURACY_MD=FILE it also writes the Markdown
// table of docs/accuracy.md (scripts/accuracy.sh).

#include "enginelogcase.h"

#include "testconfig.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>

using namespace headroom;
using namespace headroom::test;

namespace {

// Issue 9's acceptance: at least 90 % of the cases' headline capacity figures within 2 %. Only
// capacity figures count (placement-only cases, headline_kind "placement", are left out: their
// source prints no capacity figure). kHeadlineFloor is what the corpus reaches today and is
// REQUIREd; raise it to kAcceptanceTarget when the corpus gets there.
constexpr double kAcceptanceTarget = 0.90;
constexpr double kHeadlineFloor = 0.89; // 83 of 93 headline capacity figures on 2026-12-02 (89.2 %)
// Issue 11's acceptance: the placement and every per-device byte figure within 2 % in at least
// 90 % of at least 15 placement cases. The floor guards what the corpus reaches (regression guard).
constexpr int kPlacementCasesTarget = 15;
constexpr double kPlacementFloor = 0.85;

} // namespace

TEST_CASE("engine-log corpus: every printed figure, from the card total and the settings", "[engine-logs]")
{
    const auto profiles = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
    REQUIRE(profiles.has_value());
    const auto cases = loadEngineLogCases(HEADROOM_ENGINE_LOGS_DIR);
    REQUIRE(cases.has_value());
    INFO("corpus " << HEADROOM_ENGINE_LOGS_DIR);
    CHECK(cases->size() >= 40);

    const AccuracyReport report = evaluateEngineLogCases(*cases, *profiles);
    std::cout << formatAccuracyText(report) << std::flush;
    if (const char* md = std::getenv("HEADROOM_ACCURACY_MD")) {
        std::ofstream out(md, std::ios::binary);
        out << formatAccuracyMarkdown(report);
        REQUIRE(out.good());
    }

    for (const CaseOutcome& c : report.cases) {
        INFO(c.id << ": " << c.error);
        CHECK(c.error.empty());
        for (const FigureOutcome& f : c.figures) {
            INFO(c.id << " " << f.name << " printed " << f.printed << " predicted "
                      << (f.predicted ? std::to_string(*f.predicted) : std::string("-")));
            if (f.expectMiss) {
                // A known miss must say which term causes it.
                CHECK_FALSE(f.missTerm.empty());
            } else if (f.predicted) {
                CHECK(f.within);
            }
        }
    }
    const PlacementSummary placed = report.placement();
    INFO("placement cases within: " << placed.within << " of " << placed.cases);
    CHECK(placed.cases >= 10);
    CHECK(placed.rate() >= kPlacementFloor);
    if (placed.cases < kPlacementCasesTarget || placed.rate() < kAcceptanceTarget)
        WARN("placement target (" << kPlacementCasesTarget << " cases, " << kAcceptanceTarget * 100
                                  << " %) not met yet: " << placed.within << " of " << placed.cases);

    const AccuracySummary all = report.total();
    std::string misses;
    for (const CaseOutcome& c : report.cases)
        for (const FigureOutcome& f : c.figures)
            if (f.headline && !f.within && c.headlineKind == HeadlineFigureKind::Capacity)
                misses += "\n  " + c.id + " " + f.name + " ("
                    + (f.predicted ? std::to_string(f.errorPct) + " %" : std::string("not predicted")) + ")"
                    + (f.missTerm.empty() ? " unexplained" : "");
    INFO("headline capacity figures within tolerance: " << all.within << " of " << all.headline << " ("
                                                         << all.rate() * 100 << " %, floor " << kHeadlineFloor * 100
                                                         << " %); misses:" << misses);
    REQUIRE(all.headline >= 80);
    REQUIRE(all.rate() >= kHeadlineFloor);
    if (all.rate() < kAcceptanceTarget)
        WARN("issue 9's acceptance (" << kAcceptanceTarget * 100 << " % of headline capacity figures) not met yet: "
                                      << all.within << " of " << all.headline);
}

TEST_CASE("engine-log corpus: a capacity headline must be a capacity figure", "[engine-logs]")
{
    // A weight size made a capacity headline is refused (issue 9, review S1-4), and a placement-only
    // case that has a capacity figure is refused too.
    const auto dir = std::filesystem::temp_directory_path() / "headroom-headline-kind";
    std::filesystem::create_directories(dir);
    const auto write = [&](const std::string& kind, const std::string& figures) {
        const auto file = dir / "case.json";
        std::ofstream(file) << R"({"schema_version": 1, "id": "case", "source_url": "x", "engine": "llama.cpp",
            "engine_version": "b4500", "model": {"profile": "qwen2.5-14b"}, "weights": "q4_k_m", "kv_dtype": "f16",
            "card": {"total_bytes": 12884901888}, "tensor_parallel": 1, "pipeline_parallel": 1, )" << kind << R"( "log": ["line"], "figures": [)" << figures << "]}";
        return loadEngineLogCase(file);
    };
    const std::string weights = R"({"name": "gpu_model_buffer_mib", "printed": 5766.09, "unit": "MiB", "headline": true})";
    const std::string kv = R"({"name": "kv_buffer_mib", "printed": 384, "unit": "MiB", "headline": true})";
    const auto weightHeadline = write("", weights);
    REQUIRE_FALSE(weightHeadline.has_value());
    INFO(weightHeadline.error());
    CHECK(weightHeadline.error().find("not a capacity figure") != std::string::npos);
    const auto placement = write(R"("headline_kind": "placement",)", weights);
    INFO((placement ? std::string() : placement.error()));
    REQUIRE(placement.has_value());
    CHECK(placement->headlineKind == HeadlineFigureKind::Placement);
    CHECK_FALSE(write(R"("headline_kind": "placement",)", weights + ", " + R"({"name": "kv_buffer_mib", "printed": 384, "unit": "MiB"})").has_value());
    const auto capacity = write("", kv);
    REQUIRE(capacity.has_value());
    CHECK(capacity->headlineKind == HeadlineFigureKind::Capacity);
    CHECK_FALSE(write(R"("headline_kind": "weights",)", kv).has_value());
    std::filesystem::remove_all(dir);
}
