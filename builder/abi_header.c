/* The kernel ABI header every package build sees and every artifact ships: the bytes of
 * include/kbpkg/kernel_abi.h, embedded in libkbpkg at build time (cmake/embed_abi_header.cmake). */
#include "builder/builder.h"

#include <stdlib.h>

extern const unsigned char kbi_kernel_abi_header[];
extern const size_t kbi_kernel_abi_header_len;

int kbi_abi_header_write(kb_ctx *ctx, const char *include_root)
{
    char *dir = kbi_path_join(include_root, "kbpkg");
    char *path = dir ? kbi_path_join(dir, "kernel_abi.h") : NULL;
    int rc = path ? kbi_mkdir_p(ctx, dir, 0755) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, kbi_kernel_abi_header, kbi_kernel_abi_header_len,
                                   0644);
    free(path);
    free(dir);
    return rc;
}

int kbi_abi_include_flags(kb_ctx *ctx, kb_strv *argv, const char *work_dir, bool nvcc)
{
    char *root = kbi_path_join(work_dir, "abi");
    int rc = root ? kbi_abi_header_write(ctx, root) : kbi_error_oom(ctx);
    /* The folder is the build's own: map it to a fixed name in anything the compiler records,
     * as the package folder is, so where the build ran never reaches the binary. */
    if (!rc && (kbi_strv_push_owned(argv, kbi_asprintf("-I%s", root)) ||
                kbi_strv_push_owned(argv, kbi_asprintf("%s-ffile-prefix-map=%s=kbpkg-abi",
                                                       nvcc ? "-Xcompiler=" : "", root))))
        rc = kbi_error_oom(ctx);
    free(root);
    return rc;
}
