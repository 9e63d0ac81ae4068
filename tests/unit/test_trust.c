/* Trust: keys on disk, index signatures and every verdict, the policy, credentials (layout). */
#include "kbtest.h"
#include "trust_helpers.h"
#include "trust/admission.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PKG "radeonflow/gemm"

typedef struct fixture {
    char *dir;
    kb_ctx *ctx;
    kb_registry *reg;
    kb_trust_verdict verdict; /* the last verify(): its strings live until the next one */
    kb_buf events;            /* "<type> <subject>: <detail>" lines */
} fixture;

static void on_event(const kb_event *ev, void *payload)
{
    kbi_buf_printf(payload, "%d %s: %s\n", (int)ev->type, ev->subject, ev->detail);
}

static kb_ctx *ctx_with_config(fixture *f, const char *cfg_leaf)
{
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    o.event = on_event;
    o.payload = &f->events;
    kb_ctx *ctx = NULL;
    cr_assert_eq(kb_ctx_new(&ctx, &o), 0);
    char *cfg = kbi_asprintf("%s/%s", f->dir, cfg_leaf);
    cr_assert_eq(kb_ctx_set(ctx, "config.dir", cfg), 0);
    free(cfg);
    return ctx;
}

/* Opened in place: the ctx's event payload points into the fixture. */
static void open_fixture_at(fixture *f)
{
    memset(f, 0, sizeof(*f));
    f->dir = kbt_mkdtemp();
    f->ctx = ctx_with_config(f, "cfg");
    char *hub = kbi_asprintf("%s/hub", f->dir);
    cr_assert_eq(kb_registry_open(&f->reg, f->ctx, hub), 0, "%s", kbt_msg(f->ctx));
    free(hub);
}

static void close_fixture(fixture *f)
{
    kb_trust_verdict_clear(&f->verdict);
    kb_registry_free(f->reg);
    kb_ctx_free(f->ctx);
    kbt_rmtree(f->dir);
    free(f->dir);
    kbi_buf_free(&f->events);
}

static char *in_dir(const fixture *f, const char *rel)
{
    return kbi_asprintf("%s/%s", f->dir, rel);
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s missing", path);
    return (unsigned)(st.st_mode & 0777);
}

static char *generate(fixture *f, kb_ctx *ctx, const char *name)
{
    kb_trust_key *k = NULL;
    cr_assert_eq(kb_trust_key_generate(&k, ctx, name), 0, "%s", kbt_msg(ctx));
    char *id = kbi_strdup(k->id);
    kb_trust_key_free(k);
    return id;
}

/* The key id computed independently: sha256 of the last 32 bytes of the SPKI DER. */
static void independent_id(const char *pub_path, char id[17])
{
    FILE *fp = fopen(pub_path, "r");
    cr_assert_not_null(fp);
    EVP_PKEY *k = PEM_read_PUBKEY(fp, NULL, NULL, NULL);
    fclose(fp);
    cr_assert_not_null(k);
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(k, &der);
    cr_assert_eq(n, 44, "ed25519 SPKI is 44 bytes, got %d", n);
    char hex[65];
    kbi_sha256_hex(der + 12, 32, hex);
    memcpy(id, hex, 16);
    id[16] = '\0';
    OPENSSL_free(der);
    EVP_PKEY_free(k);
}

