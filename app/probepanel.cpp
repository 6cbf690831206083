#include "probepanel.h"

#include "formatting.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSignalBlocker>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>

namespace headroom::app {

ProbePanel::ProbePanel(std::shared_ptr<ProbeBackend> backend, QWidget* parent)
    : QWidget(parent)
{
    m_runner = new ProbeRunner(std::move(backend), this);
    m_results = new ProbeResultsModel(this);

    m_devices = new QComboBox(this);
    bool anyUsable = false;
    for (const ProbeDevice& d : m_runner->backend().devices()) {
        QString text = d.name;
        if (d.totalBytes.value > 0)
            text += QStringLiteral(", %1").arg(bytesText(d.totalBytes));
        m_devices->addItem(text, d.id);
        if (!d.usable) {
            auto* model = qobject_cast<QStandardItemModel*>(m_devices->model());
            if (model)
                model->item(m_devices->count() - 1)->setEnabled(false);
        }
        anyUsable = anyUsable || d.usable;
    }
    m_devices->setEnabled(anyUsable);
    m_devices->setAccessibleName(QStringLiteral("Probe device"));

    m_probes = new QListWidget(this);
    m_probes->setAccessibleName(QStringLiteral("Probes to run"));
    for (const QString& name : m_runner->backend().probeNames()) {
        auto* item = new QListWidgetItem(name, m_probes);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Checked);
    }
    // The probes side by side on one line: the height of the tab goes to the results table.
    m_probes->setFlow(QListView::LeftToRight);
    m_probes->setWrapping(false);
    m_probes->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    m_probes->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_probes->setSpacing(2);
    m_probes->setFixedHeight(m_probes->sizeHintForRow(0) + 2 * m_probes->frameWidth() + 6);
    m_probes->setEnabled(anyUsable);

