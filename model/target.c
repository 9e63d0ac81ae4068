/* Target ids, arch names and device override lists: parsing, validation, canonical format. */
#include "model/target_arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the arch tables ---- */

/* SASS archs kbpkg builds (CUDA 13 builds sm_75 and newer; sm_101 became sm_110). */
static const unsigned cuda_build_archs[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
/* Older chips that exist as devices although nothing is built for them. */
static const unsigned cuda_old_device_archs[] = {50, 52, 53, 60, 61, 62, 70, 72};

enum { ROCM_XNACK = 1, ROCM_SRAMECC = 2 };

typedef struct rocm_processor {
    const char *name;
    unsigned features; /* which of xnack/sramecc the processor has (LLVM's processor table) */
} rocm_processor;

static const rocm_processor rocm_processors[] = {
    {"gfx900", ROCM_XNACK},
    {"gfx902", ROCM_XNACK},
    {"gfx904", ROCM_XNACK},
    {"gfx906", ROCM_XNACK | ROCM_SRAMECC},
    {"gfx908", ROCM_XNACK | ROCM_SRAMECC},
    {"gfx909", ROCM_XNACK},
    {"gfx90a", ROCM_XNACK | ROCM_SRAMECC},
    {"gfx90c", ROCM_XNACK},
    {"gfx940", ROCM_XNACK | ROCM_SRAMECC},
    {"gfx941", ROCM_XNACK | ROCM_SRAMECC},
    {"gfx942", ROCM_XNACK | ROCM_SRAMECC},
    {"gfx1010", ROCM_XNACK},
    {"gfx1011", ROCM_XNACK},
    {"gfx1012", ROCM_XNACK},
    {"gfx1013", ROCM_XNACK},
    {"gfx1030", 0},
    {"gfx1031", 0},
    {"gfx1032", 0},
    {"gfx1033", 0},
    {"gfx1034", 0},
    {"gfx1035", 0},
    {"gfx1036", 0},
    {"gfx1100", 0},
    {"gfx1101", 0},
    {"gfx1102", 0},
    {"gfx1103", 0},
    {"gfx1150", 0},
    {"gfx1151", 0},
    {"gfx1152", 0},
    {"gfx1200", 0},
    {"gfx1201", 0},
};

typedef struct rocm_generic {
    const char *name;
    unsigned features;
    const char *covers[8];
} rocm_generic;

/* Generic targets and the processors each covers (LLVM AMDGPUUsage). They are code object v6,
 * which the ROCm runtime loads from 6.2 on. */
static const rocm_generic rocm_generics[] = {
    {"gfx9-generic", ROCM_XNACK, {"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}},
    {"gfx9-4-generic", ROCM_XNACK | ROCM_SRAMECC, {"gfx940", "gfx941", "gfx942"}},
    {"gfx10-1-generic", ROCM_XNACK, {"gfx1010", "gfx1011", "gfx1012", "gfx1013"}},
    {"gfx10-3-generic",
     0,
     {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}},
    {"gfx11-generic",
     0,
     {"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152"}},
    {"gfx12-generic", 0, {"gfx1200", "gfx1201"}},
};

static const char *const cpu_x86_levels[] = {"x86_64_v2", "x86_64_v3", "x86_64_v4"};

static bool why_set(char *why, size_t why_size, const char *fmt, ...) KB_PRINTF(3, 4);

static bool why_set(char *why, size_t why_size, const char *fmt, ...)
{
    if (why && why_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool in_list(const unsigned *list, size_t n, unsigned v)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == v)
            return true;
    return false;
}

/* A decimal number of 2-3 digits without a leading zero; *end gets the first non-digit. */
static bool parse_arch_number(const char *s, unsigned *out, const char **end)
{
    unsigned v = 0;
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9' && n < 4)
        v = v * 10 + (unsigned)(s[n++] - '0');
    if (n < 2 || n > 3 || s[0] == '0')
        return false;
    *out = v;
    *end = s + n;
    return true;
}

/* ---- CUDA ---- */

static bool decode_cuda(kb_arch_info *out, const char *arch, bool is_device, char *why,
                        size_t why_size)
{
    const char *digits;
    if (kbi_str_starts(arch, "sm_"))
        digits = arch + 3;
    else if (kbi_str_starts(arch, "compute_")) {
        if (is_device)
            return why_set(why, why_size,
                           "'%s' is a PTX virtual arch; a device is a real arch like sm_86", arch);
        out->cuda_ptx = true;
        digits = arch + 8;
    } else
        return why_set(why, why_size,
                       "'%s' is not a CUDA arch (expected sm_XY, sm_XYa or compute_XY)", arch);
    const char *rest;
    if (!parse_arch_number(digits, &out->cuda_number, &rest))
        return why_set(why, why_size, "'%s' has no arch number (expected e.g. sm_86)", arch);
    if (strcmp(rest, "a") == 0) {
        if (is_device)
            return why_set(why, why_size,
                           "'%s': the 'a' suffix marks arch-specific code; the device is sm_%u",
                           arch, out->cuda_number);
        out->cuda_specific = true;
    } else if (*rest)
        return why_set(why, why_size, "'%s' has junk '%s' after the arch number", arch, rest);
    bool known = in_list(cuda_build_archs, KB_ARRAY_LEN(cuda_build_archs), out->cuda_number);
    if (!known && is_device &&
        in_list(cuda_old_device_archs, KB_ARRAY_LEN(cuda_old_device_archs), out->cuda_number))
        return true;
    if (!known && out->cuda_number < 75)
        return why_set(why, why_size, "%s is older than sm_75, the oldest arch CUDA 13 builds",
                       arch);
    if (!known)
        return why_set(why, why_size, "unknown CUDA arch '%s'", arch);
    if (out->cuda_specific && out->cuda_number < 90)
        return why_set(why, why_size, "'%s': arch-specific 'a' variants exist from sm_90a on",
                       arch);
    return true;
}

/* ---- ROCm ---- */

static const rocm_processor *find_processor(const char *name)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(rocm_processors); i++)
        if (strcmp(rocm_processors[i].name, name) == 0)
            return &rocm_processors[i];
    return NULL;
}

static const rocm_generic *find_generic(const char *name)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(rocm_generics); i++)
        if (strcmp(rocm_generics[i].name, name) == 0)
            return &rocm_generics[i];
    return NULL;
}

