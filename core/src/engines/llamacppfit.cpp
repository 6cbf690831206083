// llama.cpp --fit (common/fit.cpp common_params_fit_impl, release v0.4.0): see llamacppfit.h.

#include "headroom/core/engines/llamacppfit.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace headroom::llamacpp {

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

// Thrown where llama.cpp throws common_params_fit_exception: the fit ends, what it changed stays.
struct FitAbort {
    std::string why;
};

// snprintf of one of the fit's lines (the formats are literals of this file).
template <typename... Args>
std::string format(const char* fmt, Args... args)
{
    char buf[320];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

const char* fractionPattern(FfnOverflow f)
{
    switch (f) {
    case FfnOverflow::Attn:
        return "ffn_(gate|up|gate_up|down).*";
    case FfnOverflow::Up:
        return "ffn_(gate|gate_up|down).*";
    case FfnOverflow::Gate:
        return "ffn_down.*";
    case FfnOverflow::Moe:
        return "ffn_(up|down|gate_up|gate)_(ch|)exps";
    case FfnOverflow::None:
        break;
    }
    return "";
}

class Fitter {
public:
    Fitter(const OffloadTensors& list, const Architecture& arch, const ContextSettings& context,
           const OffloadSettings& base, const FitSettings& fit)
        : m_list(list), m_arch(arch), m_context(context), m_base(base), m_fit(fit), m_nd(fit.devices.size())
    {
    }

    FitResult run()
    {
        try {
            fit();
            m_out.log.push_back("common_fit_params: successfully fit params to free device memory");
        } catch (const FitAbort& a) {
            m_out.outcome = FitOutcome::Failed;
            m_out.failure = a.why;
            m_out.log.push_back("common_fit_params: failed to fit params to free device memory: " + a.why);
        }
        m_out.ctxSizeTokens = m_nCtx;
        m_out.usedBytes.clear();
        for (std::int64_t m : measure(m_out.offload))
            m_out.usedBytes.push_back(Bytes{static_cast<std::uint64_t>(std::max<std::int64_t>(m, 0))});
        return m_out;
    }

private:
    const OffloadTensors& m_list;
    const Architecture& m_arch;
    const ContextSettings& m_context;
    const OffloadSettings& m_base;
    const FitSettings& m_fit;
    const std::size_t m_nd;
    std::uint64_t m_nCtx = 0; // cparams->n_ctx
    FitResult m_out;

    // The use of each device (llama_memory_breakdown model + context + compute) with @p o at the
    // current context: one test allocation of llama.cpp.
    OffloadBill measureBill(const OffloadSettings& o)
    {
        ++m_out.trials;
        ContextSettings c = m_context;
        c.ctxSizeTokens = m_nCtx;
        return offload(m_list, m_arch, c, o);
    }

    std::vector<std::int64_t> measure(const OffloadSettings& o)
    {
        const OffloadBill bill = measureBill(o);
        std::vector<std::int64_t> out(m_nd, 0);
        for (std::size_t d = 0; d < m_nd && d < bill.devices.size(); ++d)
            out[d] = static_cast<std::int64_t>(bill.devices[d].totalBytes().value);
        return out;
    }

    std::int64_t freeOf(std::size_t d) const { return static_cast<std::int64_t>(m_fit.devices[d].freeBytes.value); }
    std::int64_t marginOf(std::size_t d) const { return static_cast<std::int64_t>(m_fit.devices[d].marginBytes.value); }
    static std::string dev(std::size_t d) { return "CUDA" + std::to_string(d); }
    static long long mib(std::int64_t bytes) { return static_cast<long long>(bytes / kMiB); }
    std::string deviceLine(std::size_t id, const FitLayers& n, std::int64_t mem) const
    {
        return format("  - %s: %2u layers (%2u overflowing), %6lld MiB used, %6lld MiB free", dev(id).c_str(), n.layers,
                      n.partial, mib(mem), mib(freeOf(id) - mem));
    }
    void log(const std::string& line) { m_out.log.push_back("common_params_fit_impl: " + line); }

    // set_ngl_tensor_split_tbo: -ngl = the layers of all devices, -ts = each device's layers, and
    // for each device its full layers first, then its partial ones: the first of those sends
    // overflow to overflowDevice[id], the others their routed experts to the host.
    OffloadSettings settingsFor(const std::vector<FitLayers>& ngl, const std::vector<int>& overflowDevice) const
    {
        OffloadSettings o = m_base;
        o.cpuMoeLayers = 0;
        o.ffnOverrides.clear();
        std::uint32_t total = 0;
        for (const FitLayers& n : ngl)
            total += n.layers;
        o.gpuLayers = total;
        if (m_nd > 1 && total > 0) {
            o.tensorSplit.clear();
            for (const FitLayers& n : ngl)
                o.tensorSplit.push_back(n.layers);
        }
        std::uint32_t il0 = m_arch.layers + 1 - std::min(total, m_arch.layers + 1);
        for (std::size_t id = 0; id < m_nd; ++id) {
            il0 += ngl[id].full();
            for (std::uint32_t il = il0; il < il0 + ngl[id].partial; ++il) {
                if (il >= m_arch.layers)
                    continue; // the output layer: no blk.N tensor matches
                o.ffnOverrides.push_back({il, il == il0 ? ngl[id].overflow : FfnOverflow::Moe,
                                          il == il0 ? overflowDevice[id] : -1});
            }
            il0 += ngl[id].partial;
        }
        return o;
    }

    std::vector<std::int64_t> memoryFor(const std::vector<FitLayers>& ngl, const std::vector<int>& overflowDevice)
    {
        return measure(settingsFor(ngl, overflowDevice));
    }

    // The step of the method of false position (common/fit.cpp): delta x (target - mem) / headroom,
    // in [1, delta - 1]; a degenerate step (no headroom) is delta - 1.
    static std::uint32_t stepSize(std::uint32_t delta, std::int64_t target, std::int64_t mem, std::int64_t memHigh)
    {
        const std::int64_t headroom = memHigh - mem;
        std::uint32_t step = headroom > 0 ? static_cast<std::uint32_t>(std::int64_t(delta) * (target - mem) / headroom) : delta - 1;
        step = std::max(step, std::uint32_t{1});
        return std::min(step, delta - 1);
    }

    void fit()
    {
        if (m_nd == 0)
            throw std::invalid_argument("llama.cpp --fit: no device");
        const std::uint32_t hpNgl = m_arch.layers;
        const std::uint64_t hpNct = m_arch.contextLength;
        const bool moe = m_arch.moe.enabled();
        const std::uint64_t streams = m_context.kvUnified ? 1 : std::max<std::uint32_t>(1, m_context.parallel);
        const std::uint64_t ctxMax = std::min<std::uint64_t>(hpNct * streams, kFullContext);
        const std::uint64_t ctxMinTotal = std::min<std::uint64_t>(m_fit.minContextTokens * streams, kFullContext);

        // step 1: the initial parameters (an unset context resolved first).
        m_nCtx = m_fit.contextAuto ? ctxMax : m_context.ctxSizeTokens;
        m_out.offload = m_base;
        const OffloadBill fullBill = measureBill(m_base);
        std::vector<std::int64_t> full(m_nd, 0);
        std::int64_t sumFree = 0, sumUsed = 0, sumFreeAfter = 0, sumModel = 0, sumMargins = 0;
        for (std::size_t d = 0; d < m_nd && d < fullBill.devices.size(); ++d) {
            full[d] = static_cast<std::int64_t>(fullBill.devices[d].totalBytes().value);
            sumModel += static_cast<std::int64_t>(fullBill.devices[d].weightsBytes.value);
        }
        bool changes = false;
        for (std::size_t d = 0; d < m_nd; ++d) {
            sumFree += freeOf(d);
            sumUsed += full[d];
            sumFreeAfter += freeOf(d) - full[d];
            sumMargins += marginOf(d);
            changes = changes || freeOf(d) - full[d] < marginOf(d);
            if (m_nd > 1)
                log(format("  - %s: %6lld used, %6lld free vs. target of %6lld", dev(d).c_str(), mib(full[d]),
                           mib(freeOf(d) - full[d]), mib(marginOf(d))));
        }
        log(format("projected to use %lld MiB of device memory vs. %lld MiB of free device memory", mib(sumUsed), mib(sumFree)));
        if (!changes) {
            log(m_nd == 1 ? format("will leave %lld >= %lld MiB of free device memory, no changes needed",
                                   mib(freeOf(0) - full[0]), mib(marginOf(0)))
                          : std::string("targets for free memory can be met on all devices, no changes needed"));
            m_out.outcome = FitOutcome::NoChange;
            return;
        }

        // step 2: lower an unset context.
        const std::int64_t surplus = sumFreeAfter - sumMargins;
        if (surplus < 0) {
            log(m_nd == 1 ? format("cannot meet free memory target of %lld MiB, need to reduce device memory by %lld MiB",
                                   mib(marginOf(0)), mib(-surplus))
                          : format("cannot meet free memory targets on all devices, need to use %lld MiB less in total",
                                   mib(-surplus)));
            if (!m_fit.contextAuto) {
                log(format("context size set by user to %lld -> no change", static_cast<long long>(m_nCtx)));
            } else if (ctxMax <= ctxMinTotal) {
                log(m_fit.minContextTokens >= kFullContext
                        ? format("user has requested full context size of %lld -> no change", static_cast<long long>(ctxMax))
                        : format("default model context size is %lld which is <= the min. context size of %lld -> no change",
                                 static_cast<long long>(ctxMax), static_cast<long long>(ctxMinTotal)));
            } else {
                std::int64_t usedTarget = sumFree - sumMargins;
                if (m_nd > 1) {
                    // whole layers (dense) or whole tensors (MoE, <= 1/3 layer) per device: 0.5 wasted each
                    const std::int64_t layersSet = m_base.gpuLayers < 0 ? hpNgl : std::min<std::int64_t>(m_base.gpuLayers, hpNgl);
                    const std::int64_t perLayer = sumModel / std::max<std::int64_t>(layersSet, 1);
                    usedTarget -= static_cast<std::int64_t>(m_nd + 1) * perLayer / (moe ? 6 : 2);
                }
                m_nCtx = ctxMinTotal;
                m_out.contextFromTokens = ctxMax;
                std::int64_t usedMin = 0;
                for (std::int64_t m : measure(m_base))
                    usedMin += m;
                if (usedTarget > usedMin && sumUsed > usedMin) {
                    const std::int64_t span = static_cast<std::int64_t>(ctxMax - ctxMinTotal);
                    const std::int64_t num = usedTarget - usedMin;
                    const std::int64_t den = sumUsed - usedMin;
                    // (n_ctx_max - n_ctx_min) x (target - used_min) / (used - used_min), in int64 as llama.cpp
                    // (a product past int64 is taken in long double)
                    const std::int64_t add = num <= std::numeric_limits<std::int64_t>::max() / std::max<std::int64_t>(span, 1)
                                                 ? span * num / den
                                                 : static_cast<std::int64_t>(static_cast<long double>(span) * num / den);
                    m_nCtx = static_cast<std::uint32_t>(m_nCtx + static_cast<std::uint64_t>(add));
                    const std::uint64_t align = 256 * streams;
                    m_nCtx = std::max(m_nCtx - m_nCtx % align, ctxMinTotal);
                    const std::int64_t perCtx = den / span;
                    log(format("context size reduced from %lld to %lld -> need %lld MiB less memory in total",
                               static_cast<long long>(ctxMax), static_cast<long long>(m_nCtx),
                               mib(static_cast<std::int64_t>(ctxMax - m_nCtx) * perCtx)));
                    if (m_nd <= 1) {
                        log("entire model can be fit by reducing context");
                        m_out.outcome = FitOutcome::ContextReduced;
                        return;
                    }
                    log("entire model should be fit across devices by reducing context");
                } else {
                    log(format("context size reduced from %lld to %lld -> need %lld MiB less memory in total",
                               static_cast<long long>(ctxMax), static_cast<long long>(m_nCtx), mib(sumUsed - usedMin)));
                }
            }
        }

        // step 3: what the user set is kept.
        if (m_fit.gpuLayersSet)
            throw FitAbort{"n_gpu_layers already set by user to " + std::to_string(m_base.gpuLayers) + ", abort"};
        if (m_nd > 1 && m_fit.tensorSplitSet)
            throw FitAbort{"model_params::tensor_split already set by user, abort"};
        if (m_fit.tensorOverridesSet || m_base.cpuMoeLayers > 0)
            throw FitAbort{"model_params::tensor_buft_overrides already set by user, abort"};

        // step 4: MoE: does the dense part alone fit?
        std::int64_t surplusCpuMoe = 0;
        if (moe) {
            OffloadSettings o = m_base;
            for (std::uint32_t il = 0; il < hpNgl; ++il)
                o.ffnOverrides.push_back({il, FfnOverflow::Moe, -1});
            const std::vector<std::int64_t> mem = measure(o);
            for (std::size_t d = 0; d < m_nd; ++d)
                surplusCpuMoe += freeOf(d) - (mem[d] + marginOf(d));
            log(surplusCpuMoe > 0
                    ? format("with only dense weights in device memory there is a total surplus of %lld MiB", mib(surplusCpuMoe))
                    : format("with only dense weights in device memory there is still a total deficit of %lld MiB",
                             mib(-surplusCpuMoe)));
        }
        std::vector<std::int64_t> targets;
        for (std::size_t d = 0; d < m_nd; ++d)
            targets.push_back(freeOf(d) - marginOf(d));
        std::vector<int> overflowDevice(m_nd, -1);
        std::vector<FitLayers> ngl(m_nd);
        std::vector<std::int64_t> mem = memoryFor(ngl, overflowDevice);

        log(moe ? "filling dense-only layers back-to-front:" : "filling dense layers back-to-front:");
        for (std::size_t idp = m_nd; idp-- > 0;) {
            const std::size_t id = idp;
            std::uint32_t unassigned = hpNgl + 1;
            for (std::size_t jd = id + 1; jd < m_nd; ++jd)
                unassigned -= ngl[jd].layers;
            std::vector<FitLayers> high = ngl;
            high[id].layers = unassigned;
            if (moe)
                high[id].partial = id < m_nd - 1 ? high[id].layers : high[id].layers - 1;
            if (high[id].layers > 0) {
                std::vector<std::int64_t> memHigh = memoryFor(high, overflowDevice);
                if (memHigh[id] > targets[id]) {
                    std::uint32_t delta = high[id].layers - ngl[id].layers;
                    while (delta > 1) {
                        const std::uint32_t step = stepSize(delta, targets[id], mem[id], memHigh[id]);
                        std::vector<FitLayers> test = ngl;
                        test[id].layers += step;
                        if (moe)
                            test[id].partial += id == m_nd - 1 && test[id].partial == 0 ? step - 1 : step;
                        const std::vector<std::int64_t> memTest = memoryFor(test, overflowDevice);
                        if (memTest[id] <= targets[id]) {
                            ngl = test;
                            mem = memTest;
                        } else {
                            high = test;
                            memHigh = memTest;
                        }
                        delta = high[id].layers - ngl[id].layers;
                    }
                } else {
                    ngl = high;
                    mem = memHigh;
                }
            }
            log(format("  - %s: %2u layers, %6lld MiB used, %6lld MiB free", dev(id).c_str(), ngl[id].layers, mib(mem[id]),
                       mib(freeOf(id) - mem[id])));
        }
        m_out.outcome = FitOutcome::LayersPlaced;
        if (!moe || surplusCpuMoe <= 0) {
            finish(ngl, overflowDevice);
            return;
        }

        // step 5: MoE: dense-only layers become full ones, front to back, then part of one more.
        std::size_t denseStart = m_nd;
        for (std::size_t idp = m_nd; idp-- > 0;) {
            if (ngl[idp].layers > 0) {
                denseStart = idp;
                continue;
            }
            break;
        }
        log("converting dense-only layers to full layers and filling them front-to-back with overflow to next "
            "device/system memory:");
        for (std::size_t id = 0; id <= denseStart && denseStart < m_nd; ++id) {
            std::vector<FitLayers> high = ngl;
            for (std::size_t jd = denseStart; jd < m_nd; ++jd) {
                const std::uint32_t move = jd < m_nd - 1 ? high[jd].layers : high[jd].layers - 1;
                high[id].layers += move;
                high[jd].layers -= move;
                high[jd].partial = 0;
            }
            std::size_t denseStartHigh = m_nd - 1;
            std::vector<std::int64_t> memHigh = memoryFor(high, overflowDevice);
            if (memHigh[id] > targets[id]) {
                std::uint32_t delta = high[id].full() - ngl[id].full();
                while (delta > 1) {
                    const std::uint32_t step = stepSize(delta, targets[id], mem[id], memHigh[id]);
                    std::vector<FitLayers> test = ngl;
                    std::size_t denseStartTest = denseStart;
                    std::uint32_t converted = 0;
                    for (; denseStartTest < m_nd; ++denseStartTest) {
                        const std::uint32_t n = std::min(step - converted, test[denseStartTest].partial);
                        test[denseStartTest].layers -= n;
                        test[denseStartTest].partial -= n;
                        test[id].layers += n;
                        converted += n;
                        if (test[denseStartTest].partial > 0)
                            break;
                    }
                    const std::vector<std::int64_t> memTest = memoryFor(test, overflowDevice);
                    if (memTest[id] <= targets[id]) {
                        ngl = test;
                        mem = memTest;
                        denseStart = denseStartTest;
                    } else {
                        high = test;
                        memHigh = memTest;
                        denseStartHigh = denseStartTest;
                    }
                    delta = high[id].full() - ngl[id].full();
                }
            } else {
                ngl = high;
                mem = memHigh;
                denseStart = denseStartHigh;
            }

            // part of one more layer: UP, then GATE; else ATTN (strict comparisons, as llama.cpp)
            if (denseStart < m_nd && ngl[denseStart].layers > (id < m_nd - 1 ? 0u : 1u)) {
                std::vector<FitLayers> test = ngl;
                std::size_t denseStartTest = denseStart;
                --test[denseStartTest].layers;
                --test[denseStartTest].partial; // wraps at 0 and back below, as the uint32_t of llama.cpp
                ++test[id].layers;
                ++test[id].partial;
                if (test[denseStartTest].partial == 0)
                    ++denseStartTest;
                test[id].overflow = FfnOverflow::Up;
                std::vector<int> overflowTest = overflowDevice;
                if (id < m_nd - 1)
                    overflowTest[id] = static_cast<int>(id + 1);
                std::vector<std::int64_t> memTest = memoryFor(test, overflowTest);
                const auto fits = [&](const std::vector<std::int64_t>& m) {
                    return m[id] < targets[id] && (id + 1 == m_nd || m[id + 1] < targets[id + 1]);
                };
                if (fits(memTest)) {
                    ngl = test;
                    overflowDevice = overflowTest;
                    mem = memTest;
                    denseStart = denseStartTest;
                    test[id].overflow = FfnOverflow::Gate;
                    memTest = memoryFor(test, overflowTest);
                    if (fits(memTest)) {
                        ngl = test;
                        mem = memTest;
                    }
                } else {
                    test[id].overflow = FfnOverflow::Attn;
                    memTest = memoryFor(test, overflowTest);
                    if (fits(memTest)) {
                        ngl = test;
                        overflowDevice = overflowTest;
                        mem = memTest;
                        denseStart = denseStartTest;
                    }
                }
            }
            log(deviceLine(id, ngl[id], mem[id]));
        }
        for (std::size_t id = denseStart + 1; id < m_nd; ++id)
            log(deviceLine(id, ngl[id], mem[id]));
        finish(ngl, overflowDevice);
    }

    void finish(const std::vector<FitLayers>& ngl, const std::vector<int>& overflowDevice)
    {
        m_out.devices = ngl;
        m_out.offload = settingsFor(ngl, overflowDevice);
    }
};

} // namespace