Test(trust, generate_writes_private_0600_in_0700_folder_and_first_is_default)
{
    fixture f;
    open_fixture_at(&f);
    char *id1 = generate(&f, f.ctx, "alice");
    char *id2 = generate(&f, f.ctx, NULL);
    cr_expect_str_neq(id1, id2);
    char *keys = in_dir(&f, "cfg/keys");
    cr_expect_eq(mode_of(keys), 0700);
    char *priv = kbi_asprintf("%s/%s.key", keys, id1);
    char *pub = kbi_asprintf("%s/%s.pub", keys, id1);
    char *def = kbi_asprintf("%s/default", keys);
    cr_expect_eq(mode_of(priv), 0600);
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(f.ctx, priv, &b), 0);
    cr_expect(kbi_str_starts(b.data, "-----BEGIN PRIVATE KEY-----"), "%s", b.data);
    kbi_buf_reset(&b);
    cr_assert_eq(kbi_read_file(f.ctx, def, &b), 0);
    char *want = kbi_asprintf("%s\n", id1);
    cr_expect_str_eq(b.data, want, "the first key becomes the default");
    char indep[17];
    independent_id(pub, indep);
    cr_expect_str_eq(id1, indep, "id = first 16 hex of sha256(raw public key)");

    kb_trust_key *keys_list = NULL;
    size_t n = 0;
    cr_assert_eq(kb_trust_key_list(&keys_list, &n, f.ctx), 0);
    cr_assert_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        bool first = strcmp(keys_list[i].id, id1) == 0;
        cr_expect(keys_list[i].has_private);
        cr_expect_eq(keys_list[i].is_default, first);
        cr_expect(!keys_list[i].revoked);
        if (first)
            cr_expect_str_eq(keys_list[i].name, "alice");
        else
            cr_expect_null(keys_list[i].name);
    }
    cr_expect(strcmp(keys_list[0].id, keys_list[1].id) < 0, "sorted by id");
    kb_trust_key_list_free(keys_list, n);
    kbi_buf_free(&b);
    free(want);
    free(priv);
    free(pub);
    free(def);
    free(keys);
    free(id1);
    free(id2);
    close_fixture(&f);
}

Test(trust, generate_tightens_a_wide_keys_folder)
{
    fixture f;
    open_fixture_at(&f);
    char *keys = in_dir(&f, "cfg/keys");
    cr_assert_eq(kbi_mkdir_p(f.ctx, keys, 0755), 0);
    chmod(keys, 0755);
    free(generate(&f, f.ctx, NULL));
    cr_expect_eq(mode_of(keys), 0700);
    free(keys);
    close_fixture(&f);
}

Test(trust, trust_export_and_list_public_key_from_another_machine)
{
    fixture f;
    open_fixture_at(&f);
    kb_ctx *other = ctx_with_config(&f, "other");
    char *id = generate(&f, other, NULL);
    char *pem = NULL;
    cr_assert_eq(kb_trust_key_export(&pem, other, id), 0, "%s", kbt_msg(other));
    cr_expect(kbi_str_starts(pem, "-----BEGIN PUBLIC KEY-----\n"), "%s", pem);
    cr_expect_null(strstr(pem, "PRIVATE"));
    char *file = in_dir(&f, "shared.pem");
    kbt_write(file, pem);
    kb_trust_key *k = NULL;
    cr_assert_eq(kb_trust_key_import(&k, f.ctx, file), 0, "%s", kbt_msg(f.ctx));
    cr_expect_str_eq(k->id, id);
    cr_expect(!k->has_private);
    cr_expect(k->has_public);
    cr_expect(!k->is_default, "a trusted public key is never the signing default");
    kb_trust_key_free(k);
    kb_trust_key *list = NULL;
    size_t n = 0;
    cr_assert_eq(kb_trust_key_list(&list, &n, f.ctx), 0);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(list[0].id, id);
    kb_trust_key_list_free(list, n);
    kb_string_free(pem);
    free(file);
    free(id);
    kb_ctx_free(other);
    close_fixture(&f);
}

