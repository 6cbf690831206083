#include "logpanel.h"

#include "headroom/core/kvcache.h"
#include "headroom/core/weightformat.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFuture>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMimeData>
#include <QPointer>
#include <QPushButton>
#include <QShortcut>
#include <QSpinBox>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace headroom::app {

namespace {

QString html(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

QString row(const QStringList& cells, bool header = false, const QList<int>& rightAligned = {})
{
    QString out = QStringLiteral("<tr>");
    for (int i = 0; i < cells.size(); ++i) {
        const QString tag = header ? QStringLiteral("th") : QStringLiteral("td");
        const QString align = rightAligned.contains(i) ? QStringLiteral(" align=\"right\"") : QStringLiteral(" align=\"left\"");
        out += QStringLiteral("<%1%2>%3</%1>").arg(tag, align, cells[i]);
    }
    return out + QStringLiteral("</tr>");
}

QString table(const QString& rows)
{
    return QStringLiteral("<table cellspacing=\"0\" cellpadding=\"3\" border=\"1\">") + rows + QStringLiteral("</table>");
}

/// The measured-terms table: what the log says by itself.
QString termsHtml(const std::vector<LogTermRow>& terms)
{
    QString h = QStringLiteral("<h3>Measured terms (as printed)</h3>");
    QString rows = row({QStringLiteral("term"), QStringLiteral("device or rank"), QStringLiteral("value"), QStringLiteral("line")}, true);
    for (const LogTermRow& t : terms)
        rows += row({html(t.term), html(t.where), html(t.value), html(t.line)}, false, {2, 3});
    return h + table(rows);
}

QString reportHtml(const LogReport& r)
{
    QString h;
    h += QStringLiteral("<p><b>%1</b>").arg(html(r.headerLines.front()));
    for (std::size_t i = 1; i < r.headerLines.size(); ++i)
        h += QStringLiteral("<br>") + html(r.headerLines[i]);
    h += QStringLiteral("</p>");

    h += QStringLiteral("<h3>Predicted against measured</h3><p>%1</p>").arg(html(r.comparisonTitle));
    QString rows = row({QStringLiteral("component"), QStringLiteral("predicted"), QStringLiteral("measured"), QStringLiteral("plan - log"),
                        QStringLiteral("how")},
                       true);
    for (const LogComponentRow& c : r.components)
        rows += row({html(c.component), html(c.predicted), html(c.measured), html(c.difference), html(c.how)}, false, {1, 2, 3});
    h += table(rows);
    if (!r.kvFigureLine.empty())
        h += QStringLiteral("<p><b>%1</b></p>").arg(html(r.kvFigureLine));
    for (const std::string& n : r.comparison.notes)
        h += QStringLiteral("<p>note: %1</p>").arg(html(n));

    h += QStringLiteral("<h3>%1</h3><p>%2").arg(html(r.whatFits.heading), html(r.calibrationLines.front()));
    for (std::size_t i = 1; i < r.calibrationLines.size(); ++i)
        h += QStringLiteral("<br>") + html(r.calibrationLines[i]);
    h += QStringLiteral("</p><ul>");
    for (const std::string& line : r.whatFits.lines)
        h += QStringLiteral("<li>%1</li>").arg(html(line));
    h += QStringLiteral("</ul>");

    h += termsHtml(r.terms);
    return h;
}

} // namespace

LogPanel::LogPanel(const Catalog& catalog, QWidget* parent)
    : QWidget(parent)
    , m_catalog(catalog)
{
    setObjectName(QStringLiteral("LogPanel"));
    setAcceptDrops(true);
    build();
}

void LogPanel::build()
{
    auto* open = new QPushButton(QStringLiteral("&Open log..."));
    open->setToolTip(QStringLiteral("Read the start-up log of vLLM, SGLang, TGI, TensorRT-LLM, llama.cpp or Ollama"));
    auto* paste = new QPushButton(QStringLiteral("&Paste log"));
    paste->setToolTip(QStringLiteral("Read the log from the clipboard (Ctrl+V here)"));
    m_save = new QPushButton(QStringLiteral("&Save calibration"));
    m_save->setEnabled(false);
    m_status = new QLabel(QStringLiteral("Drop an engine's start-up log here, open it or paste it."));
    m_status->setWordWrap(true);
    m_status->setObjectName(QStringLiteral("LogStatus"));
    auto* actions = new QHBoxLayout;
    actions->addWidget(open);
    actions->addWidget(paste);
    actions->addWidget(m_save);
    actions->addWidget(m_status, 1);

    m_model = new QComboBox;
    m_model->setAccessibleName(QStringLiteral("Model of the log"));
    refillModels();
    m_weights = new QComboBox;
    m_weights->addItem(QStringLiteral("the model's own"), QString());
    for (const WeightFormat& f : builtinFormats())
        m_weights->addItem(QString::fromStdString(f.id), QString::fromStdString(f.id));
    m_kv = new QComboBox;
    m_kv->addItem(QStringLiteral("as the log says"), QString());
    for (const KvDtype& k : builtinKvDtypes())
        m_kv->addItem(QString::fromStdString(k.id), QString::fromStdString(k.id));
    m_card = new QComboBox;
    m_card->setAccessibleName(QStringLiteral("Card of the log"));
    m_card->setToolTip(QStringLiteral("The card the log ran on: its calibration is saved for this card"));
    refillCards();
    m_context = new QSpinBox;
    m_context->setRange(0, 1 << 24);
    m_context->setSingleStep(1024);
    m_context->setSpecialValueText(QStringLiteral("4 x the log's"));
    m_context->setAccessibleName(QStringLiteral("Context per user for the what-fits"));
    m_users = new QSpinBox;
    m_users->setRange(1, 1 << 16);
    m_users->setValue(16);
    // The TP size, for the logs that do not print it (headroom-cli log --tp): 0 = as the log says.
    m_tp = new QSpinBox;
    m_tp->setRange(0, 4096);
    m_tp->setSpecialValueText(QStringLiteral("as the log says"));
    m_tp->setAccessibleName(QStringLiteral("Tensor parallel size, when the log does not print it"));
    m_tp->setToolTip(QStringLiteral("GPUs the engine split the model across (tensor parallel), when the log does not print it"));
    m_leaveFree = new QDoubleSpinBox;
    m_leaveFree->setRange(0, 1024);
    m_leaveFree->setDecimals(2);
    m_leaveFree->setValue(2.0);
    m_leaveFree->setSuffix(QStringLiteral(" GiB"));
    // Two rows, combos sized to a few words rather than to their longest entry, so the panel fits a
    // 1280-pixel-wide screen whatever model and card names the catalog holds.
    for (QComboBox* combo : {m_model, m_weights, m_kv, m_card}) {
        combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        combo->setMinimumContentsLength(14);
    }
    auto* choices = new QGridLayout;
    const auto add = [choices](int row, int column, const QString& text, QWidget* w) {
        auto* label = new QLabel(text);
        label->setBuddy(w);
        choices->addWidget(label, row, 2 * column);
        choices->addWidget(w, row, 2 * column + 1);
    };
    add(0, 0, QStringLiteral("&Model"), m_model);
    add(0, 1, QStringLiteral("&Weights"), m_weights);
    add(0, 2, QStringLiteral("&KV"), m_kv);
    add(0, 3, QStringLiteral("C&ard"), m_card);
    add(1, 0, QStringLiteral("&Context"), m_context);
    add(1, 1, QStringLiteral("&Users"), m_users);
    add(1, 2, QStringLiteral("&TP"), m_tp);
    add(1, 3, QStringLiteral("Leave &free"), m_leaveFree);
    for (int column : {1, 3, 5, 7})
        choices->setColumnStretch(column, column == 1 || column == 7 ? 2 : 1);

    m_view = new QTextBrowser;
    m_view->setObjectName(QStringLiteral("LogReport"));
    m_view->setOpenLinks(false);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(actions);
    layout->addLayout(choices);
    layout->addWidget(m_view, 1);

    connect(open, &QPushButton::clicked, this, &LogPanel::openFileDialog);
    connect(paste, &QPushButton::clicked, this, &LogPanel::pasteFromClipboard);
    connect(m_save, &QPushButton::clicked, this, [this] {
        auto saved = saveCalibration();
        m_status->setText(saved ? QStringLiteral("Saved the calibration to %1: plans of this model on this card and engine use it").arg(*saved)
                                : saved.error());
    });
    auto* shortcut = new QShortcut(QKeySequence::Paste, this);
    shortcut->setContext(Qt::WidgetWithChildrenShortcut);
    connect(shortcut, &QShortcut::activated, this, &LogPanel::pasteFromClipboard);
    for (QComboBox* c : {m_model, m_weights, m_kv, m_card})
        connect(c, &QComboBox::currentIndexChanged, this, &LogPanel::analyze);
    for (QSpinBox* s : {m_context, m_users, m_tp})
        connect(s, &QSpinBox::valueChanged, this, &LogPanel::analyze);
    connect(m_leaveFree, &QDoubleSpinBox::valueChanged, this, &LogPanel::analyze);
}

void LogPanel::refillModels()
{
    const QString current = m_model->currentData().toString();
    const QSignalBlocker block(m_model);
    m_model->clear();
    m_model->addItem(QStringLiteral("the one the log names"), QString());
    for (const std::string& id : m_catalog.modelIds()) {
        const ModelProfile* m = m_catalog.findModel(id);
        m_model->addItem(QString::fromStdString(m->name.empty() ? m->id : m->name), QString::fromStdString(id));
        m_model->setItemData(m_model->count() - 1, QString::fromStdString(id + "\n" + m->source), Qt::ToolTipRole);
    }
    m_model->setCurrentIndex(std::max(0, m_model->findData(current)));
}

void LogPanel::refillCards()
{
    const QString current = m_card->currentData().toString();
    const QSignalBlocker block(m_card);
    m_card->clear();
    m_card->addItem(QStringLiteral("the total the log prints"), QString());
    for (const Card* c : m_catalog.allCards())
        m_card->addItem(QStringLiteral("%1 (%2)").arg(QString::fromStdString(c->name.empty() ? c->id : c->name),
                                                      QString::fromStdString(formatBytes(c->totalBytes))),
                        QString::fromStdString(c->id));
    m_card->setCurrentIndex(std::max(0, m_card->findData(current)));
}

bool LogPanel::looksLikeEngineLog(const QString& path)
{
    const QFileInfo info(path);
    if (info.isDir())
        return false;
    const QString suffix = info.suffix().toLower();
    return suffix != QLatin1String("gguf") && suffix != QLatin1String("safetensors") && suffix != QLatin1String("json");
}

void LogPanel::openFileDialog()
{
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open an engine's start-up log"), QString(),
                                                      QStringLiteral("Logs (*.log *.txt *.out);;All files (*)"));
    if (!path.isEmpty())
        openFile(path);
}

