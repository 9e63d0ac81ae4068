/* Toolchain discovery: nvcc, hipcc (and its clang + device libs), hip-clang (clang-19 driving
 * HIP for ROCm 6), cc, xcrun metal; versions and the archs each can build. */
#include "builder/builder.h"
#include "probe/cpu.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#define VERSION_TIMEOUT_MS 20000

/* Copy the version-looking token starting at p ("13.0," -> "13.0"). */
static bool copy_version_token(const char *p, char *out, size_t size)
{
    size_t n = 0;
    while (p[n] && (isdigit((unsigned char)p[n]) || p[n] == '.'))
        n++;
    while (n && p[n - 1] == '.')
        n--;
    if (n == 0 || !isdigit((unsigned char)p[0]) || n >= size)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

bool kbi_parse_nvcc_version(const char *text, char *out, size_t size)
{
    /* "Cuda compilation tools, release 13.0, V13.0.88" */
    const char *p = text ? strstr(text, "release ") : NULL;
    return p && copy_version_token(p + strlen("release "), out, size);
}

bool kbi_parse_hipcc_version(const char *text, char *out, size_t size)
{
    /* "HIP version: 5.2.21153-0" */
    const char *p = text ? strstr(text, "HIP version:") : NULL;
    if (!p)
        return false;
    p += strlen("HIP version:");
    while (*p == ' ')
        p++;
    return copy_version_token(p, out, size);
}

bool kbi_parse_hipcc_clang(const char *text, unsigned *major, char *dir, size_t dir_size)
{
    const char *v = text ? strstr(text, "clang version ") : NULL;
    const char *d = text ? strstr(text, "InstalledDir: ") : NULL;
    if (!v || !d)
        return false;
    char ver[32];
    if (!copy_version_token(v + strlen("clang version "), ver, sizeof(ver)))
        return false;
    *major = (unsigned)strtoul(ver, NULL, 10);
    d += strlen("InstalledDir: ");
    size_t n = strcspn(d, "\r\n");
    if (n == 0 || n >= dir_size)
        return false;
    memcpy(dir, d, n);
    dir[n] = '\0';
    return *major > 0;
}

bool kbi_parse_cc_version(const char *text, char *out, size_t size)
{
    if (!text)
        return false;
    /* clang: "... clang version 14.0.6"; gcc: "cc (Debian 12.2.0-14) 12.2.0": the last
     * version-looking token of the first line. */
    const char *v = strstr(text, "clang version ");
    if (v)
        return copy_version_token(v + strlen("clang version "), out, size);
    size_t line = strcspn(text, "\n");
    bool found = false;
    for (size_t i = 0; i < line; i++) {
        if ((i == 0 || text[i - 1] == ' ') && isdigit((unsigned char)text[i]) &&
            strchr(text + i, '.') && copy_version_token(text + i, out, size))
            found = strchr(out, '.') != NULL || found;
    }
    return found && strchr(out, '.') != NULL;
}

int kbi_parse_nvcc_arch_list(const char *text, kb_strv *out)
{
    const char *p = text;
    while (p && *p) {
        while (*p && !isalnum((unsigned char)*p))
            p++;
        size_t n = 0;
        while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_'))
            n++;
        if (n && n < 32 && (kbi_str_starts(p, "sm_") || kbi_str_starts(p, "compute_"))) {
            char tok[32];
            memcpy(tok, p, n);
            tok[n] = '\0';
            if (!kbi_strv_contains(out, tok) && kbi_strv_push(out, tok))
                return KB_ERR_NOMEM;
        }
        p += n;
    }
    return 0;
}

int kbi_nvcc_add_arch_specific(kb_strv *archs)
{
    /* nvcc --list-gpu-code names only base archs, but every arch from sm_90 on also has an
     * arch-specific variant (sm_90a: wgmma, setmaxnreg) that the same nvcc builds. */
    size_t n = archs->len;
    for (size_t i = 0; i < n; i++) {
        const char *a = archs->items[i];
        const char *num = kbi_str_starts(a, "sm_")        ? a + 3
                          : kbi_str_starts(a, "compute_") ? a + 8
                                                          : NULL;
        uint64_t v = 0;
        if (!num || !kbi_parse_u64(num, &v) || v < 90)
            continue;
        char variant[32];
        snprintf(variant, sizeof(variant), "%sa", a);
        if (!kbi_strv_contains(archs, variant) && kbi_strv_push(archs, variant))
            return KB_ERR_NOMEM;
    }
    return 0;
}

int kbi_nvcc_default_archs(unsigned major, kb_strv *out)
{
    /* What each CUDA major builds, for an nvcc too old for --list-gpu-code. */
    static const unsigned all[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
    unsigned lowest = major >= 13 ? 75 : major >= 12 ? 50 : major >= 11 ? 35 : 30;
    for (size_t i = 0; i < KB_ARRAY_LEN(all); i++) {
        if (all[i] < lowest || (major < 12 && all[i] >= 89) || (major < 11 && all[i] >= 80))
            continue;
        char sm[24], compute[24];
        snprintf(sm, sizeof(sm), "sm_%u", all[i]);
        snprintf(compute, sizeof(compute), "compute_%u", all[i]);
        if (kbi_strv_push(out, sm) || kbi_strv_push(out, compute))
            return KB_ERR_NOMEM;
    }
    return 0;
}

int kbi_rocm_archs_from_libs(const kb_strv *file_names, unsigned clang_major, kb_strv *archs,
                             kb_strv *overlay)
{
    static const char prefix[] = "oclc_isa_version_";
    for (size_t i = 0; i < file_names->len; i++) {
        const char *f = file_names->items[i];
        if (!kbi_str_starts(f, prefix) || !kbi_str_ends(f, ".bc"))
            continue;
        size_t n = strlen(f) - strlen(prefix) - 3;
        char arch[32];
        if (n == 0 || n > 8)
            continue;
        snprintf(arch, sizeof(arch), "gfx%.*s", (int)n, f + strlen(prefix));
        if (!kbi_strv_contains(archs, arch) && kbi_strv_push(archs, arch))
            return KB_ERR_NOMEM;
    }
    /* RDNA3: clang 15 generates code for these but ROCm 5.2's device libs predate them; the
     * only arch-specific library is the one-constant isa-version file, which we generate. */
    static const char *const gfx11[] = {"gfx1100", "gfx1101", "gfx1102", "gfx1103"};
    for (size_t i = 0; clang_major >= 15 && i < KB_ARRAY_LEN(gfx11); i++) {
        if (kbi_strv_contains(archs, gfx11[i]))
            continue;
        if (kbi_strv_push(archs, gfx11[i]) || kbi_strv_push(overlay, gfx11[i]))
            return KB_ERR_NOMEM;
    }
    kbi_strv_sort(archs);
    return 0;
}

/* The gfx archs clang builds HIP code for, with the clang major that introduced each (the
 * ones kbpkg knows; LLVM's AMDGPUUsage). clang 19 is Debian 12's newest. */
static const struct {
    const char *arch;
    unsigned since;
} hip_clang_archs[] = {
    {"gfx900", 15},          {"gfx902", 15},          {"gfx904", 15},        {"gfx906", 15},
    {"gfx908", 15},          {"gfx909", 15},          {"gfx90a", 15},        {"gfx90c", 15},
    {"gfx940", 15},          {"gfx941", 16},          {"gfx942", 16},        {"gfx1010", 15},
    {"gfx1011", 15},         {"gfx1012", 15},         {"gfx1013", 15},       {"gfx1030", 15},
    {"gfx1031", 15},         {"gfx1032", 15},         {"gfx1033", 15},       {"gfx1034", 15},
    {"gfx1035", 15},         {"gfx1036", 15},         {"gfx1100", 15},       {"gfx1101", 15},
    {"gfx1102", 15},         {"gfx1103", 15},         {"gfx1150", 17},       {"gfx1151", 17},
    {"gfx1152", 19},         {"gfx1200", 18},         {"gfx1201", 18},       {"gfx9-generic", 18},
    {"gfx10-1-generic", 18}, {"gfx10-3-generic", 18}, {"gfx11-generic", 18}, {"gfx12-generic", 19},
    {"gfx9-4-generic", 20},
};

/* The oldest clang HIP toolchain kbpkg drives: the first with gfx12 and every generic target
 * but gfx9-4-generic, and the one Debian 12 ships (clang-19). */
#define HIP_CLANG_MIN_MAJOR 19u

int kbi_hip_clang_archs(unsigned clang_major, kb_strv *out)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(hip_clang_archs); i++)
        if (hip_clang_archs[i].since <= clang_major &&
            !kbi_strv_contains(out, hip_clang_archs[i].arch) &&
            kbi_strv_push(out, hip_clang_archs[i].arch))
            return KB_ERR_NOMEM;
    kbi_strv_sort(out);
    return 0;
}

