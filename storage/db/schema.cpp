#include "db/schema.h"

#include <array>

#include "db/history_file.h"

namespace lazyscope::storage {
namespace {

// Version 1. Conventions:
// - Times inside a run are nanoseconds on the engine's steady clock (see
//   events.proto); wall-clock times are Unix milliseconds (*_unix_ms).
// - Graph hashes are uint64 stored as the int64 with the same bits.
// - Enums (status, reason_kind, cause) are the protobuf enum values.
// - Event tables keep their rowid as arrival order and have no uniqueness
//   constraints: a duplicate event from the engine must not make the whole
//   batch fail. Graphs are the exception: stored once per run and hash.
// - args/settings/tags are JSON (an array, an object, an array of strings): read
//   back with json_each(), and queryable from the sqlite3 shell.
// - Child rows cascade when a run is deleted.
constexpr const char* kVersion1 = R"sql(
CREATE TABLE runs (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, so GUI links stay valid
  name              TEXT    NOT NULL DEFAULT '',
  script_path       TEXT    NOT NULL DEFAULT '',
  script_sha256     TEXT    NOT NULL DEFAULT '',
  script_text       TEXT    NOT NULL DEFAULT '',
  args_json         TEXT    NOT NULL DEFAULT '[]',
  settings_json     TEXT    NOT NULL DEFAULT '{}',
  backend           TEXT    NOT NULL DEFAULT '',
  device_count      INTEGER NOT NULL DEFAULT 0,
  host              TEXT    NOT NULL DEFAULT '',
  pid               INTEGER NOT NULL DEFAULT 0,
  started_unix_ms   INTEGER NOT NULL,
  ended_unix_ms     INTEGER NOT NULL DEFAULT 0,   -- 0 while running
  heartbeat_unix_ms INTEGER NOT NULL,             -- refreshed by the writer; stale = crashed
  status            INTEGER NOT NULL,             -- pb::RunStatus
  exit_code         INTEGER NOT NULL DEFAULT 0,
  error             TEXT    NOT NULL DEFAULT '',
  traceback         TEXT    NOT NULL DEFAULT '',
  tags_json         TEXT    NOT NULL DEFAULT '[]'
);
CREATE INDEX runs_by_start ON runs (started_unix_ms, id);

CREATE TABLE steps (
  run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica      INTEGER NOT NULL,
  step         INTEGER NOT NULL,
  start_ns     INTEGER NOT NULL,
  end_ns       INTEGER NOT NULL,
  trace_ns     INTEGER NOT NULL,
  compile_ns   INTEGER NOT NULL,
  execute_ns   INTEGER NOT NULL,
  transfer_ns  INTEGER NOT NULL,
  host_wait_ns INTEGER NOT NULL
);
CREATE INDEX steps_by_run ON steps (run_id, replica, step);

CREATE TABLE graphs (
  run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  hash         INTEGER NOT NULL,
  node_count   INTEGER NOT NULL,
  ir           BLOB    NOT NULL,                  -- serialized pb::IrGraph
  program_text TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, hash)
);

CREATE TABLE compilations (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica         INTEGER NOT NULL,
  step            INTEGER NOT NULL,
  graph_hash      INTEGER NOT NULL,               -- graphs.hash of the same run
  start_ns        INTEGER NOT NULL,
  duration_ns     INTEGER NOT NULL,
  reason_kind     INTEGER NOT NULL,               -- pb::CompileReasonKind
  reason          TEXT    NOT NULL DEFAULT '',
  compared_with   INTEGER NOT NULL DEFAULT 0,
  source_file     TEXT    NOT NULL DEFAULT '',
  source_line     INTEGER NOT NULL DEFAULT 0,
  source_function TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX compilations_by_run ON compilations (run_id, step);

CREATE TABLE executions (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica         INTEGER NOT NULL,
  step            INTEGER NOT NULL,
  graph_hash      INTEGER NOT NULL,
  start_ns        INTEGER NOT NULL,
  duration_ns     INTEGER NOT NULL,
  cause           INTEGER NOT NULL,               -- pb::SyncCause
  cache_hit       INTEGER NOT NULL,               -- 0 or 1
  node_count      INTEGER NOT NULL,
  source_file     TEXT    NOT NULL DEFAULT '',
  source_line     INTEGER NOT NULL DEFAULT 0,
  source_function TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX executions_by_run ON executions (run_id, step);

CREATE TABLE fallbacks (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica         INTEGER NOT NULL,
  step            INTEGER NOT NULL,
  op              TEXT    NOT NULL,
  start_ns        INTEGER NOT NULL,
  duration_ns     INTEGER NOT NULL,
  bytes           INTEGER NOT NULL,
  source_file     TEXT    NOT NULL DEFAULT '',
  source_line     INTEGER NOT NULL DEFAULT 0,
  source_function TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX fallbacks_by_run ON fallbacks (run_id, step);

CREATE TABLE transfers (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica     INTEGER NOT NULL,
  step        INTEGER NOT NULL,
  to_device   INTEGER NOT NULL,                   -- 1 host->device, 0 device->host
  start_ns    INTEGER NOT NULL,
  duration_ns INTEGER NOT NULL,
  bytes       INTEGER NOT NULL
);
CREATE INDEX transfers_by_run ON transfers (run_id, step);

CREATE TABLE scalars (
  id      INTEGER PRIMARY KEY,
  run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica INTEGER NOT NULL,
  step    INTEGER NOT NULL,
  name    TEXT    NOT NULL,
  value   REAL                                    -- NULL stands for NaN, which SQLite cannot store
);
-- Scalars are read one series at a time (a loss curve).
CREATE INDEX scalars_by_run ON scalars (run_id, name, step);

CREATE TABLE output (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq    INTEGER NOT NULL,                        -- arrival order within the run
  stream TEXT    NOT NULL,                        -- 'stdout' or 'stderr'
  text   TEXT    NOT NULL,
  PRIMARY KEY (run_id, seq)
);
)sql";

// Version 2: the engine's metric snapshots (one row per metric per snapshot),
// and why a fallback ran on the host. Rows of version 1 keep reason 0
// (FALLBACK_REASON_UNSPECIFIED), no graph cut and no dtype: unknown, not zero.
constexpr const char* kVersion2 = R"sql(
ALTER TABLE fallbacks ADD COLUMN reason          INTEGER NOT NULL DEFAULT 0;  -- pb::FallbackReason
ALTER TABLE fallbacks ADD COLUMN graph_cut_nodes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE fallbacks ADD COLUMN dtype           TEXT    NOT NULL DEFAULT '';

CREATE TABLE metric_snapshots (
  id         INTEGER PRIMARY KEY,                 -- arrival order: a later snapshot has a larger id
  run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica    INTEGER NOT NULL,
  step       INTEGER NOT NULL,
  time_ns    INTEGER NOT NULL,
  name       TEXT    NOT NULL,
  is_counter INTEGER NOT NULL,                    -- 0 or 1
  value      INTEGER NOT NULL,                    -- counters
  count      INTEGER NOT NULL,                    -- timed metrics: samples, and their times in ms
  total_ms   REAL    NOT NULL,
  p50_ms     REAL    NOT NULL,
  p90_ms     REAL    NOT NULL,
  p99_ms     REAL    NOT NULL
);
-- Read per run in arrival order, and as the last snapshot of each name.
CREATE INDEX metric_snapshots_by_run ON metric_snapshots (run_id, name, id);
)sql";

// Version 3: per-kernel profiles and the machine's measured peaks (issue 11).
// The engine publishes profiles cumulatively, so each table keeps the latest
// totals of its key (an upsert), not one row per event.
constexpr const char* kVersion3 = R"sql(
CREATE TABLE kernel_profiles (
  run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica    INTEGER NOT NULL,
  graph_hash INTEGER NOT NULL,                    -- graphs.hash of the same run
  step       INTEGER NOT NULL,                    -- of the latest event
  executions INTEGER NOT NULL,
  peak_bytes INTEGER NOT NULL,
  PRIMARY KEY (run_id, replica, graph_hash)
);

CREATE TABLE kernel_profile_kernels (
  run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica      INTEGER NOT NULL,
  graph_hash   INTEGER NOT NULL,
  kernel_index INTEGER NOT NULL,                  -- position in the lowered program
  name         TEXT    NOT NULL,
  nodes_json   TEXT    NOT NULL DEFAULT '[]',     -- IrNode ids, a JSON array
  flops        INTEGER NOT NULL,
  bytes        INTEGER NOT NULL,
  samples      INTEGER NOT NULL,
  total_ns     INTEGER NOT NULL,
  PRIMARY KEY (run_id, replica, graph_hash, kernel_index)
);

CREATE TABLE machine_peaks (
  run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  replica     INTEGER NOT NULL,
  gemm_gflops REAL    NOT NULL,
  stream_gbps REAL    NOT NULL,
  threads     INTEGER NOT NULL,
  isa         TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, replica)
);
)sql";