Test(trust, trust_refuses_bad_pem_and_non_ed25519_naming_the_file)
{
    fixture f;
    open_fixture_at(&f);
    char *bad = in_dir(&f, "bad.pem");
    kbt_write(bad, "-----BEGIN PUBLIC KEY-----\nnot base64!\n-----END PUBLIC KEY-----\n");
    kb_trust_key *k = NULL;
    cr_expect_eq(kb_trust_key_import(&k, f.ctx, bad), KB_ERR_PARSE);
    char *want = kbi_asprintf(
        "%s: not a PEM public key (expected a '-----BEGIN PUBLIC KEY-----' block)", bad);
    cr_expect_str_eq(kbt_msg(f.ctx), want);
    cr_expect_str_eq(kb_ctx_last_error(f.ctx)->path, bad);
    free(want);

    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    cr_assert_not_null(ec);
    char *ecfile = in_dir(&f, "ec.pem");
    FILE *fp = fopen(ecfile, "w");
    PEM_write_PUBKEY(fp, ec);
    fclose(fp);
    EVP_PKEY_free(ec);
    cr_expect_eq(kb_trust_key_import(&k, f.ctx, ecfile), KB_ERR_UNSUPPORTED);
    want = kbi_asprintf("%s: the key is EC, but kbpkg signs and trusts only ed25519 keys", ecfile);
    cr_expect_str_eq(kbt_msg(f.ctx), want);
    cr_expect_null(k);
    char *keys = in_dir(&f, "cfg/keys");
    cr_expect(!kbi_is_dir(keys), "nothing was written for refused keys");
    free(keys);
    free(want);
    free(ecfile);
    free(bad);
    close_fixture(&f);
}

Test(trust, revoke_records_reason_and_refuses_bad_ids)
{
    fixture f;
    open_fixture_at(&f);
    char *id = generate(&f, f.ctx, NULL);
    cr_assert_eq(kb_trust_key_revoke(f.ctx, id, "laptop stolen"), 0);
    cr_assert_eq(kb_trust_key_revoke(f.ctx, id, "again"), 0, "revoking twice is harmless");
    cr_assert_eq(kb_trust_key_revoke(f.ctx, "0123456789abcdef", NULL), 0, "unknown ids too");
    char *path = in_dir(&f, "cfg/keys/revoked");
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(f.ctx, path, &b), 0);
    char *want = kbi_asprintf("%s laptop stolen\n0123456789abcdef revoked\n", id);
    cr_expect_str_eq(b.data, want);
    kb_trust_key *list = NULL;
    size_t n = 0;
    cr_assert_eq(kb_trust_key_list(&list, &n, f.ctx), 0);
    cr_assert_eq(n, 2);
    /* the list is sorted by id, and the generated id is random: 1 in ~230 sorts first */
    size_t unknown = strcmp(id, "0123456789abcdef") < 0 ? 1 : 0, mine = 1 - unknown;
    cr_expect_str_eq(list[unknown].id, "0123456789abcdef");
    cr_expect(list[unknown].revoked && !list[unknown].has_private && !list[unknown].has_public);
    cr_expect_str_eq(list[mine].id, id);
    cr_expect(list[mine].revoked);
    cr_expect_str_eq(list[mine].revoked_reason, "laptop stolen");
    kb_trust_key_list_free(list, n);
    cr_expect_eq(kb_trust_key_revoke(f.ctx, "XYZ", NULL), KB_ERR_INVALID);
    cr_expect_str_eq(kbt_msg(f.ctx), "invalid key id 'XYZ' (expected 16 lowercase hex)");
    kbi_buf_free(&b);
    free(want);
    free(path);
    free(id);
    close_fixture(&f);
}

/* ---- signatures ---- */

static kb_trust_verdict verify(fixture *f, kb_ctx *ctx, const char *version, const char *digest)
{
    kb_trust_verdict_clear(&f->verdict);
    cr_assert_eq(kb_trust_verify_index(&f->verdict, ctx, f->reg, PKG, version, digest), 0, "%s",
                 kbt_msg(ctx));
    return f->verdict;
}

static char *sign(fixture *f, const char *version, const char *digest)
{
    char *sig = NULL;
    cr_assert_eq(kb_trust_sign_index(&sig, f->ctx, f->reg, PKG, version, digest, NULL), 0, "%s",
                 kbt_msg(f->ctx));
    return sig;
}

