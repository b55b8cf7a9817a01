// `lazyscope run --nproc-per-node N [--nnodes M --node-rank R --master-addr
// HOST --master-port PORT] SCRIPT`: the launcher, like torchrun. It starts N
// worker processes (this executable, `run SCRIPT` again, one lazy device
// each) with their rank in the environment, and records the one run: every
// worker streams its engine events over a pipe (length-prefixed protobuf
// Events, `replica` = its global rank) and its output over two more; the
// launcher's Recorder writes them into the history as they come, so a
// worker that dies leaves everything it sent.
//
// Failure handling: a worker that exits non-zero (or is killed) fails the
// job: the others get SIGTERM at once and SIGKILL after
// LAZYSCOPE_WORKER_TIMEOUT_S, and the run is recorded as failed naming the
// rank, its exit status and its last line. Ctrl-C (SIGINT) or SIGTERM to the
// launcher stops every worker; the run is recorded as interrupted.
//
// Several nodes: node 0's launcher listens on --master-port and hands every
// other node's launcher the job's id after checking that they agree on
// --nnodes and --nproc-per-node, then serves the workers' rendezvous store on
// that port (engine/distributed/tcp_store.h), so machines need no shared
// folder. A job without --master-port (one node) meets in a Gloo file store
// under LAZYSCOPE_RDZV_DIR (default /tmp/lazyscope-rdzv). Each node records
// its own ranks; `lazyscope import BUNDLE --into RUN` merges the nodes'
// bundles into one run.
#pragma once

#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "run_options.h"

namespace lazyscope::runner {

// The launcher's options in `run`'s arguments: name and whether it takes a
// value; take_launch_option() parses them into RunOptions.
bool take_launch_option(const std::vector<std::string>& args, size_t& i, RunOptions& o);
extern const char* const kLaunchHelp;

// Runs the job (options.nproc_per_node > 0); `run_args` are the arguments
// `run` got, passed on to the workers without the launcher's options.
// Returns the exit code: 0, the first failed worker's, 130 after Ctrl-C, 2
// for a job that could not start (port in use, a node that never came,
// mismatched world sizes).
int launch(const RunOptions& options, const std::vector<std::string>& run_args);

// In a worker: the pipe the launcher reads events from (-1 when this process
// was not started by a launcher), and the writer of that stream.
int worker_event_fd();
class WorkerEventStream {
 public:
  explicit WorkerEventStream(int fd);
  ~WorkerEventStream();
  WorkerEventStream(const WorkerEventStream&) = delete;
  WorkerEventStream& operator=(const WorkerEventStream&) = delete;
  // Thread-safe; events are published from any thread of the worker.
  void write(const pb::Event& event);

 private:
  int fd_;
  int rank_;
  bool broken_ = false;
};

}  // namespace lazyscope::runner
