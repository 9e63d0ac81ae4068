/* kbpkg_kernel_info in C: a C/C++ mix in one backend. */
#include "rk_act.h"

KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)
