// load_run_data with CompileIr::kForDiagnosis: only the IR the diagnosis
// reads is loaded (a summary of a run with 100,000-node graphs must not
// parse them all, issue 15 item 9), and the findings are the same as with
// every compile's IR.
#include "analysis/run_data.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::chain_graph;
using test_support::compile_at;
using test_support::source_at;

constexpr int64_t kMs = 1'000'000;

TEST(RunData, ForDiagnosisLoadsOnlyTheIrTheDiagnosisReadsAndFindsTheSame) {
  test_support::ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const pb::SourceLocation site = source_at("/home/ada/x.py", 9, "train");
  const pb::SourceLocation batch = source_at("/home/ada/x.py", 5, "train");
  const pb::SourceLocation grows = source_at("/home/ada/x.py", 20);
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("diagnosed"));
    run_id = recorder.run_id();
    for (int step = 0; step < 4; ++step) {
      recorder.record(test_support::step_event(step, step * 10 * kMs, (step + 1) * 10 * kMs, 0));
    }
    // Shape recompiles (0xb against 0xa, 0xc against 0xb), and a graph that
    // grows every step, never executed (its node count only in the graphs table).
    recorder.record(compile_at(0, 0xa, 1 * kMs, 4 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, site,
                               chain_graph(0xa, {8, 3}, 2, batch)));
    recorder.record(
        compile_at(1, 0xb, 11 * kMs, 3 * kMs, pb::COMPILE_REASON_SHAPE, 0xa, site, chain_graph(0xb, {4, 3}, 2, batch)));
    recorder.record(
        compile_at(2, 0xc, 21 * kMs, 2 * kMs, pb::COMPILE_REASON_SHAPE, 0xb, site, chain_graph(0xc, {6, 3}, 2, batch)));
    for (int step = 0; step < 3; ++step) {
      recorder.record(compile_at(step, 0x10 + step, step * 10 * kMs + 2, kMs,
                                 step == 0 ? pb::COMPILE_REASON_FIRST_SIGHT : pb::COMPILE_REASON_STRUCTURE, 0, grows,
                                 chain_graph(0x10 + step, {2}, 10 * (step + 1))));
    }
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  const HistoryReader reader(path);
  const RunData all = *load_run_data(reader, run_id, CompileIr::kAll);
  const RunData lean = *load_run_data(reader, run_id, CompileIr::kForDiagnosis);
  ASSERT_EQ(lean.compiles.size(), 6u);
  for (const pb::CompileEvent& compile : lean.compiles) {
    const bool read_by_diagnosis = compile.graph_hash() == 0xa || compile.graph_hash() == 0xb ||
                                   compile.graph_hash() == 0xc;
    EXPECT_EQ(compile.has_graph(), read_by_diagnosis) << compile.graph_hash();
    EXPECT_TRUE(compile.program_text().empty());
  }
  for (const pb::CompileEvent& compile : all.compiles) EXPECT_TRUE(compile.has_graph());

  const std::vector<pb::Finding> expected = diagnose(all);
  const std::vector<pb::Finding> found = diagnose(lean);
  ASSERT_EQ(found.size(), expected.size());
  ASSERT_GE(found.size(), 2u);  // the shape recompiles and the growing graph at least
  for (size_t i = 0; i < found.size(); ++i) {
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(found[i], expected[i]))
        << found[i].DebugString() << " vs " << expected[i].DebugString();
  }
}

}  // namespace
}  // namespace lazyscope::storage
