#include "util/ir_text.h"

#include <QStringList>

#include "models/graph_diff_model.h"
#include "models/recompilation_model.h"  // sourceText

namespace lazyscope::gui {

QString irText(const pb::IrGraph& graph) {
  QStringList lines;
  lines.reserve(graph.nodes_size() + 2);
  lines << QStringLiteral("graph %1: %2 nodes, %3 parameters")
               .arg(graph.hash(), 16, 16, QLatin1Char('0'))
               .arg(graph.nodes_size())
               .arg(graph.parameter_count());
  for (const pb::IrNode& node : graph.nodes()) {
    QString line = QStringLiteral("  %%1 = %2").arg(node.id()).arg(nodeOpText(node));
    if (node.parameter_index() >= 0) line += QStringLiteral(" parameter %1").arg(node.parameter_index());
    line += QStringLiteral(" : ") + nodeShapeText(node);
    if (!node.scope().empty()) line += QStringLiteral("  scope ") + QString::fromStdString(node.scope());
    const QString source = sourceText(node.source());
    if (!source.isEmpty()) line += QStringLiteral("  at ") + source;
    lines << line;
  }
  QString outputs = QStringLiteral("  outputs:");
  for (int output : graph.outputs()) outputs += QStringLiteral(" %%1").arg(output);
  lines << outputs;
  return lines.join(QLatin1Char('\n'));
}

}  // namespace lazyscope::gui
