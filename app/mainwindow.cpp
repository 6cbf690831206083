#include "mainwindow.h"

#include "breakdownmodel.h"
#include "chartspanel.h"
#include "enginecomparisonmodel.h"
#include "formatting.h"
#include "gpudetector.h"
#include "memorybar.h"
#include "modelimporter.h"
#include "probebackend.h"
#include "probepanel.h"
#include "sliderentry.h"
#include "theme.h"
#include "whatfitsmodel.h"

#include "headroom/core/resolve.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QShowEvent>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>

namespace headroom::app {

namespace {

QString cardLabel(const Card& card)
{
    QString name = QString::fromStdString(card.anonymous || card.name.empty() ? card.id : card.name);
    name.remove(QStringLiteral("NVIDIA ")).remove(QStringLiteral("GeForce "));
    return QStringLiteral("%1 (%2)").arg(name, bytesText(card.totalBytes));
}

QString modelLabel(const ModelProfile& m)
{
    return QString::fromStdString(m.name.empty() ? m.id : m.name);
}

void setCombo(QComboBox* combo, const std::string& id)
{
    const int i = combo->findData(QString::fromStdString(id));
    if (i >= 0)
        combo->setCurrentIndex(i);
}

std::string comboId(const QComboBox* combo)
{
    return combo->currentData().toString().toStdString();
}

} // namespace

MainWindow::MainWindow(Catalog catalog, Options options, QWidget* parent)
    : QMainWindow(parent)
    , m_catalog(std::move(catalog))
    , m_options(std::move(options))
    , m_selection(Selection::defaults())
{
    setWindowTitle(QStringLiteral("Headroom: what fits on a GPU"));
    setObjectName(QStringLiteral("HeadroomMainWindow"));
    setAcceptDrops(true);
    if (!m_options.probeBackend)
        m_options.probeBackend = createProbeBackend();

    m_importer = new ModelImporter(this);
    m_gpus = new GpuDetector(this);

    if (m_options.useSettings)
        loadSettings();
    if (!m_catalog.findModel(m_selection.modelId))
        m_selection.modelId = m_catalog.modelIds().empty() ? std::string() : m_catalog.modelIds().front();
    std::erase_if(m_selection.cardIds, [&](const std::string& id) { return !m_catalog.findCard(id); });
    if (!m_catalog.findEngine(m_selection.engineId) && !m_catalog.profiles().engines.empty())
        m_selection.engineId = m_catalog.profiles().engines.front().id;
    // The micro-batch starts at the engine's own (vLLM max_num_batched_tokens, llama.cpp ubatch),
    // as the CLI does, unless the person chose one before.
    if (!m_ubatchFromSettings)
        if (const EnginePolicy* e = m_catalog.findEngine(m_selection.engineId); e && e->ubatchTokens > 0)
            m_selection.ubatchTokens = e->ubatchTokens;

    buildControls();
    buildCentral();
    buildMenus();
    statusBar()->showMessage(QStringLiteral("Drop a config.json, a model folder or a .gguf on the window to import it"));

    connect(m_importer, &ModelImporter::imported, this, [this](const ModelProfile& model) {
        m_catalog.addImportedModel(model);
        m_importStatus->setText(QStringLiteral("Imported %1").arg(QString::fromStdString(model.name.empty() ? model.id : model.name)));
        m_selection.modelId = model.id;
        if (auto f = resolveFormat("", model))
            m_selection.formatId = f->id;
        m_detailModel = model.id;
        m_detailFormat = m_selection.formatId;
        fillModelCombo();
        syncControls();
        updateContextRange();
        refresh();
    });
    connect(m_importer, &ModelImporter::failed, this, [this](const QString& path, const QString& message) {
        m_importStatus->setText(QStringLiteral("Could not import %1").arg(path));
        m_importStatus->setToolTip(message);
        statusBar()->showMessage(message);
    });
    connect(m_importer, &ModelImporter::busyChanged, this, [this](bool busy) {
        if (busy)
            m_importStatus->setText(QStringLiteral("Reading the model's files..."));
    });
    connect(m_gpus, &GpuDetector::detected, this, [this](const std::vector<Card>& cards) {
        if (cards.empty())
            return;
        m_catalog.setDetectedCards(cards);
        fillCardList();
        statusBar()->showMessage(QStringLiteral("Detected %1 GPU(s) on this machine").arg(cards.size()));
    });

    m_detailModel = m_selection.modelId;
    m_detailFormat = m_selection.formatId;
    m_detailCard = m_selection.cardIds.empty() ? std::string() : m_selection.cardIds.back();
    syncControls();
    updateContextRange();
    refresh();

    if (m_options.detectGpus)
        m_gpus->start(m_catalog.profiles());
    if (!m_options.modelArg.empty()) {
        if (m_catalog.findModel(m_options.modelArg)) {
            m_selection.modelId = m_options.modelArg;
            m_detailModel = m_options.modelArg;
            syncControls();
            updateContextRange();
            refresh();
        } else {
            importModel(QString::fromStdString(m_options.modelArg));
        }
    }
}

MainWindow::~MainWindow() = default;

void MainWindow::buildControls()
{
    auto* panel = new QWidget;
    auto* form = new QVBoxLayout(panel);
    form->setContentsMargins(8, 8, 8, 8);
    form->setSpacing(6);

    auto* grid = new QFormLayout;
    grid->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    grid->setRowWrapPolicy(QFormLayout::WrapLongRows);
    m_modelCombo = new QComboBox;
    m_modelCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_modelCombo->setMinimumContentsLength(16);
    fillModelCombo();
    auto* importButton = new QPushButton(QStringLiteral("&Import..."));
    importButton->setToolTip(QStringLiteral("Read a config.json, a model directory, a .safetensors or a .gguf file"));
    auto* modelRow = new QHBoxLayout;
    modelRow->addWidget(m_modelCombo, 1);
    modelRow->addWidget(importButton);
    auto* modelLabelW = new QLabel(QStringLiteral("&Model"));
    modelLabelW->setBuddy(m_modelCombo);
    grid->addRow(modelLabelW, modelRow);
    m_importStatus = new QLabel;
    m_importStatus->setWordWrap(true);
    grid->addRow(m_importStatus);

    m_formatCombo = new QComboBox;
    for (const WeightFormat& f : builtinFormats())
        m_formatCombo->addItem(QStringLiteral("%1  (%2 bpw)").arg(QString::fromStdString(f.id)).arg(f.bitsPerWeight(), 0, 'f', 3),
                               QString::fromStdString(f.id));
    m_formatCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    grid->addRow(QStringLiteral("&Weights"), m_formatCombo);
    m_kvCombo = new QComboBox;
    for (const KvDtype& k : builtinKvDtypes())
        m_kvCombo->addItem(QStringLiteral("%1  (%2 B/value)").arg(QString::fromStdString(k.id)).arg(k.bytesPerValue(), 0, 'g', 5),
                           QString::fromStdString(k.id));
    grid->addRow(QStringLiteral("&KV cache"), m_kvCombo);
    m_engineCombo = new QComboBox;
    for (const EnginePolicy& e : m_catalog.profiles().engines) {
        m_engineCombo->addItem(QString::fromStdString(e.name), QString::fromStdString(e.id));
        m_engineCombo->setItemData(m_engineCombo->count() - 1, explainPolicy(e), Qt::ToolTipRole);
    }
    grid->addRow(QStringLiteral("&Engine"), m_engineCombo);
    m_modeCombo = new QComboBox;
    m_modeCombo->addItem(QStringLiteral("Weight formats x cards"), static_cast<int>(MatrixMode::Formats));
    m_modeCombo->addItem(QStringLiteral("Models x cards"), static_cast<int>(MatrixMode::Models));
    grid->addRow(QStringLiteral("&Rows"), m_modeCombo);
    form->addLayout(grid);

    m_context = new SliderEntry(QStringLiteral("&Context per user (tokens)"), 256, 131072, m_selection.contextTokens);
    m_users = new SliderEntry(QStringLiteral("Concurrent &users"), 1, 1024, m_selection.users);
    m_ubatch = new SliderEntry(QStringLiteral("Micro-&batch (tokens)"), 16, 16384, m_selection.ubatchTokens);
    form->addWidget(m_context);
    form->addWidget(m_users);
    form->addWidget(m_ubatch);

    auto* cardsLabel = new QLabel(QStringLiteral("C&ards"));
    m_cardList = new QListWidget;
    m_cardList->setObjectName(QStringLiteral("CardList"));
    m_cardList->setAccessibleName(QStringLiteral("Cards"));
    cardsLabel->setBuddy(m_cardList);
    fillCardList();
    m_sizeEdit = new QLineEdit;
    m_sizeEdit->setPlaceholderText(QStringLiteral("add a card by size: 12GiB"));
    m_sizeEdit->setAccessibleName(QStringLiteral("Add a card by size"));
    form->addWidget(cardsLabel);
    form->addWidget(m_cardList, 1);
    form->addWidget(m_sizeEdit);

    auto* dock = new QDockWidget(QStringLiteral("Choices"), this);
    dock->setObjectName(QStringLiteral("ChoicesDock"));
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    dock->setWidget(panel);
    addDockWidget(Qt::LeftDockWidgetArea, dock);
    panel->setMinimumWidth(280);

    connect(importButton, &QPushButton::clicked, this, &MainWindow::openImportDialog);
    for (QComboBox* combo : {m_modelCombo, m_formatCombo, m_kvCombo, m_engineCombo, m_modeCombo})
        connect(combo, &QComboBox::currentIndexChanged, this, [this, combo] {
            if (m_syncing)
                return;
            readControls();
            if (combo == m_modelCombo)
                updateContextRange();
            if (combo == m_modelCombo || combo == m_formatCombo) {
                m_detailModel = m_selection.modelId;
                m_detailFormat = m_selection.formatId;
            }
            refresh();
        });
    for (SliderEntry* s : {m_context, m_users, m_ubatch})
        connect(s, &SliderEntry::valueChanged, this, [this] {
            if (m_syncing)
                return;
            readControls();
            refresh();
        });
    connect(m_cardList, &QListWidget::itemChanged, this, [this] {
        if (m_syncing)
            return;
        readControls();
        if (std::find(m_selection.cardIds.begin(), m_selection.cardIds.end(), m_detailCard) == m_selection.cardIds.end())
            m_detailCard = m_selection.cardIds.empty() ? std::string() : m_selection.cardIds.back();
        refresh();
    });
    connect(m_sizeEdit, &QLineEdit::returnPressed, this, [this] {
        const std::string text = m_sizeEdit->text().trimmed().toStdString();
        if (!m_catalog.addSizedCard(text)) {
            statusBar()->showMessage(QStringLiteral("Not a size: %1 (try 12GiB, 24GB or 16384MiB)").arg(m_sizeEdit->text()));
            return;
        }
        if (std::find(m_selection.cardIds.begin(), m_selection.cardIds.end(), text) == m_selection.cardIds.end())
            m_selection.cardIds.push_back(text);
        m_sizeEdit->clear();
        fillCardList();
        refresh();
    });
}

void MainWindow::buildCentral()
{
    m_matrix = new WhatFitsModel(this);
    m_matrixView = new QTableView;
    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(m_matrix);
    proxy->setSortRole(WhatFitsModel::RawRole);
    m_matrixView->setModel(proxy);
    m_matrixView->setSortingEnabled(false);
    m_matrixView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_matrixView->setSelectionBehavior(QAbstractItemView::SelectItems);
    m_matrixView->verticalHeader()->hide();
    m_matrixView->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_matrixView->horizontalHeader()->setSectionResizeMode(WhatFitsModel::Name, QHeaderView::ResizeToContents);
    m_matrixView->horizontalHeader()->setSectionResizeMode(WhatFitsModel::Weights, QHeaderView::ResizeToContents);
    m_matrixView->setWordWrap(false);
    m_matrixView->setTextElideMode(Qt::ElideRight);
    m_matrixView->setAccessibleName(QStringLiteral("What fits"));
    m_matrixView->verticalHeader()->setDefaultSectionSize(m_matrixView->fontMetrics().height() + 8);
    m_matrixCaption = new QLabel;
    m_matrixCaption->setWordWrap(true);

    const auto onCell = [this, proxy](const QModelIndex& proxyIndex) {
        const QModelIndex index = proxy->mapToSource(proxyIndex);
        const MatrixRow* row = m_matrix->row(index.row());
        if (!row)
            return;
        std::string card = m_matrix->cardId(index.column());
        if (card.empty())
            card = m_detailCard;
        if (row->modelId == m_detailModel && row->formatId == m_detailFormat && card == m_detailCard)
            return;
        setDetail(row->modelId, row->formatId, card);
    };
    connect(m_matrixView, &QTableView::clicked, this, onCell);
    connect(m_matrixView->selectionModel(), &QItemSelectionModel::currentChanged, this, onCell);

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

    m_tabs = new QTabWidget;
    m_charts = new ChartsPanel;
    m_tabs->addTab(m_charts, QStringLiteral("&Plots"));

    m_breakdown = new BreakdownModel(this);
    auto* billView = new QTableView;
    auto* billProxy = new QSortFilterProxyModel(this);
    billProxy->setSourceModel(m_breakdown);
    billProxy->setSortRole(BreakdownModel::RawRole);
    billView->setModel(billProxy);
    billView->verticalHeader()->hide();
    billView->verticalHeader()->setDefaultSectionSize(billView->fontMetrics().height() + 8);
    billView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    billView->horizontalHeader()->setStretchLastSection(true);
    billView->setAlternatingRowColors(true);
    m_tabs->addTab(billView, QStringLiteral("Memory &bill"));

    m_engines = new EngineComparisonModel(this);
    auto* engineView = new QTableView;
    auto* engineProxy = new QSortFilterProxyModel(this);
    engineProxy->setSourceModel(m_engines);
    engineProxy->setSortRole(EngineComparisonModel::RawRole);
    engineView->setModel(engineProxy);
    engineView->setSortingEnabled(true);
    engineView->sortByColumn(-1, Qt::AscendingOrder);
    engineView->verticalHeader()->hide();
    engineView->verticalHeader()->setDefaultSectionSize(engineView->fontMetrics().height() + 8);
    engineView->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    engineView->horizontalHeader()->setSectionResizeMode(EngineComparisonModel::Engine, QHeaderView::ResizeToContents);
    // The binding limit of each engine is in the text below (and the Engine column's tooltip).
    engineView->setColumnHidden(EngineComparisonModel::Limit, true);
    engineView->setAlternatingRowColors(true);
    m_engineWhy = new QTextBrowser;
    m_engineWhy->setOpenLinks(false);
    auto* engineSplit = new QSplitter(Qt::Vertical);
    engineSplit->addWidget(engineView);
    engineSplit->addWidget(m_engineWhy);
    engineSplit->setStretchFactor(0, 3);
    engineSplit->setStretchFactor(1, 2);
    engineSplit->setSizes({260, 160});
    m_tabs->addTab(engineSplit, QStringLiteral("E&ngines compared"));

    m_probePanel = new ProbePanel(m_options.probeBackend);
    m_tabs->addTab(m_probePanel, QStringLiteral("Pr&obes"));
    connect(m_probePanel, &ProbePanel::measuredSpeed, this, [this](const std::vector<std::pair<std::uint64_t, double>>& points) {
        std::vector<MeasuredSpeed> m;
        for (const auto& [batch, tps] : points)
            m.push_back({batch, tps});
        m_charts->setMeasured(std::move(m));
    });

    auto* top = new QWidget;
    auto* topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(6, 6, 6, 0);
    topLayout->addWidget(m_matrixCaption);
    topLayout->addWidget(m_matrixView, 1);
    auto* detail = new QWidget;
    auto* detailLayout = new QVBoxLayout(detail);
    detailLayout->setContentsMargins(6, 4, 6, 6);
    detailLayout->addWidget(m_title);
    detailLayout->addWidget(m_limits);
    detailLayout->addWidget(m_bar);
    detailLayout->addWidget(m_tabs, 1);
    auto* split = new QSplitter(Qt::Vertical);
    m_split = split;
    split->setObjectName(QStringLiteral("MainSplitter"));
    split->addWidget(top);
    split->addWidget(detail);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 5);
    split->setChildrenCollapsible(false);
    setCentralWidget(split);
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
    QAction* import = file->addAction(QStringLiteral("&Import model..."), this, &MainWindow::openImportDialog);
    import->setShortcut(QKeySequence::Open);
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

    QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
    m_darkAction = view->addAction(QStringLiteral("&Dark palette"));
    m_darkAction->setCheckable(true);
    m_darkAction->setChecked(isDarkPalette());
    m_darkAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
    connect(m_darkAction, &QAction::toggled, this, &MainWindow::setDark);
    view->addSeparator();
    QAction* focusMatrix = view->addAction(QStringLiteral("Go to the &matrix"), this, [this] { m_matrixView->setFocus(); });
    focusMatrix->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
    QAction* focusChoices = view->addAction(QStringLiteral("Go to the &choices"), this, [this] { m_modelCombo->setFocus(); });
    focusChoices->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_2));
    QAction* focusDetail = view->addAction(QStringLiteral("Go to the &detail tabs"), this, [this] { m_tabs->setFocus(); });
    focusDetail->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_3));
}

void MainWindow::fillModelCombo()
{
    const QSignalBlocker block(m_modelCombo);
    m_modelCombo->clear();
    for (const std::string& id : m_catalog.modelIds()) {
        const ModelProfile* m = m_catalog.findModel(id);
        m_modelCombo->addItem(modelLabel(*m), QString::fromStdString(id));
        m_modelCombo->setItemData(m_modelCombo->count() - 1,
                                  QStringLiteral("%1\n%2").arg(QString::fromStdString(id), QString::fromStdString(m->source)),
                                  Qt::ToolTipRole);
    }
    setCombo(m_modelCombo, m_selection.modelId);
}

