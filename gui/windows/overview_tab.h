// A run at a glance: its summary figures (steps, times, compiles, cache hit
// rate, fallbacks), its status with the error of a failed run, and the
// diagnosis findings, most severe first.
#pragma once

#include <QWidget>
#include <string>
#include <vector>

#include "lazyscope/history.pb.h"

class QGridLayout;
class QLabel;
class QVBoxLayout;

namespace lazyscope::gui {

class OverviewTab : public QWidget {
  Q_OBJECT

 public:
  explicit OverviewTab(QWidget* parent = nullptr);
  ~OverviewTab() override;

  void setRun(const pb::RunSummary& summary, const std::vector<pb::Finding>& findings);
  void clear();
  // The value shown for figure `name` ("steps", "wall", "median", "compiles",
  // "compileTime", "executions", "cacheHitRate", "fallbacks", "status").
  QString figure(const QString& name) const;

  // The tab that shows the evidence of a finding of diagnosis rule `rule`
  // ("recompilations", "fallbacks", "timeline"), or "" when none does.
  static QString evidenceTab(const std::string& rule);

 signals:
  // The user asked to see the evidence of `finding` (its card's link).
  void evidenceRequested(const lazyscope::pb::Finding& finding);

 private:
  QLabel* addFigure(const QString& name, const QString& title, int row, int column);
  void setFindings(const std::vector<pb::Finding>& findings);

  QLabel* heading_;
  QLabel* error_;
  QGridLayout* figures_;
  QVBoxLayout* findings_;
  QLabel* noFindings_;
};

}  // namespace lazyscope::gui
