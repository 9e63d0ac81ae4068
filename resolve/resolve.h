/* Resolution: the result of weighing a package index for this host (shared by install, resolve,
 * lock and sync), and the weighing itself (resolve/resolve.c). */
#ifndef KB_RESOLVE_RESOLVE_H
#define KB_RESOLVE_RESOLVE_H

#include "resolve/host.h"
#include "model/admission.h"
#include "model/target.h"
#include "kbpkg/install.h"
#include "registry/pkgindex.h"

typedef struct kb_candidate {
    char *target;
    kb_compat compat;
    bool taken;
    bool local_build; /* "build from source for <target>" */
} kb_candidate;

struct kb_install_result {
    char *name;
    char *version;
    char *target;
    char *reason;
    char *dir;
    char *index_digest;
    char *artifact_digest;
    bool local_build;
    bool was_installed;
    kb_trust_admission admission; /* what admitted the index: goes into the install record */
    kb_candidate *candidates;
    size_t candidate_count, candidates_cap;
};

const char *kbi_fit_name(kb_fit fit);
/* Append a candidate to res (KB_ERR_NOMEM). */
int kbi_resolve_candidate_push(kb_install_result *res, const char *target, const kb_compat *c,
                               bool local_build);

/* Resolution (resolve/resolve.c): weigh every artifact of idx for host, plus a local build when
 * the index has a source, into res->candidates, best first. */
int kbi_resolve_weigh(kb_install_result *res, kb_ctx *ctx, const kb_pkg_index *idx,
                      const kb_host *host, const kb_install_options *o);
/* The error for "nothing here runs on this host", naming every candidate's reason. */
int kbi_resolve_no_fit_error(kb_ctx *ctx, const kb_install_result *res, const kb_host *host);

/* The target this host would build for itself (its best GPU with a toolchain, else its CPU);
 * KB_ERR_TOOLCHAIN with why when nothing can build. declared (the index's declared targets, NULL
 * when it does not record them) limits it to an arch the package declares that runs on the
 * device by the compatibility rules; why then names what is declared. */
int kbi_local_build_target(char **target_out, char *why, size_t why_size, kb_ctx *ctx,
                           const kb_host *host, const char *declared);
#endif
