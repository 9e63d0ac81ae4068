/* ROCm device-lib overlay: gfx archs whose oclc_isa_version_*.bc the installed ROCm lacks
 * (gfx1100, gfx942, gfx1151, gfx12 and the generic targets on Debian's ROCm 5.2) get that
 * one-constant bitcode generated next to symlinks of the original libraries, as does the
 * code-object-v6 oclc_abi_version_600.bc; hip-clang also finds its libamdhip64.so.6 stub there.
 * The compiler is pointed at the folder. */
#include "builder/builder.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "gfx11-generic" -> 11000, "gfx10-3-generic" -> 10300: the ISA version of the family's
 * first member, as ROCm's own oclc_isa_version_<family>-generic.bc define it. */
static bool generic_isa_version(const char *arch, unsigned *out)
{
    const char *d = arch + 3;
    char *end;
    unsigned long major = strtoul(d, &end, 10), minor = 0;
    if (end == d || *end != '-')
        return false;
    if (isdigit((unsigned char)end[1])) {
        const char *m = end + 1;
        minor = strtoul(m, &end, 10);
        if (end == m || *end != '-')
            return false;
    }
    if (strcmp(end, "-generic") != 0 || major == 0 || major > 99 || minor > 9)
        return false;
    *out = (unsigned)(major * 1000 + minor * 100);
    return true;
}

bool kbi_gfx_isa_version(const char *arch, unsigned *out)
{
    /* gfxMMmS / gfxMmS with hex-ish minor/stepping: gfx1100 -> 11.0.0 -> 11000,
     * gfx90a -> 9.0.10 -> 9010, gfx1030 -> 10300 (the value in oclc_isa_version_1030.bc). */
    if (!kbi_str_starts(arch, "gfx"))
        return false;
    if (kbi_str_ends(arch, "-generic"))
        return generic_isa_version(arch, out);
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
        return kbi_error_set_path(ctx, KB_ERR_TOOLCHAIN, libs, 0, 0,
                                  "cannot read the ROCm device libraries in %s: %s", libs,
                                  strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (!kbi_str_ends(e->d_name, ".bc"))
            continue;
        char *src = kbi_path_join(libs, e->d_name), *dst = kbi_path_join(dir, e->d_name);
        if (!src || !dst)
            rc = kbi_error_oom(ctx);
        else if (symlink(src, dst) != 0 && errno != EEXIST)
            rc = kbi_error_set_path(ctx, KB_ERR_IO, dst, 0, 0, "cannot link %s: %s", dst,
                                    strerror(errno));
        free(src);
        free(dst);
    }
    closedir(d);
    return rc;
}

/* Compile a .ll defining one i32 constant (__oclc_ISA_version, __oclc_ABI_version) with the
 * linkage of the shipped files. No datalayout: the compiling clang writes its own, so the
 * bitcode links without a layout mismatch into whichever clang (15 or 19) uses it. */
static int generate_constant_bitcode(kb_ctx *ctx, const kb_toolchain *hip, const char *dir,
                                     const char *stem, const char *symbol, unsigned value)
{
    char *ll = kbi_asprintf("%s/%s.ll", dir, stem);
    char *bc = kbi_asprintf("%s/%s.bc", dir, stem);
    char *text = kbi_asprintf("target triple = \"amdgcn-amd-amdhsa\"\n\n"
                              "@%s = linkonce_odr protected local_unnamed_addr addrspace(4) "
                              "constant i32 %u, align 4\n",
                              symbol, value);
    int rc = (!ll || !bc || !text) ? kbi_error_oom(ctx) : 0;
    if (!rc)
        rc = kbi_write_file_atomic(ctx, ll, text, strlen(text), 0644);
    if (!rc) {
        unlink(bc); /* a symlink of a same-named original must not be written through */
        const char *argv[] = {
            hip->clang, "-cc1", "-triple", "amdgcn-amd-amdhsa", "-emit-llvm-bc", ll,
            "-o",       bc,     NULL};
        kb_proc_result r;
        rc = kbi_proc_run(ctx, &r, argv, NULL, 60000);
        if (!rc && r.exit_code != 0)
            rc = kbi_error_set_path(ctx, KB_ERR_TOOLCHAIN, bc, 0, 0, "%s: cannot generate %s: %s",
                                    hip->clang, bc, r.output.data);
        kbi_proc_result_free(&r);
    }
    free(ll);
    free(bc);
    free(text);
    return rc;
}

