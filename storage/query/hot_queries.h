// The SQL of the queries that must stay fast on a long run (a 100,000-step
// history): the run summary and the per-step series. Named here, once, so that
// a test can check their query plans (an index search, never a full scan of
// an event table) and the benchmark can time them.
#pragma once

#include <string>

namespace lazyscope::storage {

// Aggregates as correlated subqueries: each one is a range scan of its
// table's (run_id, ...) index, so listing costs the size of the runs listed.
// A step is a barrier that ran a graph (storage/analysis/step_times.h): a
// data loader's empty last barrier is not counted.
inline const std::string kSelectSummaries = R"sql(
  SELECT r.id, r.name, r.script_path, r.script_sha256, r.script_text, r.args_json,
         r.settings_json, r.backend, r.device_count, r.host, r.pid, r.started_unix_ms,
         r.ended_unix_ms, r.heartbeat_unix_ms, r.status, r.exit_code, r.error, r.traceback,
         r.tags_json,
         (SELECT COUNT(DISTINCT s.step) FROM steps AS s WHERE s.run_id = r.id AND s.replica = 0
            AND EXISTS (SELECT 1 FROM executions AS x WHERE x.run_id = r.id AND x.step = s.step
                        AND x.replica = 0)),
         (SELECT COUNT(*) FROM compilations WHERE run_id = r.id),
         (SELECT TOTAL(duration_ns) FROM compilations WHERE run_id = r.id),
         (SELECT COUNT(*) FROM executions WHERE run_id = r.id),
         (SELECT COUNT(*) FROM executions WHERE run_id = r.id AND cache_hit <> 0),
         (SELECT TOTAL(duration_ns) FROM executions WHERE run_id = r.id),
         (SELECT COUNT(*) FROM fallbacks WHERE run_id = r.id),
         (SELECT IFNULL(value, 'NaN') FROM scalars WHERE run_id = r.id AND name = 'loss' AND replica = 0
          ORDER BY step DESC, id DESC LIMIT 1)
  FROM runs AS r
)sql";

inline const std::string kSelectOneSummary = kSelectSummaries + "WHERE r.id = ?1";

// Warm steps are those that did not compile: their median is the run's
// steady-state step time.
inline const std::string kSelectStepDurations = R"sql(
  SELECT end_ns - start_ns, compile_ns = 0 FROM steps AS s
  WHERE s.run_id = ?1 AND s.replica = 0
    AND EXISTS (SELECT 1 FROM executions AS x WHERE x.run_id = ?1 AND x.step = s.step AND x.replica = 0))sql";

inline const std::string kSelectStepSeries = R"sql(
  SELECT step, end_ns - start_ns, trace_ns, compile_ns, execute_ns, transfer_ns, host_wait_ns
  FROM steps
  WHERE run_id = ?1 AND replica = 0
  ORDER BY step, start_ns)sql";

inline const std::string kSelectScalarSeries = R"sql(
  SELECT step, value FROM scalars
  WHERE run_id = ?1 AND name = ?2 AND replica = 0
  ORDER BY step, id)sql";

}  // namespace lazyscope::storage
