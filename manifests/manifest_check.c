/* Pure checks on kernel.yaml values: names, paths, URLs, digests, PTX archs. */
#include "manifests/manifest_check.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool kbi_package_path_ok(const char *path)
{
    if (!*path || path[0] == '/')
        return false;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        if (n == 0) /* "a//b" or a trailing '/' */
            return false;
        p += n;
        if (*p == '/')
            p++;
    }
    return true;
}

bool kbi_c_identifier_ok(const char *s)
{
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (const char *p = s + 1; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return true;
}

bool kbi_source_url_ok(const char *url)
{
    static const char *schemes[] = {"https://", "http://", "file://"};
    for (size_t i = 0; i < KB_ARRAY_LEN(schemes); i++)
        if (kbi_str_starts(url, schemes[i]) && url[strlen(schemes[i])] != '\0')
            return !strpbrk(url, " \t\r\n");
    return false;
}

bool kbi_sha256_hex_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

bool kbi_ptx_arch_canonical(const char *arch, char *out, size_t size)
{
    const char *digits;
    if (kbi_str_starts(arch, "sm_"))
        digits = arch + 3;
    else if (kbi_str_starts(arch, "compute_"))
        digits = arch + 8;
    else
        return false;
    uint64_t n;
    if (digits[0] == '0' || !kbi_parse_u64(digits, &n) || n < 75 || n > 999)
        return false;
    snprintf(out, size, "sm_%llu", (unsigned long long)n);
    return true;
}

char *kbi_url_file_name(const char *url)
{
    size_t end = strcspn(url, "?#");
    size_t start = end;
    while (start > 0 && url[start - 1] != '/')
        start--;
    const char *scheme_end = strstr(url, "://");
    /* "https://host" has no path: the host is not a file name */
    if (start == end || (scheme_end && url + start <= scheme_end + 3))
        return NULL;
    char *name = kbi_strndup(url + start, end - start);
    if (name && !kbi_package_path_ok(name)) {
        free(name);
        return NULL;
    }
    return name;
}

const char *kbi_backend_display_name(kb_backend b)
{
    switch (b) {
    case KB_BACKEND_CUDA:
        return "CUDA";
    case KB_BACKEND_ROCM:
        return "ROCm";
    case KB_BACKEND_METAL:
        return "Metal";
    case KB_BACKEND_CPU:
        return "CPU";
    default:
        return "known";
    }
}
