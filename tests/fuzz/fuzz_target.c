/* libFuzzer target: target ids and device lists (model/target.c). The first line is a target id,
 * the rest a device list. Invariants: format(parse(id)) parses to the same target; every parsed
 * target can be checked against every parsed device. */
#include "model/target.h"
#include "fuzz_common.h"

static void check_target_round_trip(kb_ctx *ctx, const kb_target *t)
{
    char id[160];
    kbi_target_format(t, id, sizeof(id));
    FUZZ_CHECK(strlen(id) < sizeof(id) - 1, "formatted id truncated: %s", id);
    kb_target again;
    int rc = kbi_target_parse(ctx, &again, id);
    FUZZ_CHECK(rc == 0, "formatted id '%s' does not parse: %s", id,
               kb_ctx_last_error(ctx)->message);
    FUZZ_CHECK(memcmp(&again, t, sizeof(*t)) == 0, "id '%s' parses to a different target", id);
    char twice[160];
    kbi_target_format(&again, twice, sizeof(twice));
    FUZZ_CHECK(strcmp(id, twice) == 0, "format not stable: '%s' then '%s'", id, twice);
}

static void check_arch_and_aliases(const char *arch, const char *spec)
{
    char why[256];
    for (int b = KB_BACKEND_NONE; b <= KB_BACKEND_CPU; b++)
        if (!kbi_arch_valid((kb_backend)b, arch, why, sizeof(why)))
            FUZZ_CHECK(why[0], "arch '%s' refused without a reason", arch);
    if (!kbi_rocm_aliases_valid(spec, why, sizeof(why)))
        FUZZ_CHECK(why[0], "alias list refused without a reason");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    char *newline = strchr(text, '\n');
    const char *spec = "";
    if (newline) {
        *newline = '\0';
        spec = newline + 1;
    }
    kb_ctx *ctx = fuzz_ctx();
    kb_target t;
    int trc = kbi_target_parse(ctx, &t, text);
    if (trc)
        fuzz_check_error(ctx, trc);
    else
        check_target_round_trip(ctx, &t);
    check_arch_and_aliases(text, spec);

    kb_device *devs = NULL;
    size_t count = 0;
    int drc = kbi_devices_parse(ctx, &devs, &count, spec);
    if (drc) {
        fuzz_check_error(ctx, drc);
        FUZZ_CHECK(!devs && count == 0, "failed device parse returned devices");
    }
    kb_compat_opts opts = {spec, false};
    for (size_t i = 0; !trc && i < count; i++) {
        kb_compat c;
        kbi_compat_check(&c, &t, &devs[i], &opts);
        FUZZ_CHECK(memchr(c.reason, '\0', sizeof(c.reason)) != NULL, "reason not terminated");
        FUZZ_CHECK(c.fit == KB_FIT_NONE || c.score >= (int)c.fit * 100 - 100,
                   "score %d below its fit %d", c.score, (int)c.fit);
        FUZZ_CHECK(kbi_target_rank_cmp("t", &c, "t", &c) == 0, "a result ranks apart from itself");
    }
    kbi_devices_free(devs);
    kb_ctx_free(ctx);
    free(text);
    return 0;
}
