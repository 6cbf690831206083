// The app's item models: QAbstractItemModelTester on each, their text against the core's
// numbers, and the Qt-free helpers (roofline, export, nvidia-smi parsing).

#include "apptestutils.h"
#include "breakdownmodel.h"
#include "enginecomparisonmodel.h"
#include "exportactions.h"
#include "formatting.h"
#include "gpudetector.h"
#include "proberesultsmodel.h"
#include "roofline.h"
#include "whatfitsmodel.h"

#include "headroom/core/defaults.h"
#include "headroom/core/report/report.h"

#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>

using namespace headroom;
using namespace headroom::app;
using headroom::app::test::catalog;
using headroom::app::test::printModel;

namespace {

WhatFitsModel* matrixFor(const Catalog& cat, const Selection& sel, QObject* parent)
{
    auto* model = new WhatFitsModel(parent);
    std::vector<QString> labels;
    for (const std::string& id : sel.cardIds)
        labels.push_back(QString::fromStdString(id));
    model->setMatrix(computeMatrix(cat, sel), sel.cardIds, labels, sel.contextTokens);
    return model;
}

PlanResult defaultPlan(const Catalog& cat, const Selection& sel, const std::string& card = "rtx-4090")
{
    auto p = planFor(cat, sel, sel.modelId, sel.formatId, card);
    REQUIRE(p);
    return *p;
}

// The plans of the selection's model and format on its cards, with their requests.
ExportState exportStateFor(const Catalog& cat, const Selection& sel)
{
    ExportState state;
    for (const std::string& card : sel.cardIds) {
        auto request = requestFor(cat, sel, sel.modelId, sel.formatId, card);
        REQUIRE(request);
        state.plans.push_back(defaultPlan(cat, sel, card));
        state.requests.push_back(std::move(*request));
    }
    return state;
}

} // namespace

TEST_CASE("what-fits matrix shows the core's verdict per card", "[models]")
{
    const Catalog cat = catalog();
    Selection sel = Selection::defaults();
    QObject owner;
    WhatFitsModel* model = matrixFor(cat, sel, &owner);
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::Fatal);

    REQUIRE(model->columnCount() == WhatFitsModel::FixedColumnCount + 3);
    REQUIRE(model->rowCount() == static_cast<int>(matrixFormatIds().size()));
    for (int r = 0; r < model->rowCount(); ++r) {
        const MatrixRow* row = model->row(r);
        for (std::size_t c = 0; c < sel.cardIds.size(); ++c) {
            const QModelIndex index = model->index(r, WhatFitsModel::FixedColumnCount + static_cast<int>(c));
            auto plan = planFor(cat, sel, row->modelId, row->formatId, sel.cardIds[c]);
            REQUIRE(plan);
            CHECK(model->data(index, WhatFitsModel::RawRole).toULongLong() == plan->verdict.headline.value);
            CHECK(model->data(index).toString().toStdString() == verdictCellText(plan->verdict));
            if (plan->verdict.state == FitState::Fits)
                CHECK(model->data(index).toString().toStdString() == formatThousands(plan->maxContext.value_or(0)));
            else if (plan->verdict.state == FitState::FitsWithLess)
                CHECK(model->data(index).toString().toStdString()
                      == formatThousands(plan->maxContext.value_or(0)) + " (" + plan->verdict.detail + ")");
            else
                CHECK(model->data(index).toString().startsWith(QStringLiteral("no: ")));
        }
    }

    // fp16 8B weights exceed the 8 GB card; int4-g128 fits on the 24 GB card for 4 users x 8,192.
    const QModelIndex fp16On8 = model->find(kDefaultModelId, "fp16", "rtx-4060");
    REQUIRE(fp16On8.isValid());
    CHECK(model->data(fp16On8).toString() == QStringLiteral("no: weights 14.96 > 7.01 GiB"));
    CHECK(model->data(fp16On8, WhatFitsModel::FitRole).toInt() == static_cast<int>(Fit::NoRoom));
    const QModelIndex int4On24 = model->find(kDefaultModelId, "int4-g128", "rtx-4090");
    CHECK(model->data(int4On24, WhatFitsModel::FitRole).toInt() == static_cast<int>(Fit::Reaches));
    CHECK(model->data(model->index(int4On24.row(), WhatFitsModel::Weights), WhatFitsModel::RawRole).toULongLong()
          == defaultPlan(cat, sel).weightsBytes.value);

    // Sorting goes by the raw role (tokens), not by the text.
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(model);
    proxy.setSortRole(WhatFitsModel::RawRole);
    proxy.sort(WhatFitsModel::FixedColumnCount + 2, Qt::DescendingOrder);
    quint64 previous = UINT64_MAX;
    for (int r = 0; r < proxy.rowCount(); ++r) {
        const quint64 v = proxy.data(proxy.index(r, WhatFitsModel::FixedColumnCount + 2), WhatFitsModel::RawRole).toULongLong();
        CHECK(v <= previous);
        previous = v;
    }

    // Models mode: one row per model profile; a reset keeps the tester quiet.
    sel.mode = MatrixMode::Models;
    model->setMatrix(computeMatrix(cat, sel), sel.cardIds, {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")},
                     sel.contextTokens);
    CHECK(model->rowCount() == static_cast<int>(cat.profiles().models.size()));
}

