/* libFuzzer target: the signature layer a registry serves (or an install record keeps), judged
 * offline by trust/signature.c (kbi_trust_judge_stored) against a config folder holding one
 * trusted key. Invariants: the call returns 0 or a kb_err with a message; the verdict's status
 * is a known one with a detail sentence; and no input the fuzzer can make is ever
 * "signed by a trusted key": that needs the private key, which never leaves this process's
 * temp folder and is generated anew each run. */
#include "fuzz_common.h"
#include "trust/admission.h"

#define PKG "fuzz/pkg"
#define VER "1.0.0"
#define DIGEST "sha256:0000000000000000000000000000000000000000000000000000000000000000"

static kb_ctx *ctx_with_a_trusted_key(void)
{
    static char dir[256];
    kb_ctx *ctx = fuzz_ctx();
    if (!dir[0])
        fuzz_tmpdir(dir, sizeof dir);
    if (kb_ctx_set(ctx, "config.dir", dir) != 0)
        abort();
    static bool have_key;
    if (!have_key) {
        kb_trust_key *key = NULL;
        if (kb_trust_key_generate(&key, ctx, "fuzz") != 0)
            abort();
        kb_trust_key_free(key);
        have_key = true;
    }
    return ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kb_ctx *ctx;
    if (!ctx)
        ctx = ctx_with_a_trusted_key();
    char *layer = fuzz_cstr(data, size);
    kb_trust_verdict v = {0};
    int rc = kbi_trust_judge_stored(&v, ctx, layer, PKG, VER, DIGEST);
    if (rc)
        fuzz_check_error(ctx, rc);
    else {
        FUZZ_CHECK(v.status >= KB_TRUST_SIGNED_TRUSTED && v.status <= KB_TRUST_UNKNOWN_TYPE,
                   "status %d", (int)v.status);
        FUZZ_CHECK(v.detail != NULL, "a verdict without its sentence");
        FUZZ_CHECK(v.status != KB_TRUST_SIGNED_TRUSTED, "a forged layer verified: %s", layer);
    }
    kb_trust_verdict_clear(&v);
    kb_ctx_clear_error(ctx);
    free(layer);
    return 0;
}
