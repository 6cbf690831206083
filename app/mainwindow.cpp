#include "mainwindow.h"

#include "billpanel.h"
#include "chartspanel.h"
#include "choicespanel.h"
#include "detailpanel.h"
#include "enginespanel.h"
#include "formatting.h"
#include "gpudetector.h"
#include "localmodelsscanner.h"
#include "logpanel.h"
#include "matrixpanel.h"
#include "modelimporter.h"
#include "probebackend.h"
#include "probepanel.h"
#include "theme.h"
#include "whatfitsmodel.h"

#include "headroom/core/defaults.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QInputDialog>
#include <QLineEdit>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QScreen>
#include <QSettings>
#include <QTimer>
#include <QShowEvent>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>

#include <algorithm>

namespace headroom::app {

namespace {

constexpr int kRecentImports = 8;

bool contains(const std::vector<std::string>& ids, const std::string& id)
{
    return std::find(ids.begin(), ids.end(), id) != ids.end();
}

} // namespace

MainWindow::MainWindow(Catalog catalog, Options options, QWidget* parent)
    : QMainWindow(parent)
    , m_catalog(std::move(catalog))
    , m_options(std::move(options))
    , m_initial(Selection::defaults())
{
    // The platform appends the application display name ("What fits on a GPU — Headroom");
    // a title naming Headroom itself would read it twice.
    setWindowTitle(QStringLiteral("What fits on a GPU"));
    setObjectName(QStringLiteral("HeadroomMainWindow"));
    setAcceptDrops(true);
    if (!m_options.probeBackend)
        m_options.probeBackend = createProbeBackend();

    m_importer = new ModelImporter(this);
    m_gpus = new GpuDetector(this);
    m_localModels = new LocalModelsScanner(this);
    m_log = new LogPanel(m_catalog, this);
    m_log->setWindowFlag(Qt::Window);
    m_log->setWindowTitle(QStringLiteral("Engine log - Headroom"));
    m_log->resize(1280, 800);

    if (m_options.useSettings) {
        loadSettings();
        m_saveTimer = new QTimer(this);
        m_saveTimer->setSingleShot(true);
        m_saveTimer->setInterval(1000);
        connect(m_saveTimer, &QTimer::timeout, this, &MainWindow::saveSettings);
    }
    Selection& s = m_initial;
    if (!m_options.cardArgs.empty()) {
        s.cardIds.clear();
        for (const std::string& c : m_options.cardArgs)
            if (m_catalog.findCard(c) || m_catalog.addSizedCard(c))
                s.cardIds.push_back(c);
            else
                qWarning("--cards: unknown card '%s': not a profile id (headroom-cli cards lists them) nor a size", c.c_str());
    }
    if (!m_options.engineArg.empty()) {
        if (m_catalog.findEngine(m_options.engineArg))
            s.engineId = m_options.engineArg;
        else
            qWarning("--engine: unknown engine '%s' (headroom-cli engines lists them)", m_options.engineArg.c_str());
    }
    if (!m_options.formatArg.empty())
        s.formatId = m_options.formatArg;
    if (!m_catalog.findModel(s.modelId))
        s.modelId = m_catalog.findModel(kDefaultModelId) ? std::string(kDefaultModelId)
                                                         : (m_catalog.modelIds().empty() ? std::string() : m_catalog.modelIds().front());
    std::erase_if(s.cardIds, [&](const std::string& id) { return !m_catalog.findCard(id); });
    if (!m_catalog.findEngine(s.engineId) && !m_catalog.profiles().engines.empty())
        s.engineId = m_catalog.profiles().engines.front().id;
    // The micro-batch starts at the engine's own (vLLM max_num_batched_tokens, llama.cpp ubatch),
    // as the CLI does, unless the person chose one before.
    if (!m_ubatchFromSettings)
        if (const EnginePolicy* e = m_catalog.findEngine(s.engineId); e && e->ubatchTokens > 0)
            s.ubatchTokens = e->ubatchTokens;

    m_choices = new ChoicesPanel(m_catalog);
    m_choices->setSelection(s);
    m_choices->updateContextRange();
    auto* dock = new QDockWidget(QStringLiteral("Choices"), this);
    dock->setObjectName(QStringLiteral("ChoicesDock"));
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    dock->setWidget(m_choices);
    addDockWidget(Qt::LeftDockWidgetArea, dock);

    m_matrixPanel = new MatrixPanel;
    m_detail = new DetailPanel(m_options.probeBackend);
    m_split = new QSplitter(Qt::Vertical);
    m_split->setObjectName(QStringLiteral("MainSplitter"));
    m_split->addWidget(m_matrixPanel);
    m_split->addWidget(m_detail);
    m_split->setStretchFactor(0, 2);
    m_split->setStretchFactor(1, 5);
    m_split->setChildrenCollapsible(false);
    setCentralWidget(m_split);
    // Into or out of the Probes tab: the splitter sized for it (sizeSplitter).
    connect(detailTabs(), &QTabWidget::currentChanged, this, [this] {
        if (m_splitSized && (detailTabs()->currentWidget() == probePanel()) != m_probeSplit)
            sizeSplitter();
    });
    buildMenus();
    statusBar()->showMessage(QStringLiteral("Drop a config.json, a model folder or a .gguf on the window to import it, or an engine's start-up log to compare it"));

    connect(m_choices, &ChoicesPanel::changed, this, [this](ChoicesPanel::Change c) { onChoice(static_cast<int>(c)); });
    connect(m_choices, &ChoicesPanel::importFileRequested, this, &MainWindow::openImportDialog);
    connect(m_choices, &ChoicesPanel::importFolderRequested, this, &MainWindow::openImportFolderDialog);
    connect(m_matrixPanel, &MatrixPanel::cellChosen, this, [this](const std::string& model, const std::string& format, const std::string& card) {
        const std::string c = card.empty() ? m_detailCard : card;
        if (model == m_detailModel && format == m_detailFormat && c == m_detailCard)
            return;
        setDetail(model, format, c);
    });
    connect(m_importer, &ModelImporter::imported, this, [this](const ModelProfile& model) { onImported(model, m_pendingImport); });
    connect(m_importer, &ModelImporter::failed, this, [this](const QString& path, const QString& message) {
        m_choices->setModelMessage(QStringLiteral("Could not import %1: %2").arg(QFileInfo(path).fileName(), message), true, path);
        statusBar()->clearMessage();
    });
    connect(m_importer, &ModelImporter::busyChanged, this, [this](bool busy) {
        if (busy)
            m_choices->setModelMessage(QStringLiteral("Reading the model's files..."), false);
    });
    connect(m_gpus, &GpuDetector::detected, this, [this](const std::vector<Card>& cards) {
        if (cards.empty())
            return;
        m_catalog.setDetectedCards(cards);
        m_choices->refillCards();
        m_log->refillCards();
        statusBar()->showMessage(QStringLiteral("Detected %1 GPU(s) on this machine").arg(cards.size()));
    });

    m_detailModel = s.modelId;
    m_detailFormat = s.formatId;
    m_detailCard = s.cardIds.empty() ? std::string() : s.cardIds.back();
    refresh();

    if (m_options.detectGpus)
        m_gpus->start(m_catalog.profiles());
    connect(m_localModels, &LocalModelsScanner::found, this, [this](const std::vector<ModelProfile>& models) {
        for (const ModelProfile& m : models)
            m_catalog.addImportedModel(m);
        m_choices->refillModels();
        m_log->refillModels();
    });
    if (m_options.scanLocalStores)
        m_localModels->scan();
    if (!m_options.modelArg.empty()) {
        if (m_catalog.findModel(m_options.modelArg)) {
            Selection next = selection();
            next.modelId = m_options.modelArg;
            m_choices->setSelection(next);
            m_choices->updateContextRange();
            m_detailModel = m_options.modelArg;
            refresh();
        } else {
            importModel(QString::fromStdString(m_options.modelArg));
        }
    }
}

MainWindow::~MainWindow() = default;

const Selection& MainWindow::selection() const { return m_choices->selection(); }
const std::optional<PlanResult>& MainWindow::detailPlan() const { return m_detail->plan(); }
WhatFitsModel* MainWindow::matrixModel() const { return m_matrixPanel->model(); }
QTableView* MainWindow::matrixView() const { return m_matrixPanel->view(); }
SliderEntry* MainWindow::contextEntry() const { return m_choices->contextEntry(); }
SliderEntry* MainWindow::usersEntry() const { return m_choices->usersEntry(); }
SliderEntry* MainWindow::ubatchEntry() const { return m_choices->ubatchEntry(); }
QComboBox* MainWindow::modelCombo() const { return m_choices->modelCombo(); }
QComboBox* MainWindow::formatCombo() const { return m_choices->formatCombo(); }
QComboBox* MainWindow::kvCombo() const { return m_choices->kvCombo(); }
QComboBox* MainWindow::engineCombo() const { return m_choices->engineCombo(); }
QListWidget* MainWindow::cardList() const { return m_choices->cardList(); }
MemoryBar* MainWindow::memoryBar() const { return m_detail->memoryBar(); }
BreakdownModel* MainWindow::breakdownModel() const { return m_detail->bill()->breakdown(); }
EngineComparisonModel* MainWindow::engineModel() const { return m_detail->engines()->comparison(); }
ChartsPanel* MainWindow::charts() const { return m_detail->charts(); }
ProbePanel* MainWindow::probePanel() const { return m_detail->probes(); }
QTabWidget* MainWindow::detailTabs() const { return m_detail->tabs(); }
QLabel* MainWindow::detailTitle() const { return m_detail->title(); }
QLabel* MainWindow::detailLimits() const { return m_detail->limits(); }

void MainWindow::onChoice(int change)
{
    const Selection& s = selection();
    const auto c = static_cast<ChoicesPanel::Change>(change);
    if (c == ChoicesPanel::Change::Model || c == ChoicesPanel::Change::Format) {
        m_detailModel = s.modelId;
        m_detailFormat = s.formatId;
    }
    if (c == ChoicesPanel::Change::Cards && !contains(s.cardIds, m_detailCard))
        m_detailCard = s.cardIds.empty() ? std::string() : s.cardIds.back();
    refresh();
    if (m_saveTimer)
        m_saveTimer->start();
}

void MainWindow::onImported(const ModelProfile& model, const QString& path)
{
    m_catalog.addImportedModel(model);
    m_choices->refillModels();
    m_choices->setModelMessage(QStringLiteral("Imported %1").arg(modelLabel(model)), false, path);
    if (!path.isEmpty())
        rememberImport(path);
    // The chosen weight format stays (the other rows keep their prices); the detail shows the
    // model in its own format, which the Formats matrix lists first.
    Selection next = selection();
    next.modelId = model.id;
    next.mode = MatrixMode::Formats;
    m_choices->setSelection(next);
    m_choices->updateContextRange();
    m_detailModel = model.id;
    m_detailFormat = model.exactWeights ? model.exactWeights->formatId : next.formatId;
    refresh();
}

namespace {

/// A recent import's menu text: the file's name, or its folder's for a folder or a config.json.
QString recentImportLabel(const QString& path)
{
    const QFileInfo info(path);
    if (info.fileName().isEmpty() || info.fileName() == QLatin1String("config.json"))
        return QFileInfo(info.fileName().isEmpty() ? path.chopped(1) : info.path()).fileName();
    return info.fileName();
}

} // namespace

void MainWindow::rememberImport(const QString& path)
{
    m_recentImports.removeAll(path);
    m_recentImports.prepend(path);
    while (m_recentImports.size() > kRecentImports)
        m_recentImports.removeLast();
    if (m_options.useSettings) {
        QSettings settings;
        settings.setValue(QStringLiteral("imports/recent"), m_recentImports);
    }
    if (!m_recentMenu)
        return;
    m_recentMenu->clear();
    for (const QString& p : m_recentImports)
        m_recentMenu->addAction(recentImportLabel(p), this, [this, p] { importModel(p); })->setToolTip(p);
    m_recentMenu->setEnabled(!m_recentImports.isEmpty());
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
    QAction* import = file->addAction(QStringLiteral("&Import model file..."), this, &MainWindow::openImportDialog);
    import->setShortcut(QKeySequence::Open);
    QAction* folder = file->addAction(QStringLiteral("Import model &folder..."), this, &MainWindow::openImportFolderDialog);
    folder->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_I));
    // A model by name: a hub repo (ORG/NAME, hf://ORG/NAME[@REV][:TAG]), a GGUF URL or an Ollama
    // name, read as the CLI reads it (local stores first, then headers over HTTP), off the GUI thread.
    file->addAction(QStringLiteral("Open model by &name or URL..."), this, &MainWindow::openModelByNameDialog);
    m_recentMenu = file->addMenu(QStringLiteral("&Recent imports"));
    file->addSeparator();
    file->addAction(QStringLiteral("Open engine &log..."), this, [this] {
        m_log->show();
        m_log->openFileDialog();
    });
    file->addAction(QStringLiteral("&Paste engine log"), this, [this] {
        m_log->show();
        m_log->pasteFromClipboard();
    });
    file->addSeparator();
    QAction* report = file->addAction(QStringLiteral("&Export capacity report..."), this, &MainWindow::exportReport);
    report->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    const auto addFlags = [this, file](LaunchEngine engine, const QString& text, const QKeySequence& shortcut) {
        QAction* action = file->addAction(text, this, [this, engine] { copyLaunchFlags(engine); });
        action->setShortcut(shortcut);
    };
    addFlags(LaunchEngine::Vllm, QStringLiteral("Copy &vLLM launch flags"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V));
    addFlags(LaunchEngine::LlamaCpp, QStringLiteral("Copy &llama.cpp launch flags"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
    addFlags(LaunchEngine::SgLang, QStringLiteral("Copy &SGLang launch flags"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_G));
    addFlags(LaunchEngine::Ollama, QStringLiteral("Copy &Ollama settings"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    file->addSeparator();
    QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    if (!m_recentImports.isEmpty()) {
        const QStringList recent = m_recentImports;
        m_recentImports.clear();
        for (auto it = recent.rbegin(); it != recent.rend(); ++it)
            rememberImport(*it);
    }
    m_recentMenu->setEnabled(!m_recentImports.isEmpty());

    QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
    m_darkAction = view->addAction(QStringLiteral("&Dark palette"));
    m_darkAction->setCheckable(true);
    m_darkAction->setChecked(isDarkPalette());
    m_darkAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
    connect(m_darkAction, &QAction::toggled, this, &MainWindow::setDark);
    view->addSeparator();
    QAction* focusMatrix = view->addAction(QStringLiteral("Go to the &matrix"), this, [this] { matrixView()->setFocus(); });
    focusMatrix->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
    QAction* focusChoices = view->addAction(QStringLiteral("Go to the &choices"), this, [this] { modelCombo()->setFocus(); });
    focusChoices->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_2));
    QAction* focusDetail = view->addAction(QStringLiteral("Go to the &detail tabs"), this, [this] { detailTabs()->setFocus(); });
    focusDetail->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_3));
}

