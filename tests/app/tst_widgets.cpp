// The main window offscreen: driving the sliders and cells changes what is shown, and what is
// shown equals the core's numbers; the probe runner never blocks; imports run on a worker.

#include "apptestutils.h"
#include "breakdownmodel.h"
#include "billpanel.h"
#include "choicespanel.h"
#include "detailpanel.h"
#include "enginespanel.h"
#include "chartspanel.h"
#include "enginecomparisonmodel.h"
#include "formatting.h"
#include "mainwindow.h"
#include "memorybar.h"
#include "matrixpanel.h"
#include "modelimporter.h"
#include "probepanel.h"
#include "proberunner.h"
#include "sliderentry.h"
#include "whatfitsmodel.h"

#include "headroom/core/defaults.h"
#include "headroom/core/report/report.h"

#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QHeaderView>
#include <QRegularExpression>
#include <QScrollBar>
#include <QScreen>
#include <QSettings>
#include <QSignalSpy>
#include <QStyle>
#include <QSlider>
#include <QSplitter>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableView>
#include <QtCharts/QChart>
#include <QtCharts/QXYSeries>
#include <QTemporaryDir>
#include <QTabWidget>
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>
#include <QAbstractTextDocumentLayout>
#include <QRegularExpression>

using namespace headroom;
using namespace headroom::app;
using headroom::app::test::catalog;

namespace {

MainWindow::Options testOptions(std::shared_ptr<ProbeBackend> backend = std::make_shared<test::FakeProbeBackend>())
{
    MainWindow::Options o;
    o.useSettings = false;
    o.detectGpus = false;
    o.probeBackend = std::move(backend);
    return o;
}

// The detail plan recomputed straight from the core for the window's selection.
PlanResult corePlan(const MainWindow& w, const std::string& card)
{
    const Selection& s = w.selection();
    auto p = planFor(w.catalog(), s, s.modelId, s.formatId, card);
    REQUIRE(p);
    return *p;
}

QString cellText(const MainWindow& w, const std::string& format, const std::string& card)
{
    const QModelIndex i = w.matrixModel()->find(w.selection().modelId, format, card);
    REQUIRE(i.isValid());
    return w.matrixModel()->data(i).toString();
}

int pointCount(QChart* chart)
{
    int n = 0;
    for (QAbstractSeries* s : chart->series())
        if (auto* xy = qobject_cast<QXYSeries*>(s))
            n += static_cast<int>(xy->count());
    return n;
}

} // namespace

TEST_CASE("the window starts on the default model's matrix with a detail", "[window]")
{
    MainWindow w(catalog(), testOptions());
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    QAbstractItemModelTester tester(w.matrixModel(), QAbstractItemModelTester::FailureReportingMode::Fatal);

    CHECK(w.selection().modelId == kDefaultModelId);
    CHECK(w.selection().formatId == kDefaultWeightFormat);
    CHECK(w.selection().cardIds == kDefaultCardIds);
    CHECK(w.matrixModel()->columnCount() == WhatFitsModel::FixedColumnCount + 3);
    REQUIRE(w.detailPlan());
    CHECK(w.detailPlan()->cardId == "rtx-4090");
    CHECK(w.detailPlan()->formatId == kDefaultWeightFormat);
    CHECK(w.memoryBar()->segments().size() >= 5);
    CHECK(w.engineModel()->rowCount() == static_cast<int>(w.catalog().profiles().engines.size()));
    CHECK(pointCount(w.charts()->memoryChart()) > 0);
    CHECK(pointCount(w.charts()->frontierChart()) > 0);
    CHECK(pointCount(w.charts()->speedChart()) > 0);
    CHECK(w.charts()->speedChart()->title().contains(QStringLiteral("roofline")));
    // The checked cards are the default ones.
    int checked = 0;
    for (int i = 0; i < w.cardList()->count(); ++i)
        checked += w.cardList()->item(i)->checkState() == Qt::Checked;
    CHECK(checked == 3);
}

TEST_CASE("the frontier plot draws only the cards the model loads on", "[window]")
{
    MainWindow w(catalog(), testOptions());
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    // The default question: vLLM would refuse to start on the RTX 4060 (4 x 8,192 at int4-g128).
    QStringList expected;
    int refused = 0;
    for (const std::string& card : w.selection().cardIds) {
        const auto plan = planFor(w.catalog(), w.selection(), w.selection().modelId, w.selection().formatId, card);
        REQUIRE(plan);
        if (plan->verdict.loads())
            expected << QString::fromStdString(w.catalog().findCard(card)->name).remove(QStringLiteral("NVIDIA ")).remove(QStringLiteral("GeForce "));
        else
            ++refused;
    }
    CHECK(refused == 1);
    QStringList drawn;
    for (QAbstractSeries* s : w.charts()->frontierChart()->series())
        if (s->type() == QAbstractSeries::SeriesTypeLine)
            drawn << s->name();
    CHECK(drawn == expected);
    CHECK(drawn.size() == 2);
}

