/* Internal pieces of the hub renderer (tools/hub/hub_render.c) that tests reach directly. */
#ifndef KB_HUB_HUB_RENDER_H
#define KB_HUB_HUB_RENDER_H

#include "hub.h"
#include "hub_util.h"

/* Append text with & < > " ' replaced by entities (NULL appends nothing). */
int kbi_html_escape(hub_buf *out, const char *text);

/* The benchmark table of a version (tools/hub/hub_bench.c): results is the JSON text of
 * kb_package_bench_results, NULL when it failed (error says why). */
int hub_bench_section(hub_buf *b, const char *results, const char *error);

#endif
