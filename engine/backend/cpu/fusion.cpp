#include "backend/cpu/fusion.h"

#include <math.h>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>

#include "backend/cpu/fusion_jit.h"
#include "backend/cpu/fusion_rows.inc"
#include "backend/cpu/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"
#include "core/settings.h"
#include "metrics/metrics.h"

namespace lazyscope::cpu {

const TileFn* tile_functions_scalar();
const TileFn* tile_functions_avx2();
const TileFn* tile_functions_avx512();
SoftmaxRowsFn softmax_rows_scalar();
SoftmaxRowsFn softmax_rows_avx2();
SoftmaxRowsFn softmax_rows_avx512();
SoftmaxColumnsFn softmax_columns_scalar();
SoftmaxColumnsFn softmax_columns_avx2();
SoftmaxColumnsFn softmax_columns_avx512();
LogsumexpRowsFn logsumexp_rows_scalar();
LogsumexpRowsFn logsumexp_rows_avx2();
LogsumexpRowsFn logsumexp_rows_avx512();

namespace {

// run_range's per-thread scratch, kept: a cached step allocates nothing once
// warm. Behind one trivial initial-exec pointer (as pool::t_cache): five
// thread_local vectors, each with a destructor, cost a __tls_get_addr call
// per access in a shared library, and the interpreter's loop re-read two of
// them per step (22 instructions per node of a cached 1,000-node step).
struct RunScratch {
  std::vector<const void*> in_data;
  std::vector<void*> out_data;
  std::vector<float> scratch;
  std::vector<const float*> value;
  std::vector<int64_t> index;
};
[[gnu::tls_model("initial-exec")]] thread_local RunScratch* t_run_scratch = nullptr;

// Frees the thread's scratch at its exit (touched once per thread, when made).
struct RunScratchReaper {
  ~RunScratchReaper() {
    delete t_run_scratch;
    t_run_scratch = nullptr;
  }
};

[[gnu::noinline]] RunScratch& make_run_scratch() {
  static thread_local RunScratchReaper reaper;
  (void)reaper;
  t_run_scratch = new RunScratch();
  return *t_run_scratch;
}

RunScratch& run_scratch() {
  RunScratch* s = t_run_scratch;
  return s ? *s : make_run_scratch();
}

// dst[0, n) = src[0, n) with non-temporal stores where dst is 16-byte
// aligned (SSE, so every x86-64 has them); run_range fences after. Not
// wider: on the AMD EPYC (Zen 4) of benchmarks/README.md a triad streamed
// with 512-bit stores took 2.3-5.4 ms against 1.5-1.8 with 128- or 256-bit
// ones (4M floats, one thread), and 256-bit ones gained nothing measurable.
void stream_copy(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(dst + i) & 15) != 0; ++i) dst[i] = src[i];
  for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
}

// How a row's operands must be typed.
enum class Signature : uint8_t {
  kFloat,    // every operand float32
  kCompare,  // both operands float32, or both bool
  kLogical,  // every operand bool
  kWhere,    // bool condition, the others of the output's dtype
  kCast,     // float32 or bool operand
};

struct RowInfo {
  OpKind op;
  DType out;
  Signature signature;
  int arity;
  const char* p0;
  const char* p1;
  const char* name;
  const char* expr;  // the expression's text, for kernels compiled at run time
};

