// Capacity reports: building, schema validation, golden files per format (volatile fields
// masked, STYLE.md §12), the drift check, and atomic writes.

#include "tst_reportutil.h"

#include "headroom/core/atomicfile.h"
#include "headroom/core/report/report.h"
#include "headroom/core/report/reportdocument.h"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace headroom;
using nlohmann::json;

namespace {

// The report of the golden files: Llama-3.1-8B int4-g128, fp16 KV, on the 8 and 24 GB cards
// under vLLM, 4 users at 8,192 tokens, with handcrafted probe and speed blocks.
ReportInput goldenInput()
{
    ReportInput in;
    for (const char* card : {"rtx-4060", "rtx-4090"}) {
        in.requests.push_back(test::profileRequest("llama-3.1-8b", "int4-g128", card, "vllm", 4, 8192));
        in.plans.push_back(test::planOf(in.requests.back()));
    }
    in.title = "Capacity report";
    in.createdUtc = "2025-01-01T00:00:00Z";
    in.probesJson = test::handcraftedProbes();
    in.speedJson = test::handcraftedSpeed();
    return in;
}

std::string goldenReport()
{
    auto j = buildReportJson(goldenInput());
    REQUIRE(j);
    return *j;
}

std::string masked(const std::string& report)
{
    auto m = maskVolatileFields(report);
    REQUIRE(m);
    return *m;
}

std::filesystem::path scratchDir(const std::string& name)
{
    const auto dir = std::filesystem::path(HEADROOM_BINARY_DIR) / "scratch" / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

bool hasTemporaryFiles(const std::filesystem::path& dir)
{
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().filename().string().find(".tmp-") != std::string::npos)
            return true;
    return false;
}

} // namespace

TEST_CASE("a report carries its inputs, the matrix, bills, frontiers, flags and measurements", "[report]")
{
    const json r = json::parse(goldenReport());
    CHECK(r["schema_version"] == kReportSchemaVersion);
    CHECK(r["kind"] == "headroom-capacity-report");
    CHECK(r["tool"]["name"] == "headroom");
    CHECK(r["created_utc"] == "2025-01-01T00:00:00Z");
    CHECK(r["inputs"]["models"].size() == 1);
    CHECK(r["inputs"]["models"][0]["id"] == "llama-3.1-8b");
    CHECK(r["inputs"]["models"][0].contains("content_hash"));
    CHECK(r["inputs"]["cards"].size() == 2);
    CHECK(r["inputs"]["cards"][1]["total_bytes"] == 25386024960ull); // 24,210 MiB, driver-reported
    CHECK(r["inputs"]["engines"][0]["id"] == "vllm");
    CHECK(r["inputs"]["requests"][0]["users"] == 4);
    CHECK(r["what_fits"].size() == 2);
    REQUIRE(r["plans"].size() == 2);
    const json& p = r["plans"][1];
    CHECK(p["card"] == "rtx-4090");
    CHECK(p["kv_bytes_per_token"] == 131072); // BRIEF §1.1: 32 layers x 8 KV heads x 128 x 2 x 2 B
    CHECK(!p["frontier"].empty());
    CHECK(p["launch"]["engine"] == "vllm");
    CHECK(p["launch"]["context_tokens"] == 8192);
    CHECK(p["roofline"]["bound"] == "memory");
    CHECK(r["probes"]["device"]["name"] == "NVIDIA GeForce RTX 4090");
    CHECK(r["speed"]["knee_users"] == 16);
    // Deterministic: the same input gives byte-identical text.
    CHECK(goldenReport() == goldenReport());
}

TEST_CASE("golden report: JSON", "[report][golden]")
{
    test::checkGolden("report.json", masked(goldenReport()));
}

TEST_CASE("golden report: Markdown", "[report][golden]")
{
    auto md = report::renderReportMarkdown(masked(goldenReport()));
    REQUIRE(md);
    test::checkGolden("report.md", *md);
}

TEST_CASE("golden report: CSV", "[report][golden]")
{
    auto csv = report::renderReportCsv(masked(goldenReport()));
    REQUIRE(csv);
    test::checkGolden("report.csv", *csv);
}

