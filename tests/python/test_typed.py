"""Typed exports through kbpkg.load: every first-party export called on numpy arrays from the
signatures its kernel.yaml declares (no Python signature table), argument errors naming the
argument and the expectation, __dlpack__ objects, and a third-party package with no Python
written for it."""
import os
import re
import unittest

import numpy as np

import kbpkg
from test_binding import FIXTURE, GEMM_DIR, SOURCE, Hub

RMS_DIR = os.path.join(SOURCE, "kernels", "kbpkg-community", "rmsnorm")
ACT_DIR = os.path.join(SOURCE, "kernels", "kbpkg-community", "activation")
HAVE_KERNELS = FIXTURE and all(os.path.isfile(os.path.join(d, "kernel.yaml"))
                               for d in (GEMM_DIR, RMS_DIR, ACT_DIR))


def bf16(a):
    """float32 -> bf16 bits (round to nearest even) as uint16, and back to float32."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bits


def from_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


# Per element type: numpy array in, float32 view out, tolerance.
CODECS = {
    "f32": (lambda a: a.astype(np.float32), lambda a: a, 1e-5),
    "f16": (lambda a: a.astype(np.float16).view(np.uint16).view(np.float16),
            lambda a: a.astype(np.float32), 2e-3),
    "bf16": (bf16, from_bf16, 1.5e-2),
}


def silu(g):
    return g / (1 + np.exp(-g))


def gelu(g):
    from math import erf

    return 0.5 * g * (1 + np.vectorize(erf)(g / np.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


class DLPackOnly:
    """An array seen only through the DLPack protocol (as CuPy or JAX arrays are)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


