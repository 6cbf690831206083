// The fit indicator per cell and the GPU-layers slider of the detail view (issue 11): each state
// (full GPU / partial / CPU only / too large for this machine) shown with core's numbers, the same
// as `headroom-cli plan --offload N --json` prints for the same request.

#include "apptestutils.h"
#include "billpanel.h"
#include "breakdownmodel.h"
#include "choicespanel.h"
#include "detailpanel.h"
#include "gpulayerscontrol.h"
#include "memorybar.h"
#include "placementindicator.h"
#include "splitspeedchart.h"
#include "whatfitsmodel.h"

#include "headroom/core/speed/hostbandwidth.h"
#include "headroom/core/splitbill.h"

#include <QIcon>
#include <QJsonArray>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>

#include <catch2/catch.hpp>

using namespace headroom;
using namespace headroom::app;

namespace {

// Llama-2-13B in q4_k under llama.cpp, 1 user x 4,096 tokens, on @p card.
Selection offloadSelection(const std::string& model, const std::string& format, const std::string& card)
{
    Selection s = Selection::defaults();
    s.modelId = model;
    s.formatId = format;
    s.engineId = "llama.cpp";
    s.kvDtypeId = "fp16";
    s.cardIds = {card};
    s.users = 1;
    s.contextTokens = 4096;
    return s;
}

// `plan --json` of the same request, with --offload @p offload ("auto", "0", "41").
QJsonObject cliPlan(const Selection& s, const QString& offload)
{
    const auto doc = test::runCli({"plan", "-m", QString::fromStdString(s.modelId), "-w", QString::fromStdString(s.formatId), "-c",
                                   QString::fromStdString(s.cardIds.front()), "-e", QString::fromStdString(s.engineId), "--kv-dtype",
                                   QString::fromStdString(s.kvDtypeId), "--users", QString::number(s.users), "--context",
                                   QString::number(s.contextTokens), "--offload", offload, "--json"});
    REQUIRE(doc);
    return doc->object();
}

double cliFigure(const QJsonObject& plan, const char* name)
{
    for (const QJsonValue& f : plan.value("engine_figures").toArray())
        if (f.toObject().value("name").toString() == QLatin1String(name))
            return f.toObject().value("value").toDouble();
    FAIL("no engine figure " << name << " in plan --json");
    return 0;
}

// The host terms the CLI prints, added as splitbill.h names them (the logits buffer with the host
// side llama.cpp printed).
double cliHostBytes(const QJsonObject& plan)
{
    double sum = 0;
    bool hostSide = false;
    for (const char* name : {"host_weights_bytes", "host_repack_bytes", "host_kv_buffer_bytes", "host_split_compute_buffer_bytes",
                             "output_buffer_bytes"})
        for (const QJsonValue& f : plan.value("engine_figures").toArray())
            if (f.toObject().value("name").toString() == QLatin1String(name)) {
                hostSide = hostSide || QLatin1String(name) == QLatin1String("host_weights_bytes");
                if (hostSide)
                    sum += f.toObject().value("value").toDouble();
            }
    return sum;
}

double barBytes(const MemoryBar& bar)
{
    double sum = 0;
    for (const BillSegment& s : bar.segments())
        sum += static_cast<double>(s.bytes.value);
    return sum;
}

// The app's shown plan against the CLI's: state, headline, split, host bytes and tokens/s.
void checkSameAsCli(const DetailPanel& panel, const QJsonObject& cli)
{
    REQUIRE(panel.plan());
    const PlanResult& p = *panel.plan();
    const QJsonObject verdict = cli.value("verdict").toObject();
    CHECK(fitStateId(p.verdict.state) == verdict.value("state").toString().toStdString());
    CHECK(p.verdict.detail == verdict.value("detail").toString().toStdString());
    CHECK(static_cast<double>(p.verdict.headline.value) == verdict.value("headline").toObject().value("value").toDouble());
    CHECK(static_cast<double>(hostMemoryBytes(p).value) == cliHostBytes(cli));
    if (p.verdict.loads()) {
        REQUIRE(p.speed);
        CHECK(p.speed->decodeTokensPerSecond == Approx(cli.value("speed").toObject().value("decode_tokens_per_s").toDouble()).epsilon(1e-9));
    }
}

std::size_t gpuRowsExpected(const DetailPanel& panel)
{
    return panel.memoryBar()->segments().size();
}

} // namespace

