/* A test whose dependency is missing: tests/checks/skips.sh runs it with and without
 * KBPKG_REQUIRE_DEPS=1 to see kbt_skip_missing skip, or fail as CI needs. */
#include "kbtest.h"

Test(missing_dep, planted)
{
    kbt_skip_missing("planted: %s is not installed", "/nonexistent/kbpkg-planted-tool");
    cr_assert_fail("ran past kbt_skip_missing");
}