void MainWindow::setMatrixMode(MatrixMode mode)
{
    Selection next = selection();
    next.mode = mode;
    m_choices->setSelection(next);
    onChoice(static_cast<int>(ChoicesPanel::Change::Other));
}

void MainWindow::setDetail(const std::string& modelId, const std::string& formatId, const std::string& cardId)
{
    m_detailModel = modelId;
    m_detailFormat = formatId;
    m_detailCard = cardId;
    // The choices follow the cell, without rebuilding the matrix.
    Selection next = selection();
    if (next.mode == MatrixMode::Formats) {
        const std::vector<std::string>& listed = matrixFormatIds();
        if (std::find(listed.begin(), listed.end(), formatId) != listed.end())
            next.formatId = formatId;
    } else {
        next.modelId = modelId;
    }
    m_choices->setSelection(next);
    refreshDetail();
    Q_EMIT refreshed();
}

void MainWindow::refresh()
{
    const Selection& s = selection();
    m_matrixPanel->setSelection(m_catalog, s);
    if (s.mode == MatrixMode::Formats)
        m_detailModel = s.modelId;
    else
        m_detailFormat = s.formatId;
    if (!contains(s.cardIds, m_detailCard))
        m_detailCard = s.cardIds.empty() ? std::string() : s.cardIds.back();
    m_matrixPanel->showCurrent(m_detailModel, m_detailFormat, m_detailCard);
    refreshDetail();
    // Saved as they change: a session killed without closing keeps its choices.
    if (m_options.useSettings)
        saveSettings();
    Q_EMIT refreshed();
}

