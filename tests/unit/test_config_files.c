/* Config files: system < user < project < env < flag, origins, errors with file:line:col,
 * and kb_config_write. */
#include "kbtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct layout {
    char *root, *system, *user_dir, *user, *project_dir, *project;
} layout;

/* A temp tree with the three files, wired up through env vars and the cwd. */
static layout make_layout(const char *system, const char *user, const char *project)
{
    layout l;
    l.root = kbt_mkdtemp();
    l.system = kbi_path_join(l.root, "etc/config.yaml");
    l.user_dir = kbi_path_join(l.root, "home/.config/kbpkg");
    l.user = kbi_path_join(l.user_dir, "config.yaml");
    l.project_dir = kbi_path_join(l.root, "proj");
    l.project = kbi_path_join(l.project_dir, "kbpkg.yaml");
    if (system)
        kbt_write(l.system, system);
    if (user)
        kbt_write(l.user, user);
    kbt_write(l.project, project ? project : "");
    if (!project)
        unlink(l.project);
    setenv("KBPKG_SYSTEM_CONFIG", l.system, 1);
    setenv("KBPKG_CONFIG_DIR", l.user_dir, 1);
    cr_assert_eq(chdir(l.project_dir), 0);
    /* the project file is found by its canonical path */
    char cwd[4096];
    cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
    free(l.project);
    l.project = kbi_path_join(cwd, "kbpkg.yaml");
    return l;
}

static void free_layout(layout *l)
{
    kbt_rmtree(l->root);
    free(l->root);
    free(l->system);
    free(l->user_dir);
    free(l->user);
    free(l->project_dir);
    free(l->project);
}

static kb_ctx *ctx_with_files(void)
{
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    kb_ctx *ctx = NULL;
    cr_assert_eq(kb_ctx_new(&ctx, &o), 0);
    return ctx;
}

static void expect_origin(const kb_ctx *ctx, const char *want_key, const char *value,
                          kb_config_origin origin, const char *path)
{
    const char *key, *v, *p;
    kb_config_origin o;
    for (size_t i = 0; kb_config_entry(&key, &v, &o, &p, ctx, i) == 0; i++) {
        if (strcmp(key, want_key) != 0)
            continue;
        cr_expect_str_eq(v, value, "%s", want_key);
        cr_expect_eq(o, origin, "%s: origin %s, want %s", want_key, kb_config_origin_name(o),
                     kb_config_origin_name(origin));
        cr_expect_str_eq(p ? p : "(none)", path ? path : "(none)", "%s", want_key);
        return;
    }
    cr_expect_fail("%s not listed", want_key);
}

Test(config_files, layers_system_user_project_env_flag)
{
    layout l = make_layout("rocm.aliases: gfx1031=gfx1030\nnet.timeout_s: 11\nbuild.jobs: 1\n"
                           "net.retries: 1\n",
                           "net.timeout_s: 12\nbuild:\n  jobs: 2\nnet.retries: 2\n",
                           "build.jobs: 3\nnet.retries: 3\nprobe: {cpu: x86_64_v2}\n");
    setenv("KBPKG_RETRIES", "4", 1);
    kb_ctx *ctx = ctx_with_files();
    expect_origin(ctx, "rocm.aliases", "gfx1031=gfx1030", KB_CONFIG_SYSTEM, l.system);
    expect_origin(ctx, "net.timeout_s", "12", KB_CONFIG_USER, l.user);
    expect_origin(ctx, "build.jobs", "3", KB_CONFIG_PROJECT, l.project);
    expect_origin(ctx, "net.retries", "4", KB_CONFIG_ENV, "KBPKG_RETRIES");
    expect_origin(ctx, "probe.cpu", "x86_64_v2", KB_CONFIG_PROJECT, l.project);
    expect_origin(ctx, "offline", "false", KB_CONFIG_BUILTIN, NULL);
    cr_expect_eq(kb_ctx_set(ctx, "probe.cpu", "aarch64"), 0);
    expect_origin(ctx, "probe.cpu", "aarch64", KB_CONFIG_FLAG, NULL);
    kb_ctx_free(ctx);
    free_layout(&l);
}

Test(config_files, user_file_follows_config_dir_from_system_file)
{
    layout l = make_layout(NULL, NULL, NULL);
    char *other = kbi_path_join(l.root, "elsewhere");
    char *other_file = kbi_path_join(other, "config.yaml");
    char *sys = kbi_asprintf("config.dir: %s\n", other);
    kbt_write(l.system, sys);
    kbt_write(other_file, "build.allow: false\n");
    unsetenv("KBPKG_CONFIG_DIR");
    kb_ctx *ctx = ctx_with_files();
    expect_origin(ctx, "build.allow", "false", KB_CONFIG_USER, other_file);
    kb_ctx_free(ctx);
    free(sys);
    free(other_file);
    free(other);
    free_layout(&l);
}

