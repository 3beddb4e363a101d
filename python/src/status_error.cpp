#include "status_error.hpp"

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "qcoll/qcoll.h"

namespace qcoll::python {

void throw_param_invalid(const std::string& message) { throw StatusError(QCOLL_PARAM_INVALID, message); }

void throw_if_error(const Status& st) {
  if (!st.ok()) throw StatusError(static_cast<int32_t>(st.code), st.message);
}

void throw_if_failed(int32_t status) {
  if (status != QCOLL_SUCCESS) throw StatusError(status, qcollGetRecentErrMsg());
}

void bind_status_error(nb::module_& m) {
  // Translated lazily: the Python side (qcoll.errors) builds the exception object, so the
  // class hierarchy lives in one place.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object make = nb::module_::import_("qcoll.errors").attr("error_from_status");
      nb::object exc = make(e.code(), e.what());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
  m.def(
      "status_name", [](int32_t code) { return std::string(qcollStatusName(code)); }, nb::arg("code"),
      "Name of a status code (\"PARAM_INVALID\", ...).");
}

}  // namespace qcoll::python
