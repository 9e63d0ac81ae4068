/* Internal pieces of the hub renderer (tools/hub/hub_render.c) that tests reach directly. */
#ifndef KB_HUB_HUB_RENDER_H
#define KB_HUB_HUB_RENDER_H

#include "hub.h"
#include "hub_util.h"

/* Append text with & < > " ' replaced by entities (NULL appends nothing). */
int kbi_html_escape(hub_buf *out, const char *text);

#endif
