"""kbpkg's Python binding against the built libkbpkg: publish a CPU artifact into a temporary
layout registry, install it into a temporary cache through kbpkg.load, call its exports on
numpy arrays and compare with numpy; errors carry libkbpkg's message and code."""
import ctypes
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

import kbpkg

KBPKG = os.environ.get("KBPKG_BIN", "kbpkg")
FIXTURE = os.environ.get("KB_PUBLISH_FIXTURE")
SOURCE = os.environ.get("KB_SOURCE_DIR", "")
GEMM_DIR = os.path.join(SOURCE, "kernels", "radeonflow", "gemm")


def run(*args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"{args} failed ({p.returncode}): {p.stdout}{p.stderr}")
    return p.stdout


class Hub:
    """A temporary registry, cache and config folder; packages published into it."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="kbpkg-py-")
        self.registry = os.path.join(self.dir, "hub")
        self.settings = {"registry": self.registry, "cache.dir": os.path.join(self.dir, "cache"),
                         "config.dir": os.path.join(self.dir, "config"),
                         "probe.devices": "none"}

    def publish(self, pkgdir):
        return run(FIXTURE, pkgdir, self.registry, os.path.join(self.dir, "dist")).split()

    def new_package(self, name):
        pkgdir = os.path.join(self.dir, name.replace("/", "-"))
        run(KBPKG, "new", name, pkgdir)
        return pkgdir

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


@unittest.skipUnless(FIXTURE, "KB_PUBLISH_FIXTURE is not set (run through ctest)")
class ScaffoldedPackage(unittest.TestCase):
    """A package from `kbpkg new`: vadd_add_f32(out, a, b, long n, stream)."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Hub()
        cls.name, cls.version = cls.hub.publish(cls.hub.new_package("kbtest/vadd"))

    @classmethod
    def tearDownClass(cls):
        cls.hub.close()

    def test_load_installs_and_reports_target(self):
        with kbpkg.load("kbtest/vadd", settings=self.hub.settings) as k:
            self.assertEqual(k.name, "kbtest/vadd")
            self.assertEqual(k.version, self.version)
            self.assertTrue(k.target.startswith("cpu-"), k.target)
            self.assertTrue(os.path.isdir(k.path), k.path)
            self.assertTrue(k.path.startswith(self.hub.settings["cache.dir"]), k.path)

    def test_user_signature_on_numpy_arrays(self):
        k = kbpkg.load("kbtest/vadd", settings=self.hub.settings)
        f = k.fn("vadd_add_f32", ctypes.c_int, [kbpkg.Ptr, kbpkg.Ptr, kbpkg.Ptr, ctypes.c_long,
                                                 kbpkg.Ptr])
        rng = np.random.default_rng(7)
        a = rng.standard_normal(1000, dtype=np.float32)
        b = rng.standard_normal(1000, dtype=np.float32)
        out = np.zeros_like(a)
        self.assertEqual(f(out, a, b, a.size, None), 0)
        np.testing.assert_array_equal(out, a + b)
        k.close()

    def test_unknown_export_raises_with_the_name(self):
        k = kbpkg.load("kbtest/vadd", settings=self.hub.settings)
        with self.assertRaises(kbpkg.Error) as e:
            k.rf_gemm_f32
        self.assertEqual(e.exception.code, -5)
        self.assertIn("does not export 'rf_gemm_f32'", str(e.exception))
        with self.assertRaises(kbpkg.Error) as e:
            k.vadd_add_f32  # exported, but its kernel.yaml declares no signature
        self.assertIn("declares no signature for export 'vadd_add_f32'", str(e.exception))
        self.assertIn("k.fn('vadd_add_f32'", str(e.exception))
        k.close()

    def test_installed_only_load_fails_without_install(self):
        settings = dict(self.hub.settings, **{"cache.dir": os.path.join(self.hub.dir, "empty")})
        with self.assertRaises(kbpkg.Error) as e:
            kbpkg.load("kbtest/vadd", install=False, settings=settings)
        self.assertEqual(e.exception.code, -5)
        self.assertIn("kbtest/vadd", e.exception.message)

    def test_missing_package_raises_the_ctx_message(self):
        with self.assertRaises(kbpkg.Error) as e:
            kbpkg.load("kbtest/nosuch", settings=self.hub.settings)
        self.assertLess(e.exception.code, 0)
        self.assertIn("kbtest/nosuch", e.exception.message)

    def test_bad_reference_and_bad_setting(self):
        with self.assertRaises(kbpkg.Error) as e:
            kbpkg.load("not a ref!", settings=self.hub.settings)
        self.assertIn("not a ref!", e.exception.message)
        with self.assertRaises(kbpkg.Error) as e:
            kbpkg.load("kbtest/vadd", settings={"no.such.key": "1"})
        self.assertEqual(e.exception.code, -27)
        self.assertIn("no.such.key", e.exception.message)


@unittest.skipUnless(FIXTURE and os.path.isfile(os.path.join(GEMM_DIR, "kernel.yaml")),
                     "kernels/radeonflow/gemm is not in this source tree")
class FirstPartyGemm(unittest.TestCase):
    """radeonflow/gemm's CPU artifact through the signatures its kernel.yaml declares."""

    @classmethod
    def setUpClass(cls):
        cls.hub = Hub()
        cls.hub.publish(GEMM_DIR)

    @classmethod
    def tearDownClass(cls):
        cls.hub.close()

    def test_rf_gemm_f32_matches_numpy(self):
        with kbpkg.load("radeonflow/gemm", settings=self.hub.settings) as k:
            self.assertTrue(k.target.startswith("cpu-"), k.target)
            rng = np.random.default_rng(3)
            M, N, K = 37, 29, 53
            a = rng.standard_normal((M, K), dtype=np.float32)
            b = rng.standard_normal((K, N), dtype=np.float32)
            c = rng.standard_normal((M, N), dtype=np.float32)
            expect = 1.5 * (a @ b) + 0.5 * c
            k.rf_gemm_f32(M, N, K, 1.5, a, K, b, N, 0.5, c, N, None)
            np.testing.assert_allclose(c, expect, rtol=1e-4, atol=1e-4)

    def test_bad_arguments_raise_kernel_error(self):
        with kbpkg.load("radeonflow/gemm", settings=self.hub.settings) as k:
            a = np.zeros((4, 4), dtype=np.float32)
            with self.assertRaises(kbpkg.KernelError) as e:  # lda < K, with a buffer that fits
                k.rf_gemm_f32(4, 4, 4, 1.0, a[:2], 2, a, 4, 0.0, a, 4, None)
            self.assertIn("rf_gemm_f32 returned -1", str(e.exception))


class NoLibrary(unittest.TestCase):
    def test_version_matches_the_library(self):
        self.assertRegex(kbpkg.version(), r"^\d+\.\d+\.\d+$")


if __name__ == "__main__":
    unittest.main()
