#pragma once
// The Log panel: an engine's start-up log (dropped, opened or pasted) shown as core reads it
// (enginelog/logreport.h analyzeEngineLog): what the log is, the measured terms, predicted
// against measured per component, the calibration, and the calibrated what-fits for other
// settings on the same card. Every figure and sentence is the core's, the same as
// `headroom-cli log`; the panel only lays them out. The analysis runs on a worker (the model
// the log names may be read from a hub cache or over HTTP); a newer log or choice supersedes it.

#include "catalog.h"

#include <QWidget>

#include <optional>

// After the Qt headers: moc 6.4 fails to parse <compare> when it comes first.
#include "headroom/core/enginelog/logreport.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTextBrowser;

namespace headroom::app {

class LogPanel : public QWidget
{
    Q_OBJECT
public:
    explicit LogPanel(const Catalog& catalog, QWidget* parent = nullptr);

    /// Reads @p path (at most EngineLogLimits::maxBytes) and analyses it.
    void openFile(const QString& path);
    /// Analyses @p text, named @p name in the calibration.
    void setLogText(const QString& text, const QString& name);
    /// Analyses the clipboard's text.
    void pasteFromClipboard();
    /// Asks for a log file.
    void openFileDialog();
    /// Refills the model picker after the catalog changed (imports, local stores).
    void refillModels();
    /// Refills the card picker after the catalog changed (sized cards, detected GPUs).
    void refillCards();

    /// A dropped or opened path is a log (not a model to import): anything but a folder, a
    /// .gguf, .safetensors or .json file.
    static bool looksLikeEngineLog(const QString& path);

    // For tests and screenshots.
    const std::optional<LogReport>& report() const { return m_report; }
    QString errorText() const;
    QString reportText() const;
    bool isBusy() const { return m_busy; }
    QComboBox* modelCombo() const { return m_model; }
    QComboBox* weightsCombo() const { return m_weights; }
    QComboBox* kvCombo() const { return m_kv; }
    QComboBox* cardCombo() const { return m_card; }
    QSpinBox* contextSpin() const { return m_context; }
    QSpinBox* usersSpin() const { return m_users; }
    QSpinBox* tpSpin() const { return m_tp; }
    QPushButton* saveButton() const { return m_save; }
    /// Saves the calibration below the user profiles folder; the path, or an error.
    tl::expected<QString, QString> saveCalibration();

Q_SIGNALS:
    /// After a report or an error arrived.
    void analyzed();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void build();
    void analyze();
    void showResult(const tl::expected<LogReport, LogReportError>& result);
    LogReportOptions options() const;

    const Catalog& m_catalog;
    std::string m_text;
    std::string m_name;
    std::optional<LogReport> m_report;
    std::optional<LogReportError> m_error;
    std::uint64_t m_generation = 0;
    bool m_busy = false;

    QComboBox* m_model = nullptr;
    QComboBox* m_weights = nullptr;
    QComboBox* m_kv = nullptr;
    QComboBox* m_card = nullptr;
    QSpinBox* m_context = nullptr;
    QSpinBox* m_users = nullptr;
    QSpinBox* m_tp = nullptr;
    QDoubleSpinBox* m_leaveFree = nullptr;
    QPushButton* m_save = nullptr;
    QLabel* m_status = nullptr;
    QTextBrowser* m_view = nullptr;
};

} // namespace headroom::app
