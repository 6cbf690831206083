// Flat reserve (`--reserve SIZE`, BRIEF §1.4): usable = card total - reserve; nothing else is
// subtracted, no settings.

#include "common.h"

namespace headroom::engines {

namespace {

class FlatEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::Flat; }

    const std::vector<SettingSpec>& settings() const override
    {
        static const std::vector<SettingSpec> none;
        return none;
    }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings&) const override
    {
        return baseSetup(r, *r.model.architecture);
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const EnginePolicy& e = in.request.engine;
        EngineBill b;
        b.reserved.push_back(item("flat_reserve", e.fixedReserve, "--reserve: everything beyond weights and KV"));
        b.usableBytes = saturatingSub(in.request.card.totalBytes, e.fixedReserve);
        finishBudget(in, b);
        return b;
    }
};

} // namespace

const Engine& flatEngine()
{
    static const FlatEngine engine;
    return engine;
}

} // namespace headroom::engines
