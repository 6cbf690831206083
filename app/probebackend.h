#pragma once
// The probe runner's view of the probes: a small interface of the app's own, so that the panel,
// its worker and its tests do not depend on how probes are built. createProbeBackend() is the
// one wiring point to headroom_probes (probebackend.cpp); without that target the app gets a
// backend whose only device is "CPU (probes not built)", disabled.

#include "headroom/core/plan.h"
#include "headroom/core/probeverdict.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace headroom::app {

/// A device a probe can run on.
struct ProbeDevice {
    QString id;          ///< "cuda:0", "cpu"
    QString name;        ///< "NVIDIA GeForce RTX 4090", "CPU (probes not built)"
    Bytes totalBytes;    ///< 0 when unknown
    bool usable = false; ///< false: listed, but disabled
};

/// What a measured quantity counts.
enum class ProbeUnit {
    Bytes,
    Tokens,
    Nanoseconds,
    BytesPerSecond, ///< the calibrated decode bandwidth
    FlopsPerSecond, ///< the calibrated prefill compute
};

/// One line of predicted against measured.
struct ProbeRow {
    QString probe;               ///< "allocation", "limit search", "decode step"
    QString quantity;            ///< "KV cache bytes for 295 tokens"
    ProbeUnit unit = ProbeUnit::Bytes;
    std::uint64_t predicted = 0;
    std::uint64_t measured = 0;
    std::uint64_t batch = 0;     ///< decode-step rows: the batch measured (the tokens/s plot)
    bool pass = false;
    QString note;                ///< tolerance, or why it failed
    /// The verdict when it is not simply pass or fail (core/probeverdict.h): NotSupported,
    /// Cancelled, or Measured (a timing row without a criterion, a calibration row).
    std::optional<ProbeVerdict> verdict;

    /// verdict, else Pass or Fail from pass.
    ProbeVerdict verdictOf() const { return verdict.value_or(pass ? ProbeVerdict::Pass : ProbeVerdict::Fail); }
};

/// What to probe.
struct ProbeJob {
    QString deviceId;
    QStringList probes;          ///< names from ProbeBackend::probeNames()
    PlanResult plan;             ///< the plan whose figures are checked
    PlanRequest request;         ///< how it was made (model, formats, engine)
    Bytes budget;                ///< cap on what the probes allocate (the panel's budget control,
                                 ///< default the plan's card); 0: the backend's default (CPU 2 GiB,
                                 ///< CUDA the plan's card: one large card checks a smaller one)
};

/// Progress and cancellation as plain calls (STYLE §2); the runner adapts them to a QPromise.
class ProbeProgress
{
public:
    virtual ~ProbeProgress() = default;
    /// @p fraction in [0, 1]; @p stage a short line ("allocating KV cache").
    virtual void report(double fraction, const QString& stage) = 0;
    virtual bool cancelled() const = 0;
};

class ProbeBackend
{
public:
    virtual ~ProbeBackend() = default;
    virtual std::vector<ProbeDevice> devices() const = 0;
    virtual QStringList probeNames() const = 0;
    /// Runs on a worker thread, one job at a time; returns the rows so far when cancelled.
    virtual std::vector<ProbeRow> run(const ProbeJob& job, ProbeProgress& progress) = 0;
};

/// The backend of this build: headroom_probes when it was built, else the "not built" one.
/// @p workerCommand: argv of a process that runs runProbeWorkerIfAsked ("headroom",
/// "--probe-worker"); the CUDA limit search and context overhead need it (a CUDA context does not
/// survive fork()). Empty: CUDA limit searches fail with a message; CPU ones fork.
std::unique_ptr<ProbeBackend> createProbeBackend(const QStringList& workerCommand = {});

/// True when this build links headroom_probes.
bool probesBuilt();

/// The first argument that makes the app a probe worker process.
inline constexpr const char* kProbeWorkerArgument = "--probe-worker";

/// When argv[1] is kProbeWorkerArgument and the probes are built: runs one probe work order
/// (stdin to stdout) and returns the exit code. Otherwise -1: start the app. Call before
/// QApplication exists.
int runProbeWorkerIfAsked(int argc, char** argv);

} // namespace headroom::app
