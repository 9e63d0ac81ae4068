/* Every command's --json output, errors included, against its schema in docs/json/ (docs/json.md):
 * a documented key that disappears or changes type, or an undocumented one, fails here. */
#include "json_schema.h"
#include "kbtest.h"
#include "registry_harness.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Commands whose stdout is a file format, not a report: --json does not apply (docs/json.md). */
static const char *const no_json[] = {"completion"};

typedef struct world {
    char *tmp, *pkg, *bad, *hub, *cache, *cfg, *lock;
    char *env_cache, *env_cfg, *env_reg;
    const char *env[8];
} world;

static void world_init(world *w)
{
    memset(w, 0, sizeof(*w));
    w->tmp = kbt_mkdtemp();
    w->pkg = kbi_asprintf("%s/pkg", w->tmp);
    w->bad = kbi_asprintf("%s/badpkg", w->tmp);
    w->hub = kbi_asprintf("%s/hub", w->tmp);
    w->cache = kbi_asprintf("%s/cache", w->tmp);
    w->cfg = kbi_asprintf("%s/config", w->tmp);
    w->lock = kbi_asprintf("%s/kbpkg.lock", w->tmp);
    w->env_cache = kbi_asprintf("KBPKG_CACHE=%s", w->cache);
    w->env_cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s", w->cfg);
    w->env_reg = kbi_asprintf("KBPKG_REGISTRY=%s", w->hub);
    const char *env[] = {w->env_cache,
                         w->env_cfg,
                         w->env_reg,
                         "KBPKG_SYSTEM_CONFIG=/nonexistent",
                         "KBPKG_DEVICES=none",
                         "KBPKG_CPU=x86_64_v3",
                         NULL};
    memcpy(w->env, env, sizeof(env));
    char *src = kbt_data("publish/cpu-add");
    char *bad = kbt_data("manifests/bad/unknown_key.yaml");
    char *cmd = kbi_asprintf("cp -r '%s' '%s' && mkdir '%s' && cp '%s' '%s/kernel.yaml'", src,
                             w->pkg, w->bad, bad, w->bad);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(src);
    free(bad);
}

static void world_free(world *w)
{
    kbt_rmtree(w->tmp);
    free(w->tmp);
    free(w->pkg);
    free(w->bad);
    free(w->hub);
    free(w->cache);
    free(w->cfg);
    free(w->lock);
    free(w->env_cache);
    free(w->env_cfg);
    free(w->env_reg);
}

/* kbpkg ARGS... --json in the world (NULL-terminated), plus extra env (may be NULL). */
static kbt_run run_env(const world *w, const char *extra_env, ...)
{
    const char *args[32];
    size_t n = 0;
    va_list ap;
    va_start(ap, extra_env);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 30;)
        args[n++] = a;
    va_end(ap);
    args[n++] = "--json";
    args[n] = NULL;
    const char *env[10];
    size_t e = 0;
    for (; w->env[e]; e++)
        env[e] = w->env[e];
    env[e++] = extra_env; /* putenv in order: a later entry wins */
    env[e] = NULL;
    return kbt_kbpkg(env, args);
}
#define run(w, ...) run_env(w, NULL, __VA_ARGS__, NULL)

/* stdout must be exactly one JSON document valid against ref, with "kbpkg_json" first when it
 * is an object, and the run must exit with exit_code. Returns the document (owned). */
static json_t *expect_doc(kbt_run *r, int exit_code, const char *ref, const char *what)
{
    json_error_t jerr;
    cr_expect_eq(r->exit_code, exit_code, "%s: exit %d, expected %d\nstderr: %s", what,
                 r->exit_code, exit_code, r->err);
    json_t *doc = json_loads(r->out, 0, &jerr);
    cr_assert_not_null(doc, "%s: stdout is not one JSON document (%s, line %d):\n%s\nstderr: %s",
                       what, jerr.text, jerr.line, r->out, r->err);
    char *dir = kbt_source("docs/json");
    char *problems = kbt_json_check_ref(dir, ref, doc);
    cr_expect_null(problems, "%s does not follow %s:\n%s\n%s", what, ref, problems, r->out);
    if (json_is_object(doc)) {
        const char *first = json_object_iter_key(json_object_iter(doc));
        cr_expect(first && strcmp(first, "kbpkg_json") == 0, "%s: first key is %s", what, first);
    }
    free(problems);
    free(dir);
    kbt_run_free(r);
    return doc;
}

