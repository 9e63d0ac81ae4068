/* Plain URL downloads (a package's url sources and header-only dependencies), verified. */
#include "registry/registry.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Large enough for a CUTLASS-sized tree, small enough that a wrong URL cannot fill a disk. */
#define URL_FETCH_MAX_BYTES (1ULL << 30)

static int fetch_to(kb_ctx *ctx, const char *url, const char *part)
{
    FILE *f = fopen(part, "wb");
    if (!f)
        return kbi_error_set_path(ctx, KB_ERR_IO, part, 0, 0, "cannot write %s: %s", part,
                                  strerror(errno));
    CURL *c = curl_easy_init();
    if (!c) {
        fclose(f);
        return kbi_error_oom(ctx);
    }
    char err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)URL_FETCH_MAX_BYTES);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    bool closed = fclose(f) == 0;
    if (cc == CURLE_HTTP_RETURNED_ERROR)
        return kbi_error_set(ctx, KB_ERR_HTTP, "GET %s: HTTP %ld", url, status);
    if (cc != CURLE_OK)
        return kbi_error_set(ctx, KB_ERR_NETWORK, "GET %s: %s", url,
                             err[0] ? err : curl_easy_strerror(cc));
    if (!closed)
        return kbi_error_set_path(ctx, KB_ERR_IO, part, 0, 0, "cannot write %s", part);
    return 0;
}

int kbi_url_fetch_verified(kb_ctx *ctx, const char *url, const char *sha256, const char *dest)
{
    if (kbi_config_bool(ctx, "offline"))
        return kbi_error_set(ctx, KB_ERR_OFFLINE, "offline: cannot download %s (sha256:%s)", url,
                             sha256);
    char *part = kbi_asprintf("%s.part", dest);
    if (!part)
        return kbi_error_oom(ctx);
    int rc = fetch_to(ctx, url, part);
    char got[65] = "";
    if (!rc)
        rc = kbi_sha256_file(ctx, part, got, NULL);
    if (!rc && strcmp(got, sha256) != 0)
        rc = kbi_error_set(ctx, KB_ERR_DIGEST, "sha256 mismatch for %s: expected %s, got %s", url,
                           sha256, got);
    if (!rc && rename(part, dest) != 0)
        rc = kbi_error_set_path(ctx, KB_ERR_IO, dest, 0, 0, "cannot rename %s to %s: %s", part,
                                dest, strerror(errno));
    if (rc)
        unlink(part);
    free(part);
    return rc;
}
