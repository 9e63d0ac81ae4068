/* fixture: src/gemm.cu */