TEST_CASE("the report validates against its schema, and broken ones do not", "[report][schema]")
{
    const std::string good = goldenReport();
    CHECK(validateReport(good).empty());
    CHECK(json::parse(reportSchemaText())["properties"]["schema_version"]["const"] == kReportSchemaVersion);

    json bad = json::parse(good);
    bad["plans"][0]["fits"] = "yes";
    auto errors = validateReport(bad.dump());
    REQUIRE(!errors.empty());
    CHECK_THAT(errors.front(), Catch::Contains("/plans/0/fits"));

    bad = json::parse(good);
    bad.erase("inputs");
    errors = validateReport(bad.dump());
    REQUIRE(!errors.empty());
    CHECK_THAT(errors.front(), Catch::Contains("inputs"));

    bad = json::parse(good);
    bad["plans"][0]["weights_bytes"] = -1;
    CHECK(!validateReport(bad.dump()).empty());

    errors = validateReport(good.substr(0, good.size() / 2));
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors.front(), Catch::Contains("not valid JSON"));
}

TEST_CASE("probe and speed blocks are checked when the report is built", "[report][schema]")
{
    ReportInput in = goldenInput();
    in.probesJson = "{\"device\": {}, \"results\": []}"; // no device name
    auto r = buildReportJson(in);
    REQUIRE(!r);
    CHECK_THAT(r.error().message, Catch::Contains("/probes/device"));

    in.probesJson = "not json";
    r = buildReportJson(in);
    REQUIRE(!r);
    CHECK_THAT(r.error().message, Catch::Contains("probes: not valid JSON"));

    in = goldenInput();
    in.probesJson.clear();
    in.speedJson.clear();
    r = buildReportJson(in);
    REQUIRE(r);
    CHECK(!json::parse(*r).contains("probes"));
    auto md = report::renderReportMarkdown(*r);
    REQUIRE(md);
    CHECK(md->find("Verified on the device") == std::string::npos);

    in.plans.pop_back();
    CHECK(!buildReportJson(in));
}

TEST_CASE("report --check: recomputing an unchanged report gives no drift", "[report][check]")
{
    auto check = checkReport(goldenReport(), test::sourceProfiles());
    REQUIRE(check);
    CHECK(check->schemaErrors.empty());
    CHECK(check->recomputed);
    CHECK(check->drifts.empty());
    CHECK(check->reportedVersion == check->currentVersion);
}

TEST_CASE("report --check flags a value this version computes differently", "[report][check]")
{
    json r = json::parse(goldenReport());
    r["plans"][0]["max_resident_tokens"] = 1;
    r["tool"]["version"] = "0.0.1";                 // volatile: never drift by itself
    r["probes"]["results"][0]["measured_bytes"] = 5; // measured: not recomputed
    auto check = checkReport(r.dump(), test::sourceProfiles());
    REQUIRE(check);
    REQUIRE(check->drifts.size() == 1);
    CHECK(check->drifts[0].path == "/plans/0/max_resident_tokens");
    CHECK(check->drifts[0].reported == "1");
    CHECK(check->reportedVersion == "0.0.1");

    r = json::parse(goldenReport());
    r["inputs"]["requests"][0]["users"] = 2; // a changed input changes the plan
    check = checkReport(r.dump(), test::sourceProfiles());
    REQUIRE(check);
    CHECK(!check->drifts.empty());
}

TEST_CASE("report --check refuses corrupt, foreign-version and unresolvable reports", "[report][check]")
{
    auto check = checkReport("{\"schema_version\": 1, \"plans\": [", test::sourceProfiles());
    REQUIRE(!check);
    CHECK_THAT(check.error().message, Catch::Contains("not valid JSON"));

    json r = json::parse(goldenReport());
    r["schema_version"] = 2;
    check = checkReport(r.dump(), test::sourceProfiles());
    REQUIRE(!check);
    CHECK_THAT(check.error().message, Catch::Contains("schema_version 2") && Catch::Contains("reads 1"));

    r = json::parse(goldenReport());
    r.erase("what_fits");
    check = checkReport(r.dump(), test::sourceProfiles());
    REQUIRE(check);
    CHECK(!check->schemaErrors.empty());
    CHECK(!check->recomputed);

    r = json::parse(goldenReport());
    r["inputs"]["requests"][0]["card"] = "no-such-card";
    check = checkReport(r.dump(), test::sourceProfiles());
    REQUIRE(!check);
    CHECK_THAT(check.error().message, Catch::Contains("no-such-card"));
}

