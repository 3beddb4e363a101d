// The default HiF8 KG target (scale = amax / target). The value comes from the measurement in
// bench/study_hif8_target.cpp; docs/hifloat8-target.md has the table and the reasoning.
#include "qcoll/quant.hpp"

namespace qcoll::quant {

float default_hif8_target() { return 16.0f; }

}  // namespace qcoll::quant
