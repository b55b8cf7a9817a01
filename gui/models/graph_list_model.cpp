#include "models/graph_list_model.h"

#include "models/recompilation_model.h"  // shortHash, sourceText
#include "util/format.h"

namespace lazyscope::gui {

GraphListModel::GraphListModel(QObject* parent) : QAbstractTableModel(parent) {}

void GraphListModel::setGraphs(std::vector<GraphRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int GraphListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int GraphListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NUM_COLUMNS; }

QVariant GraphListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const GraphRow& row = rows_[static_cast<size_t>(index.row())];
  const pb::GraphInfo& info = row.info;
  const int column = index.column();
  switch (role) {
    case HashRole: return QVariant::fromValue<quint64>(info.hash());
    case HasIrRole: return info.has_ir();
    case Qt::TextAlignmentRole:
      return column == Hash || column == Source ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole:
      if (column == Hash) {
        return QStringLiteral("%1%2")
            .arg(info.hash(), 16, 16, QLatin1Char('0'))
            .arg(info.has_ir() ? QString() : tr(" (IR not stored)"));
      }
      if (column == Source) return QString::fromStdString(row.source.file());
      return {};
    case SortRole:
      switch (column) {
        case Hash: return QVariant::fromValue<quint64>(info.hash());
        case Nodes: return info.node_count();
        case Compiles: return QVariant::fromValue<qint64>(info.compiles());
        case CompileTime: return info.compile_ms();
        case Executions: return QVariant::fromValue<qint64>(info.executions());
        case ExecuteTime: return info.execute_ms();
        case FirstStep: return QVariant::fromValue<qint64>(info.first_step());
        case Source: return sourceText(row.source);
        default: return {};
      }
    case Qt::DisplayRole:
      switch (column) {
        case Hash: return shortHash(info.hash());
        case Nodes: return info.node_count();
        case Compiles: return QVariant::fromValue<qint64>(info.compiles());
        case CompileTime: return formatStepTime(info.compile_ms());
        case Executions: return QVariant::fromValue<qint64>(info.executions());
        case ExecuteTime: return formatStepTime(info.execute_ms());
        case FirstStep: return QVariant::fromValue<qint64>(info.first_step());
        case Source: return sourceText(row.source);
        default: return {};
      }
    default: return {};
  }
}

QVariant GraphListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Hash: return tr("Graph");
    case Nodes: return tr("Nodes");
    case Compiles: return tr("Compiles");
    case CompileTime: return tr("Compile time");
    case Executions: return tr("Executions");
    case ExecuteTime: return tr("Execute time");
    case FirstStep: return tr("First step");
    case Source: return tr("Source");
    default: return {};
  }
}

}  // namespace lazyscope::gui
