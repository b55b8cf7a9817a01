#include "test_support.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace lazyscope::storage::test_support {

ScratchFolder::ScratchFolder() {
  std::string pattern = (std::filesystem::temp_directory_path() / "lazyscope-storage-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

namespace {

// A connection of the test's own, closed on scope exit.
class RawConnection {
 public:
  explicit RawConnection(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(db_);
    }
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawConnection() { sqlite3_close(db_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  sqlite3* get() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

// Steps `sql` to its first row and hands the statement to `read`.
template <typename Read> void raw_first_row(const std::string& path, const std::string& sql, Read read) {
  RawConnection connection(path);
  sqlite3_stmt* statement = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(connection.get(), sql.c_str(), -1, &statement, nullptr), SQLITE_OK)
      << sql << ": " << sqlite3_errmsg(connection.get());
  const int rc = sqlite3_step(statement);
  EXPECT_EQ(rc, SQLITE_ROW) << sql << ": " << sqlite3_errmsg(connection.get());
  if (rc == SQLITE_ROW) read(statement);
  sqlite3_finalize(statement);
}

}  // namespace

void raw_execute(const std::string& path, const std::string& sql) {
  RawConnection connection(path);
  char* error = nullptr;
  const int rc = sqlite3_exec(connection.get(), sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (error != nullptr ? error : "");
  sqlite3_free(error);
}

int64_t raw_int64(const std::string& path, const std::string& sql) {
  int64_t value = -1;
  raw_first_row(path, sql, [&](sqlite3_stmt* row) { value = sqlite3_column_int64(row, 0); });
  return value;
}

std::string raw_text(const std::string& path, const std::string& sql) {
  std::string value;
  raw_first_row(path, sql, [&](sqlite3_stmt* row) {
    const auto* text = sqlite3_column_text(row, 0);
    if (text != nullptr) value = reinterpret_cast<const char*>(text);
  });
  return value;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

pb::RunInfo sample_run_info(const std::string& name) {
  pb::RunInfo info;
  info.set_name(name);
  info.set_script_path("/home/ada/train.py");
  info.set_script_sha256("5f2b9c0e");
  info.set_script_text("import lazyscope\nprint(\"hi\")\n");
  info.add_args("--lr");
  info.add_args("0.1 \"quoted\"\n");
  (*info.mutable_settings())["graph_limit"] = "10000";
  (*info.mutable_settings())["backend"] = "cpu";
  info.set_backend("cpu");
  info.set_device_count(2);
  info.add_tags("baseline");
  info.add_tags("größe");
  return info;
}

pb::Event step_event(int64_t step, int64_t start_ns, int64_t end_ns, int64_t compile_ns, int replica) {
  pb::Event event;
  event.set_replica(replica);
  pb::StepEvent& body = *event.mutable_step();
  body.set_step(step);
  body.set_start_ns(start_ns);
  body.set_end_ns(end_ns);
  body.set_trace_ns(11);
  body.set_compile_ns(compile_ns);
  body.set_execute_ns(22);
  body.set_transfer_ns(33);
  body.set_host_wait_ns(44);
  return event;
}

pb::Event compile_event(int64_t step, uint64_t graph_hash, int64_t duration_ns, int node_count) {
  pb::Event event;
  pb::CompileEvent& body = *event.mutable_compile();
  body.set_step(step);
  body.set_graph_hash(graph_hash);
  body.set_start_ns(step * 1000);
  body.set_duration_ns(duration_ns);
  body.set_reason_kind(pb::COMPILE_REASON_SHAPE);
  body.set_reason("input 0: [32,784] -> [16,784]");
  body.set_compared_with(graph_hash ^ 0xff);
  body.mutable_source()->set_file("train.py");
  body.mutable_source()->set_line(42);
  body.mutable_source()->set_function("train_step");
  pb::IrGraph& graph = *body.mutable_graph();
  graph.set_hash(graph_hash);
  for (int i = 0; i < node_count; ++i) {
    pb::IrNode& node = *graph.add_nodes();
    node.set_id(i);
    node.set_op(i == 0 ? "device_data" : "add");
    if (i > 0) node.add_operands(i - 1);
    node.add_shape(16);
    node.add_shape(784);
    node.set_dtype("f32");
    node.mutable_attrs()->insert({"alpha", "1"});
    node.set_scope("model.fc1");
    node.set_hash(graph_hash + static_cast<uint64_t>(i));
    node.set_parameter_index(i == 0 ? 0 : -1);
  }
  graph.add_outputs(node_count - 1);
  graph.set_parameter_count(1);
  body.set_program_text("func @main(...)");
  return event;
}

pb::Event execute_event(int64_t step, uint64_t graph_hash, int64_t duration_ns, bool cache_hit) {
  pb::Event event;
  pb::ExecuteEvent& body = *event.mutable_execute();
  body.set_step(step);
  body.set_graph_hash(graph_hash);
  body.set_start_ns(step * 1000 + 500);
  body.set_duration_ns(duration_ns);
  body.set_cause(pb::SYNC_CAUSE_MARK_STEP);
  body.set_cache_hit(cache_hit);
  body.set_node_count(3);
  body.mutable_source()->set_file("train.py");
  body.mutable_source()->set_line(50);
  body.mutable_source()->set_function("main");
  return event;
}

pb::Event scalar_event(int64_t step, const std::string& name, double value) {
  pb::Event event;
  pb::ScalarEvent& body = *event.mutable_scalar();
  body.set_step(step);
  body.set_name(name);
  body.set_value(value);
  return event;
}

pb::Event fallback_event(int64_t step, const std::string& op) {
  pb::Event event;
  pb::FallbackEvent& body = *event.mutable_fallback();
  body.set_step(step);
  body.set_op(op);
  body.set_start_ns(7);
  body.set_duration_ns(8);
  body.set_bytes(4096);
  body.mutable_source()->set_file("train.py");
  body.mutable_source()->set_line(60);
  return event;
}

pb::Event transfer_event(int64_t step, bool to_device, int64_t bytes) {
  pb::Event event;
  pb::TransferEvent& body = *event.mutable_transfer();
  body.set_step(step);
  body.set_to_device(to_device);
  body.set_start_ns(1);
  body.set_duration_ns(2);
  body.set_bytes(bytes);
  return event;
}

pb::SourceLocation source_at(const std::string& file, int line, const std::string& function) {
  pb::SourceLocation source;
  source.set_file(file);
  source.set_line(line);
  source.set_function(function);
  return source;
}

pb::IrGraph chain_graph(uint64_t hash, const std::vector<int64_t>& input_shape, int computed_nodes,
                        const pb::SourceLocation& input_source) {
  pb::IrGraph graph;
  graph.set_hash(hash);
  pb::IrNode& input = *graph.add_nodes();
  input.set_id(0);
  input.set_op("device_data");
  for (int64_t d : input_shape) input.add_shape(d);
  input.set_dtype("f32");
  *input.mutable_source() = input_source;
  input.set_parameter_index(0);
  for (int i = 1; i <= computed_nodes; ++i) {
    pb::IrNode& node = *graph.add_nodes();
    node.set_id(i);
    node.set_op("add");
    node.add_operands(i - 1);
    node.add_operands(0);
    for (int64_t d : input_shape) node.add_shape(d);
    node.set_dtype("f32");
    node.set_parameter_index(-1);
  }
  graph.add_outputs(computed_nodes);
  graph.set_parameter_count(1);
  return graph;
}

pb::Event compile_at(int64_t step, uint64_t graph_hash, int64_t start_ns, int64_t duration_ns,
                     pb::CompileReasonKind kind, uint64_t compared_with, const pb::SourceLocation& source,
                     const pb::IrGraph& graph) {
  pb::Event event;
  pb::CompileEvent& body = *event.mutable_compile();
  body.set_step(step);
  body.set_graph_hash(graph_hash);
  body.set_start_ns(start_ns);
  body.set_duration_ns(duration_ns);
  body.set_reason_kind(kind);
  body.set_reason(pb::CompileReasonKind_Name(kind));
  body.set_compared_with(compared_with);
  *body.mutable_source() = source;
  *body.mutable_graph() = graph;
  std::string program = "program ";
  program += std::to_string(graph_hash);
  body.set_program_text(program);
  return event;
}

pb::Event execute_at(int64_t step, uint64_t graph_hash, int64_t start_ns, int64_t duration_ns, pb::SyncCause cause,
                     const pb::SourceLocation& source, bool cache_hit, int node_count) {
  pb::Event event;
  pb::ExecuteEvent& body = *event.mutable_execute();
  body.set_step(step);
  body.set_graph_hash(graph_hash);
  body.set_start_ns(start_ns);
  body.set_duration_ns(duration_ns);
  body.set_cause(cause);
  body.set_cache_hit(cache_hit);
  body.set_node_count(node_count);
  *body.mutable_source() = source;
  return event;
}

pb::Event fallback_at(int64_t step, const std::string& op, int64_t start_ns, int64_t duration_ns, int64_t bytes,
                      const pb::SourceLocation& source) {
  pb::Event event;
  pb::FallbackEvent& body = *event.mutable_fallback();
  body.set_step(step);
  body.set_op(op);
  body.set_start_ns(start_ns);
  body.set_duration_ns(duration_ns);
  body.set_bytes(bytes);
  *body.mutable_source() = source;
  return event;
}

pb::Event transfer_at(int64_t step, bool to_device, int64_t start_ns, int64_t duration_ns, int64_t bytes) {
  pb::Event event;
  pb::TransferEvent& body = *event.mutable_transfer();
  body.set_step(step);
  body.set_to_device(to_device);
  body.set_start_ns(start_ns);
  body.set_duration_ns(duration_ns);
  body.set_bytes(bytes);
  return event;
}

}  // namespace lazyscope::storage::test_support