bool kbi_rocm_generic_covers(const char *generic, const char *gfx)
{
    const rocm_generic *g = find_generic(generic);
    for (size_t i = 0; g && i < KB_ARRAY_LEN(g->covers) && g->covers[i]; i++)
        if (strcmp(g->covers[i], gfx) == 0)
            return true;
    return false;
}

/* One ":feature+" or ":feature-" of an LLVM target id. */
static bool decode_rocm_feature(kb_arch_info *out, const char *arch, const char *feat, size_t len,
                                unsigned supported, char *why, size_t why_size)
{
    if (len < 2 || (feat[len - 1] != '+' && feat[len - 1] != '-'))
        return why_set(why, why_size, "'%s': feature '%.*s' needs a + or - (e.g. xnack-)", arch,
                       (int)len, feat);
    kb_feature value = feat[len - 1] == '+' ? KB_FEATURE_ON : KB_FEATURE_OFF;
    size_t name_len = len - 1;
    kb_feature *slot;
    unsigned bit;
    if (name_len == 5 && memcmp(feat, "xnack", 5) == 0) {
        slot = &out->xnack;
        bit = ROCM_XNACK;
    } else if (name_len == 7 && memcmp(feat, "sramecc", 7) == 0) {
        slot = &out->sramecc;
        bit = ROCM_SRAMECC;
    } else
        return why_set(why, why_size, "'%s': unknown feature '%.*s' (expected xnack or sramecc)",
                       arch, (int)name_len, feat);
    if (*slot != KB_FEATURE_ANY)
        return why_set(why, why_size, "'%s': feature '%.*s' given twice", arch, (int)name_len,
                       feat);
    if (!(supported & bit))
        return why_set(why, why_size, "'%s': %s has no %.*s feature", arch, out->gfx, (int)name_len,
                       feat);
    *slot = value;
    return true;
}

