// "Faces agree": for seeded random requests (model, format, KV dtype, card, engine, context,
// users), the app's what-fits model, `headroom-cli plan --json`, `table --json` and the JSON
// report give the same verdict, binding limit and headline number: each face prints core's
// verdict (verdict.h) and computes none of its own.

#include "apptestutils.h"
#include "roofline.h"
#include "whatfitsmodel.h"

#include "headroom/core/defaults.h"
#include "headroom/core/planjson.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>

using namespace headroom;
using namespace headroom::app;

namespace {

struct Answer {
    bool ok = false;
    std::string state;
    std::string limit;
    quint64 headline = 0;
};

std::string toString(const Answer& a)
{
    return a.ok ? a.state + " / " + a.limit + " / " + std::to_string(a.headline) : std::string("error");
}

bool operator==(const Answer& a, const Answer& b)
{
    return a.ok == b.ok && (!a.ok || (a.state == b.state && a.limit == b.limit && a.headline == b.headline));
}

Answer fromVerdict(const QJsonObject& v)
{
    return {true, v.value("state").toString().toStdString(), v.value("limit").toString().toStdString(),
            static_cast<quint64>(v.value("headline").toObject().value("value").toDouble())};
}

using test::runCli;

const std::string& stateId(Fit fit)
{
    static const std::map<Fit, std::string> ids{{Fit::Reaches, "fits"}, {Fit::Short, "fits_with_less"}, {Fit::Partial, "partial_offload"},
                                                 {Fit::NoRoom, "does_not_fit"}, {Fit::Error, "error"}};
    return ids.at(fit);
}

struct Group {
    std::string model, kv, engine;
    std::uint64_t context = 0, users = 0;
    std::vector<std::string> formats, cards;
};

QStringList common(const Group& g)
{
    return {"--kv-dtype", QString::fromStdString(g.kv), "--engine", QString::fromStdString(g.engine), "--context",
            QString::number(g.context), "--users", QString::number(g.users), "--json"};
}

// The plan object of (format, card) in a face's array of plans (table, frontier); null if absent.
QJsonObject planIn(const QJsonArray& plans, const std::string& f, const std::string& c)
{
    for (const QJsonValue& v : plans) {
        const QJsonObject o = v.toObject();
        if (o.value("weights_format").toString().toStdString() == f && o.value("card").toString().toStdString() == c)
            return o;
    }
    return {};
}

// "users x context" pairs of a frontier, as the plot and `frontier` print them.
std::string frontierText(const QJsonArray& points)
{
    std::string out;
    for (const QJsonValue& v : points)
        out += std::to_string(v.toObject().value("users").toInteger()) + "x"
            + std::to_string(v.toObject().value("context_tokens").toInteger()) + " ";
    return out;
}

std::string frontierText(const std::vector<FrontierPoint>& points)
{
    std::string out;
    for (const FrontierPoint& p : points)
        out += std::to_string(p.users) + "x" + std::to_string(p.contextTokens) + " ";
    return out;
}

// The speed face (`speed --json`) against the app's plan: speed only for what loads, else the
// reason; the decode curve the app's tokens/s plot draws (roofline.h) equals the one the CLI prints.
void checkSpeedFace(const QJsonObject& speedJson, const PlanResult& app, const Card& card, std::uint64_t contextTokens)
{
    const bool loads = app.verdict.loads();
    INFO("speed face: app " << (loads ? "loads" : "does not load"));
    CHECK(speedJson.contains("speed") == (loads && app.speed.has_value()));
    CHECK(speedJson.contains("speed_unavailable") == (!loads && app.speed.has_value()));
    if (!speedJson.contains("speed"))
        return;
    const QJsonObject sp = speedJson.value("speed").toObject();
    CHECK(static_cast<std::uint64_t>(sp.value("context_tokens").toInteger()) == contextTokens);
    const auto points = rooflineEstimate(app, card, contextTokens, 1024);
    const QJsonArray curve = sp.value("curve").toArray();
    int compared = 0;
    for (const QJsonValue& v : curve)
        for (const RooflinePoint& r : points)
            if (r.batch == static_cast<std::uint64_t>(v.toObject().value("batch").toInteger())) {
                const double cli = v.toObject().value("tokens_per_s").toDouble();
                CHECK(std::abs(cli - r.tokensPerSecond) <= 1e-9 * std::max(1.0, r.tokensPerSecond));
                ++compared;
            }
    CHECK(compared > 0);
}

template <typename T> const T& pick(std::mt19937& rng, const std::vector<T>& v)
{
    return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}

} // namespace