bool kbi_rocm5_era_arch(const char *arch)
{
    char base[24];
    size_t n = strcspn(arch, ":");
    if (n >= sizeof(base))
        return false;
    memcpy(base, arch, n);
    base[n] = '\0';
    unsigned isa;
    return !strstr(base, "generic") && kbi_gfx_isa_version(base, &isa) && isa < 11500;
}

char *kbi_toolchain_cannot_build(const kb_toolchain *tc, const char *arch)
{
    if (!tc->found)
        return kbi_strdup(tc->note ? tc->note : "no toolchain for this backend");
    if (tc->hip_stub) {
        unsigned major = (unsigned)strtoul(tc->version, NULL, 10);
        for (size_t i = 0; i < KB_ARRAY_LEN(hip_clang_archs); i++)
            if (strcmp(hip_clang_archs[i].arch, arch) == 0 && hip_clang_archs[i].since > major)
                return kbi_asprintf(
                    "%s %s cannot build %s: clang learned it in %u, and Debian 12's "
                    "newest clang is 19 (set build.hip_clang to a clang %u or "
                    "newer)",
                    tc->name, tc->version, arch, hip_clang_archs[i].since,
                    hip_clang_archs[i].since);
    }
    if (tc->backend == KB_BACKEND_ROCM && !tc->hip_stub && !kbi_rocm5_era_arch(arch))
        return kbi_asprintf("%s %s cannot build %s: ROCm 5 predates it (the rocm6 target is built "
                            "with hip-clang)",
                            tc->name, tc->version, arch);
    if (tc->backend == KB_BACKEND_ROCM && !tc->hip_stub)
        return kbi_asprintf("%s %s cannot build %s: its clang and ROCm %u device libraries do not "
                            "know it (the rocm6 target is built with hip-clang)",
                            tc->name, tc->version, arch, tc->hip_major);
    return kbi_asprintf("%s %s cannot build %s", tc->name, tc->version, arch);
}

