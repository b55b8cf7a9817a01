#include "models/recompilation_model.h"

#include <QFileInfo>
#include <QPalette>
#include <algorithm>

#include "lazyscope/event_text.h"
#include "util/format.h"

namespace lazyscope::gui {

namespace {

double durationMs(const pb::CompileEvent& compile) { return static_cast<double>(compile.duration_ns()) / 1e6; }

bool isNumeric(int column) {
  return column == RecompilationModel::Step || column == RecompilationModel::Nodes ||
         column == RecompilationModel::Duration;
}

}  // namespace

QString reasonKindText(pb::CompileReasonKind kind) {
  return QString::fromStdString(event_text::compile_reason_label(kind));
}

QString shortHash(uint64_t hash) {
  return QStringLiteral("%1").arg(static_cast<qulonglong>(hash), 16, 16, QLatin1Char('0')).left(12);
}

QString sourceText(const pb::SourceLocation& source) {
  if (source.file().empty()) return {};
  return QStringLiteral("%1:%2").arg(QFileInfo(QString::fromStdString(source.file())).fileName()).arg(source.line());
}

int RecompilationModel::recompileCount() const {
  return static_cast<int>(std::count_if(compiles_.begin(), compiles_.end(), [](const pb::CompileEvent& compile) {
    return event_text::is_recompile(compile.reason_kind());
  }));
}

RecompilationModel::RecompilationModel(QObject* parent) : QAbstractTableModel(parent) {}

RecompilationModel::~RecompilationModel() = default;

void RecompilationModel::setCompiles(std::vector<pb::CompileEvent> compiles) {
  beginResetModel();
  compiles_ = std::move(compiles);
  endResetModel();
}

int RecompilationModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(compiles_.size());
}

int RecompilationModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NUM_COLUMNS; }

QVariant RecompilationModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
    return {};
  }
  const pb::CompileEvent& compile = compiles_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return displayData(compile, index.column());
    case SortRole: return sortData(compile, index.column());
    case CompileIndexRole: return index.row();
    case Qt::ToolTipRole:
      if (index.column() == Graph) {
        return QStringLiteral("%1").arg(static_cast<qulonglong>(compile.graph_hash()), 16, 16, QLatin1Char('0'));
      }
      if (index.column() == Reason) return QString::fromStdString(compile.reason());
      if (index.column() == Source) return QString::fromStdString(compile.source().file());
      return {};
    case Qt::TextAlignmentRole:
      return static_cast<int>((isNumeric(index.column()) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      // First compiles are not recompilations: greyed, apart from the rows
      // that need a look.
      if (!event_text::is_recompile(compile.reason_kind())) return QPalette().brush(QPalette::PlaceholderText);
      return {};
    default: return {};
  }
}

QVariant RecompilationModel::displayData(const pb::CompileEvent& compile, int column) const {
  switch (column) {
    case Step: return QVariant::fromValue<qint64>(compile.step());
    case Graph: return shortHash(compile.graph_hash());
    case Nodes: return compile.graph().nodes_size();
    case Duration: return formatStepTime(durationMs(compile));
    case ReasonKind: return reasonKindText(compile.reason_kind());
    case Reason: return QString::fromStdString(compile.reason());
    case Source: return sourceText(compile.source());
    default: return {};
  }
}

QVariant RecompilationModel::sortData(const pb::CompileEvent& compile, int column) const {
  switch (column) {
    case Duration: return durationMs(compile);
    case Graph: return QVariant::fromValue<qulonglong>(compile.graph_hash());
    case Source:
      return QStringLiteral("%1:%2")
          .arg(QString::fromStdString(compile.source().file()))
          .arg(compile.source().line(), 8, 10, QLatin1Char('0'));
    default: return displayData(compile, column);
  }
}

QVariant RecompilationModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= NUM_COLUMNS) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Step: return tr("Step");
      case Graph: return tr("Graph");
      case Nodes: return tr("Nodes");
      case Duration: return tr("Compile time");
      case ReasonKind: return tr("Kind");
      case Reason: return tr("Reason");
      case Source: return tr("Source");
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    return static_cast<int>((isNumeric(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace lazyscope::gui
