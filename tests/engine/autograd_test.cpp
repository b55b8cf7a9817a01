// Autograd internals: sum_to_size, the graph a call records, the order and
// accumulation of a backward pass, released graphs, grad mode, and a lazy
// backward being traced into the step's graph. Values are checked against
// derivatives worked out by hand in the test.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/autograd.h"
#include "core/error.h"
#include "executor/graph_executor.h"
#include "tensor/ops.h"
#include "test_util.h"

namespace lazyscope {
namespace {

using testing::make;
using testing::values;

Tensor leaf(const std::vector<float>& v, Shape shape, Device device) {
  Tensor t = make(v, std::move(shape), device);
  t.set_requires_grad(true);
  return t;
}

TEST(OpsSumToSize, SumsLeadingAndBroadcastDims) {
  Tensor g = make({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2});
  EXPECT_EQ(values(ops::sum_to_size(g, {3, 1})), (std::vector<float>{1 + 2 + 7 + 8, 3 + 4 + 9 + 10, 5 + 6 + 11 + 12}));
  EXPECT_EQ(ops::sum_to_size(g, {1, 2}).shape(), (Shape{1, 2}));
  EXPECT_EQ(values(ops::sum_to_size(g, {})), (std::vector<float>{78}));
  EXPECT_EQ(ops::sum_to_size(g, {2, 3, 2}).impl(), g.impl());
  EXPECT_THROW(ops::sum_to_size(g, {4, 2}), ShapeError);
}

class OpsAutograd : public ::testing::TestWithParam<Device> {};

TEST_P(OpsAutograd, RecordsAGradFnWithEdgesOnlyWhereGradIsNeeded) {
  Tensor x = leaf({1, 2}, {2}, GetParam());
  Tensor c = make({3, 4}, {2}, GetParam());
  Tensor y = ops::mul(x, c);
  ASSERT_NE(y.impl()->grad_fn, nullptr);
  EXPECT_TRUE(y.requires_grad());
  const autograd::GradFn& fn = *y.impl()->grad_fn;
  EXPECT_EQ(fn.op, OpKind::kMul);
  ASSERT_EQ(fn.next.size(), 2u);
  ASSERT_NE(fn.next[0], nullptr);
  EXPECT_TRUE(fn.next[0]->is_accumulator());
  EXPECT_EQ(fn.next[0]->leaf, x.impl());
  EXPECT_EQ(fn.next[1], nullptr);
  // The saved output is detached: no cycle through the result's own GradFn.
  EXPECT_EQ(fn.output.impl()->grad_fn, nullptr);
  // Non-differentiable ops and constant inputs record nothing.
  EXPECT_EQ(ops::gt(x, c).impl()->grad_fn, nullptr);
  EXPECT_EQ(ops::mul(c, c).impl()->grad_fn, nullptr);
}

TEST_P(OpsAutograd, DiamondGraphSumsBothPathsBeforeRunningTheSharedNode) {
  // y = sum(h * h + 3 h), h = 2 x  =>  dy/dx = (2 h + 3) * 2.
  Tensor x = leaf({1, -2}, {2}, GetParam());
  Tensor h = ops::mul(x, ops::wrapped_float(2.0, GetParam()));
  Tensor y = ops::sum(ops::add(ops::mul(h, h), ops::mul(h, ops::wrapped_float(3.0, GetParam()))));
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{(2 * 2 + 3) * 2, (2 * -4 + 3) * 2}));
}

TEST_P(OpsAutograd, BroadcastGradientsAreSummedToTheInputShape) {
  Tensor a = leaf({1, 2, 3}, {3, 1}, GetParam());
  Tensor b = leaf({10, 20}, {2}, GetParam());
  ops::sum(ops::mul(a, b)).backward();
  EXPECT_EQ(values(a.grad()), (std::vector<float>{30, 30, 30}));  // sum of b
  EXPECT_EQ(values(b.grad()), (std::vector<float>{6, 6}));        // sum of a
  EXPECT_EQ(a.grad().shape(), (Shape{3, 1}));
}

TEST_P(OpsAutograd, LeafGradsAccumulateAndAReleasedGraphRefusesASecondPass) {
  Tensor x = leaf({3}, {1}, GetParam());
  Tensor y = ops::sum(ops::mul(x, x));
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{12}));
  EXPECT_TRUE(y.impl()->grad_fn->released);
  EXPECT_TRUE(y.impl()->grad_fn->inputs.empty());
  EXPECT_THROW(y.backward(), EngineError);
}

TEST_P(OpsAutograd, NoGradGuardRecordsNothingAndRestoresTheMode) {
  Tensor x = leaf({1}, {1}, GetParam());
  {
    autograd::NoGradGuard guard;
    EXPECT_FALSE(autograd::grad_enabled());
    EXPECT_FALSE(ops::exp(x).requires_grad());
  }
  EXPECT_TRUE(autograd::grad_enabled());
  EXPECT_TRUE(ops::exp(x).requires_grad());
  EXPECT_FALSE(ops::exp(x).detach().requires_grad());
}

