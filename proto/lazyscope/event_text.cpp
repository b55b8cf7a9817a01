#include "lazyscope/event_text.h"

#include <array>
#include <cctype>

namespace lazyscope::event_text {
namespace {

struct SyncCauseRow {
  pb::SyncCause cause;
  const char* label;
  const char* description;
  bool value_read;
};

constexpr std::array kSyncCauses = {
    SyncCauseRow{pb::SYNC_CAUSE_MARK_STEP, "mark_step", "a barrier (mark_step)", false},
    SyncCauseRow{pb::SYNC_CAUSE_ITEM, "item()", "item()", true},
    SyncCauseRow{pb::SYNC_CAUSE_TO_HOST, "copy to host",
                 "reading a tensor on the host (.cpu(), .numpy(), .tolist(), print)", true},
    SyncCauseRow{pb::SYNC_CAUSE_CONTROL_FLOW, "control flow", "bool() of a tensor in control flow", true},
    SyncCauseRow{pb::SYNC_CAUSE_SAVE, "save", "saving a tensor", true},
    SyncCauseRow{pb::SYNC_CAUSE_FALLBACK, "fallback operands", "moving a fallback op's operands to the host", false},
    SyncCauseRow{pb::SYNC_CAUSE_GRAPH_LIMIT, "graph node limit", "the pending graph reaching the node limit", false},
};

const SyncCauseRow* row_of(pb::SyncCause cause) {
  for (const SyncCauseRow& row : kSyncCauses) {
    if (row.cause == cause) return &row;
  }
  return nullptr;
}

struct ReasonRow {
  pb::CompileReasonKind kind;
  const char* label;
};

constexpr std::array kReasons = {
    ReasonRow{pb::COMPILE_REASON_FIRST_SIGHT, "first sight"},
    ReasonRow{pb::COMPILE_REASON_SHAPE, "shape"},
    ReasonRow{pb::COMPILE_REASON_DTYPE, "dtype"},
    ReasonRow{pb::COMPILE_REASON_STRUCTURE, "structure"},
    ReasonRow{pb::COMPILE_REASON_EVICTED, "evicted"},
};

}  // namespace

std::string sync_cause_name(pb::SyncCause cause) {
  std::string name = pb::SyncCause_IsValid(cause) ? pb::SyncCause_Name(cause) : "SYNC_CAUSE_UNSPECIFIED";
  const std::string prefix = "SYNC_CAUSE_";
  if (name.starts_with(prefix)) name = name.substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string sync_cause_counter(pb::SyncCause cause) { return "SyncCause." + sync_cause_name(cause); }

std::string sync_cause_label(pb::SyncCause cause) {
  const SyncCauseRow* row = row_of(cause);
  return row != nullptr ? row->label : "unknown";
}

std::string sync_cause_description(pb::SyncCause cause) {
  const SyncCauseRow* row = row_of(cause);
  return row != nullptr ? row->description : "an unknown sync";
}

bool is_value_read(pb::SyncCause cause) {
  const SyncCauseRow* row = row_of(cause);
  return row != nullptr && row->value_read;
}

std::string compile_reason_label(pb::CompileReasonKind kind) {
  for (const ReasonRow& row : kReasons) {
    if (row.kind == kind) return row.label;
  }
  return "unknown";
}

bool is_recompile(pb::CompileReasonKind kind) {
  return kind != pb::COMPILE_REASON_FIRST_SIGHT && kind != pb::COMPILE_REASON_UNSPECIFIED;
}

bool is_gauge_metric(const std::string& name) { return name.starts_with("Live"); }

std::string metric_kind_label(const pb::MetricValue& metric) {
  if (!metric.is_counter()) return "timing";
  return is_gauge_metric(metric.name()) ? "gauge" : "counter";
}

}  // namespace lazyscope::event_text