static void expect_run(kbt_run r, int exit_code, const char *ref, const char *what)
{
    json_decref(expect_doc(&r, exit_code, ref, what));
}

/* A failure: one error object (against ref), its kind, and the message naming needle. */
static json_t *expect_error(kbt_run r, int exit_code, const char *ref, const char *kind,
                            const char *needle, const char *what)
{
    cr_expect(strstr(r.err, "kbpkg: "), "%s: stderr keeps the message: %s", what, r.err);
    json_t *doc = expect_doc(&r, exit_code, ref, what);
    json_t *err = json_object_get(doc, "error");
    const char *k = json_string_value(json_object_get(err, "kind"));
    const char *msg = json_string_value(json_object_get(err, "message"));
    cr_expect(k && strcmp(k, kind) == 0, "%s: kind '%s', expected '%s'", what, k, kind);
    cr_expect(msg && strstr(msg, needle), "%s: message '%s' does not name '%s'", what, msg, needle);
    return doc;
}

static char *read_text(const char *path)
{
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, path, &b), 0, "cannot read %s", path);
    return kbi_buf_detach(&b);
}

/* ---- the validator itself must be able to fail ---- */

static char *check_text(const char *schema_text, const char *doc_text)
{
    json_error_t jerr;
    json_t *schema = json_loads(schema_text, 0, &jerr);
    cr_assert_not_null(schema, "schema: %s", jerr.text);
    json_t *doc = json_loads(doc_text, JSON_DECODE_ANY, &jerr);
    cr_assert_not_null(doc, "doc: %s", jerr.text);
    char *dir = kbt_source("docs/json");
    char *problems = kbt_json_check(schema, schema, doc, dir);
    free(dir);
    json_decref(schema);
    json_decref(doc);
    return problems;
}

static void expect_problem(const char *schema, const char *doc, const char *needle)
{
    char *p = check_text(schema, doc);
    cr_expect(p && strstr(p, needle), "doc %s: expected a problem with '%s', got: %s", doc, needle,
              p ? p : "(valid)");
    free(p);
}

static void expect_valid(const char *schema, const char *doc)
{
    char *p = check_text(schema, doc);
    cr_expect_null(p, "doc %s should be valid: %s", doc, p);
    free(p);
}

#define ROWS_SCHEMA                                                                                \
    "{\"type\": \"object\", \"properties\": {"                                                     \
    "  \"n\": {\"type\": \"integer\", \"minimum\": 0},"                                            \
    "  \"s\": {\"type\": [\"string\", \"null\"], \"pattern\": \"^sha256:[0-9a-f]{4}$\"},"          \
    "  \"rows\": {\"type\": \"array\", \"items\": {\"type\": \"object\","                          \
    "     \"properties\": {\"status\": {\"enum\": [\"ok\", \"bad\"]}},"                            \
    "     \"required\": [\"status\"], \"additionalProperties\": false}}},"                         \
    " \"required\": [\"n\", \"rows\"], \"additionalProperties\": false}"

Test(json_schema, validator_reports_missing_keys_types_enums_and_extra_keys)
{
    expect_valid(ROWS_SCHEMA, "{\"n\": 1, \"s\": null, \"rows\": [{\"status\": \"ok\"}]}");
    expect_valid(ROWS_SCHEMA, "{\"n\": 0, \"s\": \"sha256:beef\", \"rows\": []}");
    expect_problem(ROWS_SCHEMA, "{\"rows\": []}", "$: missing required key 'n'");
    expect_problem(ROWS_SCHEMA, "{\"n\": \"1\", \"rows\": []}",
                   "$.n: expected integer, got string");
    expect_problem(ROWS_SCHEMA, "{\"n\": 1.5, \"rows\": []}", "$.n: expected integer, got number");
    expect_problem(ROWS_SCHEMA, "{\"n\": -1, \"rows\": []}", "below the minimum");
    expect_problem(ROWS_SCHEMA, "{\"n\": 1, \"s\": 7, \"rows\": []}", "expected string|null");
    expect_problem(ROWS_SCHEMA, "{\"n\": 1, \"s\": \"sha256:BEEF\", \"rows\": []}",
                   "does not match");
    expect_problem(ROWS_SCHEMA, "{\"n\": 1, \"rows\": {}}", "$.rows: expected array, got object");
    expect_problem(ROWS_SCHEMA, "{\"n\": 1, \"rows\": [{\"status\": \"ok\"}, {}]}",
                   "$.rows[1]: missing required key 'status'");
    expect_problem(ROWS_SCHEMA, "{\"n\": 1, \"rows\": [{\"status\": \"maybe\"}]}",
                   "$.rows[0].status: \"maybe\" is not one of");
    expect_problem(ROWS_SCHEMA, "{\"n\": 1, \"rows\": [], \"new\": true}",
                   "$.new: key 'new' is not documented");
    expect_problem(ROWS_SCHEMA, "[]", "$: expected object, got array");
}

