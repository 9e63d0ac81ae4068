/* ROCm device-lib overlay: gfx archs whose oclc_isa_version_*.bc the installed ROCm lacks
 * (gfx1100 on Debian's ROCm 5.2) get that one-constant bitcode generated next to symlinks of
 * the original libraries, and hipcc is pointed at the folder. */
#include "builder/builder.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool kb_gfx_isa_version(const char *arch, unsigned *out)
{
    /* gfxMMmS / gfxMmS with hex-ish minor/stepping: gfx1100 -> 11.0.0 -> 11000,
     * gfx90a -> 9.0.10 -> 9010, gfx1030 -> 10300 (the value in oclc_isa_version_1030.bc). */
    if (!kb_str_starts(arch, "gfx"))
        return false;
    const char *d = arch + 3;
    size_t n = strlen(d);
    if (n < 3 || n > 4)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)d[i]))
            return false;
    unsigned major = 0;
    for (size_t i = 0; i + 2 < n; i++) {
        if (!isdigit((unsigned char)d[i]))
            return false;
        major = major * 10 + (unsigned)(d[i] - '0');
    }
    unsigned minor = (unsigned)strtoul((char[]){d[n - 2], 0}, NULL, 16);
    unsigned step = (unsigned)strtoul((char[]){d[n - 1], 0}, NULL, 16);
    *out = major * 1000 + minor * 100 + step;
    return true;
}

static int link_originals(kb_ctx *ctx, const char *libs, const char *dir)
{
    DIR *d = opendir(libs);
    if (!d)
        return kb_error_set_path(ctx, KB_ERR_TOOLCHAIN, libs, 0, 0,
                                 "cannot read the ROCm device libraries in %s: %s", libs,
                                 strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (!kb_str_ends(e->d_name, ".bc"))
            continue;
        char *src = kb_path_join(libs, e->d_name), *dst = kb_path_join(dir, e->d_name);
        if (!src || !dst)
            rc = kb_error_oom(ctx);
        else if (symlink(src, dst) != 0 && errno != EEXIST)
            rc = kb_error_set_path(ctx, KB_ERR_IO, dst, 0, 0, "cannot link %s: %s", dst,
                                   strerror(errno));
        free(src);
        free(dst);
    }
    closedir(d);
    return rc;
}

/* Compile a .ll defining __oclc_ISA_version with the same linkage as the shipped files. */
static int generate_isa_bitcode(kb_ctx *ctx, const kb_toolchain *hip, const char *dir,
                                const char *arch)
{
    unsigned isa;
    if (!kb_gfx_isa_version(arch, &isa))
        return kb_error_set(ctx, KB_ERR_TOOLCHAIN, "cannot derive the ISA version of %s", arch);
    const char *suffix = arch + 3;
    char *ll = kb_asprintf("%s/oclc_isa_version_%s.ll", dir, suffix);
    char *bc = kb_asprintf("%s/oclc_isa_version_%s.bc", dir, suffix);
    char *text = kb_asprintf(
        "target datalayout = \"e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-"
        "i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-"
        "v2048:2048-n32:64-S32-A5-G1-ni:7\"\n"
        "target triple = \"amdgcn-amd-amdhsa\"\n\n"
        "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) "
        "constant i32 %u, align 4\n",
        isa);
    int rc = (!ll || !bc || !text) ? kb_error_oom(ctx) : 0;
    if (!rc)
        rc = kb_write_file_atomic(ctx, ll, text, strlen(text), 0644);
    if (!rc) {
        unlink(bc); /* a symlink of a same-named original must not be written through */
        const char *argv[] = {
            hip->clang, "-cc1", "-triple", "amdgcn-amd-amdhsa", "-emit-llvm-bc", ll,
            "-o",       bc,     NULL};
        kb_proc_result r;
        rc = kb_proc_run(ctx, &r, argv, NULL, 60000);
        if (!rc && r.exit_code != 0)
            rc = kb_error_set_path(ctx, KB_ERR_TOOLCHAIN, bc, 0, 0,
                                   "%s: cannot generate %s for %s: %s", hip->clang, bc, arch,
                                   r.output.data);
        kb_proc_result_free(&r);
    }
    free(ll);
    free(bc);
    free(text);
    return rc;
}

int kb_rocm_overlay(kb_ctx *ctx, char **out, const kb_toolchain *hip, const char *cache_dir)
{
    *out = NULL;
    if (!hip->clang)
        return kb_error_set(ctx, KB_ERR_TOOLCHAIN,
                            "%s lacks oclc_isa_version_%s.bc and hipcc's clang was not found to "
                            "generate it",
                            hip->device_libs,
                            hip->overlay_archs.len ? hip->overlay_archs.items[0] + 3 : "?");
    /* One overlay per (device-lib folder, clang): the folder name says which. */
    char key[65];
    char *seed = kb_asprintf("%s\n%s\n%s", hip->device_libs, hip->clang, hip->id);
    if (!seed)
        return kb_error_oom(ctx);
    kb_sha256_hex(seed, strlen(seed), key);
    free(seed);
    char *dir = kb_asprintf("%s/rocm-device-libs/%.16s", cache_dir, key);
    char *lockpath = dir ? kb_asprintf("%s.lock", dir) : NULL;
    if (!dir || !lockpath) {
        free(dir);
        return kb_error_oom(ctx);
    }
    int rc = kb_mkdir_p(ctx, dir, 0755);
    kb_lock lock = {-1};
    if (!rc)
        rc = kb_lock_acquire(ctx, &lock, lockpath);
    if (!rc)
        rc = link_originals(ctx, hip->device_libs, dir);
    for (size_t i = 0; !rc && i < hip->overlay_archs.len; i++) {
        char *bc = kb_asprintf("%s/oclc_isa_version_%s.bc", dir, hip->overlay_archs.items[i] + 3);
        bool have = bc && kb_path_exists(bc);
        free(bc);
        if (!have)
            rc = generate_isa_bitcode(ctx, hip, dir, hip->overlay_archs.items[i]);
    }
    if (lock.fd >= 0)
        kb_lock_release(&lock);
    free(lockpath);
    if (rc) {
        free(dir);
        return rc;
    }
    *out = dir;
    return 0;
}
