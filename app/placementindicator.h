#pragma once
// The fit indicator of a matrix cell in LM Studio's manner: where the plan puts the model (core's
// placementOf, verdict.h: full GPU / partial / CPU only / too large for this machine), drawn as a
// shape, never a colour alone: a filled disc, a half-filled disc, a ring, a cross. The words are
// core's placementLabel(); the app decides nothing here.

#include "headroom/core/plan.h"
#include "headroom/core/verdict.h"

#include <QIcon>
#include <QString>

namespace headroom::app {

/// The glyph of @p placement as text, the same shape as its icon: "●", "◐", "○", "✕".
QString placementGlyph(Placement placement);
/// The words of @p placement for a person: "full GPU", "partial offload", "CPU only", "too large for this machine".
QString placementText(Placement placement);
/// A 16-pixel icon of @p placement's shape in the palette's text colour.
QIcon placementIcon(Placement placement);
/// The tooltip line of a plan's placement: "Placement: ◐ partial offload".
QString placementToolTip(const PlanResult& plan);
/// The placement with the verdict's few words: "◐ partial: 26/41 layers, 6.36 GiB RAM", "● full GPU",
/// "✕ too large for this machine: weights 6.82 > 6.79 GiB" (plain text).
QString placementSummary(const PlanResult& plan);
/// The legend of the four shapes and the refusal's ("● full GPU  ◐ partial offload ... ⊘ not supported
/// by the engine") in rich text, each entry kept on one line.
QString placementLegendHtml();

/// The glyph of a cell the engine cannot run at all (core's Verdict::engineCannotRun: a weight
/// format or KV dtype it has not): no placement exists for it, but it is a refusal like "too
/// large" and carries a shape of its own, a struck circle "⊘" (review: its cells had no glyph).
QString engineCannotRunGlyph();
/// The words of that glyph: "not supported by the engine".
QString engineCannotRunText();
/// A 16-pixel icon of the struck circle in the palette's text colour.
QIcon engineCannotRunIcon();

} // namespace headroom::app
