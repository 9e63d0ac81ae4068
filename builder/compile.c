/* Compile commands per backend (nvcc, hipcc, cc) and running them into lib<name>.so. */
#include "builder/builder.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPILE_TIMEOUT_MS (30u * 60u * 1000u)
#define COMPILER_TAIL_LINES 20

void kbi_lib_name(const char *package, char *out, size_t size)
{
    const char *slash = strchr(package, '/');
    snprintf(out, size, "%s", slash ? slash + 1 : package);
    for (char *p = out; *p; p++)
        if (*p == '-' || *p == '.')
            *p = '_';
}

static int push_all(kb_strv *v, const char *const *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (kbi_strv_push(v, items[i]))
            return KB_ERR_NOMEM;
    return 0;
}

static int push_fmt(kb_strv *v, char *owned)
{
    return owned ? kbi_strv_push_owned(v, owned) : KB_ERR_NOMEM;
}

static int backend_flags(const kb_plan_item *item, kb_strv *out)
{
    int rc = 0;
    if (item->backend == KB_BACKEND_CUDA) {
        /* -s: nvcc names its temp files tmpxft_<pid>_..., and the name lands in .symtab;
         * stripping keeps .dynsym (the exports) and makes rebuilds byte-identical. */
        static const char *const base[] = {
            "-O3",      "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden",
            "-Xlinker", "-s",      "-cudart",    "static"};
        rc = push_all(out, base, KB_ARRAY_LEN(base));
        const char *num = strchr(item->arch, '_');
        if (!rc && kbi_str_starts(item->arch, "compute_"))
            rc = push_fmt(out, kbi_asprintf("-gencode=arch=compute%s,code=compute%s", num, num));
        else if (!rc)
            rc = push_fmt(out, kbi_asprintf("-gencode=arch=compute%s,code=%s", num, item->arch));
    } else if (item->backend == KB_BACKEND_ROCM) {
        static const char *const base[] = {"-O3", "-fPIC", "-shared", "-fvisibility=hidden",
                                           "-Wl,-s"};
        rc = push_all(out, base, KB_ARRAY_LEN(base));
        if (!rc)
            rc = push_fmt(out, kbi_asprintf("--offload-arch=%s", item->arch));
        /* hip-clang links the overlay's libamdhip64 stub instead of the installed runtime
         * (common_args names it), and -z defs turns a call outside the stub into a link error
         * naming the function. */
        static const char *const stub[] = {"-no-hip-rt", "-Wl,-z,defs"};
        if (!rc && item->tc && item->tc->hip_stub)
            rc = push_all(out, stub, KB_ARRAY_LEN(stub));
        /* Generic targets exist only from code object v6 on; clang 19 still defaults to v5. */
        if (!rc && strstr(item->arch, "-generic"))
            rc = kbi_strv_push(out, "-mcode-object-version=6");
    } else if (item->backend == KB_BACKEND_CPU) {
        static const char *const base[] = {"-O3", "-fPIC", "-shared", "-fvisibility=hidden"};
        rc = push_all(out, base, KB_ARRAY_LEN(base));
        if (!rc && kbi_str_starts(item->arch, "x86_64_v"))
            rc = push_fmt(out, kbi_asprintf("-march=x86-64-%s", item->arch + 7));
        else if (!rc && strcmp(item->arch, "aarch64") == 0)
            rc = kbi_strv_push(out, "-march=armv8-a");
    }
    return rc;
}

/* Flags of the link alone: libraries and linker options, which must follow the objects
 * (a -lm before the sources is dropped by the linker, the object needing it not yet seen). */
static bool is_library(const char *flag)
{
    return kbi_str_starts(flag, "-l") || kbi_str_ends(flag, ".a");
}

static bool is_link_only(const char *prev, const char *flag)
{
    static const char *const exact[] = {"-shared",        "-rdynamic", "-static-libstdc++",
                                        "-static-libgcc", "-pthread",  "-Xlinker",
                                        "-cudart",        "-no-hip-rt"};
    if (prev && (strcmp(prev, "-Xlinker") == 0 || strcmp(prev, "-cudart") == 0))
        return true;
    for (size_t i = 0; i < KB_ARRAY_LEN(exact); i++)
        if (strcmp(flag, exact[i]) == 0)
            return true;
    return is_library(flag) || kbi_str_starts(flag, "-L") || kbi_str_starts(flag, "-Wl,") ||
           kbi_str_starts(flag, "-Xlinker=");
}