// Version 4: time in collectives and bytes contributed, per replica and step
// (multi-process and thread replicas). Older rows: 0, no collectives seen.
constexpr const char* kVersion4 = R"sql(
ALTER TABLE steps ADD COLUMN collective_ns    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN collective_bytes INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 5: the machine's bandwidth with a triad's arrays in the last-level
// cache, and that working set's bytes (a second roof for kernels whose bytes
// fit it). Older rows: 0, unknown: their kernels are rated against memory.
constexpr const char* kVersion5 = R"sql(
ALTER TABLE machine_peaks ADD COLUMN cache_gbps  REAL    NOT NULL DEFAULT 0;
ALTER TABLE machine_peaks ADD COLUMN cache_bytes INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 6: how a generated kernel ran in its timed calls ("avx512 tiles",
// "avx512 compiled"): a kernel compiled in the background switches from the
// interpreter between executions. Older rows: '', not recorded.
constexpr const char* kVersion6 = R"sql(
ALTER TABLE kernel_profile_kernels ADD COLUMN code TEXT NOT NULL DEFAULT '';
)sql";

constexpr std::array kMigrations = {
    Migration{1, kVersion1}, Migration{2, kVersion2}, Migration{3, kVersion3},
    Migration{4, kVersion4}, Migration{5, kVersion5}, Migration{6, kVersion6},
};

constexpr bool versions_are_contiguous_up_to_current() {
  for (size_t i = 0; i < kMigrations.size(); ++i) {
    if (kMigrations[i].version != static_cast<int>(i) + 1) return false;
  }
  return kMigrations.back().version == kSchemaVersion;
}
static_assert(versions_are_contiguous_up_to_current(),
              "schema migrations must be numbered 1..kSchemaVersion, in order");

constexpr std::array<std::string_view, 13> kTables = {
    "runs",          "steps",   "graphs", "compilations",     "executions",      "fallbacks",
    "transfers",     "scalars", "output", "metric_snapshots", "kernel_profiles", "kernel_profile_kernels",
    "machine_peaks",
};

}  // namespace

std::span<const Migration> schema_migrations() { return kMigrations; }

std::span<const std::string_view> schema_tables() { return kTables; }

}  // namespace lazyscope::storage