static bool decode_rocm(kb_arch_info *out, const char *arch, bool is_device, char *why,
                        size_t why_size)
{
    const char *colon = strchr(arch, ':');
    size_t base_len = colon ? (size_t)(colon - arch) : strlen(arch);
    if (base_len == 0 || base_len >= sizeof(out->gfx))
        return why_set(why, why_size, "'%s' is not an AMD GPU arch (expected e.g. gfx1030)", arch);
    memcpy(out->gfx, arch, base_len);
    out->gfx[base_len] = '\0';
    unsigned supported;
    const rocm_processor *p = find_processor(out->gfx);
    const rocm_generic *g = p ? NULL : find_generic(out->gfx);
    if (p)
        supported = p->features;
    else if (g) {
        if (is_device)
            return why_set(why, why_size,
                           "'%s' is a generic code target; a device is a real gfx like gfx1100",
                           arch);
        out->rocm_generic = true;
        supported = g->features;
    } else
        return why_set(why, why_size, "unknown AMD GPU arch '%s'", out->gfx);
    while (colon) {
        const char *feat = colon + 1;
        colon = strchr(feat, ':');
        size_t len = colon ? (size_t)(colon - feat) : strlen(feat);
        if (!decode_rocm_feature(out, arch, feat, len, supported, why, why_size))
            return false;
    }
    return true;
}

/* ---- Metal and CPU ---- */

static bool decode_metal(kb_arch_info *out, const char *arch, char *why, size_t why_size)
{
    (void)out;
    if (strcmp(arch, "apple") != 0)
        return why_set(why, why_size, "unknown Metal GPU family '%s' (expected apple)", arch);
    return true;
}

static bool decode_cpu(kb_arch_info *out, const char *arch, char *why, size_t why_size)
{
    if (strcmp(arch, "aarch64") == 0) {
        out->cpu_aarch64 = true;
        return true;
    }
    for (size_t i = 0; i < KB_ARRAY_LEN(cpu_x86_levels); i++)
        if (strcmp(arch, cpu_x86_levels[i]) == 0) {
            out->cpu_level = (unsigned)i + 2;
            return true;
        }
    return why_set(why, why_size,
                   "unknown CPU arch '%s' (expected x86_64_v2, x86_64_v3, x86_64_v4 or aarch64)",
                   arch);
}

bool kbi_arch_decode(kb_arch_info *out, kb_backend backend, const char *arch, bool is_device,
                     char *why, size_t why_size)
{
    memset(out, 0, sizeof(*out));
    out->backend = backend;
    if (!arch || !*arch)
        return why_set(why, why_size, "empty arch name");
    switch (backend) {
    case KB_BACKEND_CUDA:
        return decode_cuda(out, arch, is_device, why, why_size);
    case KB_BACKEND_ROCM:
        return decode_rocm(out, arch, is_device, why, why_size);
    case KB_BACKEND_METAL:
        return decode_metal(out, arch, why, why_size);
    case KB_BACKEND_CPU:
        return decode_cpu(out, arch, why, why_size);
    default:
        return why_set(why, why_size, "no backend for arch '%s'", arch);
    }
}

static const char *feature_sign(kb_feature f)
{
    return f == KB_FEATURE_ON ? "+" : "-";
}

void kbi_arch_format(const kb_arch_info *a, char *buf, size_t size)
{
    switch (a->backend) {
    case KB_BACKEND_CUDA:
        snprintf(buf, size, "%s%u%s", a->cuda_ptx ? "compute_" : "sm_", a->cuda_number,
                 a->cuda_specific ? "a" : "");
        break;
    case KB_BACKEND_ROCM: {
        /* LLVM's canonical target id lists features alphabetically: sramecc before xnack. */
        char sramecc[16] = "", xnack[16] = "";
        if (a->sramecc != KB_FEATURE_ANY)
            snprintf(sramecc, sizeof(sramecc), ":sramecc%s", feature_sign(a->sramecc));
        if (a->xnack != KB_FEATURE_ANY)
            snprintf(xnack, sizeof(xnack), ":xnack%s", feature_sign(a->xnack));
        snprintf(buf, size, "%s%s%s", a->gfx, sramecc, xnack);
        break;
    }
    case KB_BACKEND_METAL:
        snprintf(buf, size, "apple");
        break;
    case KB_BACKEND_CPU:
        if (a->cpu_aarch64)
            snprintf(buf, size, "aarch64");
        else
            snprintf(buf, size, "x86_64_v%u", a->cpu_level);
        break;
    default:
        snprintf(buf, size, "?");
    }
}

