/* kbpkg public API: open a registry (OCI layout folder or OCI registry) and list what it holds. */
#ifndef KBPKG_REGISTRY_H
#define KBPKG_REGISTRY_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A registry: an OCI layout folder or a remote OCI Distribution registry. */
typedef struct kb_registry kb_registry;

/*
 * ref: "/path", "./path" or "file:///path" (layout folder);
 * "oci://host[:port]/namespace" (https; http only for loopback or insecure=true);
 * "https://host/namespace"; "http://127.0.0.1:PORT/namespace".
 * Reads the settings insecure, offline (KB_ERR_OFFLINE for a remote, before
 * any connection), net.timeout_s, net.retries, and the environment's
 * KBPKG_REGISTRY_USER / KBPKG_REGISTRY_PASSWORD.
 */
KB_EXTERN int kb_registry_open(kb_registry **out, kb_ctx *ctx, const char *ref);
KB_EXTERN void kb_registry_free(kb_registry *registry);

/* Credentials for basic auth and token requests, sent only to the registry's host. */
KB_EXTERN int kb_registry_set_credentials(kb_registry *registry, const char *user,
                                          const char *password);

/* Is the registry there and speaking OCI (GET /v2/)? */
KB_EXTERN int kb_registry_check(kb_registry *registry);

/* Tags of "org/name", or repositories; a sorted list freed with kb_strings_free. */
KB_EXTERN int kb_registry_list_tags(char ***out, size_t *count_out, kb_registry *registry,
                                    const char *repository);
KB_EXTERN int kb_registry_list_repositories(char ***out, size_t *count_out, kb_registry *registry);

#ifdef __cplusplus
}
#endif
#endif
