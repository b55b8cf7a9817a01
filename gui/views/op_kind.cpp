#include "views/op_kind.h"

#include <array>
#include <utility>

namespace lazyscope::gui {
namespace {

using Row = std::pair<std::string_view, OpKind>;

// Only the ops that are not elementwise; the op table's elementwise ops (and
// new ones such as `erf`) are the default for a known-looking name below.
constexpr std::array kOps = {
    Row{"matmul", OpKind::MatmulConv},      Row{"mm", OpKind::MatmulConv},
    Row{"bmm", OpKind::MatmulConv},         Row{"conv1d", OpKind::MatmulConv},
    Row{"conv2d", OpKind::MatmulConv},      Row{"convolution", OpKind::MatmulConv},
    Row{"linear", OpKind::MatmulConv},
    Row{"sum", OpKind::Reduction},          Row{"mean", OpKind::Reduction},
    Row{"prod", OpKind::Reduction},         Row{"amax", OpKind::Reduction},
    Row{"amin", OpKind::Reduction},         Row{"argmax", OpKind::Reduction},
    Row{"argmin", OpKind::Reduction},       Row{"var", OpKind::Reduction},
    Row{"logsumexp", OpKind::Reduction},    Row{"any", OpKind::Reduction},
    Row{"all", OpKind::Reduction},          Row{"softmax", OpKind::Reduction},
    Row{"log_softmax", OpKind::Reduction},  Row{"nll_loss", OpKind::Reduction},
    Row{"reshape", OpKind::Layout},         Row{"view", OpKind::Layout},
    Row{"permute", OpKind::Layout},         Row{"transpose", OpKind::Layout},
    Row{"expand", OpKind::Layout},          Row{"cat", OpKind::Layout},
    Row{"slice", OpKind::Layout},           Row{"slice_backward", OpKind::Layout},
    Row{"squeeze", OpKind::Layout},         Row{"unsqueeze", OpKind::Layout},
    Row{"device_data", OpKind::Data},       Row{"scalar", OpKind::Data},
    Row{"constant", OpKind::Data},          Row{"rng", OpKind::Data},
    Row{"one_hot", OpKind::Data},           Row{"index_select", OpKind::Data},
    Row{"index_add", OpKind::Data},
};

constexpr std::array<std::string_view, 39> kElementwise = {
    "cast", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne",
    "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "where", "neg", "abs",
    "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid",
    "relu", "leaky_relu", "gelu", "silu", "softplus", "clamp", "copy", "fill", "dropout"};

}  // namespace

OpKind opKind(std::string_view op) {
  for (const Row& row : kOps) {
    if (row.first == op) return row.second;
  }
  for (std::string_view name : kElementwise) {
    if (name == op) return OpKind::Elementwise;
  }
  return OpKind::Other;
}

QString opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::Elementwise: return QStringLiteral("elementwise");
    case OpKind::MatmulConv: return QStringLiteral("matmul / conv");
    case OpKind::Reduction: return QStringLiteral("reduction");
    case OpKind::Layout: return QStringLiteral("layout");
    case OpKind::Data: return QStringLiteral("data");
    case OpKind::Other:
    case OpKind::NUM_KINDS: break;
  }
  return QStringLiteral("other");
}

QColor opKindColor(OpKind kind) {
  // Pastels of distinct hues (Okabe–Ito inspired, lightened): black text has
  // high contrast on each, and none is close to white or to a dark base.
  switch (kind) {
    case OpKind::Elementwise: return QColor(0xa8, 0xd8, 0xf0);  // sky blue
    case OpKind::MatmulConv: return QColor(0xf4, 0xa6, 0x82);   // vermilion
    case OpKind::Reduction: return QColor(0xb9, 0xe3, 0xa0);    // green
    case OpKind::Layout: return QColor(0xe6, 0xd2, 0x8a);       // yellow ochre
    case OpKind::Data: return QColor(0xc8, 0xc8, 0xc8);         // grey
    case OpKind::Other:
    case OpKind::NUM_KINDS: break;
  }
  return QColor(0xd9, 0xb8, 0xe6);  // purple
}

}  // namespace lazyscope::gui
