/* Core: error records, config layering, buffers, atomic files, processes. */
#include "kbtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(core, strerror_covers_every_code)
{
    for (int code = 0; code >= KB_ERR_LIMIT; code--)
        cr_expect_str_neq(kb_strerror(code), "unknown error code", "code %d has no text", code);
    cr_expect_str_eq(kb_strerror(-9999), "unknown error code");
}

Test(core, error_record_names_path_and_position)
{
    kb_ctx *ctx = kbt_ctx();
    int rc = kbi_error_set_path(ctx, KB_ERR_MANIFEST, "a/kernel.yaml", 3, 7, "bad key '%s'", "x");
    cr_expect_eq(rc, KB_ERR_MANIFEST);
    const kb_error *e = kb_ctx_last_error(ctx);
    cr_expect_eq(e->code, KB_ERR_MANIFEST);
    cr_expect_str_eq(e->message, "bad key 'x'");
    cr_expect_str_eq(e->path, "a/kernel.yaml");
    cr_expect_eq(e->line, 3);
    cr_expect_eq(e->column, 7);
    kbi_error_prefix(ctx, "checking %s", "pkg");
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message, "checking pkg: bad key 'x'");
    kb_ctx_clear_error(ctx);
    cr_expect_eq(kb_ctx_last_error(ctx)->code, 0);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message, "");
    kb_ctx_free(ctx);
}

Test(core, ctx_rejects_wrong_options_version)
{
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.version = 99;
    kb_ctx *ctx = (kb_ctx *)1;
    cr_expect_eq(kb_ctx_new(&ctx, &o), KB_ERR_INVALID);
    cr_expect_null(ctx);
}

Test(core, config_layers_env_below_flags)
{
    setenv("KBPKG_RETRIES", "7", 1);
    kb_ctx *ctx = kbt_ctx();
    unsetenv("KBPKG_RETRIES");
    cr_expect_eq(kbi_config_long(ctx, "net.retries"), 7);
    cr_expect_eq(kb_ctx_set(ctx, "net.retries", "2"), 0);
    cr_expect_eq(kbi_config_long(ctx, "net.retries"), 2);
    /* a lower layer does not override a higher one */
    cr_expect_eq(kbi_config_set_layer(ctx, "net.retries", "9", KB_CONFIG_USER, "/x"), 0);
    cr_expect_eq(kbi_config_long(ctx, "net.retries"), 2);
    const char *key, *value, *path;
    kb_config_origin origin;
    bool seen = false;
    for (size_t i = 0; kb_config_entry(&key, &value, &origin, &path, ctx, i) == 0; i++)
        if (strcmp(key, "net.retries") == 0) {
            seen = true;
            cr_expect_eq(origin, KB_CONFIG_FLAG);
            cr_expect_str_eq(kb_config_origin_name(origin), "flag");
        }
    cr_expect(seen);
    kb_ctx_free(ctx);
}

Test(core, config_rejects_unknown_keys_and_bad_values)
{
    kb_ctx *ctx = kbt_ctx();
    cr_expect_eq(kb_ctx_set(ctx, "no.such.key", "1"), KB_ERR_CONFIG);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "no.such.key"));
    cr_expect_eq(kb_ctx_set(ctx, "offline", "maybe"), KB_ERR_CONFIG);
    cr_expect_eq(kb_ctx_set(ctx, "net.retries", "-1"), KB_ERR_CONFIG);
    cr_expect_eq(kbi_config_bool(ctx, "offline"), false, "a refused value must not stick");
    cr_expect_eq(kb_ctx_set(ctx, "offline", "yes"), 0);
    cr_expect_eq(kbi_config_bool(ctx, "offline"), true);
    kb_ctx_free(ctx);
}

Test(core, default_paths_follow_xdg)
{
    setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
    setenv("XDG_DATA_HOME", "/xdg/data", 1);
    unsetenv("KBPKG_CACHE");
    unsetenv("KBPKG_REGISTRY");
    kb_ctx *ctx = kbt_ctx();
    cr_expect_str_eq(kbi_config_str(ctx, "cache.dir"), "/xdg/cache/kbpkg");
    cr_expect_str_eq(kbi_config_str(ctx, "registry"), "file:///xdg/data/kbpkg/hub");
    kb_ctx_free(ctx);
}

Test(core, buffers_and_string_vectors)
{
    kb_buf b = KB_BUF_INIT;
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(kbi_buf_printf(&b, "%d,", i), 0);
    cr_expect(kbi_str_starts(b.data, "0,1,2,"));
    cr_expect(kbi_str_ends(b.data, "998,999,"));
    kbi_buf_free(&b);
    kb_strv v = KB_STRV_INIT;
    kbi_strv_push(&v, "b");
    kbi_strv_push(&v, "a");
    kbi_strv_sort(&v);
    cr_expect_str_eq(v.items[0], "a");
    cr_expect(kbi_strv_contains(&v, "b"));
    cr_expect_null(v.items[v.len]);
    kbi_strv_free(&v);
    uint64_t n;
    cr_expect(kbi_parse_u64("18446744073709551615", &n));
    cr_expect_not(kbi_parse_u64("18446744073709551616", &n));
    cr_expect_not(kbi_parse_u64("12a", &n));
    cr_expect_not(kbi_parse_u64("", &n));
}