bool kbi_arch_valid(kb_backend backend, const char *arch, char *why, size_t why_size)
{
    kb_arch_info info;
    return kbi_arch_decode(&info, backend, arch, false, why, why_size);
}

/* ---- backends and hosts ---- */

static const char *const backend_names[] = {"none", "cuda", "rocm", "metal", "cpu"};

const char *kbi_backend_name(kb_backend b)
{
    return (size_t)b < KB_ARRAY_LEN(backend_names) ? backend_names[b] : "none";
}

kb_backend kbi_backend_from_name(const char *name)
{
    for (size_t i = 1; name && i < KB_ARRAY_LEN(backend_names); i++)
        if (strcmp(name, backend_names[i]) == 0)
            return (kb_backend)i;
    return KB_BACKEND_NONE;
}

bool kbi_declared_format(char *out, size_t size, kb_backend backend, const char *arch)
{
    int n = snprintf(out, size, "%s%s%s", kbi_backend_name(backend), arch && *arch ? "-" : "",
                     arch ? arch : "");
    return n > 0 && (size_t)n < size;
}

bool kbi_declared_next(kb_backend *backend, char *arch, size_t arch_size, const char *list,
                       size_t *pos)
{
    while (list && list[*pos]) {
        const char *start = list + *pos;
        size_t len = strcspn(start, ",");
        *pos += len + (start[len] == ',');
        char entry[96];
        if (len == 0 || len >= sizeof(entry))
            continue;
        memcpy(entry, start, len);
        entry[len] = '\0';
        char *dash = strchr(entry, '-'); /* backend names have none; archs may (gfx11-generic) */
        if (dash)
            *dash = '\0';
        *backend = kbi_backend_from_name(entry);
        if (*backend == KB_BACKEND_NONE)
            continue;
        snprintf(arch, arch_size, "%s", dash ? dash + 1 : "");
        return true;
    }
    return false;
}

bool kbi_host_arch_equal(const char *a, const char *b)
{
    bool a_arm = strcmp(a, "aarch64") == 0 || strcmp(a, "arm64") == 0;
    bool b_arm = strcmp(b, "aarch64") == 0 || strcmp(b, "arm64") == 0;
    return a_arm || b_arm ? a_arm && b_arm : strcmp(a, b) == 0;
}

typedef struct host_platform {
    const char *arch;
    const char *os;
} host_platform;

/* Each OS spells its 64-bit ARM the way its own tools do. */
static const host_platform host_platforms[] = {
    {"x86_64", "linux"},
    {"aarch64", "linux"},
    {"arm64", "darwin"},
    {"x86_64", "darwin"},
};

static bool host_platform_known(const char *arch, const char *os)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(host_platforms); i++)
        if (strcmp(host_platforms[i].arch, arch) == 0 && strcmp(host_platforms[i].os, os) == 0)
            return true;
    return false;
}

/* Which hosts each backend exists on; NULL when the pair is fine. */
static const char *backend_host_problem(const kb_target *t, const kb_arch_info *a)
{
    bool linux_os = strcmp(t->host_os, "linux") == 0;
    switch (t->backend) {
    case KB_BACKEND_CUDA:
        return linux_os ? NULL : "cuda targets run on linux hosts";
    case KB_BACKEND_ROCM:
        return linux_os && strcmp(t->host_arch, "x86_64") == 0
                   ? NULL
                   : "rocm targets run on x86_64-linux hosts";
    case KB_BACKEND_METAL:
        return strcmp(t->host_arch, "arm64") == 0 && strcmp(t->host_os, "darwin") == 0
                   ? NULL
                   : "metal targets run on arm64-darwin hosts";
    case KB_BACKEND_CPU:
        if (a->cpu_aarch64 != kbi_host_arch_equal(t->host_arch, "aarch64"))
            return "the CPU arch must be the host's arch";
        return NULL;
    default:
        return "no backend";
    }
}