#define LAZYSCOPE_FUSED_INFO(name, op, out, sig, arity, a0, a1, expr) \
  RowInfo{OpKind::op, DType::out, Signature::sig, arity, a0, a1, #name, #expr},
constexpr RowInfo kRows[] = {LAZYSCOPE_FUSED_ROWS(LAZYSCOPE_FUSED_INFO)};
#undef LAZYSCOPE_FUSED_INFO

bool signature_holds(Signature sig, DType out, std::span<const DType> in) {
  const auto all = [&](DType d) { return std::all_of(in.begin(), in.end(), [d](DType x) { return x == d; }); };
  switch (sig) {
    case Signature::kFloat: return all(DType::kFloat32);
    case Signature::kCompare: return all(DType::kFloat32) || all(DType::kBool);
    case Signature::kLogical: return all(DType::kBool);
    case Signature::kWhere: return in.size() == 3 && in[0] == DType::kBool && in[1] == out && in[2] == out;
    case Signature::kCast: return in.size() == 1 && (in[0] == DType::kFloat32 || in[0] == DType::kBool);
  }
  return false;
}

struct Isa {
  const TileFn* functions;
  SoftmaxRowsFn softmax;
  SoftmaxColumnsFn softmax_columns;
  LogsumexpRowsFn logsumexp;
  const char* name;
};

const Isa& isa() {
  static const Isa chosen = [] {
    __builtin_cpu_init();
    const std::string limit = settings::cpu_isa_limit();
    if (!limit.empty() && limit != "avx512f" && limit != "avx2" && limit != "x86-64") {
      throw EngineError("LAZYSCOPE_CPU_ISA: unknown instruction set '" + limit +
                        "' (expected avx512f, avx2 or x86-64)");
    }
    const bool allow512 = limit.empty() || limit == "avx512f";
    const bool allow2 = allow512 || limit == "avx2";
    if (allow512 && __builtin_cpu_supports("avx512f"))
      return Isa{tile_functions_avx512(), softmax_rows_avx512(), softmax_columns_avx512(), logsumexp_rows_avx512(),
                 "avx512f"};
    if (allow2 && __builtin_cpu_supports("avx2")) {
      return Isa{tile_functions_avx2(), softmax_rows_avx2(), softmax_columns_avx2(), logsumexp_rows_avx2(), "avx2"};
    }
    return Isa{tile_functions_scalar(), softmax_rows_scalar(), softmax_columns_scalar(), logsumexp_rows_scalar(),
               "x86-64"};
  }();
  return chosen;
}

}  // namespace

int fused_row(OpKind op, DType out, std::span<const DType> operands) {
  for (size_t r = 0; r < std::size(kRows); ++r) {
    const RowInfo& row = kRows[r];
    if (row.op == op && row.out == out && static_cast<size_t>(row.arity) == operands.size() &&
        signature_holds(row.signature, out, operands)) {
      return static_cast<int>(r);
    }
  }
  return -1;
}

const char* fused_isa() { return isa().name; }

std::string FusedKernel::code() const {
  return std::string(isa().name) + (compiled_.load(std::memory_order_acquire) ? " compiled" : " tiles");
}

bool FusedKernel::compiling() const {
  // Done and compiled but not adopted yet counts: it switches next execution.
  return pending_ && !compiled_.load(std::memory_order_acquire) &&
         (!pending_->done.load(std::memory_order_acquire) || pending_->fn.load(std::memory_order_acquire));
}

bool FusedKernel::adopt() const {
  if (!pending_ || compiled_.load(std::memory_order_relaxed)) return false;
  if (!pending_->done.load(std::memory_order_acquire)) {
    resume_kernel_compiles();  // in a forked child
    return true;
  }
  if (CompiledKernelFn fn = pending_->fn.load(std::memory_order_acquire)) {
    compiled_.store(fn, std::memory_order_release);
    static metrics::Counter* switches = metrics::counter("FusionJitSwitches");
    switches->add(1);
  }
  return false;
}

SoftmaxRowsFn softmax_rows() { return isa().softmax; }
SoftmaxColumnsFn softmax_columns() { return isa().softmax_columns; }
LogsumexpRowsFn logsumexp_rows() { return isa().logsumexp; }

bool run_as_row(OpKind op, const KernelArgs& k) {
  if (k.out.dtype() != DType::kFloat32 || k.inputs.empty() || k.inputs.size() > 3) return false;
  DType dtypes[3];
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    if (k.inputs[i]->dtype() != DType::kFloat32 || k.inputs[i]->shape() != k.out.shape()) return false;
    dtypes[i] = DType::kFloat32;
  }
  const int row = fused_row(op, DType::kFloat32, std::span<const DType>(dtypes, k.inputs.size()));
  if (row < 0) return false;
  const RowInfo& info = kRows[row];
  const double p0 = info.p0 ? k.attrs.get_double(info.p0) : 0.0, p1 = info.p1 ? k.attrs.get_double(info.p1) : 0.0;
  const TileFn fn = isa().functions[row];
  float* out = k.out.as<float>();
  const float* in[3] = {k.inputs[0]->as<float>(), nullptr, nullptr};
  for (size_t i = 1; i < 3; ++i) in[i] = i < k.inputs.size() ? k.inputs[i]->as<float>() : in[0];
  parallel_for(k.out.numel(), 4 * FusedKernel::kTile, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; t += FusedKernel::kTile) {
      const float* args[3] = {in[0] + t, in[1] + t, in[2] + t};
      fn(out + t, args, std::min(FusedKernel::kTile, end - t), p0, p1);
    }
  });
  return true;
}