Test(json_schema, validator_composes_refs_and_alternatives)
{
    /* common.json's install_result closed by unevaluatedProperties, as resolve.json does */
    const char *closed = "{\"allOf\": [{\"$ref\": \"common.json#/$defs/install_result\"}],"
                         " \"properties\": {\"extra\": {\"type\": \"boolean\"}},"
                         " \"required\": [\"extra\"], \"unevaluatedProperties\": false}";
    const char *result =
        "{\"name\": \"a/b\", \"version\": \"1.0.0\", \"target\": \"t\", \"reason\": "
        "\"r\", \"dir\": null, \"index_digest\": null, \"artifact_digest\": null, "
        "\"local_build\": false, \"already_installed\": false, \"extra\": true";
    char *doc = kbi_asprintf("%s}", result);
    expect_valid(closed, doc);
    free(doc);
    doc = kbi_asprintf("%s, \"surprise\": 1}", result);
    expect_problem(closed, doc, "$.surprise: key 'surprise' is not documented");
    free(doc);
    expect_problem(closed, "{\"extra\": true}", "missing required key 'name'");

    const char *alts = "{\"$defs\": {\"a\": {\"const\": 1}, \"b\": {\"type\": \"string\"}},"
                       " \"anyOf\": [{\"$ref\": \"#/$defs/a\"}, {\"$ref\": \"#/$defs/b\"}]}";
    expect_valid(alts, "1");
    expect_valid(alts, "\"x\"");
    expect_problem(alts, "2", "matches none of the 2 anyOf alternatives");
    expect_problem("{\"oneOf\": [{\"type\": \"integer\"}, {\"type\": \"number\"}]}", "3",
                   "matches 2 oneOf alternatives");
    /* mistakes in a schema are problems, never a silent pass */
    expect_problem("{\"type\": \"object\", \"requried\": [\"x\"]}", "{}",
                   "unknown keyword 'requried'");
    expect_problem("{\"properties\": {}, \"required\": [\"x\"]}", "{\"x\": 1}",
                   "required key 'x' is not in properties");
    expect_problem("{\"$ref\": \"nope.json#/$defs/x\"}", "1", "cannot resolve $ref");
    expect_problem("{\"type\": \"strnig\"}", "\"x\"", "schema: bad type");
}

/* A real output, then the same with a documented key removed or retyped: the check fails. */
Test(json_schema, real_output_with_a_key_removed_or_retyped_fails)
{
    world w;
    world_init(&w);
    kbt_run r = run(&w, "probe");
    json_t *doc = expect_doc(&r, 0, "probe.json", "probe");
    char *dir = kbt_source("docs/json");

    json_t *copy = json_deep_copy(doc);
    json_object_del(copy, "overridden");
    char *p = kbt_json_check_ref(dir, "probe.json", copy);
    cr_expect(p && strstr(p, "missing required key 'overridden'"), "%s", p);
    free(p);
    json_decref(copy);

    copy = json_deep_copy(doc);
    json_object_set_new(json_object_get(copy, "host"), "level", json_integer(3));
    p = kbt_json_check_ref(dir, "probe.json", copy);
    cr_expect(p && strstr(p, "$.host.level: expected string, got integer"), "%s", p);
    free(p);
    json_decref(copy);

    copy = json_deep_copy(doc);
    json_object_set_new(copy, "devices", json_string("none"));
    p = kbt_json_check_ref(dir, "probe.json", copy);
    cr_expect(p && strstr(p, "$.devices: expected array"), "%s", p);
    free(p);
    json_decref(copy);

    copy = json_deep_copy(doc);
    json_object_set_new(copy, "kbpkg_json", json_integer(2));
    p = kbt_json_check_ref(dir, "probe.json", copy);
    cr_expect(p && strstr(p, "$.kbpkg_json: expected 1, got 2"), "%s", p);
    free(p);
    json_decref(copy);

    json_decref(doc);
    free(dir);
    world_free(&w);
}

