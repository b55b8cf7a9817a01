#include "models/graph_diff_model.h"

#include <QBrush>
#include <QFileInfo>
#include <QGuiApplication>
#include <QPalette>
#include <QStringList>
#include <algorithm>

#include "util/run_status.h"

namespace lazyscope::gui {

namespace {

// Attributes in key order (protobuf maps have none).
QStringList attributes(const pb::IrNode& node) {
  QStringList items;
  for (const auto& [key, value] : node.attrs()) {
    items << QStringLiteral("%1=%2").arg(QString::fromStdString(key), QString::fromStdString(value));
  }
  items.sort();
  return items;
}

bool sameNode(const pb::IrNode& a, const pb::IrNode& b) {
  return nodeOpText(a) == nodeOpText(b) && nodeShapeText(a) == nodeShapeText(b);
}

}  // namespace

QString nodeOpText(const pb::IrNode& node) {
  QStringList operands;
  for (int32_t operand : node.operands()) operands << QStringLiteral("%%1").arg(operand);
  QString text = QString::fromStdString(node.op());
  const QStringList attrs = attributes(node);
  if (!operands.isEmpty() || !attrs.isEmpty()) {
    text += QLatin1Char('(') + operands.join(QStringLiteral(", "));
    if (!attrs.isEmpty())
      text += (operands.isEmpty() ? QString() : QStringLiteral("; ")) + attrs.join(QStringLiteral(", "));
    text += QLatin1Char(')');
  }
  if (node.parameter_index() >= 0) text += QStringLiteral("  [input %1]").arg(node.parameter_index());
  return text;
}

QString nodeShapeText(const pb::IrNode& node) {
  QStringList dims;
  for (int64_t dim : node.shape()) dims << QString::number(dim);
  return QStringLiteral("%1[%2]").arg(QString::fromStdString(node.dtype()), dims.join(QStringLiteral(", ")));
}

GraphDiffModel::GraphDiffModel(QObject* parent) : QAbstractTableModel(parent) {}

GraphDiffModel::~GraphDiffModel() = default;

void GraphDiffModel::setGraphs(pb::IrGraph before, pb::IrGraph after) {
  beginResetModel();
  before_ = std::move(before);
  after_ = std::move(after);
  differs_.assign(static_cast<size_t>(std::max(before_.nodes_size(), after_.nodes_size())), false);
  for (size_t row = 0; row < differs_.size(); ++row) differs_[row] = differs(static_cast<int>(row));
  endResetModel();
}

void GraphDiffModel::clear() { setGraphs({}, {}); }

int GraphDiffModel::differingCount() const {
  return static_cast<int>(std::count(differs_.begin(), differs_.end(), true));
}

const pb::IrNode* GraphDiffModel::node(const pb::IrGraph& graph, int row) const {
  return row < graph.nodes_size() ? &graph.nodes(row) : nullptr;
}

bool GraphDiffModel::differs(int row) const {
  // One graph alone (a first compile) differs from nothing: no all-yellow table.
  if (before_.nodes_size() == 0 || after_.nodes_size() == 0) return false;
  const pb::IrNode* a = node(before_, row);
  const pb::IrNode* b = node(after_, row);
  return a == nullptr || b == nullptr || !sameNode(*a, *b);
}

int GraphDiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(differs_.size());
}

int GraphDiffModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NUM_COLUMNS; }

QVariant GraphDiffModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
    return {};
  }
  const int row = index.row();
  const bool rowDiffers = differs_[static_cast<size_t>(row)];
  switch (role) {
    case Qt::DisplayRole: return displayData(row, index.column());
    case SortRole: return index.column() == Position ? QVariant(row) : displayData(row, index.column());
    case DiffersRole: return rowDiffers;
    case Qt::BackgroundRole: {
      if (!rowDiffers) return {};
      const bool dark = isDarkPalette(QGuiApplication::palette());
      return QBrush(dark ? QColor(0x5c, 0x4a, 0x12) : QColor(0xff, 0xf0, 0xb3));
    }
    case Qt::ToolTipRole:
      if (index.column() == Source) {
        const pb::IrNode* n = node(after_, row) ? node(after_, row) : node(before_, row);
        return n ? QString::fromStdString(n->source().file()) : QVariant();
      }
      return {};
    case Qt::TextAlignmentRole:
      return static_cast<int>((index.column() == Position ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant GraphDiffModel::displayData(int row, int column) const {
  const pb::IrNode* a = node(before_, row);
  const pb::IrNode* b = node(after_, row);
  switch (column) {
    case Position: return row;
    case BeforeOp: return a ? nodeOpText(*a) : QString();
    case BeforeShape: return a ? nodeShapeText(*a) : QString();
    case AfterOp: return b ? nodeOpText(*b) : QString();
    case AfterShape: return b ? nodeShapeText(*b) : QString();
    case Source: {
      const pb::IrNode* n = b ? b : a;
      if (n == nullptr || n->source().file().empty()) return QString();
      return QStringLiteral("%1:%2")
          .arg(QFileInfo(QString::fromStdString(n->source().file())).fileName())
          .arg(n->source().line());
    }
    default: return {};
  }
}

QVariant GraphDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= NUM_COLUMNS) return {};
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Position: return tr("#");
    case BeforeOp: return tr("Before: node");
    case BeforeShape: return tr("Before: shape");
    case AfterOp: return tr("After: node");
    case AfterShape: return tr("After: shape");
    case Source: return tr("Source");
    default: return {};
  }
}

}  // namespace lazyscope::gui
