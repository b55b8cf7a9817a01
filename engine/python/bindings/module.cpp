// lazyscope._C: the engine as seen from Python. Tensor bindings live in
// tensor_bindings.cpp; this file holds the runtime surface (devices,
// barriers, metrics, settings) and the exception mapping.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/runtime_bindings.h"
#include "bindings/source_provider.h"
#include "bindings/tensor_bindings.h"
#include "backend/collective.h"
#include "core/error.h"
#include "core/settings.h"
#include "executor/compile_cache.h"
#include "executor/graph_executor.h"
#include "ir/op_table.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"

namespace py = pybind11;
using namespace lazyscope;

PYBIND11_MODULE(_C, m) {
  m.doc() = "LazyScope engine bindings";

  // RuntimeError subclasses, so that code written for PyTorch's errors works.
  static py::exception<EngineError> engine_error(m, "EngineError", PyExc_RuntimeError);
  static py::exception<ShapeError> shape_error(m, "ShapeError", engine_error.ptr());
  static py::exception<DeviceMismatchError> device_error(m, "DeviceMismatchError", engine_error.ptr());
  // Also a Python IndexError, so that `except IndexError` and iteration work.
  static py::exception<IndexError> index_error(
      m, "IndexError", py::make_tuple(engine_error, py::handle(PyExc_IndexError)));
  // Also a Python MemoryError: a tensor too large for the machine.
  static py::exception<OutOfMemoryError> memory_error(
      m, "OutOfMemoryError", py::make_tuple(engine_error, py::handle(PyExc_MemoryError)));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const IndexError& e) {
      PyErr_SetString(index_error.ptr(), e.what());
    } catch (const OutOfMemoryError& e) {
      PyErr_SetString(memory_error.ptr(), e.what());
    } catch (const ShapeError& e) {
      PyErr_SetString(shape_error.ptr(), e.what());
    } catch (const DeviceMismatchError& e) {
      PyErr_SetString(device_error.ptr(), e.what());
    } catch (const EngineError& e) {
      PyErr_SetString(engine_error.ptr(), e.what());
    }
  });

  python::bind_tensor(m);
  python::bind_runtime(m);

  m.def("_install_source_provider", &python::install_source_provider, py::arg("package_dir"));
  m.def("device_count", &lazy_device_count, "Number of lazy devices.");
  m.def("set_device_count", &set_lazy_device_count, py::arg("count"));
  m.def(
      "mark_step",
      [](const std::optional<Device>& device) {
        if (device) {
          if (!device->is_lazy()) return;  // eager devices have nothing pending
          executor::mark_step(*device);
          return;
        }
        for (int i = 0; i < lazy_device_count(); ++i) executor::mark_step({DeviceKind::kLazy, i});
      },
      py::arg("device") = py::none(), "Executes the pending graph of every live tensor and ends the step.");
  // Collectives between replica threads (backend/collective.h).
  // A replica blocked in a collective releases the GIL, so the replicas it
  // waits for can trace and run their step.
  collective::set_blocking_hooks(
      []() -> void* { return Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr; },
      [](void* state) {
        if (state) PyEval_RestoreThread(static_cast<PyThreadState*>(state));
      });
  m.def(
      "all_reduce",
      [](const Tensor& t, const std::string& reduce, double scale, int64_t group) {
        const auto kind = reduce_from_name(reduce);
        if (!kind) {
          throw EngineError("all_reduce: unknown reduce_type '" + reduce + "' (one of " + reduce_names() + ")");
        }
        return ops::all_reduce(t, *kind, scale, group);
      },
      py::arg("input"), py::arg("reduce"), py::arg("scale"), py::arg("group"),
      "Cross-replica reduction traced into the step's graph (lazy_model.all_reduce is the front end).");
  m.def(
      "register_replica_group",
      [](const std::vector<Device>& devices) {
        std::vector<int> ordinals;
        for (const Device& d : devices) {
          if (!d.is_lazy()) throw EngineError("register_replica_group: replicas run on lazy devices, got " + d.str());
          ordinals.push_back(d.ordinal);
        }
        return collective::register_group(ordinals);
      },
      py::arg("devices"), "Registers the replicas' devices (rank order); returns the group key all_reduce names.");
  m.def("unregister_replica_group", &collective::unregister_group, py::arg("group"));
  m.def("abort_replica_group", &collective::abort_group, py::arg("group"), py::arg("reason"),
        "Releases the group's waiting collectives with `reason` (a replica failed).");
  m.def("replica_group_count", &collective::group_count);
  m.def("collective_timeout", &settings::collective_timeout_s);
  m.def("set_collective_timeout", &settings::set_collective_timeout_s, py::arg("seconds"));
  m.def("current_step", [](const Device& d) { return executor::current_step(d); }, py::arg("device"));
  m.def("set_scope", [](const std::optional<std::string>& scope) {
    set_current_scope(scope ? intern(*scope) : nullptr);
  });

  m.def("counters", &metrics::counters, "All counters by name.");
  m.def("metrics", [] {
    py::dict out;
    for (const auto& [name, s] : metrics::metrics()) {
      out[py::str(name)] = py::dict(py::arg("count") = s.count, py::arg("total_ms") = s.total,
                                    py::arg("p50_ms") = s.p50, py::arg("p90_ms") = s.p90, py::arg("p99_ms") = s.p99);
    }
    return out;
  });
  m.def("metrics_report", &metrics::report, "A text report of every non-zero metric and counter.");
  m.def("reset_metrics", &metrics::reset);
  m.def("clear_compile_cache", [] { executor::compile_cache().clear(); });
  m.def("compile_cache_size", [] { return executor::compile_cache().size(); });
  m.def("set_compile_cache_limit", &settings::set_compile_cache_size, py::arg("graphs"));
  m.def("set_graph_node_limit", &settings::set_graph_node_limit, py::arg("nodes"));
  m.def("metric_snapshot_ms", &settings::metric_snapshot_ms);
  m.def("set_metric_snapshot_ms", &settings::set_metric_snapshot_ms, py::arg("ms"));
  // Every IR op's name, in op-table order: tests/python/test_op_coverage.py
  // checks each has an oracle test, so a new op cannot land untested.
  m.def("_op_names", [] {
    std::vector<std::string> names;
    for (int i = 0; i < static_cast<int>(OpKind::kNumOps); ++i) {
      names.emplace_back(op_name(static_cast<OpKind>(i)));
    }
    return names;
  });
}
