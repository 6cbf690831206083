#include "proberunner.h"

#include <QtConcurrent/QtConcurrentRun>
#include <QPromise>

#include <algorithm>
#include <mutex>

namespace headroom::app {

struct ProbeRunner::Shared {
    std::mutex backendMutex;  // the backend runs one job at a time, even while a superseded one winds down
};

namespace {

// The core-style progress interface over a QPromise. Progress values are kept strictly
// increasing so that a new stage text is never dropped by QFuture's "no progress" check;
// QFuture itself throttles the signals (at most 25 a second).
class PromiseProgress final : public ProbeProgress
{
public:
    explicit PromiseProgress(QPromise<void>& promise)
        : m_promise(promise)
    {
        m_promise.setProgressRange(0, kRange);
    }
    void report(double fraction, const QString& stage) override
    {
        int value = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * kRange);
        if (stage != m_stage && value <= m_value)
            value = std::min(m_value + 1, kRange);
        if (value <= m_value)
            return;
        m_value = value;
        m_stage = stage;
        m_promise.setProgressValueAndText(value, stage);
    }
    bool cancelled() const override { return m_promise.isCanceled(); }

private:
    static constexpr int kRange = 1'000'000;
    QPromise<void>& m_promise;
    int m_value = -1;
    QString m_stage;
};

} // namespace

ProbeRunner::ProbeRunner(std::shared_ptr<ProbeBackend> backend, QObject* parent)
    : QObject(parent)
    , m_backend(std::move(backend))
    , m_shared(std::make_shared<Shared>())
{
}

ProbeRunner::~ProbeRunner()
{
    if (m_watcher) {
        m_watcher->disconnect(this);
        m_watcher->cancel();
        m_watcher->waitForFinished();
    }
}

bool ProbeRunner::isRunning() const
{
    return m_watcher && m_watcher->isRunning();
}

void ProbeRunner::start(ProbeJob job)
{
    if (m_watcher) {
        m_watcher->disconnect(this);
        m_watcher->cancel();
        // The old watcher deletes itself when its job winds down.
        connect(m_watcher, &QFutureWatcher<void>::finished, m_watcher, &QObject::deleteLater);
    }
    const std::uint64_t generation = ++m_generation;
    auto rows = std::make_shared<std::vector<ProbeRow>>();
    auto* watcher = new QFutureWatcher<void>(this);
    m_watcher = watcher;
    connect(watcher, &QFutureWatcher<void>::progressValueChanged, this, [this, watcher, generation](int value) {
        if (generation == m_generation)
            Q_EMIT progressChanged(value / 1e6, watcher->progressText());
    });
    connect(watcher, &QFutureWatcher<void>::finished, this, [this, watcher, rows, generation] {
        watcher->deleteLater();
        if (generation != m_generation)
            return;
        Q_EMIT finished(*rows, watcher->isCanceled());
    });
    std::shared_ptr<ProbeBackend> backend = m_backend;
    std::shared_ptr<Shared> shared = m_shared;
    watcher->setFuture(QtConcurrent::run([backend, shared, rows, job = std::move(job)](QPromise<void>& promise) {
        std::lock_guard lock(shared->backendMutex);
        PromiseProgress progress(promise);
        if (promise.isCanceled())
            return;
        *rows = backend->run(job, progress);
    }));
}

void ProbeRunner::cancel()
{
    if (m_watcher)
        m_watcher->cancel();
}

} // namespace headroom::app
