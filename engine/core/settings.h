// Every tunable of the engine is a named setting with a default, one sentence
// of why, and an environment variable that overrides it at start-up.
#pragma once

#include <cstdint>

namespace lazyscope::settings {

// LAZYSCOPE_COMPILE_CACHE_SIZE: compiled graphs kept (LRU). A training loop
// needs a handful; a bound keeps pathological shape churn from eating memory.
int64_t compile_cache_size();
void set_compile_cache_size(int64_t n);

// LAZYSCOPE_GRAPH_NODE_LIMIT: a pending graph that grows past this many
// nodes without a barrier is executed and reported (a missing mark_step).
int64_t graph_node_limit();
void set_graph_node_limit(int64_t n);

}  // namespace lazyscope::settings