int kbi_cpu_levels(const char *host_arch, kb_strv *out)
{
    if (strcmp(host_arch, "x86_64") == 0) {
        if (kbi_strv_push(out, "x86_64_v2") || kbi_strv_push(out, "x86_64_v3") ||
            kbi_strv_push(out, "x86_64_v4"))
            return KB_ERR_NOMEM;
    } else if (strcmp(host_arch, "aarch64") == 0 || strcmp(host_arch, "arm64") == 0) {
        if (kbi_strv_push(out, "aarch64"))
            return KB_ERR_NOMEM;
    }
    return 0;
}

void kbi_host_cpu_level(const kb_ctx *ctx, char *out, size_t size)
{
    const char *forced = kbi_config_str(ctx, "probe.cpu");
    if (forced && *forced) {
        snprintf(out, size, "%s", forced);
        return;
    }
    char arch[32];
    kbi_cpu_host(arch, sizeof(arch), out, size);
}

/* Run `exe args...` and keep its output; false when it does not run or exits non-zero. */
static bool capture(kb_ctx *ctx, const char *const *argv, kb_buf *out)
{
    kb_proc_result r;
    if (kbi_proc_run(ctx, &r, argv, NULL, VERSION_TIMEOUT_MS) != 0) {
        kb_ctx_clear_error(ctx);
        kbi_proc_result_free(&r);
        return false;
    }
    bool ok = r.exit_code == 0;
    if (ok) {
        *out = r.output;
        r.output = (kb_buf)KB_BUF_INIT;
    }
    kbi_proc_result_free(&r);
    return ok;
}

/* The setting (an explicit path), else PATH, else fallback; NULL when none. */
static char *locate(const kb_ctx *ctx, const char *setting, const char *name, const char *fallback)
{
    const char *forced = kbi_config_str(ctx, setting);
    char *path = NULL;
    if (forced && *forced)
        return kbi_which(&path, forced) == 0 ? path : NULL;
    if (kbi_which(&path, name) == 0)
        return path;
    if (fallback && kbi_which(&path, fallback) == 0)
        return path;
    return NULL;
}

/* Does the line (len bytes) hold needle? */
static bool line_names(const char *line, size_t len, const char *needle)
{
    size_t n = needle ? strlen(needle) : 0;
    for (size_t i = 0; n && i + n <= len; i++)
        if (memcmp(line + i, needle, n) == 0)
            return true;
    return false;
}

/* The toolchain's identity from what it says it is, never from where it is: nvcc under
 * /opt/cuda on one worker and /usr/local/cuda on another is one toolchain, and keys built from
 * it must agree, or the second worker's publish is refused as different bytes. The --version
 * text is hashed without its lines that name folders (clang's InstalledDir) and without the
 * first word, which is the name it was called by (gcc says "cc" or "gcc"). */