FusedKernel::FusedKernel(Shape shape, std::vector<Input> inputs, std::vector<Step> steps, std::vector<int> output_steps,
                         std::vector<DType> output_dtypes)
    : shape_(std::move(shape)),
      numel_(numel(shape_)),
      inputs_(std::move(inputs)),
      steps_(std::move(steps)),
      output_dtypes_(std::move(output_dtypes)) {
  (void)output_steps;
  const size_t rank = shape_.size();
  for (const Input& in : inputs_) {
    InputPlan p{in.dtype == DType::kFloat32 && in.shape == shape_, numel(in.shape) == 1, {}, {}, -1};
    p.strides.assign(rank, 0);
    const auto own = contiguous_strides(in.shape);
    const size_t lead = rank - in.shape.size();
    for (size_t d = 0; d < in.shape.size(); ++d) p.strides[lead + d] = in.shape[d] == 1 ? 0 : own[d];
    // Merge adjacent dims the input walks alike (both broadcast, or one
    // contiguous run), so a bias [C, 1, 1] over [N, C, H, W] reads runs of
    // H*W equal values rather than stepping an odometer per element.
    std::vector<int64_t> merged_strides;
    for (size_t d = 0; d < rank; ++d) {
      if (shape_[d] == 1) continue;
      if (!p.dims.empty() && p.strides[d] * shape_[d] == merged_strides.back()) {
        p.dims.back() *= shape_[d];
        merged_strides.back() = p.strides[d];
        continue;
      }
      p.dims.push_back(shape_[d]);
      merged_strides.push_back(p.strides[d]);
    }
    if (p.dims.empty()) {
      p.dims = {1};
      merged_strides = {0};
    }
    p.strides = std::move(merged_strides);
    if (!p.contiguous_float) p.reg = registers_++;
    plans_.push_back(std::move(p));
  }
  // 16 MiB per output and up: half of a server's last-level cache (32 MiB
  // on the machine of benchmarks/README.md), which a value that large
  // would mostly leave before its reader runs. Smaller outputs stay in
  // cache for the next kernel.
  stream_ = numel_ >= (int64_t{1} << 22);
  // Registers of the steps: a float32 output is computed in place in its
  // buffer (unless streamed); anything else takes a register, freed after
  // its last reader.
  const size_t ni = inputs_.size();
  std::vector<int> last_use(steps_.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const int arity = kRows[steps_[s].row].arity;
    for (int a = 0; a < arity; ++a) {
      const int v = steps_[s].args[a];
      if (v >= static_cast<int>(ni)) last_use[static_cast<size_t>(v) - ni] = static_cast<int>(s);
    }
  }
  std::vector<int> free_regs;
  std::vector<std::vector<int>> release(steps_.size());
  step_reg_.assign(steps_.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    if (stream_ || !(st.output >= 0 && output_dtypes_[static_cast<size_t>(st.output)] == DType::kFloat32)) {
      int r;
      if (free_regs.empty()) {
        r = registers_++;
      } else {
        r = free_regs.back();
        free_regs.pop_back();
      }
      step_reg_[s] = r;
      if (last_use[s] >= 0)
        release[static_cast<size_t>(last_use[s])].push_back(r);
      else
        free_regs.push_back(r);  // never read: free once written (after this step)
    }
    for (int r : release[s]) free_regs.push_back(r);
  }
  alias_reg_ = registers_++;
  // A register step's register is never one of its operands': it is taken
  // before the registers of operands read last here are given back (after
  // the step), and an input's register is its own.
  runs_.reserve(steps_.size());
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    StepRun run{st.row, {st.args[0], st.args[1], st.args[2]}, -1, st.p0, st.p1, false};
    for (int& a : run.args) a = a >= 0 ? a : st.args[0];
    if (step_reg_[s] >= 0) run.reg_offset = int64_t{step_reg_[s]} * kTile;
    run.plain = step_reg_[s] >= 0 && st.output < 0;
    runs_.push_back(run);
  }
  // Long chains over many elements are compiled to one loop that keeps
  // every step in registers (the interpreter's L1 round trip per op per
  // element is most of its time there; see ARCHITECTURE.md). Inputs read
  // in place or scalars only: broadcasts keep the interpreter's read plans.
  const bool simple_inputs = std::all_of(inputs_.begin(), inputs_.end(),
                                         [&](const Input& in) { return read_kind(in) != Read::kOther; });
  for (size_t j = 0; j < inputs_.size(); ++j) {
    for (size_t o = 0; o < output_dtypes_.size(); ++o) writes_over_input_ |= can_write_over_input(j, o);
  }
  if (settings::fusion_jit() && !settings::bf16_mode() && steps_.size() >= 2 &&
      numel_ >= settings::fusion_jit_min_elements() && simple_inputs) {
    // A cache hit (or a synchronous compile) is used from the first
    // execution; otherwise the owner adopt()s the code when it is ready.
    std::shared_ptr<const PendingKernel> p = request_kernel(compiled_source());
    if (p->done.load(std::memory_order_acquire)) {
      compiled_.store(p->fn.load(std::memory_order_acquire), std::memory_order_release);
    } else {
      pending_ = std::move(p);
    }
  }
}