TEST_CASE("memory bill adds up to the card and prints as the core computes it", "[models]")
{
    const Catalog cat = catalog();
    const Selection sel = Selection::defaults();
    const PlanResult plan = defaultPlan(cat, sel);
    BreakdownModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setPlan(plan, sel.users, sel.contextTokens);

    std::uint64_t sum = 0;
    for (const BillSegment& s : model.segments())
        sum += s.bytes.value;
    CHECK(sum == plan.cardTotalBytes.value);
    const Bytes kv = kvBytes(plan.kv, sel.users, sel.contextTokens, plan.paging, plan.ubatchTokens);
    CHECK(kv.value == 4ull * 8192 * 131072);
    const QStringList lines = printModel(model);
    const QStringList expected = {
        QStringLiteral("Memory | Bytes | Size | Of card | How it is priced"),
        QStringLiteral("weights | 5,700,591,616 | 5.31 GiB | 22.5 % | int4-g128"),
        QStringLiteral("rotary_cache | 33,554,432 | 32.00 MiB | 0.1 % | cos/sin cache, max_position_embeddings x rotary dim (part of vLLM's \"Model loading took\")"),
        QStringLiteral("activation_peak | 498,794,496 | 475.69 MiB | 2.0 % | profile run torch peak: max(forward of 512 tokens 0.05 GiB, sampler of 256 rows x 128,256 vocab 0.46 GiB) = sampler"),
        QStringLiteral("non_torch | 268,435,456 | 256.00 MiB | 1.1 % | non-torch increase of the profile run (engine profile)"),
        QStringLiteral("KV cache | 4,294,967,296 | 4.00 GiB | 16.9 % | 4 users x 8,192 tokens, 131,072 B/token"),
        QStringLiteral("free | 12,051,079,168 | 11.22 GiB | 47.5 % | usable, not used at this point"),
        QStringLiteral("utilization_headroom | 2,538,602,496 | 2.36 GiB | 10.0 % | 1 - 90% of the card total (holds the CUDA context: vLLM counts only what its profile run adds)"),
    };
    CHECK(lines.join(QLatin1Char('\n')).toStdString() == expected.join(QLatin1Char('\n')).toStdString());

    // A point beyond the budget shows the KV overflow past the card's end.
    model.setPlan(plan, 64, 131072);
    REQUIRE(model.segments().back().kind == BillSegment::Kind::Over);
    const Bytes over = model.segments().back().bytes;
    CHECK(over + plan.kvBudgetBytes == kvBytes(plan.kv, 64, 131072, plan.paging, plan.ubatchTokens));
    model.clear();
    CHECK(model.rowCount() == 0);
}

