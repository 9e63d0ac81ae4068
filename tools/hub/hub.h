/* The hub tool: render a registry as a static, browsable web site, over libkbpkg's public API. */
#ifndef KB_HUB_HUB_H
#define KB_HUB_HUB_H

#include <kbpkg/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write out_dir/index.html (every package, its latest version and summary, a search box)
 * and one page per package, out_dir/<org>/<name>.html: every version with
 * - its signature as kb_trust_verify_index judges it with ctx's keys (class sig-<status name>:
 *   "signed by KEYID, verified", "signed by KEYID, key not trusted here", "bad signature",
 *   "expired", "unsigned", ...); a bad signature is shown, never a reason to fail;
 * - what the published manifest carries: the index's summary, and the exports and kernel ABI
 *   of one artifact's kbpkg.json (kb_package_info_read_kbpkg_json);
 * - each target's backend, arch, artifact size and build key.
 * Plain HTML and CSS with a small inline script; no network needed to view it. Every registry
 * string is HTML-escaped.
 * registry NULL: the ctx's "registry" setting, opened with kb_trust_registry_open (stored
 * credentials count). *packages_out (may be NULL): packages written.
 * A version whose index, kbpkg.json or signature cannot be read is shown as such and reported
 * to event (may be NULL) as a KB_EVENT_WARNING; the render fails only when the registry cannot
 * be listed or out_dir cannot be written.
 * On failure, *why (may be NULL) is the hub's own reason, malloc'd (free it), or NULL when the
 * reason is libkbpkg's: ctx's last error, or out of memory.
 */
int kbi_hub_render(size_t *packages_out, char **why, kb_ctx *ctx, const char *registry,
                   const char *out_dir, kb_event_cb event, void *payload);

#ifdef __cplusplus
}
#endif
#endif