namespace {

// A double as a C++ literal that reads back to the same value.
std::string double_literal(double v) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
  char text[64];
  std::snprintf(text, sizeof(text), "%a", v);
  return std::string(text);
}

}  // namespace

// How a kernel compiled at run time reads an input: an element per element,
// one value for all, a value per row (a layer norm's mean [..., 1] over
// its rows [..., C]), or a block of trailing dims repeated over the leading
// ones (a layer norm's weight [C], an attention's mask [S, S] over [B, H,
// S, S]), C the kernel's last dim. Any other broadcast keeps the
// interpreter.
FusedKernel::Read FusedKernel::read_kind(const Input& in) const {
  if (numel(in.shape) == 1) return Read::kScalar;
  if (in.shape == shape_) return Read::kElement;
  const size_t rank = shape_.size();
  if (in.shape.size() > rank || rank == 0) return Read::kOther;
  const size_t lead = rank - in.shape.size();
  bool row = lead == 0 && in.shape.back() == 1;
  for (size_t d = 0; row && d + 1 < in.shape.size(); ++d) row = in.shape[d] == shape_[d];
  if (row) return Read::kRow;
  size_t first = 0;  // the input's first dim past its leading 1s
  while (first < in.shape.size() && in.shape[first] == 1) ++first;
  return std::equal(in.shape.begin() + static_cast<std::ptrdiff_t>(first), in.shape.end(),
                    shape_.begin() + static_cast<std::ptrdiff_t>(lead + first))
             ? Read::kTrailing
             : Read::kOther;
}

