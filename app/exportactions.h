#pragma once
// Export of the current state: a capacity report (JSON of the plans through core's planjson.h)
// and engine launch flags for the clipboard. The reports issue replaces these bodies with the
// core report renderers and headroom_report_qt; the signatures are the app's contract.

#include "headroom/core/plan.h"

#include <QString>

#include <vector>

namespace headroom::app {

/// What is exported: the plans of the what-fits matrix and the plan of the detail cell.
struct ExportState {
    std::vector<PlanResult> matrixPlans;
    PlanResult detail;
    bool hasDetail = false;
};

/// The capacity report as JSON text: {"detail": plan, "matrix": [plans]} via planToJson/plansToJson.
QString capacityReportJson(const ExportState& state);

/// Writes capacityReportJson to @p path; false with @p error set when it cannot.
bool exportCapacityReport(const QString& path, const ExportState& state, QString* error);

/// The engines whose launch flags can be composed.
enum class LaunchEngine { Vllm, LlamaCpp };

/// A command line that starts @p engine with the plan's context, users, micro-batch and KV
/// dtype, e.g. "vllm serve MODEL --max-model-len 8192 --max-num-seqs 4 ...", with a comment
/// line when the plan's format or KV dtype has no flag of that engine.
QString launchFlags(const PlanResult& plan, LaunchEngine engine);

} // namespace headroom::app
