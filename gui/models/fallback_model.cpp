#include "models/fallback_model.h"

#include "models/recompilation_model.h"
#include "util/format.h"

namespace lazyscope::gui {

namespace {

bool isNumeric(int column) { return column >= FallbackModel::Count; }

}  // namespace

FallbackModel::FallbackModel(QObject* parent) : QAbstractTableModel(parent) {}

FallbackModel::~FallbackModel() = default;

void FallbackModel::setGroups(std::vector<pb::FallbackGroup> groups) {
  beginResetModel();
  groups_ = std::move(groups);
  endResetModel();
}

int FallbackModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(groups_.size());
}

int FallbackModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NUM_COLUMNS; }

QVariant FallbackModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const pb::FallbackGroup& group = groups_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return displayData(group, index.column());
    case SortRole: return sortData(group, index.column());
    case GroupIndexRole: return index.row();
    case Qt::ToolTipRole:
      if (index.column() == Source) return QString::fromStdString(group.source().file());
      if (index.column() == Steps) {
        return tr("%1 steps with a fallback, from step %2 to %3")
            .arg(group.steps_with_fallback())
            .arg(group.first_step())
            .arg(group.last_step());
      }
      return {};
    case Qt::TextAlignmentRole:
      return static_cast<int>((isNumeric(index.column()) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant FallbackModel::displayData(const pb::FallbackGroup& group, int column) const {
  switch (column) {
    case Op: return QString::fromStdString(group.op());
    case Source: {
      const QString text = sourceText(group.source());
      return text.isEmpty() ? tr("unknown") : text;
    }
    case Count: return QVariant::fromValue<qint64>(group.count());
    case TotalTime: return formatStepTime(group.total_ms());
    case Bytes: return formatBytes(group.bytes());
    case Steps:
      return group.first_step() == group.last_step()
                 ? QString::number(group.first_step())
                 : QStringLiteral("%1–%2").arg(group.first_step()).arg(group.last_step());
    default: return {};
  }
}

QVariant FallbackModel::sortData(const pb::FallbackGroup& group, int column) const {
  switch (column) {
    case Source:
      return QStringLiteral("%1:%2")
          .arg(QString::fromStdString(group.source().file()))
          .arg(group.source().line(), 8, 10, QLatin1Char('0'));
    case TotalTime: return group.total_ms();
    case Bytes: return QVariant::fromValue<qint64>(group.bytes());
    case Steps: return QVariant::fromValue<qint64>(group.first_step());
    default: return displayData(group, column);
  }
}

QVariant FallbackModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= NUM_COLUMNS) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Op: return tr("Op");
      case Source: return tr("Source");
      case Count: return tr("Count");
      case TotalTime: return tr("Total time");
      case Bytes: return tr("Bytes");
      case Steps: return tr("Steps");
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    return static_cast<int>((isNumeric(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace lazyscope::gui