TEST_CASE("driving the sliders changes the numbers shown, which equal the core's", "[window]")
{
    MainWindow w(catalog(), testOptions());
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));

    SECTION("users slider")
    {
        SliderEntry* users = w.usersEntry();
        const auto& ladder = users->ladder();
        const auto it = std::find(ladder.begin(), ladder.end(), 16u);
        REQUIRE(it != ladder.end());
        users->slider()->setValue(static_cast<int>(it - ladder.begin()));
        CHECK(w.selection().users == 16);
        CHECK(users->spinBox()->value() == 16);
        for (const std::string& card : kDefaultCardIds) {
            const PlanResult p = corePlan(w, card);
            const QString text = cellText(w, kDefaultWeightFormat, card);
            CHECK(text.toStdString() == verdictCellText(p.verdict));
            if (p.verdict.loads())
                CHECK(p.verdict.headline.value == p.maxContext.value_or(0));
        }
        const PlanResult p = corePlan(w, "rtx-4090");
        CHECK(w.detailLimits()->text().contains(thousands(p.maxContext.value_or(0))));
        // The KV slice of the bar is the core's KV bytes at 16 users x 8,192 tokens.
        for (const BillSegment& s : w.memoryBar()->segments())
            if (s.kind == BillSegment::Kind::Kv)
                CHECK(s.bytes == std::min(kvBytes(p.kv, 16, 8192, p.paging, p.ubatchTokens),
                                          saturatingSub(p.usableBytes, p.weightsBytes + totalBytes(p.overheads))));
    }

    SECTION("typed context and micro-batch")
    {
        w.contextEntry()->spinBox()->setValue(32768);
        CHECK(w.selection().contextTokens == 32768);
        w.ubatchEntry()->spinBox()->setValue(2048);
        CHECK(w.selection().ubatchTokens == 2048);
        const PlanResult p = corePlan(w, "rtx-4090");
        REQUIRE(w.detailPlan());
        CHECK(w.detailPlan()->maxResidentTokens == p.maxResidentTokens);
        CHECK(w.detailPlan()->ubatchTokens == 2048);
        CHECK(w.detailLimits()->text().contains(thousands(p.maxUsers.value_or(0))));
        // 4 users x 32,768 tokens no longer reach on the 8 GB card: the cell turns short or red.
        const QModelIndex on8 = w.matrixModel()->find(kDefaultModelId, kDefaultWeightFormat, "rtx-4060");
        CHECK(w.matrixModel()->data(on8, WhatFitsModel::FitRole).toInt() != static_cast<int>(Fit::Reaches));
        // The slider follows typed values.
        CHECK(w.contextEntry()->ladder()[static_cast<std::size_t>(w.contextEntry()->slider()->value())] <= 32768u);
    }

    SECTION("keyboard on the slider")
    {
        const std::uint64_t before = w.selection().contextTokens;
        w.contextEntry()->slider()->setFocus();
        QTest::keyClick(w.contextEntry()->slider(), Qt::Key_Right);
        CHECK(w.selection().contextTokens > before);
        QTest::keyClick(w.contextEntry()->slider(), Qt::Key_Left);
        CHECK(w.selection().contextTokens == before);
    }
}

TEST_CASE("clicking a matrix cell drives the detail", "[window]")
{
    MainWindow w(catalog(), testOptions());
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    QTableView* view = w.matrixView();
    const QModelIndex source = w.matrixModel()->find(kDefaultModelId, "q4_k", "rtx-4060-ti-16gb");
    REQUIRE(source.isValid());
    const QModelIndex index = view->model()->index(source.row(), source.column());
    view->scrollTo(index);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(index).center());
    REQUIRE(w.detailPlan());
    CHECK(w.detailPlan()->formatId == "q4_k");
    CHECK(w.detailPlan()->cardId == "rtx-4060-ti-16gb");
    CHECK(w.selection().formatId == "q4_k");
    CHECK(w.formatCombo()->currentData().toString() == QStringLiteral("q4_k"));
    CHECK(w.detailTitle()->text().contains(QStringLiteral("q4_k")));
    // Arrow keys move the current cell and the detail with it.
    view->setFocus();
    QTest::keyClick(view, Qt::Key_Right);
    CHECK(w.detailPlan()->cardId == "rtx-4090");

    // Models mode lists every model in the chosen format.
    w.setMatrixMode(MatrixMode::Models);
    CHECK(w.matrixModel()->rowCount() == static_cast<int>(w.catalog().profiles().models.size()));
}

TEST_CASE("cards can be unchecked and added by size", "[window]")
{
    MainWindow w(catalog(), testOptions());
    QListWidget* cards = w.cardList();
    for (int i = 0; i < cards->count(); ++i)
        if (cards->item(i)->data(Qt::UserRole).toString() == QStringLiteral("rtx-4060"))
            cards->item(i)->setCheckState(Qt::Unchecked);
    CHECK(w.selection().cardIds == std::vector<std::string>{"rtx-4060-ti-16gb", "rtx-4090"});
    CHECK(w.matrixModel()->columnCount() == WhatFitsModel::FixedColumnCount + 2);
    QLineEdit* edit = nullptr;
    for (QLineEdit* e : w.findChildren<QLineEdit*>())
        if (e->accessibleName() == QStringLiteral("Add a card by size"))
            edit = e;
    REQUIRE(edit);
    QTest::keyClicks(edit, QStringLiteral("12GiB"));
    QTest::keyClick(edit, Qt::Key_Return);
    CHECK(w.selection().cardIds.back() == "12GiB");
    CHECK(w.matrixModel()->columnCount() == WhatFitsModel::FixedColumnCount + 3);
}

