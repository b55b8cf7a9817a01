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
#include "core/error.h"
#include "core/settings.h"
#include "executor/compile_cache.h"
#include "executor/graph_executor.h"
#include "ir/op_table.h"
#include "metrics/metrics.h"

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
