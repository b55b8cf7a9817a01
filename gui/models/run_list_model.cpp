#include "models/run_list_model.h"

#include <limits>

#include <QDateTime>
#include <QFileInfo>
#include <QGuiApplication>
#include <QPalette>

#include "util/format.h"
#include "util/run_status.h"

namespace lazyscope::gui {

namespace {

QString fromStd(const std::string& text) { return QString::fromStdString(text); }

// Wall time in ms: start to end; for a running run, so far; for a crashed
// one, to its last sign of life. -1 when unknown.
double durationMs(const pb::RunSummary& summary) {
  if (summary.wall_ms() > 0) return summary.wall_ms();
  const pb::RunInfo& run = summary.run();
  if (run.ended_unix_ms() > 0 && run.started_unix_ms() > 0) {
    return static_cast<double>(run.ended_unix_ms() - run.started_unix_ms());
  }
  return -1.0;
}

QString tagsText(const pb::RunInfo& run) {
  QStringList tags;
  for (const std::string& tag : run.tags()) tags << QString::fromStdString(tag);
  return tags.join(QStringLiteral(", "));
}

// Quantities align right so that digits line up; the id is a label, not a
// quantity, and stays left (beside the name).
bool isNumeric(int column) {
  switch (column) {
    case RunListModel::Duration:
    case RunListModel::Steps:
    case RunListModel::Compiles:
    case RunListModel::CacheHits:
    case RunListModel::MedianStep:
    case RunListModel::Fallbacks:
    case RunListModel::LastLoss: return true;
    default: return false;
  }
}

}  // namespace

RunListModel::RunListModel(QObject* parent) : QAbstractTableModel(parent) {}

RunListModel::~RunListModel() = default;

void RunListModel::setRuns(std::vector<pb::RunSummary> runs) {
  beginResetModel();
  runs_ = std::move(runs);
  endResetModel();
}

int RunListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int RunListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NUM_COLUMNS; }

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
    return {};
  }
  const pb::RunSummary& summary = runs_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return displayData(summary, index.column());
    case SortRole: return sortData(summary, index.column());
    case Qt::ToolTipRole: return toolTipData(summary, index.column());
    case RunIdRole: return QVariant::fromValue<qint64>(summary.run().id());
    case StatusRole: return static_cast<int>(summary.run().status());
    case Qt::ForegroundRole:
      if (index.column() == Status) {
        return statusColor(summary.run().status(), QGuiApplication::palette());
      }
      return {};
    case Qt::TextAlignmentRole:
      if (isNumeric(index.column())) return static_cast<int>(Qt::AlignRight | Qt::AlignVCenter);
      return static_cast<int>(Qt::AlignLeft | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant RunListModel::displayData(const pb::RunSummary& summary, int column) const {
  const pb::RunInfo& run = summary.run();
  switch (column) {
    case Id: return QVariant::fromValue<qint64>(run.id());
    case Name: return fromStd(run.name());
    case Script: return QFileInfo(fromStd(run.script_path())).fileName();
    case Status: return statusText(run.status());
    case Started: return formatTimestamp(run.started_unix_ms());
    case Duration: {
      const double ms = durationMs(summary);
      return ms < 0 ? QStringLiteral("—") : formatDuration(ms);
    }
    case Steps: return QVariant::fromValue<qint64>(summary.steps());
    case Compiles: return QVariant::fromValue<qint64>(summary.compiles());
    case CacheHits: return QVariant::fromValue<qint64>(summary.cache_hits());
    case MedianStep: return summary.steps() > 0 ? formatStepTime(summary.median_step_ms()) : QStringLiteral("—");
    case Fallbacks: return QVariant::fromValue<qint64>(summary.fallbacks());
    case LastLoss: return summary.has_last_loss() ? QString::number(summary.last_loss(), 'g', 4) : QStringLiteral("—");
    case Tags: return tagsText(run);
    default: return {};
  }
}

QVariant RunListModel::sortData(const pb::RunSummary& summary, int column) const {
  const pb::RunInfo& run = summary.run();
  switch (column) {
    case Id: return QVariant::fromValue<qint64>(run.id());
    case Name: return fromStd(run.name());
    case Script: return QFileInfo(fromStd(run.script_path())).fileName();
    case Status: return statusText(run.status());
    case Started: return QVariant::fromValue<qint64>(run.started_unix_ms());
    case Duration: return durationMs(summary);
    case Steps: return QVariant::fromValue<qint64>(summary.steps());
    case Compiles: return QVariant::fromValue<qint64>(summary.compiles());
    case CacheHits: return QVariant::fromValue<qint64>(summary.cache_hits());
    case MedianStep: return summary.median_step_ms();
    case Fallbacks: return QVariant::fromValue<qint64>(summary.fallbacks());
    // Runs without a loss sort after every run with one.
    case LastLoss: return summary.has_last_loss() ? summary.last_loss() : std::numeric_limits<double>::infinity();
    case Tags: return tagsText(run);
    default: return {};
  }
}

QVariant RunListModel::toolTipData(const pb::RunSummary& summary, int column) const {
  const pb::RunInfo& run = summary.run();
  switch (column) {
    case Script: return fromStd(run.script_path());
    case Status:
      switch (run.status()) {
        case pb::RUN_STATUS_FAILED:
          return run.error().empty() ? tr("Failed with exit code %1").arg(run.exit_code())
                                     : tr("Failed: %1").arg(fromStd(run.error()));
        case pb::RUN_STATUS_CRASHED: return tr("The process recording this run ended without finishing it");
        case pb::RUN_STATUS_RUNNING: return tr("Still being recorded");
        default: return {};
      }
    case Duration:
      if (run.status() == pb::RUN_STATUS_RUNNING) return tr("Still running: time so far");
      if (run.status() == pb::RUN_STATUS_CRASHED) return tr("Until the last sign of life of the recording process");
      return {};
    case Started:
      if (run.started_unix_ms() <= 0) return {};
      return QDateTime::fromMSecsSinceEpoch(run.started_unix_ms()).toString(Qt::ISODateWithMs);
    default: return {};
  }
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= NUM_COLUMNS) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Id: return tr("ID");
      case Name: return tr("Name");
      case Script: return tr("Script");
      case Status: return tr("Status");
      case Started: return tr("Started");
      case Duration: return tr("Duration");
      case Steps: return tr("Steps");
      case Compiles: return tr("Compiles");
      case CacheHits: return tr("Cache hits");
      case MedianStep: return tr("Median step");
      case Fallbacks: return tr("Fallbacks");
      case LastLoss: return tr("Last loss");
      case Tags: return tr("Tags");
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Compiles: return tr("Graphs compiled because the compile cache had no match");
      case CacheHits: return tr("Executions that reused an already compiled graph");
      case MedianStep: return tr("Median step time after warm-up (steps that did not compile)");
      case Duration: return tr("Wall time from start to end of the run");
      case Fallbacks: return tr("Ops that ran on the host (CPU fallbacks), all steps");
      case LastLoss: return tr("The last value the script logged as \"loss\" (lazyscope.log)");
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    return static_cast<int>((isNumeric(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace lazyscope::gui