/* "cuda13" -> CUDA, 13; "cpu" -> CPU, 0. */
static int parse_runtime_token(kb_ctx *ctx, kb_target *out, const char *id, const char *tok,
                               size_t len)
{
    size_t letters = 0;
    while (letters < len && tok[letters] >= 'a' && tok[letters] <= 'z')
        letters++;
    char name[16];
    if (letters == 0 || letters >= sizeof(name))
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "bad target id '%s': unknown backend '%.*s' (expected cuda, rocm, "
                             "metal or cpu)",
                             id, (int)len, tok);
    memcpy(name, tok, letters);
    name[letters] = '\0';
    out->backend = kbi_backend_from_name(name);
    if (out->backend == KB_BACKEND_NONE)
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "bad target id '%s': unknown backend '%s' (expected cuda, rocm, "
                             "metal or cpu)",
                             id, name);
    const char *digits = tok + letters;
    size_t ndigits = len - letters;
    if (out->backend == KB_BACKEND_CPU) {
        if (ndigits)
            return kbi_error_set(ctx, KB_ERR_TARGET,
                                 "bad target id '%s': backend 'cpu' takes no runtime version", id);
        return 0;
    }
    char num[8];
    uint64_t major = 0;
    if (ndigits == 0)
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "bad target id '%s': backend '%s' needs a runtime major version, "
                             "e.g. %s%s",
                             id, name, name,
                             out->backend == KB_BACKEND_CUDA   ? "13"
                             : out->backend == KB_BACKEND_ROCM ? "6"
                                                               : "3");
    if (ndigits >= sizeof(num) || digits[0] == '0')
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "bad target id '%s': bad runtime version '%.*s' after '%s'", id,
                             (int)ndigits, digits, name);
    memcpy(num, digits, ndigits);
    num[ndigits] = '\0';
    if (!kbi_parse_u64(num, &major) || major > 99)
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "bad target id '%s': bad runtime version '%s' after '%s'", id, num,
                             name);
    out->runtime_major = (unsigned)major;
    return 0;
}

/* Copy [s, s+len) into dst, or fail naming which part is too long. */
static int copy_part(kb_ctx *ctx, char *dst, size_t dst_size, const char *s, size_t len,
                     const char *id, const char *part)
{
    if (len == 0)
        return kbi_error_set(ctx, KB_ERR_TARGET, "bad target id '%s': empty %s", id, part);
    if (len >= dst_size)
        return kbi_error_set(ctx, KB_ERR_TARGET, "bad target id '%s': %s '%.*s' is too long", id,
                             part, (int)len, s);
    memcpy(dst, s, len);
    dst[len] = '\0';
    return 0;
}

static int check_target_meaning(kb_ctx *ctx, kb_target *out, const char *id)
{
    char why[160];
    kb_arch_info a;
    if (!kbi_arch_decode(&a, out->backend, out->arch, false, why, sizeof(why)))
        return kbi_error_set(ctx, KB_ERR_TARGET, "bad target id '%s': %s", id, why);
    if (a.rocm_generic && out->runtime_major < 6)
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "bad target id '%s': generic target %s needs rocm6 or newer (generic "
                             "targets are code object v6, loaded from ROCm 6.2 on)",
                             id, a.gfx);
    if (!host_platform_known(out->host_arch, out->host_os))
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "bad target id '%s': unknown host '%s-%s' (expected x86_64-linux, "
                             "aarch64-linux, arm64-darwin or x86_64-darwin)",
                             id, out->host_arch, out->host_os);
    const char *problem = backend_host_problem(out, &a);
    if (problem)
        return kbi_error_set(ctx, KB_ERR_TARGET, "bad target id '%s': %s, not %s-%s", id, problem,
                             out->host_arch, out->host_os);
    /* Store the canonical spelling so ids compare with strcmp. */
    kbi_arch_format(&a, out->arch, sizeof(out->arch));
    return 0;
}

