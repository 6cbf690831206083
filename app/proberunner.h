#pragma once
// Runs probes on a worker (QtConcurrent + QPromise) and reports progress, stage and results on
// the GUI thread. A newer start supersedes a running job, whose results are dropped.

#include "probebackend.h"

#include <QFutureWatcher>
#include <QObject>
#include <QPointer>

#include <memory>

namespace headroom::app {

class ProbeRunner : public QObject
{
    Q_OBJECT
public:
    explicit ProbeRunner(std::shared_ptr<ProbeBackend> backend, QObject* parent = nullptr);
    ~ProbeRunner() override;

    const ProbeBackend& backend() const { return *m_backend; }
    bool isRunning() const;

    /// Starts @p job; cancels and supersedes a running one.
    void start(ProbeJob job);
    /// Cancels the running job; finished() follows with cancelled = true and the rows so far.
    void cancel();

Q_SIGNALS:
    void progressChanged(double fraction, const QString& stage);
    void finished(const std::vector<headroom::app::ProbeRow>& rows, bool cancelled);

private:
    struct Shared;
    std::shared_ptr<ProbeBackend> m_backend;
    std::shared_ptr<Shared> m_shared;            ///< one backend run at a time
    QPointer<QFutureWatcher<void>> m_watcher;
    std::uint64_t m_generation = 0;
};

} // namespace headroom::app
