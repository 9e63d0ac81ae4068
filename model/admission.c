/* The admission record (model/admission.h): clear and copy. */
#include "model/admission.h"

#include <stdlib.h>
#include <string.h>

void kbi_trust_admission_clear(kb_trust_admission *a)
{
    free(a->status);
    free(a->key_id);
    free(a->layer);
    free(a->registry_kind);
    memset(a, 0, sizeof(*a));
}

int kbi_trust_admission_copy(kb_trust_admission *dst, const kb_trust_admission *src)
{
    memset(dst, 0, sizeof(*dst));
    const char *from[] = {src->status, src->key_id, src->layer, src->registry_kind};
    char **to[] = {&dst->status, &dst->key_id, &dst->layer, &dst->registry_kind};
    for (size_t i = 0; i < KB_ARRAY_LEN(from); i++)
        if (from[i] && !(*to[i] = kbi_strdup(from[i]))) {
            kbi_trust_admission_clear(dst);
            return KB_ERR_NOMEM;
        }
    return 0;
}