/* ---- coverage: every command, every error kind ---- */

Test(json_schema, every_command_has_a_schema_and_a_section_in_the_docs)
{
    world w;
    world_init(&w);
    kbt_run r = run(&w, "help");
    json_t *doc = expect_doc(&r, 0, "help.json#/$defs/list", "help");
    char *md_path = kbt_source("docs/json.md");
    char *md = read_text(md_path);
    size_t i;
    json_t *cmd;
    json_array_foreach(json_object_get(doc, "commands"), i, cmd)
    {
        const char *name = json_string_value(json_object_get(cmd, "name"));
        bool exempt = false;
        for (size_t k = 0; k < sizeof(no_json) / sizeof(no_json[0]); k++)
            exempt = exempt || strcmp(no_json[k], name) == 0;
        char *rel = kbi_asprintf("docs/json/%s.json", name);
        char *path = kbt_source(rel);
        cr_expect(exempt != kbi_path_exists(path), "%s: %s", path,
                  exempt ? "exists, but the command is listed as having no JSON"
                         : "missing: every command that reports has a schema");
        char *heading = kbi_asprintf("### %s\n", name);
        cr_expect(strstr(md, heading), "docs/json.md has no '### %s' section", name);
        free(heading);
        free(rel);
        free(path);
    }
    cr_expect_gt(i, 20, "help lists the commands");
    /* and no schema for a command that does not exist */
    char *dir_path = kbt_source("docs/json");
    DIR *dir = opendir(dir_path);
    cr_assert_not_null(dir);
    for (struct dirent *e; (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        char *name = kbi_strndup(e->d_name, n - 5);
        bool known = strcmp(name, "common") == 0 || strcmp(name, "error") == 0 ||
                     strcmp(name, "version") == 0;
        json_array_foreach(json_object_get(doc, "commands"), i, cmd)
        {
            known = known || strcmp(json_string_value(json_object_get(cmd, "name")), name) == 0;
        }
        cr_expect(known, "docs/json/%s names no command", e->d_name);
        free(name);
    }
    closedir(dir);
    free(dir_path);
    free(md);
    free(md_path);
    json_decref(doc);
    world_free(&w);
}

Test(json_schema, error_kinds_are_exactly_the_library_error_strings)
{
    char *path = kbt_source("docs/json/error.json");
    json_t *schema = json_load_file(path, 0, NULL);
    cr_assert_not_null(schema, "%s", path);
    json_t *kinds = json_object_get(
        json_object_get(json_object_get(json_object_get(json_object_get(schema, "$defs"), "error"),
                                        "properties"),
                        "kind"),
        "enum");
    size_t n = 0;
    for (int code = -1; strcmp(kb_strerror(code), "unknown error code") != 0; code--, n++) {
        bool found = false;
        size_t i;
        json_t *k;
        json_array_foreach(kinds, i, k)
        {
            found = found || strcmp(json_string_value(k), kb_strerror(code)) == 0;
        }
        cr_expect(found, "error.json lacks kind '%s' (code %d)", kb_strerror(code), code);
    }
    cr_expect_eq(json_array_size(kinds), n, "error.json lists %zu kinds, the library has %zu",
                 json_array_size(kinds), n);
    json_decref(schema);
    free(path);
}

/* ---- commands that need no registry ---- */

Test(json_schema, machine_config_keys_and_help)
{
    world w;
    world_init(&w);
    expect_run(run(&w, "probe"), 0, "probe.json", "probe");
    expect_run(run_env(&w, "KBPKG_DEVICES=sm_86,gfx1030@rocm5.2", "probe", NULL), 0, "probe.json",
               "probe with devices");
    expect_run(run(&w, "toolchains"), 0, "toolchains.json", "toolchains");
    expect_run(run_env(&w, "KBPKG_DEVICES=", "targets", NULL), 0, "targets.json",
               "targets, no device");
    expect_run(run(&w, "targets"), 0, "targets.json", "targets, device none");
    expect_run(run(&w, "--device", "sm_86", "targets", "cuda13-sm_80-x86_64-linux"), 0,
               "targets.json", "targets that fit");
    expect_run(run(&w, "--device", "sm_86", "targets", "cuda13-sm_90-x86_64-linux"), 3,
               "targets.json", "a target that does not fit (exit 3)");
    expect_run(run(&w, "doctor"), 0, "doctor.json", "doctor");
    expect_run(run(&w, "--version"), 0, "version.json", "--version");
    expect_run(run(&w, "help"), 0, "help.json#/$defs/list", "help");
    expect_run(run(&w, "help", "install"), 0, "help.json#/$defs/command", "help install");

    expect_run(run(&w, "config", "list"), 0, "config.json#/$defs/list", "config list");
    expect_run(run(&w, "config", "get", "registry"), 0, "config.json#/$defs/get", "config get");
    expect_run(run(&w, "config", "get", "net.retries"), 0, "config.json#/$defs/get",
               "config get (built-in)");
    expect_run(run(&w, "config", "set", "build.jobs", "2"), 0, "config.json#/$defs/set",
               "config set");

    kbt_run r = run(&w, "key", "generate", "--name", "json test");
    json_t *key = expect_doc(&r, 0, "key.json#/$defs/key", "key generate");
    const char *id = json_string_value(json_object_get(key, "id"));
    expect_run(run(&w, "key", "list"), 0, "key.json#/$defs/list", "key list");
    r = run(&w, "key", "export", id);
    json_t *exported = expect_doc(&r, 0, "key.json#/$defs/export", "key export");
    char *pem = kbi_asprintf("%s/key.pem", w.tmp);
    kbt_write(pem, json_string_value(json_object_get(exported, "pem")));
    char *other_cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s/other-config", w.tmp);
    expect_run(run_env(&w, other_cfg, "key", "trust", pem, NULL), 0, "key.json#/$defs/key",
               "key trust");
    expect_run(run(&w, "key", "revoke", id, "--reason", "test"), 0, "key.json#/$defs/revoke",
               "key revoke");
    expect_run(run(&w, "key", "list"), 0, "key.json#/$defs/list", "key list with a revoked key");

    char *newdir = kbi_asprintf("%s/newpkg", w.tmp);
    expect_run(run(&w, "new", "kbtest/newpkg", newdir), 0, "new.json", "new");
    char *kbproj = kbt_data("kernel_builder/activation");
    char *imported = kbi_asprintf("%s/imported", w.tmp);
    expect_run(run(&w, "import", kbproj, imported), 0, "import.json", "import");
    free(kbproj);
    free(imported);
    char *good = kbt_data("manifests/good/full");
    expect_run(run(&w, "manifest", "check", good, w.pkg), 0, "manifest.json", "manifest check");

    free(good);
    free(newdir);
    free(other_cfg);
    free(pem);
    json_decref(exported);
    json_decref(key);
    world_free(&w);
}

/* ---- the package's life: build, test, publish, install, ..., uninstall ---- */

static const char *first_string(json_t *doc, const char *array, const char *key)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(doc, array), 0), key));
}

