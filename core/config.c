/* The one table of configuration keys, their defaults, and the layering of values. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { CFG_STRING, CFG_BOOL, CFG_INT, CFG_PATH } cfg_type;

typedef struct cfg_key {
    const char *key;
    cfg_type type;
    const char *fallback; /* built-in default; NULL: computed by default_fn */
    char *(*default_fn)(void);
    const char *env; /* the KBPKG_* variable that sets it, or NULL */
    const char *summary;
} cfg_key;

struct kb_config_value {
    char *value;
    char *origin_path;
    kb_config_origin origin;
};

static char *xdg_dir(const char *var, const char *home_suffix, const char *leaf)
{
    const char *base = getenv(var);
    if (base && *base)
        return kbi_asprintf("%s/%s", base, leaf);
    const char *home = getenv("HOME");
    return kbi_asprintf("%s/%s/%s", home && *home ? home : "/tmp", home_suffix, leaf);
}

static char *default_cache_dir(void)
{
    return xdg_dir("XDG_CACHE_HOME", ".cache", "kbpkg");
}

static char *default_registry(void)
{
    char *dir = xdg_dir("XDG_DATA_HOME", ".local/share", "kbpkg/hub");
    char *url = dir ? kbi_asprintf("file://%s", dir) : NULL;
    free(dir);
    return url;
}

static char *default_config_dir(void)
{
    return xdg_dir("XDG_CONFIG_HOME", ".config", "kbpkg");
}

/* Every setting kbpkg reads. Add a key here and nowhere else. */
static const cfg_key config_table[] = {
    {"cache.dir", CFG_PATH, NULL, default_cache_dir, "KBPKG_CACHE",
     "the local cache (blobs, installed packages, builds, locks)"},
    {"config.dir", CFG_PATH, NULL, default_config_dir, "KBPKG_CONFIG_DIR",
     "user configuration folder (config.yaml, keys, credentials)"},
    {"registry", CFG_STRING, NULL, default_registry, "KBPKG_REGISTRY",
     "default registry: a layout folder (path or file://) or oci://host/namespace"},
    {"offline", CFG_BOOL, "false", NULL, "KBPKG_OFFLINE", "never open a network connection"},
    {"insecure", CFG_BOOL, "false", NULL, "KBPKG_INSECURE",
     "allow plain http to registries that are not on loopback"},
    {"probe.devices", CFG_STRING, "", NULL, "KBPKG_DEVICES",
     "override the probe: e.g. sm_86,gfx1031 or sm_86@cuda12.4; 'none' for no GPU"},
    {"probe.cpu", CFG_STRING, "", NULL, "KBPKG_CPU",
     "override the probed CPU: x86_64_v2|v3|v4 or aarch64"},
    {"probe.sysfs_root", CFG_PATH, "/", NULL, "KBPKG_SYSFS_ROOT",
     "root under which the KFD topology is read (tests point it at fixtures)"},
    {"probe.cpuinfo", CFG_PATH, "/proc/cpuinfo", NULL, "KBPKG_CPUINFO",
     "where benchmarks read the CPU's model and clock (tests point it at fixtures)"},
    {"probe.cuda_lib", CFG_STRING, "libcuda.so.1", NULL, "KBPKG_CUDA_LIB",
     "the CUDA driver library the probe dlopens"},
    {"probe.nvml_lib", CFG_STRING, "libnvidia-ml.so.1", NULL, "KBPKG_NVML_LIB",
     "the NVML library `kbpkg bench` dlopens to sample GPU clocks"},
    {"probe.hip_lib", CFG_STRING, "libamdhip64.so", NULL, "KBPKG_HIP_LIB",
     "the HIP runtime library the probe dlopens"},
    {"probe.timeout_ms", CFG_INT, "10000", NULL, "KBPKG_PROBE_TIMEOUT_MS",
     "give up on a GPU driver that does not answer within this time"},
    {"rocm.aliases", CFG_STRING, "", NULL, "KBPKG_ROCM_ALIASES",
     "opt-in arch aliases, e.g. gfx1031=gfx1030,gfx1032=gfx1030"},
    {"build.jobs", CFG_INT, "0", NULL, "KBPKG_JOBS", "parallel build jobs (0: one per core)"},
    {"build.nvcc", CFG_STRING, "", NULL, "KBPKG_NVCC",
     "the nvcc to build CUDA targets with (empty: PATH, then /usr/local/cuda/bin)"},
    {"build.hipcc", CFG_STRING, "", NULL, "KBPKG_HIPCC",
     "the hipcc to build ROCm targets with (empty: PATH, then /opt/rocm/bin)"},
    {"build.cc", CFG_STRING, "", NULL, "KBPKG_CC", "the C compiler for CPU targets (empty: cc)"},
    {"build.hip_clang", CFG_STRING, "", NULL, "KBPKG_HIP_CLANG",
     "the clang (19 or newer) that builds rocm6 targets and the gfx archs hipcc 5.2 lacks "
     "(empty: clang-19 in PATH)"},
    {"build.rocm_device_libs", CFG_STRING, "", NULL, "KBPKG_ROCM_DEVICE_LIBS",
     "ROCm device-library folder (oclc_*.bc); empty: ROCM_PATH or the distribution's"},
    {"build.allow", CFG_BOOL, "true", NULL, "KBPKG_BUILD",
     "build from source when no artifact fits"},
    {"net.timeout_s", CFG_INT, "30", NULL, "KBPKG_TIMEOUT",
     "seconds without progress before a transfer is abandoned"},
    {"net.retries", CFG_INT, "4", NULL, "KBPKG_RETRIES", "retries of a failed request"},
    {"net.deadline_s", CFG_INT, "300", NULL, "KBPKG_DEADLINE",
     "the most seconds one registry request may take, body included (blobs: plus 1 s per "
     "256 KiB); 0: none"},
    {"trust.require_signatures", CFG_STRING, "remote", NULL, "KBPKG_REQUIRE_SIGNATURES",
     "never | remote | always"},
    {"trust.signature_days", CFG_STRING, "365", NULL, "KBPKG_SIGNATURE_DAYS",
     "days a new signature stays valid (its expiry stops freeze attacks)"},
    {"gc.keep_locks", CFG_STRING, "kbpkg.lock", NULL, "KBPKG_GC_KEEP_LOCKS",
     "lockfiles whose pinned blobs gc keeps (comma-separated, relative to the working folder; "
     "missing ones are skipped)"},
    {"source_date_epoch", CFG_INT, "0", NULL, "SOURCE_DATE_EPOCH",
     "mtime written into artifacts (reproducible builds)"},
};

