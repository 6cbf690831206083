// The Log panel prints what core's analyzeEngineLog returns, the same sentences as
// `headroom-cli log`; local models (hub cache, Ollama, LM Studio) reach the model picker named by
// their store's name with the path in the tooltip.

#include "apptestutils.h"
#include "corpuslog.h"
#include "localmodelsscanner.h"
#include "logpanel.h"
#include "mainwindow.h"

#include "headroom/core/enginelog/logreport.h"
#include "headroom/core/remote/remotemodel.h"
#include "headroom/core/resolve.h"
#include "headroom/remote/curlhttpclient.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <QApplication>
#include <QComboBox>
#include <QDropEvent>
#include <QMimeData>
#include <QUrl>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>

using namespace headroom;
using namespace headroom::app;
using headroom::test::corpusLogText;
using headroom::app::test::catalog;
namespace fs = std::filesystem;

namespace {

const char* kCase = "vllm-0.19-llama-3.1-8b-h100-ctx8192";

void choose(QComboBox* combo, const QString& data)
{
    const int i = combo->findData(data);
    REQUIRE(i >= 0);
    combo->setCurrentIndex(i);
}

/// Runs @p trigger and waits (at most 10 s) for the panel's answer; the spy comes first, as the
/// answer may arrive within the trigger (a worker that finished before its continuation was set).
bool analyzedAfter(LogPanel& panel, const std::function<void()>& trigger)
{
    QSignalSpy spy(&panel, &LogPanel::analyzed);
    trigger();
    for (int i = 0; i < 100 && (panel.isBusy() || spy.isEmpty()); ++i)
        spy.wait(100);
    return !panel.isBusy() && !spy.isEmpty();
}

} // namespace

TEST_CASE("the Log panel prints core's comparison and calibrated what-fits, as headroom-cli log does", "[app][log]")
{
    const Catalog cat = catalog();
    LogPanel panel(cat);
    choose(panel.modelCombo(), QStringLiteral("llama-3.1-8b"));
    choose(panel.weightsCombo(), QStringLiteral("bf16"));
    choose(panel.kvCombo(), QStringLiteral("bf16"));
    panel.contextSpin()->setValue(32768);
    panel.usersSpin()->setValue(16);
    const std::string text = corpusLogText(kCase);
    REQUIRE(analyzedAfter(panel, [&] { panel.setLogText(QString::fromStdString(text), QString::fromLatin1(kCase) + QStringLiteral(".log")); }));
    INFO(panel.errorText().toStdString());
    REQUIRE(panel.report());

    // The same report core makes for the same choices.
    LogReportOptions o;
    o.modelProfile = *cat.findModel("llama-3.1-8b");
    o.weights = "bf16";
    o.kvDtype = "bf16";
    o.contextTokens = 32768;
    o.users = 16;
    auto core = analyzeEngineLog(text, std::string(kCase) + ".log", o, cat.profiles());
    REQUIRE(core);
    const QString shown = panel.reportText();
    CHECK(shown.contains(QStringLiteral("This log is from vLLM (version not printed; the lines are V1's); 10 of 10 lines were understood.")));
    for (const LogComponentRow& c : core->components) {
        INFO(c.component);
        CHECK(shown.contains(QString::fromStdString(c.component)));
        CHECK(shown.contains(QString::fromStdString(c.predicted)));
        CHECK(shown.contains(QString::fromStdString(c.measured)));
    }
    // The uncalibrated plan's figure moves with the vLLM unit; the calibrated one is the log's.
    CHECK(core->kvFigureLine.starts_with("GPU KV cache size (tokens): the log 476,016, the plan "));
    CHECK(core->kvFigureLine.ends_with(", calibrated 476,016 (exact)"));
    CHECK(shown.contains(QString::fromStdString(core->kvFigureLine)));
    REQUIRE(core->whatFits.lines.size() == 3);
    for (const std::string& line : core->whatFits.lines)
        CHECK(shown.contains(QString::fromStdString(line)));
    CHECK(core->whatFits.lines[0].starts_with("at context 32,768 and 16 users: 29,751 blocks (476,016 tokens), room for 14 users"));
    CHECK(shown.contains(QStringLiteral("Calibrated what fits on this card")));

    // The same log without its KV lines calibrates nothing: the heading says so, as core's does.
    std::string noKv;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t nl = text.find('\n', at);
        const std::string line = text.substr(at, nl - at + 1);
        if (line.find("KV cache") == std::string::npos && line.find("concurrency") == std::string::npos)
            noKv += line;
        at = nl + 1;
    }
    REQUIRE(analyzedAfter(panel, [&] { panel.setLogText(QString::fromStdString(noKv), QStringLiteral("nokv.log")); }));
    REQUIRE(panel.report());
    CHECK_FALSE(panel.report()->comparison.saveRefusal.empty());
    CHECK(panel.reportText().contains(QStringLiteral("What fits on this card (not calibrated: the plan's own estimates)")));
    CHECK_FALSE(panel.reportText().contains(QStringLiteral("Calibrated what fits")));
    REQUIRE(analyzedAfter(panel, [&] { panel.setLogText(QString::fromStdString(text), QString::fromLatin1(kCase) + QStringLiteral(".log")); }));

    // headroom-cli log prints the same sentences.
    const fs::path logFile = fs::path(HEADROOM_BINARY_DIR) / "tst_logpanel-vllm.log";
    std::ofstream(logFile, std::ios::binary) << text;
    QProcess cli;
    cli.start(QStringLiteral(HEADROOM_BINARY_DIR "/bin/headroom-cli"),
              {QStringLiteral("log"), QString::fromStdString(logFile.string()), QStringLiteral("-m"), QStringLiteral("llama-3.1-8b"),
               QStringLiteral("-w"), QStringLiteral("bf16"), QStringLiteral("--kv-dtype"), QStringLiteral("bf16"),
               QStringLiteral("--context"), QStringLiteral("32768"), QStringLiteral("--users"), QStringLiteral("16")});
    REQUIRE(cli.waitForFinished(30000));
    const QString out = QString::fromUtf8(cli.readAllStandardOutput());
    CHECK(cli.exitCode() == 0);
    CHECK(out.contains(QString::fromStdString(core->kvFigureLine)));
    for (const std::string& line : core->whatFits.lines)
        CHECK(out.contains(QString::fromStdString(line)));
}