int kbi_target_parse(kb_ctx *ctx, kb_target *out, const char *id)
{
    memset(out, 0, sizeof(*out));
    if (!id || !*id)
        return kbi_error_set(ctx, KB_ERR_TARGET, "empty target id");
    /* The arch may contain '-' (gfx11-generic): take the backend from the front and the
     * host arch and OS from the back; what is left in the middle is the arch. */
    const char *first = strchr(id, '-');
    const char *last = strrchr(id, '-');
    const char *before_last = NULL;
    for (const char *p = last; first && p > first + 1 && !before_last; p--)
        if (p[-1] == '-')
            before_last = p - 1;
    if (!first || !before_last)
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "bad target id '%s': expected BACKEND+RUNTIME-ARCH-HOSTARCH-OS, "
                             "e.g. cuda13-sm_90-x86_64-linux",
                             id);
    for (const char *p = id; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return kbi_error_set(ctx, KB_ERR_TARGET,
                                 "bad target id '%s': blank or non-ASCII character at offset %zu",
                                 id, (size_t)(p - id));
    int rc = parse_runtime_token(ctx, out, id, id, (size_t)(first - id));
    if (!rc)
        rc = copy_part(ctx, out->arch, sizeof(out->arch), first + 1,
                       (size_t)(before_last - first - 1), id, "arch");
    if (!rc)
        rc = copy_part(ctx, out->host_arch, sizeof(out->host_arch), before_last + 1,
                       (size_t)(last - before_last - 1), id, "host arch");
    if (!rc)
        rc = copy_part(ctx, out->host_os, sizeof(out->host_os), last + 1, strlen(last + 1), id,
                       "host OS");
    if (!rc)
        rc = check_target_meaning(ctx, out, id);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}

void kbi_target_format(const kb_target *t, char *buf, size_t size)
{
    if (t->backend == KB_BACKEND_CPU)
        snprintf(buf, size, "cpu-%s-%s-%s", t->arch, t->host_arch, t->host_os);
    else
        snprintf(buf, size, "%s%u-%s-%s-%s", kbi_backend_name(t->backend), t->runtime_major,
                 t->arch, t->host_arch, t->host_os);
}

/* ---- device override lists ---- */

/* Which backend a device arch belongs to, from its spelling. */
static kb_backend backend_of_device_arch(const char *arch)
{
    if (kbi_str_starts(arch, "sm_") || kbi_str_starts(arch, "compute_"))
        return KB_BACKEND_CUDA;
    if (kbi_str_starts(arch, "gfx"))
        return KB_BACKEND_ROCM;
    if (strcmp(arch, "apple") == 0)
        return KB_BACKEND_METAL;
    if (kbi_str_starts(arch, "x86_64") || strcmp(arch, "aarch64") == 0)
        return KB_BACKEND_CPU;
    return KB_BACKEND_NONE;
}

/* "cuda12.4", "rocm6", "metal3" for a device of backend b. */
static bool parse_device_runtime(kb_device *d, const char *rt, char *why, size_t why_size)
{
    const char *name = kbi_backend_name(d->backend);
    if (d->backend == KB_BACKEND_CPU)
        return why_set(why, why_size, "a CPU takes no runtime version");
    if (!kbi_str_starts(rt, name))
        return why_set(why, why_size, "runtime '%s' does not match a %s device (expected %sN[.M])",
                       rt, name, name);
    const char *ver = rt + strlen(name);
    const char *dot = strchr(ver, '.');
    char major_text[8];
    size_t major_len = dot ? (size_t)(dot - ver) : strlen(ver);
    uint64_t major = 0, minor = 0;
    if (major_len == 0 || major_len >= sizeof(major_text))
        return why_set(why, why_size, "runtime '%s' has no major version (expected %sN[.M])", rt,
                       name);
    memcpy(major_text, ver, major_len);
    major_text[major_len] = '\0';
    if (!kbi_parse_u64(major_text, &major) || major == 0 || major > 99 ||
        (dot && (!kbi_parse_u64(dot + 1, &minor) || minor > 99)))
        return why_set(why, why_size, "bad runtime version '%s' (expected %sN[.M])", rt, name);
    d->runtime_major = (unsigned)major;
    d->runtime_minor = (unsigned)minor;
    d->runtime_minor_unknown = dot == NULL;
    return true;
}

