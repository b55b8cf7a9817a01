// Elementwise fusion: a chain of elementwise ops (with broadcasts, scalars,
// bool masks and casts between float32 and bool) compiled into one kernel
// that reads each input once and writes only the values read outside the
// chain. The kernel is a tiled vector interpreter: the output is walked in
// tiles of kTile elements; each step applies one op, a row of
// fusion_rows.inc, to whole tiles that stay in L1. The tile functions are
// compiled for AVX-512, AVX2 and baseline x86-64 and chosen at run time.
// A chain of two ops or more over settings::fusion_jit_min_elements() and
// up is compiled at run time instead (fusion_jit.h): one loop with every
// step in registers, the interpreter's tiles where no compiler runs and
// until a compile on the background thread is done (adopt()).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "ir/attrs.h"
#include "ir/op_table.h"

namespace lazyscope::cpu {

// out[0, n) = row(in[0][..], in[1][..], in[2][..]; p0, p1) for one tile.
using TileFn = void (*)(float* out, const float* const* in, int64_t n, double p0, double p1);

// The row fusing `op` with output dtype `out` over operands of `operand`
// dtypes, or -1: the op then stays a standalone kernel.
int fused_row(OpKind op, DType out, std::span<const DType> operands);

// The instruction set whose tile functions run ("avx512f", "avx2", "x86-64").
const char* fused_isa();

// Runs a float32 op of the table through its fused row's tile function
// when every operand is float32 of the output's shape (else false: the
// caller runs its own kernel). The eager device's kernels then compute
// what fused chains compute, to the bit: libmvec's functions, not libm's.
struct KernelArgs;
bool run_as_row(OpKind op, const KernelArgs& k);

// softmax (log: log_softmax) of `rows` contiguous float32 rows of n
// elements, compiled for that instruction set too.
using SoftmaxRowsFn = void (*)(float* out, const float* in, int64_t rows, int64_t n, bool log);
SoftmaxRowsFn softmax_rows();
// softmax (log: log_softmax) down w <= 256 columns of a [rows, ld] float32
// block: a softmax over a dim that is not the last.
using SoftmaxColumnsFn = void (*)(float* out, const float* in, int64_t rows, int64_t ld, int64_t w, bool log);
SoftmaxColumnsFn softmax_columns();
// logsumexp of `rows` contiguous float32 rows of n into out[r].
using LogsumexpRowsFn = void (*)(float* out, const float* in, int64_t rows, int64_t n);
LogsumexpRowsFn logsumexp_rows();

// dst[0, n) = src[0, n) with non-temporal stores (the caller fences).
using StreamStoreFn = void (*)(float* dst, const float* src, int64_t n);

// A fused kernel compiled at run time (fusion_jit.h): in[i] is input i's
// data (float or bool), out[o] output o's; it computes the elements
// [begin, end) with `stream` as its non-temporal copy.
using CompiledKernelFn = void (*)(const void* const* in, void* const* out, int64_t begin, int64_t end,
                                  StreamStoreFn stream);

struct PendingKernel;  // fusion_jit.h

class FusedKernel {
 public:
  static constexpr int64_t kTile = 512;

  struct Input {
    DType dtype;  // float32 or bool
    Shape shape;  // broadcast to the kernel's shape
  };
  struct Step {
    int row;  // fused_row()
    OpKind op;
    int args[3];            // value ids: inputs first, then steps
    double p0 = 0, p1 = 0;  // the row's attributes
    int output = -1;        // index into the kernel's outputs, or -1: stays in a tile
  };

  // `outputs[i]` is the step whose value output i holds.
  FusedKernel(Shape shape, std::vector<Input> inputs, std::vector<Step> steps, std::vector<int> output_steps,
              std::vector<DType> output_dtypes);

  // inputs in the order given at construction; outputs allocated with the
  // kernel's shape and their dtypes. bf16: round every float32 step result
  // to bfloat16, as the standalone kernels' results are in bf16 mode.
  void run(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs, bool bf16) const;
  // The elements [begin, end) of run(), on the calling thread only: for a
  // caller that already is inside a parallel region (several kernels
  // sharing one region, or a GEMM's epilogue on the rows it just wrote).
  void run_range(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs, bool bf16, int64_t begin,
                 int64_t end) const;
  int64_t element_count() const { return numel_; }
  // Whether output `output` may share input `input`'s buffer (buffer
  // donation): the input is float32 of the kernel's shape, read in place,
  // by no step after the one writing the output, so each element is read
  // before the same element is written (run_range computes a step whose
  // output is one of its operands into a scratch tile first).
  bool can_write_over_input(size_t input, size_t output) const;

  // How it runs: "<isa> tiles" (the interpreter) or "<isa> compiled" (a
  // loop compiled at run time, fusion_jit.h).
  std::string code() const;
  bool is_compiled() const { return compiled_.load(std::memory_order_acquire) != nullptr; }
  // Whether its compile runs in the background (it runs on tiles until then).
  bool compiling() const;
  // Switches to the compiled code once its background compile is done. The
  // owner calls it between executions, never while the kernel runs, so one
  // execution runs one code throughout. Returns whether the kernel still
  // waits for its compile (false: switched, failed or never compiling).
  bool adopt() const;

  const Shape& shape() const { return shape_; }
  size_t step_count() const { return steps_.size(); }
  const Step& step(size_t i) const { return steps_[i]; }
  size_t input_count() const { return inputs_.size(); }
  OpKind step_op(size_t i) const { return steps_[i].op; }

 private:
  struct InputPlan {
    bool contiguous_float;         // read in place
    bool scalar;                   // one element, broadcast
    std::vector<int64_t> strides;  // per dim of `dims`, 0 where broadcast
    Shape dims;                    // shape_ with adjacent dims merged where this input allows
    int reg;                       // scratch register when not read in place
  };
  Shape shape_;
  int64_t numel_;
  std::vector<Input> inputs_;
  std::vector<InputPlan> plans_;
  std::vector<Step> steps_;
  std::vector<int> step_reg_;  // per step: scratch register, or -1 when written to its output in place
  // What the interpreter's loop reads per step, laid out together (a step
  // over a tile of 64 floats is ~35 instructions of tile function, and the
  // loop around it was ~65 more: engine_bench's cached 1,000-node step).
  // `plain`: computed into its scratch register and written nowhere else,
  // in float32 mode: no alias check, rounding or copy after it (a register
  // step never shares its register with an operand: see the constructor).
  struct StepRun {
    int row;
    int args[3];         // value ids, the unused ones repeating args[0]
    int64_t reg_offset;  // floats into the scratch; -1: its output, in place
    double p0, p1;
    bool plain;
  };
  std::vector<StepRun> runs_;
  std::vector<DType> output_dtypes_;
  int registers_ = 0;
  int alias_reg_ = -1;  // scratch for a step whose output buffer is also its operand
  // Outputs too large to stay in cache are computed in a register and
  // written with non-temporal stores: no read of the destination lines
  // before they are written (a third of the traffic of a = b op c).
  bool stream_ = false;
  // Set when the chain was compiled at run time: by the constructor (a
  // cache hit, a synchronous compile) or by adopt() between executions.
  mutable std::atomic<CompiledKernelFn> compiled_{nullptr};
  std::shared_ptr<const PendingKernel> pending_;  // the background compile adopt() waits for
  bool writes_over_input_ = false;                // some can_write_over_input() pair holds
  std::string compiled_source() const;
  enum class Read : uint8_t { kElement, kScalar, kRow, kTrailing, kOther };
  Read read_kind(const Input& in) const;
};

}  // namespace lazyscope::cpu
