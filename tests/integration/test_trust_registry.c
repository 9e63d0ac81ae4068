/* Trust against a real docker-registry: signatures, the remote policy, login with htpasswd. */
#include "../unit/trust_helpers.h"
#include "kbtest.h"
#include "registry_harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PKG "radeonflow/gemm"
#define PASSWORD "Tr0ub4dor&3-kbpkg"

typedef struct session {
    kbt_registry srv;
    char *dir;
    char *ref; /* oci://127.0.0.1:PORT/ns */
    kb_ctx *ctx;
    kb_registry *reg;
    kb_buf events;
} session;

static void on_event(const kb_event *ev, void *payload)
{
    kbi_buf_printf(payload, "%d %s: %s\n", (int)ev->type, ev->subject, ev->detail);
}

static void open_session(session *s, const char *user, const char *password)
{
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed (%s)", KBT_DOCKER_REGISTRY);
    memset(s, 0, sizeof(*s));
    kbt_registry_start(&s->srv, user, password);
    s->dir = kbt_mkdtemp();
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    o.event = on_event;
    o.payload = &s->events;
    cr_assert_eq(kb_ctx_new(&s->ctx, &o), 0);
    char *cfg = kbi_asprintf("%s/cfg", s->dir);
    kb_ctx_set(s->ctx, "config.dir", cfg);
    kb_ctx_set(s->ctx, "net.retries", "1");
    free(cfg);
    s->ref = kbi_asprintf("oci://127.0.0.1:%d/ns", s->srv.port);
    cr_assert_eq(kb_registry_open(&s->reg, s->ctx, s->ref), 0, "%s", kbt_msg(s->ctx));
}

static void close_session(session *s)
{
    kb_registry_free(s->reg);
    kb_ctx_free(s->ctx);
    kbt_registry_stop(&s->srv);
    kbt_rmtree(s->dir);
    free(s->dir);
    free(s->ref);
    kbi_buf_free(&s->events);
}

static kb_trust_status verify(session *s, const char *version, const char *digest)
{
    kb_trust_verdict v = {0};
    cr_assert_eq(kb_trust_verify_index(&v, s->ctx, s->reg, PKG, version, digest), 0, "%s",
                 kbt_msg(s->ctx));
    kb_trust_status status = v.status;
    kb_trust_verdict_clear(&v);
    return status;
}

Test(trust_registry, sign_and_verify_on_docker_registry)
{
    session s;
    open_session(&s, NULL, NULL);
    kb_trust_key *k = NULL;
    cr_assert_eq(kb_trust_key_generate(&k, s.ctx, NULL), 0, "%s", kbt_msg(s.ctx));
    char *ix = kbt_push_index(s.reg, s.ctx, PKG, "1.0.0");
    cr_expect_eq(verify(&s, "1.0.0", ix), KB_TRUST_UNSIGNED);
    char *sig = NULL;
    cr_assert_eq(kb_trust_sign_index(&sig, s.ctx, s.reg, PKG, "1.0.0", ix, NULL), 0, "%s",
                 kbt_msg(s.ctx));
    kb_trust_verdict v;
    cr_assert_eq(kb_trust_verify_index(&v, s.ctx, s.reg, PKG, "1.0.0", ix), 0);
    cr_expect_eq(v.status, KB_TRUST_SIGNED_TRUSTED, "%s", v.detail);
    cr_expect_str_eq(v.key_id, k->id);
    cr_expect_str_eq(v.signature_digest, sig);
    kb_trust_verdict_clear(&v);
    /* the .sig tag is listed next to the version, as registries without referrers need */
    char **tags = NULL;
    size_t n = 0;
    cr_assert_eq(kb_registry_list_tags(&tags, &n, s.reg, PKG), 0, "%s", kbt_msg(s.ctx));
    char *want = kbi_asprintf("sha256-%s.sig", ix + 7);
    bool seen = false;
    for (size_t i = 0; i < n; i++)
        seen = seen || strcmp(tags[i], want) == 0;
    cr_expect(seen, "tag %s listed", want);
    kb_strings_free(tags, n);
    cr_expect_eq(verify(&s, "2.0.0", ix), KB_TRUST_MISMATCH, "rollback to an older index");
    free(want);
    free(sig);
    free(ix);
    kb_trust_key_free(k);
    close_session(&s);
}