// Every matrix cell and card header shows its whole text at 1280x800: a reason wraps inside its
// row, a card name keeps its longest word, ten cards scroll sideways rather than clip.
void checkMatrixTextFits(MainWindow& w)
{
    QTableView* view = w.matrixPanel()->view();
    QHeaderView* header = view->horizontalHeader();
    const QFontMetrics fm = view->fontMetrics();
    const int padding = 2 * (view->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, view) + 1) + 1;
    for (int c = WhatFitsModel::FixedColumnCount; c < view->model()->columnCount(); ++c) {
        const QString label = view->model()->headerData(c, Qt::Horizontal).toString();
        for (const QString& word : label.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts))
            CHECK(header->fontMetrics().horizontalAdvance(word) <= header->sectionSize(c));
        for (int r = 0; r < view->model()->rowCount(); ++r) {
            const QString text = view->model()->index(r, c).data().toString();
            const QRect need = fm.boundingRect(QRect(0, 0, header->sectionSize(c) - padding, 10000), Qt::TextWordWrap, text);
            INFO(text.toStdString() << " in " << header->sectionSize(c) << " px, row " << view->rowHeight(r) << " px");
            CHECK(need.width() <= header->sectionSize(c) - padding);
            CHECK(need.height() <= view->rowHeight(r));
        }
    }
}

TEST_CASE("matrix reasons and card names are not cut at 1280x800", "[window][layout]")
{
    MainWindow::Options o = testOptions();
    SECTION("three cards, a model whose reasons are long")
    {
        o.modelArg = "mistral-7b";
        MainWindow w(catalog(), o);
        w.resize(1280, 800);
        w.show();
        QTest::qWait(100);
        checkMatrixTextFits(w);
    }
    SECTION("ten cards")
    {
        o.cardArgs = {"a10", "a100-80gb", "a40", "h100-sxm", "l4", "rtx-3090", "rtx-4060", "rtx-4080", "rtx-4090", "rtx-5090"};
        MainWindow w(catalog(), o);
        w.resize(1280, 800);
        w.show();
        QTest::qWait(100);
        REQUIRE(w.matrixModel()->columnCount() == WhatFitsModel::FixedColumnCount + 10);
        checkMatrixTextFits(w);
        CHECK(w.matrixPanel()->view()->horizontalScrollBar()->maximum() > 0);
    }
}

// Every visible cell of @p view shows its whole text (a long one wraps inside its row).
void checkTableTextFits(QTableView* view)
{
    REQUIRE(view);
    REQUIRE(view->model()->rowCount() > 0);
    QHeaderView* header = view->horizontalHeader();
    const QFontMetrics fm = view->fontMetrics();
    const int padding = 2 * (view->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, view) + 1) + 1;
    for (int c = 0; c < view->model()->columnCount(); ++c)
        for (int r = 0; r < view->model()->rowCount() && !view->isColumnHidden(c); ++r) {
            const QString text = view->model()->index(r, c).data().toString();
            // A cell spanning columns (an engine's reason) has their width together.
            int width = 0;
            for (int k = c; k < c + view->columnSpan(r, c); ++k)
                width += header->sectionSize(k);
            const QRect need = fm.boundingRect(QRect(0, 0, width - padding, 10000), Qt::TextWordWrap, text);
            INFO(text.toStdString() << " in column " << c << " of " << width << " px, row " << view->rowHeight(r) << " px");
            CHECK(need.width() <= width - padding);
            CHECK(need.height() <= view->rowHeight(r));
        }
}

TEST_CASE("the memory bill's and the engines' text is not cut at 1280x800", "[window][layout]")
{
    MainWindow::Options o = testOptions();
    o.modelArg = "mistral-7b";
    MainWindow w(catalog(), o);
    w.resize(1280, 800);
    w.show();
    SECTION("Memory bill: 'How it is priced' wraps")
    {
        w.detailTabs()->setCurrentIndex(1);
        QTest::qWait(100);
        checkTableTextFits(w.detail()->bill());
    }
    SECTION("Engines compared: the figures whole, the engine's name wraps")
    {
        w.detailTabs()->setCurrentIndex(2);
        QTest::qWait(100);
        QTableView* view = w.detail()->engines()->findChild<QTableView*>();
        checkTableTextFits(view);
        // llama.cpp cannot load int4-g128: its reason spans the figure columns, no bill beside it.
        int spanned = 0;
        for (int r = 0; r < view->model()->rowCount(); ++r) {
            if (view->columnSpan(r, EngineComparisonModel::FirstFigure) == 1)
                continue;
            ++spanned;
            CHECK(view->columnSpan(r, EngineComparisonModel::FirstFigure)
                  == EngineComparisonModel::LastFigure - EngineComparisonModel::FirstFigure + 1);
            CHECK(view->model()->index(r, EngineComparisonModel::FirstFigure).data().toString().startsWith(QStringLiteral("does not fit: ")));
        }
        CHECK(spanned >= 1);
    }
}