void MainWindow::refreshDetail()
{
    m_detail->setCell(m_catalog, selection(), m_detailModel, m_detailFormat, m_detailCard);
}

void MainWindow::setDark(bool dark)
{
    if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance()))
        applyTheme(*app, dark);
    if (m_darkAction && m_darkAction->isChecked() != dark) {
        const QSignalBlocker block(m_darkAction);
        m_darkAction->setChecked(dark);
    }
    refresh();
    charts()->refreshTheme();
}

bool MainWindow::isDark() const
{
    return isDarkPalette();
}

void MainWindow::importModel(const QString& path)
{
    m_pendingImport = path;
    m_importer->import(path, m_catalog.profiles());
}

void MainWindow::openImportDialog()
{
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Import a model file"), QString(),
                                                      QStringLiteral("Model files (config.json *.json *.gguf *.safetensors);;All files (*)"));
    if (!path.isEmpty())
        importModel(path);
}

void MainWindow::openModelByNameDialog()
{
    bool ok = false;
    const QString name = QInputDialog::getText(
        this, QStringLiteral("Open model by name or URL"),
        QStringLiteral("A Hugging Face repo (ORG/NAME, hf://ORG/NAME:Q4_K_M), a GGUF URL (https://.../model.gguf) or an Ollama "
                       "model (NAME:TAG).\nLocal hub cache and Ollama store first; otherwise only the headers are read over HTTP "
                       "(HF_TOKEN, HF_ENDPOINT)."),
        QLineEdit::Normal, QString(), &ok);
    if (ok && !name.trimmed().isEmpty())
        importModel(name.trimmed());
}

