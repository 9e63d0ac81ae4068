/* Compile commands per backend (nvcc, hipcc, cc) and running them into lib<name>.so. */
#include "builder/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPILE_TIMEOUT_MS (30u * 60u * 1000u)
#define COMPILER_TAIL_LINES 20

void kb_lib_name(const char *package, char *out, size_t size)
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
        if (kb_strv_push(v, items[i]))
            return KB_ERR_NOMEM;
    return 0;
}

static int push_fmt(kb_strv *v, char *owned)
{
    return owned ? kb_strv_push_owned(v, owned) : KB_ERR_NOMEM;
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
        if (!rc && kb_str_starts(item->arch, "compute_"))
            rc = push_fmt(out, kb_asprintf("-gencode=arch=compute%s,code=compute%s", num, num));
        else if (!rc)
            rc = push_fmt(out, kb_asprintf("-gencode=arch=compute%s,code=%s", num, item->arch));
    } else if (item->backend == KB_BACKEND_ROCM) {
        static const char *const base[] = {"-O3", "-fPIC", "-shared", "-fvisibility=hidden",
                                           "-Wl,-s"};
        rc = push_all(out, base, KB_ARRAY_LEN(base));
        if (!rc)
            rc = push_fmt(out, kb_asprintf("--offload-arch=%s", item->arch));
        /* hip-clang links the overlay's libamdhip64 stub instead of the installed runtime
         * (build_argv adds it), and -z defs turns a call outside the stub into a link error
         * naming the function. */
        static const char *const stub[] = {"-no-hip-rt", "-Wl,-z,defs"};
        if (!rc && item->tc && item->tc->hip_stub)
            rc = push_all(out, stub, KB_ARRAY_LEN(stub));
        /* Generic targets exist only from code object v6 on; clang 19 still defaults to v5. */
        if (!rc && strstr(item->arch, "-generic"))
            rc = kb_strv_push(out, "-mcode-object-version=6");
    } else if (item->backend == KB_BACKEND_CPU) {
        static const char *const base[] = {"-O3", "-fPIC", "-shared", "-fvisibility=hidden"};
        rc = push_all(out, base, KB_ARRAY_LEN(base));
        if (!rc && kb_str_starts(item->arch, "x86_64_v"))
            rc = push_fmt(out, kb_asprintf("-march=x86-64-%s", item->arch + 7));
        else if (!rc && strcmp(item->arch, "aarch64") == 0)
            rc = kb_strv_push(out, "-march=armv8-a");
    }
    return rc;
}

int kb_compile_flags(const kb_manifest *m, const kb_plan_item *item, kb_strv *out)
{
    int rc = backend_flags(item, out);
    const kb_backend_spec *spec = &m->backends[item->backend];
    for (size_t i = 0; !rc && i < spec->flags.len; i++)
        rc = kb_strv_push(out, spec->flags.items[i]);
    char ver[160];
    kb_pkg_version(&m->version, ver, sizeof(ver));
    if (!rc)
        rc = push_fmt(out, kb_asprintf("-DKBPKG_TARGET=\"%s\"", item->target));
    if (!rc)
        rc = push_fmt(out, kb_asprintf("-DKBPKG_NAME=\"%s\"", m->name));
    if (!rc)
        rc = push_fmt(out, kb_asprintf("-DKBPKG_VERSION=\"%s\"", ver));
    /* Relative include folders: the compiler runs in the package folder, so no absolute
     * path reaches the flags, the build key or the binary. */
    static const char *const incs[] = {"include", "src"};
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(incs); i++) {
        char *p = kb_path_join(m->dir, incs[i]);
        if (p && kb_is_dir(p))
            rc = push_fmt(out, kb_asprintf("-I%s", incs[i]));
        free(p);
    }
    if (!rc && item->backend == KB_BACKEND_CPU)
        rc = kb_strv_push(out, "-lm");
    return rc ? KB_ERR_NOMEM : 0;
}

/* A line worth showing: errors first, then warnings/notes with a location. */
static int line_rank(const char *line, size_t len)
{
    char tmp[512];
    size_t n = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;
    memcpy(tmp, line, n);
    tmp[n] = '\0';
    if (strstr(tmp, "error") || strstr(tmp, "Error") || strstr(tmp, "undefined reference"))
        return 0;
    return 1;
}

char *kb_trim_compiler_output(const char *text, size_t max_lines)
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
            kb_buf_printf(&out, "%s%.*s", lines ? "\n" : "", (int)len, p);
            lines++;
        }
        p += len + (p[len] == '\n');
    }
    if (kb_buf_grow(&out, 0))
        return NULL;
    return kb_buf_detach(&out);
}

static const kb_backend_spec *spec_of(const kb_manifest *m, const kb_plan_item *item)
{
    return &m->backends[item->backend];
}