Test(trust, sign_then_verify_on_a_layout_registry)
{
    fixture f;
    open_fixture_at(&f);
    char *id = generate(&f, f.ctx, NULL);
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    char *sig = sign(&f, "1.0.0", ix);
    cr_expect(kbi_str_starts(sig, "sha256:"));
    kb_trust_verdict v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_SIGNED_TRUSTED, "%s: %s", kb_trust_status_name(v.status),
                 v.detail);
    cr_expect_str_eq(v.key_id, id);
    cr_expect_str_eq(v.signature_digest, sig);
    cr_expect_eq(v.expires - v.signed_at, 365 * 86400);

    /* the layer holds exactly the documented payload */
    json_t *layer = kbt_get_signature_layer(f.reg, f.ctx, PKG, ix);
    json_t *p = json_object_get(layer, "payload");
    cr_expect_str_eq(json_string_value(json_object_get(p, "type")), "kbpkg-signature-v1");
    cr_expect_str_eq(json_string_value(json_object_get(p, "package")), PKG);
    cr_expect_str_eq(json_string_value(json_object_get(p, "version")), "1.0.0");
    cr_expect_str_eq(json_string_value(json_object_get(p, "index_digest")), ix);
    cr_expect_str_eq(json_string_value(json_object_get(p, "key_id")), id);
    cr_expect_eq(json_object_size(p), 7);
    json_decref(layer);

    /* the manifest: artifactType, empty config, subject = the index */
    char *tag = kbi_asprintf("sha256-%s.sig", ix + 7);
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, PKG, tag), 0);
    kb_oci_manifest om = {0};
    cr_assert_eq(kbi_oci_manifest_parse(&om, f.ctx, m->data, m->len, "sig"), 0);
    cr_expect_str_eq(om.artifact_type, "application/vnd.kbpkg.signature.v1");
    cr_expect_str_eq(om.config.media_type, "application/vnd.oci.empty.v1+json");
    cr_assert_not_null(om.subject);
    cr_expect_str_eq(om.subject->digest, ix);
    cr_expect_str_eq(om.subject->media_type, KB_MT_OCI_INDEX);
    kbi_oci_manifest_clear(&om);
    kbi_registry_manifest_free(m);
    free(tag);
    free(sig);
    free(ix);
    free(id);
    close_fixture(&f);
}

Test(trust, sign_without_a_key_is_not_found)
{
    fixture f;
    open_fixture_at(&f);
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    char *sig = (char *)1;
    cr_expect_eq(kb_trust_sign_index(&sig, f.ctx, f.reg, PKG, "1.0.0", ix, NULL), KB_ERR_NOT_FOUND);
    cr_expect_null(sig);
    cr_expect_str_eq(kbt_msg(f.ctx), "signing radeonflow/gemm@1.0.0: no default signing key: run "
                                     "'kbpkg key generate' or name a key id");
    cr_expect_eq(kb_trust_sign_index(NULL, f.ctx, f.reg, PKG, "1.0.0", ix, "00000000deadbeef"),
                 KB_ERR_NOT_FOUND);
    free(ix);
    close_fixture(&f);
}

Test(trust, verdict_unsigned)
{
    fixture f;
    open_fixture_at(&f);
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    kb_trust_verdict v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_UNSIGNED);
    cr_expect_null(v.key_id);
    cr_expect_null(v.signature_digest);
    free(ix);
    close_fixture(&f);
}

Test(trust, verdict_untrusted_key)
{
    fixture f;
    open_fixture_at(&f);
    free(generate(&f, f.ctx, NULL));
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    free(sign(&f, "1.0.0", ix));
    kb_ctx *stranger = ctx_with_config(&f, "stranger");
    kb_trust_verdict v = verify(&f, stranger, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_UNTRUSTED_KEY, "%s", v.detail);
    cr_expect_eq(strlen(v.key_id), 16);
    kb_ctx_free(stranger);
    free(ix);
    close_fixture(&f);
}

