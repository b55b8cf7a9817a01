#include "bindings/runtime_bindings.h"

#include <google/protobuf/util/json_util.h>
#include <pybind11/stl.h>

#include <memory>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/settings.h"
#include "events/event_bus.h"
#include "executor/graph_executor.h"
#include "lazyscope/ir_format.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"

namespace py = pybind11;

namespace lazyscope::python {
namespace {

std::optional<OpKind> find_op(std::string_view name) {
  for (int i = 0; i < static_cast<int>(OpKind::kNumOps); ++i) {
    const auto op = static_cast<OpKind>(i);
    if (op_name(op) == name) return op;
  }
  return std::nullopt;
}

std::string known_ops() {
  std::string out;
  for (int i = 1; i < static_cast<int>(OpKind::kNumOps); ++i) {  // 0 is the graph input, never an op call
    if (!out.empty()) out += ", ";
    out += op_name(static_cast<OpKind>(i));
  }
  return out;
}

OpKind op_or_throw(const std::string& name, const char* where) {
  const auto op = find_op(name);
  if (!op || *op == OpKind::kDeviceData) {
    throw EngineError(std::string(where) + ": unknown op '" + name + "'; known ops: " + known_ops());
  }
  return *op;
}

// The backend installed by _set_unlowered_ops, kept alive while installed.
std::unique_ptr<RestrictedBackend>& restricted() {
  static auto* b = new std::unique_ptr<RestrictedBackend>();
  return *b;
}

py::dict stats_dict(const metrics::MetricStats& s) {
  return py::dict(py::arg("count") = s.count, py::arg("total_ms") = s.total, py::arg("p50_ms") = s.p50,
                  py::arg("p90_ms") = s.p90, py::arg("p99_ms") = s.p99);
}

// Subscribes while alive and keeps every event as protobuf JSON (field names
// as in the .proto), so that Python tests can check what a subscriber sees.
class EventCapture {
 public:
  void start() {
    if (id_ == 0) id_ = events::subscribe([this](const pb::Event& e) { events_.push_back(e); });
  }
  void stop() {
    if (id_ != 0) events::unsubscribe(id_);
    id_ = 0;
  }
  ~EventCapture() { stop(); }
  std::vector<std::string> json() const {
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    std::vector<std::string> out;
    for (const pb::Event& e : events_) {
      std::string text;
      if (!google::protobuf::util::MessageToJsonString(e, &text, options).ok()) {
        throw EngineError("event capture: could not print an event as JSON");
      }
      out.push_back(std::move(text));
    }
    return out;
  }