/* kbpkg bench on every first-party package: built for the CPU, run at --quick sizes, each case
 * with its baseline (a CPU BLAS for the GEMM, the copy bandwidth for the others). */
Test(json_schema, bench_first_party_packages)
{
    world w;
    world_init(&w);
    static const char *const pkgs[] = {"kernels/radeonflow/gemm", "kernels/kbpkg-community/rmsnorm",
                                       "kernels/kbpkg-community/activation"};
    for (size_t i = 0; i < sizeof pkgs / sizeof pkgs[0]; i++) {
        char *dir = kbt_source(pkgs[i]);
        kbt_run r = run(&w, "bench", dir, "--quick", "--target", "cpu-x86_64_v2");
        json_t *doc = expect_doc(&r, 0, "bench.json", pkgs[i]);
        cr_assert_eq(json_integer_value(json_object_get(doc, "ran")), 1, "%s: one CPU target ran",
                     pkgs[i]);
        json_t *cases =
            json_object_get(json_array_get(json_object_get(doc, "targets"), 0), "cases");
        cr_assert_gt(json_array_size(cases), 0, "%s: cases", pkgs[i]);
        for (size_t k = 0; k < json_array_size(cases); k++)
            cr_assert(json_is_object(json_object_get(json_array_get(cases, k), "baseline")),
                      "%s: case %zu has a baseline", pkgs[i], k);
        json_decref(doc);
        free(dir);
    }
}

