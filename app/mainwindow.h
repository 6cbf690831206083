#pragma once
// The main window: it composes the panels (choicespanel.h, matrixpanel.h, detailpanel.h and the
// detail's tabs), keeps the session (selection, detail cell, settings, recent imports), and owns
// the menus, import, export and launch flags. Every number shown comes from headroom_core.

#include "catalog.h"
#include "exportactions.h"

#include <QMainWindow>

#include <memory>
#include <optional>

class QAction;
class QMenu;
class QComboBox;
class QLabel;
class QListWidget;
class QSplitter;
class QTabWidget;
class QTableView;
class QTimer;

namespace headroom::app {

class BreakdownModel;
class ChartsPanel;
class ChoicesPanel;
class DetailPanel;
class EngineComparisonModel;
class GpuDetector;
class LocalModelsScanner;
class LogPanel;
class MatrixPanel;
class MemoryBar;
class ModelImporter;
class ProbeBackend;
class ProbePanel;
class SliderEntry;
class WhatFitsModel;

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    struct Options {
        bool useSettings = true;          ///< restore and save QSettings (off for screenshots and tests)
        bool detectGpus = true;           ///< ask nvidia-smi for this machine's GPUs
        bool scanLocalStores = false;     ///< list the hub cache, Ollama and LM Studio models in the model picker (the app turns it on)
        std::string modelArg;             ///< --model: a profile id or a path to import
        std::vector<std::string> cardArgs; ///< --cards: profile ids or sizes (12GiB) replacing the chosen cards
        std::string engineArg;            ///< --engine: an engine profile id replacing the chosen engine
        std::string formatArg;            ///< --format: a weight format id replacing the chosen one
        std::shared_ptr<ProbeBackend> probeBackend; ///< default: createProbeBackend()
    };

    MainWindow(Catalog catalog, Options options, QWidget* parent = nullptr);
    ~MainWindow() override;

    const Selection& selection() const;
    const Catalog& catalog() const { return m_catalog; }

    /// The detail cell: its plan, if it could be made.
    const std::optional<PlanResult>& detailPlan() const;
    std::string detailCardId() const { return m_detailCard; }
    /// Shows (model, format, card) in the detail.
    void setDetail(const std::string& modelId, const std::string& formatId, const std::string& cardId);

    void setDark(bool dark);
    bool isDark() const;
    void setMatrixMode(MatrixMode mode);
    void importModel(const QString& path);
    /// The paths imported before (most recent first, at most 8), remembered across sessions.
    const QStringList& recentImports() const { return m_recentImports; }
    /// The matrix's plans (and the detail's when it is not in the matrix) with their requests.
    ExportState exportState() const;
    /// Writes the capacity report of exportState() to @p path (format nullopt: by the extension).
    bool exportReportTo(const QString& path, std::optional<ReportFormat> format, QString* error);
    /// Copies the launch flags of the detail cell under @p engine to the clipboard; a refusal of
    /// the core (a KV dtype the engine lacks, nothing fits) goes to the status bar.
    void copyLaunchFlags(LaunchEngine engine);

    // Widgets and models, for tests and screenshots.
    ChoicesPanel* choices() const { return m_choices; }
    MatrixPanel* matrixPanel() const { return m_matrixPanel; }
    DetailPanel* detail() const { return m_detail; }
    WhatFitsModel* matrixModel() const;
    QTableView* matrixView() const;
    SliderEntry* contextEntry() const;
    SliderEntry* usersEntry() const;
    SliderEntry* ubatchEntry() const;
    QComboBox* modelCombo() const;
    QComboBox* formatCombo() const;
    QComboBox* kvCombo() const;
    QComboBox* engineCombo() const;
    QListWidget* cardList() const;
    MemoryBar* memoryBar() const;
    BreakdownModel* breakdownModel() const;
    EngineComparisonModel* engineModel() const;
    ChartsPanel* charts() const;
    ProbePanel* probePanel() const;
    QTabWidget* detailTabs() const;
    QLabel* detailTitle() const;
    QLabel* detailLimits() const;
    ModelImporter* importer() const { return m_importer; }
    /// The Log panel (its own window): an engine's start-up log, predicted vs measured, calibrated.
    LogPanel* logPanel() const { return m_log; }
    /// Shows the Log panel on @p path.
    void openEngineLog(const QString& path);

Q_SIGNALS:
    /// After the matrix and the detail were recomputed.
    void refreshed();

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void buildMenus();
    void onChoice(int change);
    void onImported(const ModelProfile& model, const QString& path);
    void rememberImport(const QString& path);
    void refresh();
    void refreshDetail();
    void loadSettings();
    void saveSettings() const;
    void exportReport();
    void openImportDialog();
    void openImportFolderDialog();
    /// Asks for a model name or URL (hub repo, GGUF URL, Ollama name) and imports it (importModel).
    void openModelByNameDialog();
    void sizeSplitter();

    Catalog m_catalog;
    Options m_options;
    Selection m_initial;
    std::string m_detailModel;
    std::string m_detailFormat;
    std::string m_detailCard;
    bool m_ubatchFromSettings = false; ///< the micro-batch was restored from QSettings
    QStringList m_recentImports;
    QString m_pendingImport;

    ChoicesPanel* m_choices = nullptr;
    MatrixPanel* m_matrixPanel = nullptr;
    DetailPanel* m_detail = nullptr;
    QAction* m_darkAction = nullptr;
    QMenu* m_recentMenu = nullptr;
    QTimer* m_saveTimer = nullptr; ///< saves the settings shortly after a change (a killed app keeps them)
    QSplitter* m_split = nullptr;
    bool m_splitSized = false;
    bool m_probeSplit = false; ///< the splitter was last sized for the Probes tab

    ModelImporter* m_importer = nullptr;
    GpuDetector* m_gpus = nullptr;
    LogPanel* m_log = nullptr;
    LocalModelsScanner* m_localModels = nullptr;
};

/// The first window's geometry on a screen whose free area is `available` (pixels, from
/// QScreen::availableGeometry): 90 % of it each way, but at least 1280x800 where the screen has that
/// much (never more than the screen), centred on it. Used when no geometry was saved.
QRect defaultWindowGeometry(const QRect& available);

/// Renders @p window at its current size to a PNG; false when it cannot be written.
bool saveScreenshot(QWidget& window, const QString& path);

} // namespace headroom::app