 private:
  int id_ = 0;
  std::vector<pb::Event> events_;
};

}  // namespace

void bind_runtime(py::module_& m) {
  py::class_<EventCapture>(m, "_EventCapture", "Test aid: records published events while started.")
      .def(py::init<>())
      .def("start", &EventCapture::start)
      .def("stop", &EventCapture::stop)
      .def("json", &EventCapture::json);

  // CPU fallbacks.
  m.def(
      "set_forced_fallbacks",
      [](const std::vector<std::string>& ops) {
        for (const std::string& name : ops) op_or_throw(name, "set_forced_fallbacks");
        settings::set_forced_fallbacks(ops);
      },
      py::arg("ops"), "Ops that run on the host even where the device lowers them (LAZYSCOPE_FORCE_FALLBACK).");
  m.def("forced_fallbacks", &settings::forced_fallbacks);
  m.def(
      "_set_unlowered_ops",
      [](const std::vector<std::pair<std::string, std::optional<DType>>>& refused) {
        // Test hook: the lazy devices' backend stops declaring these (op, dtype)
        // pairs (dtype None: every dtype), as a backend that lowers less would.
        std::vector<RestrictedBackend::Refusal> refusals;
        for (const auto& [name, dtype] : refused) refusals.push_back({op_or_throw(name, "_set_unlowered_ops"), dtype});
        set_default_backend(nullptr);
        restricted().reset();
        if (refusals.empty()) return;
        restricted() = std::make_unique<RestrictedBackend>(default_backend(), std::move(refusals));
        set_default_backend(restricted().get());
      },
      py::arg("refused"));
  m.def(
      "backend_lowers",
      [](const std::string& op, DType dtype) {
        return default_backend().lowers(op_or_throw(op, "backend_lowers"), dtype);
      },
      py::arg("op"), py::arg("dtype"));

  // bf16 mode.
  m.def("set_bf16_mode", &settings::set_bf16_mode, py::arg("enabled"),
        "Store float32/float64 lazy tensors as bfloat16 on the device (LAZYSCOPE_USE_BF16).");
  m.def("bf16_mode", &settings::bf16_mode);
  m.def("set_gemm_parts_per_thread", &cpu::set_gemm_parts_per_thread, py::arg("parts"),
        "Split each thread's share of a matrix product into this many parts (LAZYSCOPE_GEMM_PARTS_PER_THREAD); "
        "returns the previous value.");
  m.def(
      "set_gemm_split",
      [](const std::string& mode) {
        return cpu::gemm_split_name(cpu::set_gemm_split(cpu::gemm_split_from_name(mode)));
      },
      py::arg("mode"),
      "How one matrix product is shared by the threads (LAZYSCOPE_GEMM_SPLIT): auto, rows, columns, blas "
      "(OpenBLAS's threads) or legacy; returns the previous mode.");
  m.def("set_buffer_donation", &settings::set_buffer_donation, py::arg("enabled"),
        "Let an output take the buffer of a parameter whose value dies with the step (LAZYSCOPE_BUFFER_DONATION).");
  m.def("set_reuse_ir_nodes", &settings::set_reuse_ir_nodes, py::arg("enabled"),
        "Let an op traced like the previous step's op at its place take that step's IR node (LAZYSCOPE_REUSE_IR).");

  // Scalar logging and metric snapshots.
  m.def(
      "log_scalar",
      [](const std::string& name, const py::object& value) {
        if (py::isinstance<Tensor>(value)) {
          executor::log_scalar(name, value.cast<Tensor>());
        } else if (py::isinstance<py::bool_>(value) ||
                   !(py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value) ||
                     py::hasattr(value, "__float__"))) {
          throw py::type_error("log('" + name + "'): expected a number or a one-element tensor, got " +
                               py::str(py::type::of(value)).cast<std::string>());
        } else {
          executor::publish_scalar(Device{DeviceKind::kLazy, 0}, name, value.attr("__float__")().cast<double>());
        }
      },
      py::arg("name"), py::arg("value"));
  m.def(
      "publish_metric_snapshot",
      [] {
        executor::publish_metric_snapshot(Device{DeviceKind::kLazy, 0}, false);
      },
      "Publishes every counter and metric as a MetricSnapshotEvent (a flush at exit).");

  // The metrics API (lazyscope.debug.metrics wraps these).
  m.def("clear_counters", &metrics::reset_counters);
  m.def("clear_metrics", &metrics::reset_metrics);
  m.def("short_metrics_report", &metrics::short_report);
  m.def(
      "metric_data",
      [](const std::string& name) -> py::object {
        const auto all = metrics::metrics();
        const auto it = all.find(name);
        if (it == all.end()) return py::none();
        return stats_dict(it->second);
      },
      py::arg("name"));

  // Where the last sync of a lazy device spent its time (benchmarks/step_overhead.py).
  m.def(
      "_last_sync_profile",
      [](const Device& device, bool with_kernels) {
        const executor::SyncProfile p = executor::last_sync_profile(device, with_kernels);
        py::dict d;
        d["collect_ns"] = p.collect_ns;
        d["lower_ns"] = p.lower_ns;
        d["lookup_ns"] = p.lookup_ns;
        d["compile_ns"] = p.compile_ns;
        d["bind_inputs_ns"] = p.bind_inputs_ns;
        d["execute_ns"] = p.execute_ns;
        d["kernel_total_ns"] = p.kernel_total_ns;
        d["kernel_samples"] = p.kernel_samples;
        d["bind_outputs_ns"] = p.bind_outputs_ns;
        d["publish_ns"] = p.publish_ns;
        d["total_ns"] = p.total_ns;
        d["nodes"] = p.nodes;
        d["cache_hit"] = p.cache_hit;
        return d;
      },
      py::arg("device"), py::arg("with_kernels") = true);