TEST_CASE("faces agree: app, plan --json, table --json and the JSON report give one verdict", "[facesagree]")
{
    const std::vector<std::string> models{"llama-3.1-8b", "qwen2.5-7b", "llama-2-7b", "llama-2-13b", "qwen2.5-0.5b",
                                          "mistral-7b", "phi-3-mini-4k"};
    const std::vector<std::string> formats{"fp16", "bf16", "fp8", "int8-row", "int4-g128", "awq-g128", "nf4-b64", "q8_0", "q4_k", "q2_k"};
    const std::vector<std::string> kvs{"fp16", "bf16", "fp8", "q8_0", "q4_0"};
    const std::vector<std::string> cards{"rtx-4060", "rtx-4060-ti-16gb", "rtx-4090", "a100-80gb", "l4", "rtx-3060-12gb", "12GiB", "48GiB"};
    const std::vector<std::string> engines{"vllm", "llama.cpp", "sglang", "tgi", "tensorrt-llm", "ollama"};
    const std::vector<std::uint64_t> contexts{512, 2048, 4096, 8192, 32768, 131072, 200000};
    const std::vector<std::uint64_t> users{1, 2, 4, 16, 64, 300};

    Catalog catalog = test::catalog();
    std::vector<std::string> knownModels;
    for (const std::string& m : models)
        if (catalog.findModel(m))
            knownModels.push_back(m);
    REQUIRE(knownModels.size() >= 5);
    for (const std::string& c : cards)
        if (!catalog.findCard(c))
            REQUIRE(catalog.addSizedCard(c));

    std::mt19937 rng(20261201u);
    int requests = 0;
    int disagreements = 0;
    std::map<std::string, int> states;
    constexpr int kGroups = 40;
    constexpr int kPerGroup = 5; // one (format, card) request per pair; table and report hold the cross product
    for (int gi = 0; gi < kGroups; ++gi) {
        Group g{pick(rng, knownModels), pick(rng, kvs), pick(rng, engines), pick(rng, contexts), pick(rng, users), {}, {}};
        std::vector<std::pair<std::string, std::string>> pairs;
        for (int k = 0; k < kPerGroup; ++k) {
            const std::string f = pick(rng, formats);
            const std::string c = pick(rng, cards);
            pairs.emplace_back(f, c);
            if (std::find(g.formats.begin(), g.formats.end(), f) == g.formats.end())
                g.formats.push_back(f);
            if (std::find(g.cards.begin(), g.cards.end(), c) == g.cards.end())
                g.cards.push_back(c);
        }
        INFO("group " << gi << ": " << g.model << ", " << g.kv << " KV, " << g.engine << ", " << g.users << " users x " << g.context);

        // The app: its selection and its what-fits model.
        Selection s = Selection::defaults();
        s.modelId = g.model;
        s.kvDtypeId = g.kv;
        s.engineId = g.engine;
        s.contextTokens = g.context;
        s.users = g.users;
        s.cardIds = g.cards;
        s.ubatchTokens = catalog.findEngine(g.engine)->ubatchTokens;
        std::vector<MatrixRow> rows;
        for (const std::string& f : g.formats) {
            MatrixRow row{g.model, f, f, {}};
            for (const std::string& c : g.cards)
                row.cells.push_back(planFor(catalog, s, g.model, f, c));
            rows.push_back(std::move(row));
        }
        WhatFitsModel matrix;
        std::vector<QString> labels(g.cards.size());
        matrix.setMatrix(rows, g.cards, labels, g.context);
        const auto appAnswer = [&](const std::string& f, const std::string& c) {
            const QModelIndex i = matrix.find(g.model, f, c);
            const PlanResult* p = matrix.plan(i);
            if (!p)
                return Answer{};
            // What the view shows, and that it is the verdict's own.
            CHECK(matrix.data(i).toString().toStdString() == verdictCellText(p->verdict));
            return Answer{true, stateId(static_cast<Fit>(matrix.data(i, WhatFitsModel::FitRole).toInt())),
                          fitLimitId(p->verdict.limit), matrix.data(i, WhatFitsModel::RawRole).toULongLong()};
        };

        // table --json and report -f json over the group's cross product.
        QStringList matrixArgs{"-m", QString::fromStdString(g.model), "-w"};
        for (const std::string& f : g.formats)
            matrixArgs << QString::fromStdString(f);
        matrixArgs << "-c";
        for (const std::string& c : g.cards)
            matrixArgs << QString::fromStdString(c);
        matrixArgs << common(g);
        const auto table = runCli(QStringList{"table"} + matrixArgs);
        QStringList reportArgs = QStringList{"report"} + matrixArgs;
        reportArgs.removeAll("--json");
        reportArgs << "-f" << "json";
        const auto report = runCli(reportArgs);
        const auto frontier = runCli(QStringList{"frontier"} + matrixArgs);
        const auto cellOf = [](const QJsonArray& cells, const std::string& f, const std::string& c, const char* verdictKey) {
            for (const QJsonValue& v : cells) {
                const QJsonObject o = v.toObject();
                if (o.value("weights_format").toString().toStdString() == f && o.value("card").toString().toStdString() == c)
                    return fromVerdict(o.value(verdictKey).toObject());
            }
            return Answer{};
        };

        for (const std::string& f : g.formats)
            for (const std::string& c : g.cards) {
                const Answer app = appAnswer(f, c);
                const Answer fromTable = table ? cellOf(table->array(), f, c, "verdict") : Answer{};
                const Answer fromReport = report ? cellOf(report->object().value("what_fits").toArray(), f, c, "verdict") : Answer{};
                INFO(f << " on " << c << ": app " << toString(app) << ", table " << toString(fromTable) << ", report "
                       << toString(fromReport));
                const QJsonObject fromFrontier = frontier ? planIn(frontier->array(), f, c) : QJsonObject{};
                const Answer frontierAnswer = fromFrontier.isEmpty() ? Answer{} : fromVerdict(fromFrontier.value("verdict").toObject());
                INFO("frontier " << toString(frontierAnswer));
                CHECK(app == fromTable);
                CHECK(app == fromReport);
                CHECK(app == frontierAnswer);
                disagreements += !(app == fromTable) + !(app == fromReport) + !(app == frontierAnswer);
                // The frontier the app plots is the one `frontier` prints.
                if (const PlanResult* p = matrix.plan(matrix.find(g.model, f, c)))
                    CHECK(frontierText(p->frontier) == frontierText(fromFrontier.value("frontier").toArray()));
            }
        for (const auto& [f, c] : pairs) {
            const auto plan = runCli(QStringList{"plan", "-m", QString::fromStdString(g.model), "-w", QString::fromStdString(f), "-c",
                                                 QString::fromStdString(c)}
                                     + common(g));
            const Answer fromPlan = plan ? fromVerdict(plan->object().value("verdict").toObject()) : Answer{};
            const Answer app = appAnswer(f, c);
            INFO(f << " on " << c << ": app " << toString(app) << ", plan " << toString(fromPlan));
            CHECK(app == fromPlan);
            disagreements += !(app == fromPlan);
            // The speed face: the same verdict, speed only for what loads, the app's curve.
            const auto speed = runCli(QStringList{"speed", "-m", QString::fromStdString(g.model), "-w", QString::fromStdString(f), "-c",
                                                  QString::fromStdString(c)}
                                      + common(g));
            const Answer fromSpeed = speed ? fromVerdict(speed->object().value("verdict").toObject()) : Answer{};
            INFO("speed " << toString(fromSpeed));
            CHECK(app == fromSpeed);
            disagreements += !(app == fromSpeed);
            if (const PlanResult* p = matrix.plan(matrix.find(g.model, f, c)); p && speed)
                checkSpeedFace(speed->object(), *p, *catalog.findCard(c), g.context);
            ++requests;
            ++states[app.ok ? app.state : "error"];
        }
    }
    CHECK(requests >= 200);
    CHECK(disagreements == 0);
    // The sample covers every state of the verdict.
    CHECK(states["fits"] > 0);
    CHECK(states["fits_with_less"] > 0);
    CHECK(states["does_not_fit"] > 0);
    UNSCOPED_INFO("states: fits " << states["fits"] << ", fits with less " << states["fits_with_less"] << ", does not fit "
                                  << states["does_not_fit"] << ", errors " << states["error"]);
}

