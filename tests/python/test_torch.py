"""kbpkg.torch over CPU tensors (radeonflow/gemm's CPU artifact); skipped without torch."""
import importlib.util
import os
import unittest

from test_binding import FIXTURE, GEMM_DIR, Hub

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@unittest.skipUnless(HAVE_TORCH, "torch is not installed")
@unittest.skipUnless(FIXTURE and os.path.isfile(os.path.join(GEMM_DIR, "kernel.yaml")),
                     "kernels/radeonflow/gemm is not in this source tree")
class TorchGemm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hub = Hub()
        cls.hub.publish(GEMM_DIR)
        for key, value in cls.hub.settings.items():
            os.environ["KBPKG_" + {"registry": "REGISTRY", "cache.dir": "CACHE",
                                   "config.dir": "CONFIG_DIR",
                                   "probe.devices": "DEVICES"}[key]] = value

    @classmethod
    def tearDownClass(cls):
        cls.hub.close()

    def test_gemm_matches_matmul_and_checks_layout(self):
        import torch

        from kbpkg import torch as kt

        a, b = torch.randn(33, 17), torch.randn(17, 9)
        torch.testing.assert_close(kt.gemm(a, b), a @ b, rtol=1e-4, atol=1e-4)
        c = torch.randn(33, 9)
        expect = 2.0 * (a @ b) + 0.5 * c
        kt.gemm(a, b, c, alpha=2.0, beta=0.5)
        torch.testing.assert_close(c, expect, rtol=1e-4, atol=1e-4)
        with self.assertRaisesRegex(ValueError, "row-major"):
            kt.gemm(a.t(), a)
        with self.assertRaisesRegex(TypeError, "different dtypes"):
            kt.gemm(a, b.double())


if __name__ == "__main__":
    unittest.main()