Test(trust_registry, check_policy_matrix_on_a_remote_registry)
{
    static const struct {
        const char *mode;
        bool allow_unsigned;
        int want;
        bool warned;
    } rows[] = {
        {"never", false, 0, false},
        {"never", true, 0, false},
        {"remote", false, KB_ERR_SIGNATURE, false},
        {"remote", true, 0, true},
        {"always", false, KB_ERR_SIGNATURE, false},
        {"always", true, 0, true},
    };
    session s;
    open_session(&s, NULL, NULL);
    char *ix = kbt_push_index(s.reg, s.ctx, PKG, "1.0.0");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        kbi_buf_reset(&s.events);
        cr_assert_eq(kb_ctx_set(s.ctx, "trust.require_signatures", rows[i].mode), 0);
        int rc = kb_trust_check(s.ctx, s.reg, PKG, "1.0.0", ix, rows[i].allow_unsigned);
        cr_expect_eq(rc, rows[i].want, "%s allow=%d: %d %s", rows[i].mode, rows[i].allow_unsigned,
                     rc, kbt_msg(s.ctx));
        bool warned = s.events.data && strstr(s.events.data, "10 radeonflow/gemm: ") &&
                      strstr(s.events.data, "is not signed");
        cr_expect_eq(warned, rows[i].warned, "%s allow=%d: events '%s'", rows[i].mode,
                     rows[i].allow_unsigned, s.events.data ? s.events.data : "");
    }
    /* once signed by a trusted key, every mode admits it */
    kb_trust_key *k = NULL;
    cr_assert_eq(kb_trust_key_generate(&k, s.ctx, NULL), 0);
    cr_assert_eq(kb_trust_sign_index(NULL, s.ctx, s.reg, PKG, "1.0.0", ix, NULL), 0, "%s",
                 kbt_msg(s.ctx));
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        cr_assert_eq(kb_ctx_set(s.ctx, "trust.require_signatures", rows[i].mode), 0);
        cr_expect_eq(kb_trust_check(s.ctx, s.reg, PKG, "1.0.0", ix, false), 0, "%s: %s",
                     rows[i].mode, kbt_msg(s.ctx));
    }
    kb_trust_key_free(k);
    free(ix);
    close_session(&s);
}

/* kbpkg with stdin fed from text; stdout and stderr together. */
static kbt_run kbpkg_with_stdin(const char *const *env, const char *const *args, const char *text)
{
    const char *bin = getenv("KBPKG_BIN");
    cr_assert(bin && *bin, "KBPKG_BIN is not set (run the tests through ctest)");
    char out_tmpl[] = "/tmp/kbt-trustXXXXXX";
    int out_fd = mkstemp(out_tmpl);
    cr_assert(out_fd >= 0);
    unlink(out_tmpl);
    int in[2];
    cr_assert_eq(pipe(in), 0);
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = calloc(n + 2, sizeof(*argv));
    argv[0] = bin;
    memcpy(argv + 1, args, n * sizeof(*args));
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        dup2(in[0], 0);
        close(in[1]);
        dup2(out_fd, 1);
        dup2(out_fd, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    cr_assert_eq(write(in[1], text, strlen(text)), (ssize_t)strlen(text));
    close(in[1]);
    free(argv);
    int status = 0;
    waitpid(pid, &status, 0);
    kbt_run r = {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), NULL, NULL};
    off_t size = lseek(out_fd, 0, SEEK_END);
    r.out = calloc(1, (size_t)size + 1);
    cr_assert_eq(pread(out_fd, r.out, (size_t)size, 0), size);
    r.err = kbi_strdup("");
    close(out_fd);
    return r;
}