TEST_CASE("faces agree under engine settings and layer offload: plan, table, report, frontier and speed", "[facesagree]")
{
    // The app has no --set or --offload choice: here the CLI's five faces of one request
    // (plan --json, table --json, report -f json, frontier --json, speed --json) must give one
    // verdict, including the partial-offload and CPU-only states of llama.cpp and Ollama.
    const std::vector<std::string> models{"llama-3.1-8b", "qwen2.5-7b", "llama-2-13b", "qwen2.5-0.5b", "mistral-7b", "mixtral-8x7b"};
    for (const std::string& m : models)
        REQUIRE(test::catalog().findModel(m));
    const std::vector<std::string> ggufFormats{"q8_0", "q6_k", "q4_k", "q2_k", "fp16"};
    const std::vector<std::string> gpuFormats{"fp16", "fp8", "int4-g128", "awq-g128", "q4_k"};
    const std::vector<std::string> cards{"rtx-4060", "rtx-3060-12gb", "rtx-4060-ti-16gb", "rtx-4090", "6GiB"};
    const std::vector<std::uint64_t> contexts{2048, 8192, 32768};
    const std::vector<std::uint64_t> users{1, 4, 16};
    const std::map<std::string, std::vector<std::string>> settings{
        {"vllm", {"gpu-memory-utilization=0.8", "max-num-seqs=8", "enforce-eager=true", "block-size=32", "kv-cache-memory-bytes=2GiB"}},
        {"sglang", {"mem-fraction-static=0.7", "max-running-requests=8", "page-size=16"}},
        {"tgi", {"cuda-memory-fraction=0.8", "ATTENTION=flashinfer"}},
        {"tensorrt-llm", {"free_gpu_memory_fraction=0.8", "max_batch_size=8", "tokens_per_block=64"}},
        {"llama.cpp", {"flash-attn=off", "fit-target=2048", "no-kv-offload=true", "kv-unified=true", "n-cpu-moe=4"}},
        {"ollama", {"OLLAMA_FLASH_ATTENTION=true", "OLLAMA_GPU_OVERHEAD=1GiB"}},
    };
    const std::vector<std::string> offloads{"auto", "none", "0", "8", "20", "999"};

    std::mt19937 rng(20261202u);
    int requests = 0;
    int disagreements = 0;
    std::map<std::string, int> states;
    for (int gi = 0; gi < 60; ++gi) {
        const bool layered = gi % 2 == 0; // llama.cpp / Ollama with an offload choice, else a GPU engine with --set
        const std::string engine = layered ? (gi % 4 == 0 ? "llama.cpp" : "ollama") : pick(rng, std::vector<std::string>{"vllm", "sglang", "tgi", "tensorrt-llm"});
        const std::string model = pick(rng, models);
        const std::string card = pick(rng, cards);
        const std::string f1 = pick(rng, layered ? ggufFormats : gpuFormats);
        const std::string f2 = pick(rng, layered ? ggufFormats : gpuFormats);
        std::vector<std::string> fmts{f1};
        if (f2 != f1)
            fmts.push_back(f2);
        QStringList question{"-e", QString::fromStdString(engine), "--context", QString::number(pick(rng, contexts)), "--users",
                             QString::number(pick(rng, users))};
        if (gi % 3 != 0)
            question << "--set" << QString::fromStdString(pick(rng, settings.at(engine)));
        if (layered)
            question << "--offload" << QString::fromStdString(pick(rng, offloads));
        else if (gi % 5 == 1)
            question << "--offload" << "8"; // an engine with no layer offload refuses, in every face
        INFO("group " << gi << ": " << model << " on " << card << ", " << question.join(' ').toStdString());

        QStringList matrixArgs{"-m", QString::fromStdString(model), "-w"};
        for (const std::string& f : fmts)
            matrixArgs << QString::fromStdString(f);
        matrixArgs << "-c" << QString::fromStdString(card);
        matrixArgs << question;
        const auto table = runCli(QStringList{"table"} + matrixArgs + QStringList{"--json"});
        const auto frontier = runCli(QStringList{"frontier"} + matrixArgs + QStringList{"--json"});
        const auto report = runCli(QStringList{"report"} + matrixArgs + QStringList{"-f", "json"});
        for (const std::string& f : fmts) {
            const QStringList one = QStringList{"-m", QString::fromStdString(model), "-w", QString::fromStdString(f), "-c",
                                                QString::fromStdString(card)}
                + question + QStringList{"--json"};
            const auto plan = runCli(QStringList{"plan"} + one);
            const auto speed = runCli(QStringList{"speed"} + one);
            const auto verdictOf = [](const QJsonObject& o) { return o.isEmpty() ? Answer{} : fromVerdict(o.value("verdict").toObject()); };
            const Answer fromPlan = plan ? verdictOf(plan->object()) : Answer{};
            const Answer fromTable = table ? verdictOf(planIn(table->array(), f, card)) : Answer{};
            const Answer fromFrontier = frontier ? verdictOf(planIn(frontier->array(), f, card)) : Answer{};
            const Answer fromReport = report ? verdictOf(planIn(report->object().value("what_fits").toArray(), f, card)) : Answer{};
            const Answer fromSpeed = speed ? verdictOf(speed->object()) : Answer{};
            INFO(f << ": plan " << toString(fromPlan) << ", table " << toString(fromTable) << ", frontier " << toString(fromFrontier)
                   << ", report " << toString(fromReport) << ", speed " << toString(fromSpeed));
            CHECK(fromPlan == fromTable);
            CHECK(fromPlan == fromFrontier);
            CHECK(fromPlan == fromReport);
            CHECK(fromPlan == fromSpeed);
            disagreements += !(fromPlan == fromTable) + !(fromPlan == fromFrontier) + !(fromPlan == fromReport) + !(fromPlan == fromSpeed);
            if (plan && speed) {
                // Speed only for what loads; a partial offload loads.
                const bool loads = fromPlan.state != "does_not_fit";
                CHECK(speed->object().contains("speed") == (loads && plan->object().contains("speed")));
                CHECK(plan->object().contains("speed_unavailable") == (!loads && speed->object().contains("speed_unavailable")));
                if (loads && plan->object().contains("speed"))
                    CHECK(speed->object().value("speed").toObject().value("tpot_ms").toDouble()
                          == plan->object().value("speed").toObject().value("tpot_ms").toDouble());
                // The CPU-only state is a partial offload with no layer on the GPU, named so.
                if (question.contains("none") && fromPlan.state == "partial_offload")
                    ++states["cpu_only"];
            }
            ++requests;
            ++states[fromPlan.ok ? fromPlan.state : "error"];
        }
    }
    UNSCOPED_INFO("states: fits " << states["fits"] << ", fits with less " << states["fits_with_less"] << ", partial offload "
                                  << states["partial_offload"] << " (CPU only " << states["cpu_only"] << "), does not fit "
                                  << states["does_not_fit"] << ", errors " << states["error"]);
    CHECK(requests >= 80);
    CHECK(disagreements == 0);
    CHECK(states["fits"] > 0);
    CHECK(states["fits_with_less"] > 0);
    CHECK(states["partial_offload"] > 0);
    CHECK(states["cpu_only"] > 0);
    CHECK(states["does_not_fit"] > 0);
    CHECK(states["error"] < requests / 4);
}