static const char *origin_names[] = {"built-in", "system", "user", "project", "env", "flag"};

KB_EXTERN const char *kb_config_origin_name(kb_config_origin origin)
{
    if ((unsigned)origin >= KB_ARRAY_LEN(origin_names))
        return "unknown";
    return origin_names[origin];
}

static long key_index(const char *key)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(config_table); i++)
        if (strcmp(config_table[i].key, key) == 0)
            return (long)i;
    return -1;
}

static bool parse_bool(const char *v, bool *out)
{
    static const char *yes[] = {"1", "true", "yes", "on"};
    static const char *no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < KB_ARRAY_LEN(yes); i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = true, true;
        if (strcasecmp(v, no[i]) == 0)
            return *out = false, true;
    }
    return false;
}

static int check_value(kb_ctx *ctx, const cfg_key *k, const char *value)
{
    bool b;
    uint64_t n;
    if (k->type == CFG_BOOL && !parse_bool(value, &b))
        return kbi_error_set(ctx, KB_ERR_CONFIG, "%s: '%s' is not a boolean (true/false)", k->key,
                             value);
    if (k->type == CFG_INT && (!kbi_parse_u64(value, &n) || n > 0x7fffffff))
        return kbi_error_set(ctx, KB_ERR_CONFIG, "%s: '%s' is not a non-negative integer", k->key,
                             value);
    return 0;
}

