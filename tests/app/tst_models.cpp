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

#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSortFilterProxyModel>

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

} // namespace

TEST_CASE("what-fits matrix shows the core's max context per card", "[models]")
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
            CHECK(model->data(index, WhatFitsModel::RawRole).toULongLong() == plan->maxContext.value_or(0));
            if (plan->maxContext.value_or(0) > 0)
                CHECK(model->data(index).toString().toStdString() == formatThousands(*plan->maxContext));
            else
                CHECK(model->data(index).toString().startsWith(QStringLiteral("does not fit: weights ")));
        }
    }

    // fp16 8B weights exceed the 8 GB card; int4-g128 fits on the 24 GB card for 4 users x 8,192.
    const QModelIndex fp16On8 = model->find(kDefaultModelId, "fp16", "rtx-4060");
    REQUIRE(fp16On8.isValid());
    CHECK(model->data(fp16On8).toString() == QStringLiteral("does not fit: weights 14.96 > 7.01 GiB"));
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
        QStringLiteral("cuda_context | 268,435,456 | 256.00 MiB | 1.1 % | CUDA context and non-torch memory (engine profile)"),
        QStringLiteral("activation_peak | 44,040,192 | 42.00 MiB | 0.2 % | prefill chunk of 512 tokens, flash attention"),
        QStringLiteral("logits | 131,334,144 | 125.25 MiB | 0.5 % | vocab x 256 outputs x 4 B"),
        QStringLiteral("KV cache | 4,294,967,296 | 4.00 GiB | 16.9 % | 4 users x 8,192 tokens, 131,072 B/token"),
        QStringLiteral("free | 12,408,053,760 | 11.56 GiB | 48.9 % | usable, not used at this point"),
        QStringLiteral("utilization_headroom | 2,538,602,496 | 2.36 GiB | 10.0 % | 1 - 90% of the card total"),
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
    for (int r = 0; r < model.rowCount(); ++r) {
        const EngineRow& row = model.rows()[static_cast<std::size_t>(r)];
        REQUIRE(row.plan);
        auto direct = planFor(cat, sel, sel.modelId, sel.formatId, "rtx-4090", row.policy.id);
        REQUIRE(direct);
        CHECK(model.data(model.index(r, EngineComparisonModel::Usable), EngineComparisonModel::RawRole).toULongLong()
              == direct->usableBytes.value);
        CHECK(model.data(model.index(r, EngineComparisonModel::MaxContext)).toString().toStdString()
              == formatThousands(direct->maxContext.value_or(0)));
        CHECK(!explainPolicy(row.policy).isEmpty());
    }
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
    ProbeRow ok{QStringLiteral("allocation"), QStringLiteral("KV for 295 tokens"), ProbeUnit::Bytes, 3624960, 3624960, 0, true, {}};
    ProbeRow slow{QStringLiteral("decode step"), QStringLiteral("batch 4"), ProbeUnit::Nanoseconds, 20'000'000, 25'000'000, 4, false,
                  QStringLiteral("slower")};
    model.setRows({ok, slow});
    const QStringList expected = {
        QStringLiteral("Probe | Quantity | Predicted | Measured | Difference | Verdict | Note"),
        QStringLiteral("allocation | KV for 295 tokens | 3,624,960 B (3.46 MiB) | 3,624,960 B (3.46 MiB) | +0.00 % | pass | "),
        QStringLiteral("decode step | batch 4 | 20.000 ms | 25.000 ms | +25.00 % | FAIL | slower"),
    };
    CHECK(printModel(model).join(QLatin1Char('\n')).toStdString() == expected.join(QLatin1Char('\n')).toStdString());
    CHECK(model.data(model.index(0, ProbeResultsModel::Measured), ProbeResultsModel::RawRole).toULongLong() == 3624960u);
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

TEST_CASE("export: capacity report JSON and launch flags from the plan", "[export]")
{
    const Catalog cat = catalog();
    const Selection sel = Selection::defaults();
    ExportState state;
    state.detail = defaultPlan(cat, sel);
    state.hasDetail = true;
    for (const std::string& card : sel.cardIds)
        state.matrixPlans.push_back(defaultPlan(cat, sel, card));
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(capacityReportJson(state).toUtf8(), &error);
    REQUIRE(error.error == QJsonParseError::NoError);
    CHECK(doc.object().value(QStringLiteral("matrix")).toArray().size() == 3);
    CHECK(doc.object().value(QStringLiteral("detail")).toObject().value(QStringLiteral("max_resident_tokens")).toInteger()
          == static_cast<qint64>(state.detail.maxResidentTokens));

    const QString vllm = launchFlags(state.detail, LaunchEngine::Vllm);
    CHECK(vllm.startsWith(QStringLiteral("# weights int4-g128")));
    CHECK(vllm.contains(QStringLiteral("vllm serve llama-3.1-8b")));
    CHECK(vllm.contains(QStringLiteral("--max-model-len 8192")));
    CHECK(vllm.contains(QStringLiteral("--max-num-seqs 4")));
    CHECK(vllm.contains(QStringLiteral("--gpu-memory-utilization 0.90")));
    CHECK(vllm.contains(QStringLiteral("--kv-cache-dtype auto")));
    const QString llama = launchFlags(state.detail, LaunchEngine::LlamaCpp);
    CHECK(llama.contains(QStringLiteral("-c 32768")));
    CHECK(llama.contains(QStringLiteral("-np 4")));
    CHECK(llama.contains(QStringLiteral("-ub 512")));

    const QString path = QDir::temp().filePath(QStringLiteral("headroom-tst-report.json"));
    QString message;
    REQUIRE(exportCapacityReport(path, state, &message));
    QFile file(path);
    REQUIRE(file.open(QIODevice::ReadOnly));
    CHECK(QJsonDocument::fromJson(file.readAll()).isObject());
    file.remove();
    CHECK_FALSE(exportCapacityReport(QStringLiteral("/nonexistent-dir/x.json"), state, &message));
    CHECK_FALSE(message.isEmpty());
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