Test(trust, verdict_revoked_key_and_no_signing_with_it)
{
    fixture f;
    open_fixture_at(&f);
    char *id = generate(&f, f.ctx, NULL);
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    free(sign(&f, "1.0.0", ix));
    cr_assert_eq(kb_trust_key_revoke(f.ctx, id, "leaked"), 0);
    kb_trust_verdict v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_REVOKED_KEY);
    cr_expect_str_eq(v.key_id, id);
    char *want = kbi_asprintf("key %s is revoked (leaked)", id);
    cr_expect_str_eq(v.detail, want);
    cr_expect_eq(kb_trust_sign_index(NULL, f.ctx, f.reg, PKG, "1.0.0", ix, NULL), KB_ERR_SIGNATURE);
    free(want);
    free(ix);
    free(id);
    close_fixture(&f);
}

/* Change one character in the middle of the base64 signature: one byte differs. */
static void flip_signature_byte(json_t *layer)
{
    char *s = kbi_strdup(json_string_value(json_object_get(layer, "signature")));
    cr_assert_not_null(s);
    s[20] = s[20] == 'A' ? 'B' : 'A';
    json_object_set_new(layer, "signature", json_string(s));
    free(s);
}

Test(trust, verdict_bad_signature_for_a_tampered_byte_or_payload)
{
    fixture f;
    open_fixture_at(&f);
    free(generate(&f, f.ctx, NULL));
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    free(sign(&f, "1.0.0", ix));
    json_t *layer = kbt_get_signature_layer(f.reg, f.ctx, PKG, ix);
    json_t *original = json_deep_copy(layer);
    flip_signature_byte(layer);
    kbt_replace_signature_layer(f.reg, f.ctx, PKG, ix, layer);
    kb_trust_verdict v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_BAD_SIGNATURE, "%s", v.detail);

    /* a payload that promises a longer life than was signed */
    json_t *p = json_object_get(original, "payload");
    json_object_set_new(p, "expires",
                        json_integer(json_integer_value(json_object_get(p, "expires")) + 86400));
    kbt_replace_signature_layer(f.reg, f.ctx, PKG, ix, original);
    v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_BAD_SIGNATURE, "%s", v.detail);

    /* a signature that is not base64 of 64 bytes */
    json_object_set_new(original, "signature", json_string("AAAA"));
    kbt_replace_signature_layer(f.reg, f.ctx, PKG, ix, original);
    v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_BAD_SIGNATURE, "%s", v.detail);
    json_decref(layer);
    json_decref(original);
    free(ix);
    close_fixture(&f);
}

Test(trust, verdict_expired_when_signed_with_negative_days)
{
    fixture f;
    open_fixture_at(&f);
    free(generate(&f, f.ctx, NULL));
    cr_assert_eq(kb_ctx_set(f.ctx, "trust.signature_days", "-1"), 0);
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    free(sign(&f, "1.0.0", ix));
    kb_trust_verdict v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_EXPIRED, "%s", v.detail);
    cr_expect_eq(v.signed_at - v.expires, 86400);
    cr_assert_eq(kb_ctx_set(f.ctx, "trust.signature_days", "many"), 0);
    cr_expect_eq(kb_trust_sign_index(NULL, f.ctx, f.reg, PKG, "1.0.0", ix, NULL), KB_ERR_CONFIG);
    cr_expect_str_eq(kbt_msg(f.ctx), "signing radeonflow/gemm@1.0.0: trust.signature_days: "
                                     "'many' is not a whole number of days (-36500..36500)");
    free(ix);
    close_fixture(&f);
}

