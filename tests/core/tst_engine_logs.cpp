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

// The share of headline figures that must be within their tolerance. The acceptance target of
// issue 9 is 90 %; until every engine unit has landed, the floor is what the corpus reaches
// today (a regression guard) and each case that should pass is asserted on its own.
constexpr double kAcceptanceTarget = 0.90;
constexpr double kHeadlineFloor = 0.10; // 6 of 46 on 2026-12-01 (SGLang/TGI/TensorRT-LLM units in, vLLM rules pending)
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
    INFO("headline figures within tolerance: " << all.within << " of " << all.headline);
    CHECK(all.headline > 0);
    CHECK(all.rate() >= kHeadlineFloor);
    if (all.rate() < kAcceptanceTarget)
        WARN("acceptance target " << kAcceptanceTarget * 100 << " % not met yet: " << all.rate() * 100 << " %");
}
