// Registers the ops with PyTorch (kernel-builder's registration helper).
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)
{
    ops.def("silu_and_mul(Tensor! out, Tensor input) -> ()");
    ops.impl("silu_and_mul", torch::kCUDA, &silu_and_mul);
    ops.def("gelu_tanh_and_mul(Tensor! out, Tensor input) -> ()");
    ops.impl("gelu_tanh_and_mul", torch::kCUDA, &gelu_tanh_and_mul);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
