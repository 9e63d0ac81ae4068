"""kbpkg.torch over CPU tensors (the first-party packages' CPU artifacts); skipped without
torch. tests/gpu/torch_check.py checks the same helpers on CUDA tensors."""
import importlib.util
import os
import re
import unittest

from test_binding import FIXTURE, GEMM_DIR, SOURCE, Hub

HAVE_TORCH = importlib.util.find_spec("torch") is not None
RMS_DIR = os.path.join(SOURCE, "kernels", "kbpkg-community", "rmsnorm")
ACT_DIR = os.path.join(SOURCE, "kernels", "kbpkg-community", "activation")
ENV = {"registry": "KBPKG_REGISTRY", "cache.dir": "KBPKG_CACHE", "config.dir": "KBPKG_CONFIG_DIR",
       "probe.devices": "KBPKG_DEVICES"}


@unittest.skipUnless(HAVE_TORCH, "torch is not installed")
@unittest.skipUnless(FIXTURE and all(os.path.isfile(os.path.join(d, "kernel.yaml"))
                                     for d in (GEMM_DIR, RMS_DIR, ACT_DIR)),
                     "the first-party kernels are not in this source tree")
class TorchCpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hub = Hub()
        for d in (GEMM_DIR, RMS_DIR, ACT_DIR):
            cls.hub.publish(d)
        from test_typed import ThirdPartyTyped

        pkgdir = cls.hub.new_package("thirdparty/vadd")
        path = os.path.join(pkgdir, "kernel.yaml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(re.sub(r"^exports: .*\n", ThirdPartyTyped.TYPED, text, flags=re.M))
        cls.hub.publish(pkgdir)
        cls.saved = {v: os.environ.get(v) for v in ENV.values()}
        for key, value in cls.hub.settings.items():
            os.environ[ENV[key]] = value
        from kbpkg import torch as kt

        kt._KERNELS.clear()  # loaded from this hub only

    @classmethod
    def tearDownClass(cls):
        from kbpkg import torch as kt

        for k in kt._KERNELS.values():
            k.close()
        kt._KERNELS.clear()
        for var, value in cls.saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        cls.hub.close()

    def setUp(self):
        import torch

        self.torch = torch
        self.g = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))

    def rand(self, *shape, dtype=None, scale=1.0):
        t = self.torch.randn(*shape, generator=self.g) * scale
        return t if dtype is None else t.to(dtype)

    def test_gemm_matches_matmul_and_checks_layout(self):
        from kbpkg import torch as kt

        torch = self.torch
        a, b = self.rand(33, 17), self.rand(17, 9)
        torch.testing.assert_close(kt.gemm(a, b), a @ b, rtol=1e-4, atol=1e-4)
        c = self.rand(33, 9)
        expect = 2.0 * (a @ b) + 0.5 * c
        kt.gemm(a, b, c, alpha=2.0, beta=0.5)
        torch.testing.assert_close(c, expect, rtol=1e-4, atol=1e-4)
        with self.assertRaisesRegex(ValueError, "row-major"):
            kt.gemm(a.t(), a)
        with self.assertRaisesRegex(TypeError, "different dtypes"):
            kt.gemm(a, b.double())
        with self.assertRaisesRegex(TypeError, "unsupported dtype torch.float64"):
            kt.gemm(a.double(), b.double())

    def test_gemm_padded_leading_dimensions_and_nan_c_with_beta_zero(self):
        from kbpkg import torch as kt

        torch = self.torch
        a = self.rand(20, 13 + 3)[:, :13]
        b = self.rand(13, 7 + 5)[:, :7]
        cbuf = torch.full((20, 7 + 2), float("nan"))
        c = cbuf[:, :7]
        kt.gemm(a, b, c)
        torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
        self.assertTrue(torch.isnan(cbuf[:, 7:]).all(), "gemm wrote into c's padding")

    def test_gemm_with_an_empty_k_writes_zeros(self):
        # K = 0: a is [M, 0], whose stride torch reports as (1, 1); it once became an
        # as_strided view of one column over an empty storage (RuntimeError on the H200).
        from kbpkg import torch as kt

        torch = self.torch
        a, b = self.rand(33, 0), self.rand(0, 8)
        c = torch.full((33, 8), float("nan"))
        kt.gemm(a, b, c)
        torch.testing.assert_close(c, torch.zeros(33, 8))
        torch.testing.assert_close(kt.gemm(a, b), torch.zeros(33, 8))

    def test_rmsnorm_matches_the_formula_in_place_and_out(self):
        from kbpkg import torch as kt

        torch = self.torch
        for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2), (torch.float16, 2e-3)):
            x, w = self.rand(3, 5, 64, dtype=dtype, scale=3.0), self.rand(64, dtype=dtype)
            x64 = x.double()
            ref = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
            got = kt.rmsnorm(x, w)
            self.assertEqual(got.shape, x.shape)
            err = ((got.double() - ref).norm() / ref.norm()).item()
            self.assertLess(err, tol, f"{dtype}")
            out = torch.full_like(x, float("nan"))
            self.assertIs(kt.rmsnorm(x, w, out=out), out)
            self.assertTrue(torch.equal(out, got))
            y = x.clone()
            kt.rmsnorm(y, w, out=y)
            self.assertTrue(torch.equal(y, got), "in place differs")

    def test_activations_match_torch(self):
        import torch.nn.functional as F

        from kbpkg import torch as kt

        torch = self.torch
        x = self.rand(4, 3, 2 * 40, scale=3.0)
        g, u = x.double().chunk(2, dim=-1)
        cases = [(kt.silu_and_mul(x), F.silu(g) * u), (kt.gelu_and_mul(x), F.gelu(g) * u),
                 (kt.gelu_tanh(x), F.gelu(x.double(), approximate="tanh"))]
        for got, ref in cases:
            self.assertEqual(got.shape, ref.shape)
            self.assertLess(((got.double() - ref).norm() / ref.norm()).item(), 1e-5)
        out = torch.full((4, 3, 40), float("nan"), dtype=torch.bfloat16)
        xb = x.to(torch.bfloat16)
        self.assertIs(kt.silu_and_mul(xb, out=out), out)
        self.assertFalse(torch.isnan(out).any())
        self.assertEqual(kt.silu_and_mul(torch.empty(0, 8)).shape, (0, 4))
        self.assertEqual(kt.rmsnorm(torch.empty(0, 8), torch.ones(8)).shape, (0, 8))

    def test_bad_outputs_are_refused_before_anything_is_written(self):
        from kbpkg import torch as kt

        torch = self.torch
        x, w = self.rand(4, 64), self.rand(64)
        keep = x.clone()
        with self.assertRaisesRegex(ValueError, r"out must be \(4, 32\), got \(4, 64\)"):
            kt.silu_and_mul(x, out=torch.empty(4, 64))
        with self.assertRaisesRegex(TypeError, "different dtypes: out is torch.float16"):
            kt.silu_and_mul(x, out=torch.empty(4, 32, dtype=torch.float16))
        with self.assertRaisesRegex(ValueError, "out must be contiguous"):
            kt.rmsnorm(x, w, out=torch.empty(64, 4).t())
        with self.assertRaisesRegex(ValueError, "must not overlap"):
            kt.silu_and_mul(x, out=x.view(-1)[64:192].view(4, 32))
        buf = self.rand(4 * 64 + 32)
        with self.assertRaisesRegex(ValueError, "x itself or not overlap"):
            kt.rmsnorm(buf[:256].view(4, 64), w, out=buf[32:].view(4, 64))
        with self.assertRaisesRegex(ValueError, r"weight must be \(64,\)"):
            kt.rmsnorm(x, self.rand(63))
        with self.assertRaisesRegex(ValueError, "not supported"):
            kt.rmsnorm(x.to("meta"), w.to("meta"))
        # numpy arrays (what kbpkg.load() takes) are named as the wrong type, not an AttributeError
        with self.assertRaisesRegex(TypeError, "a must be a torch.Tensor, got numpy.ndarray"):
            kt.gemm(x.numpy(), x.t().contiguous())
        with self.assertRaisesRegex(TypeError, "weight must be a torch.Tensor, got numpy.ndarray"):
            kt.rmsnorm(x, w.numpy())
        with self.assertRaisesRegex(TypeError, "x must be a torch.Tensor, got builtins.list"):
            kt.silu_and_mul([1.0, 2.0])
        import kbpkg

        out = torch.full_like(x, float("nan"))
        with self.assertRaisesRegex(kbpkg.KernelError, "rmsnorm_f32 returned -1"):
            kt.rmsnorm(x, w, eps=-1.0, out=out)
        self.assertTrue(torch.isnan(out).all(), "a refused call wrote to out")
        self.assertTrue(torch.equal(x, keep), "a refused call changed x")

    def test_gpu_tensors_refused_where_only_a_cpu_artifact_resolves(self):
        import kbpkg
        from kbpkg import torch as kt

        with self.assertRaises(kbpkg.Error) as e:
            kt._kernel("kbpkg-community/rmsnorm", "gpu")
        self.assertEqual(e.exception.code, -10)
        self.assertIn("kbpkg-community/rmsnorm resolved to cpu-", e.exception.message)
        self.assertIn("cannot take cuda (GPU) tensors", e.exception.message)
        self.assertNotIn(("kbpkg-community/rmsnorm", "gpu"), kt._KERNELS)

    def test_third_party_ops_with_no_python_written(self):
        from kbpkg import torch as kt

        torch = self.torch
        ops = kt.ops("thirdparty/vadd")
        self.assertEqual(ops.namespace, "kb_thirdparty_vadd")
        a, b = self.rand(300), self.rand(300)
        out = ops.vadd_add_f32(None, a, b, 300)  # out allocated from its shape rule [n]
        self.assertEqual(out.shape, (300,))
        torch.testing.assert_close(out, a + b)
        same = torch.empty(300)
        self.assertIs(ops.vadd_add_f32(same, a, b, 300), same)
        import kbpkg

        with self.assertRaisesRegex(kbpkg.ArgumentError, r"argument 'b' must hold f32 elements, "
                                    r"got float64"):
            ops.vadd_add_f32(None, a, b.double(), 300)
        with self.assertRaisesRegex(kbpkg.ArgumentError, r"takes 4 arguments \(out, a, b, n; "
                                    r"the stream is torch's\)"):
            ops.vadd_add_f32(a, b)
        with self.assertRaisesRegex(AttributeError, "declares no typed export 'nope'"):
            ops.nope

    def test_torch_compile_fullgraph_traces_through_the_ops(self):
        from kbpkg import torch as kt

        torch = self.torch
        if os.environ.get("KB_REQUIRE_TORCH_COMPILE"):  # the PyPI torch run: must not fall back
            self.assertTrue(kt._compile_supported(torch), torch.__version__)
        if not kt._compile_supported(torch):
            # Debian's torch 1.13: no fake registration, so no ops; every call is eager.
            self.assertIsNone(kt.ops("kbpkg-community/rmsnorm").rmsnorm_f32._torch_op)
            self.assertFalse(hasattr(torch, "compile") and hasattr(torch.library, "register_fake"))
            return
        op = kt.ops("kbpkg-community/rmsnorm").rmsnorm_f32
        self.assertIsNotNone(op._torch_op)
        vadd = kt.ops("thirdparty/vadd").vadd_add_f32

        def f(x, w, a):
            y = kt.rmsnorm(x * 2.0, w)
            z = kt.silu_and_mul(torch.cat([y, y], dim=-1))
            return vadd(None, z.reshape(-1), a, z.numel()) + 1.0

        x, w = self.rand(4, 64), self.rand(64)
        a = self.rand(4 * 64)
        eager = f(x, w, a)
        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(compiled(x, w, a), eager)
        x2 = self.rand(4, 64)
        torch.testing.assert_close(compiled(x2, w, a), f(x2, w, a))
        # the ops are real torch ops: their fake implementation gives shapes without running
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode() as mode:
            fx, fw = mode.from_tensor(x), mode.from_tensor(w)
            fo = torch.empty_like(fx)
            torch.ops.kb_kbpkg_community_rmsnorm.rmsnorm_f32(fo, fx, fw, 4, 64, 1e-6)
            self.assertEqual(fo.shape, (4, 64))

    def test_layer_mapping_swaps_forwards_and_says_why_it_kept_one(self):
        from kbpkg import torch as kt

        torch = self.torch
        nn = torch.nn

        class MyRMSNorm(nn.Module):
            def __init__(self, d, eps=1e-6):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(d))
                self.eps = eps

            def forward(self, x):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

        class SiluAndMul(nn.Module):
            def forward(self, x):
                g, u = x.chunk(2, dim=-1)
                return torch.nn.functional.silu(g) * u

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = MyRMSNorm(32)
                self.up = nn.Linear(32, 128)
                self.act = SiluAndMul()
                self.down = nn.Linear(64, 32)
                self.norm64 = MyRMSNorm(32).double()  # no f64 kernel: keeps its forward

            def forward(self, x):
                h = self.down(self.act(self.up(self.norm(x))))
                return h, self.norm64(x.double())

        model = Block()
        x = self.rand(3, 32)
        with torch.no_grad():
            before = model(x)
            report = kt.kernelize(model, {MyRMSNorm: kt.RMSNORM, SiluAndMul: kt.SILU_AND_MUL})
            after = model(x)
        self.assertEqual(report["norm"], "kbpkg-community/rmsnorm")
        self.assertEqual(report["act"], "kbpkg-community/activation")
        self.assertEqual(report["norm64"], "kept: kbpkg-community/rmsnorm has no float64 kernel")
        self.assertEqual(model.norm64.kbpkg_reason, "kbpkg-community/rmsnorm has no float64 kernel")
        torch.testing.assert_close(after[0], before[0], rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(after[1], before[1])
        self.assertIsNot(type(model.norm).forward, model.norm.forward.__func__)


if __name__ == "__main__":
    unittest.main()