TEST_CASE("the Log panel: the model the log names, text that is no log, what a drop opens", "[app][log]")
{
    const Catalog cat = catalog();
    LogPanel panel(cat);
    // Offline the repo id falls back to its base model's profile, and says so.
    REQUIRE(analyzedAfter(panel, [&] { panel.setLogText(QString::fromStdString(corpusLogText(kCase)), QStringLiteral("serve.log")); }));
    REQUIRE(panel.report());
    CHECK(panel.reportText().contains(QStringLiteral("planned with the profile llama-3.1-8b")));

    REQUIRE(analyzedAfter(panel, [&] { panel.setLogText(QStringLiteral("hello\nworld\n"), QStringLiteral("notes.txt")); }));
    CHECK_FALSE(panel.report());
    CHECK(panel.errorText().toStdString() ==
          "This log is from an engine not recognised; 0 of 2 lines were understood. Expected the start-up lines of vLLM, SGLang, TGI, "
          "TensorRT-LLM, llama.cpp or Ollama.");
    CHECK_FALSE(panel.saveButton()->isEnabled());

    CHECK(LogPanel::looksLikeEngineLog(QStringLiteral("/tmp/serve.log")));
    CHECK(LogPanel::looksLikeEngineLog(QStringLiteral("/tmp/vllm-output")));
    CHECK_FALSE(LogPanel::looksLikeEngineLog(QStringLiteral("/tmp/model.gguf")));
    CHECK_FALSE(LogPanel::looksLikeEngineLog(QStringLiteral("/tmp/config.json")));
    CHECK_FALSE(LogPanel::looksLikeEngineLog(QString::fromStdString(fs::temp_directory_path().string())));
}

