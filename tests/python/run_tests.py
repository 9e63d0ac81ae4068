"""Runs the Python binding's tests; exits 77 (ctest: skipped) when numpy is absent."""
import os
import sys
import unittest

try:
    import numpy  # noqa: F401
except ImportError:
    print("skipped: numpy is not installed for", sys.executable, "(apt-get install python3-numpy)")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
suite = unittest.defaultTestLoader.discover(here, pattern="test_*.py")
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