TEST_P(OpsAutograd, ImplicitGradientOnlyForOneElement) {
  Tensor x = leaf({1, 2}, {2}, GetParam());
  EXPECT_THROW(ops::exp(x).backward(), EngineError);
  EXPECT_THROW(ops::exp(make({1, 2}, {2}, GetParam())).backward(), EngineError);  // no grad required
  ops::exp(x).backward(make({1, 0.5f}, {2}, GetParam()));
  const auto g = values(x.grad());
  EXPECT_FLOAT_EQ(g[0], std::exp(1.0f));
  EXPECT_FLOAT_EQ(g[1], 0.5f * std::exp(2.0f));
}

INSTANTIATE_TEST_SUITE_P(Devices, OpsAutograd,
                         ::testing::Values(Device{DeviceKind::kCpu, 0}, Device{DeviceKind::kLazy, 0}),
                         [](const auto& p) { return p.param.is_lazy() ? std::string("lazy") : std::string("cpu"); });

TEST(OpsAutogradLazy, BackwardIsTracedNotRun) {
  Tensor x = leaf({1, 2}, {2}, testing::lazy0());
  Tensor y = ops::sum(ops::mul(x, x));
  y.backward();
  // The gradient is a pending node of the lazy graph until a sync.
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().impl()->pending());
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 4}));
}

TEST(OpsAutogradLazy, SavedValuesAreNotExtraOutputsOfTheStep) {
  Tensor x = leaf({1, 2}, {2}, testing::lazy0());
  Tensor y = ops::exp(x);  // exp saves its result
  const pb::IrGraph graph = executor::pending_graph(testing::lazy0(), {});
  EXPECT_EQ(graph.outputs_size(), 1);
}

TEST(OpsAutogradTable, DifferentiableOpsHaveRulesAndOthersDoNot) {
  for (OpKind op : {OpKind::kAdd, OpKind::kMatmul, OpKind::kGelu, OpKind::kVar, OpKind::kExpand, OpKind::kCast}) {
    EXPECT_NE(autograd::grad_rule(op), nullptr) << op_name(op);
  }
  for (OpKind op : {OpKind::kEq, OpKind::kArgmax, OpKind::kAny, OpKind::kLogicalNot, OpKind::kDeviceData}) {
    EXPECT_EQ(autograd::grad_rule(op), nullptr) << op_name(op);
  }
}

// The saved values a rule reads are declared in its row, and the context
// refuses an undeclared read: a row that forgets one (so that backward would
// skip its in-place check) fails every gradient test of that op. Here mul's
// rule, which reads both inputs, is handed a row that declares none.
TEST(GradientRows, ARuleReadingAnUndeclaredSavedValueThrows) {
  const Tensor a = make({1, 2}, {2});
  const Tensor b = make({3, 4}, {2});
  const Tensor out = ops::mul(a, b);
  const std::vector<Tensor> inputs{a, b};
  const std::vector<Shape> shapes{a.shape(), b.shape()};
  const std::vector<bool> needs{true, true};
  const Attrs attrs;
  const Tensor g = make({1, 1}, {2});
  const autograd::GradRule rule = autograd::grad_rule(OpKind::kMul);
  const autograd::SavedContext undeclared{OpKind::kMul, {0, false}, inputs, out, shapes, attrs, needs};
  try {
    rule(undeclared, g);
    FAIL() << "mul's rule read undeclared saved inputs without an error";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("gradient rule of mul read saved input"), std::string::npos) << e.what();
  }
  // With its real row the same rule runs: d(a*b)/da = b, d(a*b)/db = a.
  const autograd::SavedContext declared{OpKind::kMul, autograd::saved_use(OpKind::kMul), inputs, out, shapes, attrs,
                                        needs};
  const std::vector<Tensor> grads = rule(declared, g);
  EXPECT_EQ(values(grads[0]), (std::vector<float>{3, 4}));
  EXPECT_EQ(values(grads[1]), (std::vector<float>{1, 2}));
}

// Ops whose rules read nothing saved declare nothing, so an in-place change
// to their inputs after the op is no error (add), while one the rule reads is (mul).
TEST(GradientRows, OnlyDeclaredSavedValuesAreVersionChecked) {
  EXPECT_EQ(autograd::saved_use(OpKind::kAdd).inputs, 0u);
  EXPECT_FALSE(autograd::saved_use(OpKind::kAdd).output);
  EXPECT_TRUE(autograd::saved_use(OpKind::kMul).reads_input(0));
  EXPECT_TRUE(autograd::saved_use(OpKind::kExp).output);
  EXPECT_FALSE(autograd::saved_use(OpKind::kExp).reads_input(0));
}

}  // namespace
}  // namespace lazyscope