namespace {

// The commands scripts/run.sh would run (--print-command: no setup, nothing run), one a line.
QStringList runShCommands(bool display, const QStringList& args = {})
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("DISPLAY"));
    env.remove(QStringLiteral("WAYLAND_DISPLAY"));
    if (display)
        env.insert(QStringLiteral("DISPLAY"), QStringLiteral(":99"));
    env.insert(QStringLiteral("HEADROOM_BUILD_DIR"), QStringLiteral(HEADROOM_BINARY_DIR));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral("bash"), QStringList{QStringLiteral(HEADROOM_SOURCE_DIR "/scripts/run.sh"), QStringLiteral("--print-command")} + args);
    if (!p.waitForFinished(30000) || p.exitCode() != 0)
        return {};
    return QString::fromUtf8(p.readAllStandardOutput()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

} // namespace

TEST_CASE("scripts/run.sh without a display prints the plan the app opens on", "[facesagree]")
{
    // The display decision: no display runs the CLI (table, then plan); a display opens the app.
    const QStringList noDisplay = runShCommands(false);
    REQUIRE(noDisplay.size() == 2);
    const QString cliPath = test::cliPath();
    CHECK(noDisplay[0].startsWith(cliPath + QStringLiteral(" table ")));
    CHECK(noDisplay[1].startsWith(cliPath + QStringLiteral(" plan ")));
    if (QFile::exists(QStringLiteral(HEADROOM_BINARY_DIR "/bin/headroom"))) {
        const QStringList display = runShCommands(true, {QStringLiteral("--model"), QStringLiteral("qwen3-8b")});
        CHECK(display == QStringList{QStringLiteral(HEADROOM_BINARY_DIR "/bin/headroom --model qwen3-8b")});
    }
    // Arguments reach every CLI command.
    const QStringList withArgs = runShCommands(false, {QStringLiteral("--json")});
    REQUIRE(withArgs.size() == 2);
    CHECK(withArgs[0].endsWith(QStringLiteral(" --json")));
    CHECK(withArgs[1].endsWith(QStringLiteral(" --json")));

    // What those commands print is the app's first view: the Formats matrix of the default model on
    // the default cards at the default question, and the detail cell (default format, last card).
    const auto run = [&](const QString& line) {
        QStringList args = line.split(QLatin1Char(' '), Qt::SkipEmptyParts);
        REQUIRE(args.size() > 1);
        args.removeFirst();
        return runCli(args);
    };
    const auto table = run(withArgs[0]);
    const auto plan = run(withArgs[1]);
    REQUIRE(table);
    REQUIRE(plan);

    Catalog catalog = test::catalog();
    Selection s = Selection::defaults();
    s.ubatchTokens = catalog.findEngine(s.engineId)->ubatchTokens; // as the window sets it on start
    CHECK(s.modelId == kDefaultModelId);
    CHECK(s.formatId == kDefaultWeightFormat);
    CHECK(s.users == kDefaultUsers);
    CHECK(s.contextTokens == kDefaultContextTokens);
    CHECK(s.cardIds == kDefaultCardIds);
    const std::vector<std::string> formats = matrixFormatIds();
    const QJsonArray cells = table->array();
    CHECK(cells.size() == static_cast<qsizetype>(formats.size() * s.cardIds.size()));
    int compared = 0;
    for (const std::string& f : formats)
        for (const std::string& c : s.cardIds) {
            INFO(f << " on " << c);
            const QJsonObject cell = planIn(cells, f, c);
            REQUIRE_FALSE(cell.isEmpty());
            CHECK(cell.value("model").toString().toStdString() == s.modelId);
            CHECK(cell.value("kv_dtype").toString().toStdString() == s.kvDtypeId);
            CHECK(cell.value("engine").toString().toStdString() == s.engineId);
            CHECK(static_cast<std::uint64_t>(cell.value("users").toInteger()) == s.users);
            CHECK(static_cast<std::uint64_t>(cell.value("context_tokens").toInteger()) == s.contextTokens);
            const auto app = planFor(catalog, s, s.modelId, f, c);
            REQUIRE(app);
            const Answer appAnswer{true, fitStateId(app->verdict.state), fitLimitId(app->verdict.limit), app->verdict.headline.value};
            const Answer cliAnswer = fromVerdict(cell.value("verdict").toObject());
            INFO("app " << toString(appAnswer) << ", run.sh " << toString(cliAnswer));
            CHECK(appAnswer == cliAnswer);
            ++compared;
        }
    CHECK(compared == 36);
    const QJsonObject p = plan->object();
    CHECK(p.value("model").toString().toStdString() == s.modelId);
    CHECK(p.value("weights_format").toString().toStdString() == s.formatId);
    CHECK(p.value("card").toString().toStdString() == s.cardIds.back());
    CHECK(static_cast<std::uint64_t>(p.value("users").toInteger()) == s.users);
    CHECK(static_cast<std::uint64_t>(p.value("context_tokens").toInteger()) == s.contextTokens);
    const auto detail = planFor(catalog, s, s.modelId, s.formatId, s.cardIds.back());
    REQUIRE(detail);
    CHECK(fromVerdict(p.value("verdict").toObject())
          == Answer{true, fitStateId(detail->verdict.state), fitLimitId(detail->verdict.limit), detail->verdict.headline.value});
}