Test(trust_registry, login_with_htpasswd_then_listing_tags_works_and_never_shows_the_password)
{
    session s;
    open_session(&s, "alice", PASSWORD);
    unsetenv("KBPKG_REGISTRY_USER");
    unsetenv("KBPKG_REGISTRY_PASSWORD");
    char *cfg_env = kbi_asprintf("KBPKG_CONFIG_DIR=%s/cfg", s.dir);
    const char *env[] = {cfg_env, NULL};

    /* a wrong password: KB_ERR_AUTH naming the URL, never the password, nothing stored */
    const char *bad[] = {"-v",    "--json",           "login", s.ref, "--username",
                         "alice", "--password-stdin", NULL};
    kbt_run r = kbpkg_with_stdin(env, bad, "wrong-" PASSWORD "\n");
    cr_expect_eq(r.exit_code, 1, "%s", r.out);
    char *url = kbi_asprintf("%s/v2/", s.srv.url);
    cr_expect_not_null(strstr(r.out, url), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "401"), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "\"code\": -18"), "%s", r.out);
    cr_expect_null(strstr(r.out, PASSWORD), "%s", r.out);
    char *creds = kbi_asprintf("%s/cfg/credentials.json", s.dir);
    cr_expect(!kbi_path_exists(creds));
    kbt_run_free(&r);

    /* the right one: stored 0600, and -v output never shows it */
    const char *good[] = {"-v", "login", s.ref, "--username", "alice", "--password-stdin", NULL};
    r = kbpkg_with_stdin(env, good, PASSWORD "\n");
    cr_expect_eq(r.exit_code, 0, "%s", r.out);
    cr_expect_not_null(strstr(r.out, "GET "), "-v shows requests: %s", r.out);
    cr_expect_null(strstr(r.out, PASSWORD), "%s", r.out);
    struct stat st;
    cr_assert_eq(stat(creds, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);
    kbt_run_free(&r);

    /* what the installer does: look up, then talk to the registry with them */
    cr_expect_eq(kb_registry_list_tags(&(char **){NULL}, &(size_t){0}, s.reg, "a/b"), KB_ERR_AUTH,
                 "without credentials the registry refuses");
    char *user = NULL, *password = NULL;
    cr_assert_eq(kb_trust_credentials_for(&user, &password, s.ctx, s.ref), 0, "%s", kbt_msg(s.ctx));
    cr_assert_not_null(user);
    cr_assert_eq(kb_registry_set_credentials(s.reg, user, password), 0);
    kb_trust_credentials_free(user, password);
    char *ix = kbt_push_index(s.reg, s.ctx, PKG, "1.0.0");
    char **tags = NULL;
    size_t n = 0;
    cr_assert_eq(kb_registry_list_tags(&tags, &n, s.reg, PKG), 0, "%s", kbt_msg(s.ctx));
    cr_assert_eq(n, 1);
    cr_expect_str_eq(tags[0], "1.0.0");
    kb_strings_free(tags, n);

    /* the library's own wrong-password error names the URL, not the password */
    cr_assert_eq(kb_registry_set_credentials(s.reg, "alice", "not-" PASSWORD), 0);
    cr_expect_eq(kb_registry_check(s.reg), KB_ERR_AUTH);
    cr_expect_str_eq(kb_ctx_last_error(s.ctx)->url, url);
    cr_expect_null(strstr(kbt_msg(s.ctx), PASSWORD), "%s", kbt_msg(s.ctx));

    const char *out[] = {"logout", s.ref, NULL};
    r = kbpkg_with_stdin(env, out, "");
    cr_expect_eq(r.exit_code, 0, "%s", r.out);
    kbt_run_free(&r);
    cr_assert_eq(kb_trust_credentials_for(&user, &password, s.ctx, s.ref), 0);
    cr_expect_null(user, "logout forgot them");
    free(ix);
    free(creds);
    free(url);
    free(cfg_env);
    close_session(&s);
}