// Every row the view shows ends inside it: no half row at the bottom edge.
void checkWholeRows(QTableView* view)
{
    REQUIRE(view);
    const int visible = view->viewport()->height();
    int shown = 0;
    for (int r = 0; r < view->model()->rowCount(); ++r) {
        const int top = view->rowViewportPosition(r);
        if (view->isRowHidden(r) || top < 0 || top >= visible)
            continue;
        INFO("row " << r << ": " << top << " + " << view->rowHeight(r) << " px in a " << visible << " px view");
        CHECK(top + view->rowHeight(r) <= visible);
        ++shown;
    }
    CHECK(shown > 0);
}

TEST_CASE("the Engines compared table and the What fits matrix end on a whole row", "[window][layout]")
{
    MainWindow::Options o = testOptions();
    const QSize size = GENERATE(QSize(1280, 800), QSize(1920, 1080), QSize(1280, 700), QSize(1100, 760));
    INFO(size.width() << "x" << size.height());
    MainWindow w(catalog(), o);
    w.resize(size);
    w.show();
    w.detailTabs()->setCurrentIndex(2);
    QTest::qWait(150);
    QTableView* view = w.detail()->engines()->findChild<QTableView*>();
    REQUIRE(view);
    REQUIRE(view->model()->rowCount() >= 6);
    REQUIRE(view->isVisible());
    checkWholeRows(view);
    // Scrolled down by one row, still whole rows.
    view->verticalScrollBar()->setValue(view->verticalScrollBar()->value() + 1);
    QTest::qWait(50);
    checkWholeRows(view);
    // The matrix: 12 formats on three cards, more rows than it shows at 1280x800.
    QTableView* matrix = w.matrixPanel()->view();
    checkWholeRows(matrix);
    matrix->verticalScrollBar()->setValue(matrix->verticalScrollBar()->value() + 1);
    QTest::qWait(50);
    checkWholeRows(matrix);
}

TEST_CASE("the window title names Headroom once", "[window]")
{
    MainWindow w(catalog(), testOptions());
    // The platform appends the display name unless the title already ends with it (Qt 6,
    // QPlatformWindow::formatWindowTitle, used by the xcb, Windows and macOS windows).
    const QString name = QGuiApplication::applicationDisplayName();
    const QString title = w.windowTitle();
    const QString shown = title.endsWith(name) ? title : title + QStringLiteral(" \u2014 ") + name;
    CHECK(shown.count(name) == 1);
    CHECK(shown == QStringLiteral("What fits on a GPU \u2014 ") + name);
}

TEST_CASE("a first start without saved geometry fills most of the screen, centred", "[window][layout][first-start]")
{
    CHECK(defaultWindowGeometry(QRect(0, 0, 1280, 800)) == QRect(0, 0, 1280, 800));
    CHECK(defaultWindowGeometry(QRect(0, 0, 1920, 1080)) == QRect(96, 54, 1728, 972));
    // A panel on top: the free area starts lower, the window is centred in it.
    CHECK(defaultWindowGeometry(QRect(0, 32, 2560, 1408)) == QRect(128, 102, 2304, 1267));
    // A screen smaller than 1280x800: 90 % of it, never more than it.
    CHECK(defaultWindowGeometry(QRect(0, 0, 1024, 600)) == QRect(0, 0, 1024, 600));

    QTemporaryDir dir;
    REQUIRE(dir.isValid());
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.filePath(QStringLiteral("settings")));
    QSettings().clear();
    MainWindow::Options o = testOptions();
    o.useSettings = true;
    QSize saved;
    {
        MainWindow w(catalog(), o);
        REQUIRE(w.screen());
        const QRect available = w.screen()->availableGeometry();
        const QString size = QStringLiteral("%1x%2").arg(available.width()).arg(available.height());
        INFO("screen " << size.toStdString());
        // Run by ctest on a 1280x800 and a 1920x1080 offscreen screen (tests/app/CMakeLists.txt).
        if (const QString wanted = qEnvironmentVariable("HEADROOM_TEST_SCREEN"); !wanted.isEmpty())
            REQUIRE(size == wanted);
        CHECK(w.geometry() == defaultWindowGeometry(available));
        CHECK(w.geometry().center() == available.center());
        // A saved geometry wins over the default.
        w.show();
        w.setGeometry(QRect(10, 20, 1100, 600));
        QTest::qWait(50);
        saved = w.size(); // at least the window's minimum size
        CHECK(saved != defaultWindowGeometry(available).size());
        w.close(); // saves the settings
    }
    {
        MainWindow w(catalog(), o);
        CHECK(w.size() == saved);
    }
    QSettings().clear();
}

