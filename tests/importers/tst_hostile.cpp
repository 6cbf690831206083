// Hostile input (issue 13): one regression test per class, each with a file generated here, each
// ending in a clean error or a clean result within a time and memory bound that it asserts (the
// work runs in a child process under an alarm, tests/hostile.h). Bounds are about 10x the
// figure a fixed build measures (printed with -s) and far below what the unfixed code needed.

#include "core/tst_reportutil.h"
#include "hostile.h"
#include "hostilefiles.h"

#include "headroom/core/atomicfile.h"
#include "headroom/core/enginelog/calibration.h"
#include "headroom/core/importers/ggufreader.h"
#include "headroom/core/importers/hfconfig.h"
#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/importers/modeldirectory.h"
#include "headroom/core/importers/regularfile.h"
#include "headroom/core/importers/safetensors.h"
#include "headroom/core/launchflags.h"
#include "headroom/core/profiles.h"
#include "headroom/core/remote/remotemodel.h"
#include "headroom/core/report/report.h"
#include "headroom/core/report/reportdocument.h"
#include "headroom/core/safetext.h"
#include "headroom/core/stores/localstores.h"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <thread>

using namespace headroom;
using namespace headroom::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {


/// Runs @p work bounded; prints the figures; asserts it finished within both bounds.
BoundedRun requireBounded(const char* what, unsigned seconds, std::uint64_t maxGrowthBytes, const std::function<int()>& work)
{
    const unsigned limit = timeBound(seconds);
    const std::uint64_t memory = memoryBound(maxGrowthBytes);
    const BoundedRun run = runBounded(limit, work);
    INFO(what << ": " << run.describe() << "; bounds " << limit << " s, +" << memory / kMiB << " MiB");
    WARN(what << ": " << run.describe()); // the measured figure, for the record (ctest -V)
    REQUIRE(run.finished);
    CHECK(run.exitCode == 0);
    CHECK(run.peakGrowthBytes <= memory);
    return run;
}

std::string readAll(const fs::path& file)
{
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

// --- class 1: quadratic JSON --------------------------------------------------------------------

TEST_CASE("hostile 1: a 40,000-tensor safetensors header parses in linear time", "[hostile][json]")
{
    // Before: the duplicate-key callback made nlohmann rescan the parent for every child: ~100 s.
    const auto file = hostile::safetensorsWithTensors(40000);
    REQUIRE(file.size() > 2'500'000);
    requireBounded("safetensors 40,000 tensors", 10, 64 * kMiB, [&] {
        auto h = parseSafetensorsBytes(file, "hostile.safetensors", file.size());
        return h && h->tensors.size() == 40000 ? 0 : 1;
    });
}

TEST_CASE("hostile 1: a 0.5 MB config.json of small objects and a 40,000-entry index parse in linear time", "[hostile][json]")
{
    const std::string config = hostile::configWithObjects(500'000);
    requireBounded("config.json 0.5 MB", 10, 64 * kMiB, [&] {
        auto c = parseHfConfig(config, "config.json");
        return c ? 0 : 1;
    });
    const std::string index = hostile::indexWithEntries(40000);
    requireBounded("index 40,000 entries", 10, 64 * kMiB, [&] {
        auto i = parseSafetensorsIndex(index, "model.safetensors.index.json");
        return i && i->weightMap.size() == 40000 ? 0 : 1;
    });
    // Duplicate keys are still refused, with the key named.
    auto dup = parseSafetensorsIndex(R"({"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}})", "i.json");
    REQUIRE(!dup);
    CHECK(dup.error().code == ImportErrorCode::DuplicateKey);
    CHECK(dup.error().key == "a");
}

TEST_CASE("hostile 1: peak memory of a 97 MB safetensors header, a 50 MB index and a 4 MiB config.json is a small multiple of them",
          "[hostile][json][memory]")
{
    // Before: a DOM plus a copy of every key: a 50 MB header took 650 MB (13x; review 13 saw
    // 1.05 GB for 99 MB), the index
    // 448 MB (8.8x), a 16 MB config.json 229 MB. Now the header is parsed by a SAX handler into
    // the tensors (no DOM), the index moves its entries out of a DOM built without key copies,
    // and config.json (a DOM: ~11x for a file of small objects) is bounded at kHfConfigMaxBytes.
    // Under ASan (tst_core_asan) the files are a fifth as large: the figures are for the plain build.
    // Measured on 2026-12-01 (plain build, machine shared): the 97 MB header +300 MiB (3.1x), the
    // 51 MB index +257 MiB (5.0x), the 4 MiB config.json +46 MiB.
    ScratchDir dir("hostile-memory");
    const std::size_t tensors = underAsan() ? 216'000 : 1'080'000; // ~90 bytes each: 97 MB of header, near the 100 MB limit
    const std::size_t entries = underAsan() ? 160'000 : 800'000;  // ~64 bytes each: 51 MB of index
    const fs::path st = dir.path() / "big.safetensors", index = dir.path() / "model.safetensors.index.json",
                   config = dir.path() / "config.json";
    // Written by a child, so that this process never holds them (the children's peaks are measured).
    const BoundedRun made = runBounded(timeBound(60), [&] {
        writeBytes(st, hostile::safetensorsWithTensors(tensors));
        writeBytes(index, hostile::indexWithEntries(entries));
        writeBytes(config, hostile::configWithObjects(kHfConfigMaxBytes - 64));
        return 0;
    });
    REQUIRE(made.finished);
    const std::uint64_t headerBytes = fs::file_size(st) - 2 * tensors, indexBytes = fs::file_size(index),
                        configBytes = fs::file_size(config);
    REQUIRE(headerBytes > (underAsan() ? 18'000'000u : 95'000'000u));
    REQUIRE(headerBytes < kSafetensorsMaxHeaderBytes);
    REQUIRE(configBytes <= kHfConfigMaxBytes);
    requireBounded("safetensors header, 97 MB, read from the file (bound 4x)", 30, 4 * headerBytes, [&] {
        auto h = readSafetensorsHeader(st);
        return h && h->tensors.size() == tensors ? 0 : 1;
    });
    requireBounded("safetensors index, 51 MB, read from the file (bound 6x)", 30, 6 * indexBytes, [&] {
        auto text = readAll(index);
        auto i = parseSafetensorsIndex(text, index.string());
        return i && i->weightMap.size() == entries ? 0 : 1;
    });
    requireBounded("config.json of small objects, 4 MiB (bound 14x)", 30, 14 * configBytes, [&] {
        auto c = readHfConfig(config);
        return c ? 0 : 1;
    });
    // Past the bounds: refused before any parse.
    auto tooLarge = parseHfConfig(std::string(kHfConfigMaxBytes + 1, ' '), "config.json");
    REQUIRE(!tooLarge);
    CHECK(tooLarge.error().code == ImportErrorCode::BadValue);
    CHECK_THAT(tooLarge.error().message, Catch::Contains("more than the 4194304"));
    auto indexTooLarge = parseSafetensorsIndex(std::string(kSafetensorsIndexMaxBytes + 1, ' '), "i.json");
    REQUIRE(!indexTooLarge);
    CHECK(indexTooLarge.error().code == ImportErrorCode::BadValue);
}

TEST_CASE("hostile 1: a safetensors header over the 100,000,000-byte limit is refused before it is read", "[hostile][json]")
{
    std::vector<std::uint8_t> head(16, ' ');
    const std::uint64_t n = kSafetensorsMaxHeaderBytes + 1;
    for (int b = 0; b < 8; ++b)
        head[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(n >> (8 * b));
    auto h = parseSafetensorsBytes(head, "big.safetensors", 1ull << 40);
    REQUIRE(!h);
    CHECK(h.error().code == ImportErrorCode::BadHeaderLength);
    CHECK_THAT(h.error().message, Catch::Contains("limit 100,000,000"));
}

// --- class 2: memory amplification from GGUF arrays ----------------------------------------------

TEST_CASE("hostile 2: a 10.5 MB GGUF of u8 arrays takes memory bounded by a small multiple of it", "[hostile][gguf]")
{
    // Before: each u8 item was a ~120-byte value: 1.25 GB for this file.
    ScratchDir dir("hostile-gguf");
    const auto bytes = hostile::ggufWithByteArrays(10'500'000);
    const fs::path file = dir.path() / "arrays.gguf";
    writeBytes(file, bytes);
    const BoundedRun run = requireBounded("GGUF 10.5 MB of u8 arrays", 10, 6 * bytes.size(), [&] {
        auto f = readGguf(file);
        if (!f)
            return 1;
        std::uint64_t kept = 0;
        for (const auto& [key, value] : f->metadata)
            kept += value.items.size();
        return kept <= kGgufMaxStoredItemsTotal && !f->warnings.empty() ? 0 : 2;
    });
    (void)run;
    auto f = readGguf(file);
    REQUIRE(f);
    CHECK_THAT(f->warnings.front(), Catch::Contains("counted, not kept"));
    CHECK(f->find("hostile.bytes.600")->count == 16384); // counted even when not kept
}

TEST_CASE("hostile 2: more metadata pairs than any real file are refused", "[hostile][gguf]")
{
    GgufWriter w;
    w.kvCountOverride = kGgufMaxKeyValues + 1;
    auto bytes = w.bytes();
    bytes.resize(bytes.size() + 16 * (kGgufMaxKeyValues + 1), 0);
    auto f = readGgufBytes(bytes, "many.gguf");
    REQUIRE(!f);
    CHECK(f.error().code == ImportErrorCode::CountTooLarge);
    CHECK_THAT(f.error().message, Catch::Contains("expected at most 65536"));
}

// --- class 3: text that is not UTF-8 --------------------------------------------------------------

TEST_CASE("hostile 3: safeText replaces ill-formed UTF-8 and escapes control characters", "[hostile][text]")
{
    CHECK(safeText("llama") == "llama");
    CHECK(safeText("caf\xC3\xA9 \xE2\x82\xAC") == "caf\xC3\xA9 \xE2\x82\xAC"); // é €: kept
    CHECK(safeText("ll\xFF" "ama") == "ll\xEF\xBF\xBD" "ama");
    CHECK(safeText("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");           // overlong '/'
    CHECK(safeText("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); // a surrogate
    CHECK(safeText("\xF4\x90\x80\x80").find("\xEF\xBF\xBD") == 0);       // past U+10FFFF
    CHECK(safeText("a\x1B[31mb\n") == "a\\x1b[31mb\\x0a");
    CHECK(safeText("\xC2\x9B") == "\\u009b"); // C1 CSI
    CHECK(safeText("\x7F") == "\\x7f");
    const std::string once = safeText("x\xFE\x01");
    CHECK(safeText(once) == once);
    CHECK(isSafeText(once));
    CHECK_NOTHROW(json(once).dump());
}

TEST_CASE("hostile 3: a GGUF with names that are not UTF-8 imports to printable, serialisable text", "[hostile][text]")
{
    ScratchDir dir("hostile-text");
    const fs::path file = dir.path() / "bad\xFF\x1B[2Jname.gguf";
    writeBytes(file, hostile::ggufWithBadText());
    auto m = importModel(file);
    REQUIRE(m);
    CHECK(m->architectureName == "ll\xEF\xBF\xBD" "ama");
    CHECK(isSafeText(m->path));
    CHECK_THAT(m->path, Catch::Contains("bad\xEF\xBF\xBD\\x1b[2Jname.gguf"));
    REQUIRE(m->tensors.size() == 1);
    CHECK(m->tensors[0].name == "tok\\x1b[31m\xEF\xBF\xBD.weight");
    for (const std::string& w : m->warnings)
        CHECK(isSafeText(w));
    // The model's own name (general.name "evil ESC]0;title BEL \xC3(") too: plans, tables and
    // reports print it.
    CHECK(isSafeText(m->modelName));
    CHECK(m->modelName.find('\x1B') == std::string::npos);
    CHECK(m->modelName.find('\x07') == std::string::npos);
    json j{{"path", m->path}, {"architecture", m->architectureName}, {"name", m->modelName}, {"warnings", m->warnings}};
    CHECK_NOTHROW(j.dump());
    // An error names the file safely too.
    auto missing = importModel(dir.path() / "gone\xFF.gguf");
    REQUIRE(!missing);
    CHECK(isSafeText(toString(missing.error())));
}

// --- class 4: user overlay profiles ---------------------------------------------------------------

TEST_CASE("hostile 4: bad user profiles are skipped with a warning naming them; the rest loads", "[hostile][profiles]")
{
    ScratchDir user("hostile-profiles");
    json model = json::parse(readAll(sourcePath("profiles/models/llama-3.1-8b.json")));
    // A 30,000-character id (std::regex in the schema's pattern check recursed per character).
    json longId = model;
    longId["id"] = std::string(30000, 'a');
    writeBytes(user.path() / "models" / "long-id.json", longId.dump());
    // A value nested 100,000 deep where an integer belongs (explaining the type error recursed).
    std::string deep = model.dump();
    const std::string layers = "\"layers\":32";
    REQUIRE(deep.find(layers) != std::string::npos);
    deep.replace(deep.find(layers), layers.size(), "\"layers\":" + hostile::deepJson(100000));
    writeBytes(user.path() / "models" / "deep.json", deep);
    // Not JSON.
    writeBytes(user.path() / "cards" / "broken.json", std::string("{\"schema_version\": 1,"));
    json good = model;
    good["id"] = "my-model";
    writeBytes(user.path() / "models" / "my-model.json", good.dump());

    requireBounded("profiles with a 30,000-char id and 100,000-deep nesting", 20, 256 * kMiB, [&] {
        auto set = loadProfiles(sourcePath("profiles"), user.path());
        return set && set->warnings.size() == 3 && set->findModel("my-model") ? 0 : 1;
    });
    auto set = loadProfiles(sourcePath("profiles"), user.path());
    REQUIRE(set);
    REQUIRE(set->warnings.size() == 3);
    CHECK(set->findModel("my-model"));
    CHECK(set->findModel("llama-3.1-8b")); // the built-ins are all there
    // In load order: models (by file name), then cards.
    CHECK(set->warnings[0].file == (user.path() / "models" / "deep.json").string());
    CHECK_THAT(set->warnings[0].message, Catch::Contains("nested deeper than 64"));
    CHECK(set->warnings[1].file == (user.path() / "models" / "long-id.json").string());
    CHECK(set->warnings[1].key == "/id");
    CHECK_THAT(set->warnings[1].message, Catch::Contains("longer than 4096"));
    CHECK(set->warnings[2].file == (user.path() / "cards" / "broken.json").string());
    CHECK_THAT(set->warnings[2].message, Catch::Contains("invalid JSON"));
}

// --- class 5: report --check on an untrusted report ----------------------------------------------

namespace {

std::string oneReport()
{
    ReportInput in;
    in.requests.push_back(profileRequest("llama-3.1-8b", "int4-g128", "rtx-4090", "vllm", 4, 8192));
    in.plans.push_back(planOf(in.requests.back()));
    in.createdUtc = "2025-01-01T00:00:00Z";
    auto j = buildReportJson(in);
    REQUIRE(j);
    return *j;
}

} // namespace

TEST_CASE("hostile 5: a deeply nested schema_version is refused cleanly", "[hostile][report]")
{
    const std::string deep = hostile::reportWithDeepVersion(200000);
    requireBounded("report with schema_version 200,000 deep", 10, 64 * kMiB, [&] {
        auto check = checkReport(deep, sourceProfiles());
        return !check && check.error().message.find("nested deeper than 64") != std::string::npos ? 0 : 1;
    });
    std::string big(kMaxReportBytes + 1, ' ');
    auto check = checkReport(big, sourceProfiles());
    REQUIRE(!check);
    CHECK_THAT(check.error().message, Catch::Contains("a report may have"));
}

TEST_CASE("hostile 5: a report with 80,000 frontier points is diffed in linear time", "[hostile][report]")
{
    // Before: json::diff inserted each removal mid-vector: 50 s for this report.
    json r = json::parse(oneReport());
    json frontier = json::array();
    for (std::uint64_t i = 0; i < 80000; ++i)
        frontier.push_back({{"users", i + 1}, {"context_tokens", 8192}});
    r["plans"][0]["frontier"] = frontier;
    const std::string text = r.dump();
    requireBounded("report --check, 80,000 frontier points", 10, 512 * kMiB, [&] {
        auto check = checkReport(text, sourceProfiles());
        return check && check->driftCount >= 79000 && check->drifts.size() == kMaxReportedDrifts ? 0 : 1;
    });
}

TEST_CASE("hostile 5: a model path in a report that names a FIFO or a device is refused, not waited on", "[hostile][report]")
{
    ScratchDir dir("hostile-fifo");
    for (const std::string name : {"model", "model.gguf", "config.json"}) {
        const fs::path fifo = dir.path() / name;
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        json r = json::parse(oneReport());
        r["inputs"]["requests"][0]["model"] = fifo.string();
        const std::string text = r.dump();
        // Opened only when the user allows it (--allow-fetch), and then refused, not waited on.
        ReportCheckOptions fetch;
        fetch.allowFetch = true;
        requireBounded(("report naming a FIFO " + name).c_str(), 10, 256 * kMiB, [&] {
            auto check = checkReport(text, sourceProfiles(), fetch);
            return !check && check.error().message.find("not a regular file") != std::string::npos ? 0 : 1;
        });
        auto unchecked = checkReport(text, sourceProfiles());
        REQUIRE(unchecked);
        REQUIRE(unchecked->unchecked.size() == 1);
        CHECK(unchecked->checkedPlans == 0);
        auto m = importModel(fifo); // inspect/plan on the same path
        REQUIRE(!m);
        CHECK_THAT(m.error().message, Catch::Contains("not a regular file"));
    }
    auto zero = importModel("/dev/zero");
    REQUIRE(!zero);
    CHECK_THAT(zero.error().message, Catch::Contains("not a regular file"));
}

// --- class 6: writes over what is not a regular file ---------------------------------------------

TEST_CASE("hostile 6: the atomic write refuses special files and keeps the target's mode", "[hostile][atomic]")
{
    ScratchDir dir("hostile-atomic");
    // A FIFO: refused, still a FIFO.
    const fs::path fifo = dir.path() / "out.json";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    requireBounded("atomic write over a FIFO", 5, 16 * kMiB, [&] {
        auto w = writeFileAtomically(fifo, "x");
        return !w && w.error().find("a FIFO, not a regular file") != std::string::npos ? 0 : 1;
    });
    CHECK(fs::is_fifo(fifo));
    // /dev/null (as root the rename would replace the system's): refused, still a device.
    auto devNull = writeFileAtomically("/dev/null", "x");
    REQUIRE(!devNull);
    CHECK_THAT(devNull.error(), Catch::Contains("a character device"));
    CHECK(fs::is_character_file("/dev/null"));
    // A 0600 file stays 0600.
    const fs::path secret = dir.path() / "secret.json";
    writeBytes(secret, std::string("old"));
    REQUIRE(::chmod(secret.c_str(), 0600) == 0);
    REQUIRE(writeFileAtomically(secret, "new"));
    struct stat st {};
    REQUIRE(::stat(secret.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(readAll(secret) == "new");
    // A symbolic link: the target is replaced, the link kept.
    const fs::path target = dir.path() / "target.json";
    const fs::path link = dir.path() / "link.json";
    writeBytes(target, std::string("old"));
    fs::create_symlink(target, link);
    REQUIRE(writeFileAtomically(link, "via link"));
    CHECK(fs::is_symlink(link));
    CHECK(readAll(target) == "via link");
}

// --- class 7: shell injection in launch flags ----------------------------------------------------

namespace {

/// What @p shell prints when it runs the script @p line (written to a file of @p dir first).
std::string shellOutput(const std::string& shell, const std::string& line, const fs::path& dir)
{
    const fs::path script = dir / "line.sh";
    writeBytes(script, line);
    FILE* p = ::popen((shell + " " + script.string()).c_str(), "r");
    REQUIRE(p);
    std::string out;
    char buf[256];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p))
        out.append(buf, n);
    ::pclose(p);
    return out;
}

} // namespace

TEST_CASE("hostile 7: every argument is quoted for sh; a pasted command runs nothing", "[hostile][flags]")
{
    CHECK(shellQuote("model.gguf") == "model.gguf");
    CHECK(shellQuote("/models/Llama-3.1-8B/q4_k_m.gguf") == "/models/Llama-3.1-8B/q4_k_m.gguf");
    CHECK(shellQuote("") == "''");
    CHECK(shellQuote("a b") == "'a b'");
    CHECK(shellQuote("it's") == "'it'\\''s'");
    // A newline stays literal inside the quotes; other controls and bytes that are not UTF-8
    // become printf octal escapes (dash, Debian's sh, does not decode $'...').
    CHECK(shellQuote("a\nb") == "'a\nb'");
    CHECK(shellQuote("a\tb") == "'a'\"$(printf '\\011')\"'b'");
    CHECK(shellQuote("\xFF\xFE.gguf") == "\"$(printf '\\377\\376')\"'.gguf'");
    CHECK(shellQuote("mod\xC3\xA8le \xE2\x9C\x93") == "'mod\xC3\xA8le \xE2\x9C\x93'"); // UTF-8 kept as it is
    ScratchDir dir("hostile-shell");
    const fs::path marker = dir.path() / "pwned";
    const std::vector<std::string> words{"$(touch " + marker.string() + ")", "`touch " + marker.string() + "`",
                                         "x; touch " + marker.string(), "a\nb'c\"d$e!f*g~h#i{j}", "-rf", "$HOME",
                                         "tab\there", "bytes\xFF\xFE\x80 end", "esc\x1B[2Jx\x07", "trailing\n\n", "\n",
                                         "c1 \xC2\x9B" "6n", "\x7F", "'", "\\n \\x41 %s %%", "mod\xC3\xA8le \xE2\x9C\x93"};
    std::vector<std::string> shells{"sh"};
    if (std::system("bash -c true >/dev/null 2>&1") == 0)
        shells.push_back("bash");
    for (const std::string& word : words) {
        const std::string quoted = shellQuote(word);
        INFO("word quoted as " << quoted);
        // The quoted word holds no raw control byte but newlines, and is valid UTF-8.
        std::string withoutNewlines = quoted;
        std::erase(withoutNewlines, '\n');
        CHECK(isSafeText(withoutNewlines));
        // sh (and bash) print the word back exactly, and create nothing.
        for (const std::string& shell : shells) {
            INFO(shell);
            CHECK(shellOutput(shell, "printf '%s' " + quoted, dir.path()) == word);
            CHECK(!fs::exists(marker));
        }
    }
    // The model path of a plan is quoted in the printed command: its own bytes (localPath), not
    // the id made safe to print.
    PlanRequest req = profileRequest("llama-3.1-8b", "q4_k", "rtx-4090", "llama.cpp", 1, 4096); // a GGUF type llama.cpp runs
    req.model.id = dir.path().string() + "/a$(touch " + marker.string() + ").gguf";
    auto flags = launchFlags(req, planOf(req));
    REQUIRE(flags);
    CHECK_THAT(flags->command, Catch::Contains("llama-server -m '" + req.model.id + "' "));
    req.model.localPath = dir.path().string() + "/a\nb\xFF.gguf";
    req.model.id = safeText(req.model.localPath);
    flags = launchFlags(req, planOf(req));
    REQUIRE(flags);
    CHECK_THAT(flags->command, Catch::Contains("llama-server -m '" + dir.path().string() + "/a\nb'\"$(printf '\\377')\"'.gguf' "));
}

TEST_CASE("hostile 7: a draft path is escaped inside vLLM's --speculative-config JSON; it adds no key", "[hostile][flags]")
{
    // Before (review 13, session 4): the path was pasted between JSON quotes as it was, so
    // 'x", "method": "eagle", "y": "z.gguf' gave vLLM a config of four keys, and a path with a
    // backslash or a control byte gave one that does not parse.
    const ModelProfile* draft = sourceProfiles().findModel("llama-3.2-1b");
    REQUIRE(draft);
    PlanRequest req = profileRequest("llama-3.1-8b", "bf16", "h100-sxm", "vllm", 1, 4096);
    for (const std::string path : {std::string("/m/x\", \"method\": \"eagle\", \"y\": \"z.gguf"), std::string("/m/back\\slash\ttab\nnl.gguf")}) {
        INFO(path);
        ModelProfile d = *draft;
        d.localPath = path;
        d.id = safeText(path);
        req.draft = DraftRequest{d, *findFormat("bf16")};
        auto flags = launchFlags(req, planOf(req));
        REQUIRE(flags);
        const auto f = std::find_if(flags->flags.begin(), flags->flags.end(), [](const LaunchFlag& x) { return x.name == "--speculative-config"; });
        REQUIRE(f != flags->flags.end());
        const json config = json::parse(f->value); // throws (fails the test) when it is no JSON
        CHECK(config.size() == 2);
        CHECK(config["model"] == path);
        CHECK(config["num_speculative_tokens"] == 4);
        CHECK_THAT(flags->command, Catch::Contains("--speculative-config " + shellQuote(f->value)));
    }
}

// --- class 8: leftovers after kill -9 ------------------------------------------------------------

TEST_CASE("hostile 8: temporary files of a writer killed with -9 are removed by the next write", "[hostile][atomic]")
{
    ScratchDir dir("hostile-leftover");
    // A writer that died: a child that exits at once (its PID no longer runs once reaped).
    const pid_t dead = ::fork();
    if (dead == 0)
        ::_exit(0);
    int status = 0;
    ::waitpid(dead, &status, 0);
    const fs::path stale = dir.path() / (".report.json.tmp-" + std::to_string(dead) + "-AbC123");
    const fs::path live = dir.path() / (".report.json.tmp-1-XyZ789"); // PID 1 runs: kept
    const fs::path other = dir.path() / (".other.json.tmp-" + std::to_string(dead) + "-AbC123"); // another target
    for (const fs::path& f : {stale, live, other})
        writeBytes(f, std::string("half"));
    REQUIRE(writeFileAtomically(dir.path() / "report.json", "complete"));
    CHECK(!fs::exists(stale));
    CHECK(fs::exists(live));
    CHECK(fs::exists(other));
    CHECK(readAll(dir.path() / "report.json") == "complete");
}

// --- class 9: smaller ----------------------------------------------------------------------------

TEST_CASE("hostile 9: a tensor in two split shards is refused; a shard that disagrees is warned about", "[hostile][gguf]")
{
    ScratchDir dir("hostile-split");
    writeBytes(dir.path() / "m-00001-of-00002.gguf", hostile::ggufShard(0, "token_embd.weight", "llama"));
    writeBytes(dir.path() / "m-00002-of-00002.gguf", hostile::ggufShard(1, "token_embd.weight", "llama"));
    auto twice = importModel(dir.path() / "m-00001-of-00002.gguf");
    REQUIRE(!twice);
    CHECK(twice.error().code == ImportErrorCode::DuplicateTensor);
    CHECK_THAT(twice.error().message, Catch::Contains("in shard 1 and again in shard 2"));

    writeBytes(dir.path() / "m-00002-of-00002.gguf", hostile::ggufShard(1, "output.weight", "qwen2"));
    auto mixed = importModel(dir.path() / "m-00001-of-00002.gguf");
    REQUIRE(mixed);
    CHECK(mixed->tensorCount == 2);
    bool warned = false;
    for (const std::string& w : mixed->warnings)
        warned = warned || (w.find("m-00002-of-00002.gguf: 1 metadata key(s) differ from the first shard (general.architecture)") != std::string::npos);
    CHECK(warned);
}

TEST_CASE("hostile 9: CSV cells that would start a spreadsheet formula are prefixed", "[hostile][report]")
{
    json r = json::parse(oneReport());
    r["plans"][0]["model"] = "=HYPERLINK(\"http://x\",\"y\")";
    r["plans"][0]["reason"] = "@SUM(A1)";
    auto csv = report::renderReportCsv(r.dump());
    REQUIRE(csv);
    CHECK_THAT(*csv, Catch::Contains("\n\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\","));
    CHECK_THAT(*csv, Catch::Contains(",'@SUM(A1)\n"));
    CHECK_THAT(*csv, !Catch::Contains(",=") && !Catch::Contains(",@"));
}

// --- the readers open once: no stat-then-open race ------------------------------------------------

TEST_CASE("hostile 5: a reader checks the file it opened, not a path swapped to a FIFO after a check", "[hostile][toctou]")
{
    // Another thread swaps the path, atomically (rename of a fresh symlink over it), between a
    // symlink to a regular file and one to a FIFO that nobody writes. A reader that checks the
    // path and then opens it again sees a regular file, opens the FIFO and blocks forever (the
    // bound fails the test); a reader that opens once and fstat()s that descriptor never blocks:
    // every read is the file's header or "not a regular file".
    ScratchDir dir("hostile-toctou");
    writeBytes(dir.path() / "good.gguf", hostile::ggufSmallLlama());
    writeBytes(dir.path() / "good.safetensors", hostile::safetensorsWithTensors(4));
    REQUIRE(::mkfifo((dir.path() / "fifo").c_str(), 0600) == 0);
    for (const std::string ext : {".gguf", ".safetensors"}) {
        const fs::path target = dir.path() / ("target" + ext);
        requireBounded(("swapped path " + ext).c_str(), 20, 256 * kMiB, [&] {
            std::atomic<bool> stop{false};
            std::thread swapper([&] {
                const fs::path tmp = dir.path() / ("swap" + ext);
                for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i) {
                    ::unlink(tmp.c_str());
                    if (::symlink(i % 2 ? "fifo" : ("good" + ext).c_str(), tmp.c_str()) != 0 ||
                        std::rename(tmp.c_str(), target.c_str()) != 0)
                        return;
                }
            });
            while (!fs::exists(fs::symlink_status(target)))
                std::this_thread::yield();
            unsigned parsed = 0, refused = 0, other = 0;
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
            while (std::chrono::steady_clock::now() < until || parsed == 0 || refused == 0) {
                std::optional<ImportError> error;
                if (ext == ".gguf") {
                    auto f = readGguf(target);
                    if (!f)
                        error = f.error();
                } else {
                    auto h = readSafetensorsHeader(target);
                    if (!h)
                        error = h.error();
                }
                if (!error)
                    ++parsed;
                else if (error->code == ImportErrorCode::ReadFailed && error->message == "not a regular file")
                    ++refused;
                else
                    ++other;
            }
            stop = true;
            swapper.join();
            std::printf("%s: %u parsed, %u refused, %u other\n", ext.c_str(), parsed, refused, other);
            std::fflush(stdout);
            return other == 0 ? 0 : 1;
        });
    }
}

TEST_CASE("hostile 5: a FIFO as refs/main of a hub-cache repo is refused unread, never a hang", "[hostile][stores]")
{
    // huggingface_hub layout: refs/BRANCH holds the commit; here refs/main is a FIFO nobody
    // writes (a reader that opens it by name blocks forever), refs/dev is larger than any commit id
    // and refs/pr a folder. Each is opened once and refused through its descriptor.
    ScratchDir dir("hostile-hubcache");
    const fs::path hub = dir.path() / "hub";
    const fs::path repo = hub / "models--org--tiny";
    const std::string commit(40, 'a');
    writeBytes(repo / "snapshots" / commit / "tiny.gguf", hostile::ggufSmallLlama());
    fs::create_directories(repo / "refs" / "pr");
    REQUIRE(::mkfifo((repo / "refs" / "main").c_str(), 0600) == 0);
    writeBytes(repo / "refs" / "dev", commit + std::string(1 << 20, 'a'));
    writeBytes(repo / "refs" / "v1", commit + "\n");
    requireBounded("hub cache, refs/main a FIFO", 10, 64 * kMiB, [&] {
        const auto models = scanHubCache(hub);
        const auto found = findInHubCache(hub, "org/tiny");           // no readable refs/main: the newest snapshot
        const auto atDev = findInHubCache(hub, "org/tiny", "dev");   // refs/dev refused: no such revision
        const auto atV1 = findInHubCache(hub, "org/tiny", "v1");
        const bool ok = models.size() == 1 && models[0].refs == std::vector<std::string>{"v1"} && found
                        && found->filename() == commit && !atDev && atV1 && atV1->filename() == commit;
        return ok ? 0 : 1;
    });
}

TEST_CASE("hostile 5: a saved calibration nested 200,000 deep is a clean error, not a stack overflow in dump", "[hostile][calibration]")
{
    // Before: schema_version (or a measured value) nested deep was dumped into the message:
    // nlohmann's dump recurses once per level, and the process died (SIGSEGV) on every plan of
    // that card and engine.
    const std::string deep = hostile::deepJson(200000);
    requireBounded("calibration nested 200,000 deep", 10, 64 * kMiB, [&] {
        auto version = calibrationFromJson(R"({"schema_version": )" + deep + "}", "cal.json");
        auto measured = calibrationFromJson(R"({"schema_version": 1, "engine": "vllm", "card_total_bytes": 1, "measured": {"runtime_bytes": )"
                                                + deep + "}}",
                                            "cal.json");
        return !version && version.error().find("nested deeper than 64") != std::string::npos && !measured ? 0 : 1;
    });
    auto wrongType = calibrationFromJson(R"({"schema_version": 1, "engine": "vllm", "card_total_bytes": 1, "measured": {"runtime_bytes": [1]}})",
                                         "cal.json");
    REQUIRE(!wrongType);
    CHECK(wrongType.error() == "cal.json: key measured.runtime_bytes: expected bytes (an unsigned integer), found an array");
    // Its strings are printed (the plan names the calibration): made safe.
    auto named = calibrationFromJson("{\"schema_version\": 1, \"engine\": \"vllm\", \"card_total_bytes\": 1, \"log\": \"x\\u001b[2Jy\"}",
                                     "cal.json");
    REQUIRE(named);
    CHECK(named->logName == "x\\x1b[2Jy");
}

TEST_CASE("hostile 5: RegularFile reads the file it opened after its path is replaced", "[hostile][toctou]")
{
    ScratchDir dir("hostile-regularfile");
    const fs::path path = dir.path() / "f.bin";
    writeBytes(path, std::string("first contents"));
    auto file = RegularFile::open(path);
    REQUIRE(file);
    CHECK(file->sizeBytes() == 14);
    fs::remove(path);
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0); // the name now is a FIFO; the descriptor is not
    auto text = file->readStringAt(6, 100);
    REQUIRE(text);
    CHECK(*text == "contents");
    auto fifo = RegularFile::open(path);
    REQUIRE(!fifo);
    CHECK(fifo.error().code == ImportErrorCode::ReadFailed);
    CHECK(toString(fifo.error()) == path.string() + ": not a regular file [read-failed]");
    auto dev = RegularFile::open("/dev/zero");
    REQUIRE(!dev);
    CHECK(dev.error().message == "not a regular file");
    auto missing = RegularFile::open(dir.path() / "absent");
    REQUIRE(!missing);
    CHECK(missing.error().code == ImportErrorCode::FileNotFound);
}

TEST_CASE("hostile 4: bad files in the calibrations folder are skipped with a warning each; the good one applies", "[hostile][calibration]")
{
    // Before: readCalibration's first error ended findSavedCalibration, so one bad file (not JSON,
    // a FIFO, a symlink to /dev/zero, a file nested 100,000 deep) failed every plan command.
    ScratchDir user("hostile-calibrations");
    const fs::path dir = user.path() / "calibrations";
    fs::create_directories(dir);
    PlanRequest request = profileRequest("llama-3.1-8b", "int4-g128", "rtx-4090", "vllm", 4, 8192);
    LogCalibration good;
    good.cardId = "rtx-4090";
    good.cardTotalBytes = request.card.totalBytes;
    good.engine = "vllm";
    good.modelId = "llama-3.1-8b";
    good.logName = "serve.log";
    good.logHash = "0123";
    good.measured.activationPeakBytes = Bytes{3 * kGiB};
    writeBytes(dir / "z-good.json", calibrationToJson(good));
    writeBytes(dir / "a-invalid.json", std::string("{\"schema_version\": 1,"));
    writeBytes(dir / "b-deep.json", "{\"schema_version\": 1, \"engine\": \"vllm\", \"measured\": " + hostile::deepJson(100000) + "}");
    REQUIRE(::mkfifo((dir / "c-fifo.json").c_str(), 0600) == 0);
    fs::create_symlink("/dev/zero", dir / "d-zero.json");
    fs::create_directories(dir / "e-folder.json");
    writeBytes(dir / "f-huge.json", std::string((1u << 20) + 1, ' '));

    requireBounded("calibrations folder with 6 bad files", 10, 64 * kMiB, [&] {
        const CalibrationFolder folder = readCalibrationFolder(user.path());
        const PlanRequest r = applySavedCalibration(request, folder);
        return folder.warnings.size() == 6 && folder.calibrations.size() == 1 && r.measured.activationPeakBytes ? 0 : 1;
    });
    const CalibrationFolder folder = readCalibrationFolder(user.path());
    REQUIRE(folder.warnings.size() == 6);
    const char* expected[] = {"a-invalid.json: at byte 21: invalid JSON", "b-deep.json: at byte ",
                              "c-fifo.json: not a regular file", "d-zero.json: not a regular file",
                              "e-folder.json: not a regular file", "f-huge.json: a calibration is at most 1 MiB"};
    for (std::size_t i = 0; i < 6; ++i) {
        INFO(folder.warnings[i]);
        CHECK(folder.warnings[i].starts_with("skipped calibration: "));
        CHECK_THAT(folder.warnings[i], Catch::Contains(dir.string() + "/" + expected[i]));
    }
    CHECK_THAT(folder.warnings[1], Catch::Contains("nested deeper than 64"));
    REQUIRE(folder.calibrations.size() == 1);
    CHECK(folder.calibrations[0].first.filename() == "z-good.json");
    // The good calibration still applies, through the folder and through the path.
    const PlanRequest r = applySavedCalibration(request, folder);
    REQUIRE(r.measured.activationPeakBytes);
    CHECK(r.measured.activationPeakBytes->value == 3 * kGiB);
    CHECK(r.measured.source.starts_with("calibrated by vllm on rtx-4090 from serve.log"));
    auto viaPath = applySavedCalibration(request, user.path());
    REQUIRE(viaPath);
    CHECK(viaPath->measured.activationPeakBytes == r.measured.activationPeakBytes);
}

TEST_CASE("hostile 4: a saved calibration whose terms exceed its card is skipped, not applied to every plan", "[hostile][calibration]")
{
    // Before (review 13, session 4): a calibration of another model whose non_torch_bytes was
    // 2^64 - 1 (or an activation peak of 2^64 - 1) made every vLLM plan on a card of that total
    // fail with "arithmetic overflow ... lower --users or --context", naming no file.
    ScratchDir user("hostile-calibration-range");
    const fs::path dir = user.path() / "calibrations";
    fs::create_directories(dir);
    PlanRequest request = profileRequest("llama-3.1-8b", "int4-g128", "rtx-4090", "vllm", 4, 8192);
    const std::uint64_t total = request.card.totalBytes.value;
    const std::string head = "{\"schema_version\": 1, \"card\": \"rtx-4090\", \"engine\": \"vllm\", \"model\": \"qwen2.5-7b\", ";
    const std::string max = "18446744073709551615";
    writeBytes(dir / "a-non-torch.json", head + "\"card_total_bytes\": " + std::to_string(total) +
                                             ", \"model_independent\": {\"non_torch_bytes\": " + max + "}}");
    writeBytes(dir / "b-activation.json", head + "\"card_total_bytes\": " + std::to_string(total) +
                                              ", \"measured\": {\"activation_peak_bytes\": " + max + "}}");
    writeBytes(dir / "c-card.json", head + "\"card_total_bytes\": " + max + "}");
    writeBytes(dir / "d-ubatch.json", head + "\"card_total_bytes\": " + std::to_string(total) + ", \"ubatch_tokens\": " + max + "}");

    requireBounded("calibrations folder with 4 out-of-range files", 10, 64 * kMiB, [&] {
        const CalibrationFolder folder = readCalibrationFolder(user.path());
        return folder.warnings.size() == 4 && folder.calibrations.empty() ? 0 : 1;
    });
    const CalibrationFolder folder = readCalibrationFolder(user.path());
    REQUIRE(folder.warnings.size() == 4);
    const char* expected[] = {"a-non-torch.json: key model_independent.non_torch_bytes: 18446744073709551615 bytes, more than the card_total_bytes",
                              "b-activation.json: key measured.activation_peak_bytes: 18446744073709551615 bytes, more than",
                              "c-card.json: key card_total_bytes: ", "d-ubatch.json: key ubatch_tokens: 18446744073709551615 tokens, expected at most 16777216"};
    for (std::size_t i = 0; i < 4; ++i) {
        INFO(folder.warnings[i]);
        CHECK_THAT(folder.warnings[i], Catch::Contains(dir.string() + "/" + expected[i]));
    }
    CHECK_THAT(folder.warnings[2], Catch::Contains("more than the largest card size"));
    CHECK(folder.calibrations.empty());
    // Every plan on the card still runs: uncalibrated, no overflow.
    auto viaPath = applySavedCalibration(request, user.path());
    REQUIRE(viaPath);
    CHECK(!viaPath->measured.activationPeakBytes);
    const auto plan = makePlan(*viaPath);
    CHECK(plan.has_value());

    // A calibration a log measured is not saved either when a term exceeds its card (a misread).
    LogComparison comparison;
    comparison.calibration.cardId = "rtx-4090";
    comparison.calibration.cardTotalBytes = request.card.totalBytes;
    comparison.calibration.engine = "vllm";
    comparison.calibration.modelId = "llama-3.1-8b";
    comparison.calibration.nonTorchBytes = Bytes{1ull << 63};
    auto saved = saveCalibration(comparison, user.path(), {});
    REQUIRE(!saved);
    CHECK_THAT(saved.error(), Catch::Contains("not saved") && Catch::Contains("key model_independent.non_torch_bytes: 9223372036854775808 bytes"));
}

// --- report --check: amplification and what an untrusted report names ---------------------------

namespace {

/// @p report with @p extra more requests (copies of request 0 with @p model, or itself when
/// empty), and, with @p withPlans, a plan and a what-fits cell for each.
std::string withRequests(const std::string& report, std::size_t extra, bool withPlans, const std::vector<std::string>& models = {})
{
    json r = json::parse(report);
    const json request = r["inputs"]["requests"][0], plan = r["plans"][0], cell = r["what_fits"][0];
    for (std::size_t i = 0; i < extra; ++i) {
        json q = request;
        if (!models.empty())
            q["model"] = models[i % models.size()];
        r["inputs"]["requests"].push_back(q);
        if (withPlans) {
            r["plans"].push_back(plan);
            json c = cell;
            c["plan_index"] = i + 1;
            r["what_fits"].push_back(c);
        }
    }
    return r.dump();
}

/// An HTTP client that answers nothing and counts what was asked of it.
class CountingHttpClient : public HttpClient {
public:
    tl::expected<HttpResponse, HttpError> get(const HttpRequest&) override
    {
        ++requests;
        return tl::unexpected(HttpError{HttpError::Kind::Offline, "offline (test)"});
    }
    std::atomic<int> requests{0};
};

} // namespace

TEST_CASE("hostile 5: report --check bounds the plans it recomputes and its memory", "[hostile][report]")
{
    // Before: 20,000 requests with one plan (3.97 MB) took 1.5 GB and 17-40 s: every request was
    // recomputed and the whole recomputed report held (~75 KB a plan) beside two copies of both.
    const std::string one = oneReport();
    const std::string many = withRequests(one, 19999, false);
    requireBounded("report --check, 20,000 requests and 1 plan", 5, 128 * kMiB, [&] {
        auto check = checkReport(many, sourceProfiles());
        return !check && check.error().message == "report: 20000 plans, more than the 4096 a report may hold" ? 0 : 1;
    });
    const std::string mismatched = withRequests(one, 4095, false);
    auto refused = checkReport(mismatched, sourceProfiles());
    REQUIRE(!refused);
    CHECK(refused.error().message == "report: 4096 requests, 1 plans and 1 what_fits cells: a report has one plan and one cell per request");
    // A valid report of 2,000 plans (about 12 MB): recomputed with memory a small multiple of the
    // report (the parsed document, one plan at a time); the unfixed code held the whole
    // recomputed report beside two copies of both (about 150 MB more).
    const std::string plans = withRequests(one, 1999, true);
    INFO("report of 2,000 plans: " << plans.size() << " bytes");
    REQUIRE(plans.size() > 10'000'000);
    const BoundedRun run = requireBounded("report --check, 2,000 plans", 30, 8 * plans.size(), [&] {
        auto check = checkReport(plans, sourceProfiles());
        return check && check->checkedPlans == 2000 && check->drifts.empty() ? 0 : 1;
    });
    CHECK(run.exitCode == 0);
}

TEST_CASE("hostile 5: report --check reads and fetches nothing a report names unless allowed", "[hostile][report]")
{
    // Before: a model "http://...", "hf://ORG/NAME" or "ORG/NAME" in an untrusted report made
    // outbound HTTP requests, and a path made it open and read local folders.
    ScratchDir dir("hostile-nofetch");
    fs::create_directories(dir.path() / "model");
    writeBytes(dir.path() / "model" / "config.json", std::string("{}"));
    auto client = std::make_shared<CountingHttpClient>();
    const std::shared_ptr<HttpClient> previous = defaultHttpClient();
    setDefaultHttpClient(client);
    const std::vector<std::string> models = {"http://127.0.0.1:1/x.gguf", "hf://meta-llama/Llama-3.1-8B", "org/name",
                                             (dir.path() / "model").string()};
    const std::string report = withRequests(oneReport(), models.size(), true, models);
    auto check = checkReport(report, sourceProfiles());
    REQUIRE(check);
    CHECK(client->requests == 0);
    CHECK(check->checkedPlans == 1); // the profile's plan, compared as before
    CHECK(check->drifts.empty());
    REQUIRE(check->unchecked.size() == 4);
    for (std::size_t i = 0; i < models.size(); ++i) {
        INFO(check->unchecked[i]);
        CHECK(check->unchecked[i].starts_with("plan " + std::to_string(i + 1) + " (model '" + models[i] + "'): not re-checked: "
                                              "the model is no built-in or user profile"));
        CHECK_THAT(check->unchecked[i], Catch::Contains("--allow-fetch"));
    }
    // Opted in, the remote model is fetched (through the client) and its failure named.
    ReportCheckOptions fetch;
    fetch.allowFetch = true;
    auto fetched = checkReport(report, sourceProfiles(), fetch);
    CHECK(client->requests > 0);
    REQUIRE(!fetched);
    CHECK_THAT(fetched.error().message, Catch::StartsWith("cannot recompute plan 1: "));
    setDefaultHttpClient(previous);
}
