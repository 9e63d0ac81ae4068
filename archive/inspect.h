/* Library inspection internals: ELF64 dynamic symbols and version needs, fatbins, offload bundles.
 */
#ifndef KB_ARCHIVE_INSPECT_H
#define KB_ARCHIVE_INSPECT_H

#include "core/internal.h"
#include "kbpkg/inspect.h"

/* One GPU code entry with the storage its public view points into. */
typedef struct kb_gpu_entry {
    kb_gpu_code code;
    char arch[48];
    char detail[160];
    /* AMD code objects: where the ELF lies in the inspected file and its header fields */
    bool elf;             /* the bundle entry is an ELF image */
    uint64_t file_offset; /* of the code object in the inspected file */
    uint64_t size;
    uint16_t e_machine;  /* EM_AMDGPU (224) */
    uint8_t os_abi;      /* ELFOSABI_AMDGPU_HSA (64) */
    uint8_t abi_version; /* 2: code object v4, 3: v5, 4: v6 */
    uint32_t e_flags;    /* EF_AMDGPU_MACH in the low byte, generic version in the top byte */
} kb_gpu_entry;

struct kb_inspect {
    kb_inspect_kind kind;
    char *name;
    kb_strv exports;
    kb_strv needed; /* DT_NEEDED sonames, in file order */
    kb_strv uniques;
    kb_strv imports;        /* undefined dynamic symbols: what the library needs at load */
    kb_strv strong_exports; /* exports bound STB_GLOBAL (not weak template instances) */
    char glibc[32];         /* "" or "2.34" */
    char glibcxx[32];       /* "" or "3.4.30" */
    kb_gpu_entry **codes;
    size_t code_count, codes_cap;
    kb_strv members;   /* archives */
    kb_inspect **libs; /* archives: inspected lib/ *.so */
    size_t lib_count, libs_cap;
};

/* Fatbin container magics: executable (.nv_fatbin) and relocatable (__nv_relfatbin). */
#define KB_FATBIN_MAGIC 0xBA55ED50u
#define KB_FATBIN_REL_MAGIC 0x466243B1u
/* Entry flags seen in CUDA 12/13 output (docs/artifact-format.md). */
#define KB_FATBIN_FLAG_COMPRESSED_LZ4 0x2000u
#define KB_FATBIN_FLAG_COMPRESSED_ZSTD 0x8000u
#define KB_FATBIN_FLAG_ARCH_SPECIFIC 0x100000u /* sm_90a: the "a" suffix */

/* A new, empty inspection named name (owned copy). */
kb_inspect *kbi_inspect_new(kb_inspect_kind kind, const char *name);

/* Inspect an ELF64 image held in memory; name is used in messages. */
int kbi_inspect_elf_memory(kb_inspect **out, kb_ctx *ctx, const char *name, const uint8_t *data,
                           size_t len);

/* Parse a CUDA fatbin section (one or more containers) and add its entries to into. section
 * names the section in messages ("lib.so: .nv_fatbin"). */
int kbi_fatbin_parse(kb_ctx *ctx, kb_inspect *into, const char *section, const uint8_t *data,
                     size_t len);
/* Parse a .hip_fatbin section (clang offload bundles) and add its device entries to into.
 * file_offset: where the section lies in the inspected file (kb_gpu_entry.file_offset). */
int kbi_offload_bundle_parse(kb_ctx *ctx, kb_inspect *into, const char *section,
                             const uint8_t *data, size_t len, uint64_t file_offset);
/* EF_AMDGPU_MACH of a gfx processor or generic target (LLVM's ELF.h); false when unknown. */
bool kbi_amdgpu_mach(const char *gfx, unsigned *mach);
/* The inspection's entry behind kb_inspect_gpu_code(ins, i). */
const kb_gpu_entry *kbi_inspect_gpu_entry(const kb_inspect *ins, size_t i);
/* DT_NEEDED sonames of an ELF inspection. */
const kb_strv *kbi_inspect_needed(const kb_inspect *ins);

/* Append one GPU code entry unless an equal one is there already. */
int kbi_inspect_add_gpu_code(kb_ctx *ctx, kb_inspect *into, kb_gpu_code_kind kind, const char *arch,
                             const char *detail, int compressed);

/* Compare dotted numeric versions ("2.2.5" < "2.14"): <0, 0, >0. */
int kbi_version_compare(const char *a, const char *b);

/* KB_ERR_ABI naming the first STB_GNU_UNIQUE symbol, if any (such a library cannot unload). */
int kbi_inspect_refuse_unique(kb_ctx *ctx, const kb_inspect *inspect);

#endif