TEST_CASE("offload: llama-2-13b q4_k on an RTX 4060 is partial, the slider starts at --fit's split", "[offload]")
{
    const Catalog catalog = test::catalog();
    const Selection s = offloadSelection("llama-2-13b", "q4_k", "rtx-4060");
    const QJsonObject cli = cliPlan(s, QStringLiteral("auto"));
    const double gpuLayers = cliFigure(cli, "offload_gpu_layers");
    REQUIRE(gpuLayers > 0);
    REQUIRE(gpuLayers < 41);

    // The matrix cell: the partial shape, and the split in its tooltip.
    WhatFitsModel model;
    model.setMatrix(computeMatrix(catalog, s), s.cardIds, {QStringLiteral("RTX 4060")}, s.contextTokens);
    QModelIndex cell;
    QModelIndex refused;
    for (int r = 0; r < model.rowCount(); ++r) {
        if (model.row(r)->formatId == "q4_k")
            cell = model.index(r, WhatFitsModel::FixedColumnCount);
        if (model.row(r)->formatId == "awq-g128") // llama.cpp cannot load it: no placement, a glyph of its own
            refused = model.index(r, WhatFitsModel::FixedColumnCount);
    }
    REQUIRE(cell.isValid());
    REQUIRE(refused.isValid());
    // Every refusal carries a glyph (review: "no: engine format" cells had none): the struck circle.
    CHECK_FALSE(model.data(refused, WhatFitsModel::PlacementRole).isValid());
    const QIcon refusedIcon = model.data(refused, Qt::DecorationRole).value<QIcon>();
    REQUIRE_FALSE(refusedIcon.isNull());
    CHECK(refusedIcon.pixmap(16, 16).toImage() == engineCannotRunIcon().pixmap(16, 16).toImage());
    CHECK(model.data(refused).toString().startsWith(QStringLiteral("no: engine format")));
    CHECK(model.data(cell, WhatFitsModel::PlacementRole).toInt() == static_cast<int>(Placement::Partial));
    CHECK_FALSE(model.data(cell, Qt::DecorationRole).value<QIcon>().isNull());
    const QString tip = model.data(cell, Qt::ToolTipRole).toString();
    CHECK(tip.contains(QStringLiteral("Placement: \u25D0 partial offload")));
    CHECK(tip.contains(QStringLiteral("%1/41 layers on the GPU").arg(gpuLayers)));
    CHECK(model.data(cell).toString().toStdString() == cli.value("verdict").toObject().value("cell").toString().toStdString());

    // The detail view: slider 0..41 at the automatic split, host RAM row, the speed per split.
    DetailPanel panel(std::make_shared<test::FakeProbeBackend>());
    panel.setCell(catalog, s, s.modelId, s.formatId, s.cardIds.front());
    checkSameAsCli(panel, cli);
    GpuLayersControl* layers = panel.gpuLayers();
    CHECK(layers->slider()->isEnabled());
    CHECK_FALSE(layers->isHidden());
    CHECK(layers->slider()->minimum() == 0);
    CHECK(layers->slider()->maximum() == 41);
    CHECK(layers->slider()->value() == static_cast<int>(gpuLayers));
    CHECK_FALSE(layers->chosen());
    CHECK_FALSE(layers->automaticButton()->isEnabled());
    CHECK(layers->summary()->text().startsWith(
        QStringLiteral("\u25D0 ") + cli.value("verdict").toObject().value("detail").toString().toHtmlEscaped()));
    CHECK(cli.value("verdict").toObject().value("detail").toString().startsWith(QStringLiteral("partial: %1/41 layers, ").arg(gpuLayers)));
    CHECK_FALSE(panel.hostBar()->isHidden());
    CHECK(barBytes(*panel.hostBar()) == cliHostBytes(cli));
    REQUIRE_FALSE(panel.hostBar()->segments().empty());
    CHECK(panel.hostBar()->segments().front().name == QStringLiteral("weights (mapped file pages, mmap)"));
    CHECK(panel.hostBar()->segments().front().note.contains(QStringLiteral("not a copy")));
    // The Memory bill lists the same rows: the card's side, then the host RAM's.
    const auto& rows = panel.bill()->breakdown()->segments();
    REQUIRE(rows.size() == gpuRowsExpected(panel) + panel.hostBar()->segments().size());
    CHECK(rows.back().host);
    CHECK(panel.bill()->breakdown()->data(panel.bill()->breakdown()->index(static_cast<int>(rows.size()) - 1, BreakdownModel::Share))
              .toString() == QStringLiteral("(host)"));
    // The GPU row is the split's GPU side: its model and KV buffers as llama.cpp prints them.
    const auto& gpu = panel.memoryBar()->segments();
    REQUIRE(gpu.size() >= 3);
    CHECK(static_cast<double>(gpu.front().bytes.value) == cliFigure(cli, "gpu_weights_bytes"));
    // The speed per split: one point per -ngl that loads, the mark at the split on show.
    SplitSpeedChart* chart = panel.splitSpeed();
    REQUIRE(chart->steps().size() == 42);
    REQUIRE(chart->speedSeries());
    REQUIRE(chart->shownMark()->count() == 1);
    CHECK(chart->shownMark()->at(0).x() == gpuLayers);
    CHECK(chart->shownMark()->at(0).y() == Approx(cli.value("speed").toObject().value("decode_tokens_per_s").toDouble()).epsilon(1e-9));
}