FitResult fitParams(const OffloadTensors& list, const Architecture& arch, const ContextSettings& context,
                    const OffloadSettings& base, const FitSettings& fit)
{
    if (fit.devices.empty())
        throw std::invalid_argument("llama.cpp --fit: no device to fit to");
    return Fitter(list, arch, context, base, fit).run();
}

std::string fitArguments(const FitResult& r)
{
    std::string out = "-c " + std::to_string(r.ctxSizeTokens);
    if (r.outcome != FitOutcome::LayersPlaced)
        return out;
    out += " -ngl " + std::to_string(r.offload.gpuLayers);
    if (r.devices.size() > 1) {
        out += " -ts ";
        for (std::size_t d = 0; d < r.devices.size(); ++d)
            out += (d ? "," : "") + std::to_string(r.devices[d].layers);
    }
    std::string ot;
    for (const FfnOverride& o : r.offload.ffnOverrides)
        ot += (ot.empty() ? "" : ",") + std::string("blk\\.") + std::to_string(o.layer) + "\\." + fractionPattern(o.part) + "="
              + (o.device < 0 ? std::string("CPU") : "CUDA" + std::to_string(o.device));
    if (!ot.empty())
        out += " -ot " + ot;
    return out;
}

} // namespace headroom::llamacpp