void MainWindow::fillCardList()
{
    const bool wasSyncing = m_syncing;
    m_syncing = true;
    m_cardList->clear();
    for (const Card* card : m_catalog.allCards()) {
        QString text = cardLabel(*card);
        if (card->id.rfind("gpu", 0) == 0 && card->source == "nvidia-smi on this machine")
            text = QStringLiteral("This machine: ") + text;
        auto* item = new QListWidgetItem(text, m_cardList);
        item->setData(Qt::UserRole, QString::fromStdString(card->id));
        item->setToolTip(QStringLiteral("%1\n%2 B driver total%3")
                             .arg(QString::fromStdString(card->id), thousands(card->totalBytes.value),
                                  card->bandwidthGBps > 0 ? QStringLiteral(", %1 GB/s").arg(card->bandwidthGBps) : QString()));
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        const bool on = std::find(m_selection.cardIds.begin(), m_selection.cardIds.end(), card->id) != m_selection.cardIds.end();
        item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
    }
    m_syncing = wasSyncing;
}

void MainWindow::syncControls()
{
    m_syncing = true;
    setCombo(m_modelCombo, m_selection.modelId);
    setCombo(m_formatCombo, m_selection.formatId);
    setCombo(m_kvCombo, m_selection.kvDtypeId);
    setCombo(m_engineCombo, m_selection.engineId);
    m_modeCombo->setCurrentIndex(m_modeCombo->findData(static_cast<int>(m_selection.mode)));
    m_context->setValue(m_selection.contextTokens);
    m_users->setValue(m_selection.users);
    m_ubatch->setValue(m_selection.ubatchTokens);
    m_syncing = false;
}

