// The Graphs tab of a run: the table of its compiled graphs above, and for
// the selected graph the viewer (or its IR as text, or its lowered program)
// beside the details of the selected node. Everything is read in the
// background by a GraphLoader; the viewer lays out in the background too.
#pragma once

#include <QWidget>
#include <cstdint>
#include <memory>

#include "lazyscope/ir.pb.h"

class QLabel;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QTextBrowser;

namespace lazyscope::gui {

class GraphListModel;
class GraphLoader;
class GraphViewer;
struct GraphRow;

class GraphTab : public QWidget {
  Q_OBJECT

 public:
  explicit GraphTab(QWidget* parent = nullptr);
  ~GraphTab() override;

  void setRun(const QString& path, int64_t runId);
  void clear();
  // Shows graph `hash` of the run (selects its row).
  bool selectGraph(uint64_t hash);

  bool isLoading() const;
  GraphListModel* model() const { return model_; }
  GraphViewer* viewer() const { return viewer_; }
  QTableView* table() const { return table_; }
  QString detailsText() const;
  QString irText() const;
  QString programText() const;
  QString statusText() const;

 signals:
  void graphCountChanged(int count);

 private:
  void onCurrentRowChanged();
  void showNode(int node);
  void showScope(const QString& scope, int nodeCount);
  void setStatus(const QString& text);

  QString path_;
  int64_t runId_ = 0;
  uint64_t shownHash_ = 0;
  uint64_t pendingHash_ = 0;
  std::shared_ptr<const pb::IrGraph> graph_;

  GraphLoader* loader_;
  GraphListModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_ = nullptr;
  QLabel* status_ = nullptr;
  QTabWidget* views_ = nullptr;
  GraphViewer* viewer_ = nullptr;
  QPlainTextEdit* ir_ = nullptr;
  QPlainTextEdit* program_ = nullptr;
  QTextBrowser* details_ = nullptr;
};

}  // namespace lazyscope::gui
