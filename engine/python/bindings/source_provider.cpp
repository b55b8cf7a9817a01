#include "bindings/source_provider.h"

#include <Python.h>
#include <frameobject.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "core/source_location.h"

namespace lazyscope::python {
namespace {

std::string* g_package_dir = nullptr;

// What a code object says about every op traced from it, computed once per
// code object: its interned file and function, and whether it is the
// package's own code (skipped: the user's line is wanted). Each op used to
// intern both names again (a string built and hashed under a lock) and
// test the file's prefix. The map holds a reference to each code object, so
// a code object's address is never reused while it is a key; code objects
// are few (the program's functions), so none is ever evicted.
struct CodeInfo {
  const std::string* file = nullptr;  // null: no file name
  const std::string* function = nullptr;
  bool inside_package = false;
};

auto* g_codes = new std::unordered_map<PyCodeObject*, CodeInfo>();

CodeInfo& code_info(PyCodeObject* code) {
  auto [it, inserted] = g_codes->try_emplace(code);
  if (inserted) {
    Py_INCREF(code);
    CodeInfo& info = it->second;
    if (const char* file = PyUnicode_AsUTF8(code->co_filename)) {
      info.file = intern(file);
      info.inside_package = g_package_dir && std::string_view(file).starts_with(*g_package_dir);
    } else {
      PyErr_Clear();
    }
    if (const char* name = PyUnicode_AsUTF8(code->co_qualname)) {
      info.function = intern(name);
    } else {
      PyErr_Clear();
    }
  }
  return it->second;
}

// The line of an instruction: a small direct-mapped cache over (code object,
// instruction offset), since PyFrame_GetLineNumber decodes the code's line
// table from its start on every call. A slot's code object is alive: it is a
// key of code_info()'s map, which never lets one go.
struct LineSlot {
  PyCodeObject* code = nullptr;
  int lasti = -1;
  int line = 0;
};
std::array<LineSlot, 4096> g_lines;

int line_of(PyFrameObject* frame, PyCodeObject* code) {
  auto& slots = g_lines;
  const int lasti = PyFrame_GetLasti(frame);
  const auto key = (reinterpret_cast<uintptr_t>(code) >> 4) * 0x9E3779B97F4A7C15ULL ^ static_cast<uintptr_t>(lasti);
  LineSlot& slot = slots[(key ^ (key >> 29)) & (slots.size() - 1)];
  if (slot.code != code || slot.lasti != lasti) slot = {code, lasti, PyFrame_GetLineNumber(frame)};
  return slot.line;
}

SourceLocation python_source_location() {
  // Engine work can run on threads that do not hold the GIL (background
  // uploads); they have no Python frame to report. The caches above are
  // only touched with the GIL held.
  if (!Py_IsInitialized() || !PyGILState_Check()) return {};
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  SourceLocation loc;
  while (frame) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    const CodeInfo& info = code_info(code);
    if (info.file && !info.inside_package) {
      loc.file = info.file;
      loc.function = info.function;
      loc.line = line_of(frame, code);
      Py_DECREF(code);
      Py_DECREF(frame);
      return loc;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  return loc;
}

}  // namespace

void install_source_provider(const std::string& package_dir) {
  delete g_package_dir;
  g_package_dir = new std::string(package_dir);
  // What is inside the package may have changed: forget every code object.
  g_lines.fill({});
  for (const auto& entry : *g_codes) Py_DECREF(entry.first);
  g_codes->clear();
  set_source_location_provider(&python_source_location);
}

}  // namespace lazyscope::python