Test(json_schema, package_lifecycle_on_a_layout_registry)
{
    world w;
    world_init(&w);
    kbt_run r = run(&w, "build", w.pkg, "--target", "cpu");
    json_t *built = expect_doc(&r, 0, "build.json", "build");
    cr_assert_gt(json_integer_value(json_object_get(built, "built")), 0, "a CPU target builds");
    char *artifact = kbi_strdup(first_string(built, "targets", "artifact"));
    json_decref(built);
    expect_run(run(&w, "test", w.pkg), 0, "test.json", "test");
    expect_run(run(&w, "publish", w.pkg), 0, "publish.json", "publish");
    expect_run(run(&w, "publish", w.pkg), 0, "publish.json", "publish again (unchanged)");
    expect_run(run(&w, "farm", w.pkg), 0, "farm.json", "farm (already there)");
    expect_run(run(&w, "search"), 0, "search.json", "search");
    expect_run(run(&w, "search", "zzz"), 3, "search.json", "search without a match (exit 3)");
    expect_run(run(&w, "info", "kbtest/cpu-add"), 0, "info.json", "info");
    expect_run(run(&w, "resolve", "kbtest/cpu-add", "--explain"), 0, "resolve.json", "resolve");
    r = run(&w, "install", "kbtest/cpu-add");
    json_t *inst = expect_doc(&r, 0, "install.json", "install");
    char *lib = kbi_asprintf("%s/lib/libcpu_add.so", first_string(inst, "installed", "dir"));
    json_decref(inst);
    expect_run(run(&w, "install", "kbtest/cpu-add"), 0, "install.json", "install (up to date)");
    expect_run(run(&w, "resolve", "kbtest/cpu-add"), 0, "resolve.json", "resolve (installed)");
    expect_run(run(&w, "info", "kbtest/cpu-add"), 0, "info.json", "info (installed)");
    expect_run(run(&w, "list"), 0, "list.json", "list");
    expect_run(run(&w, "verify"), 0, "verify.json", "verify");
    expect_run(run(&w, "lock", "kbtest/cpu-add", "--file", w.lock), 0, "lock.json", "lock");
    expect_run(run(&w, "sync", "--file", w.lock), 0, "sync.json", "sync");
    expect_run(run(&w, "fetch", "--source", "kbtest/cpu-add"), 0, "fetch.json", "fetch");
    expect_run(run(&w, "inspect", artifact), 0, "inspect.json#/$defs/archive", "inspect artifact");
    expect_run(run(&w, "inspect", lib), 0, "inspect.json#/$defs/elf", "inspect library");
    char *site = kbi_asprintf("%s/site", w.tmp);
    expect_run(run(&w, "hub", "render", "--out", site), 0, "hub.json", "hub render");
    expect_run(run(&w, "uninstall", "kbtest/cpu-add"), 0, "uninstall.json", "uninstall");
    expect_run(run(&w, "sync", "--file", w.lock), 0, "sync.json", "sync (installs again)");
    expect_run(run(&w, "uninstall", "kbtest/cpu-add"), 0, "uninstall.json", "uninstall again");
    expect_run(run(&w, "gc"), 0, "gc.json", "gc");
    expect_run(run(&w, "list"), 0, "list.json", "list (empty)");
    free(site);
    free(lib);
    free(artifact);
    world_free(&w);
}

/* ---- failures: one error object on stdout, the documented exit code, nothing lost ---- */