@unittest.skipUnless(HAVE_KERNELS, "the first-party kernels are not in this source tree")
class FirstPartyTyped(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hub = Hub()
        for d in (GEMM_DIR, RMS_DIR, ACT_DIR):
            cls.hub.publish(d)
        cls.k = {name: kbpkg.load(name, settings=cls.hub.settings)
                 for name in ("radeonflow/gemm", "kbpkg-community/rmsnorm",
                              "kbpkg-community/activation")}

    @classmethod
    def tearDownClass(cls):
        for k in cls.k.values():
            k.close()
        cls.hub.close()

    def setUp(self):
        self.rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))

    def rel(self, got, ref):
        return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))

    def test_every_first_party_export_is_declared(self):
        for k in self.k.values():
            exported = set(k.signatures)
            self.assertTrue(exported, k.name)
            for name, sig in k.signatures.items():
                self.assertEqual(sig.returns, "status", name)
                self.assertEqual(sig.args[-1].type, "stream", name)
        self.assertEqual(len(self.k["kbpkg-community/activation"].signatures), 9)
        self.assertEqual(repr(self.k["kbpkg-community/rmsnorm"].signatures["rmsnorm_bf16"]),
                         "rmsnorm_bf16(out: out bf16[n, d], x: in bf16[n, d], weight: in "
                         "bf16[d], n: i64, d: i64, eps: f32, stream) -> status")

    def test_info_and_hub_page_show_the_signatures(self):
        import json
        import subprocess

        env = dict(os.environ, KBPKG_REGISTRY=self.hub.registry,
                   KBPKG_CACHE=self.hub.settings["cache.dir"],
                   KBPKG_CONFIG_DIR=self.hub.settings["config.dir"])
        kbpkg_bin = os.environ.get("KBPKG_BIN", "kbpkg")
        line = ("rmsnorm_f16(out: out f16[n, d], x: in f16[n, d], weight: in f16[d], n: i64, "
                "d: i64, eps: f32, stream) -> status")
        out = subprocess.run([kbpkg_bin, "info", "kbpkg-community/rmsnorm"], env=env,
                             capture_output=True, text=True, check=True).stdout
        self.assertIn("exports:\n  rmsnorm_bf16(", out)
        self.assertIn("  " + line + "\n", out)
        out = subprocess.run([kbpkg_bin, "info", "radeonflow/gemm", "--json"], env=env,
                             capture_output=True, text=True, check=True).stdout
        sig = json.loads(out)["signatures"]["rf_gemm_f32"]
        self.assertEqual(sig["args"][4], {"name": "A", "type": "f32", "dir": "in",
                                          "shape": ["M", "lda"]})
        site = os.path.join(self.hub.dir, "site")
        subprocess.run([kbpkg_bin, "hub", "render", "--out", site], env=env, check=True,
                       capture_output=True)
        with open(os.path.join(site, "kbpkg-community", "rmsnorm.html")) as f:
            self.assertIn(f"<li><code>{line.replace('>', '&gt;')}</code></li>", f.read())

    def test_gemm_every_dtype(self):
        k = self.k["radeonflow/gemm"]
        M, N, K = 19, 11, 23
        for dt, (enc, dec, tol) in CODECS.items():
            a, b = self.rng.standard_normal((M, K)), self.rng.standard_normal((K, N))
            c = enc(self.rng.standard_normal((M, N)))
            ref = 1.5 * (dec(enc(a)).astype(np.float64) @ dec(enc(b))) + 0.5 * dec(c)
            getattr(k, f"rf_gemm_{dt}")(M, N, K, 1.5, enc(a), K, enc(b), N, 0.5, c, N, None)
            self.assertLess(self.rel(dec(c), ref), tol, dt)

    def test_rmsnorm_every_dtype(self):
        k = self.k["kbpkg-community/rmsnorm"]
        n, d = 6, 64
        for dt, (enc, dec, tol) in CODECS.items():
            x, w = enc(3 * self.rng.standard_normal((n, d))), enc(self.rng.standard_normal(d))
            x64 = dec(x).astype(np.float64)
            ref = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-6) * dec(w)
            out = np.empty_like(x)
            getattr(k, f"rmsnorm_{dt}")(out, x, w, n, d, 1e-6)  # the stream may be left out
            self.assertLess(self.rel(dec(out), ref), tol, dt)

    def test_activations_every_dtype(self):
        k = self.k["kbpkg-community/activation"]
        n, d = 5, 32
        for op, gated, f in (("silu_and_mul", True, silu), ("gelu_and_mul", True, gelu),
                             ("gelu_tanh", False, gelu_tanh)):
            for dt, (enc, dec, tol) in CODECS.items():
                x = enc(2 * self.rng.standard_normal((n, 2 * d if gated else d)))
                x64 = dec(x).astype(np.float64)
                ref = f(x64[:, :d]) * x64[:, d:] if gated else f(x64)
                out = enc(np.zeros((n, d)))
                getattr(k, f"act_{op}_{dt}")(out, x, n, d, None)
                self.assertLess(self.rel(dec(out), ref), max(tol, 1e-4), f"{op} {dt}")

    def test_argument_errors_name_the_argument_and_write_nothing(self):
        k = self.k["kbpkg-community/rmsnorm"]
        x = self.rng.standard_normal((4, 64)).astype(np.float32)
        w = np.ones(64, np.float32)
        out = np.full_like(x, np.nan)
        cases = [
            ((out, x, w[:63], 4, 64, 1e-6), r"rmsnorm_f32: argument 'weight' must have 64 = 64 "
             r"elements \(shape \[d\] with d=64\); got shape \(63,\)"),
            ((out, x.astype(np.float64), w, 4, 64, 1e-6),
             r"argument 'x' must hold f32 elements, got float64"),
            ((out, np.asfortranarray(x), w, 4, 64, 1e-6), r"argument 'x' must be contiguous"),
            ((out, x, w, 4, 2**63, 1e-6), r"argument 'd' = 9223372036854775808 does not fit i64"),
            ((out, x, w, 4.0, 64, 1e-6), r"argument 'n' must be an integer, got float"),
            ((out, x, w, 4, 64, "eps"), r"argument 'eps' must be a number, got str"),
            ((out, [1.0], w, 4, 64, 1e-6), r"argument 'x' must be an array \(f32, in\).*got "
             r"builtins.list"),
            ((out, x, w, 4, 64), None),  # the stream left out: fine
            ((out, x, w), r"rmsnorm_f32 takes 7 arguments \(out, x, weight, n, d, eps, stream\), "
             r"got 3"),
        ]
        for args, pattern in cases:
            if pattern is None:
                continue
            with self.assertRaisesRegex(kbpkg.ArgumentError, pattern):
                k.rmsnorm_f32(*args)
            self.assertTrue(np.isnan(out).all(), f"{pattern}: out was written")
        with self.assertRaises(kbpkg.KernelError) as e:
            k.rmsnorm_f32(out, x, w, 4, 64, -1.0)
        self.assertEqual(e.exception.code, -1)
        self.assertIn("rmsnorm_f32 returned -1: invalid argument", str(e.exception))
        with self.assertRaisesRegex(kbpkg.ArgumentError, r"argument 'A' must have 4 x 2 = 8 "
                                    r"elements \(shape \[M, lda\] with M=4, lda=2\)"):
            z = np.zeros((4, 4), np.float32)
            self.k["radeonflow/gemm"].rf_gemm_f32(4, 4, 4, 1.0, z, 2, z, 4, 0.0, z, 4, None)

    def test_dlpack_objects_and_addresses(self):
        k = self.k["kbpkg-community/activation"]
        x = self.rng.standard_normal((3, 16)).astype(np.float32)
        out = np.zeros((3, 8), np.float32)
        k.act_silu_and_mul_f32(DLPackOnly(out), DLPackOnly(x), 3, 8, None)
        ref = silu(x[:, :8].astype(np.float64)) * x[:, 8:]
        self.assertLess(self.rel(out, ref), 1e-5)
        with self.assertRaisesRegex(kbpkg.ArgumentError, r"argument 'in' must have 3 x 16 = 48 "
                                    r"elements \(shape \[n, 2 \* d\] with n=3, d=8\); got shape "
                                    r"\(3, 15\)"):
            k.act_silu_and_mul_f32(out, DLPackOnly(x[:, :15].copy()), 3, 8, None)
        with self.assertRaisesRegex(kbpkg.ArgumentError, "must hold f32 elements, got int32"):
            k.act_silu_and_mul_f32(out, DLPackOnly(x.astype(np.int32)), 3, 8, None)
        out2 = np.zeros_like(out)
        k.act_silu_and_mul_f32(out2.ctypes.data, x.ctypes.data, 3, 8, None)  # raw addresses
        np.testing.assert_array_equal(out2, out)