std::string FusedKernel::compiled_source() const {
  // The rows' own expressions, one inline function per row used, called
  // once per element per step in one loop: GCC keeps the values in vector
  // registers and vectorises the loop at the #pragma's width (the same
  // instruction set as the tile functions, LAZYSCOPE_CPU_ISA included).
  const Isa& set = isa();
  std::ostringstream src, loads, body, after;
  src << "// A LazyScope fused elementwise kernel (engine/backend/cpu/fusion.cpp: compiled_source).\n"
      << "#include <math.h>\n#include <stdint.h>\n";
  if (std::string_view(set.name) != "x86-64") src << "#pragma GCC target(\"" << set.name << "\")\n";
#define LAZYSCOPE_TEXT(...) #__VA_ARGS__
#define LAZYSCOPE_EXPANDED_TEXT(...) LAZYSCOPE_TEXT(__VA_ARGS__)
  src << LAZYSCOPE_EXPANDED_TEXT(LAZYSCOPE_SIMD_MATH) << "\nnamespace {\n";
#undef LAZYSCOPE_EXPANDED_TEXT
#undef LAZYSCOPE_TEXT
  std::vector<bool> emitted(std::size(kRows), false);
  for (const Step& st : steps_) {
    if (emitted[static_cast<size_t>(st.row)]) continue;
    emitted[static_cast<size_t>(st.row)] = true;
    const RowInfo& row = kRows[st.row];
    src << "inline float row_" << row.name << "(float x, float y, float z, double p0, double p1) {\n"
        << "  (void)x, (void)y, (void)z, (void)p0, (void)p1;\n  return (" << row.expr << ");\n}\n";
  }
  src << "}  // namespace\n"
      << "extern \"C\" void lazyscope_fused(const void* const* in, void* const* out, int64_t begin, int64_t end,\n"
      << "                                void (*stream)(float*, const float*, int64_t)) {\n";
  // A kernel that may write an output over an input (buffer donation)
  // computes its float32 outputs into blocks in L1, copied out after the
  // block's reads, and promises the compiler nothing about aliasing.
  const char* restrict = writes_over_input_ ? "" : " __restrict";
  const size_t ni = inputs_.size();
  // With inputs read per row or per column, each block is a run of one
  // row: its row values are read once, its columns from c0.
  std::ostringstream row_loads;
  bool by_rows = false;
  for (size_t j = 0; j < ni; ++j) {
    const bool is_float = inputs_[j].dtype == DType::kFloat32;
    const char* type = is_float ? "float" : "bool";
    const char* as_float = is_float ? "" : " ? 1.0f : 0.0f";
    const Read read = read_kind(inputs_[j]);
    if (read == Read::kScalar) {
      src << "  const float v" << j << " = static_cast<const " << type << "*>(in[" << j << "])[0]" << as_float << ";\n";
      continue;
    }
    src << "  const " << type << "*" << restrict << " a" << j << " = static_cast<const " << type << "*>(in[" << j
        << "]);\n";
    if (read == Read::kRow) {
      row_loads << "    const float v" << j << " = a" << j << "[r]" << as_float << ";\n";
      by_rows = true;
    } else if (read == Read::kTrailing) {
      // The block's row r % rows (its rows repeat over the leading dims).
      const int64_t rows = numel(inputs_[j].shape) / shape_.back();
      row_loads << "    const " << type << "* p" << j << " = a" << j;
      if (rows > 1) row_loads << " + (r % " << rows << ") * " << shape_.back();
      row_loads << ";\n";
      loads << "      const float v" << j << " = p" << j << "[c0 + (e - b)]" << as_float << ";\n";
      by_rows = true;
    } else {
      loads << "      const float v" << j << " = a" << j << "[e]" << as_float << ";\n";
    }
  }
  for (size_t o = 0; o < output_dtypes_.size(); ++o) {
    const char* type = output_dtypes_[o] == DType::kFloat32 ? "float" : "bool";
    src << "  " << type << "*" << restrict << " o" << o << " = static_cast<" << type << "*>(out[" << o << "]);\n";
  }
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    const auto arg = [&](int a) { return st.args[a] >= 0 ? st.args[a] : st.args[0]; };
    const size_t v = ni + s;
    body << "      const float v" << v << " = row_" << kRows[st.row].name << "(v" << arg(0) << ", v" << arg(1) << ", v"
         << arg(2) << ", " << double_literal(st.p0) << ", " << double_literal(st.p1) << ");\n";
    if (st.output < 0) continue;
    const int o = st.output;
    if (output_dtypes_[static_cast<size_t>(o)] == DType::kBool) {
      body << "      o" << o << "[e] = v" << v << " != 0.0f;\n";
    } else if (stream_ || writes_over_input_) {
      // Computed into a block in L1, then streamed (no read-for-ownership)
      // or copied.
      src << "  alignas(64) float t" << o << "[" << kTile << "];\n";
      body << "      t" << o << "[e - b] = v" << v << ";\n";
      if (stream_) {
        after << "    stream(o" << o << " + b, t" << o << ", n);\n";
      } else {
        after << "    __builtin_memcpy(o" << o << " + b, t" << o << ", static_cast<unsigned long>(n) * 4);\n";
      }
    } else {
      body << "      o" << o << "[e] = v" << v << ";\n";
    }
  }
  if (!by_rows) {
    src << "  for (int64_t b = begin; b < end; b += " << kTile << ") {\n"
        << "    const int64_t n = end - b < " << kTile << " ? end - b : " << kTile << ";\n"
        << "    for (int64_t e = b; e < b + n; ++e) {\n"
        << loads.str() << body.str() << "    }\n"
        << after.str() << "  }\n}\n";
    return src.str();
  }
  const int64_t cols = shape_.back();
  src << "  for (int64_t b = begin; b < end;) {\n"
      << "    const int64_t r = b / " << cols << ", c0 = b - r * " << cols << ";\n"
      << "    int64_t n = " << cols << " - c0 < " << kTile << " ? " << cols << " - c0 : " << kTile << ";\n"
      << "    n = end - b < n ? end - b : n;\n"
      << row_loads.str() << "    (void)r, (void)c0;\n"
      << "    for (int64_t e = b; e < b + n; ++e) {\n"
      << loads.str() << body.str() << "    }\n"
      << after.str() << "    b += n;\n  }\n}\n";
  return src.str();
}