Test(json_schema, unknown_packages_bad_manifests_and_bad_command_lines)
{
    world w;
    world_init(&w);
    expect_run(run(&w, "publish", w.pkg, "--target", "cpu"), 0, "publish.json", "publish");
    json_t *d;

    /* unknown package */
    d = expect_error(run(&w, "info", "nobody/nothing"), 3, "error.json", "not found",
                     "nobody/nothing", "info unknown");
    json_decref(d);
    d = expect_error(run(&w, "resolve", "nobody/nothing"), 3, "error.json", "not found",
                     "nobody/nothing", "resolve unknown");
    json_decref(d);
    d = expect_error(run(&w, "resolve", "kbtest/cpu-add@^9"), 3, "error.json", "not found", "^9",
                     "resolve unknown version");
    json_decref(d);
    d = expect_error(run(&w, "lock", "nobody/nothing", "--file", w.lock), 3, "error.json",
                     "not found", "nobody/nothing", "lock unknown");
    json_decref(d);
    cr_expect(!kbi_path_exists(w.lock), "a failed lock writes no lockfile");
    d = expect_error(run(&w, "fetch", "--source", "nobody/nothing"), 3, "fetch.json#/$defs/failure",
                     "not found", "nobody/nothing", "fetch unknown");
    json_decref(d);
    d = expect_error(run(&w, "uninstall", "nobody/nothing"), 3, "uninstall.json#/$defs/failure",
                     "not found", "nobody/nothing", "uninstall unknown");
    json_decref(d);
    /* the first package installs, the second is unknown: the report keeps the first */
    d = expect_error(run(&w, "install", "kbtest/cpu-add", "nobody/nothing"), 3,
                     "install.json#/$defs/failure", "not found", "nobody/nothing",
                     "install known + unknown");
    cr_expect_str_eq(first_string(d, "installed", "name"), "kbtest/cpu-add");
    json_decref(d);
    kbt_run r = run(&w, "list");
    d = expect_doc(&r, 0, "list.json", "list after a partial install");
    cr_expect_eq(json_array_size(json_object_get(d, "installed")), 1, "the first one stays");
    json_decref(d);

    /* a typo: error.suggestion names the closest package, next to the partial report */
    d = expect_error(run(&w, "install", "kbtest/cpu-add", "kbtest/cpu-ad@^0"), 3,
                     "install.json#/$defs/failure", "not found", "kbtest/cpu-ad",
                     "install known + typo");
    cr_expect_str_eq(first_string(d, "installed", "name"), "kbtest/cpu-add");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(d, "error"), "suggestion")),
                     "kbtest/cpu-add@^0");
    json_decref(d);
    d = expect_error(run(&w, "uninstall", "kbtest/cpu-adds"), 3, "uninstall.json#/$defs/failure",
                     "not found", "kbtest/cpu-adds", "uninstall typo");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(d, "error"), "suggestion")),
                     "kbtest/cpu-add");
    cr_expect_eq(json_array_size(json_object_get(d, "uninstalled")), 0, "nothing removed");
    json_decref(d);
    d = expect_error(run(&w, "info", "kbtest/cpu-dad"), 3, "error.json", "not found",
                     "kbtest/cpu-dad", "info typo");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(d, "error"), "suggestion")),
                     "kbtest/cpu-add");
    json_decref(d);
    /* nobody/nothing above is close to nothing: no suggestion key at all */
    d = expect_error(run(&w, "resolve", "nobody/nothing"), 3, "error.json", "not found",
                     "nobody/nothing", "resolve far from any name");
    cr_expect_null(json_object_get(json_object_get(d, "error"), "suggestion"));
    json_decref(d);

    /* bad manifest: the error names file, line and column; nothing is written */
    char *manifest = kbi_asprintf("%s/kernel.yaml", w.bad);
    char *before = read_text(manifest);
    const char *bad_cmds[] = {"build", "publish", "test"};
    for (size_t i = 0; i < 3; i++) {
        d = expect_error(run(&w, bad_cmds[i], w.bad), 5, "error.json", "invalid manifest",
                         "unknown key 'descripton'", bad_cmds[i]);
        json_t *err = json_object_get(d, "error");
        cr_expect_str_eq(json_string_value(json_object_get(err, "path")), manifest);
        cr_expect_eq(json_integer_value(json_object_get(err, "line")), 4);
        cr_expect_eq(json_integer_value(json_object_get(err, "column")), 1);
        json_decref(d);
    }
    r = run(&w, "manifest", "check", w.pkg, manifest);
    d = expect_doc(&r, 5, "manifest.json", "manifest check good + bad (exit 5)");
    cr_expect(json_is_true(json_object_get(json_array_get(d, 0), "ok")));
    cr_expect(json_is_false(json_object_get(json_array_get(d, 1), "ok")));
    json_decref(d);
    char *after = read_text(manifest);
    cr_expect_str_eq(after, before, "the bad manifest is left as it was");
    char *dist = kbi_asprintf("%s/dist", w.bad);
    cr_expect(!kbi_path_exists(dist), "nothing built from a bad manifest");
    /* farm reports a bad package as a failed row (exit 1), not as an error object */
    r = run(&w, "farm", w.bad);
    d = expect_doc(&r, 1, "farm.json", "farm of a bad package");
    cr_expect_str_eq(first_string(d, "rows", "status"), "failed");
    json_decref(d);

    /* command line and configuration */
    d = expect_error(run(&w, "build", w.pkg, "--bogus"), 2, "error.json", "invalid argument",
                     "--bogus", "unknown option");
    cr_expect(json_object_get(json_object_get(d, "error"), "usage"), "usage errors carry usage");
    json_decref(d);
    d = expect_error(run(&w, "instal", "kbtest/cpu-add"), 2, "error.json", "invalid argument",
                     "did you mean 'install'", "unknown command");
    json_decref(d);
    d = expect_error(run(&w, "config", "get", "no.such.key"), 5, "error.json",
                     "invalid configuration", "no.such.key", "config get unknown key");
    json_decref(d);
    expect_run(run(&w, "config", "set", "build.jobs", "3"), 0, "config.json#/$defs/set",
               "config set");
    char *cfg_file = kbi_asprintf("%s/config.yaml", w.cfg);
    char *cfg_before = read_text(cfg_file);
    d = expect_error(run(&w, "config", "set", "build.jobs", "many"), 5, "error.json",
                     "invalid configuration", "many", "config set bad value");
    json_decref(d);
    char *cfg_after = read_text(cfg_file);
    cr_expect_str_eq(cfg_after, cfg_before, "a refused value leaves the config file alone");
    d = expect_error(run(&w, "targets", "bogus-target"), 5, "error.json", "invalid target",
                     "bogus-target", "bad target id");
    json_decref(d);
    d = expect_error(run(&w, "inspect", "/nonexistent/lib.so"), 3, "error.json", "not found",
                     "/nonexistent/lib.so", "inspect missing file");
    json_decref(d);
    d = expect_error(run(&w, "sync", "--file", "/nonexistent/kbpkg.lock"), 3, "error.json",
                     "not found", "/nonexistent/kbpkg.lock", "sync without a lockfile");
    json_decref(d);
    d = expect_error(run(&w, "logout", "oci://127.0.0.1:5999"), 3, "error.json", "not found",
                     "127.0.0.1:5999", "logout without credentials");
    json_decref(d);

    free(cfg_after);
    free(cfg_before);
    free(cfg_file);
    free(dist);
    free(after);
    free(before);
    free(manifest);
    world_free(&w);
}