void LogPanel::openFile(const QString& path)
{
    auto text = readEngineLogFile(path.toStdString());
    if (!text) {
        m_status->setText(QString::fromStdString(text.error().message));
        return;
    }
    m_text = std::move(*text);
    m_name = QFileInfo(path).fileName().toStdString();
    analyze();
}

void LogPanel::setLogText(const QString& text, const QString& name)
{
    m_text = text.toStdString();
    m_name = name.toStdString();
    analyze();
}

void LogPanel::pasteFromClipboard()
{
    const QString text = QApplication::clipboard()->text();
    if (text.isEmpty()) {
        m_status->setText(QStringLiteral("The clipboard holds no text"));
        return;
    }
    setLogText(text, QStringLiteral("pasted"));
}

LogReportOptions LogPanel::options() const
{
    LogReportOptions o;
    if (const QString id = m_model->currentData().toString(); !id.isEmpty())
        if (const ModelProfile* m = m_catalog.findModel(id.toStdString()))
            o.modelProfile = *m;
    if (const QString id = m_card->currentData().toString(); !id.isEmpty())
        if (const Card* c = m_catalog.findCard(id.toStdString()))
            o.cardProfile = *c;
    o.weights = m_weights->currentData().toString().toStdString();
    o.kvDtype = m_kv->currentData().toString().toStdString();
    if (m_context->value() > 0)
        o.contextTokens = static_cast<std::uint64_t>(m_context->value());
    o.users = static_cast<std::uint64_t>(m_users->value());
    if (m_tp->value() > 0)
        o.tensorParallel = static_cast<std::uint32_t>(m_tp->value());
    o.leaveFreeBytes = Bytes{static_cast<std::uint64_t>(m_leaveFree->value() * 1073741824.0)};
    return o;
}