void MainWindow::readControls()
{
    m_selection.modelId = comboId(m_modelCombo);
    m_selection.formatId = comboId(m_formatCombo);
    m_selection.kvDtypeId = comboId(m_kvCombo);
    const std::string engineBefore = m_selection.engineId;
    m_selection.engineId = comboId(m_engineCombo);
    if (m_selection.engineId != engineBefore) {
        // A new engine brings its own micro-batch.
        if (const EnginePolicy* e = m_catalog.findEngine(m_selection.engineId); e && e->ubatchTokens > 0) {
            m_syncing = true;
            m_ubatch->setValue(e->ubatchTokens);
            m_syncing = false;
        }
    }
    m_selection.mode = static_cast<MatrixMode>(m_modeCombo->currentData().toInt());
    m_selection.contextTokens = m_context->value();
    m_selection.users = m_users->value();
    m_selection.ubatchTokens = m_ubatch->value();
    std::vector<std::string> cards;
    for (int i = 0; i < m_cardList->count(); ++i)
        if (m_cardList->item(i)->checkState() == Qt::Checked)
            cards.push_back(m_cardList->item(i)->data(Qt::UserRole).toString().toStdString());
    // Keep the order the person chose them in; new ones go last.
    std::vector<std::string> ordered;
    for (const std::string& id : m_selection.cardIds)
        if (std::find(cards.begin(), cards.end(), id) != cards.end())
            ordered.push_back(id);
    for (const std::string& id : cards)
        if (std::find(ordered.begin(), ordered.end(), id) == ordered.end())
            ordered.push_back(id);
    m_selection.cardIds = ordered;
}