TEST_CASE("Markdown and CSV say the same as the JSON", "[report]")
{
    const std::string r = goldenReport();
    auto md = report::renderReportMarkdown(r);
    REQUIRE(md);
    CHECK_THAT(*md, Catch::Contains("## What fits"));
    CHECK_THAT(*md, Catch::Contains("vllm serve $MODEL --max-model-len 8192 --max-num-seqs 4"));
    CHECK_THAT(*md, Catch::Contains("| probe | result | predicted | measured | margin | details |"));
    CHECK_THAT(*md, Catch::Contains("FAIL"));
    auto csv = report::renderReportCsv(r);
    REQUIRE(csv);
    CHECK(std::count(csv->begin(), csv->end(), '\n') == 3); // header + 2 plans
    CHECK(csv->rfind("model,weights_format,kv_dtype,card,engine,", 0) == 0);

    auto doc = report::layoutReport(r);
    REQUIRE(doc);
    std::size_t charts = 0;
    for (const report::Section& s : doc->sections)
        for (const report::Block& b : s.blocks)
            charts += b.kind == report::Block::Kind::Chart;
    CHECK(charts == 3); // memory bars, one frontier, measured speed
    CHECK(!report::layoutReport("[]"));
}

TEST_CASE("files are written atomically: all or nothing", "[report][atomic]")
{
    const auto dir = scratchDir("atomic");
    const auto file = dir / "report.json";
    REQUIRE(writeFileAtomically(file, "first"));
    REQUIRE(writeFileAtomically(file, "second"));
    std::ifstream in(file);
    std::string text;
    std::getline(in, text);
    CHECK(text == "second");
    CHECK(!hasTemporaryFiles(dir));

    // A folder that does not exist: an error naming it, nothing written.
    auto r = writeFileAtomically(dir / "missing" / "report.json", "x");
    REQUIRE(!r);
    CHECK_THAT(r.error(), Catch::Contains("missing"));
    CHECK(!std::filesystem::exists(dir / "missing"));

    // The target is a folder: rename fails, the temporary file is removed, the folder kept.
    std::filesystem::create_directories(dir / "occupied");
    r = writeFileAtomically(dir / "occupied", "x");
    REQUIRE(!r);
    CHECK(std::filesystem::is_directory(dir / "occupied"));
    CHECK(!hasTemporaryFiles(dir));
    CHECK(!writeFileAtomically("", "x"));
}

TEST_CASE("the memory chart of a large report charts one plan on every card, named in its title", "[report]")
{
    // 3 formats x 10 cards: fp16 fits on 6 cards, int4-g128 on 9 (vLLM refuses to start on the
    // RTX 4060), q4_k on none (vLLM cannot load GGUF k-quants). Before, each card charted its own
    // first plan that fit: fp16 on most, int4-g128 on the 12 and 16 GB cards.
    ReportInput in;
    const std::vector<std::string> cards{"rtx-4060", "rtx-3060-12gb", "rtx-4060-ti-16gb", "rtx-4080", "rtx-3090",
                                         "rtx-4090", "l4", "a10", "l40s", "a100-80gb"};
    for (const char* format : {"fp16", "int4-g128", "q4_k"})
        for (const std::string& card : cards) {
            in.requests.push_back(test::profileRequest("llama-3.1-8b", format, card, "vllm", 4, 8192));
            in.plans.push_back(test::planOf(in.requests.back()));
        }
    in.title = "Capacity report";
    in.createdUtc = "2025-01-01T00:00:00Z";
    auto r = buildReportJson(in);
    REQUIRE(r);
    auto doc = report::layoutReport(*r);
    REQUIRE(doc);
    const report::Chart* memory = nullptr;
    for (const report::Section& s : doc->sections)
        if (s.heading == "Memory")
            for (const report::Block& b : s.blocks)
                if (b.kind == report::Block::Kind::Chart)
                    memory = &b.chart;
    REQUIRE(memory);
    CHECK(memory->title == "Memory (GiB), the plan that fits most cards");
    REQUIRE(memory->categories.size() == cards.size());
    for (std::size_t i = 0; i < cards.size(); ++i)
        CHECK(memory->categories[i] == "Llama-3.1-8B · int4-g128 · " + cards[i]);
}