void LogPanel::analyze()
{
    if (m_text.empty())
        return;
    const std::uint64_t generation = ++m_generation;
    m_busy = true;
    m_status->setText(QStringLiteral("Reading %1...").arg(QString::fromStdString(m_name)));
    QPointer<LogPanel> self(this);
    using Result = tl::expected<LogReport, LogReportError>;
    QtConcurrent::run([text = m_text, name = m_name, options = options(), profiles = m_catalog.profiles()]() -> Result {
        try {
            return analyzeEngineLog(text, name, options, profiles);
        } catch (const std::exception& e) {
            return tl::unexpected(LogReportError{LogReportError::Stage::Read, std::string("cannot read the log: ") + e.what(), {}, {}, {}, {}});
        }
    }).then(this, [self, generation](const Result& result) {
        if (!self || generation != self->m_generation)
            return;
        self->m_busy = false;
        self->showResult(result);
        Q_EMIT self->analyzed();
    });
}

void LogPanel::showResult(const tl::expected<LogReport, LogReportError>& result)
{
    const QString name = QString::fromStdString(m_name);
    if (!result) {
        m_report.reset();
        m_error = result.error();
        m_save->setEnabled(false);
        QString h;
        if (!m_error->summary.empty())
            h += QStringLiteral("<p><b>%1</b></p>").arg(html(m_error->summary));
        h += QStringLiteral("<p>%1: %2</p>").arg(name.toHtmlEscaped(), html(m_error->message));
        if (m_error->stage == LogReportError::Stage::Request)
            h += QStringLiteral("<p>Choose the model the log ran above.</p>");
        for (const std::string& w : m_error->warnings)
            h += QStringLiteral("<p>warning: %1</p>").arg(html(w));
        // Parsed but not planned: still what the log says (its card, settings, measured terms).
        for (std::size_t i = 1; i < m_error->headerLines.size(); ++i)
            h += QStringLiteral("<p>%1</p>").arg(html(m_error->headerLines[i]));
        if (!m_error->terms.empty())
            h += termsHtml(m_error->terms);
        m_view->setHtml(h);
        m_status->setText(QStringLiteral("%1 could not be compared").arg(name));
        return;
    }
    m_error.reset();
    m_report = *result;
    QString h = reportHtml(*m_report);
    for (const std::string& w : m_report->log.warnings)
        h += QStringLiteral("<p>warning: %1</p>").arg(html(w));
    m_view->setHtml(h);
    // A failed analysis is never saved (core saveCalibration refuses it too): the button says why.
    const std::string& refusal = m_report->comparison.saveRefusal;
    const bool canSave = !m_catalog.userProfilesDir().empty() && refusal.empty();
    m_save->setEnabled(canSave);
    m_save->setToolTip(canSave ? QString::fromStdString(calibrationPath(m_catalog.userProfilesDir(), m_report->comparison.calibration).string())
                       : !refusal.empty() ? QStringLiteral("Not saved: %1").arg(QString::fromStdString(refusal))
                                          : QStringLiteral("No user profiles folder in this session"));
    m_status->setText(QString::fromStdString(m_report->log.summary()));
}

QString LogPanel::errorText() const
{
    return m_error ? QString::fromStdString(m_error->message) : QString();
}

QString LogPanel::reportText() const
{
    return m_view->toPlainText();
}

tl::expected<QString, QString> LogPanel::saveCalibration()
{
    if (!m_report)
        return tl::unexpected(QStringLiteral("No calibration: read a log first"));
    const std::filesystem::path dir = m_catalog.userProfilesDir();
    if (dir.empty())
        return tl::unexpected(QStringLiteral("No user profiles folder in this session"));
    auto out = headroom::saveCalibration(m_report->comparison, dir);
    if (!out)
        return tl::unexpected(QString::fromStdString(out.error()));
    return QString::fromStdString(out->string());
}

void LogPanel::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls() || event->mimeData()->hasText())
        event->acceptProposedAction();
}

void LogPanel::dropEvent(QDropEvent* event)
{
    const QMimeData* mime = event->mimeData();
    if (mime->hasUrls() && !mime->urls().isEmpty() && mime->urls().front().isLocalFile())
        openFile(mime->urls().front().toLocalFile());
    else if (mime->hasText())
        setLogText(mime->text(), QStringLiteral("dropped text"));
    else
        return;
    event->acceptProposedAction();
}

} // namespace headroom::app