    m_run = new QPushButton(QStringLiteral("&Run probes"), this);
    m_cancel = new QPushButton(QStringLiteral("C&ancel"), this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_stage = new QLabel(anyUsable ? QStringLiteral("Ready") : QStringLiteral("Probes are not built into this Headroom: "
                                                                              "build with the headroom_probes target to verify on a device."),
                         this);
    m_stage->setWordWrap(true);
    m_target = new QLabel(this);
    m_target->setWordWrap(true);
    m_calibration = new QLabel(this);
    m_calibration->setWordWrap(true);
    m_calibration->setAccessibleName(QStringLiteral("Speed calibration"));
    m_calibration->hide(); // until a timing probe calibrated the speed model

    // The budget caps what the probes allocate: the plan's card by default, so that a larger
    // device checks a smaller card; one above the device's free memory is refused up front.
    m_budget = new QDoubleSpinBox(this);
    m_budget->setRange(0.25, 4096.0);
    m_budget->setDecimals(2);
    m_budget->setSingleStep(1.0);
    m_budget->setSuffix(QStringLiteral(" GiB"));
    m_budget->setValue(2.0);
    m_budget->setAccessibleName(QStringLiteral("Probe budget"));
    m_budget->setToolTip(QStringLiteral("The probes allocate at most this much (default: the plan's card). A budget above the "
                                        "device's free memory is refused before anything is allocated."));

    m_table = new QTableView(this);
    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(m_results);
    proxy->setSortRole(ProbeResultsModel::RawRole);
    m_table->setModel(proxy);
    m_table->setSortingEnabled(true);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    // Probe, difference and verdict as wide as their text; the quantity and the note share the
    // rest, wrapped (their full text is also the tooltip).
    for (int c : {ProbeResultsModel::Probe, ProbeResultsModel::Difference, ProbeResultsModel::Verdict})
        m_table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(ProbeResultsModel::Quantity, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(ProbeResultsModel::Note, QHeaderView::Stretch);
    // A long quantity or note wraps in its column (rows grow to it) instead of being cut.
    m_table->setWordWrap(true);
    connect(m_table->horizontalHeader(), &QHeaderView::sectionResized, m_table, &QTableView::resizeRowsToContents);
    m_table->setAlternatingRowColors(true);

    auto* deviceLabel = new QLabel(QStringLiteral("&Device"), this);
    deviceLabel->setBuddy(m_devices);
    auto* probesLabel = new QLabel(QStringLiteral("&Probes"), this);
    probesLabel->setBuddy(m_probes);
    auto* budgetLabel = new QLabel(QStringLiteral("&Budget"), this);
    budgetLabel->setBuddy(m_budget);

    // Two lines of controls (device, budget, Run, Cancel; the probes and the progress), then the
    // stage, the plan checked and the calibration, each one line where it fits; the table gets
    // the rest of the tab (at 1280x800 9 rows, was 3: issue 12).
    auto* grid = new QGridLayout;
    grid->setVerticalSpacing(3);
    grid->addWidget(deviceLabel, 0, 0);
    grid->addWidget(m_devices, 0, 1);
    grid->addWidget(budgetLabel, 0, 2);
    grid->addWidget(m_budget, 0, 3);
    grid->addWidget(m_run, 0, 4);
    grid->addWidget(m_cancel, 0, 5);
    grid->addWidget(probesLabel, 1, 0);
    grid->addWidget(m_probes, 1, 1, 1, 3);
    grid->addWidget(m_progress, 1, 4, 1, 2);
    grid->setColumnStretch(1, 2);
    grid->setColumnStretch(3, 1);
    grid->setColumnStretch(4, 1);
    grid->setColumnStretch(5, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setSpacing(3);
    layout->addLayout(grid);
    layout->addWidget(m_stage);
    layout->addWidget(m_target);
    layout->addWidget(m_calibration);
    layout->addWidget(m_table, 1);

    connect(m_run, &QPushButton::clicked, this, &ProbePanel::run);
    connect(m_budget, &QDoubleSpinBox::valueChanged, this, [this] { m_budgetExact.reset(); });
    connect(m_cancel, &QPushButton::clicked, m_runner, &ProbeRunner::cancel);
    connect(m_runner, &ProbeRunner::progressChanged, this, [this](double fraction, const QString& stage) {
        m_progress->setValue(static_cast<int>(fraction * 1000));
        if (!stage.isEmpty())
            m_stage->setText(stage);
    });
    connect(m_runner, &ProbeRunner::finished, this, &ProbePanel::showFinished);
    // A row wraps to at most three lines (the full text is the tooltip): one long limit-search
    // note took a third of the table's height.
    m_table->verticalHeader()->setMaximumSectionSize(3 * m_table->fontMetrics().lineSpacing() + 8);
    connect(m_results, &QAbstractItemModel::modelReset, this, [this] {
        // Predicted and measured as wide as their values, up to a width that leaves the quantity
        // and the note room to read (a long value elides; its full text is the tooltip).
        const int cap = m_table->fontMetrics().horizontalAdvance(QStringLiteral("1,234,567,890 tokens"));
        for (int c : {ProbeResultsModel::Predicted, ProbeResultsModel::Measured}) {
            m_table->resizeColumnToContents(c);
            m_table->setColumnWidth(c, std::min(m_table->columnWidth(c), cap));
        }
        m_table->resizeRowsToContents();
    });
    updateButtons();
}

void ProbePanel::showFinished(const std::vector<ProbeRow>& rows, bool cancelled)
{
    const bool stale = m_runKey != m_planKey;
    m_results->setRows(rows);
    std::map<ProbeVerdict, int> counts;
    std::vector<std::pair<std::uint64_t, double>> speed;
    QStringList calibration;
    for (const ProbeRow& r : rows) {
        ++counts[r.verdictOf()];
        if (r.unit == ProbeUnit::Nanoseconds && r.batch > 0 && r.measured > 0)
            speed.emplace_back(r.batch, static_cast<double>(r.batch) * 1e9 / static_cast<double>(r.measured));
        if (r.unit == ProbeUnit::BytesPerSecond || r.unit == ProbeUnit::FlopsPerSecond)
            calibration << QStringLiteral("%1 %2").arg(r.unit == ProbeUnit::BytesPerSecond ? QStringLiteral("decode") : QStringLiteral("prefill"),
                                                       ProbeResultsModel::valueText(r.unit, r.measured));
    }
    QStringList parts;
    for (const auto& [verdict, n] : counts)
        parts << QStringLiteral("%1 %2").arg(n).arg(ProbeResultsModel::verdictText(verdict));
    QString text = cancelled ? QStringLiteral("Cancelled after %1 results").arg(rows.size())
                             : QStringLiteral("Done: %1").arg(parts.join(QStringLiteral(", ")));
    if (stale)
        text += QStringLiteral(" (for the plan before the last change: run again to check this one)");
    m_stage->setText(text);
    m_calibration->setText(calibration.isEmpty()
                               ? QString()
                               : QStringLiteral("Speed model calibrated on this device: %1; timing rows are judged against "
                                                "+-%2 % of the calibrated model")
                                     .arg(calibration.join(QStringLiteral(", ")))
                                     .arg(100 * kTimingTolerance, 0, 'f', 0));
    m_calibration->setVisible(!calibration.isEmpty()); // no empty line above the table
    if (!cancelled)
        m_progress->setValue(m_progress->maximum());
    updateButtons();
    Q_EMIT measuredSpeed(speed);
}

void ProbePanel::setPlan(const PlanResult& plan, const PlanRequest& request)
{
    const QString key = QStringLiteral("%1|%2|%3|%4|%5|%6|%7")
                            .arg(QString::fromStdString(plan.modelId), QString::fromStdString(plan.formatId),
                                 QString::fromStdString(plan.kvDtypeId), QString::fromStdString(plan.cardId),
                                 QString::fromStdString(plan.engineId))
                            .arg(plan.users)
                            .arg(plan.contextTokens);
    if (key != m_planKey && m_results->rowCount() > 0 && !m_runner->isRunning()) {
        m_results->setRows({});
        m_calibration->clear();
        m_calibration->hide();
        m_progress->setValue(0);
        m_stage->setText(QStringLiteral("The plan changed: the earlier results were cleared"));
    }
    m_planKey = key;
    if (plan.cardId != m_budgetCard && plan.cardTotalBytes.value > 0 && !m_runner->isRunning()) {
        m_budgetCard = plan.cardId;
        const QSignalBlocker blocker(m_budget);
        m_budget->setValue(static_cast<double>(plan.cardTotalBytes.value) / static_cast<double>(1ull << 30));
        m_budgetExact = plan.cardTotalBytes;
    }
    ProbeJob job;
    job.plan = plan;
    job.request = request;
    m_job = std::move(job);
    m_target->setText(QStringLiteral("Checks %1 %2, %3 KV, %4 users x %5 tokens, as planned for %6")
                          .arg(QString::fromStdString(plan.modelId), QString::fromStdString(plan.formatId),
                               QString::fromStdString(plan.kvDtypeId), thousands(plan.users), thousands(plan.contextTokens),
                               QString::fromStdString(plan.cardId)));
    updateButtons();
}

void ProbePanel::clearPlan()
{
    m_job.reset();
    m_target->clear();
    updateButtons();
}

void ProbePanel::run()
{
    if (!m_job || !m_devices->isEnabled())
        return;
    ProbeJob job = *m_job;
    job.deviceId = m_devices->currentData().toString();
    job.budget = budgetBytes();
    m_runKey = m_planKey;
    m_calibration->clear();
    m_calibration->hide();
    for (int i = 0; i < m_probes->count(); ++i)
        if (m_probes->item(i)->checkState() == Qt::Checked)
            job.probes << m_probes->item(i)->text();
    m_results->setRows({});
    m_progress->setValue(0);
    m_stage->setText(QStringLiteral("Starting"));
    m_runner->start(std::move(job));
    updateButtons();
}

Bytes ProbePanel::budgetBytes() const
{
    if (m_budgetExact)
        return *m_budgetExact;
    return Bytes{static_cast<std::uint64_t>(std::llround(m_budget->value() * static_cast<double>(1ull << 30)))};
}

void ProbePanel::updateButtons()
{
    const bool running = m_runner->isRunning();
    m_run->setEnabled(!running && m_devices->isEnabled() && m_job.has_value());
    m_cancel->setEnabled(running);
    m_budget->setEnabled(!running && m_devices->isEnabled());
}

} // namespace headroom::app
