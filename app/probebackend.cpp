#include "probebackend.h"

namespace headroom::app {

namespace {

// Without headroom_probes (or before its adapter is written): one disabled device, no probes.
class NotBuiltBackend final : public ProbeBackend
{
public:
    std::vector<ProbeDevice> devices() const override
    {
        return {{QStringLiteral("cpu"),
                 probesBuilt() ? QStringLiteral("CPU (probe adapter not wired yet)") : QStringLiteral("CPU (probes not built)"),
                 Bytes{}, false}};
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

} // namespace

bool probesBuilt()
{
#ifdef HEADROOM_WITH_PROBES
    return true;
#else
    return false;
#endif
}

std::unique_ptr<ProbeBackend> createProbeBackend()
{
    // Wiring point: when headroom_probes exists (app/CMakeLists.txt defines HEADROOM_WITH_PROBES),
    // return an adapter over its probe API here.
    return std::make_unique<NotBuiltBackend>();
}

} // namespace headroom::app