static bool backend_has_cxx(const kb_backend_spec *spec)
{
    for (size_t i = 0; i < spec->source_count; i++)
        if (kbi_source_is_cxx(spec->sources[i].path))
            return true;
    return false;
}

static int push_strv(kb_strv *out, const kb_strv *in, const char *prefix)
{
    for (size_t i = 0; i < in->len; i++)
        if (push_fmt(out, kbi_asprintf("%s%s", prefix, in->items[i])))
            return KB_ERR_NOMEM;
    return 0;
}

/* The package's own inputs, in the order a reader expects them to win: top-level, then the
 * backend's, then its per-arch flags. */
static int input_flags(const kb_manifest *m, const kb_plan_item *item, kb_strv *out)
{
    const kb_backend_spec *spec = &m->backends[item->backend];
    int rc = push_strv(out, &m->defines, "-D");
    if (!rc)
        rc = push_strv(out, &spec->defines, "-D");
    if (!rc)
        rc = push_strv(out, &m->includes, "-I");
    if (!rc)
        rc = push_strv(out, &spec->includes, "-I");
    for (size_t i = 0; !rc && i < m->dep_count; i++)
        for (size_t j = 0; !rc && j < m->deps[i].include.len; j++)
            rc = push_fmt(out, kbi_asprintf("-I" KB_DEPS_PREFIX "%s/%s", m->deps[i].name,
                                            m->deps[i].include.items[j]));
    for (size_t i = 0; !rc && i < spec->flags.len; i++)
        rc = kbi_strv_push(out, spec->flags.items[i]);
    for (size_t i = 0; !rc && i < spec->arch_flag_count; i++)
        if (fnmatch(spec->arch_flags[i].pattern, item->arch, 0) == 0)
            rc = push_strv(out, &spec->arch_flags[i].flags, "");
    return rc;
}

/* record: the list kbpkg.json and the build key hold, with each source's own flags as
 * "src/ln.cu:-DT=float"; otherwise what every compile and link of the target gets. */
static int target_flags(const kb_manifest *m, const kb_plan_item *item, kb_strv *out, bool record)
{
    int rc = backend_flags(item, out);
    if (!rc)
        rc = input_flags(m, item, out);
    char ver[160];
    kbi_pkg_version(&m->version, ver, sizeof(ver));
    if (!rc)
        rc = push_fmt(out, kbi_asprintf("-DKBPKG_TARGET=\"%s\"", item->target));
    if (!rc)
        rc = push_fmt(out, kbi_asprintf("-DKBPKG_NAME=\"%s\"", m->name));
    if (!rc)
        rc = push_fmt(out, kbi_asprintf("-DKBPKG_VERSION=\"%s\"", ver));
    /* Relative include folders: the compiler runs in the package folder, so no absolute
     * path reaches the flags, the build key or the binary. */
    static const char *const incs[] = {"include", "src"};
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(incs); i++) {
        char *p = kbi_path_join(m->dir, incs[i]);
        if (p && kbi_is_dir(p))
            rc = push_fmt(out, kbi_asprintf("-I%s", incs[i]));
        free(p);
    }
    /* Per-source flags are part of what was built: "src/ln.cu:-DT=float". */
    const kb_backend_spec *spec = &m->backends[item->backend];
    for (size_t i = 0; !rc && record && i < spec->source_count; i++)
        for (size_t j = 0; !rc && j < spec->sources[i].flags.len; j++)
            rc = push_fmt(
                out, kbi_asprintf("%s:%s", spec->sources[i].path, spec->sources[i].flags.items[j]));
    /* C++ sources need the C++ runtime; the cc driver picks each file's language by its
     * suffix, so one driver compiles a C/C++ mix and the runtime is named here. hipcc is
     * clang++ and links it already. */
    if (!rc && backend_has_cxx(spec) && item->backend != KB_BACKEND_ROCM)
        rc = kbi_strv_push(out, "-lstdc++");
    if (!rc && item->backend == KB_BACKEND_CPU)
        rc = kbi_strv_push(out, "-lm");
    return rc ? KB_ERR_NOMEM : 0;
}

