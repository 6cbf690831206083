#include "detailpanel.h"

#include "billpanel.h"
#include "breakdownmodel.h"
#include "chartspanel.h"
#include "choicespanel.h"
#include "enginespanel.h"
#include "formatting.h"
#include "gpulayerscontrol.h"
#include "memorybar.h"
#include "placementindicator.h"
#include "probepanel.h"
#include "splitspeedchart.h"

#include "headroom/core/offloadsweep.h"
#include "headroom/core/speed/hostbandwidth.h"
#include "headroom/core/splitbill.h"

#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>

namespace headroom::app {

QString verdictText(const PlanResult& p)
{
    const Verdict& v = p.verdict;
    const std::string label = fitStateLabel(v.state);
    QString reason = QString::fromStdString(v.reason);
    if (reason.startsWith(QString::fromStdString(label + ": ")))
        reason = reason.mid(static_cast<qsizetype>(label.size()) + 2);
    QString text = QStringLiteral("<b>%1</b>: %2.").arg(QString::fromStdString(label).toHtmlEscaped(), reason.toHtmlEscaped());
    // A layer split holds the context the engine placed it for (core's headline); the card's own
    // KV figures below do not apply to it.
    if (v.state == FitState::PartialOffload) {
        QString caption = QString::fromStdString(headlineCaption(v.headline));
        if (!caption.isEmpty())
            caption[0] = caption[0].toUpper();
        // The split's own sides (splitbill.h), as `plan` prints them.
        const SplitBill split = splitBill(p);
        text += QStringLiteral(" %1: <b>%2</b>; max resident tokens: <b>%3</b>.")
                    .arg(caption.toHtmlEscaped(), thousands(v.headline.value), thousands(p.maxResidentTokens));
        if (!split.gpu.empty())
            text += QStringLiteral(" GPU %1, host %2.").arg(bytesText(split.gpuBytes()), bytesText(split.hostBytes()));
        else
            text += QStringLiteral(" Weights %1, host %2.").arg(bytesText(p.weightsBytes), bytesText(split.hostBytes()));
        return text;
    }
    if (v.state != FitState::DoesNotFit || v.limit == FitLimit::EngineRefusesToStart)
        text += QStringLiteral(" Max context for %1: <b>%2</b>; max users at %3 tokens: <b>%4</b>; max resident tokens: <b>%5</b> "
                               "(%6 B/token).")
                    .arg(QString::fromStdString(p.users == 1 ? "1 user" : thousands(p.users).toStdString() + " users"),
                         thousands(p.maxContext.value_or(0)), thousands(p.contextTokens), thousands(p.maxUsers.value_or(0)),
                         thousands(p.maxResidentTokens), thousands(p.kvBytesPerToken.value));
    text += QStringLiteral(" Weights %1, KV budget %2.").arg(bytesText(p.weightsBytes), bytesText(p.kvBudgetBytes));
    return text;
}

DetailPanel::DetailPanel(std::shared_ptr<ProbeBackend> probeBackend, QWidget* parent) : QWidget(parent)
{
    m_title = new QLabel;
    QFont tf = m_title->font();
    tf.setBold(true);
    tf.setPointSizeF(tf.pointSizeF() * 1.1);
    m_title->setFont(tf);
    m_title->setWordWrap(true);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_limits = new QLabel;
    m_limits->setWordWrap(true);
    m_limits->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_bar = new MemoryBar;
    m_barLegend = new QLabel;
    m_barLegend->setWordWrap(true);
    m_barLegend->setObjectName(QStringLiteral("MemoryLegend"));
    m_hostBar = new MemoryBar;
    m_hostBar->setAccessibleName(QStringLiteral("Host memory bar"));
    m_hostBar->setTotalCaption(QStringLiteral("host RAM"));
    m_hostLegend = new QLabel;
    m_hostLegend->setWordWrap(true);
    m_hostLegend->setObjectName(QStringLiteral("HostMemoryLegend"));
    m_layers = new GpuLayersControl;
    connect(m_layers, &GpuLayersControl::gpuLayersChosen, this, &DetailPanel::chooseGpuLayers);

    m_tabs = new QTabWidget;
    m_charts = new ChartsPanel;
    m_tabs->addTab(m_charts, QStringLiteral("&Plots"));
    m_bill = new BillPanel;
    m_tabs->addTab(m_bill, QStringLiteral("Memory &bill"));
    m_engines = new EnginesPanel;
    m_tabs->addTab(m_engines, QStringLiteral("E&ngines compared"));
    m_probes = new ProbePanel(std::move(probeBackend));
    m_tabs->addTab(m_probes, QStringLiteral("Pr&obes"));
    m_splitSpeed = new SplitSpeedChart;
    m_tabs->addTab(m_splitSpeed, QStringLiteral("Speed per &split"));
    connect(m_probes, &ProbePanel::measuredSpeed, this, [this](const std::vector<std::pair<std::uint64_t, double>>& points) {
        std::vector<MeasuredSpeed> m;
        for (const auto& [batch, tps] : points)
            m.push_back({batch, tps});
        m_charts->setMeasured(std::move(m));
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 6);
    layout->addWidget(m_title);
    layout->addWidget(m_limits);
    layout->addWidget(m_bar);
    layout->addWidget(m_barLegend);
    layout->addWidget(m_hostBar);
    layout->addWidget(m_hostLegend);
    layout->addWidget(m_layers);
    layout->addWidget(m_tabs, 1);
}

void DetailPanel::showNoPlan(const QString& why)
{
    m_title->setText(QStringLiteral("No detail: %1").arg(why));
    m_limits->clear();
    m_bar->setSegments({}, Bytes{});
    m_barLegend->clear();
    m_hostBar->hide();
    m_hostLegend->hide();
    m_layers->setUnavailable(QStringLiteral("GPU layers: no plan"));
    m_splitSpeed->clear(why);
    m_request.reset();
    m_stepRequest.reset();
    m_bill->clear();
    m_engines->clear();
    m_probes->clearPlan();
}

void DetailPanel::setCell(const Catalog& catalog, const Selection& selection, const std::string& modelId,
                          const std::string& formatId, const std::string& cardId)
{
    m_plan.reset();
    const std::uint64_t users = selection.users;
    const std::uint64_t context = selection.contextTokens;
    std::vector<CardPlan> cardPlans;
    for (const std::string& id : selection.cardIds)
        if (auto p = planFor(catalog, selection, modelId, formatId, id))
            cardPlans.push_back({*catalog.findCard(id), std::move(*p)});
    m_charts->setPlans(std::move(cardPlans), users, context);
    if (cardId.empty()) {
        showNoPlan(QStringLiteral("no card chosen"));
        return;
    }
    auto plan = planFor(catalog, selection, modelId, formatId, cardId);
    if (!plan) {
        showNoPlan(QString::fromStdString(plan.error()));
        return;
    }
    m_plan = *plan;
    const PlanResult& p = *plan;
    const Card* card = catalog.findCard(cardId);
    const EnginePolicy* engine = catalog.findEngine(selection.engineId);
    const ModelProfile* model = catalog.findModel(modelId);
    m_title->setText(QStringLiteral("%1 in %2 with %3 KV on %4 under %5")
                         .arg(model ? modelLabel(*model) : QString::fromStdString(p.modelId), QString::fromStdString(p.formatId),
                              QString::fromStdString(p.kvDtypeId), cardLabel(*card),
                              engine ? QString::fromStdString(engine->name) : QString::fromStdString(p.engineId)));
    m_title->setToolTip(model ? modelToolTip(*model) : QString());
    m_users = users;
    m_context = context;
    auto request = requestFor(catalog, selection, modelId, formatId, cardId);
    m_request.reset();
    m_stepRequest.reset();
    if (request) {
        m_request = *request;
        m_stepRequest = keepFitPlacement(*request, p);
    }
    showPlan(p);
    // The slider and the speed per split: every -ngl the engine accepts, each planned by core with
    // the experts --fit placed for this plan kept where it put them (offloadsweep.h keepFitPlacement).
    const std::uint32_t total = request ? offloadLayerCount(*request) : 0;
    const auto steps = total > 0 ? offloadSweep(*m_stepRequest) : tl::expected<std::vector<OffloadStep>, std::string>{};
    if (total == 0 || !steps) {
        const QString why = !steps ? QString::fromStdString(steps.error())
                                   : QStringLiteral("GPU layers: %1 keeps every layer on the GPU (no layer offload)")
                                         .arg(engine ? QString::fromStdString(engine->name) : QString::fromStdString(p.engineId));
        m_layers->setUnavailable(why);
        m_splitSpeed->clear(why);
    } else {
        const SplitBill split = splitBill(p);
        const std::uint32_t shown = split.totalLayers > 0 ? split.gpuLayers : total;
        m_layers->setLayers(total, shown, true);
        // The host bandwidth the steps were priced at, in core's words (the Host row's, else assumed).
        m_splitSpeed->setSteps(*steps, shown, QString::fromStdString(hostBandwidthText(request->hostBandwidthGBps)));
    }
    m_engines->setRows(compareEngines(catalog, selection, modelId, formatId, cardId));
    if (request)
        m_probes->setPlan(p, *request);
}

void DetailPanel::showPlan(const PlanResult& p)
{
    m_limits->setText(verdictText(p));
    m_limits->setToolTip(QString::fromStdString(p.reason));
    m_bill->setPlan(p, m_users, m_context);
    // A layer split: the card's row is the GPU side of the split, host RAM a row of its own
    // (the same rows as the Memory bill tab).
    m_bar->setSegments(m_bill->breakdown()->cardSegments(), p.cardTotalBytes);
    m_barLegend->setText(m_bar->legendHtml());
    const std::vector<BillSegment> host = m_bill->breakdown()->hostSegments();
    m_hostBar->setVisible(!host.empty());
    m_hostLegend->setVisible(!host.empty());
    if (!host.empty()) {
        const bool given = m_request && m_request->hostMemoryBytes;
        m_hostBar->setTotalCaption(given ? QStringLiteral("host RAM (--host-ram)") : QStringLiteral("host RAM needed"));
        m_hostBar->setSegments(host, given ? *m_request->hostMemoryBytes : hostMemoryBytes(p));
        m_hostLegend->setText(QStringLiteral("<b>Host RAM</b>: ") + m_hostBar->legendHtml());
    }
    QString summary = placementSummary(p).toHtmlEscaped();
    if (p.verdict.loads() && p.speed)
        summary += QStringLiteral(", about <b>%1 tokens/s</b>").arg(p.speed->decodeTokensPerSecond, 0, 'f', 1);
    m_layers->setSummary(summary);
}

void DetailPanel::chooseGpuLayers(std::optional<std::uint32_t> gpuLayers)
{
    if (!m_request)
        return;
    // A layer count set: the sweep's request (the fit's expert placement kept), so the summary and
    // the plot's point are one plan; none: the engine's own placement again.
    PlanRequest r = gpuLayers && m_stepRequest ? *m_stepRequest : *m_request;
    r.gpuLayers = gpuLayers;
    auto plan = makePlan(r);
    if (!plan) {
        m_layers->setSummary(QString::fromStdString(plan.error()).toHtmlEscaped());
        return;
    }
    m_plan = *plan;
    showPlan(*plan);
    const SplitBill split = splitBill(*plan);
    const std::uint32_t total = offloadLayerCount(r);
    const std::uint32_t shown = gpuLayers ? *gpuLayers : (split.totalLayers > 0 ? split.gpuLayers : total);
    if (!gpuLayers)
        m_layers->setLayers(total, shown, true);
    m_splitSpeed->setShown(shown);
}

} // namespace headroom::app
