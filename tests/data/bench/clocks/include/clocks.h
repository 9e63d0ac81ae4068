/* kbtest/clocks: one function that does nothing, so a benchmark has something to call. */
#ifndef CLOCKS_H
#define CLOCKS_H
#define CLOCKS_API __attribute__((visibility("default")))
typedef struct kbpkg_kernel_info_t {
    int abi;
    const char *name, *version, *target, *backend;
} kbpkg_kernel_info_t;
CLOCKS_API int clocks_nop(void *stream);
CLOCKS_API const kbpkg_kernel_info_t *kbpkg_kernel_info(void);
#endif