TEST_CASE("engine comparison runs the same cell under every engine policy", "[models]")
{
    const Catalog cat = catalog();
    const Selection sel = Selection::defaults();
    EngineComparisonModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setRows(compareEngines(cat, sel, sel.modelId, sel.formatId, "rtx-4090"));
    REQUIRE(model.rowCount() == static_cast<int>(cat.profiles().engines.size()));
    int cannotRun = 0;
    for (int r = 0; r < model.rowCount(); ++r) {
        const EngineRow& row = model.rows()[static_cast<std::size_t>(r)];
        REQUIRE(row.plan);
        auto direct = planFor(cat, sel, sel.modelId, sel.formatId, "rtx-4090", row.policy.id);
        REQUIRE(direct);
        const QModelIndex maxContext = model.index(r, EngineComparisonModel::MaxContext);
        if (direct->verdict.engineCannotRun()) {
            // An engine that cannot run the plan (llama.cpp and int4-g128) shows only the verdict and
            // its reason, in the first figure cell; no bill, no capacity.
            ++cannotRun;
            CHECK(model.data(model.index(r, EngineComparisonModel::FirstFigure)).toString().toStdString() == direct->verdict.reason);
            CHECK(model.data(model.index(r, EngineComparisonModel::FirstFigure), EngineComparisonModel::ReasonSpanRole).toBool());
            for (int c = EngineComparisonModel::FirstFigure + 1; c <= EngineComparisonModel::LastFigure; ++c)
                CHECK(model.data(model.index(r, c)).toString().isEmpty());
            continue;
        }
        CHECK(model.data(model.index(r, EngineComparisonModel::Usable), EngineComparisonModel::RawRole).toULongLong()
              == direct->usableBytes.value);
        // Capacity only for an engine that loads the plan; one that cannot says no (its reason in the tooltip).
        CHECK(model.data(maxContext).toString().toStdString()
              == (direct->verdict.loads() ? formatThousands(direct->maxContext.value_or(0)) : std::string("no")));
        if (!direct->verdict.loads())
            CHECK(model.data(maxContext, Qt::ToolTipRole).toString().toStdString() == direct->verdict.reason);
        CHECK(model.data(model.index(r, EngineComparisonModel::Engine), Qt::BackgroundRole).value<QColor>()
              == fitColor(WhatFitsModel::fitOf(*direct, 0)));
        CHECK(!explainPolicy(row.policy).isEmpty());
    }
    CHECK(cannotRun >= 1);
    // llama.cpp keeps a fixed 1 GiB free; vLLM takes 90 % of the total: different usable bytes.
    const auto usableOf = [&](const std::string& id) {
        for (const EngineRow& row : model.rows())
            if (row.policy.id == id)
                return row.plan->usableBytes.value;
        return std::uint64_t{0};
    };
    CHECK(usableOf("llama.cpp") != usableOf("vllm"));
    CHECK(explainPolicy(*cat.findEngine("llama.cpp")).contains(QStringLiteral("1.00 GiB")));
}

TEST_CASE("probe results show predicted against measured with pass or fail", "[models]")
{
    ProbeResultsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    ProbeRow ok{QStringLiteral("allocation"), QStringLiteral("KV for 295 tokens"), ProbeUnit::Bytes, 3624960, 3624960, 0, true, {}, {}};
    ProbeRow slow{QStringLiteral("decode step"), QStringLiteral("batch 4"), ProbeUnit::Nanoseconds, 20'000'000, 25'000'000, 4, false,
                  QStringLiteral("slower"), {}};
    ProbeRow unsupported{QStringLiteral("limit search"), QStringLiteral("resident tokens"), ProbeUnit::Tokens, 0, 0, 0, false,
                         QStringLiteral("MoE"), ProbeVerdict::NotSupported};
    ProbeRow calibration{QStringLiteral("decode step"), QStringLiteral("decode bandwidth"), ProbeUnit::BytesPerSecond, 0, 6'800'000'000, 0,
                         false, QStringLiteral("calibrates"), ProbeVerdict::Measured};
    model.setRows({ok, slow, unsupported, calibration});
    const QStringList expected = {
        QStringLiteral("Probe | Quantity | Predicted | Measured | Difference | Verdict | Note"),
        QStringLiteral("allocation | KV for 295 tokens | 3,624,960 B (3.46 MiB) | 3,624,960 B (3.46 MiB) | 0.00 % | pass | "),
        QStringLiteral("decode step | batch 4 | 20.000 ms | 25.000 ms | +25.00 % | FAIL | slower"),
        QStringLiteral("limit search | resident tokens | 0 tokens | - | - | not supported | MoE"),
        QStringLiteral("decode step | decode bandwidth | - | 6.80 GB/s | - | measured | calibrates"),
    };
    CHECK(printModel(model).join(QLatin1Char('\n')).toStdString() == expected.join(QLatin1Char('\n')).toStdString());
    CHECK(model.data(model.index(0, ProbeResultsModel::Measured), ProbeResultsModel::RawRole).toULongLong() == 3624960u);
    // Only pass and fail are coloured.
    CHECK(model.data(model.index(0, ProbeResultsModel::Verdict), Qt::BackgroundRole).isValid());
    CHECK(model.data(model.index(1, ProbeResultsModel::Verdict), Qt::BackgroundRole).isValid());
    CHECK_FALSE(model.data(model.index(2, ProbeResultsModel::Verdict), Qt::BackgroundRole).isValid());
    CHECK_FALSE(model.data(model.index(3, ProbeResultsModel::Verdict), Qt::BackgroundRole).isValid());
    model.setRows({});
    CHECK(model.rowCount() == 0);
}

