/* What the memory-bound benches (act_odd.cu, rms_plans.cu) share beyond bench_common.h: their
 * command line (--dtypes bf16,f16,f32 --shapes ROWSxWIDTH,...), the walk over shapes and dtypes
 * it names, and freeing a shape's device buffers. Include after kb_gpu_compat.h and
 * bench_common.h (kb_bf16_tag, kb_f16_tag, B_*, CK). */
#ifndef KB_MEM_COMMON_H
#define KB_MEM_COMMON_H

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

struct mem_args {
    std::string dtypes, shapes;
};

/* --dtypes and --shapes (pairs of arguments; anything else is ignored, as before) */
static inline mem_args mem_parse_args(int argc, char **argv, const char *default_shapes)
{
    mem_args a = {"bf16,f16,f32", default_shapes};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dtypes"))
            a.dtypes = argv[i + 1];
        else if (!strcmp(argv[i], "--shapes"))
            a.shapes = argv[i + 1];
    }
    return a;
}

/* whether the comma-separated list names `t` as a whole item ("bf16" does not name "f16") */
static inline bool mem_has_dtype(const std::string &list, const char *t)
{
    const std::string s = "," + list + ",", item = std::string(",") + t + ",";
    return s.find(item) != std::string::npos;
}

/* f(tag, name, code, n, d) for every ROWSxWIDTH shape and named dtype, shapes outermost and
 * bf16, f16, f32 in that order within a shape (a generic lambda: decltype(tag) is the type) */
template <typename F> static inline void mem_for_each(const mem_args &a, F f)
{
    size_t pos = 0;
    while (pos < a.shapes.size()) {
        size_t e = a.shapes.find(',', pos);
        if (e == std::string::npos)
            e = a.shapes.size();
        const std::string sh = a.shapes.substr(pos, e - pos);
        pos = e + 1;
        long long n = 0, d = 0;
        if (sscanf(sh.c_str(), "%lldx%lld", &n, &d) != 2)
            continue;
        if (mem_has_dtype(a.dtypes, "bf16"))
            f(kb_bf16_tag(), "bf16", (int)B_BF16, (int64_t)n, (int64_t)d);
        if (mem_has_dtype(a.dtypes, "f16"))
            f(kb_f16_tag(), "f16", (int)B_F16, (int64_t)n, (int64_t)d);
        if (mem_has_dtype(a.dtypes, "f32"))
            f(float(), "f32", (int)B_F32, (int64_t)n, (int64_t)d);
    }
}

/* a shape's teardown: its stream, its input sets and the other buffers */
static inline void mem_free(cudaStream_t s, std::vector<void *> &sets,
                            std::initializer_list<void *> others)
{
    CK(cudaStreamDestroy(s));
    for (void *p : sets)
        CK(cudaFree(p));
    sets.clear();
    for (void *p : others)
        CK(cudaFree(p));
}

#endif