static int build_argv(kb_ctx *ctx, kb_strv *argv, const kb_manifest *m, const kb_plan_item *item,
                      const char *work_dir, const char *overlay_dir, const char *lib_path,
                      const char *pkg_dir_abs)
{
    int rc = kb_strv_push(argv, item->tc->path);
    if (!rc)
        rc = kb_compile_flags(m, item, argv);
    if (rc)
        return kb_error_oom(ctx);
    rc = kb_abi_include_flags(ctx, argv, work_dir, item->backend == KB_BACKEND_CUDA);
    /* Map the package folder to "." in any path the compiler records (asserts, debug info). */
    if (!rc && item->backend == KB_BACKEND_CUDA)
        rc = push_fmt(argv, kb_asprintf("-Xcompiler=-ffile-prefix-map=%s=.", pkg_dir_abs));
    else if (!rc)
        rc = push_fmt(argv, kb_asprintf("-ffile-prefix-map=%s=.", pkg_dir_abs));
    if (!rc && item->backend == KB_BACKEND_ROCM && overlay_dir)
        rc = push_fmt(argv, kb_asprintf("--rocm-device-lib-path=%s", overlay_dir));
    if (!rc && item->backend == KB_BACKEND_ROCM && item->tc->hip_stub && overlay_dir) {
        rc = push_fmt(argv, kb_asprintf("-L%s", overlay_dir));
        if (!rc)
            rc = push_fmt(argv, kb_asprintf("-l:libamdhip64.so.%u", item->tc->hip_major));
    }
    const kb_backend_spec *spec = spec_of(m, item);
    for (size_t i = 0; !rc && i < spec->source_count; i++) {
        const char *src = spec->sources[i].path;
        char *full = kb_path_join(m->dir, src);
        bool present = full && kb_path_exists(full);
        if (!present)
            rc = full ? kb_error_set_path(ctx, KB_ERR_NOT_FOUND, full, 0, 0,
                                          "source %s of %s is missing%s", src, item->target,
                                          spec->sources[i].url ? " (fetch its url first)" : "")
                      : KB_ERR_NOMEM;
        free(full);
        if (!rc && item->backend == KB_BACKEND_ROCM && kb_str_ends(src, ".cu"))
            rc = kb_strv_push(argv, "-xhip"); /* the CUDA-dialect source, compiled as HIP */
        if (!rc)
            rc = kb_strv_push(argv, src);
    }
    if (!rc && spec->source_count == 0)
        rc = kb_error_set(ctx, KB_ERR_MANIFEST, "%s: the %s backend lists no sources", item->target,
                          kb_backend_name(item->backend));
    if (!rc && (kb_strv_push(argv, "-o") || kb_strv_push(argv, lib_path)))
        rc = KB_ERR_NOMEM;
    if (rc == KB_ERR_NOMEM)
        return kb_error_oom(ctx);
    return rc;
}

static void log_command(kb_buf *log, const kb_strv *argv)
{
    if (!log)
        return;
    kb_buf_puts(log, "$");
    for (size_t i = 0; i < argv->len; i++)
        kb_buf_printf(log, " %s", argv->items[i]);
    kb_buf_puts(log, "\n");
}

int kb_compile_target(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                      const char *work_dir, const char *overlay_dir, const char *lib_path,
                      kb_buf *log)
{
    if (item->backend == KB_BACKEND_METAL)
        return kb_error_set(ctx, KB_ERR_UNSUPPORTED,
                            "%s: metal packaging (metallib + host library) is not implemented",
                            item->target);
    if (!item->tc)
        return kb_error_set(ctx, KB_ERR_TOOLCHAIN, "%s: %s", item->target,
                            item->skip ? item->skip : "no toolchain");
    char *pkg_abs = realpath(m->dir, NULL);
    if (!pkg_abs)
        return kb_error_set_path(ctx, KB_ERR_IO, m->dir, 0, 0, "cannot resolve %s", m->dir);
    kb_strv argv = KB_STRV_INIT;
    int rc = build_argv(ctx, &argv, m, item, work_dir, overlay_dir, lib_path, pkg_abs);
    free(pkg_abs);
    if (rc) {
        kb_strv_free(&argv);
        return rc;
    }
    /* A NULL-terminated copy of the pointers for exec. */
    const char **args = calloc(argv.len + 1, sizeof(*args));
    if (!args) {
        kb_strv_free(&argv);
        return kb_error_oom(ctx);
    }
    for (size_t i = 0; i < argv.len; i++)
        args[i] = argv.items[i];
    log_command(log, &argv);
    kb_proc_result r;
    rc = kb_proc_run(ctx, &r, args, m->dir, COMPILE_TIMEOUT_MS);
    if (!rc && log)
        kb_buf_append(log, r.output.data, r.output.len);
    if (!rc && (r.exit_code != 0 || !kb_path_exists(lib_path))) {
        char *tail = kb_trim_compiler_output(r.output.data, COMPILER_TAIL_LINES);
        if (r.timed_out)
            rc = kb_error_set(ctx, KB_ERR_BUILD, "%s: %s timed out", item->target, item->tc->name);
        else
            rc = kb_error_set(ctx, KB_ERR_BUILD, "%s: %s failed (exit %d):\n%s", item->target,
                              item->tc->name, r.exit_code, tail && *tail ? tail : "(no output)");
        free(tail);
    }
    kb_proc_result_free(&r);
    free(args);
    kb_strv_free(&argv);
    return rc;
}