TEST_CASE("roofline estimate: memory-bound at batch 1, compute-bound at large batch", "[speed]")
{
    const Catalog cat = catalog();
    const Selection sel = Selection::defaults();
    const PlanResult plan = defaultPlan(cat, sel);
    const Card& card = *cat.findCard("rtx-4090");
    REQUIRE(card.bandwidthGBps > 0);
    const auto points = rooflineEstimate(plan, card, 1024, 4096);
    REQUIRE(points.size() == 13);
    const double bytes = static_cast<double>((plan.weightsBytes + kvBytes(plan.kv, 1, 1024, plan.paging, plan.ubatchTokens)).value);
    CHECK(points[0].tokensPerSecond == Approx(card.bandwidthGBps * 1e9 / bytes));
    CHECK_FALSE(points[0].computeBound);
    CHECK(points[0].fits);
    CHECK_FALSE(points.back().fits);
    for (std::size_t i = 1; i < points.size(); ++i)
        CHECK(points[i].tokensPerSecond >= points[i - 1].tokensPerSecond * 0.5);
    Card unknown = card;
    unknown.bandwidthGBps = 0;
    CHECK(rooflineEstimate(plan, unknown, 1024).empty());
}

TEST_CASE("export: the capacity report is core's and validates; launch flags are core's", "[export]")
{
    const Catalog cat = catalog();
    Selection sel = Selection::defaults();
    const ExportState state = exportStateFor(cat, sel);
    REQUIRE(state.plans.size() == 3);
    REQUIRE(state.requests.size() == 3);

    auto json = capacityReportJson(state);
    REQUIRE(json);
    CHECK(validateReport(*json).empty());
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(*json), &error);
    REQUIRE(error.error == QJsonParseError::NoError);
    CHECK(doc.object().value(QStringLiteral("schema_version")).toInt() == kReportSchemaVersion);
    const QJsonArray plans = doc.object().value(QStringLiteral("plans")).toArray();
    REQUIRE(plans.size() == 3);
    CHECK(plans[2].toObject().value(QStringLiteral("max_resident_tokens")).toInteger()
          == static_cast<qint64>(state.plans[2].maxResidentTokens));
    CHECK_FALSE(capacityReportJson(ExportState{}));

    // Every engine's flags are core's launchFlags of the plan made under that engine.
    for (const auto& [engine, engineId] : {std::pair{LaunchEngine::Vllm, "vllm"}, std::pair{LaunchEngine::LlamaCpp, "llama.cpp"},
                                           std::pair{LaunchEngine::SgLang, "sglang"}, std::pair{LaunchEngine::Ollama, "ollama"}}) {
        INFO(engineId);
        // llama.cpp and Ollama run GGUF files: an int4-g128 plan of theirs has nothing to launch.
        const std::string format = engine == LaunchEngine::LlamaCpp || engine == LaunchEngine::Ollama ? "q4_k" : sel.formatId;
        auto request = requestFor(cat, sel, sel.modelId, format, "rtx-4090", engineId);
        REQUIRE(request);
        auto plan = makePlan(*request);
        REQUIRE(plan);
        auto expected = launchFlags(*request, *plan);
        REQUIRE(expected);
        auto flags = launchFlagsFor(cat, sel, sel.modelId, format, "rtx-4090", engine);
        REQUIRE(flags);
        CHECK(flags->command == expected->command);
        CHECK_FALSE(flags->command.empty());
    }
    // The selection's engine is used when it is the one asked for.
    sel.engineId = "vllm";
    auto vllm = launchFlagsFor(cat, sel, sel.modelId, sel.formatId, "rtx-4090", LaunchEngine::Vllm);
    REQUIRE(vllm);
    CHECK(vllm->command.find("--max-model-len 8192") != std::string::npos);
    // Core refuses a KV dtype the engine lacks; its message comes through.
    sel.kvDtypeId = "q8_0";
    auto refused = launchFlagsFor(cat, sel, sel.modelId, sel.formatId, "rtx-4090", LaunchEngine::Vllm);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().find("vLLM has no 'q8_0' KV cache") != std::string::npos);
    CHECK(launchFlagsFor(cat, sel, sel.modelId, "q4_k", "rtx-4090", LaunchEngine::LlamaCpp));
    // A format the engine cannot load: nothing to launch, with the plan's reason (issue 9 review S1-1).
    auto gguf = launchFlagsFor(cat, sel, sel.modelId, sel.formatId, "rtx-4090", LaunchEngine::LlamaCpp);
    REQUIRE_FALSE(gguf);
    CHECK(gguf.error().find("nothing to launch: ") == 0);

    QTemporaryDir dir;
    REQUIRE(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("report.json"));
    QString message;
    REQUIRE(exportCapacityReport(path, state, &message));
    QFile file(path);
    REQUIRE(file.open(QIODevice::ReadOnly));
    CHECK(validateReport(file.readAll().toStdString()).empty());
    CHECK_FALSE(exportCapacityReport(QStringLiteral("/nonexistent-dir/x.json"), state, &message));
    CHECK_FALSE(message.isEmpty());
}