int kbi_toolchain_identity(kb_toolchain *tc, const char *version_output)
{
    kb_buf norm = KB_BUF_INIT;
    const char *p = version_output ? version_output : "";
    bool first = true;
    while (*p) {
        size_t len = strcspn(p, "\n");
        const char *line = p;
        p += len + (p[len] == '\n');
        if (kbi_str_starts(line, "InstalledDir:") || line_names(line, len, tc->path))
            continue;
        if (first) {
            size_t word = strcspn(line, " \n");
            line += word < len ? word : len;
            len -= word < len ? word : len;
            first = false;
        }
        if (kbi_buf_append(&norm, line, len) || kbi_buf_append(&norm, "\n", 1)) {
            kbi_buf_free(&norm);
            return KB_ERR_NOMEM;
        }
    }
    char digest[65];
    kbi_sha256_hex(norm.data ? norm.data : "", norm.len, digest);
    kbi_buf_free(&norm);
    free(tc->id);
    tc->id = kbi_asprintf("%s-%s-%.12s", tc->name, tc->version, digest);
    return tc->id ? 0 : KB_ERR_NOMEM;
}

static void mark_missing(kb_toolchain *tc, const char *fmt, const char *arg)
{
    tc->found = false;
    free(tc->note);
    tc->note = kbi_asprintf(fmt, arg);
}

/* Not located: name the setting when one points at nothing, since "not in PATH" would send
 * someone who set build.nvcc looking in the wrong place. */
static void mark_not_located(const kb_ctx *ctx, kb_toolchain *tc, const char *setting,
                             const char *fmt, const char *name)
{
    const char *forced = kbi_config_str(ctx, setting);
    if (!forced || !*forced) {
        mark_missing(tc, fmt, name);
        return;
    }
    tc->found = false;
    free(tc->note);
    tc->note = kbi_asprintf("%s is %s, which is not an executable", setting, forced);
}

static int discover_nvcc(kb_ctx *ctx, kb_toolchain *tc)
{
    tc->path = locate(ctx, "build.nvcc", "nvcc", "/usr/local/cuda/bin/nvcc");
    if (!tc->path) {
        mark_not_located(ctx, tc, "build.nvcc", "%s not found in PATH or /usr/local/cuda/bin",
                         "nvcc");
        return 0;
    }
    kb_buf out = KB_BUF_INIT;
    const char *argv[] = {tc->path, "--version", NULL};
    char ver[32];
    if (!capture(ctx, argv, &out) || !kbi_parse_nvcc_version(out.data, ver, sizeof(ver))) {
        kbi_buf_free(&out);
        mark_missing(tc, "%s --version did not report a CUDA release", tc->path);
        return 0;
    }
    tc->version = kbi_strdup(ver);
    int rc = tc->version ? kbi_toolchain_identity(tc, out.data) : KB_ERR_NOMEM;
    kbi_buf_free(&out);
    if (rc)
        return kbi_error_oom(ctx);
    const char *codes[] = {tc->path, "--list-gpu-code", NULL};
    const char *virt[] = {tc->path, "--list-gpu-arch", NULL};
    if (capture(ctx, codes, &out))
        kbi_parse_nvcc_arch_list(out.data, &tc->archs);
    kbi_buf_free(&out);
    if (capture(ctx, virt, &out))
        kbi_parse_nvcc_arch_list(out.data, &tc->archs);
    kbi_buf_free(&out);
    if (tc->archs.len == 0)
        kbi_nvcc_default_archs((unsigned)strtoul(ver, NULL, 10), &tc->archs);
    if (kbi_nvcc_add_arch_specific(&tc->archs))
        return KB_ERR_NOMEM;
    kbi_strv_sort(&tc->archs);
    tc->found = true;
    return 0;
}

static const char *const device_lib_dirs[] = {
    "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", "/usr/lib/aarch64-linux-gnu/amdgcn/bitcode",
    "/opt/rocm/amdgcn/bitcode", "/opt/rocm/lib/amdgcn/bitcode", "/usr/lib/amdgcn/bitcode"};

static int list_dir(const char *dir, kb_strv *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return KB_ERR_NOT_FOUND;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && kbi_strv_push(out, e->d_name)) {
            closedir(d);
            return KB_ERR_NOMEM;
        }
    closedir(d);
    kbi_strv_sort(out);
    return 0;
}