Test(trust, verdict_mismatch_for_rollback_and_copied_signature)
{
    fixture f;
    open_fixture_at(&f);
    free(generate(&f, f.ctx, NULL));
    char *old = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    free(sign(&f, "1.0.0", old));
    /* rollback: the registry serves the signed 1.0.0 index as 2.0.0 */
    kb_trust_verdict v = verify(&f, f.ctx, "2.0.0", old);
    cr_expect_eq(v.status, KB_TRUST_MISMATCH, "%s", v.detail);
    char *want = kbi_asprintf("the signature is for radeonflow/gemm@1.0.0 (index %s)", old);
    cr_expect_str_eq(v.detail, want);
    /* substitution: 1.0.0's signature copied under another index's tag */
    char *other = kbt_push_index(f.reg, f.ctx, PKG, "1.0.1");
    json_t *layer = kbt_get_signature_layer(f.reg, f.ctx, PKG, old);
    kbt_replace_signature_layer(f.reg, f.ctx, PKG, other, layer);
    v = verify(&f, f.ctx, "1.0.0", other);
    cr_expect_eq(v.status, KB_TRUST_MISMATCH, "%s", v.detail);
    json_decref(layer);
    free(want);
    free(other);
    free(old);
    close_fixture(&f);
}

Test(trust, verdict_unknown_type_fails_closed)
{
    fixture f;
    open_fixture_at(&f);
    free(generate(&f, f.ctx, NULL));
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    free(sign(&f, "1.0.0", ix));
    json_t *layer = kbt_get_signature_layer(f.reg, f.ctx, PKG, ix);
    json_object_set_new(json_object_get(layer, "payload"), "type",
                        json_string("kbpkg-signature-v2"));
    kbt_replace_signature_layer(f.reg, f.ctx, PKG, ix, layer);
    kb_trust_verdict v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_UNKNOWN_TYPE);
    cr_expect_str_eq(v.detail,
                     "unknown signature type 'kbpkg-signature-v2' (expected kbpkg-signature-v1)");
    /* a signature manifest of another tool (cosign-style) */
    kbt_put_signature(f.reg, f.ctx, PKG, ix, "application/vnd.dev.cosign.artifact.sig.v1+json",
                      "{}");
    v = verify(&f, f.ctx, "1.0.0", ix);
    cr_expect_eq(v.status, KB_TRUST_UNKNOWN_TYPE, "%s", v.detail);
    cr_expect_eq(kb_trust_check(f.ctx, f.reg, PKG, "1.0.0", ix, true), KB_ERR_SIGNATURE);
    json_decref(layer);
    free(ix);
    close_fixture(&f);
}

/* ---- policy on a layout registry (the remote half is in integration/test_trust_registry) ---- */

Test(trust, check_policy_matrix_for_unsigned_on_layout)
{
    static const struct {
        const char *mode;
        bool allow_unsigned;
        int want;
        bool warned;
    } rows[] = {
        {"never", false, 0, false},
        {"never", true, 0, false},
        {"remote", false, 0, false},
        {"remote", true, 0, false},
        {"always", false, KB_ERR_SIGNATURE, false},
        {"always", true, 0, true},
    };
    fixture f;
    open_fixture_at(&f);
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        kbi_buf_reset(&f.events);
        cr_assert_eq(kb_ctx_set(f.ctx, "trust.require_signatures", rows[i].mode), 0);
        int rc = kb_trust_check(f.ctx, f.reg, PKG, "1.0.0", ix, rows[i].allow_unsigned);
        cr_expect_eq(rc, rows[i].want, "%s allow=%d: %d %s", rows[i].mode, rows[i].allow_unsigned,
                     rc, kbt_msg(f.ctx));
        bool warned = f.events.data && strstr(f.events.data, "is not signed");
        cr_expect_eq(warned, rows[i].warned, "%s allow=%d: events '%s'", rows[i].mode,
                     rows[i].allow_unsigned, f.events.data ? f.events.data : "");
    }
    cr_assert_eq(kb_ctx_set(f.ctx, "trust.require_signatures", "always"), 0);
    cr_expect_eq(kb_trust_check(f.ctx, f.reg, PKG, "1.0.0", ix, false), KB_ERR_SIGNATURE);
    char *want = kbi_asprintf("radeonflow/gemm@1.0.0 (index %s) is not signed, and "
                              "trust.require_signatures=always requires a signature from this "
                              "registry (publishers sign with a key from 'kbpkg key generate'; "
                              "'kbpkg key trust FILE' trusts their public key here; "
                              "--allow-unsigned takes it unsigned)",
                              ix);
    cr_expect_str_eq(kbt_msg(f.ctx), want);
    cr_assert_eq(kb_ctx_set(f.ctx, "trust.require_signatures", "sometimes"), 0);
    cr_expect_eq(kb_trust_check(f.ctx, f.reg, PKG, "1.0.0", ix, false), KB_ERR_CONFIG);
    free(want);
    free(ix);
    close_fixture(&f);
}

