/* Embedded GPU code: CUDA fatbin containers and clang offload bundles (.hip_fatbin). */
#include "archive/inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define BUNDLE_MAGIC_LEN 24
#define COMPRESSED_BUNDLE_MAGIC "CCOB"
#define MAX_BUNDLE_ENTRIES 4096
#define MAX_TRIPLE_LEN 1024

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int bad_gpu_data(kb_ctx *ctx, const char *section, size_t off, const char *fmt, ...)
    KB_PRINTF(4, 5);
static int bad_gpu_data(kb_ctx *ctx, const char *section, size_t off, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return kbi_error_set(ctx, KB_ERR_PARSE, "%s: malformed at offset 0x%zx: %s", section, off,
                         what);
}

int kbi_inspect_add_gpu_code(kb_ctx *ctx, kb_inspect *into, kb_gpu_code_kind kind, const char *arch,
                             const char *detail, int compressed)
{
    for (size_t i = 0; i < into->code_count; i++) {
        const kb_gpu_entry *e = into->codes[i];
        if (e->code.kind == kind && strcmp(e->arch, arch) == 0 && strcmp(e->detail, detail) == 0)
            return 0;
    }
    if (kbi_array_grow((void **)&into->codes, &into->codes_cap, into->code_count + 1,
                       sizeof(*into->codes)))
        return kbi_error_oom(ctx);
    kb_gpu_entry **codes = into->codes;
    kb_gpu_entry *e = calloc(1, sizeof(*e));
    if (!e)
        return kbi_error_oom(ctx);
    snprintf(e->arch, sizeof(e->arch), "%s", arch);
    snprintf(e->detail, sizeof(e->detail), "%s", detail);
    e->code.kind = kind;
    e->code.arch = e->arch;
    e->code.detail = e->detail;
    e->code.compressed = compressed;
    codes[into->code_count++] = e;
    return 0;
}

/*
 * Fatbin entry header, as nvcc 13 writes it (little-endian; docs/artifact-format.md):
 *   0 u16 kind (1 PTX, 2 ELF/SASS)   2 u16 version   4 u32 header size   8 u64 payload size
 *  16 u32 compressed size           20 u32 (options offset)  24 u16 minor  26 u16 major
 *  28 u32 arch (80 = sm_80)         32 u32 name offset  36 u32 name size  40 u64 flags
 *  48 u64 (zero)                    56 u64 uncompressed size
 */
static int add_fatbin_entry(kb_ctx *ctx, kb_inspect *into, const uint8_t *e, uint32_t header_size)
{
    uint16_t kind = rd16(e);
    uint32_t arch = rd32(e + 28);
    uint64_t flags = header_size >= 48 ? rd64(e + 40) : 0;
    const char *suffix = flags & KB_FATBIN_FLAG_ARCH_SPECIFIC ? "a" : "";
    int compressed =
        (flags & (KB_FATBIN_FLAG_COMPRESSED_LZ4 | KB_FATBIN_FLAG_COMPRESSED_ZSTD)) != 0;
    char name[48];
    kb_gpu_code_kind k = KB_GPU_CODE_UNKNOWN;
    if (kind == 1) {
        k = KB_GPU_CODE_PTX;
        snprintf(name, sizeof(name), "compute_%u%s", arch, suffix);
    } else if (kind == 2) {
        k = KB_GPU_CODE_SASS;
        snprintf(name, sizeof(name), "sm_%u%s", arch, suffix);
    } else
        snprintf(name, sizeof(name), "kind%u-%u", kind, arch);
    return kbi_inspect_add_gpu_code(ctx, into, k, name, "", compressed);
}