static char *find_device_libs(const kb_ctx *ctx)
{
    const char *forced = kbi_config_str(ctx, "build.rocm_device_libs");
    if (forced && *forced)
        return kbi_is_dir(forced) ? kbi_strdup(forced) : NULL;
    const char *rocm = getenv("ROCM_PATH");
    if (rocm && *rocm) {
        char *p = kbi_asprintf("%s/amdgcn/bitcode", rocm);
        if (p && kbi_is_dir(p))
            return p;
        free(p);
    }
    for (size_t i = 0; i < KB_ARRAY_LEN(device_lib_dirs); i++)
        if (kbi_is_dir(device_lib_dirs[i]))
            return kbi_strdup(device_lib_dirs[i]);
    return NULL;
}

/* hipcc's clang: InstalledDir/clang-<major>, else InstalledDir/clang. */
static char *find_hip_clang(unsigned major, const char *dir)
{
    char *cand = kbi_asprintf("%s/clang-%u", dir, major);
    char *found = NULL;
    if (cand && kbi_which(&found, cand) == 0) {
        free(cand);
        return found;
    }
    free(cand);
    cand = kbi_asprintf("%s/clang", dir);
    if (cand && kbi_which(&found, cand) != 0)
        found = NULL;
    free(cand);
    return found;
}

/* llvm-objdump for the code objects: next to the HIP clang, else llvm-objdump-19 (which knows
 * every arch kbpkg builds); NULL when neither is installed. */
static char *find_objdump(const char *clang_dir)
{
    char *found = NULL;
    char *cand = clang_dir ? kbi_path_join(clang_dir, "llvm-objdump") : NULL;
    if (cand && kbi_which(&found, cand) == 0) {
        free(cand);
        return found;
    }
    free(cand);
    if (kbi_which(&found, "llvm-objdump-19") == 0)
        return found;
    return NULL;
}

static int discover_hipcc(kb_ctx *ctx, kb_toolchain *tc)
{
    tc->path = locate(ctx, "build.hipcc", "hipcc", "/opt/rocm/bin/hipcc");
    if (!tc->path) {
        mark_not_located(ctx, tc, "build.hipcc", "%s not found in PATH or /opt/rocm/bin", "hipcc");
        return 0;
    }
    kb_buf out = KB_BUF_INIT;
    const char *argv[] = {tc->path, "--version", NULL};
    char ver[32], clang_dir[512];
    unsigned major = 0;
    if (!capture(ctx, argv, &out) || !kbi_parse_hipcc_version(out.data, ver, sizeof(ver))) {
        kbi_buf_free(&out);
        mark_missing(tc, "%s --version did not report a HIP version", tc->path);
        return 0;
    }
    bool have_clang = kbi_parse_hipcc_clang(out.data, &major, clang_dir, sizeof(clang_dir));
    tc->version = kbi_strdup(ver);
    tc->hip_major = (unsigned)strtoul(ver, NULL, 10);
    int rc = tc->version ? kbi_toolchain_identity(tc, out.data) : KB_ERR_NOMEM;
    kbi_buf_free(&out);
    if (rc)
        return kbi_error_oom(ctx);
    tc->clang = have_clang ? find_hip_clang(major, clang_dir) : NULL;
    tc->objdump = find_objdump(NULL);
    tc->device_libs = find_device_libs(ctx);
    if (!tc->device_libs) {
        mark_missing(tc, "%s: no ROCm device libraries (oclc_isa_version_*.bc) found", tc->path);
        return 0;
    }
    kb_strv files = KB_STRV_INIT;
    rc = list_dir(tc->device_libs, &files);
    if (rc == 0)
        rc =
            kbi_rocm_archs_from_libs(&files, tc->clang ? major : 0, &tc->archs, &tc->overlay_archs);
    kbi_strv_free(&files);
    if (rc == KB_ERR_NOMEM)
        return kbi_error_oom(ctx);
    if (tc->overlay_archs.len)
        tc->note = kbi_asprintf("%s via a generated device-lib overlay (isa-version bitcode)",
                                tc->overlay_archs.items[0]);
    tc->found = true;
    return 0;
}

/* A file the HIP clang needs: dir/name when it is executable, else a note naming the Debian
 * package that provides it. */
static bool need_tool(kb_toolchain *tc, const char *dir, const char *name, const char *package)
{
    char *path = kbi_path_join(dir, name), *found = NULL;
    bool ok = path && kbi_which(&found, path) == 0;
    if (!ok) {
        tc->found = false;
        free(tc->note);
        tc->note = kbi_asprintf("%s: %s is missing (install the Debian package %s)", tc->path,
                                path ? path : name, package);
    }
    free(path);
    free(found);
    return ok;
}

