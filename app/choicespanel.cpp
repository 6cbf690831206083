#include "choicespanel.h"

#include "headroom/core/speed/hostbandwidth.h"
#include "headroom/core/speed/splitspeed.h"
#include "headroom/core/stores/localstores.h"
#include "headroom/core/units.h"

#include "enginecomparisonmodel.h"
#include "formatting.h"
#include "sliderentry.h"

#include <QComboBox>
#include <QCompleter>
#include <QFormLayout>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPalette>
#include <QPushButton>
#include <QSignalBlocker>
#include <QStringList>
#include <QVBoxLayout>

#include <algorithm>

namespace headroom::app {

namespace {

void setCombo(QComboBox* combo, const std::string& id)
{
    const int i = combo->findData(QString::fromStdString(id));
    if (i >= 0)
        combo->setCurrentIndex(i);
}

std::string comboId(const QComboBox* combo) { return combo->currentData().toString().toStdString(); }

QLabel* messageLabel()
{
    auto* label = new QLabel;
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->hide();
    return label;
}

} // namespace

QString cardLabel(const Card& card)
{
    QString name = QString::fromStdString(card.anonymous || card.name.empty() ? card.id : card.name);
    name.remove(QStringLiteral("NVIDIA ")).remove(QStringLiteral("GeForce "));
    // A card without a public driver-reported total says so (Card::totalEstimated, profiles/cards).
    if (card.totalEstimated)
        return QStringLiteral("%1 (%2, estimated)").arg(name, bytesText(card.totalBytes));
    return QStringLiteral("%1 (%2)").arg(name, bytesText(card.totalBytes));
}

QString modelLabel(const ModelProfile& m) { return QString::fromStdString(m.name.empty() ? m.id : m.name); }

/// The store a local model was found in and its name there ("hf-cache ORG/NAME@REV"), from the
/// profile's source as core's localModelProfile writes it; empty for anything else.
static QString localStoreOrigin(const ModelProfile& m)
{
    for (LocalStoreKind kind : {LocalStoreKind::HubCache, LocalStoreKind::Ollama, LocalStoreKind::LmStudio, LocalStoreKind::Folder}) {
        const std::string prefix = std::string(localStoreKindName(kind)) + " ";
        if (m.source.rfind(prefix, 0) != 0)
            continue;
        const std::size_t nameEnd = m.source.find(' ', prefix.size());
        return QString::fromStdString(m.source.substr(0, nameEnd));
    }
    return {};
}

QString modelToolTip(const ModelProfile& m)
{
    // Imports carry their files' content hash, local-store models their store; built-in profiles neither.
    const QString origin = localStoreOrigin(m);
    if (!origin.isEmpty())
        return QStringLiteral("%1\n%2\nread from %3").arg(modelLabel(m), origin, QString::fromStdString(m.id));
    if (!m.contentHash.empty())
        return QStringLiteral("%1\nread from %2").arg(modelLabel(m), QString::fromStdString(m.id));
    return QStringLiteral("%1\nbuilt-in profile '%2'").arg(modelLabel(m), QString::fromStdString(m.id));
}

QString errorStyleSheet()
{
    const bool dark = QGuiApplication::palette().color(QPalette::Window).lightness() < 128;
    return dark ? QStringLiteral("color: #ff8a80;") : QStringLiteral("color: #b00020;");
}

ChoicesPanel::ChoicesPanel(Catalog& catalog, QWidget* parent) : QWidget(parent), m_catalog(catalog)
{
    m_selection = Selection::defaults();
    build();
    connectControls();
    sync();
}

void ChoicesPanel::build()
{
    auto* form = new QVBoxLayout(this);
    form->setContentsMargins(8, 8, 8, 8);
    form->setSpacing(6);

    auto* grid = new QFormLayout;
    grid->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    grid->setRowWrapPolicy(QFormLayout::WrapLongRows);
    m_modelCombo = new QComboBox;
    m_modelCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_modelCombo->setMinimumContentsLength(16);
    // Typing searches the catalog: any part of a model's name, case-insensitive.
    m_modelCombo->setEditable(true);
    m_modelCombo->setInsertPolicy(QComboBox::NoInsert);
    m_modelCombo->lineEdit()->setPlaceholderText(QStringLiteral("search models"));
    m_modelCombo->completer()->setCompletionMode(QCompleter::PopupCompletion);
    m_modelCombo->completer()->setFilterMode(Qt::MatchContains);
    m_modelCombo->completer()->setCaseSensitivity(Qt::CaseInsensitive);
    refillModels();
    m_importFile = new QPushButton(QStringLiteral("&Import..."));
    m_importFile->setToolTip(QStringLiteral("Read a config.json, a .safetensors or a .gguf file"));
    m_importFolder = new QPushButton(QStringLiteral("&Folder..."));
    m_importFolder->setToolTip(QStringLiteral("Read a model folder (config.json with its safetensors, or a GGUF)"));
    auto* modelRow = new QHBoxLayout;
    modelRow->addWidget(m_modelCombo, 1);
    modelRow->addWidget(m_importFile);
    modelRow->addWidget(m_importFolder);
    auto* modelLabelW = new QLabel(QStringLiteral("&Model"));
    modelLabelW->setBuddy(m_modelCombo);
    grid->addRow(modelLabelW, modelRow);
    m_modelMessage = messageLabel();
    m_modelMessage->setObjectName(QStringLiteral("ModelMessage"));
    grid->addRow(m_modelMessage);

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
    // The host: the same settings as the CLI's --host-ram and --host-bandwidth, read by core
    // (units.h parseSize, speed/splitspeed.h parseHostBandwidth) and re-planned on Enter.
    m_hostRam = new QLineEdit;
    m_hostRam->setObjectName(QStringLiteral("HostRam"));
    m_hostRam->setAccessibleName(QStringLiteral("Host RAM free for the engine"));
    m_hostRam->setPlaceholderText(QStringLiteral("RAM: not checked"));
    m_hostRam->setToolTip(QStringLiteral("Host RAM free for the engine (headroom-cli --host-ram): what a layer split keeps in "
                                         "host memory must fit, else the cell is too large for this machine. 32GiB, 64GB; empty: "
                                         "not checked"));
    m_hostBandwidth = new QLineEdit;
    m_hostBandwidth->setObjectName(QStringLiteral("HostBandwidth"));
    m_hostBandwidth->setAccessibleName(QStringLiteral("Host memory bandwidth"));
    m_hostBandwidth->setPlaceholderText(QStringLiteral("%1 GB/s").arg(kDefaultHostBandwidthGBps, 0, 'f', 1));
    m_hostBandwidth->setToolTip(QStringLiteral("Host memory bandwidth for the layers a split keeps there (headroom-cli "
                                               "--host-bandwidth): ddr4-3200x2, ddr5-5600, or GB/s; empty: %1")
                                    .arg(QString::fromStdString(hostBandwidthText(std::nullopt))));
    auto* hostRow = new QHBoxLayout;
    hostRow->addWidget(m_hostRam, 1);
    hostRow->addWidget(m_hostBandwidth, 1);
    auto* hostLabel = new QLabel(QStringLiteral("&Host"));
    hostLabel->setBuddy(m_hostRam);
    grid->addRow(hostLabel, hostRow);
    m_hostMessage = messageLabel();
    m_hostMessage->setObjectName(QStringLiteral("HostMessage"));
    grid->addRow(m_hostMessage);
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
    refillCards();
    m_sizeEdit = new QLineEdit;
    m_sizeEdit->setPlaceholderText(QStringLiteral("add a card by size: 12GiB"));
    m_sizeEdit->setAccessibleName(QStringLiteral("Add a card by size"));
    m_cardMessage = messageLabel();
    m_cardMessage->setObjectName(QStringLiteral("CardMessage"));
    form->addWidget(cardsLabel);
    form->addWidget(m_cardList, 1);
    form->addWidget(m_sizeEdit);
    form->addWidget(m_cardMessage);
    setMinimumWidth(280);
}

void ChoicesPanel::connectControls()
{
    connect(m_importFile, &QPushButton::clicked, this, &ChoicesPanel::importFileRequested);
    connect(m_importFolder, &QPushButton::clicked, this, &ChoicesPanel::importFolderRequested);
    // The chosen model's hover text (an import's path) follows the choice, also while syncing.
    connect(m_modelCombo, &QComboBox::currentIndexChanged, this,
            [this] { m_modelCombo->setToolTip(m_modelCombo->currentData(Qt::ToolTipRole).toString()); });
    for (QComboBox* combo : {m_modelCombo, m_formatCombo, m_kvCombo, m_engineCombo, m_modeCombo})
        connect(combo, &QComboBox::currentIndexChanged, this, [this, combo] {
            if (m_syncing)
                return;
            readControls();
            if (combo == m_modelCombo) {
                updateContextRange();
                setModelMessage({}, false);
            }
            Q_EMIT changed(combo == m_modelCombo ? Change::Model : combo == m_formatCombo ? Change::Format : Change::Other);
        });
    for (SliderEntry* s : {m_context, m_users, m_ubatch})
        connect(s, &SliderEntry::valueChanged, this, [this] {
            if (m_syncing)
                return;
            readControls();
            Q_EMIT changed(Change::Other);
        });
    connect(m_cardList, &QListWidget::itemChanged, this, [this] {
        if (m_syncing)
            return;
        readControls();
        Q_EMIT changed(Change::Cards);
    });
    for (QLineEdit* edit : {m_hostRam, m_hostBandwidth}) {
        connect(edit, &QLineEdit::editingFinished, this, &ChoicesPanel::readHost);
        connect(edit, &QLineEdit::textEdited, this, [this] { m_hostMessage->hide(); });
    }
    connect(m_sizeEdit, &QLineEdit::returnPressed, this, &ChoicesPanel::addSizedCard);
    connect(m_sizeEdit, &QLineEdit::textEdited, this, [this] { m_cardMessage->hide(); });
}

void ChoicesPanel::addSizedCard()
{
    const std::string text = m_sizeEdit->text().trimmed().toStdString();
    if (!m_catalog.addSizedCard(text)) {
        m_cardMessage->setStyleSheet(errorStyleSheet());
        m_cardMessage->setText(QStringLiteral("Not a size: %1 (try 12GiB, 24GB or 16384MiB)").arg(m_sizeEdit->text()));
        m_cardMessage->show();
        return;
    }
    m_cardMessage->hide();
    if (std::find(m_selection.cardIds.begin(), m_selection.cardIds.end(), text) == m_selection.cardIds.end())
        m_selection.cardIds.push_back(text);
    m_sizeEdit->clear();
    refillCards();
    Q_EMIT changed(Change::Cards);
}

void ChoicesPanel::readHost()
{
    if (m_syncing)
        return;
    std::optional<Bytes> ram;
    std::optional<double> bandwidth;
    QStringList problems;
    const std::string ramText = m_hostRam->text().trimmed().toStdString();
    if (!ramText.empty()) {
        ram = parseSize(ramText);
        if (!ram)
            problems << QStringLiteral("Host RAM: not a size: %1 (try 32GiB or 64GB)").arg(m_hostRam->text().trimmed());
    }
    const std::string bwText = m_hostBandwidth->text().trimmed().toStdString();
    if (!bwText.empty()) {
        auto parsed = parseHostBandwidth(bwText);
        if (parsed)
            bandwidth = *parsed;
        else
            problems << QStringLiteral("Host bandwidth: %1").arg(QString::fromStdString(parsed.error()));
    }
    if (!problems.isEmpty()) {
        m_hostMessage->setStyleSheet(errorStyleSheet());
        m_hostMessage->setText(problems.join(QLatin1Char('\n')));
        m_hostMessage->show();
        return;
    }
    m_hostMessage->hide();
    if (ram == m_selection.hostMemoryBytes && bandwidth == m_selection.hostBandwidthGBps)
        return;
    m_selection.hostMemoryBytes = ram;
    m_selection.hostBandwidthGBps = bandwidth;
    Q_EMIT changed(Change::Other);
}

void ChoicesPanel::setModelMessage(const QString& text, bool error, const QString& details)
{
    m_modelMessage->setText(text);
    m_modelMessage->setToolTip(details);
    m_modelMessage->setStyleSheet(error ? errorStyleSheet() : QString());
    m_modelMessage->setVisible(!text.isEmpty());
}

void ChoicesPanel::setSelection(const Selection& selection)
{
    m_selection = selection;
    sync();
}

void ChoicesPanel::refillModels()
{
    const QSignalBlocker block(m_modelCombo);
    m_modelCombo->clear();
    for (const std::string& id : m_catalog.modelIds()) {
        const ModelProfile* m = m_catalog.findModel(id);
        m_modelCombo->addItem(modelLabel(*m), QString::fromStdString(id));
        m_modelCombo->setItemData(m_modelCombo->count() - 1, modelToolTip(*m), Qt::ToolTipRole);
    }
    setCombo(m_modelCombo, m_selection.modelId);
}

void ChoicesPanel::refillCards()
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

void ChoicesPanel::sync()
{
    m_syncing = true;
    setCombo(m_modelCombo, m_selection.modelId);
    m_modelCombo->setToolTip(m_modelCombo->currentData(Qt::ToolTipRole).toString());
    setCombo(m_formatCombo, m_selection.formatId);
    setCombo(m_kvCombo, m_selection.kvDtypeId);
    setCombo(m_engineCombo, m_selection.engineId);
    m_modeCombo->setCurrentIndex(m_modeCombo->findData(static_cast<int>(m_selection.mode)));
    m_context->setValue(m_selection.contextTokens);
    m_users->setValue(m_selection.users);
    m_ubatch->setValue(m_selection.ubatchTokens);
    m_hostRam->setText(m_selection.hostMemoryBytes ? QString::fromStdString(formatBytes(*m_selection.hostMemoryBytes)).remove(QLatin1Char(' '))
                                                   : QString());
    m_hostBandwidth->setText(m_selection.hostBandwidthGBps ? QString::number(*m_selection.hostBandwidthGBps, 'g', 6) : QString());
    for (int i = 0; i < m_cardList->count(); ++i) {
        const std::string id = m_cardList->item(i)->data(Qt::UserRole).toString().toStdString();
        const bool on = std::find(m_selection.cardIds.begin(), m_selection.cardIds.end(), id) != m_selection.cardIds.end();
        m_cardList->item(i)->setCheckState(on ? Qt::Checked : Qt::Unchecked);
    }
    m_syncing = false;
}

void ChoicesPanel::readControls()
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

void ChoicesPanel::updateContextRange()
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

} // namespace headroom::app