Test(trust, check_refuses_revoked_even_with_allow_unsigned_and_names_everything)
{
    fixture f;
    open_fixture_at(&f);
    char *id = generate(&f, f.ctx, NULL);
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    free(sign(&f, "1.0.0", ix));
    cr_assert_eq(kb_ctx_set(f.ctx, "trust.require_signatures", "remote"), 0);
    cr_expect_eq(kb_trust_check(f.ctx, f.reg, PKG, "1.0.0", ix, false), 0, "%s", kbt_msg(f.ctx));
    cr_assert_eq(kb_trust_key_revoke(f.ctx, id, "leaked"), 0);
    cr_expect_eq(kb_trust_check(f.ctx, f.reg, PKG, "1.0.0", ix, true), KB_ERR_SIGNATURE);
    char *want = kbi_asprintf("radeonflow/gemm@1.0.0 (index %s) is signed by key %s which is "
                              "revoked: key %s is revoked (leaked)",
                              ix, id, id);
    cr_expect_str_eq(kbt_msg(f.ctx), want);
    /* a rollback is refused even where signatures are optional */
    cr_expect_eq(kb_trust_check(f.ctx, f.reg, PKG, "2.0.0", ix, true), KB_ERR_SIGNATURE);
    free(want);
    free(ix);
    free(id);
    close_fixture(&f);
}

/* ---- credentials ---- */

Test(trust, credentials_store_lookup_by_host_and_remove)
{
    fixture f;
    open_fixture_at(&f);
    unsetenv("KBPKG_REGISTRY_USER");
    unsetenv("KBPKG_REGISTRY_PASSWORD");
    cr_assert_eq(kb_trust_credentials_store(f.ctx, "oci://127.0.0.1:5000/team", "bob", "s3cret!"),
                 0, "%s", kbt_msg(f.ctx));
    char *path = in_dir(&f, "cfg/credentials.json");
    cr_expect_eq(mode_of(path), 0600);
    char *user = NULL, *password = NULL;
    /* the same host through another spelling of the reference */
    cr_assert_eq(kb_trust_credentials_for(&user, &password, f.ctx, "http://127.0.0.1:5000"), 0);
    cr_expect_str_eq(user, "bob");
    cr_expect_str_eq(password, "s3cret!");
    kb_trust_credentials_free(user, password);
    cr_assert_eq(kb_trust_credentials_for(&user, &password, f.ctx, "oci://127.0.0.1:5001/x"), 0);
    cr_expect_null(user, "another port is another host");
    cr_expect_null(password);
    char *layout = in_dir(&f, "hub");
    cr_assert_eq(kb_trust_credentials_for(&user, &password, f.ctx, layout), 0);
    cr_expect_null(user);
    /* the environment wins */
    setenv("KBPKG_REGISTRY_USER", "envuser", 1);
    setenv("KBPKG_REGISTRY_PASSWORD", "envpw", 1);
    cr_assert_eq(kb_trust_credentials_for(&user, &password, f.ctx, "oci://127.0.0.1:5000/team"), 0);
    unsetenv("KBPKG_REGISTRY_USER");
    unsetenv("KBPKG_REGISTRY_PASSWORD");
    cr_expect_str_eq(user, "envuser");
    cr_expect_str_eq(password, "envpw");
    kb_trust_credentials_free(user, password);
    cr_assert_eq(kb_trust_credentials_remove(f.ctx, "oci://127.0.0.1:5000"), 0);
    cr_expect_eq(kb_trust_credentials_remove(f.ctx, "oci://127.0.0.1:5000"), KB_ERR_NOT_FOUND);
    cr_expect_str_eq(kbt_msg(f.ctx), "no credentials stored for 127.0.0.1:5000");
    cr_expect_eq(mode_of(path), 0600);
    free(layout);
    free(path);
    close_fixture(&f);
}