int kbi_compile_flags(const kb_manifest *m, const kb_plan_item *item, kb_strv *out)
{
    return target_flags(m, item, out, true);
}

/* A line worth showing: errors first, then warnings/notes with a location. */
static int line_rank(const char *line, size_t len)
{
    char tmp[512];
    size_t n = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;
    memcpy(tmp, line, n);
    tmp[n] = '\0';
    /* The linker's own diagnostics name the cause; "collect2: error: ld returned 1" after
     * them only says that it failed. */
    static const char *const causes[] = {"multiple definition", "undefined reference",
                                         "cannot find -l", "relocation ", "undefined symbol"};
    for (size_t i = 0; i < KB_ARRAY_LEN(causes); i++)
        if (strstr(tmp, causes[i]))
            return 0;
    if ((strstr(tmp, "error") || strstr(tmp, "Error")) && !strstr(tmp, "collect2: error"))
        return 0;
    return strstr(tmp, "collect2: error") ? 0 : 1;
}

char *kbi_trim_compiler_output(const char *text, size_t max_lines)
{
    kb_buf out = KB_BUF_INIT;
    /* First pass: from the first error line on; if no error line, from the start. */
    const char *start = text;
    for (const char *p = text; p && *p;) {
        size_t len = strcspn(p, "\n");
        if (line_rank(p, len) == 0) {
            start = p;
            break;
        }
        p += len + (p[len] == '\n');
    }
    size_t lines = 0;
    for (const char *p = start; p && *p && lines < max_lines;) {
        size_t len = strcspn(p, "\n");
        bool blank = true;
        for (size_t i = 0; i < len; i++)
            blank = blank && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r');
        if (!blank) {
            kbi_buf_printf(&out, "%s%.*s", lines ? "\n" : "", (int)len, p);
            lines++;
        }
        p += len + (p[len] == '\n');
    }
    if (kbi_buf_grow(&out, 0))
        return NULL;
    return kbi_buf_detach(&out);
}

static const kb_backend_spec *spec_of(const kb_manifest *m, const kb_plan_item *item)
{
    return &m->backends[item->backend];
}

/* A dependency's include flag as recorded ("-I@deps/cutlass/include") -> the cache folder. */
static int resolve_dep_flag(kb_ctx *ctx, char **out, const kb_manifest *m, const char *flag,
                            const char *deps_root)
{
    *out = NULL;
    const char *rest = flag + strlen("-I" KB_DEPS_PREFIX);
    for (size_t i = 0; i < m->dep_count; i++) {
        const kb_dependency *d = &m->deps[i];
        size_t n = strlen(d->name);
        if (strncmp(rest, d->name, n) != 0 || rest[n] != '/')
            continue;
        char *dir = deps_root ? kbi_asprintf("%s/%s", deps_root, d->sha256) : NULL;
        if (!dir || !kbi_is_dir(dir)) {
            int rc = dir ? kbi_error_set_path(ctx, KB_ERR_NOT_FOUND, dir, 0, 0,
                                              "dependency %s (sha256:%s, %s) is not in the cache "
                                              "(%s): run `kbpkg fetch %s` first",
                                              d->name, d->sha256, d->url, dir, m->dir)
                         : kbi_error_oom(ctx);
            free(dir);
            return rc;
        }
        *out = kbi_asprintf("-I%s/%s", dir, rest + n + 1);
        free(dir);
        return *out ? 0 : kbi_error_oom(ctx);
    }
    return kbi_error_set(ctx, KB_ERR_MANIFEST, "%s: no dependency for %s", m->path, flag);
}

/* The flags of every compile and link of the target, with dependency folders resolved and
 * the package and dependency folders mapped to stable names in what the compiler records
 * (asserts, debug info). */