TEST_CASE("local models reach the model picker, named by their store, the path in the tooltip", "[app][local]")
{
    const fs::path fx = HEADROOM_FIXTURES_DIR;
    if (!fs::exists(fx / "hf/Llama-2-7b-hf/config.json") || !fs::exists(fx / "gguf/stories260K.gguf")) {
        WARN("skipped: no fixtures at " << fx);
        return;
    }
    QTemporaryDir home;
    REQUIRE(home.isValid());
    const std::string make = std::string(HEADROOM_SOURCE_DIR "/tests/cli/make-stores.sh ") + fx.string() + " " + home.path().toStdString() + "/h";
    REQUIRE(std::system(make.c_str()) == 0);
    const QByteArray oldHome = qgetenv("HOME");
    qputenv("HOME", (home.path() + QStringLiteral("/h")).toLocal8Bit());
    for (const char* v : {"HF_HOME", "HF_HUB_CACHE", "OLLAMA_MODELS"})
        qunsetenv(v);

    MainWindow::Options o;
    o.useSettings = false;
    o.detectGpus = false;
    o.scanLocalStores = true;
    o.probeBackend = std::make_shared<headroom::app::test::FakeProbeBackend>();
    MainWindow w(catalog(), o);
    QComboBox* combo = w.modelCombo();
    for (int i = 0; i < 100 && combo->findText(QStringLiteral("stories:260k")) < 0; ++i)
        QTest::qWait(100);
    qputenv("HOME", oldHome);

    const int hub = combo->findText(QStringLiteral("meta-llama/Llama-2-7b-hf"));
    const int ollama = combo->findText(QStringLiteral("stories:260k"));
    const int lms = combo->findText(QStringLiteral("ggml-org/stories260K-GGUF/stories260K.gguf"));
    REQUIRE(hub >= 0);
    REQUIRE(ollama >= 0);
    REQUIRE(lms >= 0);
    const QString hubTip = combo->itemData(hub, Qt::ToolTipRole).toString();
    CHECK(hubTip.contains(QStringLiteral("/.cache/huggingface/hub/models--meta-llama--Llama-2-7b-hf/snapshots/8cca527612d856d7d32bd94f8103728d614eb852")));
    CHECK(hubTip.contains(QStringLiteral("hf-cache meta-llama/Llama-2-7b-hf@8cca527612d8")));
    CHECK(combo->itemData(ollama, Qt::ToolTipRole).toString().contains(QStringLiteral("/.ollama/models/blobs/sha256-aaaa")));
    // It carries the exact bytes of its files (13,476,839,424 B: Llama-2-7b's index total_size).
    const ModelProfile* model = w.catalog().findModel(combo->itemData(hub).toString().toStdString());
    REQUIRE(model);
    REQUIRE(model->exactWeights);
    CHECK(model->exactWeights->totalBytes.value == 13'476'839'424ull);
    // The Log panel offers them too.
    CHECK(w.logPanel()->modelCombo()->findText(QStringLiteral("stories:260k")) >= 0);
}

TEST_CASE("a log dropped on the window opens the Log panel on it; a model file is imported instead", "[app][log]")
{
    MainWindow::Options o;
    o.useSettings = false;
    o.detectGpus = false;
    o.probeBackend = std::make_shared<headroom::app::test::FakeProbeBackend>();
    MainWindow w(catalog(), o);
    const fs::path logFile = fs::path(HEADROOM_BINARY_DIR) / "tst_logpanel-drop.log";
    std::ofstream(logFile, std::ios::binary) << corpusLogText(kCase);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(logFile.string()))});
    // As a drag does it: the enter (which must be accepted) makes the window the drop target.
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &enter);
    CHECK(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    LogPanel* panel = w.logPanel();
    REQUIRE(analyzedAfter(*panel, [&] { QApplication::sendEvent(&w, &drop); }));
    CHECK(drop.isAccepted());
    CHECK(panel->isVisible());
    REQUIRE(panel->report());
    CHECK(panel->report()->comparison.kvFigure->calibrated == 476'016);
}

TEST_CASE("a calibration saved from the Log panel is used, and named, by the app's plans on that card", "[app][log]")
{
    QTemporaryDir user;
    REQUIRE(user.isValid());
    auto loaded = loadProfiles(fs::path(HEADROOM_SOURCE_DIR) / "profiles", user.path().toStdString());
    REQUIRE(loaded);
    Catalog cat(*loaded);
    cat.setUserProfilesDir(user.path().toStdString());
    LogPanel panel(cat);
    choose(panel.modelCombo(), QStringLiteral("llama-3.1-8b"));
    choose(panel.weightsCombo(), QStringLiteral("bf16"));
    REQUIRE(analyzedAfter(panel, [&] { panel.setLogText(QString::fromStdString(corpusLogText(kCase)), QStringLiteral("serve.log")); }));
    REQUIRE(panel.saveButton()->isEnabled());
    auto saved = panel.saveCalibration();
    REQUIRE(saved);
    CHECK(saved->endsWith(QStringLiteral("/calibrations/79.19_GiB.vllm.llama-3.1-8b.json")));
    // Saved for the card chosen: the H100 SXM profile, whose plans under vLLM at the log's
    // micro-batch then say they are calibrated.
    REQUIRE(analyzedAfter(panel, [&] { choose(panel.cardCombo(), QStringLiteral("h100-sxm")); }));
    saved = panel.saveCalibration();
    REQUIRE(saved);
    CHECK(saved->endsWith(QStringLiteral("/calibrations/h100-sxm.vllm.llama-3.1-8b.json")));
    Selection s = Selection::defaults();
    s.modelId = "llama-3.1-8b";
    s.engineId = "vllm";
    s.ubatchTokens = 8192;
    auto plan = planFor(cat, s, "llama-3.1-8b", "bf16", "h100-sxm");
    REQUIRE(plan);
    REQUIRE_FALSE(plan->notes.empty());
    CHECK(plan->notes.back().find("calibrated by vllm on h100-sxm from serve.log") == 0);
    // Another card is not.
    auto other = planFor(cat, s, "llama-3.1-8b", "bf16", "rtx-4090");
    REQUIRE(other);
    for (const std::string& n : other->notes)
        CHECK(n.find("calibrated by") == std::string::npos);
    // A failed analysis (the log cut before its KV lines) cannot be saved: the button says why,
    // and the good calibration stays.
    const std::string text = corpusLogText(kCase);
    REQUIRE(analyzedAfter(panel, [&] {
        panel.setLogText(QString::fromStdString(text.substr(0, text.find("Available KV cache memory"))), QStringLiteral("cut.log"));
    }));
    CHECK_FALSE(panel.saveButton()->isEnabled());
    CHECK(panel.saveButton()->toolTip().startsWith(QStringLiteral("Not saved: the log prints no KV figure")));
    CHECK_FALSE(panel.saveCalibration());
    plan = planFor(cat, s, "llama-3.1-8b", "bf16", "h100-sxm");
    REQUIRE(plan);
    CHECK(plan->notes.back().find("calibrated by vllm on h100-sxm from serve.log") == 0);
}

TEST_CASE("the app reads models named by a hub repo or a URL over HTTP, as the CLI does", "[app][log]")
{
    // main() installs the curl client; without one the error says so (review: the app claimed it
    // "reads no models over HTTP" while the CLI did). The loopback import itself is tested by
    // tests/remote (cli_remote_models runs the app's --model on hf:// when the app is built).
    setDefaultHttpClient(nullptr);
    auto r = resolveModel("no-org/no-model", catalog().profiles());
    REQUIRE_FALSE(r);
    CHECK(r.error().find("this build has no HTTP client") != std::string::npos);
    setDefaultHttpClient(makeCurlHttpClient());
    CHECK(defaultHttpClient());
}

TEST_CASE("the log panel says which settings it read from the log and which it assumed", "[app][log]")
{
    const Catalog cat = catalog();
    LogPanel panel(cat);
    choose(panel.modelCombo(), QStringLiteral("llama-3.1-8b"));
    choose(panel.weightsCombo(), QStringLiteral("bf16"));
    REQUIRE(analyzedAfter(panel, [&] { panel.setLogText(QString::fromStdString(corpusLogText(kCase)), QStringLiteral("serve.log")); }));
    const QString text = panel.reportText();
    CHECK(text.contains(QStringLiteral("Read from the log: gpu-memory-utilization=0.95, max-model-len=8192")));
    CHECK(text.contains(QStringLiteral("Assumed (neither printed nor given; the engine's defaults): ")));
    CHECK(text.contains(QStringLiteral("tensor-parallel-size=1 (the log prints no TP size: set it if the engine ran on more GPUs)")));
    // The TP box gives it, as headroom-cli log --tp does.
    REQUIRE(analyzedAfter(panel, [&] { panel.tpSpin()->setValue(2); }));
    CHECK(panel.reportText().contains(QStringLiteral("Given: tensor parallel 2")));
    REQUIRE(panel.report());
    CHECK(panel.report()->request.tensorParallel == 2);
}
