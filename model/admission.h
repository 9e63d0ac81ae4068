/* What admitted a package index at install: a plain record that trust/ fills, cache/ stores in
 * the install record and runtime/ hands back to trust/ at load. */
#ifndef KB_MODEL_ADMISSION_H
#define KB_MODEL_ADMISSION_H

#include "core/internal.h"

typedef struct kb_trust_admission {
    char *status;        /* kb_trust_status_name, or "not-checked" (require_signatures=never) */
    char *key_id;        /* NULL when there was no signature */
    char *layer;         /* the signature layer JSON that verified; NULL when none */
    char *registry_kind; /* kbi_registry_kind of where it came from ("layout", "remote") */
} kb_trust_admission;

#define KB_TRUST_NOT_CHECKED "not-checked"

void kbi_trust_admission_clear(kb_trust_admission *a);
/* A deep copy; KB_ERR_NOMEM (dst cleared) when out of memory. */
int kbi_trust_admission_copy(kb_trust_admission *dst, const kb_trust_admission *src);

#endif