void MainWindow::openImportFolderDialog()
{
    const QString path = QFileDialog::getExistingDirectory(this, QStringLiteral("Import a model folder"));
    if (!path.isEmpty())
        importModel(path);
}

ExportState MainWindow::exportState() const
{
    ExportState s;
    const Selection& sel = selection();
    const WhatFitsModel* matrix = matrixModel();
    const auto add = [&](const std::string& modelId, const std::string& formatId, const std::string& cardId, const PlanResult& plan) {
        if (auto request = requestFor(m_catalog, sel, modelId, formatId, cardId)) {
            s.requests.push_back(std::move(*request));
            s.plans.push_back(plan);
        }
    };
    for (int r = 0; r < matrix->rowCount(); ++r) {
        const MatrixRow* row = matrix->row(r);
        for (int c = WhatFitsModel::FixedColumnCount; c < matrix->columnCount(); ++c)
            if (const PlanResult* p = matrix->plan(matrix->index(r, c)))
                add(row->modelId, row->formatId, matrix->cardId(c), *p);
    }
    if (detailPlan() && !matrix->find(m_detailModel, m_detailFormat, m_detailCard).isValid())
        add(m_detailModel, m_detailFormat, m_detailCard, *detailPlan());
    return s;
}

bool MainWindow::exportReportTo(const QString& path, std::optional<ReportFormat> format, QString* error)
{
    if (!exportCapacityReport(path, exportState(), error, format))
        return false;
    statusBar()->showMessage(QStringLiteral("Wrote %1").arg(path));
    return true;
}

