"""Runs the Python binding's tests; exits 77 (ctest: skipped) when numpy is absent, or 1 under
KBPKG_REQUIRE_DEPS=1 (.ci/run: in CI a missing dependency fails, tests/support/kbtest.h)."""
import os
import sys
import unittest

try:
    import numpy  # noqa: F401
except ImportError:
    why = f"numpy is not installed for {sys.executable} (apt-get install python3-numpy)"
    if os.environ.get("KBPKG_REQUIRE_DEPS") == "1":
        print("FAIL: KBPKG_REQUIRE_DEPS=1, a dependency is missing:", why)
        sys.exit(1)
    print("skipped:", why)
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py")
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