TEST_CASE("offload: the slider re-plans through core: CPU only, too large, and back to automatic", "[offload]")
{
    const Catalog catalog = test::catalog();
    const Selection s = offloadSelection("llama-2-13b", "q4_k", "rtx-4060");
    DetailPanel panel(std::make_shared<test::FakeProbeBackend>());
    panel.setCell(catalog, s, s.modelId, s.formatId, s.cardIds.front());
    const int automatic = panel.gpuLayers()->slider()->value();

    // -ngl 0: CPU only, the whole model in host RAM.
    panel.gpuLayers()->slider()->setValue(0);
    REQUIRE(panel.gpuLayers()->chosen() == 0u);
    const QJsonObject cpu = cliPlan(s, QStringLiteral("0"));
    checkSameAsCli(panel, cpu);
    CHECK(placementOf(*panel.plan()) == Placement::CpuOnly);
    CHECK(panel.gpuLayers()->summary()->text().startsWith(QStringLiteral("\u25CB CPU only: 0/41 layers, ")));
    CHECK(panel.gpuLayers()->automaticButton()->isEnabled());
    CHECK(barBytes(*panel.hostBar()) == cliHostBytes(cpu));
    CHECK(panel.splitSpeed()->shownMark()->at(0).x() == 0);

    // -ngl 41: every layer on an 8 GB card does not load: too large for this machine.
    panel.gpuLayers()->slider()->setValue(41);
    const QJsonObject all = cliPlan(s, QStringLiteral("41"));
    checkSameAsCli(panel, all);
    CHECK(all.value("verdict").toObject().value("state").toString() == QStringLiteral("does_not_fit"));
    CHECK(placementOf(*panel.plan()) == Placement::TooLarge);
    CHECK(panel.gpuLayers()->summary()->text().contains(QStringLiteral("\u2715 too large for this machine")));
    CHECK(panel.splitSpeed()->shownMark()->count() == 0); // nothing to mark: it does not load
    CHECK(panel.splitSpeed()->caption()->text().contains(QStringLiteral("41 layers")));

    // Automatic: the engine's own split again.
    panel.gpuLayers()->automaticButton()->click();
    checkSameAsCli(panel, cliPlan(s, QStringLiteral("auto")));
    CHECK(panel.gpuLayers()->slider()->value() == automatic);
    CHECK_FALSE(panel.gpuLayers()->chosen());
}

