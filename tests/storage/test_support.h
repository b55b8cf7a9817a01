// Helpers shared by the storage tests: a scratch folder, direct SQLite access
// (to set up states the API cannot produce, and to check rows it does not
// read back), and event builders.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage::test_support {

// A fresh folder under the system temp folder, removed with its contents.
class ScratchFolder {
 public:
  ScratchFolder();
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs SQL on its own connection, bypassing storage; fails the test on error.
void raw_execute(const std::string& path, const std::string& sql);
// The first column of the first row as an integer / text.
int64_t raw_int64(const std::string& path, const std::string& sql);
std::string raw_text(const std::string& path, const std::string& sql);

void write_bytes(const std::string& path, const std::string& bytes);
std::string read_bytes(const std::string& path);

pb::RunInfo sample_run_info(const std::string& name);

pb::Event step_event(int64_t step, int64_t start_ns, int64_t end_ns, int64_t compile_ns, int replica = 0);
pb::Event compile_event(int64_t step, uint64_t graph_hash, int64_t duration_ns, int node_count);
pb::Event execute_event(int64_t step, uint64_t graph_hash, int64_t duration_ns, bool cache_hit);
pb::Event scalar_event(int64_t step, const std::string& name, double value);
pb::Event fallback_event(int64_t step, const std::string& op);
pb::Event transfer_event(int64_t step, bool to_device, int64_t bytes);

// Builders with every value spelled out, for the query and analysis tests.
pb::SourceLocation source_at(const std::string& file, int line, const std::string& function = "");
// A graph whose parameter 0 has `input_shape` (created at input_source),
// followed by `computed_nodes` adds.
pb::IrGraph chain_graph(uint64_t hash, const std::vector<int64_t>& input_shape, int computed_nodes,
                        const pb::SourceLocation& input_source = {});
pb::Event compile_at(int64_t step, uint64_t graph_hash, int64_t start_ns, int64_t duration_ns,
                     pb::CompileReasonKind kind, uint64_t compared_with, const pb::SourceLocation& source,
                     const pb::IrGraph& graph);
pb::Event execute_at(int64_t step, uint64_t graph_hash, int64_t start_ns, int64_t duration_ns, pb::SyncCause cause,
                     const pb::SourceLocation& source, bool cache_hit = true, int node_count = 3);
pb::Event fallback_at(int64_t step, const std::string& op, int64_t start_ns, int64_t duration_ns, int64_t bytes,
                      const pb::SourceLocation& source);
pb::Event transfer_at(int64_t step, bool to_device, int64_t start_ns, int64_t duration_ns, int64_t bytes);

}  // namespace lazyscope::storage::test_support
