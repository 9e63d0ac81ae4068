/* Test only: a core file including the registry's internal header, which cmake/modules.txt does
 * not let core use. scripts/check-layering.py must refuse it (tests/layering/run.sh). */
#include "core/internal.h"
#include "registry/registry.h"