static int parse_fatbin_container(kb_ctx *ctx, kb_inspect *into, const char *section,
                                  const uint8_t *data, size_t len, size_t off, size_t *end_out)
{
    uint16_t header_size = rd16(data + off + 6);
    uint64_t fat_size = rd64(data + off + 8);
    if (header_size < 16 || header_size > len - off || fat_size > len - off - header_size)
        return bad_gpu_data(ctx, section, off,
                            "fatbin header says %u + %llu bytes, the section has %zu left",
                            header_size, (unsigned long long)fat_size, len - off);
    size_t p = off + header_size, end = p + (size_t)fat_size;
    while (p < end) {
        if (end - p < 32)
            return bad_gpu_data(ctx, section, p, "fatbin entry header cut short");
        uint32_t eh = rd32(data + p + 4);
        uint64_t payload = rd64(data + p + 8);
        if (eh < 32 || eh > end - p || payload > end - p - eh)
            return bad_gpu_data(ctx, section, p,
                                "fatbin entry says %u + %llu bytes, the container has %zu left", eh,
                                (unsigned long long)payload, end - p);
        int rc = add_fatbin_entry(ctx, into, data + p, eh);
        if (rc)
            return rc;
        p += eh + (size_t)payload;
    }
    *end_out = end;
    return 0;
}

static bool zero_bytes(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

int kbi_fatbin_parse(kb_ctx *ctx, kb_inspect *into, const char *section, const uint8_t *data,
                     size_t len)
{
    size_t off = 0;
    while (off < len) {
        size_t left = len - off;
        /* the linker pads between containers with zeros */
        if (zero_bytes(data + off, left < 8 ? left : 8)) {
            off += 8;
            continue;
        }
        if (left < 16)
            return bad_gpu_data(ctx, section, off, "fatbin header cut short");
        uint32_t magic = rd32(data + off);
        if (magic != KB_FATBIN_MAGIC && magic != KB_FATBIN_REL_MAGIC)
            return bad_gpu_data(ctx, section, off, "expected fatbin magic 0x%08X, got 0x%08X",
                                KB_FATBIN_MAGIC, magic);
        int rc = parse_fatbin_container(ctx, into, section, data, len, off, &off);
        if (rc)
            return rc;
    }
    return 0;
}

/* "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+": offload kind, 4-part triple, then the target id. */
static void bundle_target(const char *triple, char *arch, size_t size)
{
    const char *p = triple;
    for (int dashes = 0; dashes < 5 && p; dashes++) {
        p = strchr(p, '-');
        if (p)
            p++;
    }
    snprintf(arch, size, "%s", p ? p : "");
}

/* EF_AMDGPU_MACH_* (LLVM's include/llvm/BinaryFormat/ELF.h), checked against clang 19's
 * output for each arch (docs/targets.md). */
static const struct {
    const char *gfx;
    unsigned mach;
} amdgpu_machs[] = {
    {"gfx900", 0x2c},         {"gfx902", 0x2d},          {"gfx904", 0x2e},
    {"gfx906", 0x2f},         {"gfx908", 0x30},          {"gfx909", 0x31},
    {"gfx90c", 0x32},         {"gfx1010", 0x33},         {"gfx1011", 0x34},
    {"gfx1012", 0x35},        {"gfx1030", 0x36},         {"gfx1031", 0x37},
    {"gfx1032", 0x38},        {"gfx1033", 0x39},         {"gfx1035", 0x3d},
    {"gfx1034", 0x3e},        {"gfx90a", 0x3f},          {"gfx940", 0x40},
    {"gfx1100", 0x41},        {"gfx1013", 0x42},         {"gfx1150", 0x43},
    {"gfx1103", 0x44},        {"gfx1036", 0x45},         {"gfx1101", 0x46},
    {"gfx1102", 0x47},        {"gfx1200", 0x48},         {"gfx1151", 0x4a},
    {"gfx941", 0x4b},         {"gfx942", 0x4c},          {"gfx1201", 0x4e},
    {"gfx9-generic", 0x51},   {"gfx10-1-generic", 0x52}, {"gfx10-3-generic", 0x53},
    {"gfx11-generic", 0x54},  {"gfx1152", 0x55},         {"gfx12-generic", 0x59},
    {"gfx9-4-generic", 0x5f},
};

bool kbi_amdgpu_mach(const char *gfx, unsigned *mach)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(amdgpu_machs); i++)
        if (strcmp(amdgpu_machs[i].gfx, gfx) == 0) {
            *mach = amdgpu_machs[i].mach;
            return true;
        }
    return false;
}

/* Record where the entry's code object lies and what its ELF header says (the verifier
 * checks e_flags against the arch and disassembles it from there). */
