#include "probepanel.h"

#include "formatting.h"

#include <QComboBox>
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
    m_probes->setMaximumHeight(m_probes->sizeHintForRow(0) * 4 + 8);
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

    m_table = new QTableView(this);
    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(m_results);
    proxy->setSortRole(ProbeResultsModel::RawRole);
    m_table->setModel(proxy);
    m_table->setSortingEnabled(true);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setAlternatingRowColors(true);

    auto* deviceLabel = new QLabel(QStringLiteral("&Device"), this);
    deviceLabel->setBuddy(m_devices);
    auto* probesLabel = new QLabel(QStringLiteral("&Probes"), this);
    probesLabel->setBuddy(m_probes);

    auto* grid = new QGridLayout;
    grid->addWidget(deviceLabel, 0, 0);
    grid->addWidget(m_devices, 0, 1);
    grid->addWidget(m_run, 0, 2);
    grid->addWidget(m_cancel, 0, 3);
    grid->addWidget(probesLabel, 1, 0, Qt::AlignTop);
    grid->addWidget(m_probes, 1, 1);
    auto* progressBox = new QVBoxLayout;
    progressBox->addWidget(m_progress);
    progressBox->addWidget(m_stage);
    progressBox->addWidget(m_target);
    progressBox->addStretch();
    grid->addLayout(progressBox, 1, 2, 1, 2);
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(2, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(grid);
    layout->addWidget(m_table, 1);

    connect(m_run, &QPushButton::clicked, this, &ProbePanel::run);
    connect(m_cancel, &QPushButton::clicked, m_runner, &ProbeRunner::cancel);
    connect(m_runner, &ProbeRunner::progressChanged, this, [this](double fraction, const QString& stage) {
        m_progress->setValue(static_cast<int>(fraction * 1000));
        if (!stage.isEmpty())
            m_stage->setText(stage);
    });
    connect(m_runner, &ProbeRunner::finished, this, [this](const std::vector<ProbeRow>& rows, bool cancelled) {
        m_results->setRows(rows);
        int failed = 0;
        std::vector<std::pair<std::uint64_t, double>> speed;
        for (const ProbeRow& r : rows) {
            failed += !r.pass;
            if (r.unit == ProbeUnit::Nanoseconds && r.batch > 0 && r.measured > 0)
                speed.emplace_back(r.batch, static_cast<double>(r.batch) * 1e9 / static_cast<double>(r.measured));
        }
        m_stage->setText(cancelled ? QStringLiteral("Cancelled after %1 results").arg(rows.size())
                                   : QStringLiteral("Done: %1 passed, %2 failed").arg(rows.size() - static_cast<std::size_t>(failed)).arg(failed));
        if (!cancelled)
            m_progress->setValue(m_progress->maximum());
        updateButtons();
        Q_EMIT measuredSpeed(speed);
    });
    updateButtons();
}

void ProbePanel::setPlan(const PlanResult& plan, const PlanRequest& request)
{
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
    for (int i = 0; i < m_probes->count(); ++i)
        if (m_probes->item(i)->checkState() == Qt::Checked)
            job.probes << m_probes->item(i)->text();
    m_results->setRows({});
    m_progress->setValue(0);
    m_stage->setText(QStringLiteral("Starting"));
    m_runner->start(std::move(job));
    updateButtons();
}

void ProbePanel::updateButtons()
{
    const bool running = m_runner->isRunning();
    m_run->setEnabled(m_devices->isEnabled() && m_job.has_value());
    m_cancel->setEnabled(running);
}

} // namespace headroom::app
