// The CPU backend: "compiling" a graph turns it into a flat program of kernel
// calls over numbered buffer slots. The program is where fusion and threading
// will live; executing it is a loop over instructions.
#pragma once

#include "backend/backend.h"

namespace lazyscope::cpu {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  bool lowers(OpKind op, DType dtype) const override;
  std::unique_ptr<Executable> compile(const GraphView& graph) override;
  MachinePeaks machine_peaks() override;
};

}  // namespace lazyscope::cpu
