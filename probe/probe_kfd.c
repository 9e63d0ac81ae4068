/* AMD probe: the KFD sysfs topology, which names every GPU's gfx target without ROCm. */
#include "probe/probe_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KFD_TOPOLOGY "sys/class/kfd/kfd/topology/nodes"

/* Heap types of mem_banks/N/properties (Linux kfd_topology.h): device memory, not system. */
enum { HEAP_FB_PUBLIC = 1, HEAP_FB_PRIVATE = 2 };

static const char *next_line(const char *line)
{
    const char *nl = strchr(line, '\n');
    return nl ? nl + 1 : line + strlen(line);
}

/* Find "key value" in a properties file body; false when absent or not a number. */
static bool property(const char *text, const char *key, uint64_t *out)
{
    size_t klen = strlen(key);
    for (const char *line = text; *line; line = next_line(line)) {
        if (strncmp(line, key, klen) != 0 || line[klen] != ' ')
            continue;
        char value[32];
        size_t n = strcspn(line + klen + 1, "\n");
        if (n == 0 || n >= sizeof(value))
            return false;
        memcpy(value, line + klen + 1, n);
        value[n] = '\0';
        return kbi_parse_u64(value, out);
    }
    return false;
}

/* Read a small sysfs file; NULL when it cannot be read (absence is not an error here). */
static char *read_text(const char *dir, const char *leaf)
{
    char *path = kbi_path_join(dir, leaf);
    kb_buf b = KB_BUF_INIT;
    char *text = NULL;
    if (path && kbi_read_file(NULL, path, &b) == 0)
        text = kbi_buf_detach(&b);
    kbi_buf_free(&b);
    free(path);
    return text;
}

bool kbi_probe_gfx_name(char *buf, size_t size, uint64_t v)
{
    /* major*10000 + minor*100 + stepping; LLVM spells minor and stepping in hex (gfx90a). */
    unsigned major = (unsigned)(v / 10000), minor = (unsigned)(v / 100 % 100),
             stepping = (unsigned)(v % 100);
    if (major == 0 || minor > 15 || stepping > 15)
        return false;
    int n = snprintf(buf, size, "gfx%u%x%x", major, minor, stepping);
    return n > 0 && (size_t)n < size;
}

/* Device memory: the sum of the frame-buffer banks, or of every bank when none says FB (APUs). */
static uint64_t node_memory(const char *node_dir)
{
    char *banks_dir = kbi_path_join(node_dir, "mem_banks");
    DIR *d = banks_dir ? opendir(banks_dir) : NULL;
    uint64_t fb = 0, all = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *bank = kbi_path_join(banks_dir, e->d_name);
        char *text = bank ? read_text(bank, "properties") : NULL;
        uint64_t size = 0, heap = 0;
        if (text && property(text, "size_in_bytes", &size)) {
            all += size;
            if (property(text, "heap_type", &heap) &&
                (heap == HEAP_FB_PUBLIC || heap == HEAP_FB_PRIVATE))
                fb += size;
        }
        free(text);
        free(bank);
    }
    if (d)
        closedir(d);
    free(banks_dir);
    return fb ? fb : all;
}

static void node_name(const char *node_dir, char *buf, size_t size)
{
    char *text = read_text(node_dir, "name");
    buf[0] = '\0';
    if (text) {
        text[strcspn(text, "\n")] = '\0';
        snprintf(buf, size, "%s", text);
    }
    free(text);
}

static void node_pci_id(const char *props, char *buf, size_t size)
{
    /* location_id is the PCI BDF: bus << 8 | device << 3 | function. */
    uint64_t loc = 0, domain = 0;
    buf[0] = '\0';
    if (!property(props, "location_id", &loc) || loc == 0)
        return;
    property(props, "domain", &domain);
    snprintf(buf, size, "%04x:%02x:%02x.%x", (unsigned)domain & 0xffffu,
             (unsigned)(loc >> 8) & 0xffu, (unsigned)(loc >> 3) & 0x1fu, (unsigned)loc & 7u);
}

/* One node: a GPU when simd_count > 0; CPU nodes (simd_count 0) are skipped. */
static int probe_node(kb_ctx *ctx, kb_probe_report *r, const char *node_dir, size_t *found)
{
    char *props = read_text(node_dir, "properties");
    uint64_t simd = 0, gfx = 0;
    int rc = 0;
    if (!props || !property(props, "simd_count", &simd) || simd == 0)
        goto out;
    kb_device d;
    memset(&d, 0, sizeof(d));
    d.backend = KB_BACKEND_ROCM;
    if (!property(props, "gfx_target_version", &gfx) ||
        !kbi_probe_gfx_name(d.arch, sizeof(d.arch), gfx)) {
        rc = kbi_probe_note_add(ctx, r, "kfd", "%s: GPU node without a usable gfx_target_version",
                                node_dir);
        goto out;
    }
    /* The arch carries no feature suffix: kfd_sysfs.h has no XNACK capability bit (XNACK is a
     * per-process mode, set through HSA_XNACK and an ioctl), so xnack stays unknown rather
     * than guessed. */
    node_name(node_dir, d.name, sizeof(d.name));
    node_pci_id(props, d.pci_id, sizeof(d.pci_id));
    d.memory_bytes = node_memory(node_dir);
    d.index = (int)*found;
    rc = kbi_probe_device_add(ctx, r, &d);
    if (!rc)
        (*found)++;
out:
    free(props);
    return rc;
}

/* Node folders are numbers; visit them in numeric order so device indexes are stable. */
static int compare_node_names(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t lx = strlen(x), ly = strlen(y);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

static int list_nodes(kb_ctx *ctx, kb_strv *names, const char *nodes_dir)
{
    DIR *d = opendir(nodes_dir);
    struct dirent *e;
    uint64_t ignored;
    while (d && (e = readdir(d)))
        if (kbi_parse_u64(e->d_name, &ignored) && kbi_strv_push(names, e->d_name)) {
            closedir(d);
            return kbi_error_oom(ctx);
        }
    if (d)
        closedir(d);
    if (names->len > 1)
        qsort(names->items, names->len, sizeof(char *), compare_node_names);
    return 0;
}

int kbi_probe_kfd(kb_ctx *ctx, kb_probe_report *r, const char *sysfs_root, size_t *found)
{
    *found = 0;
    char *nodes_dir = kbi_path_join(sysfs_root, KFD_TOPOLOGY);
    char *kfd_dir = kbi_path_join(sysfs_root, "sys/class/kfd");
    kb_strv names = KB_STRV_INIT;
    int rc = nodes_dir && kfd_dir ? 0 : kbi_error_oom(ctx);
    if (!rc && !kbi_is_dir(nodes_dir))
        rc = kbi_probe_note_add(ctx, r, "kfd", "no KFD topology at %s (amdgpu driver not loaded)",
                                kfd_dir);
    else if (!rc && !(rc = list_nodes(ctx, &names, nodes_dir))) {
        for (size_t i = 0; i < names.len && !rc; i++) {
            char *node_dir = kbi_path_join(nodes_dir, names.items[i]);
            rc = node_dir ? probe_node(ctx, r, node_dir, found) : kbi_error_oom(ctx);
            free(node_dir);
        }
        if (!rc && *found == 0)
            rc =
                kbi_probe_note_add(ctx, r, "kfd", "the KFD topology at %s lists no GPU", nodes_dir);
    }
    kbi_strv_free(&names);
    free(nodes_dir);
    free(kfd_dir);
    return rc;
}
