// headroom: the desktop app. What fits on a GPU for LLM inference, and proof on the device.

#include "logpanel.h"
#include "mainwindow.h"
#include "probebackend.h"
#include "theme.h"

#include "headroom/core/enginelog/calibration.h"
#include "headroom/core/profiles.h"
#include "headroom/core/safetext.h"
#include "headroom/core/version.h"

#include "headroom/core/remote/remotemodel.h"
#include "headroom/remote/curlhttpclient.h"

#include <cstdlib>
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QMessageBox>
#include <QPainter>
#include <QPixmap>
#include <QSettings>
#include <QTabWidget>
#include <QTimer>

#include <cstdio>
#include <string_view>

namespace {

// The app icon, drawn: a card with a stacked memory bar (weights, KV, overheads, free).
QIcon appIcon()
{
    QPixmap pm(64, 64);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    p.setBrush(QColor(0x26, 0x32, 0x38));
    p.setPen(Qt::NoPen);
    p.drawRoundedRect(4, 8, 56, 48, 6, 6);
    p.fillRect(10, 24, 20, 24, QColor(0x4e, 0x79, 0xa7));
    p.fillRect(30, 30, 12, 18, QColor(0x59, 0xa1, 0x4f));
    p.fillRect(42, 38, 8, 10, QColor(0xf2, 0x8e, 0x2b));
    p.fillRect(10, 14, 44, 4, QColor(0xdd, 0xe3, 0xe8));
    return QIcon(pm);
}

} // namespace

