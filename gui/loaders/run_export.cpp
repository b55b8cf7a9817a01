#include "loaders/run_export.h"

#include <QCoreApplication>
#include <QDir>
#include <QSaveFile>
#include <exception>

#include "db/history_file.h"
#include "export/chrome_trace.h"
#include "export/run_bundle.h"
#include "query/history_reader.h"
#include "util/job_control.h"

namespace lazyscope::gui {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("RunExport", text); }
}  // namespace

QString exportRunToFile(const QString& history, int64_t runId, const QString& path, RunExportFormat format,
                        const JobControl* control) {
  const auto stopped = [control] { return control != nullptr && control->stopped(); };
  try {
    const storage::HistoryReader reader(history.toStdString());
    if (format == RunExportFormat::Bundle) {
      std::optional<pb::RunBundle> bundle = reader.run_bundle(runId);
      if (!bundle) return tr("Run %1 is no longer in the history.").arg(runId);
      if (stopped()) return tr("Cancelled.");
      storage::write_run_bundle_file(std::move(*bundle), path.toStdString());
      return {};
    }
    const std::optional<pb::RunTimeline> timeline = reader.timeline(runId);
    if (!timeline) return tr("Run %1 is no longer in the history.").arg(runId);
    const std::string json = storage::chrome_trace_json(*timeline);
    if (stopped()) return tr("Cancelled.");
    // QSaveFile: a failed write leaves no half trace behind.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(json.data(), static_cast<qint64>(json.size())) < 0 ||
        !file.commit()) {
      return tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
    }
    return {};
  } catch (const std::exception& e) {
    return tr("Could not export run %1: %2").arg(runId).arg(QString::fromUtf8(e.what()));
  }
}

}  // namespace lazyscope::gui
