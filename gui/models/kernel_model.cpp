#include "models/kernel_model.h"

#include <algorithm>
#include <set>
#include <utility>

#include "models/recompilation_model.h"
#include "query/run_kernels.h"
#include "util/format.h"

namespace lazyscope::gui {

namespace {

// Top-level rows (kernels) carry internal id 0; a node row carries its
// kernel's row + 1, which is how parent() finds the way back.
constexpr quintptr kTopLevel = 0;

bool isNumeric(int column) { return column >= KernelModel::TotalTime && column <= KernelModel::Roofline; }

}  // namespace

QString kernelSourceText(const pb::KernelRow& kernel) {
  std::set<std::pair<std::string, int>> lines;
  for (const pb::KernelNode& n : kernel.nodes()) {
    if (n.source().line() > 0) lines.emplace(n.source().file(), n.source().line());
  }
  if (lines.empty()) return {};
  if (lines.size() == 1) {
    for (const pb::KernelNode& n : kernel.nodes()) {
      if (n.source().line() > 0) return sourceText(n.source());
    }
  }
  return KernelModel::tr("%1 lines").arg(lines.size());
}

KernelModel::KernelModel(QObject* parent) : QAbstractItemModel(parent) {}

KernelModel::~KernelModel() = default;

void KernelModel::setReport(pb::KernelReport report) {
  beginResetModel();
  report_ = std::move(report);
  endResetModel();
}

QModelIndex KernelModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, kTopLevel);
  return createIndex(row, column, static_cast<quintptr>(parent.row()) + 1);
}

QModelIndex KernelModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kTopLevel) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kTopLevel);
}

int KernelModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return report_.kernels_size();
  if (parent.internalId() != kTopLevel || parent.column() != 0) return 0;  // nodes have no children
  return report_.kernels(parent.row()).nodes_size();
}

int KernelModel::columnCount(const QModelIndex&) const { return NUM_COLUMNS; }

QVariant KernelModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const bool top = index.internalId() == kTopLevel;
  const int kernel = top ? index.row() : static_cast<int>(index.internalId() - 1);
  if (role == KernelIndexRole) return kernel;
  if (role == Qt::TextAlignmentRole) {
    return static_cast<int>((isNumeric(index.column()) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  }
  const pb::KernelRow& k = report_.kernels(kernel);
  return top ? kernelData(k, index.column(), role) : nodeData(k.nodes(index.row()), index.column(), role);
}

QVariant KernelModel::kernelData(const pb::KernelRow& k, int column, int role) const {
  const bool rated = report_.has_peaks() && k.roofline_fraction() > 0;
  if (role == SortRole) {
    switch (column) {
      case Kernel: return QString::fromStdString(k.name());
      case TotalTime: return k.total_ms();
      case Share: return k.share();
      case Calls: return QVariant::fromValue<qint64>(k.calls());
      case MeanTime: return k.mean_us();
      case GFlops: return k.gflops();
      case GBps: return k.gbps();
      case Roofline: return k.roofline_fraction();
      case Graph: return QVariant::fromValue<qulonglong>(k.graph_hash());
      case Source: return kernelSourceText(k);
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    if (column == Roofline) {
      if (!report_.has_peaks()) return tr("The run recorded no machine peaks: no roofline.");
      const QString from = k.in_cache() ? tr("from cache: its %1 per call fit the cache triad's %2")
                                              .arg(formatBytes(k.bytes()), formatBytes(report_.peaks().cache_bytes()))
                                        : tr("from memory");
      return k.flops() > 0 ? tr("%1 GFLOP/s of the %2 GFLOP/s attainable at %3 FLOP/byte, %4")
                                 .arg(k.gflops(), 0, 'f', 2)
                                 .arg(k.attainable(), 0, 'f', 1)
                                 .arg(k.intensity(), 0, 'g', 3)
                                 .arg(from)
                           : tr("%1 GB/s of the %2 GB/s the machine streams %3 (no FLOPs)")
                                 .arg(k.gbps(), 0, 'f', 2)
                                 .arg(k.attainable(), 0, 'f', 1)
                                 .arg(from);
    }
    if (column == Kernel && !k.code().empty()) {
      const QString code = QString::fromStdString(k.code());
      if (code.endsWith(QStringLiteral("+tiles"))) {
        return tr("independent kernels in one region (%1): some ran compiled, some on the interpreter's vector "
                  "tiles, their compiled loops not ready yet")
            .arg(code);
      }
      if (code.endsWith(QStringLiteral(" tiles"))) {
        return tr("ran on the interpreter's vector tiles (%1) in its timed calls: its compiled loop was not ready "
                  "yet, or compiling failed")
            .arg(code);
      }
      return tr("ran as %1 code in its timed calls (timings from before its switch to compiled code are dropped)")
          .arg(code);
    }
    if (column == MeanTime) {
      return k.first_call_only() ? tr("timed on the graph's first and only call, which includes one-time set-up "
                                      "(first touch of its memory, code generated per matrix shape)")
                                 : tr("mean of %1 timed calls").arg(k.samples());
    }
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case Kernel: return QString::fromStdString(storage::kernel_display_name(k));
    case TotalTime: return formatStepTime(k.total_ms());
    case Share: return QStringLiteral("%1%").arg(100.0 * k.share(), 0, 'f', 1);
    case Calls: return QVariant::fromValue<qint64>(k.calls());
    case MeanTime:
      return formatStepTime(k.mean_us() / 1000.0) + (k.first_call_only() ? QStringLiteral("*") : QString());
    case GFlops: return k.flops() > 0 ? QString::number(k.gflops(), 'f', 2) : QStringLiteral("–");
    case GBps: return QString::number(k.gbps(), 'f', 2);
    case Roofline:
      return rated ? QStringLiteral("%1%").arg(100.0 * k.roofline_fraction(), 0, 'f', 0) : QStringLiteral("–");
    case Graph: return QStringLiteral("%1").arg(k.graph_hash(), 16, 16, QLatin1Char('0')).left(8);
    case Source: return kernelSourceText(k);
    default: return {};
  }
}

QVariant KernelModel::nodeData(const pb::KernelNode& n, int column, int role) const {
  if (role == Qt::ToolTipRole && column == Source) return QString::fromStdString(n.source().file());
  if (role != Qt::DisplayRole && role != SortRole) return {};
  switch (column) {
    case Kernel:
      return n.op().empty() ? tr("node #%1 (IR not stored)").arg(n.id())
                            : QStringLiteral("%1 #%2").arg(QString::fromStdString(n.op())).arg(n.id());
    case Graph: return QString::fromStdString(n.scope());
    case Source: return sourceText(n.source());
    default: return {};
  }
}

QVariant KernelModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case TotalTime: return tr("Mean time of the timed calls × calls: the kernel's share of the run");
      case Calls: return tr("Executions of the kernel's graph");
      case Roofline:
        return tr(
            "Achieved GFLOP/s over min(peak GFLOP/s, intensity × peak GB/s); GB/s over peak GB/s "
            "for kernels without FLOPs");
      case Graph: return tr("Graph hash (nodes: module scope)");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Kernel: return tr("Kernel / IR node");
    case TotalTime: return tr("Total");
    case Share: return tr("Share");
    case Calls: return tr("Calls");
    case MeanTime: return tr("Mean");
    case GFlops: return tr("GFLOP/s");
    case GBps: return tr("GB/s");
    case Roofline: return tr("Of roof");
    case Graph: return tr("Graph");
    case Source: return tr("Source");
    default: return {};
  }
}

}  // namespace lazyscope::gui
