#include "probebackend.h"

#ifdef HEADROOM_WITH_PROBES
#include "formatting.h"

#include "headroom/probes/probes.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#endif

#include <string_view>

namespace headroom::app {

namespace {

#ifdef HEADROOM_WITH_PROBES

namespace probes = headroom::probes;

const QString kAllocation = QStringLiteral("allocation");
const QString kLimit = QStringLiteral("limit search");
const QString kDecode = QStringLiteral("decode step");

// The app's progress interface seen as the probes' one.
class ProgressBridge final : public probes::ProbeProgress
{
public:
    explicit ProgressBridge(app::ProbeProgress& progress)
        : m_progress(progress)
    {
    }
    void report(double fraction, std::string_view stage) override
    {
        m_progress.report(fraction, QString::fromUtf8(stage.data(), static_cast<qsizetype>(stage.size())));
    }
    bool cancelled() const override { return m_progress.cancelled(); }

private:
    app::ProbeProgress& m_progress;
};

std::uint64_t nanoseconds(double ms)
{
    return ms > 0 ? static_cast<std::uint64_t>(std::llround(ms * 1e6)) : 0;
}

QJsonArray tableOf(const probes::ProbeResult& r, std::string_view key)
{
    const probes::ProbeValue* v = r.find(key);
    const auto* raw = v ? std::get_if<probes::RawJson>(v) : nullptr;
    return raw ? QJsonDocument::fromJson(QByteArray::fromStdString(raw->text)).array() : QJsonArray();
}

QString summaryOf(const probes::ProbeResult& r)
{
    return QString::fromStdString(r.summary);
}

// A result that carries no measurement (not supported, device missing, failed early): one row.
ProbeRow failureRow(const QString& probe, const QString& quantity, const probes::ProbeResult& r)
{
    ProbeRow row;
    row.probe = probe;
    row.quantity = quantity;
    row.pass = false;
    row.note = summaryOf(r);
    if (r.verdict() == ProbeVerdict::NotSupported || r.verdict() == ProbeVerdict::Cancelled)
        row.verdict = r.verdict();
    return row;
}

void allocationRows(const probes::ProbeResult& r, std::vector<ProbeRow>& rows)
{
    const auto users = r.integer("users").value_or(0);
    const auto context = r.integer("context_tokens").value_or(0);
    const auto total = r.integer("measured_bytes");
    if (!total) {
        rows.push_back(failureRow(kAllocation, QStringLiteral("weights + KV cache bytes"), r));
        return;
    }
    const auto add = [&](const QString& quantity, const char* predictedKey, const char* measuredKey, const QString& note) {
        const auto predicted = r.integer(predictedKey);
        const auto measured = r.integer(measuredKey);
        if (predicted && measured)
            rows.push_back({kAllocation, quantity, ProbeUnit::Bytes, *predicted, *measured, 0, *predicted == *measured, note, {}});
    };
    add(QStringLiteral("weights bytes (%1)").arg(QString::fromStdString(r.text("weights_format").value_or(""))),
        "predicted_weights_bytes", "measured_weights_bytes", QStringLiteral("every tensor in its packed layout"));
    add(QStringLiteral("KV cache bytes for %1 x %2 tokens (%3)")
            .arg(users)
            .arg(context)
            .arg(QString::fromStdString(r.text("kv_dtype").value_or(""))),
        "predicted_kv_bytes", "measured_kv_bytes", QStringLiteral("paged in blocks of %1 tokens").arg(probes::kProbeBlockTokens));
    // The total carries the probe's own verdict (a weights or KV allocation past the budget fails it).
    rows.push_back({kAllocation, QStringLiteral("allocated bytes in total"), ProbeUnit::Bytes, r.integer("predicted_bytes").value_or(0),
                    *total, 0, r.pass, summaryOf(r), {}});
    if (const auto driver = r.integer("driver_measured_bytes"))
        rows.push_back({kAllocation, QStringLiteral("device free memory taken"), ProbeUnit::Bytes, r.integer("predicted_bytes").value_or(0),
                        *driver, 0, r.pass, QStringLiteral("drop of cudaMemGetInfo free: cudaMalloc rounds each allocation up"), {}});
}

void limitRows(const probes::ProbeResult& r, std::vector<ProbeRow>& rows)
{
    const auto predicted = r.integer("predicted_tokens");
    const auto verified = r.integer("verified_tokens");
    if (!predicted || !verified) {
        rows.push_back(failureRow(kLimit, QStringLiteral("resident tokens that run a decode step"), r));
        return;
    }
    const Bytes budget{r.integer("budget_bytes").value_or(0)};
    rows.push_back({kLimit, QStringLiteral("resident tokens within a %1 budget").arg(bytesText(budget)), ProbeUnit::Tokens, *predicted,
                    *verified, 0, r.pass, summaryOf(r), {}});
    for (const QJsonValue& v : tableOf(r, "frontier")) {
        const QJsonObject p = v.toObject();
        const auto users = static_cast<std::uint64_t>(p.value(QStringLiteral("users")).toInteger());
        const auto context = static_cast<std::uint64_t>(p.value(QStringLiteral("context_tokens")).toInteger());
        const bool ran = p.value(QStringLiteral("verified")).toBool();
        const QString note = ran ? QStringLiteral("decode step ran in %1 ms").arg(p.value(QStringLiteral("step_ms")).toDouble(), 0, 'f', 2)
                                 : p.value(QStringLiteral("error")).toString();
        rows.push_back({kLimit, QStringLiteral("frontier: %1 users x %2 tokens").arg(users).arg(context), ProbeUnit::Tokens,
                        users * context, ran ? users * context : 0, 0, ran, note, {}});
    }
}

void timingRows(const probes::ProbeResult& r, std::vector<ProbeRow>& rows)
{
    const QJsonArray decode = tableOf(r, "decode");
    const QJsonArray context = tableOf(r, "context");
    const QJsonArray prefill = tableOf(r, "prefill");
    if (decode.isEmpty() && context.isEmpty() && prefill.isEmpty()) {
        rows.push_back(failureRow(kDecode, QStringLiteral("decode step time"), r));
        return;
    }
    // Each row is a measurement shown with the calibrated model's prediction and carries the
    // probe's verdict against its stated tolerance; the calibration rows carry none.
    const double tolerance = r.number("tolerance_fraction").value_or(0);
    const auto verdictOf = [](const QJsonObject& p) {
        const auto v = parseProbeVerdict(p.value(QStringLiteral("verdict")).toString().toStdString());
        return v.value_or(ProbeVerdict::Measured);
    };
    const auto noteOf = [&](const QJsonObject& p) {
        const double ratio = p.value(QStringLiteral("ratio")).toDouble();
        const QString speed = QStringLiteral("%1 tokens/s").arg(p.value(QStringLiteral("tokens_per_s")).toDouble(), 0, 'f', 1);
        if (p.value(QStringLiteral("calibration")).toBool())
            return QStringLiteral("%1; calibrates the speed model (no verdict)").arg(speed);
        return QStringLiteral("%1; measured / predicted %2 (tolerance +-%3 %)").arg(speed).arg(ratio, 0, 'f', 2).arg(100 * tolerance, 0, 'f', 0);
    };
    const auto add = [&](const QString& quantity, const QJsonObject& p, const char* predictedKey, const char* measuredKey,
                         std::uint64_t batch) {
        ProbeRow row{kDecode, quantity, ProbeUnit::Nanoseconds,
                     nanoseconds(p.value(QLatin1String(predictedKey)).toDouble()),
                     nanoseconds(p.value(QLatin1String(measuredKey)).toDouble()), batch, false, noteOf(p), {}};
        const ProbeVerdict v = verdictOf(p);
        row.pass = v == ProbeVerdict::Pass;
        if (v != ProbeVerdict::Pass && v != ProbeVerdict::Fail)
            row.verdict = v;
        rows.push_back(row);
    };
    for (const QJsonValue& v : decode) {
        const QJsonObject p = v.toObject();
        const auto batch = static_cast<std::uint64_t>(p.value(QStringLiteral("batch")).toInteger());
        add(QStringLiteral("step, batch %1 x %2 tokens").arg(batch).arg(p.value(QStringLiteral("context_tokens")).toInteger()), p,
            "predicted_step_ms", "step_ms", batch);
    }
    for (const QJsonValue& v : context) {
        const QJsonObject p = v.toObject();
        add(QStringLiteral("step, batch %1 x %2 tokens").arg(p.value(QStringLiteral("batch")).toInteger())
                .arg(p.value(QStringLiteral("context_tokens")).toInteger()), p, "predicted_step_ms", "step_ms", 0);
    }
    for (const QJsonValue& v : prefill) {
        const QJsonObject p = v.toObject();
        add(QStringLiteral("prefill of %1 tokens (TTFT)").arg(p.value(QStringLiteral("prompt_tokens")).toInteger()), p,
            "predicted_ttft_ms", "ttft_ms", 0);
    }
    // What the speed model was calibrated with: measurements, no verdict.
    const double bandwidth = r.number("calibrated_bandwidth_gbps").value_or(0);
    const double read = r.number("read_bandwidth_gbps").value_or(0);
    if (bandwidth > 0)
        rows.push_back({kDecode, QStringLiteral("decode bandwidth (calibrates the speed model)"), ProbeUnit::BytesPerSecond,
                        static_cast<std::uint64_t>(std::llround(read * 1e9)), static_cast<std::uint64_t>(std::llround(bandwidth * 1e9)), 0,
                        false,
                        read > 0 ? QStringLiteral("predicted: the device probe's read bandwidth; the batch-1 step reads at %1 of it")
                                       .arg(bandwidth / read, 0, 'f', 2)
                                 : QStringLiteral("bytes of the batch-1 step / its time"),
                        ProbeVerdict::Measured});
    if (const double peak = r.number("calibrated_peak_tflops").value_or(0); peak > 0)
        rows.push_back({kDecode, QStringLiteral("prefill compute (calibrates the speed model)"), ProbeUnit::FlopsPerSecond, 0,
                        static_cast<std::uint64_t>(std::llround(peak * 1e12)), 0, false,
                        QStringLiteral("FLOPs of the longest prefill / its time"), ProbeVerdict::Measured});
}

// headroom_probes behind the panel's interface: "cpu" always, "cuda:N" for every CUDA device
// the probes find. Each run opens the device, runs the checked probes on the job's request and
// turns their predicted and measured values into rows.
class ProbesBackend final : public ProbeBackend
{
public:
    explicit ProbesBackend(QStringList workerCommand)
        : m_workerCommand(std::move(workerCommand))
    {
        m_devices.push_back({QStringLiteral("cpu"), QStringLiteral("CPU"), Bytes{}, true});
        const int cuda = probes::cudaDeviceCount();
        for (int i = 0; i < cuda; ++i)
            m_devices.push_back({QStringLiteral("cuda:%1").arg(i), QStringLiteral("CUDA device %1").arg(i), Bytes{}, true});
    }