void MainWindow::updateContextRange()
{
    const ModelProfile* model = m_catalog.findModel(m_selection.modelId);
    std::uint64_t max = 131072;
    if (model && model->architecture && model->architecture->contextLength > 0)
        max = std::max<std::uint64_t>(model->architecture->contextLength, 4096);
    const bool wasSyncing = m_syncing;
    m_syncing = true;
    m_context->setRange(256, max);
    m_syncing = wasSyncing;
    m_selection.contextTokens = m_context->value();
}

void MainWindow::setMatrixMode(MatrixMode mode)
{
    m_modeCombo->setCurrentIndex(m_modeCombo->findData(static_cast<int>(mode)));
}

void MainWindow::setDetail(const std::string& modelId, const std::string& formatId, const std::string& cardId)
{
    m_detailModel = modelId;
    m_detailFormat = formatId;
    m_detailCard = cardId;
    // The choices follow the cell, without rebuilding the matrix.
    m_syncing = true;
    if (m_selection.mode == MatrixMode::Formats) {
        m_selection.formatId = formatId;
        setCombo(m_formatCombo, formatId);
    } else {
        m_selection.modelId = modelId;
        setCombo(m_modelCombo, modelId);
    }
    m_syncing = false;
    refreshDetail();
    Q_EMIT refreshed();
}

