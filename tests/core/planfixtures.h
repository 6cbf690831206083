#pragma once
/// @file planfixtures.h
/// Plan requests for core tests: an architecture in a format on an anonymous card of a given
/// total, and a vLLM-like policy (0.9 utilization, 16-token blocks, 8,192-token profile batch).

#include "headroom/core/card.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/plan.h"
#include "headroom/core/weightformat.h"

#include <utility>

namespace headroom::testfixtures {

/// @p arch in @p format with an fp16 KV cache on a card of @p cardTotal bytes under @p engine.
inline PlanRequest request(const Architecture& arch, const char* format, Bytes cardTotal, EnginePolicy engine)
{
    PlanRequest r;
    r.model.id = arch.family;
    r.model.architecture = arch;
    r.format = *findFormat(format);
    r.kvDtype = *findKvDtype("fp16");
    r.card = anonymousCard("test", cardTotal);
    r.engine = std::move(engine);
    return r;
}

/// A vLLM policy with the constants the tests rely on (not the shipped profile).
inline EnginePolicy vllmPolicy()
{
    EnginePolicy e;
    e.id = "vllm";
    e.name = "vLLM";
    e.kind = EngineKind::Vllm;
    e.memoryFraction = 0.9;
    e.blockTokens = 16;
    e.ubatchTokens = 8192;
    return e;
}

} // namespace headroom::testfixtures
