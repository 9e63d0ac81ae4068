/* kbpkg: ahead-of-time GPU kernel packages. Include this one header. */
#ifndef KBPKG_KBPKG_H
#define KBPKG_KBPKG_H

#include "kbpkg/build.h"
#include "kbpkg/common.h"
#include "kbpkg/target.h"
#include "kbpkg/manifest.h"
#include "kbpkg/inspect.h"
#include "kbpkg/lock.h"
#include "kbpkg/probe.h"
#include "kbpkg/publish.h"
#include "kbpkg/registry.h"
#include "kbpkg/cache.h"
#include "kbpkg/info.h"
#include "kbpkg/install.h"
#include "kbpkg/kernel.h"
#include "kbpkg/trust.h"

#endif