static const char *const hip_header_dirs[] = {"/usr/include/hip", "/opt/rocm/include/hip"};

/* The first folder with hip_runtime.h, or NULL. */
static const char *hip_header_dir(void)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(hip_header_dirs); i++) {
        char *h = kbi_path_join(hip_header_dirs[i], "hip_runtime.h");
        bool ok = h && kbi_path_exists(h);
        free(h);
        if (ok)
            return hip_header_dirs[i];
    }
    return NULL;
}

/* "5.2" from hip_version.h's HIP_VERSION_MAJOR/MINOR; NULL when unreadable. */
static char *hip_headers_version(const char *dir)
{
    char *path = kbi_path_join(dir, "hip_version.h");
    kb_buf text = KB_BUF_INIT;
    char *out = NULL;
    if (path && kbi_read_file(NULL, path, &text) == 0 && text.data) {
        const char *ma = strstr(text.data, "#define HIP_VERSION_MAJOR ");
        const char *mi = strstr(text.data, "#define HIP_VERSION_MINOR ");
        if (ma && mi)
            out = kbi_asprintf("%lu.%lu", strtoul(ma + 26, NULL, 10), strtoul(mi + 26, NULL, 10));
    }
    kbi_buf_free(&text);
    free(path);
    return out;
}

/* What the overlay must add for hip-clang: isa-version bitcode for the archs the device
 * libraries lack (ROCm 5.2's stop at gfx1036 and gfx940), and the v6 ABI-version bitcode. */
static int hip_clang_overlay_needs(kb_toolchain *tc, const kb_strv *lib_files)
{
    for (size_t i = 0; i < tc->archs.len; i++) {
        char *file = kbi_asprintf("oclc_isa_version_%s.bc", tc->archs.items[i] + 3);
        if (!file)
            return KB_ERR_NOMEM;
        bool have = kbi_strv_contains(lib_files, file);
        free(file);
        if (!have && kbi_strv_push(&tc->overlay_archs, tc->archs.items[i]))
            return KB_ERR_NOMEM;
    }
    tc->overlay_abi6 = !kbi_strv_contains(lib_files, "oclc_abi_version_600.bc");
    return 0;
}

/* clang-19 with Debian's HIP headers and ROCm device libraries. Every missing piece is named
 * with its package, so a build says exactly what to install instead of skipping quietly. */
static int discover_hip_clang(kb_ctx *ctx, kb_toolchain *tc)
{
    tc->hip_major = 6;
    tc->hip_stub = true;
    tc->path = locate(ctx, "build.hip_clang", "clang-19", "/usr/lib/llvm-19/bin/clang");
    if (!tc->path) {
        mark_not_located(ctx, tc, "build.hip_clang",
                         "%s not found in PATH (install the Debian packages clang-19, "
                         "clang-tools-19, lld-19 and llvm-19)",
                         "clang-19");
        return 0;
    }
    kb_buf out = KB_BUF_INIT;
    const char *argv[] = {tc->path, "--version", NULL};
    char ver[32], dir[512];
    unsigned major = 0;
    bool ok = capture(ctx, argv, &out) && kbi_parse_cc_version(out.data, ver, sizeof(ver)) &&
              kbi_parse_hipcc_clang(out.data, &major, dir, sizeof(dir));
    if (!ok) {
        kbi_buf_free(&out);
        mark_missing(tc, "%s --version did not report a clang version", tc->path);
        return 0;
    }
    tc->version = kbi_strdup(ver);
    int rc = tc->version ? kbi_toolchain_identity(tc, out.data) : KB_ERR_NOMEM;
    kbi_buf_free(&out);
    if (rc)
        return kbi_error_oom(ctx);
    if (major < HIP_CLANG_MIN_MAJOR) {
        tc->found = false;
        tc->note = kbi_asprintf("%s is clang %s; ROCm 6 targets need clang %u or newer (install "
                                "the Debian package clang-19)",
                                tc->path, ver, HIP_CLANG_MIN_MAJOR);
        return 0;
    }
    tc->clang = kbi_strdup(tc->path);
    tc->found = true;
    if (!need_tool(tc, dir, "clang-offload-bundler", "clang-tools-19") ||
        !need_tool(tc, dir, "ld.lld", "lld-19") || !need_tool(tc, dir, "llvm-objdump", "llvm-19"))
        return 0;
    tc->objdump = kbi_path_join(dir, "llvm-objdump");
    const char *headers = hip_header_dir();
    if (!headers) {
        mark_missing(tc,
                     "%s: the HIP headers (hip/hip_runtime.h) are missing (install the Debian "
                     "package libamdhip64-dev)",
                     tc->path);
        return 0;
    }
    tc->hip_headers = hip_headers_version(headers);
    tc->device_libs = find_device_libs(ctx);
    if (!tc->device_libs) {
        mark_missing(tc,
                     "%s: no ROCm device libraries (install the Debian package rocm-device-libs "
                     "or set build.rocm_device_libs)",
                     tc->path);
        return 0;
    }
    kb_strv files = KB_STRV_INIT;
    rc = list_dir(tc->device_libs, &files);
    if (!rc)
        rc = kbi_hip_clang_archs(major, &tc->archs);
    if (!rc)
        rc = hip_clang_overlay_needs(tc, &files);
    kbi_strv_free(&files);
    if (rc == KB_ERR_NOMEM)
        return kbi_error_oom(ctx);
    tc->note = kbi_asprintf("ROCm 6 ABI through a libamdhip64.so.6 stub; device libraries %s%s",
                            tc->device_libs,
                            tc->overlay_archs.len ? " plus generated isa/abi-version bitcode" : "");
    return 0;
}