TEST_CASE("offload: a MoE --fit split keeps its experts in host memory at every point of the speed per split",
          "[offload][moe]")
{
    // Review issue 11 (S1): qwen3-30b-a3b q4_k does not fit an 8 GB card whole; --fit keeps every
    // layer on the GPU with routed experts in host memory (-ngl N -ot ...=CPU). The sweep re-planned
    // each -ngl N without those -ot, so the chosen split itself read "does not load" and had no mark.
    const Catalog catalog = test::catalog();
    const Selection s = offloadSelection("qwen3-30b-a3b", "q4_k", "rtx-4060");
    DetailPanel panel(std::make_shared<test::FakeProbeBackend>());
    panel.setCell(catalog, s, s.modelId, s.formatId, s.cardIds.front());
    REQUIRE(panel.plan());
    const PlanResult chosen = *panel.plan();
    REQUIRE(chosen.verdict.loads());
    REQUIRE(chosen.speed);
    const SplitBill split = splitBill(chosen);
    REQUIRE(split.totalLayers == 49);
    // --fit moved experts to the host: its overrides are a figure of the plan.
    bool overrides = false;
    for (const EngineFigure& f : chosen.engineFigures)
        overrides = overrides || (f.name == "fit_tensor_overrides" && f.printed.rfind("-ot ", 0) == 0);
    REQUIRE(overrides);

    SplitSpeedChart* chart = panel.splitSpeed();
    REQUIRE(chart->steps().size() == 50);
    const OffloadStep& at = chart->steps().at(split.gpuLayers);
    CHECK(at.gpuLayers == split.gpuLayers);
    CHECK(at.state == chosen.verdict.state);
    CHECK(at.state != FitState::DoesNotFit);
    CHECK(at.placement == placementOf(chosen));
    CHECK(at.hostBytes == hostMemoryBytes(chosen));
    CHECK(at.decodeTokensPerSecond == Approx(chosen.speed->decodeTokensPerSecond).epsilon(1e-9));
    // The chosen point is marked, at the header's tokens/s.
    REQUIRE(chart->shownMark()->count() == 1);
    CHECK(chart->shownMark()->at(0).x() == split.gpuLayers);
    CHECK(chart->shownMark()->at(0).y() == Approx(chosen.speed->decodeTokensPerSecond).epsilon(1e-9));
    CHECK(chart->caption()->text().contains(QStringLiteral("%1 tokens/s").arg(chosen.speed->decodeTokensPerSecond, 0, 'f', 1)));
    // Every -ngl with the experts kept on the host loads on the 8 GB card (the experts are the bulk).
    for (const OffloadStep& step : chart->steps())
        CHECK(step.state != FitState::DoesNotFit);

    // A layer count on the slider plans the sweep's request: the summary is the plot's point.
    const std::uint32_t fewer = split.gpuLayers - 10;
    panel.gpuLayers()->slider()->setValue(static_cast<int>(fewer));
    REQUIRE(panel.plan());
    REQUIRE(panel.plan()->speed);
    CHECK(panel.plan()->verdict.state == chart->steps().at(fewer).state);
    CHECK(panel.plan()->speed->decodeTokensPerSecond == Approx(chart->steps().at(fewer).decodeTokensPerSecond).epsilon(1e-9));
    REQUIRE(chart->shownMark()->count() == 1);
    CHECK(chart->shownMark()->at(0).x() == fewer);
}

TEST_CASE("offload: a model that fits is full GPU, no host row, the slider at every layer", "[offload]")
{
    const Catalog catalog = test::catalog();
    const Selection s = offloadSelection("llama-3.1-8b", "q4_k", "rtx-4090");
    DetailPanel panel(std::make_shared<test::FakeProbeBackend>());
    panel.setCell(catalog, s, s.modelId, s.formatId, s.cardIds.front());
    checkSameAsCli(panel, cliPlan(s, QStringLiteral("auto")));
    CHECK(placementOf(*panel.plan()) == Placement::FullGpu);
    CHECK(panel.gpuLayers()->slider()->maximum() == 33);
    CHECK(panel.gpuLayers()->slider()->value() == 33);
    CHECK(panel.gpuLayers()->summary()->text().startsWith(QStringLiteral("\u25CF full GPU")));
    CHECK(panel.hostBar()->isHidden());
}

TEST_CASE("offload: an engine without layer offload disables the slider and says why", "[offload]")
{
    const Catalog catalog = test::catalog();
    Selection s = offloadSelection("llama-3.1-8b", "int4-g128", "rtx-4090");
    s.engineId = "vllm";
    DetailPanel panel(std::make_shared<test::FakeProbeBackend>());
    panel.setCell(catalog, s, s.modelId, s.formatId, s.cardIds.front());
    CHECK_FALSE(panel.gpuLayers()->slider()->isEnabled());
    CHECK(panel.gpuLayers()->isHidden());
    CHECK(panel.gpuLayers()->summary()->text().contains(QStringLiteral("keeps every layer on the GPU")));
    CHECK(panel.splitSpeed()->steps().empty());
}