bool FusedKernel::can_write_over_input(size_t input, size_t output) const {
  if (input >= plans_.size() || !plans_[input].contiguous_float || output >= output_dtypes_.size() ||
      output_dtypes_[output] != DType::kFloat32) {
    return false;
  }
  int writer = -1;
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (steps_[s].output == static_cast<int>(output)) writer = static_cast<int>(s);
  }
  if (writer < 0) return false;
  for (size_t s = static_cast<size_t>(writer) + 1; s < steps_.size(); ++s) {
    const int arity = kRows[steps_[s].row].arity;
    for (int a = 0; a < arity; ++a) {
      if (steps_[s].args[a] == static_cast<int>(input)) return false;
    }
  }
  return true;
}

void FusedKernel::run(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs, bool bf16) const {
  // A grain of a few tiles: smaller chains are not worth a wake-up.
  parallel_for(numel_, 4 * kTile, [&](int64_t begin, int64_t end) { run_range(inputs, outputs, bf16, begin, end); });
}

void FusedKernel::run_range(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs, bool bf16,
                            int64_t begin, int64_t end) const {
  const TileFn* functions = isa().functions;
  const CompiledKernelFn compiled = compiled_.load(std::memory_order_acquire);
  RunScratch& thread_scratch = run_scratch();
  if (compiled && !bf16) {
    std::vector<const void*>& in_data = thread_scratch.in_data;
    std::vector<void*>& out_data = thread_scratch.out_data;
    in_data.clear();
    out_data.clear();
    for (const Buffer* b : inputs) in_data.push_back(b->data());
    // An output over an input (a donated buffer) is only safe where the
    // source planned for it (writes_over_input_: written from a block in
    // L1 after the block's reads); any other overlap takes the interpreter.
    bool planned = true;
    for (size_t o = 0; o < outputs.size(); ++o) {
      out_data.push_back(outputs[o]->data());
      planned = planned &&
                (writes_over_input_ || std::find(in_data.begin(), in_data.end(), out_data.back()) == in_data.end());
    }
    if (planned) {
      static metrics::Counter* runs = metrics::counter("FusionJitRuns");
      runs->add(1);
      compiled(in_data.data(), out_data.data(), begin, end, stream_copy);
      if (stream_) _mm_sfence();
      return;
    }
  }
  const size_t rank = shape_.size();
  const size_t ni = inputs_.size();
  {
    // Per thread, kept: a cached step allocates nothing once warm.
    std::vector<float>& scratch = thread_scratch.scratch;
    std::vector<const float*>& value = thread_scratch.value;
    std::vector<int64_t>& index = thread_scratch.index;
    const size_t need = static_cast<size_t>(registers_) * kTile;
    if (scratch.size() < need) scratch.resize(need);
    // Every value is written before it is read (inputs, then each step in
    // order): no clearing (a memset of 8 KB per execution of a 1,000-step
    // chain).
    if (value.size() < ni + steps_.size()) value.resize(ni + steps_.size());
    index.resize(std::max<size_t>(rank, 1));
    for (int64_t t = begin; t < end; t += kTile) {
      const int64_t len = std::min(kTile, end - t);
      for (size_t j = 0; j < ni; ++j) {
        const InputPlan& p = plans_[j];
        const Buffer& in = *inputs[j];
        if (p.contiguous_float) {
          value[j] = in.as<float>() + t;
          continue;
        }
        float* dst = scratch.data() + static_cast<size_t>(p.reg) * kTile;
        const auto load = [&](int64_t offset) {
          return inputs_[j].dtype == DType::kFloat32 ? in.as<float>()[offset] : (in.as<bool>()[offset] ? 1.0f : 0.0f);
        };
        if (p.scalar) {
          // Its register is its own for the whole call: filled once, not per
          // tile (an optimizer update reads several scalars per element).
          if (t == begin) std::fill(dst, dst + kTile, load(0));
        } else if (inputs_[j].shape == shape_) {
          for (int64_t i = 0; i < len; ++i) dst[i] = load(t + i);
        } else {
          // Broadcast: an odometer over the merged dims from t, a run of the
          // innermost dim at a time (a fill where it is broadcast).
          const Shape& dims = p.dims;
          const size_t r = dims.size();
          int64_t rest = t, offset = 0;
          for (size_t d = r; d-- > 0;) {
            index[d] = rest % dims[d];
            rest /= dims[d];
            offset += index[d] * p.strides[d];
          }
          const int64_t inner_stride = p.strides[r - 1];
          for (int64_t i = 0; i < len;) {
            const int64_t run = std::min(len - i, dims[r - 1] - index[r - 1]);
            if (inner_stride == 0) {
              std::fill(dst + i, dst + i + run, load(offset));
            } else if (inner_stride == 1 && inputs_[j].dtype == DType::kFloat32) {
              // A run of a float input (a layer norm's weight over its rows):
              // one copy, not a load per element through the dtype check.
              std::copy_n(in.as<float>() + offset, run, dst + i);
            } else {
              for (int64_t e = 0; e < run; ++e) dst[i + e] = load(offset + e * inner_stride);
            }
            i += run;
            index[r - 1] += run;
            offset += run * inner_stride;
            for (size_t d = r; d-- > 0 && index[d] == dims[d];) {
              offset -= dims[d] * p.strides[d];
              index[d] = 0;
              if (d == 0) break;
              ++index[d - 1];
              offset += p.strides[d - 1];
            }
          }
        }
        value[j] = dst;
      }
      float* const registers = scratch.data();
      const float** const values = value.data();
      const StepRun* const first = runs_.data();
      const size_t count = runs_.size();  // not re-read after each call through a pointer
      for (size_t s = 0; s < count; ++s) {
        const StepRun& run = first[s];
        const float* args[3] = {values[run.args[0]], values[run.args[1]], values[run.args[2]]};
        if (run.plain && !bf16) {
          float* const o = registers + run.reg_offset;
          functions[run.row](o, args, len, run.p0, run.p1);
          values[ni + s] = o;
          continue;
        }
        const Step& st = steps_[s];
        float* o = run.reg_offset >= 0 ? registers + run.reg_offset
                                       : outputs[static_cast<size_t>(st.output)]->as<float>() + t;
        // An output written over its own operand (a donated parameter: w' =
        // w - lr * v') goes through a scratch tile: the tile functions take
        // __restrict pointers.
        float* const direct = o;
        if (o == args[0] || o == args[1] || o == args[2]) o = scratch.data() + static_cast<size_t>(alias_reg_) * kTile;
        functions[st.row](o, args, len, st.p0, st.p1);
        if (bf16 && kRows[st.row].out == DType::kFloat32) {
          for (int64_t i = 0; i < len; ++i) o[i] = bfloat16_to_float(float_to_bfloat16(o[i]));
        }
        if (o != direct) o = std::copy(o, o + len, direct) - len;
        if (st.output >= 0 && step_reg_[s] >= 0) {
          Buffer& out = *outputs[static_cast<size_t>(st.output)];
          if (out.dtype() == DType::kBool) {
            bool* b = out.as<bool>() + t;
            for (int64_t i = 0; i < len; ++i) b[i] = o[i] != 0.0f;
          } else {
            if (stream_) {
              stream_copy(out.as<float>() + t, o, len);
            } else {
              std::copy(o, o + len, out.as<float>() + t);
            }
          }
        }
        values[ni + s] = o;
      }
    }
  }
  // Non-temporal stores are weakly ordered: make them visible before the
  // region's join publishes the result to other threads.
  if (stream_) _mm_sfence();
}

}  // namespace lazyscope::cpu