static int discover_cc(kb_ctx *ctx, kb_toolchain *tc)
{
    tc->path = locate(ctx, "build.cc", "cc", "gcc");
    if (!tc->path) {
        mark_not_located(ctx, tc, "build.cc", "%s not found in PATH", "cc");
        return 0;
    }
    kb_buf out = KB_BUF_INIT;
    const char *argv[] = {tc->path, "--version", NULL};
    char ver[32];
    if (!capture(ctx, argv, &out) || !kbi_parse_cc_version(out.data, ver, sizeof(ver))) {
        kbi_buf_free(&out);
        mark_missing(tc, "%s --version did not report a version", tc->path);
        return 0;
    }
    tc->version = kbi_strdup(ver);
    int rc = tc->version ? kbi_toolchain_identity(tc, out.data) : KB_ERR_NOMEM;
    kbi_buf_free(&out);
    if (rc)
        return kbi_error_oom(ctx);
    char arch[16], os[16];
    kbi_host_platform(arch, sizeof(arch), os, sizeof(os));
    if (kbi_cpu_levels(arch, &tc->archs))
        return kbi_error_oom(ctx);
    tc->found = true;
    return 0;
}

static int discover_metal(kb_ctx *ctx, kb_toolchain *tc)
{
#if defined(__APPLE__)
    char *xcrun = NULL;
    if (kbi_which(&xcrun, "xcrun") != 0) {
        mark_missing(tc, "%s not found (install the Xcode command line tools)", "xcrun");
        return 0;
    }
    kb_buf out = KB_BUF_INIT;
    const char *argv[] = {xcrun, "-sdk", "macosx", "metal", "--version", NULL};
    char ver[32];
    bool ok = capture(ctx, argv, &out) && kbi_parse_cc_version(out.data, ver, sizeof(ver));
    tc->path = xcrun;
    if (!ok) {
        kbi_buf_free(&out);
        mark_missing(tc, "%s metal --version failed", xcrun);
        return 0;
    }
    tc->version = kbi_strdup(ver);
    int rc = tc->version ? kbi_toolchain_identity(tc, out.data) : KB_ERR_NOMEM;
    kbi_buf_free(&out);
    if (rc)
        return kbi_error_oom(ctx);
    if (kbi_strv_push(&tc->archs, "apple"))
        return kbi_error_oom(ctx);
    tc->found = true;
    return 0;
#else
    mark_missing(tc, "%s: Metal targets build only on macOS (xcrun metal)", "metal");
    return 0;
#endif
}

int kbi_toolchains_discover(kb_ctx *ctx, kb_toolchains *out)
{
    return kbi_toolchains_discover_some(ctx, out, ~0u);
}

static void log_toolchain(kb_ctx *ctx, const kb_toolchain *tc)
{
    if (tc->found)
        kbi_log(ctx, KB_LOG_DEBUG, "toolchain %s %s at %s", tc->name, tc->version, tc->path);
    else
        kbi_log(ctx, KB_LOG_DEBUG, "toolchain %s: %s", tc->name, tc->note);
}

