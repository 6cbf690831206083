// headroom-render: turns a Headroom report JSON into HTML or PDF. Run by `headroom-cli report
// --format html|pdf` (which never links Qt), and usable on its own:
//     headroom-render --format pdf -o report.pdf report.json
// On a machine with no display it starts Qt's offscreen platform by itself.

#include "reportrender.h"

#include <QFile>
#include <QGuiApplication>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// Qt's notes about the headless environment (no XDG_RUNTIME_DIR, offscreen size hints) are not
// the user's business; real warnings and errors still reach stderr.
void messageHandler(QtMsgType type, const QMessageLogContext&, const QString& message)
{
    if (type == QtDebugMsg || type == QtInfoMsg)
        return;
    if (type == QtWarningMsg && (message.startsWith(QLatin1String("QStandardPaths:")) || message.contains(QLatin1String("propagateSizeHints"))))
        return;
    std::fprintf(stderr, "headroom-render: %s\n", qPrintable(message));
}

int usage(const char* message)
{
    if (message && *message)
        std::fprintf(stderr, "headroom-render: %s\n\n", message);
    std::fprintf(stderr, "Usage: headroom-render --format html|pdf -o FILE REPORT.json\n"
                         "Renders a Headroom capacity report (headroom-cli report --format json) as HTML or PDF.\n");
    return 1;
}

} // namespace

int main(int argc, char** argv)
{
    // A headless server has no display: without this Qt aborts (exit 134) instead of rendering.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY")
        && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");

    std::string format, output, input;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if ((arg == "--format" || arg == "-f") && i + 1 < argc)
            format = argv[++i];
        else if ((arg == "-o" || arg == "--output") && i + 1 < argc)
            output = argv[++i];
        else if (arg == "-h" || arg == "--help")
            return usage(nullptr) == 1 ? 0 : 0;
        else if (!arg.empty() && arg[0] == '-')
            return usage(("unknown option " + arg).c_str());
        else if (input.empty())
            input = arg;
        else
            return usage("one report file only");
    }
    if (format != "html" && format != "pdf")
        return usage("--format must be html or pdf");
    if (output.empty() || input.empty())
        return usage("need -o FILE and a report file");

    qInstallMessageHandler(messageHandler);
    QGuiApplication app(argc, argv);
    QFile file(QString::fromStdString(input));
    if (!file.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "headroom-render: cannot read %s: %s\n", input.c_str(), qPrintable(file.errorString()));
        return 1;
    }
    const QByteArray bytes = file.readAll();
    const std::string json(bytes.constData(), static_cast<std::size_t>(bytes.size()));
    QString error;
    const QString out = QString::fromStdString(output);
    const bool ok = format == "html" ? headroom::report::renderReportHtml(json, out, &error)
                                     : headroom::report::renderReportPdf(json, out, &error);
    if (!ok) {
        std::fprintf(stderr, "headroom-render: %s\n", qPrintable(error));
        return 1;
    }
    return 0;
}
