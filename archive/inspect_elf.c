/* ELF64 reader (no libelf): dynamic exports, GNU unique symbols, version needs, GPU sections. */
#include "archive/inspect.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A bounds-checked view of one ELF image. */
typedef struct elf_view {
    kb_ctx *ctx;
    const char *name;
    const uint8_t *data;
    size_t len;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh;
    size_t shnum;
    const Elf64_Shdr *shstr;
} elf_view;

static bool in_range(size_t len, uint64_t off, uint64_t size)
{
    return off <= len && size <= len - off;
}

static int malformed(const elf_view *v, uint64_t off, const char *what)
{
    return kbi_error_set_path(v->ctx, KB_ERR_PARSE, v->name, 0, 0,
                              "%s: malformed ELF at offset 0x%llx: %s", v->name,
                              (unsigned long long)off, what);
}

/* A NUL-terminated string at off inside a string table section, or NULL. */
static const char *string_at(const elf_view *v, const Elf64_Shdr *strtab, uint64_t off)
{
    if (!strtab || strtab->sh_type == SHT_NOBITS || off >= strtab->sh_size)
        return NULL;
    const char *base = (const char *)v->data + strtab->sh_offset;
    if (!memchr(base + off, '\0', strtab->sh_size - off))
        return NULL;
    return base + off;
}

static const Elf64_Shdr *section_at(const elf_view *v, size_t index)
{
    return index < v->shnum ? &v->sh[index] : NULL;
}

static int read_header(elf_view *v)
{
    if (v->len < sizeof(Elf64_Ehdr) || memcmp(v->data, ELFMAG, SELFMAG) != 0)
        return kbi_error_set_path(v->ctx, KB_ERR_PARSE, v->name, 0, 0, "%s is not an ELF file",
                                  v->name);
    if (v->data[EI_CLASS] != ELFCLASS64 || v->data[EI_DATA] != ELFDATA2LSB)
        return kbi_error_set_path(v->ctx, KB_ERR_UNSUPPORTED, v->name, 0, 0,
                                  "%s is not a little-endian ELF64 file (class %u, data %u)",
                                  v->name, v->data[EI_CLASS], v->data[EI_DATA]);
    memcpy(&v->eh, v->data, sizeof(v->eh));
    if (v->eh.e_shoff == 0)
        return 0; /* no section table: nothing to list */
    if (v->eh.e_shentsize != sizeof(Elf64_Shdr))
        return malformed(v, offsetof(Elf64_Ehdr, e_shentsize), "unexpected section header size");
    Elf64_Shdr first;
    if (!in_range(v->len, v->eh.e_shoff, sizeof(first)))
        return malformed(v, v->eh.e_shoff, "section table outside the file");
    memcpy(&first, v->data + v->eh.e_shoff, sizeof(first));
    /* More than 0xff00 sections: the real count and string index live in section 0. */
    uint64_t shnum = v->eh.e_shnum ? v->eh.e_shnum : first.sh_size;
    size_t shstrndx = v->eh.e_shstrndx == SHN_XINDEX ? first.sh_link : v->eh.e_shstrndx;
    if (shnum > v->len / sizeof(Elf64_Shdr) ||
        !in_range(v->len, v->eh.e_shoff, shnum * sizeof(Elf64_Shdr)))
        return malformed(v, v->eh.e_shoff, "section table outside the file");
    v->shnum = (size_t)shnum;
    v->sh = malloc(v->shnum * sizeof(*v->sh) + 1);
    if (!v->sh)
        return kbi_error_oom(v->ctx);
    memcpy(v->sh, v->data + v->eh.e_shoff, v->shnum * sizeof(*v->sh));
    for (size_t i = 0; i < v->shnum; i++)
        if (v->sh[i].sh_type != SHT_NOBITS &&
            !in_range(v->len, v->sh[i].sh_offset, v->sh[i].sh_size))
            return malformed(v, v->eh.e_shoff + i * sizeof(Elf64_Shdr),
                             "a section lies outside the file");
    v->shstr = section_at(v, shstrndx);
    return 0;
}