static int common_args(kb_ctx *ctx, kb_strv *out, const kb_manifest *m, const kb_plan_item *item,
                       const char *pkg_dir_abs, const kb_compile_env *env)
{
    const char *deps_root = env->deps_root, *overlay_dir = env->overlay_dir;
    kb_strv flags = KB_STRV_INIT;
    int rc = target_flags(m, item, &flags, false) ? kbi_error_oom(ctx) : 0;
    if (!rc) /* <kbpkg/kernel_abi.h>, written into the build's own folder */
        rc = kbi_abi_include_flags(ctx, out, env->work_dir, item->backend == KB_BACKEND_CUDA);
    for (size_t i = 0; !rc && i < flags.len; i++) {
        if (kbi_str_starts(flags.items[i], "-I" KB_DEPS_PREFIX)) {
            char *abs = NULL;
            rc = resolve_dep_flag(ctx, &abs, m, flags.items[i], deps_root);
            if (!rc && kbi_strv_push_owned(out, abs))
                rc = kbi_error_oom(ctx);
        } else if (kbi_strv_push(out, flags.items[i]))
            rc = kbi_error_oom(ctx);
    }
    kbi_strv_free(&flags);
    const char *map =
        item->backend == KB_BACKEND_CUDA ? "-Xcompiler=-ffile-prefix-map=" : "-ffile-prefix-map=";
    if (!rc && push_fmt(out, kbi_asprintf("%s%s=.", map, pkg_dir_abs)))
        rc = kbi_error_oom(ctx);
    for (size_t i = 0; !rc && deps_root && i < m->dep_count; i++)
        if (push_fmt(out, kbi_asprintf("%s%s/%s=deps/%s", map, deps_root, m->deps[i].sha256,
                                       m->deps[i].name)))
            rc = kbi_error_oom(ctx);
    if (!rc && item->backend == KB_BACKEND_ROCM && overlay_dir &&
        push_fmt(out, kbi_asprintf("--rocm-device-lib-path=%s", overlay_dir)))
        rc = kbi_error_oom(ctx);
    /* hip-clang: the stub runtime in the overlay (the link puts -l after the objects) */
    if (!rc && item->backend == KB_BACKEND_ROCM && item->tc->hip_stub && overlay_dir &&
        (push_fmt(out, kbi_asprintf("-L%s", overlay_dir)) ||
         push_fmt(out, kbi_asprintf("-l:libamdhip64.so.%u", item->tc->hip_major))))
        rc = kbi_error_oom(ctx);
    return rc;
}

static void log_command(kb_buf *log, const kb_strv *argv)
{
    if (!log)
        return;
    kbi_buf_puts(log, "$");
    for (size_t i = 0; i < argv->len; i++)
        kbi_buf_printf(log, " %s", argv->items[i]);
    kbi_buf_puts(log, "\n");
}

/* Run one compiler command in the package folder; a failure is KB_ERR_BUILD with the lines
 * that matter. */
static int run_tool(kb_ctx *ctx, const kb_strv *argv, const char *cwd, const char *target,
                    const char *tool, const char *must_exist, kb_buf *log)
{
    const char **args = calloc(argv->len + 1, sizeof(*args));
    if (!args)
        return kbi_error_oom(ctx);
    for (size_t i = 0; i < argv->len; i++)
        args[i] = argv->items[i];
    log_command(log, argv);
    kb_proc_result r;
    int rc = kbi_proc_run(ctx, &r, args, cwd, COMPILE_TIMEOUT_MS);
    free(args);
    if (rc)
        return rc;
    if (log)
        kbi_buf_append(log, r.output.data, r.output.len);
    if (r.exit_code != 0 || !kbi_path_exists(must_exist)) {
        char *tail = kbi_trim_compiler_output(r.output.data, COMPILER_TAIL_LINES);
        if (r.timed_out)
            rc = kbi_error_set(ctx, KB_ERR_BUILD, "%s: %s timed out", target, tool);
        else
            rc = kbi_error_set(ctx, KB_ERR_BUILD, "%s: %s failed (exit %d):\n%s", target, tool,
                               r.exit_code, tail && *tail ? tail : "(no output)");
        free(tail);
    }
    kbi_proc_result_free(&r);
    return rc;
}

