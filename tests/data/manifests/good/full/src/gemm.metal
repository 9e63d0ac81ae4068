/* fixture: src/gemm.metal */