TEST_CASE("the probe runner reports progress, results and cancel without blocking", "[probes]")
{
    auto backend = std::make_shared<test::FakeProbeBackend>();
    MainWindow w(catalog(), testOptions(backend));
    ProbePanel* panel = w.probePanel();
    REQUIRE(panel->deviceCombo()->isEnabled());
    REQUIRE(panel->runButton()->isEnabled());
    // The budget defaults to the plan's card, to the byte.
    REQUIRE(panel->plan());
    CHECK(panel->plan()->cardTotalBytes.value > 0);
    CHECK(panel->budgetBytes() == panel->plan()->cardTotalBytes);
    CHECK(panel->budgetBox()->value() == Approx(static_cast<double>(panel->plan()->cardTotalBytes.value) / (1ull << 30)).epsilon(0.01));

    SECTION("a full run")
    {
        QSignalSpy progress(panel->runner(), &ProbeRunner::progressChanged);
        QSignalSpy finished(panel->runner(), &ProbeRunner::finished);
        QTest::mouseClick(panel->runButton(), Qt::LeftButton);
        CHECK(panel->cancelButton()->isEnabled());
        CHECK_FALSE(panel->runButton()->isEnabled()); // one run at a time
        CHECK_FALSE(panel->budgetBox()->isEnabled());
        // The GUI thread keeps running events while the job runs on a worker.
        REQUIRE(finished.wait(5000));
        CHECK(progress.count() >= 1);
        CHECK(panel->resultsModel()->rowCount() == backend->steps);
        CHECK(panel->stageLabel()->text() == QStringLiteral("Done: 4 pass, 1 FAIL"));
        CHECK(panel->runButton()->isEnabled());
        CHECK(panel->progressBar()->value() == panel->progressBar()->maximum());
        CHECK_FALSE(panel->cancelButton()->isEnabled());
        // The decode-step row becomes a measured point in the speed plot.
        bool measured = false;
        for (QAbstractSeries* s : w.charts()->speedChart()->series())
            measured = measured || s->name() == QStringLiteral("measured");
        CHECK(measured);
    }

    SECTION("cancel")
    {
        backend->steps = 200;
        QSignalSpy finished(panel->runner(), &ProbeRunner::finished);
        panel->run();
        QTest::qWait(60);
        QTest::mouseClick(panel->cancelButton(), Qt::LeftButton);
        REQUIRE(finished.wait(5000));
        CHECK(finished.at(0).at(1).toBool());
        CHECK(panel->resultsModel()->rowCount() < 200);
        CHECK(panel->stageLabel()->text().startsWith(QStringLiteral("Cancelled")));
    }

    SECTION("a newer run supersedes an older one")
    {
        backend->steps = 50;
        QSignalSpy finished(panel->runner(), &ProbeRunner::finished);
        panel->run();
        QTest::qWait(30);
        backend->steps = 3;
        panel->run();
        REQUIRE(finished.wait(5000));
        QTest::qWait(200);
        CHECK(finished.count() == 1);
        CHECK(panel->resultsModel()->rowCount() == 3);
        CHECK(backend->runs == 2);
    }
}

TEST_CASE("the probes tab gives its results table room for 9 rows at 1280x800", "[probes][layout]")
{
    // A real CPU run of allocation, limit search and decode step prints about 25 rows; beside a
    // 40 % matrix and four lines of controls the table showed 3 (issue 12).
    auto backend = std::make_shared<test::FakeProbeBackend>();
    backend->steps = 14;
    backend->stepMs = 1;
    MainWindow w(catalog(), testOptions(backend));
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    ProbePanel* panel = w.probePanel();
    w.detailTabs()->setCurrentWidget(panel);
    QSignalSpy finished(panel->runner(), &ProbeRunner::finished);
    panel->run();
    REQUIRE(finished.wait(5000));
    QTest::qWait(50);
    QTableView* table = panel->resultsTable();
    int whole = 0; // rows wholly inside the viewport
    for (int r = 0; r < table->model()->rowCount(); ++r)
        whole += table->visualRect(table->model()->index(r, 0)).bottom() < table->viewport()->height();
    INFO("viewport " << table->viewport()->height() << " px, " << whole << " rows shown");
    CHECK(whole >= 9); // 9 at 1280x800 offscreen (262 px), was 3
    // Back on the plots the matrix gets its height again.
    const int probeTop = w.findChild<QSplitter*>(QStringLiteral("MainSplitter"))->sizes().at(0);
    w.detailTabs()->setCurrentIndex(0);
    CHECK(w.findChild<QSplitter*>(QStringLiteral("MainSplitter"))->sizes().at(0) > probeTop);
}

TEST_CASE("without headroom_probes the panel lists the CPU disabled", "[probes]")
{
    if (probesBuilt())
        return;
    MainWindow w(catalog(), testOptions(createProbeBackend()));
    ProbePanel* panel = w.probePanel();
    CHECK(panel->deviceCombo()->itemText(0) == QStringLiteral("CPU (probes not built)"));
    CHECK_FALSE(panel->deviceCombo()->isEnabled());
    CHECK_FALSE(panel->runButton()->isEnabled());
}

