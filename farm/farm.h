/* Internal side of the farm, shared by the one-machine farm, build --stage and merge
 * (farm/farm.c) and the plan (farm/farm_plan.c). */
#ifndef KB_FARM_FARM_H
#define KB_FARM_FARM_H

#include "publish/publish.h"

/* One package as the farm sees it: its plan, build keys and the registry's index. */
typedef struct kb_farm_pkg {
    kb_manifest *m;
    char version[160];
    char source_digest[65]; /* every source file: the source artifact's identity */
    char inputs_digest[65]; /* what builds read: the build keys' input */
    kb_plan plan;
    char **keys;       /* build key per plan item; NULL when skipped or the toolchain has no id */
    kb_pkg_index *idx; /* the registry's index of this version, NULL when none */
} kb_farm_pkg;

/* What a farm run holds across packages. */
typedef struct kb_farm_run {
    kb_registry *r;
    kb_toolchains tcs; /* discovered once per backend for the whole run */
    unsigned have;     /* backends looked for so far */
    unsigned jobs;
    const char *out_dir;
    bool stage_only;
} kb_farm_run;

/* Package folders under path (a folder holding kernel.yaml is one; hidden, build* and dist
 * folders are skipped), appended in sorted order. */
int kbi_farm_find_packages(kb_ctx *ctx, kb_strv *out, const char *path, unsigned depth);
/* The backends the manifest declares, as a mask of 1u << kb_backend. */
unsigned kbi_farm_backends(const kb_manifest *m);
/* Discover the toolchains of mask's backends not looked for yet into tcs (*have records). */
int kbi_farm_toolchains(kb_ctx *ctx, kb_toolchains *tcs, unsigned *have, unsigned mask);
/* Load dir's manifest, plan it with tcs (borrowed: the plan points into it), compute keys and,
 * when r is set, fetch the version's index. */
int kbi_farm_pkg_load(kb_ctx *ctx, kb_farm_pkg *f, const char *dir, kb_registry *r,
                      const kb_toolchains *tcs, const char *const *filters, size_t filter_count);
void kbi_farm_pkg_free(kb_farm_pkg *f);
bool kbi_farm_key_present(const kb_pkg_index *idx, const char *target, const char *key);
/* A message (owned) when the index's source differs from the folder's, else NULL. */
char *kbi_farm_source_changed(const kb_farm_pkg *f);
char *kbi_farm_out_dir(kb_ctx *ctx, const char *out_root, const kb_farm_pkg *f);
/* Registry errors another try may cure. */
bool kbi_farm_transient(int rc);
int kbi_farm_check_options(kb_ctx *ctx, const kb_farm_options *o, const char *fn);

#endif
