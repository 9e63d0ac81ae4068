/* kb_inspect: the public face of library inspection (files, artifacts, accessors, checks). */
#include "archive/inspect.h"

#include "archive/extract.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A library inside an artifact is read into memory; this caps what one may take. */
#define MAX_LIBRARY_BYTES (2ULL << 30)

kb_inspect *kbi_inspect_new(kb_inspect_kind kind, const char *name)
{
    kb_inspect *ins = calloc(1, sizeof(*ins));
    if (!ins)
        return NULL;
    ins->kind = kind;
    if (!(ins->name = kbi_strdup(name))) {
        free(ins);
        return NULL;
    }
    return ins;
}

void kb_inspect_free(kb_inspect *ins)
{
    if (!ins)
        return;
    free(ins->name);
    kbi_strv_free(&ins->exports);
    kbi_strv_free(&ins->needed);
    kbi_strv_free(&ins->uniques);
    kbi_strv_free(&ins->imports);
    kbi_strv_free(&ins->strong_exports);
    for (size_t i = 0; i < ins->code_count; i++)
        free(ins->codes[i]);
    free(ins->codes);
    kbi_strv_free(&ins->members);
    for (size_t i = 0; i < ins->lib_count; i++)
        kb_inspect_free(ins->libs[i]);
    free(ins->libs);
    free(ins);
}

int kbi_version_compare(const char *a, const char *b)
{
    while (*a || *b) {
        uint64_t x = 0, y = 0;
        for (; *a >= '0' && *a <= '9'; a++)
            x = x * 10 + (uint64_t)(*a - '0');
        for (; *b >= '0' && *b <= '9'; b++)
            y = y * 10 + (uint64_t)(*b - '0');
        if (x != y)
            return x < y ? -1 : 1;
        if (*a == '.')
            a++;
        else if (*a)
            return strcmp(a, b); /* not numeric: fall back to bytes */
        if (*b == '.')
            b++;
        else if (*b)
            return strcmp(a, b);
    }
    return 0;
}