static const Elf64_Shdr *find_section_by_type(const elf_view *v, uint32_t type)
{
    for (size_t i = 0; i < v->shnum; i++)
        if (v->sh[i].sh_type == type)
            return &v->sh[i];
    return NULL;
}

static bool exported(const Elf64_Sym *s)
{
    unsigned bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
    /* SHN_ABS covers the version-definition symbols (CXXABI_1.3...): names, not exports. */
    return s->st_shndx != SHN_UNDEF && s->st_shndx != SHN_ABS &&
           (bind == STB_GLOBAL || bind == STB_WEAK) &&
           ELF64_ST_VISIBILITY(s->st_other) == STV_DEFAULT && type != STT_SECTION &&
           type != STT_FILE;
}

static int read_dynsym(elf_view *v, kb_inspect *out)
{
    const Elf64_Shdr *dynsym = find_section_by_type(v, SHT_DYNSYM);
    if (!dynsym)
        return 0;
    if (dynsym->sh_entsize != sizeof(Elf64_Sym))
        return malformed(v, dynsym->sh_offset, ".dynsym has an unexpected entry size");
    const Elf64_Shdr *strtab = section_at(v, dynsym->sh_link);
    size_t count = (size_t)(dynsym->sh_size / sizeof(Elf64_Sym));
    for (size_t i = 1; i < count; i++) {
        Elf64_Sym s;
        memcpy(&s, v->data + dynsym->sh_offset + i * sizeof(s), sizeof(s));
        bool unique = ELF64_ST_BIND(s.st_info) == STB_GNU_UNIQUE && s.st_shndx != SHN_UNDEF;
        bool import = s.st_shndx == SHN_UNDEF && ELF64_ST_BIND(s.st_info) != STB_LOCAL;
        if (!unique && !import && !exported(&s))
            continue;
        const char *name = string_at(v, strtab, s.st_name);
        if (!name)
            return malformed(v, dynsym->sh_offset + i * sizeof(s), "symbol name outside .dynstr");
        if (!*name)
            continue;
        kb_strv *list = unique ? &out->uniques : import ? &out->imports : &out->exports;
        if (!kbi_strv_contains(list, name) && kbi_strv_push(list, name))
            return kbi_error_oom(v->ctx);
        /* a non-weak definition: something the package itself chose to export */
        if (!unique && !import && ELF64_ST_BIND(s.st_info) == STB_GLOBAL &&
            !kbi_strv_contains(&out->strong_exports, name) &&
            kbi_strv_push(&out->strong_exports, name))
            return kbi_error_oom(v->ctx);
    }
    kbi_strv_sort(&out->imports);
    kbi_strv_sort(&out->exports);
    kbi_strv_sort(&out->uniques);
    return 0;
}

/* "GLIBC_2.2.5" -> keep the highest per family. */
static void note_version_need(kb_inspect *out, const char *name)
{
    struct {
        const char *prefix;
        char *slot;
        size_t size;
    } families[] = {{"GLIBC_", out->glibc, sizeof(out->glibc)},
                    {"GLIBCXX_", out->glibcxx, sizeof(out->glibcxx)}};
    for (size_t i = 0; i < KB_ARRAY_LEN(families); i++) {
        size_t n = strlen(families[i].prefix);
        const char *ver = name + n;
        if (strncmp(name, families[i].prefix, n) != 0 || ver[0] < '0' || ver[0] > '9')
            continue; /* GLIBC_PRIVATE and friends say nothing about the version */
        if (strlen(ver) < families[i].size &&
            (!families[i].slot[0] || kbi_version_compare(ver, families[i].slot) > 0))
            snprintf(families[i].slot, families[i].size, "%s", ver);
    }
}

