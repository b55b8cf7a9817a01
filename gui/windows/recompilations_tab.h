// The uncached compiles of a run as a sortable table; selecting one shows why
// it compiled and, side by side, the graph it was compared with and its own,
// matched by node position with the differing rows highlighted.
#pragma once

#include <QWidget>

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace lazyscope::gui {

class GraphDiffModel;
class RecompilationModel;
struct RunDetail;

class RecompilationsTab : public QWidget {
  Q_OBJECT

 public:
  explicit RecompilationsTab(QWidget* parent = nullptr);
  ~RecompilationsTab() override;

  // Shows the compiles of `detail` and selects the first recompile (one that
  // was compared with an earlier graph), else the first compile. `detail`
  // must outlive the next setRun() or clear().
  void setRun(const RunDetail* detail);
  void clear();
  // Selects row `row` of the model (source, not proxy, order).
  void selectCompile(int row);

  RecompilationModel* model() const { return model_; }
  GraphDiffModel* diffModel() const { return diff_; }
  QString reasonText() const;

 private:
  void showCompile(int row);

  const RunDetail* detail_ = nullptr;
  RecompilationModel* model_;
  QSortFilterProxyModel* proxy_;
  GraphDiffModel* diff_;
  QTableView* table_ = nullptr;
  QTableView* diffTable_ = nullptr;
  QLabel* reason_ = nullptr;
};

}  // namespace lazyscope::gui
