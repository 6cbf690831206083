#pragma once
// The probe runner: a device, the probes to run, Run and Cancel, a progress bar with the stage,
// and the table of predicted against measured. Probes run on a worker (ProbeRunner).

#include "proberesultsmodel.h"
#include "proberunner.h"

#include <QWidget>

#include <optional>

class QComboBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTableView;

namespace headroom::app {

class ProbePanel : public QWidget
{
    Q_OBJECT
public:
    explicit ProbePanel(std::shared_ptr<ProbeBackend> backend, QWidget* parent = nullptr);

    /// The plan the probes check (the detail cell).
    void setPlan(const PlanResult& plan, const PlanRequest& request);
    void clearPlan();

    ProbeResultsModel* resultsModel() const { return m_results; }
    ProbeRunner* runner() const { return m_runner; }
    QComboBox* deviceCombo() const { return m_devices; }
    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const { return m_cancel; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* stageLabel() const { return m_stage; }

    /// Starts the checked probes on the chosen device.
    void run();

Q_SIGNALS:
    /// Decode-step rows of a finished run, as (batch, tokens/s) for the speed plot.
    void measuredSpeed(const std::vector<std::pair<std::uint64_t, double>>& points);

private:
    void updateButtons();

    ProbeRunner* m_runner = nullptr;
    ProbeResultsModel* m_results = nullptr;
    QComboBox* m_devices = nullptr;
    QListWidget* m_probes = nullptr;
    QPushButton* m_run = nullptr;
    QPushButton* m_cancel = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_stage = nullptr;
    QLabel* m_target = nullptr;
    QTableView* m_table = nullptr;
    std::optional<ProbeJob> m_job;
};

} // namespace headroom::app
