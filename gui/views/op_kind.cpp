#include "views/op_kind.h"

namespace lazyscope::gui {

OpKind opKind(const pb::IrNode& node) {
  switch (node.category()) {
    case pb::OP_CATEGORY_ELEMENTWISE: return OpKind::Elementwise;
    case pb::OP_CATEGORY_MATMUL_CONV: return OpKind::MatmulConv;
    case pb::OP_CATEGORY_REDUCTION: return OpKind::Reduction;
    case pb::OP_CATEGORY_LAYOUT: return OpKind::Layout;
    case pb::OP_CATEGORY_DATA: return OpKind::Data;
    case pb::OP_CATEGORY_INDEXING: return OpKind::Indexing;
    case pb::OP_CATEGORY_COLLECTIVE: return OpKind::Collective;
    default: return OpKind::Other;  // unspecified (older recordings) or newer than this build
  }
}

QString opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::Elementwise: return QStringLiteral("elementwise");
    case OpKind::MatmulConv: return QStringLiteral("matmul / conv / pool");
    case OpKind::Reduction: return QStringLiteral("reduction");
    case OpKind::Layout: return QStringLiteral("layout");
    case OpKind::Data: return QStringLiteral("data");
    case OpKind::Indexing: return QStringLiteral("indexing");
    case OpKind::Collective: return QStringLiteral("collective");
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
    case OpKind::Indexing: return QColor(0xf2, 0xb8, 0xd2);     // pink
    case OpKind::Collective: return QColor(0x9e, 0xdc, 0xcf);   // teal
    case OpKind::Other:
    case OpKind::NUM_KINDS: break;
  }
  return QColor(0xd9, 0xb8, 0xe6);  // purple
}

}  // namespace lazyscope::gui
