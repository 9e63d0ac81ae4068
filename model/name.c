/* The one grammar of package and repository names: the OCI distribution spec's repository
 * grammar that kbpkg publishes to, with exactly one '/' for a package (org/name). */
#include "model/ref.h"

#include <string.h>

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static bool component_valid(const char *s, size_t n)
{
    if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i], prev = s[i - 1];
        if (is_lower_alnum(c))
            continue;
        bool ok = (c == '.' && is_lower_alnum(prev)) ||
                  (c == '_' &&
                   (is_lower_alnum(prev) || (prev == '_' && i >= 2 && is_lower_alnum(s[i - 2])))) ||
                  (c == '-' && (is_lower_alnum(prev) || prev == '-'));
        if (!ok)
            return false;
    }
    return true;
}

bool kbi_repo_valid(const char *repo)
{
    if (!repo || !*repo || strlen(repo) > KB_REPO_NAME_MAX)
        return false;
    for (const char *p = repo;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (!component_valid(p, n))
            return false;
        if (!slash)
            return true;
        p = slash + 1;
    }
}

bool kbi_pkg_name_valid(const char *name)
{
    const char *slash = name ? strchr(name, '/') : NULL;
    return slash && !strchr(slash + 1, '/') && kbi_repo_valid(name);
}

int kbi_pkg_name_check(kb_ctx *ctx, const char *name)
{
    if (kbi_pkg_name_valid(name))
        return 0;
    return kbi_error_set(ctx, KB_ERR_INVALID, "'%s' is not a package name (%s)", name ? name : "",
                         KB_PKG_NAME_RULE);
}
