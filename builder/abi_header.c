/* The kernel ABI header every package build sees and every artifact ships: the bytes of
 * include/kbpkg/kernel_abi.h, embedded in libkbpkg at build time (cmake/embed_abi_header.cmake). */
#include "builder/builder.h"

#include <stdlib.h>

extern const unsigned char kb_kernel_abi_header[];
extern const size_t kb_kernel_abi_header_len;

int kb_abi_header_write(kb_ctx *ctx, const char *include_root)
{
    char *dir = kb_path_join(include_root, "kbpkg");
    char *path = dir ? kb_path_join(dir, "kernel_abi.h") : NULL;
    int rc = path ? kb_mkdir_p(ctx, dir, 0755) : kb_error_oom(ctx);
    if (!rc)
        rc = kb_write_file_atomic(ctx, path, kb_kernel_abi_header, kb_kernel_abi_header_len, 0644);
    free(path);
    free(dir);
    return rc;
}

int kb_abi_include_flags(kb_ctx *ctx, kb_strv *argv, const char *work_dir, bool nvcc)
{
    char *root = kb_path_join(work_dir, "abi");
    int rc = root ? kb_abi_header_write(ctx, root) : kb_error_oom(ctx);
    /* The folder is the build's own: map it to a fixed name in anything the compiler records,
     * as the package folder is, so where the build ran never reaches the binary. */
    if (!rc && (kb_strv_push_owned(argv, kb_asprintf("-I%s", root)) ||
                kb_strv_push_owned(argv, kb_asprintf("%s-ffile-prefix-map=%s=kbpkg-abi",
                                                     nvcc ? "-Xcompiler=" : "", root))))
        rc = kb_error_oom(ctx);
    free(root);
    return rc;
}
