// Small, real histories for the GUI tests, written through the storage
// Recorder exactly as the runner writes them.
#pragma once

#include <QString>
#include <cstdint>
#include <memory>

namespace lazyscope::storage {
class Recorder;
}

namespace lazyscope::gui::testing {

// Three runs in a new history file:
//   "baseline"   /work/proj/train_mlp.py  succeeded: 5 steps, 1 uncached compile
//                (step 0), 5 executions of which 4 cache hits; steps 1–4 take
//                10, 12, 12 and 14 ms, so the median step is 12 ms.
//   "bad-shape"  /work/proj/train_cnn.py  failed after 2 steps with kError.
//   "live"       /work/proj/train_live.py still running: 3 steps so far. Its
//                recorder stays open for as long as the fixture lives.
class HistoryFixture {
 public:
  static constexpr const char* kError = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x784 and 512x10)";

  explicit HistoryFixture(const QString& path);
  ~HistoryFixture();
  HistoryFixture(const HistoryFixture&) = delete;
  HistoryFixture& operator=(const HistoryFixture&) = delete;

  const QString& path() const { return path_; }

  int64_t succeededId = 0;
  int64_t failedId = 0;
  int64_t runningId = 0;

 private:
  QString path_;
  std::unique_ptr<storage::Recorder> live_;
};

// One finished run with `steps` steps, appended to the history at `path`
// (created if missing). Returns its id.
int64_t recordFinishedRun(const QString& path, const QString& name, int steps);

// A finished run "reshaped" (/work/proj/train_shapes.py) appended to the
// history at `path`: 5 steps of 50, 10, 40, 10 and 10 ms. Step 0 compiles
// graph kGraphA (x f32[8, 3] @ w f32[3, 1], then sum) for 40 ms; step 2
// compiles kGraphB, the same with x f32[4, 3], for 30 ms, a shape recompile
// compared with kGraphA; both graphs' IR is stored. Returns its id.
inline constexpr uint64_t kGraphA = 0xaaaa0000000000a1ULL;
inline constexpr uint64_t kGraphB = 0xbbbb0000000000b2ULL;
int64_t recordRecompilingRun(const QString& path);

// A finished run "profiled" (/work/proj/train_profiled.py) appended to the
// history at `path`: one step executing graph kProfiledGraph (IR: device_data
// #0, matmul #1 at line 12 in scope "model.fc1", add #2 and relu #3 at line
// 13), machine peaks of 100 GFLOP/s and 20 GB/s (2 threads, avx2), and a
// profile of 10 executions: "gemm" (#1; 2 MFLOP, 40 kB, 4 timed calls of
// 100 us), "fused_elementwise" (#2, #3; no FLOPs, 1 MB, 4 calls of 200 us)
// and "sum" (no nodes; 1 kFLOP, 4 kB, 4 calls of 1 us). Returns its id.
inline constexpr uint64_t kProfiledGraph = 0xcccc0000000000c3ULL;
int64_t recordProfiledRun(const QString& path);

// A valid history whose schema version is one newer than this build reads
// (as if written by a future LazyScope).
void writeNewerSchemaFile(const QString& path);

// A file that is not an SQLite database.
void writeGarbageFile(const QString& path);

// Holds an exclusive lock on the history at `path` for as long as it lives,
// as another program in the middle of a long write (or a stuck one) would:
// readers get SQLITE_BUSY once their busy timeout runs out.
class ExclusiveLock {
 public:
  explicit ExclusiveLock(const QString& path);
  ~ExclusiveLock();
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;
  bool held() const { return held_; }

 private:
  void* db_ = nullptr;  // sqlite3*, kept out of this header
  bool held_ = false;
};

// ---------------------------------------------------------------------------
// For the Timeline, Charts, Fallbacks, Metrics and Output views (gui2).
//
// A finished run `name` (/work/proj/train_profiled.py, kProfiledScript) of
// `steps` steps (at least 12) appended to the history at `path`. Step i
// lasts 10 ms + (i % 3) ms: trace 4, execute 5, host wait 1 + (i % 3); step 0
// also compiles for 40 ms (first sight) and step kProfiledRecompileStep for
// 20 ms (shape). Every 5th step runs op "nonzero" on the host (line 14,
// 2 ms, 4096 bytes); every 10th step calls item() (line 19, a sync) and
// "sort" on the host (line 17, 3 ms, 1024 bytes). Scalars "loss" = 1 / (i + 1)
// and "lr" = 0.1 on every step; stdout "step i loss ..." every 10 steps and
// one stderr warning. `scale` multiplies the loss (to tell overlaid runs apart).
inline constexpr int64_t kProfiledRecompileStep = 7;
extern const char* const kProfiledScript;
int64_t recordProfiledRun(const QString& path, int steps, const QString& name = QStringLiteral("profiled"),
                          double scale = 1.0);

}  // namespace lazyscope::gui::testing