void MainWindow::refresh()
{
    // Rows: the chosen model's formats, or every model in the chosen format.
    std::vector<std::string> cardIds = m_selection.cardIds;
    std::vector<QString> labels;
    for (const std::string& id : cardIds)
        labels.push_back(cardLabel(*m_catalog.findCard(id)));
    m_matrix->setMatrix(computeMatrix(m_catalog, m_selection), cardIds, labels, m_selection.contextTokens);
    const EnginePolicy* engine = m_catalog.findEngine(m_selection.engineId);
    m_matrixCaption->setToolTip(QStringLiteral("\"does not fit: weights X > Y\": the weights alone exceed Y, the memory the engine "
                                               "lets the model use on that card (its usable bytes)"));
    m_matrixCaption->setText(
        QStringLiteral("<b>What fits</b>: max context per user for %1 users, %2 KV, %3. "
                       "<span style='background:%4'>&nbsp;reaches %5 tokens&nbsp;</span> "
                       "<span style='background:%6'>&nbsp;fits with less&nbsp;</span> "
                       "<span style='background:%7'>&nbsp;does not fit&nbsp;</span>")
            .arg(thousands(m_selection.users), QString::fromStdString(m_selection.kvDtypeId),
                 engine ? QString::fromStdString(engine->name) : QString(), fitColor(Fit::Reaches).name(),
                 thousands(m_selection.contextTokens), fitColor(Fit::Short).name(), fitColor(Fit::NoRoom).name()));
    if (m_selection.mode == MatrixMode::Formats)
        m_detailModel = m_selection.modelId;
    else
        m_detailFormat = m_selection.formatId;
    if (std::find(cardIds.begin(), cardIds.end(), m_detailCard) == cardIds.end())
        m_detailCard = cardIds.empty() ? std::string() : cardIds.back();
    auto* proxy = static_cast<QSortFilterProxyModel*>(m_matrixView->model());
    const QModelIndex current = proxy->mapFromSource(m_matrix->find(m_detailModel, m_detailFormat, m_detailCard));
    {
        const QSignalBlocker block(m_matrixView->selectionModel());
        m_matrixView->selectionModel()->setCurrentIndex(current, QItemSelectionModel::ClearAndSelect);
    }
    if (current.isValid())
        m_matrixView->scrollTo(current);
    refreshDetail();
    Q_EMIT refreshed();
}

