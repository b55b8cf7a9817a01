#include "bindings/source_provider.h"

#include <Python.h>
#include <frameobject.h>

#include "core/source_location.h"

namespace lazyscope::python {
namespace {

std::string* g_package_dir = nullptr;

SourceLocation python_source_location() {
  // Engine work can run on threads that do not hold the GIL (background
  // uploads); they have no Python frame to report.
  if (!Py_IsInitialized() || !PyGILState_Check()) return {};
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  SourceLocation loc;
  while (frame) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const bool inside_package = file && g_package_dir && std::string_view(file).starts_with(*g_package_dir);
    if (file && !inside_package) {
      loc.file = intern(file);
      if (const char* name = PyUnicode_AsUTF8(code->co_qualname)) loc.function = intern(name);
      loc.line = PyFrame_GetLineNumber(frame);
      Py_DECREF(code);
      Py_DECREF(frame);
      return loc;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  PyErr_Clear();
  return loc;
}

}  // namespace

void install_source_provider(const std::string& package_dir) {
  delete g_package_dir;
  g_package_dir = new std::string(package_dir);
  set_source_location_provider(&python_source_location);
}

}  // namespace lazyscope::python
