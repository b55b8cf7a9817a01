// The CPU backend: "compiling" a graph turns it into a flat program of kernel
// calls over numbered buffer slots. The program is where fusion and threading
// will live; executing it is a loop over instructions.
#pragma once

#include <optional>
#include <vector>

#include "backend/backend.h"

namespace lazyscope::cpu {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  bool lowers(OpKind op, DType dtype) const override;
  std::unique_ptr<Executable> compile(const GraphView& graph) override;
  MachinePeaks machine_peaks() override;
  void will_run() override;
};

// A compiled program's memory plan as data, for tests that check it without
// trusting the planner: per instruction the slots it reads and writes, per
// slot where its bytes are.
struct PlanLayout {
  struct Value {
    int64_t offset = -1;  // in the arena; -1: not there (a parameter, an output, a view of one, unused)
    int64_t bytes = 0;
    int view_of = -1;  // a view (no kernel) of this slot's bytes
    int over = -1;     // written in place over this slot's bytes
  };
  std::vector<std::vector<int>> reads, writes;  // per instruction, in program order
  std::vector<Value> values;                    // per slot (IR node)
  int64_t arena_bytes = 0;
};
// nullopt when `executable` is not a CPU program.
std::optional<PlanLayout> plan_layout(const Executable& executable);

}  // namespace lazyscope::cpu
