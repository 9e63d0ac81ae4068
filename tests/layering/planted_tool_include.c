/* tests/layering: a tool (tools/hub) reaching past the public API, which it may not do. */
#include <kbpkg/info.h>
#include "hub.h"
#include <registry/pkgindex.h>
