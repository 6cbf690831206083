#pragma once
// The probe runner: a device, the probes to run, a budget (default: the plan's card), Run and
// Cancel (Run disabled while a run is going), a progress bar with the stage, the table of
// predicted against measured with each row's verdict, and the speed calibration the timing probe
// measured. A change of plan clears the results (a run still going is marked as for the earlier
// plan when it ends). Probes run on a worker (ProbeRunner).

#include "proberesultsmodel.h"
#include "proberunner.h"

#include <QWidget>

#include <optional>

class QComboBox;
class QDoubleSpinBox;
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
    QDoubleSpinBox* budgetBox() const { return m_budget; }
    QLabel* calibrationLabel() const { return m_calibration; }
    /// The table of predicted against measured.
    QTableView* resultsTable() const { return m_table; }
    /// The plan the probes check, if any.
    const PlanResult* plan() const { return m_job ? &m_job->plan : nullptr; }
    /// The budget of the next run: the plan's card to the byte until the user edits the box.
    Bytes budgetBytes() const;

    /// Starts the checked probes on the chosen device.
    void run();

Q_SIGNALS:
    /// Decode-step rows of a finished run, as (batch, tokens/s) for the speed plot.
    void measuredSpeed(const std::vector<std::pair<std::uint64_t, double>>& points);

private:
    void updateButtons();
    void showFinished(const std::vector<ProbeRow>& rows, bool cancelled);

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
    QDoubleSpinBox* m_budget = nullptr;
    QLabel* m_calibration = nullptr;
    std::optional<ProbeJob> m_job;
    QString m_planKey;   ///< what the current plan checks (model, formats, card, users, context)
    QString m_runKey;    ///< m_planKey of the run going or last finished
    std::string m_budgetCard; ///< the card the budget default was taken from
    std::optional<Bytes> m_budgetExact; ///< the card's exact bytes while the box shows them
};

} // namespace headroom::app
