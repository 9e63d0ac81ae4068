/* vadd: out[i] = a[i] + b[i]. */
#ifndef VADD_H
#define VADD_H
#ifdef __cplusplus
extern "C" {
#endif
#define VADD_API __attribute__((visibility("default")))
typedef struct kbpkg_kernel_info_t {
    int abi;
    const char *name, *version, *target, *backend;
} kbpkg_kernel_info_t;
VADD_API int vadd_f32(float *out, const float *a, const float *b, int n, void *stream);
VADD_API const kbpkg_kernel_info_t *kbpkg_kernel_info(void);
#ifdef __cplusplus
}
#endif
#endif