void MainWindow::exportReport()
{
    const QStringList filters = reportFileFilters();
    QString filter = filters.front();
    QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export capacity report"), QStringLiteral("headroom-report.pdf"),
                                                filters.join(QStringLiteral(";;")), &filter);
    if (path.isEmpty())
        return;
    // The extension decides; a name without a known one takes the chosen filter's.
    std::optional<ReportFormat> format = reportFormatForPath(path);
    if (!format) {
        format = reportFormatForFilter(filter).value_or(ReportFormat::Pdf);
        path += QLatin1Char('.') + reportExtension(*format);
    }
    QString error;
    if (!exportReportTo(path, format, &error))
        QMessageBox::warning(this, QStringLiteral("Export failed"), error);
}

void MainWindow::copyLaunchFlags(LaunchEngine engine)
{
    if (!detailPlan()) {
        statusBar()->showMessage(QStringLiteral("Choose a cell of the matrix first"));
        return;
    }
    const QString title = launchEngineTitle(engine);
    auto flags = launchFlagsFor(m_catalog, selection(), m_detailModel, m_detailFormat, m_detailCard, engine);
    if (!flags) {
        const QString message = QStringLiteral("No %1 launch flags: %2").arg(title, QString::fromStdString(flags.error()));
        statusBar()->showMessage(message);
        return;
    }
    QApplication::clipboard()->setText(QString::fromStdString(flags->command));
    statusBar()->showMessage(QStringLiteral("%1 launch flags copied: %2 users x %3 tokens%4")
                                 .arg(title, thousands(flags->point.users), thousands(flags->point.contextTokens),
                                      flags->point.lowered ? QStringLiteral(" (context lowered to what fits)") : QString()));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls() && !event->mimeData()->urls().isEmpty() && event->mimeData()->urls().front().isLocalFile())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.front().isLocalFile())
        return;
    if (LogPanel::looksLikeEngineLog(urls.front().toLocalFile()))
        openEngineLog(urls.front().toLocalFile());
    else
        importModel(urls.front().toLocalFile());
    event->acceptProposedAction();
}

