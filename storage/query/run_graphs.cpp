#include "query/run_graphs.h"

#include "db/history_file.h"
#include "db/statement.h"

namespace lazyscope::storage {

std::vector<pb::GraphInfo> read_graphs(const HistoryFile& file, int64_t run_id) {
  // One grouped scan of each event table, joined on the hash: linear in the
  // run's events however many graphs it has. A graph may lack a stored IR (the
  // engine can leave it out), so the hashes come from all three tables.
  Statement rows(file, R"sql(
    WITH c AS (SELECT graph_hash AS hash, COUNT(*) AS n, TOTAL(duration_ns) AS ns,
                      MIN(step) AS first_step, MIN(start_ns) AS first_ns
               FROM compilations WHERE run_id = ?1 GROUP BY graph_hash),
         e AS (SELECT graph_hash AS hash, COUNT(*) AS n, TOTAL(duration_ns) AS ns,
                      MIN(step) AS first_step, MIN(start_ns) AS first_ns, MAX(node_count) AS nodes
               FROM executions WHERE run_id = ?1 GROUP BY graph_hash),
         h AS (SELECT hash FROM c UNION SELECT hash FROM e
               UNION SELECT hash FROM graphs WHERE run_id = ?1)
    SELECT h.hash, COALESCE(g.node_count, e.nodes, 0), g.hash IS NOT NULL,
           COALESCE(c.n, 0), COALESCE(c.ns, 0), COALESCE(e.n, 0), COALESCE(e.ns, 0),
           MIN(COALESCE(c.first_step, e.first_step, 0), COALESCE(e.first_step, c.first_step, 0)) AS first_step,
           MIN(COALESCE(c.first_ns, e.first_ns, 0), COALESCE(e.first_ns, c.first_ns, 0)) AS first_ns
    FROM h
    LEFT JOIN graphs AS g ON g.run_id = ?1 AND g.hash = h.hash
    LEFT JOIN c ON c.hash = h.hash
    LEFT JOIN e ON e.hash = h.hash
    ORDER BY first_step, first_ns, h.hash)sql");
  rows.bind_int64(1, run_id);
  constexpr double kNsPerMs = 1e6;
  std::vector<pb::GraphInfo> graphs;
  while (rows.next_row()) {
    pb::GraphInfo& graph = graphs.emplace_back();
    graph.set_hash(rows.hash_at(0));
    graph.set_node_count(static_cast<int32_t>(rows.int64_at(1)));
    graph.set_has_ir(rows.int64_at(2) != 0);
    graph.set_compiles(rows.int64_at(3));
    graph.set_compile_ms(rows.double_at(4) / kNsPerMs);
    graph.set_executions(rows.int64_at(5));
    graph.set_execute_ms(rows.double_at(6) / kNsPerMs);
    graph.set_first_step(rows.int64_at(7));
  }
  return graphs;
}

std::optional<pb::IrGraph> read_graph_ir(const HistoryFile& file, int64_t run_id, uint64_t hash) {
  Statement row(file, "SELECT ir FROM graphs WHERE run_id = ?1 AND hash = ?2");
  row.bind_int64(1, run_id).bind_hash(2, hash);
  if (!row.next_row()) return std::nullopt;
  pb::IrGraph graph;
  const bool parsed = graph.ParseFromString(row.blob_at(0));
  row.reset();
  if (!parsed) {
    throw HistoryError(file.path() + ": the stored graph " + std::to_string(hash) + " of run " +
                       std::to_string(run_id) + " is corrupt");
  }
  return graph;
}

std::optional<std::string> read_program_text(const HistoryFile& file, int64_t run_id, uint64_t hash) {
  Statement row(file, "SELECT program_text FROM graphs WHERE run_id = ?1 AND hash = ?2");
  row.bind_int64(1, run_id).bind_hash(2, hash);
  if (!row.next_row()) return std::nullopt;
  std::string text = row.text_at(0);
  row.reset();
  return text;
}

}  // namespace lazyscope::storage