int main(int argc, char** argv)
{
    // The child of a CUDA limit search (a CUDA context does not survive fork()): no GUI.
    if (const int worker = headroom::app::runProbeWorkerIfAsked(argc, argv); worker >= 0)
        return worker;
    // With no display, --help, --version and --screenshot still work: Qt's offscreen platform
    // (without it QApplication aborts: "could not connect to display").
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
        && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        for (int i = 1; i < argc; ++i) {
            const std::string_view a(argv[i]);
            if (a == "--help" || a == "-h" || a == "--version" || a == "-v" || a == "--screenshot") {
                qputenv("QT_QPA_PLATFORM", "offscreen");
                break;
            }
        }
    }
    // Models named by a hub repo or a URL are read over HTTP (headers only) as the CLI reads them.
    headroom::setDefaultHttpClient(headroom::makeCurlHttpClient());
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("headroom"));
    QApplication::setApplicationName(QStringLiteral("headroom"));
    QApplication::setApplicationVersion(QString::fromStdString(headroom::toolVersion()));
    QApplication::setApplicationDisplayName(QStringLiteral("Headroom"));
    QApplication::setDesktopFileName(QStringLiteral("headroom"));
    QApplication::setWindowIcon(appIcon());

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("What fits on a GPU for LLM inference: weights, KV cache and overheads."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("Render the main window to a PNG and exit."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size, e.g. 1280x800."), QStringLiteral("WxH"),
                                  QStringLiteral("1280x800"));
    const QCommandLineOption dark(QStringLiteral("dark"), QStringLiteral("Use the dark palette."));
    const QCommandLineOption light(QStringLiteral("light"), QStringLiteral("Use the light palette."));
    const QCommandLineOption quitAfter(QStringLiteral("quit-after-ms"), QStringLiteral("Quit after N milliseconds (smoke tests)."),
                                       QStringLiteral("N"));
    const QCommandLineOption model(QStringLiteral("model"), QStringLiteral("Model profile id, or a path to a config.json, a model "
                                                                           "directory or a .gguf."),
                                   QStringLiteral("M"));
    const QCommandLineOption profiles(QStringLiteral("profiles"), QStringLiteral("Folder of the built-in profiles."),
                                      QStringLiteral("DIR"));
    const QCommandLineOption tab(QStringLiteral("tab"), QStringLiteral("Detail tab to show: plots, bill, engines, probes or split."),
                                 QStringLiteral("NAME"), QStringLiteral("plots"));
    const QCommandLineOption cards(QStringLiteral("cards"), QStringLiteral("Cards to show, comma-separated profile ids or sizes "
                                                                           "(rtx-4090,12GiB), instead of the ones chosen last."),
                                   QStringLiteral("LIST"));
    const QCommandLineOption log(QStringLiteral("log"), QStringLiteral("Open an engine's start-up log in the Log panel (with "
                                                                       "--screenshot, the panel is rendered)."),
                                 QStringLiteral("FILE"));
    const QCommandLineOption engine(QStringLiteral("engine"), QStringLiteral("Engine profile id (vllm, llama.cpp, ...), instead of the "
                                                                             "one chosen last."),
                                    QStringLiteral("ID"));
    const QCommandLineOption format(QStringLiteral("format"), QStringLiteral("Weight format id (int4-g128, q4_k, ...), instead of the "
                                                                             "one chosen last."),
                                    QStringLiteral("ID"));
    parser.addOptions({screenshot, size, dark, light, quitAfter, model, profiles, tab, cards, log, engine, format});
    parser.process(app);

    const bool shooting = parser.isSet(screenshot);
    int width = 1280;
    int height = 800;
    if (parser.isSet(size) || shooting) {
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        bool okW = false;
        bool okH = false;
        if (wh.size() == 2) {
            width = wh[0].toInt(&okW);
            height = wh[1].toInt(&okH);
        }
        if (!okW || !okH || width < 320 || height < 240) {
            std::fprintf(stderr, "headroom: --size expects WxH such as 1280x800, got '%s'\n", qPrintable(parser.value(size)));
            return 1;
        }
    }

    const bool useSettings = !shooting && !parser.isSet(quitAfter);
    bool darkPalette = parser.isSet(dark);
    if (!parser.isSet(dark) && !parser.isSet(light) && useSettings)
        darkPalette = QSettings().value(QStringLiteral("view/dark"), false).toBool();
    headroom::app::applyTheme(app, darkPalette);

    const std::filesystem::path exe = QCoreApplication::applicationFilePath().toStdString();
    const std::filesystem::path builtin = parser.isSet(profiles) ? std::filesystem::path(parser.value(profiles).toStdString())
                                                                 : headroom::defaultProfilesDir(exe);
    // A screenshot reads no user folder unless one is named for it (HEADROOM_USER_PROFILES: the Log
    // panel's shot shows its Save button as a user sees it, on an empty folder).
    const char* namedUserProfiles = std::getenv("HEADROOM_USER_PROFILES");
    const std::filesystem::path userProfiles = !shooting ? headroom::defaultUserProfilesDir()
        : namedUserProfiles && *namedUserProfiles     ? std::filesystem::path(namedUserProfiles)
                                                       : std::filesystem::path();
    auto loaded = headroom::loadProfiles(builtin, userProfiles);
    if (!loaded) {
        const QString message = QString::fromStdString("Cannot load profiles: " + headroom::toString(loaded.error()));
        std::fprintf(stderr, "headroom: %s\n", qPrintable(message));
        if (!shooting)
            QMessageBox::critical(nullptr, QStringLiteral("Headroom"), message);
        return 1;
    }
    for (const headroom::ProfileError& skipped : loaded->warnings)
        std::fprintf(stderr, "headroom: warning: skipped user profile %s\n", headroom::safeText(headroom::toString(skipped)).c_str());
    // A bad file among the calibrations `log --save` and the Log panel save is named once here;
    // every plan skips it and uses the others (calibration.h readCalibrationFolder).
    for (const std::string& w : headroom::readCalibrationFolder(userProfiles).warnings)
        std::fprintf(stderr, "headroom: warning: %s\n", w.c_str());

    headroom::app::MainWindow::Options options;
    options.useSettings = useSettings;
    options.detectGpus = !shooting;
    options.scanLocalStores = !shooting;
    options.modelArg = parser.value(model).toStdString();
    options.engineArg = parser.value(engine).toStdString();
    options.formatArg = parser.value(format).toStdString();
    for (const QString& c : parser.value(cards).split(QLatin1Char(','), Qt::SkipEmptyParts))
        options.cardArgs.push_back(c.trimmed().toStdString());
    options.probeBackend = headroom::app::createProbeBackend(
        {QCoreApplication::applicationFilePath(), QString::fromLatin1(headroom::app::kProbeWorkerArgument)});
    headroom::app::Catalog catalog(std::move(*loaded));
    catalog.setUserProfilesDir(userProfiles);
    headroom::app::MainWindow window(std::move(catalog), options);
    if (shooting || parser.isSet(size))
        window.resize(width, height);
    else if (!useSettings)
        window.resize(1280, 800);
    const QStringList tabs = {QStringLiteral("plots"), QStringLiteral("bill"), QStringLiteral("engines"), QStringLiteral("probes"),
                              QStringLiteral("split")};
    const qsizetype tabIndex = tabs.indexOf(parser.value(tab));
    if (tabIndex < 0) {
        std::fprintf(stderr, "headroom: --tab expects plots, bill, engines, probes or split\n");
        return 1;
    }
    window.detailTabs()->setCurrentIndex(static_cast<int>(tabIndex));
    window.show();

    if (parser.isSet(log)) {
        headroom::app::LogPanel* panel = window.logPanel();
        if (shooting) {
            panel->resize(width, height);
            const QString file = parser.value(screenshot);
            QObject::connect(panel, &headroom::app::LogPanel::analyzed, panel, [panel, file] {
                QTimer::singleShot(300, panel, [panel, file] {
                    const bool ok = headroom::app::saveScreenshot(*panel, file);
                    if (!ok)
                        std::fprintf(stderr, "headroom: cannot write %s\n", qPrintable(file));
                    QCoreApplication::exit(ok ? 0 : 1);
                });
            });
            QTimer::singleShot(20000, &app, [] {
                std::fprintf(stderr, "headroom: the log was not analysed within 20 s\n");
                QCoreApplication::exit(1);
            });
        }
        // After the connection: the answer may come within the call.
        window.openEngineLog(parser.value(log));
    } else if (shooting) {
        const QString file = parser.value(screenshot);
        // Let layouts and charts settle (and an imported model arrive) before rendering.
        QTimer::singleShot(600, &window, [&window, file] {
            const bool ok = headroom::app::saveScreenshot(window, file);
            if (!ok)
                std::fprintf(stderr, "headroom: cannot write %s\n", qPrintable(file));
            QCoreApplication::exit(ok ? 0 : 1);
        });
    }
    if (parser.isSet(quitAfter)) {
        bool ok = false;
        const int ms = parser.value(quitAfter).toInt(&ok);
        if (!ok || ms < 0) {
            std::fprintf(stderr, "headroom: --quit-after-ms expects a number of milliseconds\n");
            return 1;
        }
        QTimer::singleShot(ms, &app, &QCoreApplication::quit);
    }
    return app.exec();
}