/* "<work>/obj/03-ln.o": numbered, since one source may be compiled twice (two defines). */
static char *object_path(const char *work, size_t i, const char *src)
{
    const char *base = strrchr(src, '/');
    return kbi_asprintf("%s/obj/%02zu-%s.o", work, i, base ? base + 1 : src);
}

static int check_source_present(kb_ctx *ctx, const kb_manifest *m, const kb_source *s,
                                const char *target)
{
    char *full = kbi_path_join(m->dir, s->path);
    bool present = full && kbi_path_exists(full);
    int rc = present ? 0
             : full  ? kbi_error_set_path(ctx, KB_ERR_NOT_FOUND, full, 0, 0,
                                          "source %s of %s is missing%s", s->path, target,
                                         s->url ? " (run `kbpkg fetch` in the package folder: it "
                                                   "downloads url sources)"
                                                 : "")
                     : kbi_error_oom(ctx);
    free(full);
    return rc;
}

/* One compile: the target's flags (link-only ones left out), extra, the source's own flags,
 * then -MD into <obj>.d. */
static int compile_one(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                       const kb_strv *common, const char *src, const kb_strv *src_flags,
                       const kb_strv *extra, const char *obj, kb_buf *log)
{
    char *dep = kbi_asprintf("%s.d", obj);
    kb_strv argv = KB_STRV_INIT;
    bool oom = !dep || kbi_strv_push(&argv, item->tc->path);
    for (size_t j = 0; !oom && j < common->len; j++)
        if (!is_link_only(j ? common->items[j - 1] : NULL, common->items[j]))
            oom = kbi_strv_push(&argv, common->items[j]) != 0;
    for (size_t j = 0; !oom && extra && j < extra->len; j++)
        oom = kbi_strv_push(&argv, extra->items[j]) != 0;
    for (size_t j = 0; !oom && src_flags && j < src_flags->len; j++)
        oom = kbi_strv_push(&argv, src_flags->items[j]) != 0;
    if (!oom && item->backend == KB_BACKEND_ROCM && kbi_str_ends(src, ".cu"))
        oom = kbi_strv_push(&argv, "-xhip") != 0; /* CUDA dialect, compiled as HIP */
    if (!oom)
        oom = kbi_strv_push(&argv, "-MD") || kbi_strv_push(&argv, "-MF") ||
              kbi_strv_push(&argv, dep) || kbi_strv_push(&argv, "-c") ||
              kbi_strv_push(&argv, src) || kbi_strv_push(&argv, "-o") || kbi_strv_push(&argv, obj);
    int rc = oom ? kbi_error_oom(ctx)
                 : run_tool(ctx, &argv, m->dir, item->target, item->tc->name, obj, log);
    kbi_strv_free(&argv);
    free(dep);
    return rc;
}

int kbi_compile_file(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                     const kb_compile_env *env, const char *src, const kb_strv *src_flags,
                     const kb_strv *extra, const char *obj, kb_buf *log)
{
    char *pkg_abs = realpath(m->dir, NULL);
    if (!pkg_abs)
        return kbi_error_set_path(ctx, KB_ERR_IO, m->dir, 0, 0, "cannot resolve %s", m->dir);
    kb_strv common = KB_STRV_INIT;
    int rc = common_args(ctx, &common, m, item, pkg_abs, env);
    char *objdir = kbi_strndup(obj, (size_t)(strrchr(obj, '/') ? strrchr(obj, '/') - obj : 0));
    if (!rc)
        rc = objdir && *objdir ? kbi_mkdir_p(ctx, objdir, 0755) : 0;
    free(objdir);
    if (!rc)
        rc = compile_one(ctx, m, item, &common, src, src_flags, extra, obj, log);
    kbi_strv_free(&common);
    free(pkg_abs);
    return rc;
}