int kbi_config_set_layer(kb_ctx *ctx, const char *key, const char *value, kb_config_origin origin,
                         const char *origin_path)
{
    long i = key_index(key);
    if (i < 0)
        return kbi_error_set(ctx, KB_ERR_CONFIG, "unknown configuration key '%s'", key);
    struct kb_config_value *slot = &ctx->config[i];
    if (origin < slot->origin)
        return 0; /* a higher layer already set it */
    int rc = check_value(ctx, &config_table[i], value);
    if (rc)
        return rc;
    char *v = kbi_strdup(value);
    char *p = kbi_strdup(origin_path);
    if (!v || (origin_path && !p)) {
        free(v);
        free(p);
        return kbi_error_oom(ctx);
    }
    free(slot->value);
    free(slot->origin_path);
    if (kbi_str_starts(key, "probe.") && ctx->probe_cache && ctx->probe_cache_free) {
        /* The cached probe no longer answers for these settings. */
        ctx->probe_cache_free(ctx->probe_cache);
        ctx->probe_cache = NULL;
    }
    if (ctx->open_memo && ctx->open_memo_free) {
        /* Any setting may change what an open picks (cache.dir, rocm.aliases, probe.*). */
        ctx->open_memo_free(ctx->open_memo);
        ctx->open_memo = NULL;
    }
    slot->value = v;
    slot->origin_path = p;
    slot->origin = origin;
    return 0;
}

int kbi_config_init(kb_ctx *ctx)
{
    ctx->config_len = KB_ARRAY_LEN(config_table);
    ctx->config = calloc(ctx->config_len, sizeof(*ctx->config));
    if (!ctx->config)
        return KB_ERR_NOMEM;
    for (size_t i = 0; i < ctx->config_len; i++) {
        const cfg_key *k = &config_table[i];
        ctx->config[i].value = k->fallback ? kbi_strdup(k->fallback) : k->default_fn();
        if (!ctx->config[i].value)
            return KB_ERR_NOMEM;
    }
    for (size_t i = 0; i < ctx->config_len; i++) {
        const cfg_key *k = &config_table[i];
        const char *env = k->env ? getenv(k->env) : NULL;
        if (env && *env) {
            int rc = kbi_config_set_layer(ctx, k->key, env, KB_CONFIG_ENV, k->env);
            if (rc)
                return rc;
        }
    }
    return 0;
}

void kbi_config_free(kb_ctx *ctx)
{
    for (size_t i = 0; ctx->config && i < ctx->config_len; i++) {
        free(ctx->config[i].value);
        free(ctx->config[i].origin_path);
    }
    free(ctx->config);
    ctx->config = NULL;
}

const char *kbi_config_str(const kb_ctx *ctx, const char *key)
{
    long i = key_index(key);
    return i < 0 ? "" : ctx->config[i].value;
}

bool kbi_config_bool(const kb_ctx *ctx, const char *key)
{
    bool b = false;
    parse_bool(kbi_config_str(ctx, key), &b);
    return b;
}

long kbi_config_long(const kb_ctx *ctx, const char *key)
{
    uint64_t n = 0;
    kbi_parse_u64(kbi_config_str(ctx, key), &n);
    return (long)n;
}

KB_EXTERN int kb_ctx_set(kb_ctx *ctx, const char *key, const char *value)
{
    if (!ctx || !key || !value)
        return KB_ERR_INVALID;
    return kbi_config_set_layer(ctx, key, value, KB_CONFIG_FLAG, NULL);
}

KB_EXTERN int kb_ctx_get(const char **out, const kb_ctx *ctx, const char *key)
{
    if (!out || !ctx || !key)
        return KB_ERR_INVALID;
    long i = key_index(key);
    if (i < 0)
        return KB_ERR_CONFIG;
    *out = ctx->config[i].value;
    return 0;
}

KB_EXTERN int kb_config_entry(const char **key_out, const char **value_out,
                              kb_config_origin *origin_out, const char **origin_path_out,
                              const kb_ctx *ctx, size_t index)
{
    if (!ctx)
        return KB_ERR_INVALID;
    if (index >= ctx->config_len)
        return KB_ERR_NOT_FOUND;
    if (key_out)
        *key_out = config_table[index].key;
    if (value_out)
        *value_out = ctx->config[index].value;
    if (origin_out)
        *origin_out = ctx->config[index].origin;
    if (origin_path_out)
        *origin_path_out = ctx->config[index].origin_path;
    return 0;
}
