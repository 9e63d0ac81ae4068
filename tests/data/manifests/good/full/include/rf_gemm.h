/* fixture: include/rf_gemm.h */