static const struct {
    const char *text;
    unsigned line, column;
    const char *message;
} bad_files[] = {
    {"net.retries: 2\nno.such.key: 1\n", 2, 1, "unknown configuration key 'no.such.key'"},
    {"net:\n  retries: many\n", 2, 12, "net.retries: 'many' is not a non-negative integer"},
    {"offline: maybe\n", 1, 10, "offline: 'maybe' is not a boolean"},
    {"probe:\n  devices: [sm_86]\n", 2, 12, "probe.devices: expected a scalar value"},
    {"offline: true\noffline: false\n", 2, 1, "duplicate key 'offline'"},
    {"- offline\n", 1, 1, "expected a mapping of settings, got a sequence"},
    {"offline: [true\n", 2, 1, "YAML syntax error"},
};

Test(config_files, bad_files_name_file_line_column)
{
    for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
        layout l = make_layout(NULL, bad_files[i].text, NULL);
        kb_ctx *ctx = kbt_ctx(); /* no files yet: load them explicitly */
        int rc = kbi_config_load_files(ctx);
        const kb_error *e = kb_ctx_last_error(ctx);
        cr_expect(rc == KB_ERR_CONFIG || rc == KB_ERR_PARSE, "case %zu: rc %d", i, rc);
        cr_expect_str_eq(e->path ? e->path : "", l.user, "case %zu", i);
        cr_expect_eq(e->line, bad_files[i].line, "case %zu: %s", i, e->message);
        cr_expect_eq(e->column, bad_files[i].column, "case %zu: %s", i, e->message);
        char *prefix = kbi_asprintf("%s:%u:%u: ", l.user, bad_files[i].line, bad_files[i].column);
        cr_expect(kbi_str_starts(e->message, prefix), "case %zu: %s", i, e->message);
        cr_expect(strstr(e->message, bad_files[i].message), "case %zu: %s", i, e->message);
        free(prefix);
        kb_ctx_free(ctx);
        free_layout(&l);
    }
}

static void remember_error(kb_log_level level, const char *message, void *payload)
{
    if (level == KB_LOG_ERROR)
        kbi_buf_puts(payload, message);
}

Test(config_files, ctx_new_refuses_a_bad_file_and_says_why)
{
    layout l = make_layout(NULL, NULL, "offline: true\nregistry_url: x\n");
    kb_buf log = KB_BUF_INIT;
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.log = remember_error;
    o.payload = &log;
    kb_ctx *ctx = NULL;
    cr_expect_eq(kb_ctx_new(&ctx, &o), KB_ERR_CONFIG);
    /* The ctx stays with the caller so it can read why (it was freed with the reason once). */
    cr_assert_not_null(ctx);
    char *want = kbi_asprintf("%s:2:1: unknown configuration key 'registry_url'", l.project);
    cr_expect_str_eq(log.data ? log.data : "", want);
    cr_expect_eq(kb_ctx_last_error(ctx)->code, KB_ERR_CONFIG);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message, want);
    kb_ctx_free(ctx);
    free(want);
    kbi_buf_free(&log);
    /* no_config_files skips them */
    ctx = kbt_ctx();
    cr_expect_str_eq(kbi_config_str(ctx, "offline"), "false");
    kb_ctx_free(ctx);
    free_layout(&l);
}

Test(config_files, write_keeps_other_keys_and_quotes_values)
{
    layout l = make_layout(NULL, "net:\n  retries: 2\noffline: true\n", NULL);
    kb_ctx *ctx = ctx_with_files();
    cr_assert_eq(kb_config_write(ctx, KB_CONFIG_USER, "rocm.aliases", "gfx1031=gfx1030 # x: y"), 0,
                 "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_eq(kb_config_write(ctx, KB_CONFIG_USER, "net.retries", "5"), 0);
    expect_origin(ctx, "net.retries", "5", KB_CONFIG_USER, l.user);
    kb_ctx_free(ctx);

    ctx = ctx_with_files(); /* read back from the file */
    expect_origin(ctx, "net.retries", "5", KB_CONFIG_USER, l.user);
    expect_origin(ctx, "offline", "true", KB_CONFIG_USER, l.user);
    expect_origin(ctx, "rocm.aliases", "gfx1031=gfx1030 # x: y", KB_CONFIG_USER, l.user);

    kb_buf before = KB_BUF_INIT, after = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(ctx, l.user, &before), 0);
    cr_expect_eq(kb_config_write(ctx, KB_CONFIG_USER, "net.retries", "lots"), KB_ERR_CONFIG);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "'lots' is not a non-negative integer"));
    cr_expect_eq(kb_config_write(ctx, KB_CONFIG_PROJECT, "nope", "1"), KB_ERR_CONFIG);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "unknown configuration key 'nope'"));
    cr_expect_eq(kb_config_write(ctx, KB_CONFIG_ENV, "offline", "1"), KB_ERR_INVALID);
    cr_assert_eq(kbi_read_file(ctx, l.user, &after), 0);
    cr_expect_str_eq(after.data, before.data, "a refused write changes nothing");
    cr_expect_not(kbi_path_exists(l.project));
    kbi_buf_free(&before);
    kbi_buf_free(&after);

    cr_assert_eq(kb_config_write(ctx, KB_CONFIG_PROJECT, "build.jobs", "3"), 0);
    kb_buf proj = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(ctx, l.project, &proj), 0);
    cr_expect_str_eq(proj.data, "build.jobs: 3\n");
    kbi_buf_free(&proj);
    kb_ctx_free(ctx);
    free_layout(&l);
}
