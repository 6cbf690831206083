// The allocation probe: the plan's weights in their packed layout and the paged KV cache,
// allocated for real and touched, counted by the allocator (and on CUDA by the driver's free
// memory) against the formula (BRIEF §4 "Allocation truth").

#include "modelondevice.h"
#include "probeplan.h"

#include "headroom/core/kvcache.h"
#include "headroom/probes/probes.h"

namespace headroom::probes {

ProbeResult runAllocationProbe(Device& device, const ModelInputs& inputs, ProbeProgress& progress)
{
    ProbeResult r;
    r.probe = "allocation";
    if (!inputs.model.architecture)
        return failedResult("allocation", "the model has no architecture: nothing to allocate tensor by tensor");
    const Architecture& arch = *inputs.model.architecture;
    const std::uint64_t context = detail::contextOf(inputs);
    const std::uint64_t users = std::max<std::uint64_t>(1, inputs.users);

    Bytes predictedWeights;
    Bytes predictedKv;
    KvLayout layout;
    try {
        predictedWeights = detail::formulaWeightBytes(arch, inputs.format);
        layout = kvLayout(arch, inputs.kvDtype);
        predictedKv = kvBytes(layout, users, context, Paging{kProbeBlockTokens, 1});
    } catch (const std::exception& e) {
        return failedResult("allocation", std::string("the formula failed: ") + e.what());
    }
    const std::uint64_t predicted = predictedWeights.value + predictedKv.value;
    r.set("weights_format", inputs.format.id);
    r.set("kv_dtype", inputs.kvDtype.id);
    r.set("users", users);
    r.set("context_tokens", context);
    r.set("kv_bytes_per_token", layout.bytesPerToken().value);
    r.set("predicted_bytes", predicted);
    r.set("predicted_weights_bytes", predictedWeights.value);
    r.set("predicted_kv_bytes", predictedKv.value);
    if (device.budget())
        r.set("budget_bytes", device.budget()->value);

    const Bytes before = device.allocatedBytes();
    const auto driverBefore = device.kind() == DeviceKind::Cuda ? device.memoryInfo() : tl::expected<MemoryInfo, DeviceError>{};
    detail::ModelOnDevice model(device, inputs);
    if (auto s = model.allocateWeights(progress, 0.0, 0.6); !s) {
        if (s.error().code == DeviceError::Code::Cancelled)
            return cancelledResult("allocation");
        r.set("measured_bytes", device.allocatedBytes().value - before.value);
        r.summary = "weights do not fit: " + s.error().message;
        return r;
    }
    const std::uint64_t weights = device.allocatedBytes().value - before.value;
    progress.report(0.6, "allocating the KV cache");
    if (auto s = model.allocateKvFor(users, context, &progress); !s) {
        if (s.error().code == DeviceError::Code::Cancelled)
            return cancelledResult("allocation");
        r.set("measured_bytes", device.allocatedBytes().value - before.value);
        r.set("measured_weights_bytes", weights);
        r.summary = "KV cache does not fit: " + s.error().message;
        return r;
    }
    const std::uint64_t measured = device.allocatedBytes().value - before.value;
    const std::uint64_t kv = measured - weights;
    r.set("measured_bytes", measured);
    r.set("measured_weights_bytes", weights);
    r.set("measured_kv_bytes", kv);
    r.set("allocations", static_cast<std::uint64_t>(device.allocationCount()));
    if (device.kind() == DeviceKind::Cuda && driverBefore) {
        (void)device.synchronize();
        if (auto after = device.memoryInfo()) {
            const std::uint64_t driver = saturatingSub(driverBefore->freeBytes, after->freeBytes).value;
            r.set("driver_measured_bytes", driver);
            r.notes.push_back("driver_measured_bytes = drop of cudaMemGetInfo free: cudaMalloc rounds each allocation up "
                              "(2 MiB pages for large ones), so it exceeds measured_bytes by the rounding");
        }
    }
    progress.report(1.0, "allocated");
    r.notes.push_back("weights: every tensor of listTensors in its packed layout (tensorBytes), filled with a synthetic "
                      "pattern; KV: per layer K and V of users x ceil(context / 16) x 16 cells (16-token blocks)");
    r.setVerdict(allocationVerdict(measured, predicted));
    r.summary = (r.pass ? "allocator counted exactly the formula's " : "allocator counted " + formatThousands(measured)
                     + " B against the formula's ")
        + formatThousands(predicted) + " B (weights " + formatBytes(Bytes{weights}) + " + KV " + formatBytes(Bytes{kv}) + " for "
        + formatThousands(users) + " x " + formatThousands(context) + " tokens)";
    return r;
}

} // namespace headroom::probes
