/* The host as the resolver sees it: probed once per ctx, with the compat options from config. */
#ifndef KB_RESOLVE_HOST_H
#define KB_RESOLVE_HOST_H

#include "model/target.h"
#include "probe/probe.h"

/* The ctx's probe report (probing on first use). Borrowed from ctx. */
int kbi_host_get(const kb_probe_report **out, kb_ctx *ctx);
/* Compatibility options from the ctx settings (rocm.aliases). */
void kbi_host_compat_opts(kb_compat_opts *out, const kb_ctx *ctx);

#endif