  // Graph dumps: the graph the next sync of `tensors` would run.
  m.def(
      "dump_graph",
      [](const std::vector<Tensor>& tensors, const std::string& format) -> py::object {
        if (format != "text" && format != "dot" && format != "proto") {
          throw py::value_error("dump_graph: format must be 'text', 'dot' or 'proto', got '" + format + "'");
        }
        if (tensors.empty()) throw py::value_error("dump_graph: expected at least one tensor");
        std::vector<std::shared_ptr<TensorImpl>> targets;
        for (size_t i = 0; i < tensors.size(); ++i) {
          if (!tensors[i].device().is_lazy() || tensors[i].device() != tensors[0].device()) {
            throw EngineError("dump_graph: tensor " + std::to_string(i) + " is on " + tensors[i].device().str() +
                              "; every tensor must be on one lazy device (" + tensors[0].device().str() + ")");
          }
          targets.push_back(tensors[i].impl());
        }
        const pb::IrGraph graph = executor::pending_graph(tensors[0].device(), targets);
        if (format == "text") return py::str(ir_format::text(graph));
        if (format == "dot") return py::str(ir_format::dot(graph));
        return py::bytes(graph.SerializeAsString());
      },
      py::arg("tensors"), py::arg("format") = "text");
  m.def("_graph_proto_to_text", [](const py::bytes& data) {
    // Test aid: parses protobuf bytes back into an IrGraph and lists it.
    pb::IrGraph graph;
    if (!graph.ParseFromString(std::string(data))) throw EngineError("not a serialized IrGraph");
    return ir_format::text(graph);
  });

  // Data-dependent ops.
  const auto nonzero = [](const Tensor& t, bool as_tuple) -> py::object {
    if (as_tuple) return py::tuple(py::cast(ops::nonzero_tuple(t)));
    return py::cast(ops::nonzero(t));
  };
  m.def("nonzero", nonzero, py::arg("input"), py::kw_only(), py::arg("as_tuple") = false);
  m.def("masked_select", &ops::masked_select, py::arg("input"), py::arg("mask"));
  m.def("_boolean_mask_index", &ops::boolean_mask_index, py::arg("input"), py::arg("mask"));
  const auto unique = [](const Tensor& t, bool /*sorted: always sorted, as PyTorch's CPU kernel*/, bool return_inverse,
                         bool return_counts, const py::object& dim) -> py::object {
    if (!dim.is_none()) throw EngineError("unique: dim= is not supported; unique over all elements only");
    const ops::UniqueResult r = ops::unique(t);
    if (!return_inverse && !return_counts) return py::cast(r.values);
    py::list out;
    out.append(r.values);
    if (return_inverse) out.append(r.inverse);
    if (return_counts) out.append(r.counts);
    return py::tuple(out);
  };
  m.def("unique", unique, py::arg("input"), py::arg("sorted") = true, py::arg("return_inverse") = false,
        py::arg("return_counts") = false, py::arg("dim") = py::none());
  auto tensor = py::reinterpret_borrow<py::object>(m.attr("Tensor"));
  py::setattr(tensor, "nonzero",
              py::cpp_function([nonzero](const Tensor& t, bool as_tuple) { return nonzero(t, as_tuple); },
                               py::is_method(tensor), py::arg("as_tuple") = false));
  py::setattr(tensor, "masked_select", py::cpp_function(&ops::masked_select, py::is_method(tensor), py::arg("mask")));
  py::setattr(tensor, "unique",
              py::cpp_function(
                  [unique](const Tensor& t, bool sorted, bool return_inverse, bool return_counts,
                           const py::object& dim) { return unique(t, sorted, return_inverse, return_counts, dim); },
                  py::is_method(tensor), py::arg("sorted") = true, py::arg("return_inverse") = false,
                  py::arg("return_counts") = false, py::arg("dim") = py::none()));
}

}  // namespace lazyscope::python