TEST_CASE("with headroom_probes the adapter runs the real CPU allocation probe off the GUI thread", "[probes]")
{
    if (!probesBuilt())
        return;
    std::shared_ptr<ProbeBackend> backend = createProbeBackend();
    const std::vector<ProbeDevice> devices = backend->devices();
    REQUIRE_FALSE(devices.empty());
    CHECK(devices.front().id == QStringLiteral("cpu"));
    CHECK(devices.front().name == QStringLiteral("CPU"));
    CHECK(devices.front().usable);
    for (std::size_t i = 1; i < devices.size(); ++i)
        CHECK(devices[i].id == QStringLiteral("cuda:%1").arg(i - 1));
    CHECK(backend->probeNames() == QStringList{QStringLiteral("allocation"), QStringLiteral("limit search"), QStringLiteral("decode step")});

    {
        MainWindow w(catalog(), testOptions(backend));
        CHECK(w.probePanel()->deviceCombo()->itemText(0) == QStringLiteral("CPU"));
        CHECK(w.probePanel()->deviceCombo()->isEnabled());
        CHECK(w.probePanel()->runButton()->isEnabled());
    }

    // A small model and a 1 GiB budget: the allocator's count equals the formula byte for byte.
    const Catalog cat = catalog();
    Selection sel = Selection::defaults();
    sel.modelId = "qwen2.5-0.5b";
    sel.formatId = "int4-g128";
    sel.contextTokens = 1000;
    sel.users = 3;
    auto request = requestFor(cat, sel, sel.modelId, sel.formatId, "rtx-4090");
    REQUIRE(request);
    auto plan = makePlan(*request);
    REQUIRE(plan);
    ProbeJob job;
    job.deviceId = QStringLiteral("cpu");
    job.probes = {QStringLiteral("allocation")};
    job.plan = *plan;
    job.request = *request;
    job.budget = Bytes{1ull << 30};

    ProbeRunner runner(backend);
    QSignalSpy progress(&runner, &ProbeRunner::progressChanged);
    QSignalSpy finished(&runner, &ProbeRunner::finished);
    runner.start(job);
    REQUIRE(finished.wait(120000));
    REQUIRE_FALSE(finished.front().at(1).toBool());
    const auto rows = finished.front().at(0).value<std::vector<ProbeRow>>();
    QStringList lines;
    for (const ProbeRow& r : rows)
        lines << QStringLiteral("%1 | %2 | %3 | %4 | %5").arg(r.probe, r.quantity).arg(r.predicted).arg(r.measured).arg(r.pass);
    INFO(lines.join(QLatin1Char('\n')).toStdString());
    REQUIRE(rows.size() == 3);
    for (const ProbeRow& r : rows) {
        CHECK(r.probe == QStringLiteral("allocation"));
        CHECK(r.unit == ProbeUnit::Bytes);
        CHECK(r.pass);
        CHECK(r.predicted == r.measured);
        CHECK(r.predicted > 0);
    }
    CHECK(rows[1].quantity == QStringLiteral("KV cache bytes for 3 x 1000 tokens (fp16)"));
    CHECK(rows[2].quantity == QStringLiteral("allocated bytes in total"));
    CHECK(rows[2].measured == rows[0].measured + rows[1].measured);
    CHECK_FALSE(progress.isEmpty());
}

TEST_CASE("importing a config.json runs on a worker and adds the model", "[import]")
{
    QTemporaryDir dir;
    REQUIRE(dir.isValid());
    QFile file(dir.filePath(QStringLiteral("config.json")));
    REQUIRE(file.open(QIODevice::WriteOnly));
    file.write(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
        "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
        "tie_word_embeddings": true, "rms_norm_eps": 1e-05})");
    file.close();

    MainWindow w(catalog(), testOptions());
    QSignalSpy refreshed(&w, &MainWindow::refreshed);
    QSignalSpy imported(w.importer(), &ModelImporter::imported);
    QSignalSpy failed(w.importer(), &ModelImporter::failed);
    w.importModel(file.fileName());
    REQUIRE((!imported.isEmpty() || imported.wait(10000) || !failed.isEmpty()));
    REQUIRE(failed.isEmpty());
    const std::string id = w.selection().modelId;
    CHECK(w.catalog().findModel(id) != nullptr);
    CHECK(w.catalog().importedModels().size() == 1);
    REQUIRE(w.detailPlan());
    CHECK(w.detailPlan()->kvBytesPerToken.value == 2ull * 16 * 8 * 64 * 2);

    w.importModel(dir.filePath(QStringLiteral("missing.gguf")));
    // A fast failure can finish before .then() is attached; Qt then runs the continuation at once.
    REQUIRE((!failed.isEmpty() || failed.wait(10000)));
}

