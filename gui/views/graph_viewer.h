// The graph viewer: a toolbar (search, expand/collapse, k hops around the
// selection, fit), the drawing, and a legend of op kinds. Layouts are
// computed on a pool thread, cached by graph hash and outline state; while
// one is computed the previous drawing stays and the status line says so.
//
// A graph with more than kCollapseLimit nodes opens folded into its groups
// (module scopes; the backward pass and optimizer by line and module, see
// graph_outline.h), opened level by level while at most kOpenBudget boxes
// are drawn. A layout that is still too large to draw (more than kDrawLimit
// boxes: everything expanded, or thousands of nodes with neither scope nor
// source line) shows the nodes around the outputs, with a message saying so.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "lazyscope/ir.pb.h"
#include "views/graph_outline.h"

class QLabel;
class QLineEdit;
class QSpinBox;
class QPushButton;
class QToolButton;

namespace lazyscope::gui {

class BackgroundJob;
class GraphCanvas;
class GraphScene;
struct LaidOutGraph;

class GraphViewer : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kCollapseLimit = 500;
  static constexpr int kOpenBudget = 200;
  static constexpr int kDrawLimit = 6000;

  explicit GraphViewer(QWidget* parent = nullptr);
  ~GraphViewer() override;

  // Shows `graph` (laid out in the background); nullptr clears.
  void setGraph(std::shared_ptr<const pb::IrGraph> graph);
  void clear();

  void expandScope(const QString& scope);
  // Folds `scope` (and every scope inside it) back into one box.
  void collapseScope(const QString& scope);
  void expandAll();
  void collapseAll();
  // Only the nodes within the hop count of the selected box's nodes; and back.
  void showAroundSelection();
  void showWholeGraph();
  // Highlights the boxes whose nodes match `text` (op, scope or source,
  // case-insensitive) and returns how many nodes match; next() moves the
  // selection to the next matching box.
  int search(const QString& text);
  void nextMatch();
  // Selects the box that shows node `node` (by index).
  void selectNode(int node);

  bool isLayingOut() const;
  const OutlineState& state() const { return state_; }
  const pb::IrGraph* graph() const { return graph_.get(); }
  GraphScene* scene() const { return scene_; }
  GraphCanvas* canvas() const { return canvas_; }
  QString message() const;
  // Saves the whole drawn graph (as collapsed and filtered now) to `path`,
  // .png or .svg; empty on success, else the message to show.
  QString exportImage(const QString& path);

 signals:
  // The selected box shows node `node` (an index), or a collapsed scope
  // (node -1, with its path and node count); both -1/empty: nothing selected.
  void nodeSelected(int node);
  void scopeSelected(const QString& scope, int nodeCount);
  void layoutFinished();

 private:
  QWidget* createToolbar();
  QWidget* createLegend();
  void relayout(int focusNode = -1);
  void onLaidOut(const std::shared_ptr<const LaidOutGraph>& laid, int focusNode);
  void onLayoutCancelled();
  void onSelectionChanged();
  void showItemMenu(int index, const QPoint& globalPos);

  std::shared_ptr<const pb::IrGraph> graph_;
  OutlineState state_;
  BackgroundJob* layoutJob_;
  std::vector<int> matches_;  // item indices
  int matchCursor_ = -1;

  GraphScene* scene_;
  GraphCanvas* canvas_;
  QLineEdit* search_ = nullptr;
  QLabel* matchLabel_ = nullptr;
  QSpinBox* hops_ = nullptr;
  QToolButton* around_ = nullptr;
  QToolButton* whole_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* message_ = nullptr;
  QPushButton* reload_ = nullptr;  // lays out again after a cancelled layout
};

}  // namespace lazyscope::gui