void MainWindow::openEngineLog(const QString& path)
{
    m_log->show();
    m_log->raise();
    m_log->openFile(path);
}

void MainWindow::showEvent(QShowEvent* event)
{
    QMainWindow::showEvent(event);
    if (!m_splitSized)
        sizeSplitter();
}

void MainWindow::sizeSplitter()
{
    // The matrix gets the height of all its rows, up to 40 % of the window; the detail the rest.
    // On the Probes tab the matrix keeps a fifth (its header and a few rows, scrolling) and the
    // probe results table the rest (at 1280x800 it showed 3 rows beside a 40 % matrix).
    m_splitSized = true;
    m_probeSplit = detailTabs()->currentWidget() == probePanel();
    const int total = m_split->height();
    int top = std::min(m_matrixPanel->preferredHeight(), total * 2 / 5);
    if (m_probeSplit)
        top = std::min(top, total / 5);
    m_split->setSizes({top, total - top});
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (m_options.useSettings)
        saveSettings();
    QMainWindow::closeEvent(event);
}

void MainWindow::loadSettings()
{
    QSettings s;
    Selection& sel = m_initial;
    const auto str = [&](const char* key, std::string& out) {
        const QString v = s.value(QLatin1String(key)).toString();
        if (!v.isEmpty())
            out = v.toStdString();
    };
    str("selection/model", sel.modelId);
    str("selection/format", sel.formatId);
    str("selection/kvDtype", sel.kvDtypeId);
    str("selection/engine", sel.engineId);
    const QStringList cards = s.value(QStringLiteral("selection/cards")).toStringList();
    if (!cards.isEmpty()) {
        sel.cardIds.clear();
        for (const QString& c : cards) {
            if (!m_catalog.findCard(c.toStdString()))
                m_catalog.addSizedCard(c.toStdString());
            sel.cardIds.push_back(c.toStdString());
        }
    }
    sel.contextTokens = s.value(QStringLiteral("selection/context"), QVariant::fromValue<quint64>(sel.contextTokens)).toULongLong();
    sel.users = s.value(QStringLiteral("selection/users"), QVariant::fromValue<quint64>(sel.users)).toULongLong();
    m_ubatchFromSettings = s.contains(QStringLiteral("selection/ubatch"));
    sel.ubatchTokens = s.value(QStringLiteral("selection/ubatch"), QVariant::fromValue<quint64>(sel.ubatchTokens)).toULongLong();
    sel.mode = static_cast<MatrixMode>(s.value(QStringLiteral("selection/mode"), 0).toInt());
    // The host (the Choices panel's Host row): bytes and GB/s; absent or 0: not set.
    if (const quint64 ram = s.value(QStringLiteral("host/ramBytes"), 0).toULongLong(); ram > 0)
        sel.hostMemoryBytes = Bytes{ram};
    if (const double bw = s.value(QStringLiteral("host/bandwidthGBps"), 0.0).toDouble(); bw > 0)
        sel.hostBandwidthGBps = bw;
    m_recentImports = s.value(QStringLiteral("imports/recent")).toStringList();
    // An imported model chosen last time is read again from its path.
    if (!m_catalog.findModel(sel.modelId) && m_options.modelArg.empty() && m_recentImports.contains(QString::fromStdString(sel.modelId)))
        m_options.modelArg = sel.modelId;
    // No saved geometry (a first start): fill most of the screen, centred.
    if (!restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray()))
        if (const QScreen* shown = screen())
            setGeometry(defaultWindowGeometry(shown->availableGeometry()));
    // Dock state is restored once the docks exist, below in the event loop.
    const QByteArray state = s.value(QStringLiteral("window/state")).toByteArray();
    if (!state.isEmpty())
        QMetaObject::invokeMethod(this, [this, state] { restoreState(state); }, Qt::QueuedConnection);
}

