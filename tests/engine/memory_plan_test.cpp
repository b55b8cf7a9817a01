// The CPU backend's memory plan, checked from the outside: the plan of each
// compiled program (cpu::plan_layout) is taken apart here and its invariant
// worked out again from the program's reads and writes alone — no two
// values whose lifetimes meet share a byte, unless one is a view of the
// other or is written in place over it at its last read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "executor/graph_executor.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"
#include "test_util.h"

namespace lazyscope {
namespace {

using testing::lazy0;
using testing::make;
using testing::values;

TEST(BufferView, KeepsItsOwnerAliveAndStaysInsideIt) {
  metrics::Counter* live = metrics::counter("LiveBuffers");
  const int64_t before = live->value();
  BufferPtr block = Buffer::allocate(DType::kFloat32, {4, 8});
  for (int i = 0; i < 32; ++i) block->as<float>()[i] = static_cast<float>(i);
  // Rows 2..3 as [16], then a view of that view as [2, 8].
  BufferPtr rows = Buffer::view(block, 2 * 8 * sizeof(float), DType::kFloat32, {16});
  BufferPtr again = Buffer::view(rows, 0, DType::kFloat32, {2, 8});
  EXPECT_EQ(rows->as<float>()[0], 16.f);
  EXPECT_EQ(again->as<float>()[15], 31.f);
  EXPECT_EQ(again->shape(), (Shape{2, 8}));
  EXPECT_EQ(again->base(), block) << "a view of a view holds the owner, not the view";
  EXPECT_EQ(live->value(), before + 1) << "views own no memory: only the block counts";
  Buffer* owner = block.get();
  block.reset();
  rows.reset();
  // The view alone keeps the memory: still readable, still the same bytes.
  EXPECT_EQ(again->base().get(), owner);
  EXPECT_EQ(again->as<float>()[0], 16.f);
  EXPECT_EQ(live->value(), before + 1);
  again.reset();
  EXPECT_EQ(live->value(), before) << "the block is freed with its last view";
  // Past the end, or no base: refused, naming the sizes.
  BufferPtr small = Buffer::allocate(DType::kFloat32, {4});
  try {
    Buffer::view(small, 8, DType::kFloat32, {3});
    ADD_FAILURE() << "a view past the end was made";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("past its end"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("16-byte buffer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Buffer::view(nullptr, 0, DType::kFloat32, {1}), EngineError);
}

// Compiles through the CPU backend, keeping each program's plan.
class PlanCapture final : public Backend {
 public:
  explicit PlanCapture(Backend& cpu) : cpu_(cpu) {}
  std::string_view name() const override { return cpu_.name(); }
  bool lowers(OpKind op, DType dtype) const override { return cpu_.lowers(op, dtype); }
  std::unique_ptr<Executable> compile(const GraphView& graph) override {
    std::unique_ptr<Executable> exe = cpu_.compile(graph);
    std::optional<cpu::PlanLayout> layout = cpu::plan_layout(*exe);
    EXPECT_TRUE(layout.has_value()) << "not a CPU program";
    if (layout) layouts.push_back(std::move(*layout));
    return exe;
  }
  std::vector<cpu::PlanLayout> layouts;

 private:
  Backend& cpu_;
};

class MemoryPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    executor::mark_step(lazy0());
    set_default_backend(&capture_);
  }
  void TearDown() override { set_default_backend(nullptr); }
  PlanCapture capture_{default_backend()};
};

// Where a value's bytes come from: through views to the value they lay out.
int bytes_root(const cpu::PlanLayout& p, int slot) {
  while (p.values[static_cast<size_t>(slot)].view_of >= 0) slot = p.values[static_cast<size_t>(slot)].view_of;
  return slot;
}

struct Lifetime {
  int first = -1, last = -1;  // the instruction writing the value, the last one reading its bytes
};

// From the reads and writes alone: a value is live from its writer to the
// last instruction reading it or any view of it.
std::vector<Lifetime> lifetimes(const cpu::PlanLayout& p) {
  std::vector<Lifetime> life(p.values.size());
  for (size_t i = 0; i < p.writes.size(); ++i) {
    for (int w : p.writes[i]) life[static_cast<size_t>(w)].first = static_cast<int>(i);
    for (int r : p.reads[i]) {
      Lifetime& l = life[static_cast<size_t>(bytes_root(p, r))];
      l.last = std::max(l.last, static_cast<int>(i));
    }
  }
  for (Lifetime& l : life) l.last = std::max(l.last, l.first);
  return life;
}

// The plan's invariant, checked pair by pair; returns how many pairs of
// arena values of different shapes (bytes) share memory, to show reuse.
int expect_no_live_values_overlap(const cpu::PlanLayout& p) {
  const std::vector<Lifetime> life = lifetimes(p);
  std::vector<int> arena;  // values with bytes of their own in the arena
  for (size_t s = 0; s < p.values.size(); ++s) {
    const cpu::PlanLayout::Value& v = p.values[s];
    if (v.offset < 0) continue;
    EXPECT_GE(life[s].first, 0) << "%" << s << " is placed but never written";
    EXPECT_LE(v.offset + v.bytes, p.arena_bytes) << "%" << s << " ends past the arena";
    if (v.view_of >= 0) {
      // A view is some of its root's bytes.
      const cpu::PlanLayout::Value& root = p.values[static_cast<size_t>(bytes_root(p, static_cast<int>(s)))];
      EXPECT_GE(v.offset, root.offset) << "view %" << s;
      EXPECT_LE(v.offset + v.bytes, root.offset + root.bytes) << "view %" << s;
      continue;
    }
    if (v.over >= 0) {
      // Written in place: at the operand's place (the bytes of the value it
      // views, if a view), by the last reader of those bytes.
      const auto over = static_cast<size_t>(bytes_root(p, v.over));
      EXPECT_EQ(v.offset, p.values[over].offset) << "%" << s << " over %" << v.over;
      EXPECT_EQ(v.bytes, p.values[over].bytes) << "%" << s << " over %" << v.over;
      EXPECT_EQ(life[over].last, life[s].first)
          << "%" << s << " is written over %" << v.over << " before its last read";
    }
    arena.push_back(static_cast<int>(s));
  }
  // In-place chains share bytes by design: the start of each value's chain.
  const auto chain = [&](int s) {
    while (p.values[static_cast<size_t>(s)].over >= 0) s = bytes_root(p, p.values[static_cast<size_t>(s)].over);
    return s;
  };
  int shared_across_shapes = 0;
  for (size_t a = 0; a < arena.size(); ++a) {
    for (size_t b = a + 1; b < arena.size(); ++b) {
      const auto x = static_cast<size_t>(arena[a]), y = static_cast<size_t>(arena[b]);
      const cpu::PlanLayout::Value &vx = p.values[x], &vy = p.values[y];
      const bool bytes_meet = vx.bytes > 0 && vy.bytes > 0 && vx.offset < vy.offset + vy.bytes &&
                              vy.offset < vx.offset + vx.bytes;
      if (!bytes_meet) continue;
      if (vx.bytes != vy.bytes) ++shared_across_shapes;
      const bool lives_meet = life[x].first <= life[y].last && life[y].first <= life[x].last;
      if (lives_meet && chain(arena[a]) != chain(arena[b])) {
        ADD_FAILURE() << "%" << x << " [" << life[x].first << ", " << life[x].last << "] at " << vx.offset << "+"
                      << vx.bytes << " and %" << y << " [" << life[y].first << ", " << life[y].last << "] at "
                      << vy.offset << "+" << vy.bytes << " are live together in the same bytes";
      }
    }
  }
  return shared_across_shapes;
}

int64_t value_bytes(const cpu::PlanLayout& p) {
  int64_t sum = 0;
  for (const cpu::PlanLayout::Value& v : p.values) {
    if (v.offset >= 0 && v.view_of < 0) sum += v.bytes;
  }
  return sum;
}

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>((i * 7) % 11 - 5);
  return v;
}

// out[r][c] = sum over k of a[r][k] b[k][c], then the running sum down each column.
std::vector<double> matmul_cumsum(const std::vector<double>& a, const std::vector<float>& b, int64_t rows, int64_t k,
                                  int64_t cols) {
  std::vector<double> out(static_cast<size_t>(rows * cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      double acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += a[static_cast<size_t>(r * k + i)] * b[static_cast<size_t>(i * cols + c)];
      out[static_cast<size_t>(r * cols + c)] = acc + (r ? out[static_cast<size_t>((r - 1) * cols + c)] : 0.0);
    }
  }
  return out;
}

TEST_F(MemoryPlanTest, ValuesOfDifferentShapesWithDisjointLifetimesShareTheArena) {
  // A chain of [32, 64] -> [32, 16] -> [32, 48] values, each dead once the
  // next product has read it: the old planner (a buffer per dtype and
  // shape) needed the sum of them all.
  const std::vector<float> x = ramp(32 * 32, 0.01f), w1 = ramp(32 * 64, 0.02f), w2 = ramp(64 * 16, 0.03f),
                           w3 = ramp(16 * 48, 0.05f);
  const Tensor a = ops::cumsum(ops::matmul(make(x, {32, 32}, lazy0()), make(w1, {32, 64}, lazy0())), 0);
  const Tensor b = ops::cumsum(ops::matmul(a, make(w2, {64, 16}, lazy0())), 0);
  const Tensor c = ops::cumsum(ops::matmul(b, make(w3, {16, 48}, lazy0())), 0);
  const Tensor total = ops::sum(c);
  executor::mark_step(lazy0());
  // The oracle, in double.
  std::vector<double> v(x.begin(), x.end());
  v = matmul_cumsum(v, w1, 32, 32, 64);
  v = matmul_cumsum(v, w2, 32, 64, 16);
  v = matmul_cumsum(v, w3, 32, 16, 48);
  const double want = std::accumulate(v.begin(), v.end(), 0.0);
  EXPECT_NEAR(values(total)[0], want, 1e-4 * std::abs(want));

  ASSERT_EQ(capture_.layouts.size(), 1u);
  const cpu::PlanLayout& plan = capture_.layouts[0];
  EXPECT_GT(expect_no_live_values_overlap(plan), 0) << "no values of different shapes share bytes";
  EXPECT_LT(plan.arena_bytes, value_bytes(plan));
  // The two largest values live at once ([32, 64] product and its cumsum)
  // are all the arena needs.
  EXPECT_LE(plan.arena_bytes, 2 * 32 * 64 * 4);
}

TEST_F(MemoryPlanTest, NoTwoLiveValuesOfATrainingStepShareBytes) {
  // Two linear layers on a batch reshaped from [16, 4, 5] (a view of a
  // parameter), a reshape round trip of the hidden layer and a slice of its
  // last 8 rows (views of arena values), cross-entropy, backward, SGD with
  // momentum; three steps.
  const std::vector<float> xs = ramp(16 * 20, 0.1f);
  Tensor w1 = make(ramp(20 * 32, 0.05f), {20, 32}, lazy0()), w2 = make(ramp(32 * 4, 0.07f), {32, 4}, lazy0());
  Tensor v1 = make(std::vector<float>(20 * 32, 0.f), {20, 32}, lazy0());
  Tensor v2 = make(std::vector<float>(32 * 4, 0.f), {32, 4}, lazy0());
  BufferPtr labels = Buffer::allocate(DType::kInt64, {16});
  for (int64_t i = 0; i < 16; ++i) labels->as<int64_t>()[i] = i % 4;
  const Tensor target = Tensor::wrap(labels, Device{}).to(lazy0());
  const Tensor lr = ops::wrapped_float(0.1, lazy0()), momentum = ops::wrapped_float(0.9, lazy0());
  executor::mark_step(lazy0());
  for (int step = 0; step < 3; ++step) {
    w1.set_requires_grad(true);
    w2.set_requires_grad(true);
    // Only the loss outlives the forward: the rest are the program's own
    // values, not outputs.
    const Tensor loss = [&] {
      const Tensor x = ops::reshape(make(xs, {16, 4, 5}, lazy0()), {16, 20});
      const Tensor h = ops::relu(ops::matmul(x, w1));
      const Tensor round_trip = ops::flatten(ops::reshape(h, {16, 4, 8}), 1);
      const Tensor rows = ops::narrow(h, 0, 8, 8);  // from byte 8 * 32 * 4
      return ops::add(ops::cross_entropy(ops::matmul(round_trip, w2), target),
                      ops::mul(ops::sum(ops::mul(rows, rows)), ops::wrapped_float(1e-3, lazy0())));
    }();
    loss.backward();
    v1 = ops::add(ops::mul(v1, momentum), w1.grad());
    v2 = ops::add(ops::mul(v2, momentum), w2.grad());
    w1 = ops::sub(w1.detach(), ops::mul(v1, lr));
    w2 = ops::sub(w2.detach(), ops::mul(v2, lr));
    executor::mark_step(lazy0());
    EXPECT_TRUE(std::isfinite(values(loss)[0]));
  }
  ASSERT_FALSE(capture_.layouts.empty());
  bool views = false, in_place = false, inside = false;
  for (const cpu::PlanLayout& plan : capture_.layouts) {
    SCOPED_TRACE("program of " + std::to_string(plan.values.size()) + " values");
    expect_no_live_values_overlap(plan);
    EXPECT_LT(plan.arena_bytes, value_bytes(plan));
    for (const cpu::PlanLayout::Value& v : plan.values) {
      views = views || (v.view_of >= 0 && v.offset >= 0);
      inside = inside || (v.view_of >= 0 && plan.values[static_cast<size_t>(v.view_of)].offset >= 0 &&
                          v.offset > plan.values[static_cast<size_t>(v.view_of)].offset);
      in_place = in_place || v.over >= 0;
    }
  }
  EXPECT_TRUE(views) << "no reshape of an arena value became a view";
  EXPECT_TRUE(in_place) << "no value was written in place";
  EXPECT_TRUE(inside) << "no slice of an arena value became a view inside it";
}

}  // namespace
}  // namespace lazyscope