TEST_CASE("offload: the four shapes of the indicator and the refusal's differ and are named", "[offload]")
{
    const std::vector<Placement> all{Placement::FullGpu, Placement::Partial, Placement::CpuOnly, Placement::TooLarge};
    QStringList glyphs;
    std::vector<QImage> images;
    for (const Placement p : all) {
        glyphs << placementGlyph(p);
        images.push_back(placementIcon(p).pixmap(16, 16).toImage());
        CHECK(placementLegendHtml().contains(placementText(p).toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;"))));
    }
    glyphs << engineCannotRunGlyph();
    images.push_back(engineCannotRunIcon().pixmap(16, 16).toImage());
    CHECK(placementLegendHtml().contains(engineCannotRunText().replace(QLatin1Char(' '), QStringLiteral("&nbsp;"))));
    CHECK(glyphs.removeDuplicates() == 0);
    for (std::size_t i = 0; i < images.size(); ++i)
        for (std::size_t j = i + 1; j < images.size(); ++j)
            CHECK(images[i] != images[j]); // a different shape, not a colour alone: they share the ink
}

TEST_CASE("offload: the Host row sets the RAM and bandwidth core plans with, as --host-ram and --host-bandwidth", "[offload][host]")
{
    Catalog catalog = test::catalog();
    ChoicesPanel choices(catalog);
    Selection start = offloadSelection("llama-2-13b", "q4_k", "rtx-4060");
    choices.setSelection(start);
    int changes = 0;
    QObject::connect(&choices, &ChoicesPanel::changed, [&changes] { ++changes; });

    // Not a size: said under the row, the selection unchanged, nothing re-planned.
    choices.hostRamEdit()->setText(QStringLiteral("lots"));
    Q_EMIT choices.hostRamEdit()->editingFinished();
    CHECK(changes == 0);
    CHECK_FALSE(choices.selection().hostMemoryBytes);
    CHECK(choices.hostMessage()->text().contains(QStringLiteral("not a size: lots")));

    choices.hostRamEdit()->setText(QStringLiteral("4GiB"));
    choices.hostBandwidthEdit()->setText(QStringLiteral("ddr4-3200x2"));
    Q_EMIT choices.hostBandwidthEdit()->editingFinished();
    CHECK(changes == 1);
    CHECK(choices.hostMessage()->isHidden());
    REQUIRE(choices.selection().hostMemoryBytes);
    CHECK(choices.selection().hostMemoryBytes->value == 4 * kGiB);
    REQUIRE(choices.selection().hostBandwidthGBps);
    CHECK(*choices.selection().hostBandwidthGBps == Approx(51.2));

    // The same plan as the CLI's with the same host: the split keeps 6.36 GiB in host memory (1 user x
    // 4,096 tokens), more than 4 GiB, so the cell is too large for this machine; the speed names the host.
    const Selection s = choices.selection();
    const auto cli = test::runCli({"plan", "-m", "llama-2-13b", "-w", "q4_k", "-c", "rtx-4060", "-e", "llama.cpp", "--kv-dtype", "fp16",
                                   "--users", "1", "--context", "4096", "--host-ram", "4GiB", "--host-bandwidth", "ddr4-3200x2", "--json"});
    REQUIRE(cli);
    const QJsonObject verdict = cli->object().value("verdict").toObject();
    CHECK(verdict.value("limit").toString() == QStringLiteral("host_memory"));
    DetailPanel panel(std::make_shared<test::FakeProbeBackend>());
    panel.setCell(catalog, s, s.modelId, s.formatId, s.cardIds.front());
    REQUIRE(panel.plan());
    CHECK(fitStateId(panel.plan()->verdict.state) == verdict.value("state").toString().toStdString());
    CHECK(panel.plan()->verdict.limit == FitLimit::HostMemory);
    CHECK(panel.plan()->verdict.reason == verdict.value("reason").toString().toStdString());
    CHECK(placementOf(*panel.plan()) == Placement::TooLarge);
    const QString caption = panel.splitSpeed()->caption()->text();
    CHECK(caption.contains(QStringLiteral("Host layers at 51.2 GB/s, as given.")));
    CHECK_FALSE(caption.contains(QStringLiteral("DDR5")));

    // Emptied: not checked again, and the caption says the assumed host.
    choices.hostRamEdit()->clear();
    choices.hostBandwidthEdit()->clear();
    Q_EMIT choices.hostRamEdit()->editingFinished();
    CHECK_FALSE(choices.selection().hostMemoryBytes);
    CHECK_FALSE(choices.selection().hostBandwidthGBps);
    const Selection cleared = choices.selection();
    panel.setCell(catalog, cleared, cleared.modelId, cleared.formatId, cleared.cardIds.front());
    REQUIRE(panel.plan());
    CHECK(panel.plan()->verdict.state == FitState::PartialOffload);
    CHECK(panel.splitSpeed()->caption()->text().contains(QString::fromStdString(hostBandwidthText(std::nullopt))));
}
