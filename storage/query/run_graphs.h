// The graphs of a run: what each cost, its IR and its program text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lazyscope/history.pb.h"
#include "lazyscope/ir.pb.h"

namespace lazyscope::storage {

class HistoryFile;

// Every graph the run compiled or executed, in order of first use.
std::vector<pb::GraphInfo> read_graphs(const HistoryFile& file, int64_t run_id);

// nullopt when the run has no stored IR for that hash. Throws HistoryError
// when the stored IR does not parse.
std::optional<pb::IrGraph> read_graph_ir(const HistoryFile& file, int64_t run_id, uint64_t hash);
std::optional<std::string> read_program_text(const HistoryFile& file, int64_t run_id, uint64_t hash);

}  // namespace lazyscope::storage