Test(trust, credentials_file_errors_name_the_position_not_the_content)
{
    fixture f;
    open_fixture_at(&f);
    unsetenv("KBPKG_REGISTRY_USER");
    char *path = in_dir(&f, "cfg/credentials.json");
    kbt_write(path, "{\"127.0.0.1:5000\": {\"user\": \"bob\", \"password\": \"hunter2\"\n");
    char *user = NULL, *password = NULL;
    cr_expect_eq(kb_trust_credentials_for(&user, &password, f.ctx, "oci://127.0.0.1:5000"),
                 KB_ERR_PARSE);
    cr_expect_null(strstr(kbt_msg(f.ctx), "hunter2"), "%s", kbt_msg(f.ctx));
    cr_expect(kbi_str_starts(kbt_msg(f.ctx), path), "%s", kbt_msg(f.ctx));
    cr_expect_eq(kb_ctx_last_error(f.ctx)->line, 2);
    cr_expect_eq(kb_trust_credentials_store(f.ctx, "oci://127.0.0.1:5000", "bob", "x"),
                 KB_ERR_PARSE, "a corrupt file is not overwritten: nothing is lost");
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(f.ctx, path, &b), 0);
    cr_expect_not_null(strstr(b.data, "hunter2"));
    kbi_buf_free(&b);
    free(path);
    close_fixture(&f);
}

/* Issue 18: at load the expiry of the recorded signature is looked at again (the payload is
 * parsed anyway): an expired one is said, not refused - the bytes were fetched while it was
 * valid; a revoked key is still refused. */
Test(trust, an_expired_signature_at_load_warns_and_a_revoked_one_is_refused)
{
    fixture f;
    open_fixture_at(&f);
    char *id = generate(&f, f.ctx, NULL);
    cr_assert_eq(kb_ctx_set(f.ctx, "trust.signature_days", "-1"), 0);
    char *ix = kbt_push_index(f.reg, f.ctx, PKG, "1.0.0");
    free(sign(&f, "1.0.0", ix));
    kb_trust_verdict v;
    kb_trust_admission a = {0};
    cr_assert_eq(kbi_trust_verify_index_layer(&v, &a.layer, f.ctx, f.reg, PKG, "1.0.0", ix), 0);
    cr_assert_eq(v.status, KB_TRUST_EXPIRED);
    kb_trust_verdict_clear(&v); /* LeakSanitizer found its strings only now and then (stack) */
    a.status = kbi_strdup("signed-trusted");
    a.registry_kind = kbi_strdup("remote");
    cr_assert_eq(kb_ctx_set(f.ctx, "trust.require_signatures", "always"), 0);
    f.events.len = 0;
    cr_expect_eq(kbi_trust_check_installed(f.ctx, &a, PKG, "1.0.0", ix, false), 0, "%s",
                 kbt_msg(f.ctx));
    cr_expect(f.events.data && strstr(f.events.data, "expired 1 days ago"), "%s",
              f.events.data ? f.events.data : "(no event)");
    cr_assert_eq(kb_trust_key_revoke(f.ctx, id, "leaked"), 0);
    cr_expect_eq(kbi_trust_check_installed(f.ctx, &a, PKG, "1.0.0", ix, true), KB_ERR_SIGNATURE);
    kbi_trust_admission_clear(&a);
    free(ix);
    free(id);
    close_fixture(&f);
}