TEST_CASE("an imported model is named by its folder, keeps the format, and is remembered across restarts", "[import]")
{
    QTemporaryDir dir;
    REQUIRE(dir.isValid());
    QDir(dir.path()).mkpath(QStringLiteral("TinyLlama-2B"));
    const QString folder = dir.filePath(QStringLiteral("TinyLlama-2B"));
    QFile file(folder + QStringLiteral("/config.json"));
    REQUIRE(file.open(QIODevice::WriteOnly));
    file.write(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
        "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"})");
    file.close();
    // The settings of this test live in the temporary folder, not in the user's.
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.filePath(QStringLiteral("settings")));
    QSettings().clear();

    MainWindow::Options o = testOptions();
    o.useSettings = true;
    std::string importedId;
    {
        MainWindow w(catalog(), o);
        const std::string formatBefore = w.selection().formatId;
        QSignalSpy imported(w.importer(), &ModelImporter::imported);
        w.importModel(folder);
        REQUIRE((!imported.isEmpty() || imported.wait(10000)));
        QTest::qWait(50);
        importedId = w.selection().modelId;
        const ModelProfile* m = w.catalog().findModel(importedId);
        REQUIRE(m);
        CHECK(modelLabel(*m) == QStringLiteral("TinyLlama-2B"));
        CHECK(modelToolTip(*m).contains(folder));
        CHECK(w.selection().formatId == formatBefore); // the weight format is not switched to the files'
        // Saved a moment after the change, not only on a normal close (a killed app keeps it).
        QTest::qWait(1300);
        CHECK(QSettings().value(QStringLiteral("selection/model")).toString().toStdString() == importedId);
        w.close();
    }
    {
        MainWindow w(catalog(), o);
        QSignalSpy imported(w.importer(), &ModelImporter::imported);
        if (!w.catalog().findModel(importedId))
            REQUIRE(imported.wait(10000));
        QTest::qWait(50);
        CHECK(w.selection().modelId == importedId);
        REQUIRE(w.catalog().findModel(importedId));
        CHECK(modelLabel(*w.catalog().findModel(importedId)) == QStringLiteral("TinyLlama-2B"));
        QStringList recent;
        for (QAction* a : w.findChildren<QAction*>())
            if (a->toolTip() == folder)
                recent << a->text();
        CHECK(recent == QStringList{QStringLiteral("TinyLlama-2B")});
    }
    QSettings().clear();
}

TEST_CASE("the window renders to PNG at its size in light and dark", "[screenshot]")
{
    MainWindow w(catalog(), testOptions());
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    QTemporaryDir dir;
    for (const bool dark : {false, true}) {
        w.setDark(dark);
        CHECK(w.isDark() == dark);
        const QString path = dir.filePath(dark ? QStringLiteral("dark.png") : QStringLiteral("light.png"));
        REQUIRE(saveScreenshot(w, path));
        const QImage image(path);
        CHECK(image.width() == w.width() * static_cast<int>(image.devicePixelRatio()));
        CHECK(image.height() == w.height() * static_cast<int>(image.devicePixelRatio()));
        const QColor window = image.pixelColor(image.width() - 3, image.height() - 3);
        CHECK((window.lightness() < 128) == dark);
    }
    w.setDark(false);
}

TEST_CASE("the window copies core's launch flags and exports its matrix as a report", "[window][export]")
{
    MainWindow w(catalog(), testOptions());
    REQUIRE(w.detailPlan());
    const Selection& sel = w.selection();
    for (const auto& [engine, engineId] : {std::pair{LaunchEngine::Vllm, "vllm"}, std::pair{LaunchEngine::LlamaCpp, "llama.cpp"},
                                           std::pair{LaunchEngine::SgLang, "sglang"}, std::pair{LaunchEngine::Ollama, "ollama"}}) {
        INFO(engineId);
        // llama.cpp and Ollama run GGUF files: an int4-g128 plan of theirs has nothing to launch.
        const QString format = engine == LaunchEngine::LlamaCpp || engine == LaunchEngine::Ollama ? QStringLiteral("q4_k")
                                                                                                 : QStringLiteral("int4-g128");
        w.formatCombo()->setCurrentIndex(w.formatCombo()->findData(format));
        REQUIRE(w.selection().formatId == format.toStdString());
        auto request = requestFor(w.catalog(), sel, sel.modelId, sel.formatId, w.detailCardId(), engineId);
        REQUIRE(request);
        auto plan = makePlan(*request);
        REQUIRE(plan);
        auto expected = launchFlags(*request, *plan);
        REQUIRE(expected);
        QApplication::clipboard()->clear();
        w.copyLaunchFlags(engine);
        CHECK(QApplication::clipboard()->text() == QString::fromStdString(expected->command));
        CHECK(w.statusBar()->currentMessage().contains(QStringLiteral("launch flags copied")));
    }
    w.formatCombo()->setCurrentIndex(w.formatCombo()->findData(QStringLiteral("int4-g128")));
    REQUIRE(w.selection().formatId == "int4-g128");
    // The four engines are in the File menu, with the vLLM and llama.cpp shortcuts kept.
    QStringList shortcuts;
    for (QAction* a : w.findChildren<QAction*>())
        if (a->text().startsWith(QStringLiteral("Copy ")))
            shortcuts << a->shortcut().toString();
    shortcuts.sort();
    CHECK(shortcuts == QStringList{QStringLiteral("Ctrl+Shift+G"), QStringLiteral("Ctrl+Shift+L"), QStringLiteral("Ctrl+Shift+O"),
                                   QStringLiteral("Ctrl+Shift+V")});

    // A KV dtype vLLM lacks: core's refusal shows in the status bar; the clipboard is untouched.
    w.kvCombo()->setCurrentIndex(w.kvCombo()->findData(QStringLiteral("q8_0")));
    REQUIRE(w.selection().kvDtypeId == "q8_0");
    QApplication::clipboard()->setText(QStringLiteral("before"));
    w.copyLaunchFlags(LaunchEngine::Vllm);
    CHECK(QApplication::clipboard()->text() == QStringLiteral("before"));
    CHECK(w.statusBar()->currentMessage().startsWith(QStringLiteral("No vLLM launch flags: vLLM has no 'q8_0' KV cache")));

    const ExportState state = w.exportState();
    REQUIRE(state.plans.size() == state.requests.size());
    REQUIRE_FALSE(state.plans.empty());
    for (std::size_t i = 0; i < state.plans.size(); ++i) {
        CHECK(state.requests[i].card.id == state.plans[i].cardId);
        CHECK(state.requests[i].format.id == state.plans[i].formatId);
    }
    QTemporaryDir dir;
    QString error;
    const QString pdf = dir.filePath(QStringLiteral("window.pdf"));
    REQUIRE(w.exportReportTo(pdf, std::nullopt, &error));
    CHECK(QFileInfo(pdf).size() > 1000);
    CHECK(w.statusBar()->currentMessage() == QStringLiteral("Wrote %1").arg(pdf));
    const QString json = dir.filePath(QStringLiteral("window.json"));
    REQUIRE(w.exportReportTo(json, std::nullopt, &error));
    QFile file(json);
    REQUIRE(file.open(QIODevice::ReadOnly));
    CHECK(validateReport(file.readAll().toStdString()).empty());
}

