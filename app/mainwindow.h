#pragma once
// The main window: controls (model, import, formats, engine, cards, context / users /
// micro-batch), the what-fits matrix, and the detail of one cell (memory bar, plots, bill,
// engine comparison, probe runner). Every number shown comes from headroom_core.

#include "catalog.h"
#include "exportactions.h"

#include <QMainWindow>

#include <memory>
#include <optional>

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSplitter;
class QTabWidget;
class QTableView;
class QTextBrowser;

namespace headroom::app {

class BreakdownModel;
class ChartsPanel;
class EngineComparisonModel;
class GpuDetector;
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
        std::string modelArg;             ///< --model: a profile id or a path to import
        std::shared_ptr<ProbeBackend> probeBackend; ///< default: createProbeBackend()
    };

    MainWindow(Catalog catalog, Options options, QWidget* parent = nullptr);
    ~MainWindow() override;

    const Selection& selection() const { return m_selection; }
    const Catalog& catalog() const { return m_catalog; }

    /// The detail cell: its plan, if it could be made.
    const std::optional<PlanResult>& detailPlan() const { return m_detailPlan; }
    std::string detailCardId() const { return m_detailCard; }
    /// Shows (model, format, card) in the detail.
    void setDetail(const std::string& modelId, const std::string& formatId, const std::string& cardId);

    void setDark(bool dark);
    bool isDark() const;
    void setMatrixMode(MatrixMode mode);
    void importModel(const QString& path);
    /// The matrix's plans (and the detail's when it is not in the matrix) with their requests.
    ExportState exportState() const;
    /// Writes the capacity report of exportState() to @p path (format nullopt: by the extension).
    bool exportReportTo(const QString& path, std::optional<ReportFormat> format, QString* error);
    /// Copies the launch flags of the detail cell under @p engine to the clipboard; a refusal of
    /// the core (a KV dtype the engine lacks, nothing fits) goes to the status bar.
    void copyLaunchFlags(LaunchEngine engine);

    // Widgets and models, for tests and screenshots.
    WhatFitsModel* matrixModel() const { return m_matrix; }
    QTableView* matrixView() const { return m_matrixView; }
    SliderEntry* contextEntry() const { return m_context; }
    SliderEntry* usersEntry() const { return m_users; }
    SliderEntry* ubatchEntry() const { return m_ubatch; }
    QComboBox* modelCombo() const { return m_modelCombo; }
    QComboBox* formatCombo() const { return m_formatCombo; }
    QComboBox* kvCombo() const { return m_kvCombo; }
    QComboBox* engineCombo() const { return m_engineCombo; }
    QListWidget* cardList() const { return m_cardList; }
    MemoryBar* memoryBar() const { return m_bar; }
    BreakdownModel* breakdownModel() const { return m_breakdown; }
    EngineComparisonModel* engineModel() const { return m_engines; }
    ChartsPanel* charts() const { return m_charts; }
    ProbePanel* probePanel() const { return m_probePanel; }
    QTabWidget* detailTabs() const { return m_tabs; }
    QLabel* detailTitle() const { return m_title; }
    QLabel* detailLimits() const { return m_limits; }
    ModelImporter* importer() const { return m_importer; }

Q_SIGNALS:
    /// After the matrix and the detail were recomputed.
    void refreshed();

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void buildControls();
    void buildCentral();
    void buildMenus();
    void fillModelCombo();
    void fillCardList();
    void syncControls();
    void readControls();
    void refresh();
    void refreshDetail();
    void updateContextRange();
    void loadSettings();
    void saveSettings() const;
    void exportReport();
    void openImportDialog();
    void sizeSplitter();

    Catalog m_catalog;
    Options m_options;
    Selection m_selection;
    std::string m_detailModel;
    std::string m_detailFormat;
    std::string m_detailCard;
    std::optional<PlanResult> m_detailPlan;
    bool m_syncing = false;
    bool m_ubatchFromSettings = false; ///< the micro-batch was restored from QSettings

    QComboBox* m_modelCombo = nullptr;
    QComboBox* m_formatCombo = nullptr;
    QComboBox* m_kvCombo = nullptr;
    QComboBox* m_engineCombo = nullptr;
    QComboBox* m_modeCombo = nullptr;
    QListWidget* m_cardList = nullptr;
    QLineEdit* m_sizeEdit = nullptr;
    SliderEntry* m_context = nullptr;
    SliderEntry* m_users = nullptr;
    SliderEntry* m_ubatch = nullptr;
    QLabel* m_importStatus = nullptr;

    WhatFitsModel* m_matrix = nullptr;
    QTableView* m_matrixView = nullptr;
    QLabel* m_matrixCaption = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_limits = nullptr;
    MemoryBar* m_bar = nullptr;
    QTabWidget* m_tabs = nullptr;
    ChartsPanel* m_charts = nullptr;
    BreakdownModel* m_breakdown = nullptr;
    EngineComparisonModel* m_engines = nullptr;
    QTextBrowser* m_engineWhy = nullptr;
    ProbePanel* m_probePanel = nullptr;
    QAction* m_darkAction = nullptr;
    QSplitter* m_split = nullptr;
    bool m_splitSized = false;

    ModelImporter* m_importer = nullptr;
    GpuDetector* m_gpus = nullptr;
};

/// Renders @p window at its current size to a PNG; false when it cannot be written.
bool saveScreenshot(QWidget& window, const QString& path);

} // namespace headroom::app
