/* What admitted a package index at install, kept in the install record and judged again at load. */
#ifndef KB_TRUST_ADMISSION_H
#define KB_TRUST_ADMISSION_H

#include "core/internal.h"
#include "kbpkg/trust.h"
#include "model/admission.h"

/* kb_trust_check, also saying what admitted the index (*out cleared on failure). A package whose
 * signature this cache has seen before (any version) and that is now unsigned is refused even
 * with allow_unsigned: a registry that deletes a signature tag does not turn a bad or foreign
 * signature into "no signature" (TUF clients keep their last metadata for the same reason). */
int kbi_trust_admit(kb_trust_admission *out, kb_ctx *ctx, kb_registry *registry,
                    const char *package, const char *version, const char *index_digest,
                    bool allow_unsigned);

/* The policy in force applied to an install's admission, offline (no registry): with signatures
 * required, a stored signature must still verify with a key trusted and not revoked here (its
 * expiry is not checked again: it guards what a registry serves, and the bytes were fetched
 * while it was valid); an unsigned or unchecked install is refused unless allow_unsigned admits
 * an unsigned one. KB_ERR_SIGNATURE naming the package. */
int kbi_trust_check_installed(kb_ctx *ctx, const kb_trust_admission *a, const char *package,
                              const char *version, const char *index_digest, bool allow_unsigned);

/* Judge a stored signature layer offline (expiry not checked). */
int kbi_trust_judge_stored(kb_trust_verdict *out, kb_ctx *ctx, const char *layer_json,
                           const char *package, const char *version, const char *index_digest);

/* Internal kb_trust_verify_index that also hands over the layer JSON text (owned, NULL when
 * there is none). */
int kbi_trust_verify_index_layer(kb_trust_verdict *out, char **layer_out, kb_ctx *ctx,
                                 kb_registry *registry, const char *package, const char *version,
                                 const char *index_digest);

#endif