int kbi_compile_sources(kb_ctx *ctx, kb_strv *objects, const kb_manifest *m,
                        const kb_plan_item *item, const kb_compile_env *env, const kb_strv *extra,
                        kb_buf *log)
{
    char *pkg_abs = realpath(m->dir, NULL);
    if (!pkg_abs)
        return kbi_error_set_path(ctx, KB_ERR_IO, m->dir, 0, 0, "cannot resolve %s", m->dir);
    const kb_backend_spec *spec = spec_of(m, item);
    kb_strv common = KB_STRV_INIT;
    int rc = common_args(ctx, &common, m, item, pkg_abs, env);
    char *objdir = kbi_path_join(env->work_dir, "obj");
    if (!rc)
        rc = objdir ? kbi_mkdir_p(ctx, objdir, 0755) : kbi_error_oom(ctx);
    if (!rc && spec->source_count == 0)
        rc = kbi_error_set(ctx, KB_ERR_MANIFEST, "%s: the %s backend lists no sources",
                           item->target, kbi_backend_name(item->backend));
    for (size_t i = 0; !rc && i < spec->source_count; i++) {
        const kb_source *src = &spec->sources[i];
        rc = check_source_present(ctx, m, src, item->target);
        char *obj = rc ? NULL : object_path(env->work_dir, i, src->path);
        if (!rc && !obj)
            rc = kbi_error_oom(ctx);
        if (!rc)
            rc = compile_one(ctx, m, item, &common, src->path, &src->flags, extra, obj, log);
        if (!rc && kbi_strv_push_owned(objects, obj))
            rc = kbi_error_oom(ctx);
        else if (rc)
            free(obj);
    }
    kbi_strv_free(&common);
    free(objdir);
    free(pkg_abs);
    return rc;
}

int kbi_link(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item, const kb_compile_env *env,
             const kb_strv *objects, const kb_strv *extra, const char *output, bool executable,
             kb_buf *log)
{
    char *pkg_abs = realpath(m->dir, NULL);
    if (!pkg_abs)
        return kbi_error_set_path(ctx, KB_ERR_IO, m->dir, 0, 0, "cannot resolve %s", m->dir);
    kb_strv common = KB_STRV_INIT, argv = KB_STRV_INIT;
    int rc = common_args(ctx, &common, m, item, pkg_abs, env);
    bool oom = !rc && kbi_strv_push(&argv, item->tc->path);
    /* Everything but the libraries, then the objects, then the libraries. */
    for (size_t j = 0; !rc && !oom && j < common.len; j++)
        if (!is_library(common.items[j]) &&
            !(executable && strcmp(common.items[j], "-shared") == 0))
            oom = kbi_strv_push(&argv, common.items[j]) != 0;
    for (size_t j = 0; !rc && !oom && j < objects->len; j++)
        oom = kbi_strv_push(&argv, objects->items[j]) != 0;
    for (size_t j = 0; !rc && !oom && extra && j < extra->len; j++)
        oom = kbi_strv_push(&argv, extra->items[j]) != 0;
    if (!rc && !oom)
        oom = kbi_strv_push(&argv, "-o") || kbi_strv_push(&argv, output);
    for (size_t j = 0; !rc && !oom && j < common.len; j++)
        if (is_library(common.items[j]))
            oom = kbi_strv_push(&argv, common.items[j]) != 0;
    if (!rc && oom)
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = run_tool(ctx, &argv, m->dir, item->target, item->tc->name, output, log);
    kbi_strv_free(&argv);
    kbi_strv_free(&common);
    free(pkg_abs);
    return rc;
}

int kbi_compile_target(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                       const kb_compile_env *env, const char *lib_path, kb_buf *log)
{
    if (item->backend == KB_BACKEND_METAL)
        return kbi_error_set(ctx, KB_ERR_UNSUPPORTED,
                             "%s: metal packaging (metallib + host library) is not implemented",
                             item->target);
    if (!item->tc)
        return kbi_error_set(ctx, KB_ERR_TOOLCHAIN, "%s: %s", item->target,
                             item->skip ? item->skip : "no toolchain");
    kb_strv objects = KB_STRV_INIT;
    int rc = kbi_compile_sources(ctx, &objects, m, item, env, NULL, log);
    if (!rc)
        rc = kbi_link(ctx, m, item, env, &objects, NULL, lib_path, false, log);
    kbi_strv_free(&objects);
    return rc;
}
