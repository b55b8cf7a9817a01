// pybind11's conversion of lazyscope::Tensor, with Tensor's type record
// looked up once. pybind11's generic caster finds the record on every
// conversion by hashing the C++ type's name (type_index), and a traced op
// converts twice (its operand in, its result out): ~500 of the ~7,000
// instructions an op costs from Python (callgrind). Otherwise it is
// type_caster_base's behaviour: the same policies, the same instances.
//
// Every translation unit of the extension that converts a Tensor must see
// this specialization before its first use: the bindings' headers include it.
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

#include "tensor/tensor.h"

namespace lazyscope::python {

// Null until the Tensor class is registered (then found once and kept).
inline const pybind11::detail::type_info* tensor_type_info() {
  static const pybind11::detail::type_info* found = nullptr;  // written with the GIL held
  if (!found) found = pybind11::detail::get_type_info(typeid(Tensor));
  return found;
}

}  // namespace lazyscope::python

namespace pybind11::detail {

template <> class type_caster<lazyscope::Tensor> : public type_caster_generic {
  using itype = lazyscope::Tensor;

 public:
  static constexpr auto name = const_name<itype>();

  type_caster() : type_caster_generic(lazyscope::python::tensor_type_info()) {}

  // Anything but a Tensor (or None, the generic path's business) fails at
  // once. The generic load, failing, looks for a foreign module's type
  // record first (a getattr that raises and formats an AttributeError): 40%
  // of tracing `t * 0.9` went there, and every overload tried with a
  // number where a Tensor is declared. No implicit conversion to Tensor is
  // registered, so this refuses nothing the generic load accepts.
  bool load(handle src, bool convert) {
    if (src && !src.is_none() && typeinfo && !PyObject_TypeCheck(src.ptr(), typeinfo->type)) return false;
    return type_caster_generic::load(src, convert);
  }

  static handle cast(const itype& src, return_value_policy policy, handle parent) {
    if (policy == return_value_policy::automatic || policy == return_value_policy::automatic_reference) {
      policy = return_value_policy::copy;
    }
    return cast(&src, policy, parent);
  }
  static handle cast(itype&& src, return_value_policy, handle parent) {
    return cast(&src, return_value_policy::move, parent);
  }
  static handle cast(const itype* src, return_value_policy policy, handle parent) {
    return type_caster_generic::cast(src, policy, parent, lazyscope::python::tensor_type_info(), &copy_construct,
                                     &move_construct);
  }

  template <typename T> using cast_op_type = detail::cast_op_type<T>;
  // NOLINTNEXTLINE(google-explicit-constructor): pybind11's caster protocol
  operator itype*() { return static_cast<itype*>(value); }
  // NOLINTNEXTLINE(google-explicit-constructor)
  operator itype&() {
    if (!value) throw reference_cast_error();
    return *static_cast<itype*>(value);
  }

 private:
  static void* copy_construct(const void* p) { return new itype(*static_cast<const itype*>(p)); }
  static void* move_construct(const void* p) {
    return new itype(std::move(*const_cast<itype*>(static_cast<const itype*>(p))));
  }
};

}  // namespace pybind11::detail