void MainWindow::refreshDetail()
{
    m_detailPlan.reset();
    const std::uint64_t users = m_selection.users;
    const std::uint64_t context = m_selection.contextTokens;
    auto plan = m_detailCard.empty() ? tl::expected<PlanResult, std::string>(tl::unexpected(std::string("no card chosen")))
                                     : planFor(m_catalog, m_selection, m_detailModel, m_detailFormat, m_detailCard);
    std::vector<CardPlan> cardPlans;
    for (const std::string& id : m_selection.cardIds) {
        auto p = planFor(m_catalog, m_selection, m_detailModel, m_detailFormat, id);
        if (p)
            cardPlans.push_back({*m_catalog.findCard(id), std::move(*p)});
    }
    m_charts->setPlans(std::move(cardPlans), users, context);
    if (!plan) {
        m_title->setText(QStringLiteral("No detail: %1").arg(QString::fromStdString(plan.error())));
        m_limits->clear();
        m_bar->setSegments({}, Bytes{});
        m_breakdown->clear();
        m_engines->setRows({});
        m_engineWhy->clear();
        m_probePanel->clearPlan();
        return;
    }
    m_detailPlan = *plan;
    const PlanResult& p = *plan;
    const Card* card = m_catalog.findCard(m_detailCard);
    const EnginePolicy* engine = m_catalog.findEngine(m_selection.engineId);
    m_title->setText(QStringLiteral("%1 in %2 with %3 KV on %4 under %5")
                         .arg(QString::fromStdString(p.modelId), QString::fromStdString(p.formatId),
                              QString::fromStdString(p.kvDtypeId), cardLabel(*card),
                              engine ? QString::fromStdString(engine->name) : QString::fromStdString(p.engineId)));
    const QString verdict = WhatFitsModel::fitOf(plan, context) == Fit::Reaches ? QStringLiteral("fits") : QStringLiteral("does not fit");
    m_limits->setText(QStringLiteral("%1 users x %2 tokens: <b>%3</b>. Max context for %1 users: <b>%4</b>; max users at %2 "
                                     "tokens: <b>%5</b>; max resident tokens: <b>%6</b> (%7 B/token). Weights %8, KV budget %9.")
                          .arg(thousands(users), thousands(context), verdict, thousands(p.maxContext.value_or(0)),
                               thousands(p.maxUsers.value_or(0)), thousands(p.maxResidentTokens),
                               thousands(p.kvBytesPerToken.value), bytesText(p.weightsBytes), bytesText(p.kvBudgetBytes)));
    m_limits->setToolTip(QString::fromStdString(p.reason));
    m_breakdown->setPlan(p, users, context);
    m_bar->setSegments(m_breakdown->segments(), p.cardTotalBytes);

    auto rows = compareEngines(m_catalog, m_selection, m_detailModel, m_detailFormat, m_detailCard);
    QString why = QStringLiteral("<p>The same model, format and card under each engine's own memory rule. They differ in "
                                 "how much of the card they take (a fraction of the total, or the total less a fixed reserve), "
                                 "what they subtract before the KV cache (profiled activation peak, runtime, CUDA graphs), "
                                 "and how they page the cache (blocks per sequence, or padded cells).</p><ul>");
    for (const EngineRow& r : rows) {
        why += QStringLiteral("<li><b>%1</b>: %2").arg(QString::fromStdString(r.policy.name).toHtmlEscaped(), explainPolicy(r.policy).toHtmlEscaped());
        if (r.plan)
            why += QStringLiteral(". <i>%1</i>").arg(QString::fromStdString(r.plan->reason).toHtmlEscaped());
        why += QStringLiteral("</li>");
    }
    why += QStringLiteral("</ul>");
    m_engineWhy->setHtml(why);
    m_engines->setRows(std::move(rows));
    if (auto request = requestFor(m_catalog, m_selection, m_detailModel, m_detailFormat, m_detailCard))
        m_probePanel->setPlan(p, *request);
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
    m_charts->refreshTheme();
}

bool MainWindow::isDark() const
{
    return isDarkPalette();
}

void MainWindow::importModel(const QString& path)
{
    m_importer->import(path, m_catalog.profiles());
}

void MainWindow::openImportDialog()
{
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Import a model"), QString(),
                                                      QStringLiteral("Model files (config.json *.json *.gguf *.safetensors);;All files (*)"));
    if (!path.isEmpty())
        importModel(path);
}

ExportState MainWindow::exportState() const
{
    ExportState s;
    const auto add = [&](const std::string& modelId, const std::string& formatId, const std::string& cardId, const PlanResult& plan) {
        if (auto request = requestFor(m_catalog, m_selection, modelId, formatId, cardId)) {
            s.requests.push_back(std::move(*request));
            s.plans.push_back(plan);
        }
    };
    for (int r = 0; r < m_matrix->rowCount(); ++r) {
        const MatrixRow* row = m_matrix->row(r);
        for (int c = WhatFitsModel::FixedColumnCount; c < m_matrix->columnCount(); ++c)
            if (const PlanResult* p = m_matrix->plan(m_matrix->index(r, c)))
                add(row->modelId, row->formatId, m_matrix->cardId(c), *p);
    }
    if (m_detailPlan && !m_matrix->find(m_detailModel, m_detailFormat, m_detailCard).isValid())
        add(m_detailModel, m_detailFormat, m_detailCard, *m_detailPlan);
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
    QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export capacity report"), QStringLiteral("headroom-report.json"),
                                                filters.join(QStringLiteral(";;")), &filter);
    if (path.isEmpty())
        return;
    // The extension decides; a name without a known one takes the chosen filter's.
    std::optional<ReportFormat> format = reportFormatForPath(path);
    if (!format) {
        format = reportFormatForFilter(filter).value_or(ReportFormat::Json);
        path += QLatin1Char('.') + reportExtension(*format);
    }
    QString error;
    if (!exportReportTo(path, format, &error))
        QMessageBox::warning(this, QStringLiteral("Export failed"), error);
}

