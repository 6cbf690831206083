#pragma once
// Helpers of tst_app: the built-in profiles, a window for tests, models printed as text lines,
// and a probe backend that the tests control.

#include "catalog.h"
#include "probebackend.h"

#include "testconfig.h"

#include <QAbstractItemModel>
#include <QJsonDocument>
#include <QProcess>
#include <QStringList>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace headroom::app::test {

/// The checkout's profiles (loaded once).
inline const ProfileSet& profiles()
{
    static const ProfileSet set = [] {
        auto loaded = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
        if (!loaded)
            throw std::runtime_error(toString(loaded.error()));
        return *loaded;
    }();
    return set;
}

inline Catalog catalog()
{
    return Catalog(profiles());
}

/// The headroom-cli built next to the app (for tests that compare the two faces).
inline QString cliPath() { return QStringLiteral(HEADROOM_BINARY_DIR "/bin/headroom-cli"); }

/// Runs headroom-cli with @p args (30 s at most) and parses its standard output as JSON; nullopt
/// when it fails to start, times out or exits non-zero.
inline std::optional<QJsonDocument> runCli(const QStringList& args)
{
    QProcess p;
    p.start(cliPath(), args);
    if (!p.waitForFinished(30000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
        return std::nullopt;
    return QJsonDocument::fromJson(p.readAllStandardOutput());
}

/// Every row of a flat model as "a | b | c", DisplayRole, headers first.
inline QStringList printModel(const QAbstractItemModel& model)
{
    QStringList lines;
    QStringList header;
    for (int c = 0; c < model.columnCount(); ++c)
        header << model.headerData(c, Qt::Horizontal).toString();
    lines << header.join(QStringLiteral(" | "));
    for (int r = 0; r < model.rowCount(); ++r) {
        QStringList cells;
        for (int c = 0; c < model.columnCount(); ++c)
            cells << model.data(model.index(r, c)).toString();
        lines << cells.join(QStringLiteral(" | "));
    }
    return lines;
}

/// A backend whose run reports `steps` stages, sleeping `stepMs` each, and returns one row per
/// step (a decode-step row with a batch on the last); it stops early when cancelled.
class FakeProbeBackend final : public ProbeBackend
{
public:
    int steps = 5;
    int stepMs = 20;
    std::atomic<int> runs{0};

    std::vector<ProbeDevice> devices() const override
    {
        return {{QStringLiteral("fake:0"), QStringLiteral("Fake GPU"), Bytes{24ull << 30}, true}};
    }
    QStringList probeNames() const override { return {QStringLiteral("allocation"), QStringLiteral("decode step")}; }
    std::vector<ProbeRow> run(const ProbeJob& job, ProbeProgress& progress) override
    {
        ++runs;
        std::vector<ProbeRow> rows;
        for (int i = 0; i < steps; ++i) {
            if (progress.cancelled())
                break;
            progress.report(static_cast<double>(i) / steps, QStringLiteral("step %1 on %2").arg(i + 1).arg(job.deviceId));
            std::this_thread::sleep_for(std::chrono::milliseconds(stepMs));
            ProbeRow row;
            row.probe = QStringLiteral("allocation");
            row.quantity = QStringLiteral("KV bytes, step %1").arg(i + 1);
            row.predicted = job.plan.kvBytesPerToken.value * 1000;
            row.measured = row.predicted;
            row.pass = true;
            if (i == steps - 1) {
                row.probe = QStringLiteral("decode step");
                row.unit = ProbeUnit::Nanoseconds;
                row.batch = 4;
                row.predicted = 20'000'000;
                row.measured = 25'000'000;
                row.pass = false;
                row.note = QStringLiteral("25 % slower than predicted");
            }
            rows.push_back(row);
        }
        progress.report(1.0, QStringLiteral("done"));
        return rows;
    }
};

} // namespace headroom::app::test