@unittest.skipUnless(FIXTURE, "KB_PUBLISH_FIXTURE is not set (run through ctest)")
class ThirdPartyTyped(unittest.TestCase):
    """A package from `kbpkg new` whose kernel.yaml declares its export: callable with no
    Python written for it; a declaration that does not match the header fails the build."""

    TYPED = ("exports:\n  - name: vadd_add_f32\n    args:\n"
             "      - {name: out, type: f32, dir: out, shape: [n]}\n"
             "      - {name: a, type: f32, dir: in, shape: [n]}\n"
             "      - {name: b, type: f32, dir: in, shape: [n]}\n"
             "      - {name: n, type: i64}\n"
             "      - {name: stream, type: stream}\n")

    @classmethod
    def setUpClass(cls):
        cls.hub = Hub()
        cls.pkgdir = cls.hub.new_package("thirdparty/vadd")
        path = os.path.join(cls.pkgdir, "kernel.yaml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(re.sub(r"^exports: .*\n", cls.TYPED, text, flags=re.M))
        cls.hub.publish(cls.pkgdir)

    @classmethod
    def tearDownClass(cls):
        cls.hub.close()

    def test_declared_export_is_callable(self):
        with kbpkg.load("thirdparty/vadd", settings=self.hub.settings) as k:
            a = np.arange(100, dtype=np.float32)
            b = np.ones(100, np.float32)
            out = np.zeros(100, np.float32)
            self.assertIsNone(k.vadd_add_f32(out, a, b, 100, None))
            np.testing.assert_array_equal(out, a + 1)
            with self.assertRaisesRegex(kbpkg.ArgumentError, "argument 'out' must have 100"):
                k.vadd_add_f32(out[:50], a, b, 100, None)

    def test_wrong_declaration_fails_the_build_naming_the_export(self):
        import shutil
        import subprocess

        bad = os.path.join(self.hub.dir, "bad")
        shutil.copytree(self.pkgdir, bad)
        path = os.path.join(bad, "kernel.yaml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("{name: n, type: i64}", "{name: n, type: i32}"))
        p = subprocess.run([os.environ.get("KBPKG_BIN", "kbpkg"), "build", bad, "--target",
                            "cpu", "--out", os.path.join(self.hub.dir, "bad-dist")],
                           capture_output=True, text=True,
                           env=dict(os.environ, KBPKG_CACHE=self.hub.settings["cache.dir"]))
        self.assertEqual(p.returncode, 5, p.stdout + p.stderr)
        self.assertIn("the declared signature of export vadd_add_f32 does not match "
                      "include/vadd.h", p.stderr)


if __name__ == "__main__":
    unittest.main()