Test(json_schema, verify_reports_the_damage_and_the_error_in_one_document)
{
    world w;
    world_init(&w);
    expect_run(run(&w, "publish", w.pkg, "--target", "cpu"), 0, "publish.json", "publish");
    kbt_run r = run(&w, "install", "kbtest/cpu-add");
    json_t *inst = expect_doc(&r, 0, "install.json", "install");
    char *header = kbi_asprintf("%s/include/vadd.h", first_string(inst, "installed", "dir"));
    json_decref(inst);
    FILE *f = fopen(header, "a");
    cr_assert_not_null(f, "%s", header);
    fputs("/* changed */\n", f);
    fclose(f);
    json_t *d = expect_error(run(&w, "verify"), 4, "verify.json#/$defs/failure", "digest mismatch",
                             "failed verification", "verify of a changed file");
    json_t *pkg = json_array_get(json_object_get(d, "packages"), 0);
    cr_expect(json_is_false(json_object_get(pkg, "ok")));
    const char *issue = json_string_value(json_array_get(json_object_get(pkg, "issues"), 0));
    cr_expect(issue && strstr(issue, "vadd.h"), "the issue names the file: %s", issue);
    json_decref(d);
    free(header);
    world_free(&w);
}

Test(json_schema, login_and_logout_against_a_registry_with_htpasswd)
{
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed");
    world w;
    world_init(&w);
    kbt_registry reg;
    kbt_registry_start(&reg, "alice", "s3cret-json");
    char *ref = kbi_asprintf("oci://127.0.0.1:%d/ns", reg.port);
    const char *bad[] = {"login", ref, "--username", "alice", "--password-stdin", "--json", NULL};
    kbt_run r = kbt_kbpkg_input(w.env, bad, "wrong\n");
    json_t *d = expect_error(r, 1, "error.json", "authentication failed", "/v2/", "bad password");
    cr_expect(json_object_get(json_object_get(d, "error"), "url"), "the error names the URL");
    json_decref(d);
    r = kbt_kbpkg_input(w.env, bad, "s3cret-json\n");
    expect_run(r, 0, "login.json", "login");
    expect_run(run(&w, "logout", ref), 0, "logout.json", "logout");
    kbt_registry_stop(&reg);
    free(ref);
    world_free(&w);
}