/* Map a whole file read-only. */
static int map_file(kb_ctx *ctx, const char *path, const uint8_t **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return kbi_error_set_path(ctx, errno == ENOENT ? KB_ERR_NOT_FOUND : KB_ERR_IO, path, 0, 0,
                                  "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = kbi_error_set_path(ctx, KB_ERR_INVALID, path, 0, 0, "%s is not a regular file", path);
    else if (st.st_size == 0)
        rc = kbi_error_set_path(ctx, KB_ERR_PARSE, path, 0, 0, "%s is empty", path);
    else {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            rc = kbi_error_set_path(ctx, KB_ERR_IO, path, 0, 0, "cannot map %s: %s", path,
                                    strerror(errno));
        else {
            *data = m;
            *len = (size_t)st.st_size;
        }
    }
    close(fd);
    return rc;
}

static bool is_library_member(const char *name)
{
    if (!kbi_str_starts(name, "lib/") || kbi_str_ends(name, "/"))
        return false;
    const char *base = strrchr(name, '/') + 1;
    return kbi_str_ends(base, ".so") || strstr(base, ".so.") != NULL;
}

static int inspect_member(kb_ctx *ctx, kb_inspect *ins, const char *path, const char *member)
{
    kb_buf buf = KB_BUF_INIT;
    int rc = kbi_extract_read_member(&buf, ctx, path, member, MAX_LIBRARY_BYTES);
    kb_inspect *lib = NULL;
    if (!rc)
        rc = kbi_inspect_elf_memory(&lib, ctx, member, (const uint8_t *)buf.data, buf.len);
    kbi_buf_free(&buf);
    if (rc) {
        kbi_error_prefix(ctx, "%s", path);
        return rc;
    }
    if (kbi_array_grow((void **)&ins->libs, &ins->libs_cap, ins->lib_count + 1,
                       sizeof(*ins->libs))) {
        kb_inspect_free(lib);
        return kbi_error_oom(ctx);
    }
    kb_inspect **libs = ins->libs;
    libs[ins->lib_count++] = lib;
    return 0;
}

static int inspect_archive(kb_inspect **out, kb_ctx *ctx, const char *path)
{
    kb_inspect *ins = kbi_inspect_new(KB_INSPECT_ARCHIVE, path);
    if (!ins)
        return kbi_error_oom(ctx);
    int rc = kbi_extract_list(&ins->members, NULL, ctx, path);
    for (size_t i = 0; !rc && i < ins->members.len; i++)
        if (is_library_member(ins->members.items[i]))
            rc = inspect_member(ctx, ins, path, ins->members.items[i]);
    if (rc)
        kb_inspect_free(ins);
    else
        *out = ins;
    return rc;
}

/* zstd, gzip, xz frames or a bare ustar header: something libarchive may read as an artifact. */
static bool looks_like_archive(const uint8_t *d, size_t len)
{
    static const uint8_t zstd[] = {0x28, 0xb5, 0x2f, 0xfd}, gz[] = {0x1f, 0x8b},
                         xz[] = {0xfd, '7', 'z', 'X', 'Z'};
    return (len >= 4 && memcmp(d, zstd, 4) == 0) || (len >= 2 && memcmp(d, gz, 2) == 0) ||
           (len >= 5 && memcmp(d, xz, 5) == 0) || (len >= 262 && memcmp(d + 257, "ustar", 5) == 0);
}

int kb_inspect_file(kb_inspect **out, kb_ctx *ctx, const char *path)
{
    *out = NULL;
    const uint8_t *data = NULL;
    size_t len = 0;
    int rc = map_file(ctx, path, &data, &len);
    if (rc)
        return rc;
    if (len >= 4 && memcmp(data, "\177ELF", 4) == 0)
        rc = kbi_inspect_elf_memory(out, ctx, path, data, len);
    else if (looks_like_archive(data, len))
        rc = inspect_archive(out, ctx, path);
    else
        rc = kbi_error_set_path(ctx, KB_ERR_UNSUPPORTED, path, 0, 0,
                                "%s is neither an ELF file nor a .tar.zst artifact", path);
    munmap((void *)data, len);
    return rc;
}

kb_inspect_kind kb_inspect_get_kind(const kb_inspect *ins)
{
    return ins->kind;
}

const char *kb_inspect_name(const kb_inspect *ins)
{
    return ins->name;
}

size_t kb_inspect_export_count(const kb_inspect *ins)
{
    return ins->exports.len;
}

const char *kb_inspect_export(const kb_inspect *ins, size_t i)
{
    return i < ins->exports.len ? ins->exports.items[i] : NULL;
}

size_t kb_inspect_unique_count(const kb_inspect *ins)
{
    return ins->uniques.len;
}

const char *kb_inspect_unique(const kb_inspect *ins, size_t i)
{
    return i < ins->uniques.len ? ins->uniques.items[i] : NULL;
}

const char *kb_inspect_glibc_needed(const kb_inspect *ins)
{
    return ins->glibc;
}

const char *kb_inspect_glibcxx_needed(const kb_inspect *ins)
{
    return ins->glibcxx;
}

size_t kb_inspect_gpu_code_count(const kb_inspect *ins)
{
    return ins->code_count;
}

const kb_gpu_code *kb_inspect_gpu_code(const kb_inspect *ins, size_t i)
{
    return i < ins->code_count ? &ins->codes[i]->code : NULL;
}

const kb_gpu_entry *kbi_inspect_gpu_entry(const kb_inspect *ins, size_t i)
{
    return i < ins->code_count ? ins->codes[i] : NULL;
}

const kb_strv *kbi_inspect_needed(const kb_inspect *ins)
{
    return &ins->needed;
}

const char *kb_gpu_code_kind_name(kb_gpu_code_kind kind)
{
    switch (kind) {
    case KB_GPU_CODE_SASS:
        return "SASS";
    case KB_GPU_CODE_PTX:
        return "PTX";
    case KB_GPU_CODE_AMDGCN:
        return "AMDGCN";
    default:
        return "unknown";
    }
}

size_t kb_inspect_member_count(const kb_inspect *ins)
{
    return ins->members.len;
}

const char *kb_inspect_member(const kb_inspect *ins, size_t i)
{
    return i < ins->members.len ? ins->members.items[i] : NULL;
}

size_t kb_inspect_library_count(const kb_inspect *ins)
{
    return ins->lib_count;
}

const kb_inspect *kb_inspect_library(const kb_inspect *ins, size_t i)
{
    return i < ins->lib_count ? ins->libs[i] : NULL;
}

int kb_inspect_check_exports(kb_ctx *ctx, const kb_inspect *ins, const char *const *required,
                             size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!kbi_strv_contains(&ins->exports, required[i]))
            return kbi_error_set_path(ctx, KB_ERR_ABI, ins->name, 0, 0,
                                      "%s does not export '%s' (it exports %zu symbols)", ins->name,
                                      required[i], ins->exports.len);
    return 0;
}

int kbi_inspect_refuse_unique(kb_ctx *ctx, const kb_inspect *ins)
{
    if (!ins->uniques.len)
        return 0;
    return kbi_error_set_path(ctx, KB_ERR_ABI, ins->name, 0, 0,
                              "%s defines STB_GNU_UNIQUE symbol '%s' (%zu in all): it could never "
                              "be unloaded; build with -fno-gnu-unique",
                              ins->name, ins->uniques.items[0], ins->uniques.len);
}
