/* sha256 through OpenSSL's EVP interface, as lowercase hex. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct kb_sha256 {
    EVP_MD_CTX *md;
};

kb_sha256 *kbi_sha256_new(void)
{
    kb_sha256 *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->md = EVP_MD_CTX_new();
    if (!h->md || EVP_DigestInit_ex(h->md, EVP_sha256(), NULL) != 1) {
        kbi_sha256_free(h);
        return NULL;
    }
    return h;
}

void kbi_sha256_update(kb_sha256 *h, const void *data, size_t len)
{
    EVP_DigestUpdate(h->md, data, len);
}

void kbi_sha256_finish(kb_sha256 *h, char hex[65])
{
    unsigned char raw[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(h->md, raw, &n);
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[raw[i] >> 4];
        hex[2 * i + 1] = digits[raw[i] & 15];
    }
    hex[64] = '\0';
    kbi_sha256_free(h);
}

void kbi_sha256_free(kb_sha256 *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->md);
    free(h);
}

void kbi_sha256_hex(const void *data, size_t len, char hex[65])
{
    kb_sha256 *h = kbi_sha256_new();
    if (!h) {
        hex[0] = '\0';
        return;
    }
    kbi_sha256_update(h, data, len);
    kbi_sha256_finish(h, hex);
}

/* The whole file behind fd, read with pread from offset 0 (its file offset is left alone). */
int kbi_sha256_fd(kb_ctx *ctx, int fd, const char *path, char hex[65], uint64_t *size_out)
{
    kb_sha256 *h = kbi_sha256_new();
    if (!h)
        return kbi_error_oom(ctx);
    char chunk[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t n = pread(fd, chunk, sizeof(chunk), (off_t)total);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int rc = kbi_error_set_path(ctx, KB_ERR_IO, path, 0, 0, "cannot read %s: %s", path,
                                        strerror(errno));
            kbi_sha256_free(h);
            return rc;
        }
        if (n == 0)
            break;
        kbi_sha256_update(h, chunk, (size_t)n);
        total += (uint64_t)n;
    }
    kbi_sha256_finish(h, hex);
    if (size_out)
        *size_out = total;
    return 0;
}

int kbi_open_regular(kb_ctx *ctx, const char *path, int extra_flags)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it (and a
     * device) before a single read, which could block forever or never end (/dev/zero). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | extra_flags);
    if (fd < 0)
        return kbi_error_set_path(ctx, errno == ENOENT ? KB_ERR_NOT_FOUND : KB_ERR_IO, path, 0, 0,
                                  "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return kbi_error_set_path(ctx, KB_ERR_IO, path, 0, 0,
                                  "%s is not a regular file (a FIFO, device or folder is never "
                                  "read)",
                                  path);
    }
    return fd;
}

int kbi_sha256_file(kb_ctx *ctx, const char *path, char hex[65], uint64_t *size_out)
{
    int fd = kbi_open_regular(ctx, path, 0);
    if (fd < 0)
        return fd;
    int rc = kbi_sha256_fd(ctx, fd, path, hex, size_out);
    close(fd);
    return rc;
}