static void note_code_object(kb_gpu_entry *e, const uint8_t *co, uint64_t size,
                             uint64_t file_offset)
{
    e->file_offset = file_offset;
    e->size = size;
    if (size < 64 || memcmp(co, "\177ELF", 4) != 0 || co[4] != 2 /* ELFCLASS64 */)
        return;
    e->elf = true;
    e->os_abi = co[7];
    e->abi_version = co[8];
    e->e_machine = rd16(co + 18);
    e->e_flags = rd32(co + 48);
}

static int parse_bundle(kb_ctx *ctx, kb_inspect *into, const char *section, const uint8_t *b,
                        size_t len, size_t base, uint64_t file_offset, size_t *size_out)
{
    if (len < BUNDLE_MAGIC_LEN + 8)
        return bad_gpu_data(ctx, section, base, "offload bundle header cut short");
    uint64_t count = rd64(b + BUNDLE_MAGIC_LEN);
    if (count > MAX_BUNDLE_ENTRIES)
        return bad_gpu_data(ctx, section, base, "offload bundle claims %llu entries",
                            (unsigned long long)count);
    size_t p = BUNDLE_MAGIC_LEN + 8, end = p;
    for (uint64_t i = 0; i < count; i++) {
        if (len - p < 24)
            return bad_gpu_data(ctx, section, base + p, "offload bundle entry cut short");
        uint64_t off = rd64(b + p), size = rd64(b + p + 8), tlen = rd64(b + p + 16);
        p += 24;
        if (tlen == 0 || tlen > MAX_TRIPLE_LEN || tlen > len - p)
            return bad_gpu_data(ctx, section, base + p - 8, "bad target triple length %llu",
                                (unsigned long long)tlen);
        if (off > len || size > len - off)
            return bad_gpu_data(ctx, section, base + p - 24,
                                "code object at %llu + %llu lies outside the section",
                                (unsigned long long)off, (unsigned long long)size);
        char triple[MAX_TRIPLE_LEN + 1];
        memcpy(triple, b + p, (size_t)tlen);
        triple[tlen] = '\0';
        p += (size_t)tlen;
        if (off + size > end)
            end = (size_t)(off + size);
        if (kbi_str_starts(triple, "host-"))
            continue;
        char arch[48];
        bundle_target(triple, arch, sizeof(arch));
        kb_gpu_code_kind kind = strstr(triple, "amdgcn") ? KB_GPU_CODE_AMDGCN : KB_GPU_CODE_UNKNOWN;
        size_t before = into->code_count;
        int rc = kbi_inspect_add_gpu_code(ctx, into, kind, arch, triple, 0);
        if (rc)
            return rc;
        if (into->code_count > before)
            note_code_object(into->codes[before], b + off, size, file_offset + base + off);
    }
    *size_out = end > p ? end : p;
    return 0;
}

static const uint8_t *find_bytes(const uint8_t *hay, size_t len, const char *needle, size_t n)
{
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (hay[i] == (uint8_t)needle[0] && memcmp(hay + i, needle, n) == 0)
            return hay + i;
    return NULL;
}

int kbi_offload_bundle_parse(kb_ctx *ctx, kb_inspect *into, const char *section,
                             const uint8_t *data, size_t len, uint64_t file_offset)
{
    size_t off = 0;
    bool found = false;
    while (off < len) {
        const uint8_t *b = find_bytes(data + off, len - off, BUNDLE_MAGIC, BUNDLE_MAGIC_LEN);
        const uint8_t *ccob = find_bytes(data + off, len - off, COMPRESSED_BUNDLE_MAGIC, 4);
        if (ccob && (!b || ccob < b)) {
            /* ROCm >= 6 may compress bundles; listing them needs the decompressed header. */
            return kbi_inspect_add_gpu_code(ctx, into, KB_GPU_CODE_UNKNOWN, "",
                                            "compressed offload bundle (CCOB)", 1);
        }
        if (!b)
            break;
        size_t start = (size_t)(b - data), size = 0;
        int rc = parse_bundle(ctx, into, section, b, len - start, start, file_offset, &size);
        if (rc)
            return rc;
        found = true;
        off = start + (size ? size : BUNDLE_MAGIC_LEN);
    }
    if (!found)
        return bad_gpu_data(ctx, section, 0, "no %s magic", BUNDLE_MAGIC);
    return 0;
}
