#include "history_fixture.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QSysInfo>
#include <stdexcept>
#include <vector>

#include <sqlite3.h>

#include "db/history_file.h"
#include "recorder/recorder.h"

namespace lazyscope::gui::testing {

namespace {

constexpr int64_t kMs = 1'000'000;  // ns

pb::RunInfo runInfo(const std::string& name, const std::string& script, int64_t started_ms) {
  pb::RunInfo info;
  info.set_name(name);
  info.set_script_path(script);
  info.set_script_text("import lazyscope\n");
  info.add_args("--epochs=1");
  // Move-assigned: assigning a literal trips GCC 12's -Wrestrict false positive at -O3.
  (*info.mutable_settings())["LAZYSCOPE_DEVICE_COUNT"] = std::string("1");
  info.set_backend("cpu");
  info.set_device_count(1);
  info.set_host(QSysInfo::machineHostName().toStdString());
  info.set_pid(QCoreApplication::applicationPid());
  info.set_started_unix_ms(started_ms);
  return info;
}

// Step `step`, lasting `duration_ms`, of which `compile_ms` compiling; the
// step's graph is executed once, from the cache unless it was compiled.
void recordStep(storage::Recorder& recorder, int64_t step, int64_t start_ms, int64_t duration_ms, int64_t compile_ms) {
  const uint64_t graph_hash = 0x5eedf00dULL;
  if (compile_ms > 0) {
    pb::Event event;
    pb::CompileEvent* compile = event.mutable_compile();
    compile->set_step(step);
    compile->set_graph_hash(graph_hash);
    compile->set_start_ns(start_ms * kMs + kMs);
    compile->set_duration_ns(compile_ms * kMs);
    compile->set_reason_kind(pb::COMPILE_REASON_FIRST_SIGHT);
    compile->set_reason("first time this graph was seen");
    recorder.record(std::move(event));
  }
  {
    pb::Event event;
    pb::ExecuteEvent* execute = event.mutable_execute();
    execute->set_step(step);
    execute->set_graph_hash(graph_hash);
    execute->set_start_ns((start_ms + compile_ms + 1) * kMs);
    execute->set_duration_ns(5 * kMs);
    execute->set_cause(pb::SYNC_CAUSE_MARK_STEP);
    execute->set_cache_hit(compile_ms == 0);
    execute->set_node_count(42);
    recorder.record(std::move(event));
  }
  pb::Event event;
  pb::StepEvent* timing = event.mutable_step();
  timing->set_step(step);
  timing->set_start_ns(start_ms * kMs);
  timing->set_end_ns((start_ms + duration_ms) * kMs);
  timing->set_compile_ns(compile_ms * kMs);
  timing->set_execute_ns(5 * kMs);
  timing->set_trace_ns((duration_ms - compile_ms - 5) * kMs);
  recorder.record(std::move(event));
}

pb::IrNode* addNode(pb::IrGraph& graph, const std::string& op, std::vector<int64_t> shape,
                    std::vector<int32_t> operands, int32_t parameter, int32_t line) {
  pb::IrNode* node = graph.add_nodes();
  node->set_id(graph.nodes_size() - 1);
  node->set_op(op);
  for (int64_t dim : shape) node->add_shape(dim);
  for (int32_t operand : operands) node->add_operands(operand);
  node->set_dtype("f32");
  node->set_parameter_index(parameter);
  node->mutable_source()->set_file("/work/proj/train_shapes.py");
  node->mutable_source()->set_line(line);
  return node;
}

// x [batch, 3] @ w [3, 1], summed.
pb::IrGraph batchGraph(uint64_t hash, int64_t batch) {
  pb::IrGraph graph;
  graph.set_hash(hash);
  addNode(graph, "device_data", {batch, 3}, {}, 0, 5);
  addNode(graph, "device_data", {3, 1}, {}, 1, 3);
  addNode(graph, "matmul", {batch, 1}, {0, 1}, -1, 6);
  addNode(graph, "sum", {}, {2}, -1, 6);
  graph.add_outputs(3);
  graph.set_parameter_count(2);
  return graph;
}

}  // namespace

HistoryFixture::HistoryFixture(const QString& path) : path_(path) {
  const std::string file = path.toStdString();
  const int64_t now = QDateTime::currentMSecsSinceEpoch();
  {
    storage::Recorder recorder(file, runInfo("baseline", "/work/proj/train_mlp.py", now - 3'600'000));
    succeededId = recorder.run_id();
    const int64_t durations[] = {50, 10, 12, 12, 14};
    int64_t start = 0;
    for (int64_t step = 0; step < 5; ++step) {
      recordStep(recorder, step, start, durations[step], step == 0 ? 40 : 0);
      start += durations[step];
      pb::Event loss;  // the run list shows the last one
      loss.mutable_scalar()->set_step(step);
      loss.mutable_scalar()->set_name("loss");
      loss.mutable_scalar()->set_value(2.0 / static_cast<double>(step + 1));
      recorder.record(std::move(loss));
    }
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  {
    pb::RunInfo info = runInfo("bad-shape", "/work/proj/train_cnn.py", now - 600'000);
    info.add_tags("cnn");
    info.add_tags("bs64");
    storage::Recorder recorder(file, info);
    failedId = recorder.run_id();
    recordStep(recorder, 0, 0, 60, 45);
    recordStep(recorder, 1, 60, 20, 0);
    const QString traceback = QStringLiteral(
                                  "Traceback (most recent call last):\n  File \"train_cnn.py\", line 42, in <module>\n"
                                  "    out = model(x)\n%1\n")
                                  .arg(QString::fromUtf8(kError));
    recorder.finish(pb::RUN_STATUS_FAILED, 1, kError, traceback.toStdString());
  }
  live_ = std::make_unique<storage::Recorder>(file, runInfo("live", "/work/proj/train_live.py", now - 5'000));
  runningId = live_->run_id();
  recordStep(*live_, 0, 0, 30, 20);
  recordStep(*live_, 1, 30, 8, 0);
  recordStep(*live_, 2, 38, 9, 0);
  live_->flush();
}

HistoryFixture::~HistoryFixture() = default;

int64_t recordFinishedRun(const QString& path, const QString& name, int steps) {
  storage::Recorder recorder(path.toStdString(),
                             runInfo(name.toStdString(), "/work/proj/extra.py", QDateTime::currentMSecsSinceEpoch()));
  for (int step = 0; step < steps; ++step) recordStep(recorder, step, step * 10, 10, step == 0 ? 5 : 0);
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

int64_t recordRecompilingRun(const QString& path) {
  storage::Recorder recorder(path.toStdString(),
                             runInfo("reshaped", "/work/proj/train_shapes.py", QDateTime::currentMSecsSinceEpoch()));
  const int64_t durations[] = {50, 10, 40, 10, 10};
  int64_t start = 0;
  for (int64_t step = 0; step < 5; ++step) {
    const bool compiles = step == 0 || step == 2;
    const uint64_t hash = step < 2 ? kGraphA : kGraphB;
    const int64_t compile_ms = step == 0 ? 40 : step == 2 ? 30 : 0;
    if (compiles) {
      pb::Event event;
      pb::CompileEvent* compile = event.mutable_compile();
      compile->set_step(step);
      compile->set_graph_hash(hash);
      compile->set_start_ns((start + 1) * kMs);
      compile->set_duration_ns(compile_ms * kMs);
      compile->mutable_source()->set_file("/work/proj/train_shapes.py");
      compile->mutable_source()->set_line(7);
      if (step == 0) {
        compile->set_reason_kind(pb::COMPILE_REASON_FIRST_SIGHT);
        compile->set_reason("first time this graph was seen");
      } else {
        compile->set_reason_kind(pb::COMPILE_REASON_SHAPE);
        compile->set_reason("input 0 shape changed from [8, 3] to [4, 3]");
        compile->set_compared_with(kGraphA);
      }
      *compile->mutable_graph() = batchGraph(hash, step == 0 ? 8 : 4);
      compile->set_program_text("program");
      recorder.record(std::move(event));
    }
    pb::Event execute_event;
    pb::ExecuteEvent* execute = execute_event.mutable_execute();
    execute->set_step(step);
    execute->set_graph_hash(hash);
    execute->set_start_ns((start + compile_ms + 1) * kMs);
    execute->set_duration_ns(5 * kMs);
    execute->set_cause(pb::SYNC_CAUSE_MARK_STEP);
    execute->set_cache_hit(!compiles);
    execute->set_node_count(4);
    recorder.record(std::move(execute_event));
    pb::Event event;
    pb::StepEvent* timing = event.mutable_step();
    timing->set_step(step);
    timing->set_start_ns(start * kMs);
    timing->set_end_ns((start + durations[step]) * kMs);
    timing->set_compile_ns(compile_ms * kMs);
    timing->set_execute_ns(5 * kMs);
    recorder.record(std::move(event));
    start += durations[step];
  }
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

int64_t recordProfiledRun(const QString& path) {
  storage::Recorder recorder(path.toStdString(),
                             runInfo("profiled", "/work/proj/train_profiled.py", QDateTime::currentMSecsSinceEpoch()));
  pb::Event compile;
  pb::CompileEvent* c = compile.mutable_compile();
  c->set_graph_hash(kProfiledGraph);
  c->set_duration_ns(5 * kMs);
  c->set_reason_kind(pb::COMPILE_REASON_FIRST_SIGHT);
  pb::IrGraph* graph = c->mutable_graph();
  graph->set_hash(kProfiledGraph);
  const char* ops[] = {"device_data", "matmul", "add", "relu"};
  for (int i = 0; i < 4; ++i) {
    pb::IrNode* node = graph->add_nodes();
    node->set_id(i);
    node->set_op(ops[i]);
    if (i > 0) node->add_operands(i - 1);
    node->mutable_source()->set_file("/work/proj/train_profiled.py");
    node->mutable_source()->set_line(i < 2 ? 12 : 13);
    node->set_scope("model.fc1");
  }
  recorder.record(compile);
  recordStep(recorder, 0, 0, 10, 5);
  pb::Event peaks;
  peaks.mutable_machine_peak()->set_gemm_gflops(100);
  peaks.mutable_machine_peak()->set_stream_gbps(20);
  peaks.mutable_machine_peak()->set_threads(2);
  peaks.mutable_machine_peak()->set_isa("avx2");
  // In cache: 80 GB/s for kernels of up to 512 KiB (the gemm and the sum).
  peaks.mutable_machine_peak()->set_cache_gbps(80);
  peaks.mutable_machine_peak()->set_cache_bytes(512 << 10);
  recorder.record(peaks);
  pb::Event profile;
  pb::KernelProfileEvent* p = profile.mutable_kernel_profile();
  p->set_graph_hash(kProfiledGraph);
  p->set_executions(10);
  p->set_peak_bytes(3 << 20);
  auto add = [p](const char* name, std::vector<int> nodes, int64_t flops, int64_t bytes, int64_t ns,
                 const char* code = "") {
    pb::KernelProfile* k = p->add_kernels();
    k->set_index(p->kernels_size() - 1);
    k->set_name(name);
    k->set_code(code);
    for (int n : nodes) k->add_nodes(n);
    k->set_flops(flops);
    k->set_bytes(bytes);
    k->set_samples(4);
    k->set_total_ns(4 * ns);
  };
  add("gemm", {1}, 2'000'000, 40'000, 100'000);
  add("fused_elementwise", {2, 3}, 0, 1'000'000, 200'000, "avx2 compiled");
  add("sum", {}, 1'000, 4'000, 1'000);
  recorder.record(profile);
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

void writeNewerSchemaFile(const QString& path) {
  recordFinishedRun(path, QStringLiteral("from the future"), 1);
  // The one place the GUI tests touch SQL: storage keeps its schema version
  // in SQLite's user_version, and only a future build would raise it.
  const storage::HistoryFile file(path.toStdString(), storage::OpenMode::kReadWrite);
  const std::string pragma = QStringLiteral("PRAGMA user_version = %1").arg(storage::kSchemaVersion + 1).toStdString();
  if (sqlite3_exec(file.db(), pragma.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    throw std::runtime_error(sqlite3_errmsg(file.db()));
  }
}

void writeGarbageFile(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    throw std::runtime_error(QStringLiteral("cannot write %1").arg(path).toStdString());
  }
  // Longer than an SQLite header, and nothing like one.
  for (int i = 0; i < 64; ++i) file.write("this is not a LazyScope history, just some text.\n");
}

// ---------------------------------------------------------------------------
// For the Timeline, Charts, Fallbacks, Metrics and Output views (gui2).

const char* const kProfiledScript =
    "import lazyscope\n"                                  // 1
    "from lazyscope.core import lazy_model as lm\n"       // 2
    "\n"                                                  // 3
    "device = lm.lazy_device()\n"                         // 4
    "w = lazyscope.zeros(16, 1, device=device)\n"         // 5
    "\n"                                                  // 6
    "for step in range(steps):\n"                         // 7
    "    x = batch(step)\n"                               // 8
    "    error = x @ w - target(step)\n"                  // 9
    "    loss = (error * error).mean()\n"                 // 10
    "    grad = x.t() @ error\n"                          // 11
    "    w = w - grad * 0.1\n"                            // 12
    "    if step % 5 == 0:\n"                             // 13
    "        kept = w.nonzero()\n"                        // 14
    "    if step % 10 == 0:\n"                            // 15
    "        order = w.sort()\n"                          // 16
    "        ranked = order.values.sort()\n"              // 17
    "    lm.mark_step()\n"                                // 18
    "    if step % 10 == 0: print(step, loss.item())\n";  // 19

namespace {

void recordFallback(storage::Recorder& recorder, int64_t step, int64_t start_ms, const char* op, int line,
                    int64_t duration_ms, int64_t bytes, pb::FallbackReason reason) {
  pb::Event event;
  pb::FallbackEvent* fallback = event.mutable_fallback();
  fallback->set_step(step);
  fallback->set_op(op);
  fallback->set_start_ns(start_ms * kMs);
  fallback->set_duration_ns(duration_ms * kMs);
  fallback->set_bytes(bytes);
  fallback->mutable_source()->set_file("/work/proj/train_profiled.py");
  fallback->mutable_source()->set_line(line);
  fallback->set_reason(reason);
  fallback->set_dtype("f32");
  recorder.record(std::move(event));
}

}  // namespace

int64_t recordProfiledRun(const QString& path, int steps, const QString& name, double scale) {
  pb::RunInfo info = runInfo(name.toStdString(), "/work/proj/train_profiled.py", QDateTime::currentMSecsSinceEpoch());
  info.set_script_text(kProfiledScript);
  storage::Recorder recorder(path.toStdString(), info);
  const uint64_t hashA = 0x0123456789abcdefULL;
  const uint64_t hashB = 0x0fedcba987654321ULL;
  int64_t start = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t compile_ms = step == 0 ? 40 : step == kProfiledRecompileStep ? 20 : 0;
    const int64_t wait_ms = 1 + step % 3;
    const int64_t duration = 10 + step % 3 + compile_ms;
    const uint64_t hash = step < kProfiledRecompileStep ? hashA : hashB;
    if (compile_ms > 0) {
      pb::Event event;
      pb::CompileEvent* compile = event.mutable_compile();
      compile->set_step(step);
      compile->set_graph_hash(hash);
      compile->set_start_ns((start + 4) * kMs);
      compile->set_duration_ns(compile_ms * kMs);
      compile->mutable_source()->set_file("/work/proj/train_profiled.py");
      compile->mutable_source()->set_line(18);
      compile->set_reason_kind(step == 0 ? pb::COMPILE_REASON_FIRST_SIGHT : pb::COMPILE_REASON_SHAPE);
      compile->set_reason(step == 0 ? "first time this graph was seen"
                                    : "input 0 shape changed from [64, 16] to [32, 16]");
      if (step != 0) compile->set_compared_with(hashA);
      recorder.record(std::move(event));
    }
    if (step % 5 == 0)
      recordFallback(recorder, step, start + 1, "nonzero", 14, 2, 4096, pb::FALLBACK_REASON_DATA_DEPENDENT);
    if (step % 10 == 0) recordFallback(recorder, step, start + 2, "sort", 17, 3, 1024, pb::FALLBACK_REASON_NOT_LOWERED);
    {
      pb::Event event;
      pb::ExecuteEvent* execute = event.mutable_execute();
      execute->set_step(step);
      execute->set_graph_hash(hash);
      execute->set_start_ns((start + 4 + compile_ms) * kMs);
      execute->set_duration_ns(5 * kMs);
      execute->set_cause(pb::SYNC_CAUSE_MARK_STEP);
      execute->mutable_source()->set_file("/work/proj/train_profiled.py");
      execute->mutable_source()->set_line(18);
      execute->set_cache_hit(compile_ms == 0);
      execute->set_node_count(12);
      recorder.record(std::move(event));
    }
    if (step % 10 == 0) {
      pb::Event event;
      pb::ExecuteEvent* execute = event.mutable_execute();
      execute->set_step(step);
      execute->set_graph_hash(hash);
      execute->set_start_ns((start + duration - 1) * kMs);
      execute->set_cause(pb::SYNC_CAUSE_ITEM);
      execute->mutable_source()->set_file("/work/proj/train_profiled.py");
      execute->mutable_source()->set_line(19);
      execute->set_cache_hit(true);
      execute->set_node_count(3);
      recorder.record(std::move(event));
    }
    for (const auto& [scalar, value] : {std::pair<const char*, double>{"loss", scale / static_cast<double>(step + 1)},
                                        std::pair<const char*, double>{"lr", 0.1}}) {
      pb::Event event;
      event.mutable_scalar()->set_step(step);
      event.mutable_scalar()->set_name(scalar);
      event.mutable_scalar()->set_value(value);
      recorder.record(std::move(event));
    }
    pb::Event event;
    pb::StepEvent* timing = event.mutable_step();
    timing->set_step(step);
    timing->set_start_ns(start * kMs);
    timing->set_end_ns((start + duration) * kMs);
    timing->set_trace_ns(4 * kMs);
    timing->set_compile_ns(compile_ms * kMs);
    timing->set_execute_ns(5 * kMs);
    timing->set_host_wait_ns(wait_ms * kMs);
    recorder.record(std::move(event));
    if (step % 10 == 0) {
      recorder.record_output(
          "stdout",
          QStringLiteral("step %1 loss %2\n").arg(step).arg(scale / static_cast<double>(step + 1)).toStdString());
    }
    if (step == 1) recorder.record_output("stderr", "warning: sort falls back to the host\n");
    start += duration;
  }
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

}  // namespace lazyscope::gui::testing

namespace lazyscope::gui::testing {

ExclusiveLock::ExclusiveLock(const QString& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.toUtf8().constData(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return;
  }
  db_ = db;
  // In WAL mode only locking_mode=EXCLUSIVE plus a write keeps readers out.
  held_ = sqlite3_exec(db,
                       "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; "
                       "UPDATE runs SET name = name WHERE 0;",
                       nullptr, nullptr, nullptr) == SQLITE_OK;
}

ExclusiveLock::~ExclusiveLock() {
  if (db_ == nullptr) return;
  sqlite3_exec(static_cast<sqlite3*>(db_), "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(static_cast<sqlite3*>(db_));
}

}  // namespace lazyscope::gui::testing
