// kbpkg_kernel_info, once per library (not per precision).
#include "rk_layernorm.h"

extern "C" {
KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CUDA)
}