static int generate_isa_bitcode(kb_ctx *ctx, const kb_toolchain *hip, const char *dir,
                                const char *arch)
{
    unsigned isa;
    if (!kbi_gfx_isa_version(arch, &isa))
        return kbi_error_set(ctx, KB_ERR_TOOLCHAIN, "cannot derive the ISA version of %s", arch);
    char *stem = kbi_asprintf("oclc_isa_version_%s", arch + 3);
    int rc = stem ? generate_constant_bitcode(ctx, hip, dir, stem, "__oclc_ISA_version", isa)
                  : kbi_error_oom(ctx);
    free(stem);
    return rc;
}

/* Every function a clang-compiled HIP kernel library calls for its launches (registration,
 * the <<<>>> call configuration, hipLaunchKernel) and the error/attribute calls the kernels
 * make. A call outside this list fails the link (-z defs) naming the symbol. */
const char *const kbi_hip_stub_symbols[] = {"__hipPushCallConfiguration",
                                            "__hipPopCallConfiguration",
                                            "__hipRegisterFatBinary",
                                            "__hipUnregisterFatBinary",
                                            "__hipRegisterFunction",
                                            "__hipRegisterVar",
                                            "__hipRegisterManagedVar",
                                            "hipLaunchKernel",
                                            "hipGetLastError",
                                            "hipPeekAtLastError",
                                            "hipGetErrorString",
                                            "hipGetErrorName",
                                            "hipFuncSetAttribute",
                                            "hipFuncGetAttributes",
                                            "hipGetDevice",
                                            "hipDeviceGetAttribute",
                                            "hipOccupancyMaxActiveBlocksPerMultiprocessor",
                                            NULL};

/* libamdhip64.so.<major>: the soname the ROCm <major> runtime has, exporting the launch API
 * as empty functions. Linking against it records DT_NEEDED libamdhip64.so.<major> and
 * unversioned references, which bind to whatever version the real runtime defines. */
static int generate_hip_stub(kb_ctx *ctx, const kb_toolchain *hip, const char *dir)
{
    char *lib = kbi_asprintf("%s/libamdhip64.so.%u", dir, hip->hip_major);
    char *tmp = kbi_asprintf("%s/.libamdhip64.so.%u.tmp", dir, hip->hip_major);
    char *src = kbi_asprintf("%s/hip_stub.c", dir);
    char *soname = kbi_asprintf("-Wl,-soname,libamdhip64.so.%u", hip->hip_major);
    kb_buf text = KB_BUF_INIT;
    kbi_buf_puts(&text, "/* generated by kbpkg: the HIP launch API, for linking only */\n");
    for (size_t i = 0; kbi_hip_stub_symbols[i]; i++)
        kbi_buf_printf(&text, "void %s(void);\nvoid %s(void) {}\n", kbi_hip_stub_symbols[i],
                       kbi_hip_stub_symbols[i]);
    int rc = (!lib || !tmp || !src || !soname || kbi_buf_grow(&text, 0)) ? kbi_error_oom(ctx) : 0;
    if (!rc)
        rc = kbi_write_file_atomic(ctx, src, text.data, text.len, 0644);
    if (!rc) {
        const char *argv[] = {hip->clang, "-x", "c", "-shared", "-fPIC", "-nostdlib",
                              soname,     "-o", tmp, src,       NULL};
        kb_proc_result r;
        rc = kbi_proc_run(ctx, &r, argv, NULL, 60000);
        if (!rc && r.exit_code != 0)
            rc = kbi_error_set_path(ctx, KB_ERR_TOOLCHAIN, lib, 0, 0,
                                    "%s: cannot build the HIP runtime stub %s: %s", hip->clang, lib,
                                    r.output.data);
        kbi_proc_result_free(&r);
    }
    if (!rc && rename(tmp, lib) != 0)
        rc = kbi_error_set_path(ctx, KB_ERR_IO, lib, 0, 0, "cannot write %s: %s", lib,
                                strerror(errno));
    kbi_buf_free(&text);
    free(lib);
    free(tmp);
    free(src);
    free(soname);
    return rc;
}

