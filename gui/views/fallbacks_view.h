// The Fallbacks tab: CPU fallbacks grouped by op and source line (count,
// total time, bytes, steps); selecting a group shows the script's recorded
// text with that line highlighted.
#pragma once

#include <QWidget>
#include <string>

class QLabel;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QTableView;

namespace lazyscope::gui {

class FallbackModel;
struct RunProfile;

class FallbacksView : public QWidget {
  Q_OBJECT

 public:
  explicit FallbacksView(QWidget* parent = nullptr);
  ~FallbacksView() override;

  // Shows the groups of `profile` and selects the most expensive one.
  void setProfile(const RunProfile& profile);
  void clear();
  // Selects row `row` of the model (source order); false when out of range.
  bool selectGroup(int row);
  // Selects the first group at `line` of the script (any op); false if none.
  bool selectLine(int line);

  FallbackModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  QPlainTextEdit* source() const { return source_; }
  // The line highlighted in the script (1-based), or 0.
  int highlightedLine() const { return highlightedLine_; }
  QString sourceCaption() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void showGroup(int row);
  void highlight(int line);

  FallbackModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLabel* caption_;
  QPlainTextEdit* source_;
  QLabel* empty_;
  std::string scriptPath_;
  int highlightedLine_ = 0;
};

}  // namespace lazyscope::gui