void MainWindow::copyLaunchFlags(LaunchEngine engine)
{
    if (!m_detailPlan) {
        statusBar()->showMessage(QStringLiteral("Choose a cell of the matrix first"));
        return;
    }
    const QString title = launchEngineTitle(engine);
    auto flags = launchFlagsFor(m_catalog, m_selection, m_detailModel, m_detailFormat, m_detailCard, engine);
    if (!flags) {
        statusBar()->showMessage(QStringLiteral("No %1 launch flags: %2").arg(title, QString::fromStdString(flags.error())));
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
    importModel(urls.front().toLocalFile());
    event->acceptProposedAction();
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
    m_splitSized = true;
    const int rows = std::max(m_matrix->rowCount(), 4);
    const int wanted = m_matrixCaption->sizeHint().height() + m_matrixView->horizontalHeader()->height()
                       + rows * m_matrixView->verticalHeader()->defaultSectionSize() + 16;
    const int total = m_split->height();
    const int top = std::min(wanted, total * 2 / 5);
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
    const auto str = [&](const char* key, std::string& out) {
        const QString v = s.value(QLatin1String(key)).toString();
        if (!v.isEmpty())
            out = v.toStdString();
    };
    str("selection/model", m_selection.modelId);
    str("selection/format", m_selection.formatId);
    str("selection/kvDtype", m_selection.kvDtypeId);
    str("selection/engine", m_selection.engineId);
    const QStringList cards = s.value(QStringLiteral("selection/cards")).toStringList();
    if (!cards.isEmpty()) {
        m_selection.cardIds.clear();
        for (const QString& c : cards) {
            if (!m_catalog.findCard(c.toStdString()))
                m_catalog.addSizedCard(c.toStdString());
            m_selection.cardIds.push_back(c.toStdString());
        }
    }
    m_selection.contextTokens = s.value(QStringLiteral("selection/context"), QVariant::fromValue<quint64>(m_selection.contextTokens)).toULongLong();
    m_selection.users = s.value(QStringLiteral("selection/users"), QVariant::fromValue<quint64>(m_selection.users)).toULongLong();
    m_ubatchFromSettings = s.contains(QStringLiteral("selection/ubatch"));
    m_selection.ubatchTokens = s.value(QStringLiteral("selection/ubatch"), QVariant::fromValue<quint64>(m_selection.ubatchTokens)).toULongLong();
    m_selection.mode = static_cast<MatrixMode>(s.value(QStringLiteral("selection/mode"), 0).toInt());
    restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    // Dock state is restored once the docks exist (after buildControls), below in the event loop.
    const QByteArray state = s.value(QStringLiteral("window/state")).toByteArray();
    if (!state.isEmpty())
        QMetaObject::invokeMethod(this, [this, state] { restoreState(state); }, Qt::QueuedConnection);
}

void MainWindow::saveSettings() const
{
    QSettings s;
    s.setValue(QStringLiteral("selection/model"), QString::fromStdString(m_selection.modelId));
    s.setValue(QStringLiteral("selection/format"), QString::fromStdString(m_selection.formatId));
    s.setValue(QStringLiteral("selection/kvDtype"), QString::fromStdString(m_selection.kvDtypeId));
    s.setValue(QStringLiteral("selection/engine"), QString::fromStdString(m_selection.engineId));
    QStringList cards;
    for (const std::string& c : m_selection.cardIds)
        if (m_catalog.findCard(c) && m_catalog.findCard(c)->source != "nvidia-smi on this machine")
            cards << QString::fromStdString(c);
    s.setValue(QStringLiteral("selection/cards"), cards);
    s.setValue(QStringLiteral("selection/context"), QVariant::fromValue<quint64>(m_selection.contextTokens));
    s.setValue(QStringLiteral("selection/users"), QVariant::fromValue<quint64>(m_selection.users));
    s.setValue(QStringLiteral("selection/ubatch"), QVariant::fromValue<quint64>(m_selection.ubatchTokens));
    s.setValue(QStringLiteral("selection/mode"), static_cast<int>(m_selection.mode));
    s.setValue(QStringLiteral("view/dark"), isDarkPalette());
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
}

bool saveScreenshot(QWidget& window, const QString& path)
{
    return window.grab().save(path, "PNG");
}

} // namespace headroom::app
