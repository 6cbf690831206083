#pragma once
// The engine units (one file each in core/src/engines/); engine.cpp maps EngineKind to them.

#include "headroom/core/engines/engine.h"

namespace headroom::engines {

const Engine& vllmEngine();        ///< vllm.cpp
const Engine& sglangEngine();      ///< sglang.cpp
const Engine& tgiEngine();         ///< tgi.cpp
const Engine& tensorRtLlmEngine(); ///< tensorrtllm.cpp
const Engine& llamaCppEngine();    ///< llamacpp.cpp
const Engine& ollamaEngine();      ///< ollama.cpp
const Engine& flatEngine();        ///< flat.cpp

} // namespace headroom::engines