Test(core, atomic_write_and_sha256)
{
    char *dir = kbt_mkdtemp();
    char *path = kbi_path_join(dir, "deep/er/file");
    kb_ctx *ctx = kbt_ctx();
    char *parent = kbi_path_join(dir, "deep/er");
    cr_assert_eq(kbi_mkdir_p(ctx, parent, 0755), 0);
    cr_assert_eq(kbi_write_file_atomic(ctx, path, "abc", 3, 0644), 0);
    char hex[65];
    uint64_t size = 0;
    cr_assert_eq(kbi_sha256_file(ctx, path, hex, &size), 0);
    cr_expect_eq(size, 3);
    cr_expect_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(ctx, path, &b), 0);
    cr_expect_str_eq(b.data, "abc");
    kbi_buf_free(&b);
    char *missing = kbi_path_join(dir, "missing");
    cr_expect_eq(kbi_sha256_file(ctx, missing, hex, NULL), KB_ERR_NOT_FOUND);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->path, missing);
    cr_expect_eq(kbi_rm_rf(ctx, dir), 0);
    cr_expect_not(kbi_path_exists(dir));
    free(missing);
    free(parent);
    free(path);
    free(dir);
    kb_ctx_free(ctx);
}

Test(core, process_output_exit_code_and_timeout)
{
    kb_ctx *ctx = kbt_ctx();
    kb_proc_result r;
    const char *ok[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    cr_assert_eq(kbi_proc_run(ctx, &r, ok, NULL, 5000), 0);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.output.data, "out") && strstr(r.output.data, "err"));
    kbi_proc_result_free(&r);
    const char *slow[] = {"sleep", "5", NULL};
    cr_assert_eq(kbi_proc_run(ctx, &r, slow, NULL, 200), 0);
    cr_expect(r.timed_out);
    cr_expect_eq(r.exit_code, -1);
    kbi_proc_result_free(&r);
    char *path = NULL;
    cr_expect_eq(kbi_which(&path, "sh"), 0);
    free(path);
    cr_expect_eq(kbi_which(&path, "no-such-program-kbpkg"), KB_ERR_NOT_FOUND);
    kb_ctx_free(ctx);
}

Test(core, empty_buffer_detaches_as_empty_string)
{
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_buf_grow(&b, 0), 0);
    cr_expect_str_eq(b.data, "");
    char *s = kbi_buf_detach(&b);
    cr_expect_str_eq(s, "");
    free(s);
}

Test(core, array_grow_doubles_and_keeps_items)
{
    int *items = NULL;
    size_t cap = 0, len = 0, reallocs = 0;
    for (int i = 0; i < 1000; i++) {
        size_t before = cap;
        cr_assert_eq(kbi_array_grow((void **)&items, &cap, len + 1, sizeof(*items)), 0);
        reallocs += cap != before;
        cr_assert_geq(cap, len + 1);
        items[len++] = i;
    }
    /* 8, 16, ..., 1024: doubling, not one realloc per push. */
    cr_expect_eq(cap, 1024);
    cr_expect_eq(reallocs, 8);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(items[i], i);
    /* Room already there: no change. */
    int *same = items;
    cr_expect_eq(kbi_array_grow((void **)&items, &cap, 10, sizeof(*items)), 0);
    cr_expect_eq(items, same);
    cr_expect_eq(cap, 1024);
    free(items);
}

Test(core, array_grow_rejects_overflow_and_loses_nothing)
{
    uint64_t *items = NULL;
    size_t cap = 0;
    cr_assert_eq(kbi_array_grow((void **)&items, &cap, 3, sizeof(*items)), 0);
    items[0] = 7, items[1] = 8, items[2] = 9;
    uint64_t *before = items;
    size_t cap_before = cap;
    /* need * elem_size does not fit in size_t. */
    cr_expect_eq(
        kbi_array_grow((void **)&items, &cap, SIZE_MAX / sizeof(*items) + 1, sizeof(*items)),
        KB_ERR_NOMEM);
    cr_expect_eq(kbi_array_grow((void **)&items, &cap, SIZE_MAX, 2), KB_ERR_NOMEM);
    cr_expect_eq(items, before);
    cr_expect_eq(cap, cap_before);
    cr_expect_eq(items[0], 7);
    cr_expect_eq(items[1], 8);
    cr_expect_eq(items[2], 9);
    free(items);
}

Test(core, strv_stays_null_terminated_as_it_grows)
{
    kb_strv v = KB_STRV_INIT;
    char name[16];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "s%d", i);
        cr_assert_eq(kbi_strv_push(&v, name), 0);
        cr_assert_null(v.items[v.len]);
    }
    cr_expect_str_eq(v.items[0], "s0");
    cr_expect_str_eq(v.items[99], "s99");
    kbi_strv_free(&v);
}