int kbi_toolchains_discover_some(kb_ctx *ctx, kb_toolchains *out, unsigned backend_mask)
{
    memset(out, 0, sizeof(*out));
    static const struct {
        kb_backend backend;
        const char *name;
        int (*discover)(kb_ctx *, kb_toolchain *);
    } kinds[] = {{KB_BACKEND_CUDA, "nvcc", discover_nvcc},
                 {KB_BACKEND_ROCM, "hipcc", discover_hipcc},
                 {KB_BACKEND_METAL, "metal", discover_metal},
                 {KB_BACKEND_CPU, "cc", discover_cc}};
    for (size_t i = 0; i < KB_ARRAY_LEN(kinds); i++) {
        kb_toolchain *tc = &out->tc[kinds[i].backend];
        tc->backend = kinds[i].backend;
        tc->name = kinds[i].name;
        if (!(backend_mask & (1u << kinds[i].backend)))
            continue; /* not needed: probing nvcc/hipcc costs seconds */
        int rc = kinds[i].discover(ctx, tc);
        if (rc) {
            kbi_toolchains_free(out);
            return rc;
        }
        log_toolchain(ctx, tc);
    }
    out->hip_clang.backend = KB_BACKEND_ROCM;
    out->hip_clang.name = "hip-clang";
    out->hip_clang.hip_major = 6;
    if (backend_mask & (1u << KB_BACKEND_ROCM)) {
        int rc = discover_hip_clang(ctx, &out->hip_clang);
        if (rc) {
            kbi_toolchains_free(out);
            return rc;
        }
        log_toolchain(ctx, &out->hip_clang);
    }
    return 0;
}

static void toolchain_free(kb_toolchain *tc)
{
    free(tc->path);
    free(tc->version);
    free(tc->id);
    free(tc->note);
    free(tc->clang);
    free(tc->device_libs);
    free(tc->objdump);
    free(tc->hip_headers);
    kbi_strv_free(&tc->archs);
    kbi_strv_free(&tc->overlay_archs);
    memset(tc, 0, sizeof(*tc));
}

void kbi_toolchains_free(kb_toolchains *t)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(t->tc); i++)
        toolchain_free(&t->tc[i]);
    toolchain_free(&t->hip_clang);
}

bool kbi_toolchain_can_build(const kb_toolchain *tc, const char *arch)
{
    return tc && tc->found && kbi_strv_contains(&tc->archs, arch);
}

static int copy_info(kb_toolchain_info *info, const kb_toolchain *tc)
{
    info->name = kbi_strdup(tc->name);
    info->backend = kbi_strdup(kbi_backend_name(tc->backend));
    info->found = tc->found;
    info->version = kbi_strdup(tc->version);
    info->path = kbi_strdup(tc->path);
    info->id = kbi_strdup(tc->id);
    info->note = kbi_strdup(tc->note);
    info->archs = tc->archs.len ? calloc(tc->archs.len, sizeof(char *)) : NULL;
    if (!info->name || !info->backend || (tc->archs.len && !info->archs))
        return KB_ERR_NOMEM;
    for (size_t i = 0; i < tc->archs.len; i++) {
        if (!(info->archs[i] = kbi_strdup(tc->archs.items[i])))
            return KB_ERR_NOMEM;
        info->arch_count++;
    }
    return 0;
}

KB_EXTERN int kb_toolchains_list(kb_toolchain_list **out, kb_ctx *ctx)
{
    *out = NULL;
    kb_toolchains tcs;
    int rc = kbi_toolchains_discover(ctx, &tcs);
    if (rc)
        return rc;
    kb_toolchain_list *list = calloc(1, sizeof(*list));
    if (list)
        list->items = calloc(KB_ARRAY_LEN(tcs.tc) + 1, sizeof(*list->items));
    static const kb_backend order[] = {KB_BACKEND_CUDA, KB_BACKEND_ROCM, KB_BACKEND_METAL,
                                       KB_BACKEND_CPU};
    for (size_t i = 0; list && list->items && i < KB_ARRAY_LEN(order); i++) {
        if ((rc = copy_info(&list->items[list->count++], &tcs.tc[order[i]])))
            break;
        if (order[i] == KB_BACKEND_ROCM &&
            (rc = copy_info(&list->items[list->count++], &tcs.hip_clang)))
            break;
    }
    kbi_toolchains_free(&tcs);
    if (!list || !list->items || rc) {
        kb_toolchain_list_free(list);
        return kbi_error_oom(ctx);
    }
    *out = list;
    return 0;
}

KB_EXTERN void kb_toolchain_list_free(kb_toolchain_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->count; i++) {
        kb_toolchain_info *t = &list->items[i];
        free(t->name);
        free(t->backend);
        free(t->version);
        free(t->path);
        free(t->id);
        free(t->note);
        for (size_t j = 0; j < t->arch_count; j++)
            free(t->archs[j]);
        free(t->archs);
    }
    free(list->items);
    free(list);
}