/* Generate what the folder lacks: isa-version bitcode per overlay arch, the v6 ABI-version
 * bitcode, the runtime stub. */
static int fill_overlay(kb_ctx *ctx, const kb_toolchain *hip, const char *dir)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < hip->overlay_archs.len; i++) {
        char *bc = kbi_asprintf("%s/oclc_isa_version_%s.bc", dir, hip->overlay_archs.items[i] + 3);
        bool have = bc && kbi_path_exists(bc);
        free(bc);
        if (!have)
            rc = generate_isa_bitcode(ctx, hip, dir, hip->overlay_archs.items[i]);
    }
    char *abi = kbi_asprintf("%s/oclc_abi_version_600.bc", dir);
    if (!rc && hip->overlay_abi6 && abi && !kbi_path_exists(abi))
        rc = generate_constant_bitcode(ctx, hip, dir, "oclc_abi_version_600", "__oclc_ABI_version",
                                       600);
    free(abi);
    char *stub = kbi_asprintf("%s/libamdhip64.so.%u", dir, hip->hip_major);
    if (!rc && hip->hip_stub && stub && !kbi_path_exists(stub))
        rc = generate_hip_stub(ctx, hip, dir);
    free(stub);
    return rc;
}

int kbi_rocm_overlay(kb_ctx *ctx, char **out, const kb_toolchain *hip, const char *cache_dir)
{
    *out = NULL;
    if (!hip->clang)
        return kbi_error_set(ctx, KB_ERR_TOOLCHAIN,
                             "%s lacks oclc_isa_version_%s.bc and hipcc's clang was not found to "
                             "generate it",
                             hip->device_libs,
                             hip->overlay_archs.len ? hip->overlay_archs.items[0] + 3 : "?");
    /* One overlay per (device-lib folder, clang, stub's symbols): the folder name says which;
     * a symbol added to the stub makes a new folder, since a stub present is never rebuilt. */
    char key[65];
    kb_buf seed_text = KB_BUF_INIT;
    int failed =
        kbi_buf_printf(&seed_text, "%s\n%s\n%s\noverlay-v2", hip->device_libs, hip->clang, hip->id);
    for (size_t i = 0; !failed && kbi_hip_stub_symbols[i]; i++)
        failed = kbi_buf_printf(&seed_text, "\n%s", kbi_hip_stub_symbols[i]);
    char *seed = failed ? NULL : seed_text.data;
    if (!seed) {
        kbi_buf_free(&seed_text);
        return kbi_error_oom(ctx);
    }
    kbi_sha256_hex(seed, strlen(seed), key);
    kbi_buf_free(&seed_text);
    char *dir = kbi_asprintf("%s/rocm-device-libs/%.16s", cache_dir, key);
    char *lockpath = dir ? kbi_asprintf("%s.lock", dir) : NULL;
    if (!dir || !lockpath) {
        free(dir);
        return kbi_error_oom(ctx);
    }
    int rc = kbi_mkdir_p(ctx, dir, 0755);
    kb_lock lock = {-1};
    if (!rc)
        rc = kbi_lock_acquire(ctx, &lock, lockpath);
    if (!rc)
        rc = link_originals(ctx, hip->device_libs, dir);
    if (!rc)
        rc = fill_overlay(ctx, hip, dir);
    if (lock.fd >= 0)
        kbi_lock_release(&lock);
    free(lockpath);
    if (rc) {
        free(dir);
        return rc;
    }
    *out = dir;
    return 0;
}
