// lazyscope._C: the engine as seen from Python. Tensor bindings live in
// tensor_bindings.cpp; this file holds the runtime surface (devices,
// barriers, metrics, settings) and the exception mapping.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "backend/collective.h"
#include "bindings/arg_errors.h"
#include "bindings/runtime_bindings.h"
#include "bindings/source_provider.h"
#include "bindings/tensor_bindings.h"
#include "core/error.h"
#include "core/settings.h"
#include "core/source_location.h"
#include "distributed/process_group.h"
#include "executor/compile_cache.h"
#include "executor/graph_executor.h"
#include "ir/op_table.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"

namespace py = pybind11;
using namespace lazyscope;

PYBIND11_MODULE(_C, m) {
  m.doc() = "LazyScope engine bindings";
  // The project's version (CMakeLists.txt's project()): lazyscope.__version__.
  m.attr("__version__") = LAZYSCOPE_VERSION;

  // RuntimeError subclasses, so that code written for PyTorch's errors works.
  static py::exception<EngineError> engine_error(m, "EngineError", PyExc_RuntimeError);
  static py::exception<ShapeError> shape_error(m, "ShapeError", engine_error.ptr());
  static py::exception<DeviceMismatchError> device_error(m, "DeviceMismatchError", engine_error.ptr());
  // Also a Python IndexError, so that `except IndexError` and iteration work.
  static py::exception<IndexError> index_error(m, "IndexError",
                                               py::make_tuple(engine_error, py::handle(PyExc_IndexError)));
  // Also a Python MemoryError: a tensor too large for the machine.
  static py::exception<OutOfMemoryError> memory_error(m, "OutOfMemoryError",
                                                      py::make_tuple(engine_error, py::handle(PyExc_MemoryError)));
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
  python::bind_arg_errors(m);
  python::bind_runtime(m);

  m.def("_install_source_provider", &python::install_source_provider, py::arg("package_dir"));
  // " (at file:line)" of the user's current line, as the engine's errors end: for errors raised in Python.
  m.def("_at_user_line", [] {
    const SourceLocation loc = current_source_location();
    return loc.known() ? " (at " + loc.str() + ")" : std::string();
  });
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
  // The process group (distributed/process_group.h): replicas that are
  // worker processes of `lazyscope run --nproc-per-node N`. Every call that
  // may wait for other processes releases the GIL.
  m.def(
      "init_process_group",
      [](int rank, int world_size, const std::string& store_dir, const std::string& prefix, const std::string& hostname,
         double timeout_s) {
        py::gil_scoped_release unlocked;
        distributed::init({rank, world_size, store_dir, prefix, hostname, timeout_s});
      },
      py::arg("rank"), py::arg("world_size"), py::arg("store_dir"), py::arg("prefix"), py::arg("hostname"),
      py::arg("timeout_s"));
  m.def("destroy_process_group", &distributed::destroy);
  m.def("process_group_initialized", &distributed::initialized);
  m.def(
      "process_group_key", [] { return distributed::kProcessGroupKey; },
      "The group key all_reduce names for replicas that are processes.");
  m.def("process_group_rank", &distributed::rank);
  m.def("process_group_world_size", &distributed::world_size);
  m.def("process_group_totals", [] {
    const auto t = distributed::totals();
    return py::dict(py::arg("collectives") = t.collectives, py::arg("bytes_sent") = t.bytes_sent,
                    py::arg("wait_ns") = t.wait_ns);
  });
  m.def("process_barrier", [] {
    py::gil_scoped_release unlocked;
    distributed::barrier("barrier");
  });
  // Gloo aborts the process (an enforce in its I/O thread) when ranks
  // exchange different sizes, so the sizes are compared first.
  const auto same_size_everywhere = [](const std::string& what, size_t size) {
    const int world = distributed::world_size();
    std::vector<uint64_t> sizes(static_cast<size_t>(world));
    const uint64_t mine = size;
    distributed::all_gather(what + " (sizes)", &mine, sizeof mine, sizes.data());
    for (int r = 0; r < world; ++r) {
      if (sizes[static_cast<size_t>(r)] != mine) {
        throw EngineError(what + ": rank " + std::to_string(distributed::rank()) + " brought " + std::to_string(mine) +
                          " bytes and rank " + std::to_string(r) + " " + std::to_string(sizes[static_cast<size_t>(r)]) +
                          "; every rank must bring the same size");
      }
    }
  };
  m.def(
      "process_all_gather_bytes",
      [same_size_everywhere](const py::bytes& data) {
        const std::string in = data;
        std::string out(in.size() * static_cast<size_t>(distributed::world_size()), '\0');
        {
          py::gil_scoped_release unlocked;
          same_size_everywhere("all_gather", in.size());
          distributed::all_gather("all_gather", in.data(), in.size(), out.data());
        }
        return py::bytes(out);
      },
      py::arg("data"), "Every rank's bytes (the same size on every rank), concatenated in rank order.");
  m.def("collective_timeout", &settings::collective_timeout_s);
  m.def("_num_threads", &settings::num_threads, "The engine's thread pool size (LAZYSCOPE_NUM_THREADS).");
  m.def("set_collective_timeout", &settings::set_collective_timeout_s, py::arg("seconds"));
  m.def(
      "current_step", [](const Device& d) { return executor::current_step(d); }, py::arg("device"));
  m.def("set_scope",
        [](const std::optional<std::string>& scope) { set_current_scope(scope ? intern(*scope) : nullptr); });

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
