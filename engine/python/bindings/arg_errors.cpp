#include "bindings/arg_errors.h"

#include <Python.h>
#include <structmember.h>

#include <cstring>

namespace lazyscope::python {
namespace {

struct CleanCall {
  PyObject_HEAD PyObject* fn;
  PyObject* name;
  PyObject* formatter;
  int method;
  vectorcallfunc vectorcall;
};

bool is_argument_error(PyObject* value) {
  PyObject* text = PyObject_Str(value);
  if (!text) {
    PyErr_Clear();
    return false;
  }
  const char* s = PyUnicode_AsUTF8(text);
  const bool hit = s && (std::strstr(s, "incompatible function arguments") ||
                         std::strstr(s, "Unable to cast Python instance"));
  Py_DECREF(text);
  if (!s) PyErr_Clear();
  return hit;
}

// On pybind11's argument error, replaces it with the formatter's exception.
PyObject* translate(CleanCall* self, PyObject* const* args, size_t nargs, PyObject* kwnames) {
  if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_RuntimeError)) return nullptr;
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  if (!value || !is_argument_error(value)) {
    PyErr_Restore(type, value, trace);
    return nullptr;
  }
  PyObject* positional = PyTuple_New(static_cast<Py_ssize_t>(nargs));
  PyObject* keywords = PyDict_New();
  if (positional && keywords) {
    for (size_t i = 0; i < nargs; ++i) {
      Py_INCREF(args[i]);
      PyTuple_SET_ITEM(positional, static_cast<Py_ssize_t>(i), args[i]);
    }
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; ++i) PyDict_SetItem(keywords, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]);
    PyObject* text = PyObject_Str(value);
    PyObject* error = text ? PyObject_CallFunctionObjArgs(self->formatter, self->name, self->fn,
                                                          self->method ? Py_True : Py_False, positional, keywords, text,
                                                          nullptr)
                           : nullptr;
    Py_XDECREF(text);
    if (error) {
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error)), error);
      Py_DECREF(error);
    }
  }
  Py_XDECREF(positional);
  Py_XDECREF(keywords);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "invalid arguments");
  return nullptr;
}

PyObject* clean_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<CleanCall*>(callable);
  PyObject* result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
  if (result) return result;
  return translate(self, args, PyVectorcall_NARGS(nargsf), kwnames);
}

// Methods bind like functions: obj.name is a bound method passing obj first.
PyObject* clean_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

void clean_dealloc(PyObject* o) {
  auto* self = reinterpret_cast<CleanCall*>(o);
  PyObject_GC_UnTrack(o);
  Py_CLEAR(self->fn);
  Py_CLEAR(self->name);
  Py_CLEAR(self->formatter);
  PyTypeObject* type = Py_TYPE(o);
  type->tp_free(o);
  Py_DECREF(type);
}

int clean_traverse(PyObject* o, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<CleanCall*>(o);
  Py_VISIT(self->fn);
  Py_VISIT(self->formatter);
  Py_VISIT(Py_TYPE(o));
  return 0;
}

PyObject* clean_get_doc(PyObject* o, void*) {
  return PyObject_GetAttrString(reinterpret_cast<CleanCall*>(o)->fn, "__doc__");
}
PyObject* clean_get_wrapped(PyObject* o, void*) {
  PyObject* fn = reinterpret_cast<CleanCall*>(o)->fn;
  Py_INCREF(fn);
  return fn;
}
PyObject* clean_get_name(PyObject* o, void*) {
  PyObject* name = reinterpret_cast<CleanCall*>(o)->name;
  Py_INCREF(name);
  return name;
}

PyGetSetDef clean_getset[] = {
    {"__doc__", clean_get_doc, nullptr, nullptr, nullptr},
    {"__wrapped_binding__", clean_get_wrapped, nullptr, nullptr, nullptr},
    {"__name__", clean_get_name, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef clean_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(CleanCall, vectorcall)), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

// Functions: called as they are, also when stored on a class.
PyType_Slot function_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(clean_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(clean_traverse)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_getset, clean_getset},
    {Py_tp_members, clean_members},
    {0, nullptr},
};

// Methods: a descriptor, and METHOD_DESCRIPTOR lets obj.name(...) call with obj
// first without making a bound method.
PyType_Slot method_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(clean_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(clean_traverse)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(clean_descr_get)},
    {Py_tp_getset, clean_getset},
    {Py_tp_members, clean_members},
    {0, nullptr},
};

PyType_Spec function_spec = {"lazyscope._C.CleanFunction", sizeof(CleanCall), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, function_slots};
PyType_Spec method_spec = {
    "lazyscope._C.CleanMethod", sizeof(CleanCall), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR, method_slots};

}  // namespace

void bind_arg_errors(pybind11::module_& m) {
  PyObject* function_type = PyType_FromSpec(&function_spec);
  if (!function_type) throw pybind11::error_already_set();
  PyObject* method_type = PyType_FromSpec(&method_spec);
  if (!method_type) throw pybind11::error_already_set();
  m.add_object("CleanFunction", pybind11::reinterpret_steal<pybind11::object>(function_type));
  m.add_object("CleanMethod", pybind11::reinterpret_steal<pybind11::object>(method_type));
  m.def(
      "_clean_errors",
      [function_type, method_type](pybind11::object fn, pybind11::str name, bool method, pybind11::object formatter) {
        // PyObject_GC_New takes the reference to the (heap) type that dealloc gives back.
        auto* self = PyObject_GC_New(CleanCall, reinterpret_cast<PyTypeObject*>(method ? method_type : function_type));
        if (!self) throw pybind11::error_already_set();
        self->fn = fn.release().ptr();
        self->name = name.release().ptr();
        self->formatter = formatter.release().ptr();
        self->method = method ? 1 : 0;
        self->vectorcall = clean_vectorcall;
        PyObject_GC_Track(reinterpret_cast<PyObject*>(self));
        return pybind11::reinterpret_steal<pybind11::object>(reinterpret_cast<PyObject*>(self));
      },
      pybind11::arg("fn"), pybind11::arg("name"), pybind11::arg("method"), pybind11::arg("formatter"));
}

}  // namespace lazyscope::python
