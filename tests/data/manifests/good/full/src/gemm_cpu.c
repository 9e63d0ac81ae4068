/* fixture: src/gemm_cpu.c */
