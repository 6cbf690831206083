#pragma once
// Which tensors tensor parallelism shards (private to core/src): the planner's busiest device
// (plan.cpp) and vLLM's CPU offload (engines/vllmoffload.cpp) price a rank's share by it.

#include "headroom/core/parameters.h"

namespace headroom {

/// True for the roles tensor parallelism shards across ranks (column/row parallel linear layers
/// and vocab-parallel embeddings: vLLM's ColumnParallelLinear, RowParallelLinear and
/// VocabParallelEmbedding); norms, biases and routers are replicated on every rank.
inline bool shardedByTensorParallel(TensorRole role)
{
    return role == TensorRole::AttentionMatrix || role == TensorRole::MlpMatrix || role == TensorRole::ExpertMatrix
        || role == TensorRole::TokenEmbedding || role == TensorRole::Output || role == TensorRole::VisionMatrix;
}

} // namespace headroom