void MainWindow::saveSettings() const
{
    QSettings s;
    const Selection& sel = selection();
    s.setValue(QStringLiteral("selection/model"), QString::fromStdString(sel.modelId));
    s.setValue(QStringLiteral("selection/format"), QString::fromStdString(sel.formatId));
    s.setValue(QStringLiteral("selection/kvDtype"), QString::fromStdString(sel.kvDtypeId));
    s.setValue(QStringLiteral("selection/engine"), QString::fromStdString(sel.engineId));
    QStringList cards;
    for (const std::string& c : sel.cardIds)
        if (m_catalog.findCard(c) && m_catalog.findCard(c)->source != "nvidia-smi on this machine")
            cards << QString::fromStdString(c);
    s.setValue(QStringLiteral("selection/cards"), cards);
    s.setValue(QStringLiteral("selection/context"), QVariant::fromValue<quint64>(sel.contextTokens));
    s.setValue(QStringLiteral("selection/users"), QVariant::fromValue<quint64>(sel.users));
    s.setValue(QStringLiteral("selection/ubatch"), QVariant::fromValue<quint64>(sel.ubatchTokens));
    s.setValue(QStringLiteral("selection/mode"), static_cast<int>(sel.mode));
    s.setValue(QStringLiteral("host/ramBytes"), QVariant::fromValue<quint64>(sel.hostMemoryBytes ? sel.hostMemoryBytes->value : 0));
    s.setValue(QStringLiteral("host/bandwidthGBps"), sel.hostBandwidthGBps.value_or(0.0));
    s.setValue(QStringLiteral("imports/recent"), m_recentImports);
    s.setValue(QStringLiteral("view/dark"), isDarkPalette());
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
}

QRect defaultWindowGeometry(const QRect& available)
{
    const QSize wanted(std::max(available.width() * 9 / 10, std::min(1280, available.width())),
                       std::max(available.height() * 9 / 10, std::min(800, available.height())));
    QRect geometry(QPoint(0, 0), wanted);
    geometry.moveCenter(available.center());
    return geometry;
}

bool saveScreenshot(QWidget& window, const QString& path)
{
    return window.grab().save(path, "PNG");
}

} // namespace headroom::app
