// headroom-render: turns a Headroom report JSON into HTML or PDF. Run by `headroom-cli report
// --format html|pdf` (which never links Qt), and usable on its own:
//     headroom-render --format pdf -o report.pdf report.json
// On a machine with no display it starts Qt's offscreen platform by itself.

#include "reportrender.h"

#include <QFile>
#include <QGuiApplication>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

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

/// Run by headroom-cli (HEADROOM_RENDER_PARENT_PID set): die with it. PR_SET_PDEATHSIG sends
/// SIGKILL when the parent exits; a parent that died before the call is caught by the check.
void dieWithParent()
{
    const char* parent = std::getenv("HEADROOM_RENDER_PARENT_PID");
    if (!parent || !*parent)
        return;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (std::to_string(::getppid()) != parent)
        std::_Exit(1);
}

int usage(const char* message)
{
    if (message && *message)
        std::fprintf(stderr, "headroom-render: %s\n\n", message);
    std::fprintf(stderr, "Usage: headroom-render --format html|pdf -o FILE REPORT.json|-\n"
                         "Renders a Headroom capacity report (headroom-cli report --format json) as HTML or PDF.\n");
    return 1;
}

} // namespace

int main(int argc, char** argv)
{
    dieWithParent();
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
        else if (arg.size() > 1 && arg[0] == '-')
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
    QFile file;
    const bool opened = input == "-" ? file.open(stdin, QIODevice::ReadOnly)
                                     : (file.setFileName(QString::fromStdString(input)), file.open(QIODevice::ReadOnly));
    if (!opened) {
        std::fprintf(stderr, "headroom-render: cannot read %s: %s\n", input.c_str(), qPrintable(file.errorString()));
        return 1;
    }
    // Bounded: a report is a few hundred KiB; /dev/zero as the input must not take all memory.
    constexpr qint64 kMaxReportBytes = 64ll << 20;
    // A pipe gives what is there at each read: read to the end (or one byte past the bound).
    QByteArray bytes;
    while (bytes.size() <= kMaxReportBytes) {
        const QByteArray chunk = file.read(std::min<qint64>(qint64{1} << 20, kMaxReportBytes + 1 - bytes.size()));
        if (chunk.isEmpty())
            break;
        bytes += chunk;
    }
    if (bytes.size() > kMaxReportBytes) {
        std::fprintf(stderr, "headroom-render: %s: larger than %lld bytes, not a report\n", input.c_str(), kMaxReportBytes);
        return 1;
    }
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