TEST_CASE("export: report formats by extension and by filter", "[export]")
{
    CHECK(reportFileFilters().size() == 5);
    CHECK(reportFormatForPath(QStringLiteral("a/b.JSON")) == ReportFormat::Json);
    CHECK(reportFormatForPath(QStringLiteral("r.md")) == ReportFormat::Markdown);
    CHECK(reportFormatForPath(QStringLiteral("r.markdown")) == ReportFormat::Markdown);
    CHECK(reportFormatForPath(QStringLiteral("r.csv")) == ReportFormat::Csv);
    CHECK(reportFormatForPath(QStringLiteral("r.htm")) == ReportFormat::Html);
    CHECK(reportFormatForPath(QStringLiteral("r.pdf")) == ReportFormat::Pdf);
    CHECK_FALSE(reportFormatForPath(QStringLiteral("report")));
    for (const QString& filter : reportFileFilters()) {
        const auto format = reportFormatForFilter(filter);
        REQUIRE(format);
        CHECK(filter.contains(QStringLiteral("*.") + reportExtension(*format)));
    }
    CHECK_FALSE(reportFormatForFilter(QStringLiteral("All files (*)")));
}

TEST_CASE("export: Markdown, CSV, HTML and PDF files are written", "[export]")
{
    const Catalog cat = catalog();
    const ExportState state = exportStateFor(cat, Selection::defaults());
    QTemporaryDir dir;
    REQUIRE(dir.isValid());
    // HEADROOM_TEST_KEEP_EXPORTS=DIR keeps the files there, to look at them.
    const QString keep = qEnvironmentVariable("HEADROOM_TEST_KEEP_EXPORTS");
    const QDir out(keep.isEmpty() ? dir.path() : keep);
    for (const char* name : {"report.md", "report.csv", "report.html", "report.pdf"}) {
        INFO(name);
        const QString path = out.filePath(QString::fromLatin1(name));
        QString error;
        REQUIRE(exportCapacityReport(path, state, &error));
        CHECK(error.isEmpty());
        QFile file(path);
        REQUIRE(file.open(QIODevice::ReadOnly));
        const QByteArray bytes = file.readAll();
        CHECK(bytes.size() > 100);
        if (path.endsWith(QLatin1String(".pdf")))
            CHECK(bytes.startsWith("%PDF-"));
        if (path.endsWith(QLatin1String(".html")))
            CHECK(bytes.contains("<svg"));
        if (path.endsWith(QLatin1String(".md")))
            CHECK(bytes.contains("llama-3.1-8b"));
        if (path.endsWith(QLatin1String(".csv")))
            CHECK(bytes.count('\n') == 4); // header + 3 plans
    }
    // A format forced against the extension wins.
    const QString forced = dir.filePath(QStringLiteral("report.txt"));
    QString error;
    REQUIRE(exportCapacityReport(forced, state, &error, ReportFormat::Markdown));
    QFile file(forced);
    REQUIRE(file.open(QIODevice::ReadOnly));
    CHECK(file.readAll().startsWith("# "));
}

TEST_CASE("nvidia-smi output becomes cards, with a profile's figures when the name matches", "[gpus]")
{
    const Catalog cat = catalog();
    const auto cards = parseNvidiaSmi(QStringLiteral("0, NVIDIA GeForce RTX 4090, 24564\n1, Some Future GPU, 32768\nbad line\n"),
                                      cat.profiles());
    REQUIRE(cards.size() == 2);
    CHECK(cards[0].id == "gpu0");
    CHECK(cards[0].totalBytes.value == 24564ull * kMiB);
    CHECK(cards[0].bandwidthGBps == cat.findCard("rtx-4090")->bandwidthGBps);
    CHECK(cards[1].id == "gpu1");
    CHECK(cards[1].bandwidthGBps == 0);
    CHECK(parseNvidiaSmi(QString(), cat.profiles()).empty());
}