    std::vector<ProbeDevice> devices() const override { return m_devices; }
    QStringList probeNames() const override { return {kAllocation, kLimit, kDecode}; }

    std::vector<ProbeRow> run(const ProbeJob& job, ProbeProgress& progress) override
    {
        std::vector<ProbeRow> rows;
        const auto spec = probes::parseDeviceSpec(job.deviceId.toStdString());
        if (!spec) {
            rows.push_back({QStringLiteral("device"), job.deviceId, ProbeUnit::Bytes, 0, 0, 0, false, QStringLiteral("not a device"), {}});
            return rows;
        }
        probes::ProbeRequest request;
        request.device = *spec;
        if (job.budget.value > 0)
            request.budget = job.budget;
        else if (spec->kind == probes::DeviceKind::Cuda && job.plan.cardTotalBytes.value > 0)
            request.budget = job.plan.cardTotalBytes;
        request.model.model = job.request.model;
        request.model.format = job.request.format;
        request.model.kvDtype = job.request.kvDtype;
        // The point the plan answered for (the request's, or the engine's default context).
        request.model.contextTokens = job.plan.contextTokens;
        request.model.users = std::max<std::uint64_t>(job.plan.users, 1);
        // The decode-step predictions need the measured read bandwidth: the device probe first.
        if (job.probes.contains(kDecode))
            request.probes.push_back(probes::ProbeKind::Device);
        if (job.probes.contains(kAllocation))
            request.probes.push_back(probes::ProbeKind::Allocation);
        if (job.probes.contains(kLimit))
            request.probes.push_back(probes::ProbeKind::Limit);
        if (job.probes.contains(kDecode))
            request.probes.push_back(probes::ProbeKind::Timing);
        if (request.probes.empty()) {
            progress.report(1.0, QStringLiteral("no probe chosen"));
            return rows;
        }
        probes::Isolation isolation;
        if (spec->kind == probes::DeviceKind::Cuda && !m_workerCommand.isEmpty()) {
            isolation.mode = probes::Isolation::Mode::Exec;
            for (const QString& arg : m_workerCommand)
                isolation.workerCommand.push_back(arg.toStdString());
        }
        request.limitOptions.isolation = isolation;
        request.deviceOptions.isolation = isolation;
        // Each frontier point is a decode step over the whole pool; a few points keep a run short.
        request.limitOptions.maxFrontierPoints = 4;
        if (spec->kind == probes::DeviceKind::Cpu)
            request.timingOptions = probes::cpuTimingDefaults();

        ProgressBridge bridge(progress);
        const probes::ProbeReport report = probes::runProbes(request, bridge);
        for (const probes::ProbeResult& r : report.results) {
            if (r.cancelled)
                continue;
            if (r.probe == "allocation")
                allocationRows(r, rows);
            else if (r.probe == "limit")
                limitRows(r, rows);
            else if (r.probe == "timing")
                timingRows(r, rows);
            else if (r.probe == "device" && !r.pass)
                rows.push_back(failureRow(QStringLiteral("device"), QString::fromStdString(report.device.spec), r));
        }
        if (!report.device.error.empty() && rows.empty()) {
            ProbeRow row{QStringLiteral("device"), QString::fromStdString(report.device.spec), ProbeUnit::Bytes, 0, 0, 0, false,
                         QString::fromStdString(report.device.error), {}};
            rows.push_back(row);
        }
        progress.report(1.0, QStringLiteral("done on %1").arg(QString::fromStdString(report.device.name.empty() ? report.device.spec
                                                                                                               : report.device.name)));
        return rows;
    }

private:
    QStringList m_workerCommand;
    std::vector<ProbeDevice> m_devices;
};

#else

// Without headroom_probes: one disabled device, no probes.
class NotBuiltBackend final : public ProbeBackend
{
public:
    std::vector<ProbeDevice> devices() const override
    {
        return {{QStringLiteral("cpu"), QStringLiteral("CPU (probes not built)"), Bytes{}, false}};
    }
    QStringList probeNames() const override
    {
        return {QStringLiteral("allocation"), QStringLiteral("limit search"), QStringLiteral("decode step")};
    }
    std::vector<ProbeRow> run(const ProbeJob&, ProbeProgress& progress) override
    {
        progress.report(1.0, QStringLiteral("probes not built"));
        return {};
    }
};

#endif

} // namespace

bool probesBuilt()
{
#ifdef HEADROOM_WITH_PROBES
    return true;
#else
    return false;
#endif
}

std::unique_ptr<ProbeBackend> createProbeBackend(const QStringList& workerCommand)
{
#ifdef HEADROOM_WITH_PROBES
    return std::make_unique<ProbesBackend>(workerCommand);
#else
    Q_UNUSED(workerCommand);
    return std::make_unique<NotBuiltBackend>();
#endif
}

int runProbeWorkerIfAsked(int argc, char** argv)
{
    if (argc < 2 || std::string_view(argv[1]) != kProbeWorkerArgument)
        return -1;
#ifdef HEADROOM_WITH_PROBES
    return probes::runProbeWorker(STDIN_FILENO, STDOUT_FILENO);
#else
    return 1;
#endif
}

} // namespace headroom::app