TEST_CASE("the memory bar's hover text gives exact figures", "[window]")
{
    const Catalog cat = catalog();
    const Selection sel = Selection::defaults();
    auto plan = planFor(cat, sel, sel.modelId, sel.formatId, "rtx-4090");
    REQUIRE(plan);
    MemoryBar bar;
    bar.resize(1000, 60);
    bar.setSegments(billSegments(*plan, 4, 8192), plan->cardTotalBytes);
    const int weights = bar.segmentAt(5);
    REQUIRE(weights == 0);
    CHECK(bar.toolTipFor(0).startsWith(QStringLiteral("weights: 5,700,591,616 B (5.31 GiB), 22.5 % of the card")));
    CHECK(bar.segmentAt(-10) == -1);
}

// Hidden (run with `tst_app "[.probe-screenshot]"`): real CPU probes on qwen2.5-0.5b bf16 under a
// 1.5 GiB budget, then the probes tab to $HEADROOM_PROBE_SCREENSHOT (the verdicts, the budget, the
// calibrated speed, looked at by people; not part of CI).
TEST_CASE("probe tab screenshot after a real CPU run", "[.probe-screenshot]")
{
    MainWindow::Options o = testOptions(createProbeBackend());
    MainWindow w(catalog(), o);
    w.resize(1280, 800);
    w.show();
    w.setDetail("qwen2.5-0.5b", "bf16", "rtx-4060");
    ProbePanel* panel = w.probePanel();
    w.detailTabs()->setCurrentWidget(panel);
    REQUIRE(panel->runButton()->isEnabled());
    panel->budgetBox()->setValue(1.5);
    QSignalSpy finished(panel->runner(), &ProbeRunner::finished);
    panel->run();
    REQUIRE(finished.wait(600000));
    QTest::qWait(300);
    const QByteArray file = qgetenv("HEADROOM_PROBE_SCREENSHOT");
    if (!file.isEmpty())
        CHECK(saveScreenshot(w, QString::fromLocal8Bit(file)));
}

TEST_CASE("the What fits legend keeps each entry on one line at 1280x800", "[window][layout]")
{
    MainWindow w(catalog(), testOptions());
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    QLabel* caption = w.matrixPanel()->findChild<QLabel*>();
    REQUIRE(caption);
    const QString html = caption->text();
    // Each entry's words are joined by non-breaking spaces.
    const QRegularExpression chip(QStringLiteral("<span style='background:[^']*'>(.*?)</span>"));
    int entries = 0;
    for (auto m = chip.globalMatch(html); m.hasNext(); ++entries)
        CHECK_FALSE(m.next().captured(1).contains(QLatin1Char(' ')));
    CHECK(entries == 4);
    // Laid out at the label's width, "partial offload" is on one line.
    QTextDocument doc;
    doc.setDocumentMargin(0);
    doc.setDefaultFont(caption->font());
    doc.setHtml(html);
    doc.setTextWidth(caption->contentsRect().width());
    doc.documentLayout()->documentSize();
    const QString plain = doc.toPlainText();
    const int at = plain.indexOf(QStringLiteral("partial"));
    REQUIRE(at >= 0);
    const QTextBlock block = doc.findBlock(at);
    const QTextLayout* layout = block.layout();
    const int offloadAt = plain.indexOf(QStringLiteral("offload"), at) - block.position();
    CHECK(layout->lineForTextPosition(at - block.position()).lineNumber() == layout->lineForTextPosition(offloadAt).lineNumber());
}
