/* kbpkg targets: the known-target table, --device fits with reasons, --json, bad input. */
#include "kbtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Run kbpkg with no device, alias or config coming from the caller's environment. */
static kbt_run run_targets(const char *const *args)
{
    char *dir = kbt_mkdtemp();
    char *xdg = kbi_asprintf("XDG_CONFIG_HOME=%s", dir);
    char *cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s", dir);
    const char *env[] = {xdg, cfg, "KBPKG_DEVICES=", "KBPKG_ROCM_ALIASES=", "NO_COLOR=1", NULL};
    kbt_run r = kbt_kbpkg(env, args);
    kbt_rmtree(dir);
    free(dir);
    free(xdg);
    free(cfg);
    return r;
}

/* The line of the output that starts with the target id. */
static char *line_of(const char *out, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, id, n) == 0 && p[n] == ' ')
            return kbi_strndup(p, strcspn(p, "\n"));
    return NULL;
}

Test(cli_targets, lists_every_known_target_with_what_it_runs_on)
{
    const char *args[] = {"targets", NULL};
    kbt_run r = run_targets(args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "RUNS ON"), "got: %s", r.out);
    cr_expect_null(strstr(r.out, "FITS"), "no device, no fits column");
    const char *id, *runs_on;
    for (size_t i = 0; kb_target_known(&id, &runs_on, i) == 0; i++) {
        char *line = line_of(r.out, id);
        cr_expect(line, "%s missing from the table", id);
        if (line)
            cr_expect(strstr(line, runs_on), "%s: line '%s' lacks '%s'", id, line, runs_on);
        free(line);
    }
    kbt_run_free(&r);
}

Test(cli_targets, device_adds_fits_and_reason)
{
    const char *args[] = {"targets", "--device", "sm_86@cuda13.0", NULL};
    kbt_run r = run_targets(args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "device: sm_86@cuda13.0"), "got: %s", r.out);
    char *sm80 = line_of(r.out, "cuda13-sm_80-x86_64-linux");
    char *sm90 = line_of(r.out, "cuda13-sm_90-x86_64-linux");
    char *ptx = line_of(r.out, "cuda13-compute_80-x86_64-linux");
    cr_assert(sm80 && sm90 && ptx, "got: %s", r.out);
    cr_expect(strstr(sm80, " yes "), "%s", sm80);
    cr_expect(strstr(sm80, "sm_80 SASS runs on sm_86 (same major 8, 0 <= 6)"), "%s", sm80);
    cr_expect(strstr(sm90, " no "), "%s", sm90);
    cr_expect(strstr(sm90, "major 9 != 8"), "%s", sm90);
    cr_expect(strstr(ptx, "JIT-compiled"), "%s", ptx);
    free(sm80);
    free(sm90);
    free(ptx);
    kbt_run_free(&r);
}

Test(cli_targets, json_with_alias_from_set)
{
    const char *args[] = {
        "--json", "targets", "--device", "gfx1031@rocm6.2", "--set", "rocm.aliases=gfx1031=gfx1030",
        NULL};
    kbt_run r = run_targets(args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    json_error_t jerr;
    json_t *root = json_loads(r.out, 0, &jerr);
    cr_assert(root, "not JSON (%s): %s", jerr.text, r.out);
    cr_expect_str_eq(json_string_value(json_object_get(root, "device")), "gfx1031@rocm6.2");
    json_t *targets = json_object_get(root, "targets");
    cr_assert(json_is_array(targets));
    size_t i, seen = 0;
    json_t *t;
    json_array_foreach(targets, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        const char *reason = json_string_value(json_object_get(t, "reason"));
        bool fits = json_is_true(json_object_get(t, "fits"));
        cr_assert(id && reason);
        if (strcmp(id, "rocm6-gfx1030-x86_64-linux") == 0) {
            seen++;
            cr_expect(fits, "%s", reason);
            cr_expect(strstr(reason, "alias gfx1031=gfx1030 from config"), "%s", reason);
        } else if (strcmp(id, "rocm5-gfx1030-x86_64-linux") == 0) {
            seen++; /* a ROCm 6 host has no libamdhip64.so.5 */
            cr_expect(!fits, "%s", reason);
            cr_expect(strstr(reason, "needs libamdhip64.so.5"), "%s", reason);
        } else if (strcmp(id, "rocm6-gfx10-3-generic-x86_64-linux") == 0) {
            seen++;
            cr_expect(fits, "%s", reason);
        } else if (strcmp(id, "cpu-x86_64_v3-x86_64-linux") == 0) {
            seen++;
            cr_expect_not(fits, "a GPU is present: %s", reason);
        }
    }
    cr_expect_eq(seen, 4);
    json_decref(root);
    kbt_run_free(&r);
}

Test(cli_targets, named_targets_exit_3_when_one_does_not_fit)
{
    const char *fits[] = {"targets", "rocm6-gfx90a:xnack-:sramecc+-x86_64-linux", "--device",
                          "gfx90a:sramecc+:xnack-@rocm6.1", NULL};
    kbt_run r = run_targets(fits);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "rocm6-gfx90a:sramecc+:xnack--x86_64-linux"), "canonical id shown: %s",
              r.out);
    kbt_run_free(&r);
    const char *refused[] = {"targets", "cuda13-sm_90a-x86_64-linux", "--device", "sm_89", NULL};
    r = run_targets(refused);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.out, "sm_90a is arch-specific: it runs only on sm_90, not on sm_89"),
              "got: %s", r.out);
    kbt_run_free(&r);
}

Test(cli_targets, bad_target_and_device_are_input_errors)
{
    const char *bad_id[] = {"targets", "cuda13-sm_70-x86_64-linux", NULL};
    kbt_run r = run_targets(bad_id);
    cr_expect_eq(r.exit_code, 5);
    cr_expect_str_eq(r.err, "kbpkg: bad target id 'cuda13-sm_70-x86_64-linux': sm_70 is older "
                            "than sm_75, the oldest arch CUDA 13 builds\n");
    cr_expect_str_eq(r.out, "", "no half table before the error");
    kbt_run_free(&r);
    const char *bad_dev[] = {"targets", "--device", "sm_86,gfx1O30", NULL};
    r = run_targets(bad_dev);
    cr_expect_eq(r.exit_code, 5);
    cr_expect(strstr(r.err, "kbpkg: bad device list 'sm_86,gfx1O30': item 2 'gfx1O30': unknown "
                            "AMD GPU arch 'gfx1O30'"),
              "got: %s", r.err);
    cr_expect_str_eq(r.out, "");
    kbt_run_free(&r);
    const char *bad_opt[] = {"targets", "--frobnicate", NULL};
    r = run_targets(bad_opt);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "unknown option '--frobnicate'"), "got: %s", r.err);
    kbt_run_free(&r);
}

Test(cli_targets, help_shows_usage)
{
    const char *args[] = {"help", "targets", NULL};
    kbt_run r = run_targets(args);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, "kbpkg targets [TARGET...] [--json] [--device D]..."), "got: %s",
              r.out);
    kbt_run_free(&r);
}