/* One item: ARCH[@RUNTIME]. */
static bool parse_device_item(kb_device *d, const char *item, char *why, size_t why_size)
{
    const char *at = strchr(item, '@');
    size_t arch_len = at ? (size_t)(at - item) : strlen(item);
    if (arch_len == 0)
        return why_set(why, why_size, "no arch before '@'");
    if (arch_len >= sizeof(d->arch))
        return why_set(why, why_size, "arch is too long");
    memcpy(d->arch, item, arch_len);
    d->arch[arch_len] = '\0';
    d->backend = backend_of_device_arch(d->arch);
    if (d->backend == KB_BACKEND_NONE)
        return why_set(why, why_size,
                       "not a device: expected an arch like sm_86, gfx1030, apple, x86_64_v3, "
                       "aarch64 or 'none'");
    kb_arch_info info;
    if (!kbi_arch_decode(&info, d->backend, d->arch, true, why, why_size))
        return false;
    kbi_arch_format(&info, d->arch, sizeof(d->arch));
    if (at)
        return parse_device_runtime(d, at + 1, why, why_size);
    d->runtime_any = d->backend != KB_BACKEND_CPU;
    return true;
}

static size_t count_items(const char *spec)
{
    size_t n = 1;
    for (const char *p = spec; *p; p++)
        n += *p == ',';
    return n;
}

/* Trim blanks around [*s, *s+*len). */
static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

static int device_item_error(kb_ctx *ctx, const char *spec, size_t index, const char *item,
                             size_t len, const char *why)
{
    return kbi_error_set(ctx, KB_ERR_TARGET, "bad device list '%s': item %zu '%.*s': %s", spec,
                         index + 1, (int)len, item, why);
}

static int parse_device_list(kb_ctx *ctx, kb_device *devs, size_t *count, const char *spec)
{
    const char *p = spec;
    size_t index = 0, backend_index[5] = {0};
    for (;; index++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *item = p;
        trim(&item, &len);
        char text[96], why[192];
        if (len == 0)
            return device_item_error(ctx, spec, index, item, len, "empty item");
        if (len >= sizeof(text))
            return device_item_error(ctx, spec, index, item, len, "too long");
        memcpy(text, item, len);
        text[len] = '\0';
        if (strcmp(text, "none") == 0)
            return device_item_error(ctx, spec, index, item, len,
                                     "'none' means no GPU and must stand alone");
        kb_device *d = &devs[index];
        if (!parse_device_item(d, text, why, sizeof(why)))
            return device_item_error(ctx, spec, index, item, len, why);
        d->index = (int)backend_index[d->backend]++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *count = index + 1;
    return 0;
}

int kbi_devices_parse(kb_ctx *ctx, kb_device **out, size_t *count, const char *spec)
{
    *out = NULL;
    *count = 0;
    if (!spec)
        return kbi_error_set(ctx, KB_ERR_TARGET, "no device list given");
    const char *s = spec;
    size_t len = strlen(spec);
    trim(&s, &len);
    if (len == 4 && memcmp(s, "none", 4) == 0)
        return 0;
    if (len == 0)
        return kbi_error_set(ctx, KB_ERR_TARGET,
                             "empty device list (name devices like sm_86,gfx1030 or say 'none')");
    kb_device *devs = calloc(count_items(spec), sizeof(*devs));
    if (!devs)
        return kbi_error_oom(ctx);
    int rc = parse_device_list(ctx, devs, count, spec);
    if (rc) {
        free(devs);
        *count = 0;
        return rc;
    }
    *out = devs;
    return 0;
}

void kbi_devices_free(kb_device *devices)
{
    free(devices);
}

void kbi_host_free(kb_host *host)
{
    if (!host)
        return;
    free(host->devices);
    host->devices = NULL;
    host->device_count = host->devices_cap = 0;
}