static int read_version_needs(elf_view *v, kb_inspect *out)
{
    const Elf64_Shdr *sec = find_section_by_type(v, SHT_GNU_verneed);
    if (!sec)
        return 0;
    const Elf64_Shdr *strtab = section_at(v, sec->sh_link);
    uint64_t off = 0;
    /* sh_info is the number of Verneed records; bound it by the section size as well. */
    for (uint64_t i = 0; i < sec->sh_info; i++) {
        Elf64_Verneed vn;
        if (!in_range(sec->sh_size, off, sizeof(vn)))
            return malformed(v, sec->sh_offset + off, ".gnu.version_r record outside the section");
        memcpy(&vn, v->data + sec->sh_offset + off, sizeof(vn));
        uint64_t aux = off + vn.vn_aux;
        for (unsigned j = 0; j < vn.vn_cnt; j++) {
            Elf64_Vernaux va;
            if (!in_range(sec->sh_size, aux, sizeof(va)))
                return malformed(v, sec->sh_offset + aux,
                                 ".gnu.version_r auxiliary record outside the section");
            memcpy(&va, v->data + sec->sh_offset + aux, sizeof(va));
            const char *name = string_at(v, strtab, va.vna_name);
            if (!name)
                return malformed(v, sec->sh_offset + aux, "version name outside its string table");
            note_version_need(out, name);
            if (!va.vna_next)
                break;
            aux += va.vna_next;
        }
        if (!vn.vn_next)
            break;
        off += vn.vn_next;
    }
    return 0;
}

/* DT_NEEDED entries: the sonames the dynamic loader must find (libamdhip64.so.6). */
static int read_needed(elf_view *v, kb_inspect *out)
{
    const Elf64_Shdr *dyn = find_section_by_type(v, SHT_DYNAMIC);
    if (!dyn || dyn->sh_type == SHT_NOBITS)
        return 0;
    const Elf64_Shdr *strtab = section_at(v, dyn->sh_link);
    size_t count = (size_t)(dyn->sh_size / sizeof(Elf64_Dyn));
    for (size_t i = 0; i < count; i++) {
        Elf64_Dyn d;
        memcpy(&d, v->data + dyn->sh_offset + i * sizeof(d), sizeof(d));
        if (d.d_tag == DT_NULL)
            break;
        if (d.d_tag != DT_NEEDED)
            continue;
        const char *name = string_at(v, strtab, d.d_un.d_val);
        if (!name)
            return malformed(v, dyn->sh_offset + i * sizeof(d), "DT_NEEDED name outside .dynstr");
        if (kbi_strv_push(&out->needed, name))
            return kbi_error_oom(v->ctx);
    }
    return 0;
}

static int read_gpu_sections(elf_view *v, kb_inspect *out)
{
    for (size_t i = 0; i < v->shnum; i++) {
        const Elf64_Shdr *s = &v->sh[i];
        const char *name = string_at(v, v->shstr, s->sh_name);
        if (!name || s->sh_type == SHT_NOBITS || s->sh_size == 0)
            continue;
        bool cuda = strcmp(name, ".nv_fatbin") == 0 || strcmp(name, "__nv_relfatbin") == 0;
        bool hip = strcmp(name, ".hip_fatbin") == 0;
        if (!cuda && !hip)
            continue;
        char *label = kbi_asprintf("%s: %s", v->name, name);
        if (!label)
            return kbi_error_oom(v->ctx);
        const uint8_t *data = v->data + s->sh_offset;
        int rc = cuda ? kbi_fatbin_parse(v->ctx, out, label, data, (size_t)s->sh_size)
                      : kbi_offload_bundle_parse(v->ctx, out, label, data, (size_t)s->sh_size,
                                                 s->sh_offset);
        free(label);
        if (rc)
            return rc;
    }
    return 0;
}

int kbi_inspect_elf_memory(kb_inspect **out, kb_ctx *ctx, const char *name, const uint8_t *data,
                           size_t len)
{
    *out = NULL;
    elf_view v;
    memset(&v, 0, sizeof(v));
    v.ctx = ctx;
    v.name = name;
    v.data = data;
    v.len = len;
    kb_inspect *ins = kbi_inspect_new(KB_INSPECT_ELF, name);
    if (!ins)
        return kbi_error_oom(ctx);
    int rc = read_header(&v);
    if (!rc)
        rc = read_dynsym(&v, ins);
    if (!rc)
        rc = read_version_needs(&v, ins);
    if (!rc)
        rc = read_needed(&v, ins);
    if (!rc)
        rc = read_gpu_sections(&v, ins);
    free(v.sh);
    if (rc)
        kb_inspect_free(ins);
    else
        *out = ins;
    return rc;
}
