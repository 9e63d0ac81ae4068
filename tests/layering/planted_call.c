/* Test only (KBPKG_PLANT_LAYERING_VIOLATION): a core file calling up into the registry, which
 * cmake/modules.txt does not let core use. The layering check must fail the build on it. */
#include "core/internal.h"
#include "kbpkg/registry.h"

void kb_planted_wrong_way_call(kb_registry *r);
void kb_planted_wrong_way_call(kb_registry *r)
{
    kb_registry_free(r);
}
