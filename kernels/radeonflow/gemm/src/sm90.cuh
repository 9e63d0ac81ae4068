/* Hopper building blocks shared by the GEMM kernels: shared-memory addresses, wgmma matrix
 * descriptors, mbarriers, TMA loads and the driver's tensor-map encoder (through cudart). */
#ifndef RF_SM90_CUH
#define RF_SM90_CUH

#include "kb_gpu_compat.h"
#if defined(KB_GPU_CUDA)
#include <cuda.h> /* CUtensorMap and its enums; the driver itself is reached through cudart */
#include <stdint.h>

namespace rf
{

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* The accumulator operands of a wgmma: RF_WG_D64 / RF_WG_D128 name %0..%63 / %0..%127 in the
 * instruction (m64n128 / m64n256 fp32 accumulators), RF_WG_ACC64 / RF_WG_ACC128 bind them to
 * d[0..63] / d[0..127] with constraint C: "+f" when the wgmma adds to d, "=f" when it
 * overwrites d (then d's earlier values are dead there). */
#define RF_WG_D64                                                                                  \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "   \
    "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "   \
    "%56, %57, %58, %59, %60, %61, %62, %63}"
#define RF_WG_D128                                                                                 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "   \
    "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "   \
    "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "   \
    "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "   \
    "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "     \
    "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "   \
    "%123, %124, %125, %126, %127}"
#define RF_WG_ACC8(C, d, i)                                                                        \
    C(d[i]), C(d[i + 1]), C(d[i + 2]), C(d[i + 3]), C(d[i + 4]), C(d[i + 5]), C(d[i + 6]),         \
        C(d[i + 7])
#define RF_WG_ACC64(C, d)                                                                          \
    RF_WG_ACC8(C, d, 0), RF_WG_ACC8(C, d, 8), RF_WG_ACC8(C, d, 16), RF_WG_ACC8(C, d, 24),          \
        RF_WG_ACC8(C, d, 32), RF_WG_ACC8(C, d, 40), RF_WG_ACC8(C, d, 48), RF_WG_ACC8(C, d, 56)
#define RF_WG_ACC128(C, d)                                                                         \
    RF_WG_ACC64(C, d), RF_WG_ACC8(C, d, 64), RF_WG_ACC8(C, d, 72), RF_WG_ACC8(C, d, 80),           \
        RF_WG_ACC8(C, d, 88), RF_WG_ACC8(C, d, 96), RF_WG_ACC8(C, d, 104), RF_WG_ACC8(C, d, 112),  \
        RF_WG_ACC8(C, d, 120)

/* Matrix descriptor: start, leading and stride byte offsets (>> 4), 128-byte swizzle. */
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((saddr >> 4) & 0x3fff) | ((uint64_t)((lbo >> 4) & 0x3fff) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3fff) << 32) | (1ull << 62);
}

__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
/* Waits until the phase with the given parity has completed (a fresh barrier counts its
 * phase "1" as completed, which lets the producer start on empty stages). */
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n.reg .pred p;\nTS_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@p bra TS_DONE;\nbra TS_WAIT;\nTS_DONE:\n}\n" ::"r"(smem_addr(bar)),
                 "r"(parity)
                 : "memory");
}
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, uint64_t *bar,
                                            int inner, int outer)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_addr(dst)),
                 "l"((uint64_t)map), "r"(smem_addr(bar)), "r"(inner), "r"(outer)
                 : "memory");
}

/* Cluster versions: an arrive on block rank's barrier at the same shared offset, a bulk tensor
 * copy written into every block of cta_mask (with complete_tx on each one's barrier), and a
 * whole-cluster barrier. The arrive keeps the default .release.cta semantics, as CUTLASS's
 * ClusterBarrier does: what it orders are the arriving warp's wgmma reads of the stage, already
 * complete (wgmma.wait_group), and the waiter's plain try_wait suffices. Written with
 * .release.cluster (and the wait with .acquire.cluster) each arrive is a cluster-wide fence:
 * Nsight Compute showed the warps stalled on it and the kernel at 0.4x of the one-block rate. */
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t *bar, unsigned rank)
{
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)),
                 "r"(rank)
                 : "memory");
}
__device__ __forceinline__ void tma_load_2d_multicast(void *dst, const CUtensorMap *map,
                                                      uint64_t *bar, int inner, int outer,
                                                      uint16_t cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(smem_addr(dst)),
                 "l"((uint64_t)map), "r"(smem_addr(bar)), "r"(inner), "r"(outer), "h"(cta_mask)
                 : "memory");
}
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::
                     : "memory");
}

/* Shared -> global bulk tensor copy of one box (a bulk group; the caller commits it), and a
 * barrier among `threads` threads of the block on barrier id (1..15; 0 is __syncthreads). */
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, const void *src, int inner,
                                             int outer)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
            (uint64_t)map),
        "r"(smem_addr(src)), "r"(inner), "r"(outer)
        : "memory");
}
__device__ __forceinline__ void named_barrier_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/* The warpgroup's 64 x COLS outputs (the m64 accumulator layout, already scaled) into the
 * swizzled boxes of stage, a pair per 4-byte store. RAW: the bare conversion (no NaN lane). */
template <typename T, int COLS, bool RAW>
__device__ __forceinline__ void wg_stage_tile(const float *v, uint8_t *stage)
{
    int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int nn = 0; nn < COLS / 8; nn++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int row = warp * 16 + g + half * 8, box = nn / 8, chunk = nn % 8;
            const float lo = v[nn * 4 + half * 2], hi = v[nn * 4 + half * 2 + 1];
            uint32_t w = RAW ? kb_type<T>::store2_raw(lo, hi) : kb_type<T>::store2(lo, hi);
            uint32_t addr =
                smem_addr(stage + box * 8192 + row * 128 + ((chunk ^ (row & 7)) << 4) + t * 4);
            asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(w) : "memory");
        }
}

/* The epilogue through the copy engine, for a warpgroup's 64 x COLS wgmma accumulators (m64nN
 * layout: per 8 columns nn, acc[nn*4 + half*2 + {0,1}] is row 16 (warp & 3) + g + 8 half, columns
 * 8 nn + 2t + {0,1}, with g = lane / 4, t = lane % 4). They go, times alpha, as 16-bit T into
 * stage: COLS / 64 boxes of 64 rows x 128 bytes, 16-byte chunk c of row r at c ^ (r & 7), so a
 * warp's stores hit 8 distinct chunks (no bank conflict); then one thread hands the boxes to the
 * copy engine (tmc reads boxes of 64 x 64, 128-byte swizzled), which clips rows past M and
 * columns past N. The stores drain while the warpgroup goes on (the next tile's main loop);
 * stage is written again only once the engine has read it. bar: a named barrier id (1..15) of
 * the warpgroup's 128 threads; the warpgroup's first thread calls wg_store_drain before exit. */
template <typename T, int COLS>
__device__ __forceinline__ void wg_store_tile_tma(const float *acc, float alpha, uint8_t *stage,
                                                  const CUtensorMap *tmc, int m0, int n0, int bar)
{
    static_assert(COLS % 64 == 0, "whole 64-column boxes");
    bool leader = (threadIdx.x & 127) == 0;
    if (leader)
        asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    named_barrier_sync(bar, 128);
    float v[COLS / 2];
#pragma unroll
    for (int i = 0; i < COLS / 2; i++)
        v[i] = alpha * acc[i];
    /* bf16's NaN rule (kb_f32_to_bf16) is a compare and a select per value on top of the
     * conversion: test the whole fragment once and convert pairs bare unless a NaN is in it */
    if (kb_type<T>::raw_nan_differs && kb_any_nan<COLS / 2>(v))
        wg_stage_tile<T, COLS, false>(v, stage);
    else
        wg_stage_tile<T, COLS, true>(v, stage);
    /* ordinary stores, read next by the copy engine (async proxy) */
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    named_barrier_sync(bar, 128);
    if (leader) {
#pragma unroll
        for (int b = 0; b < COLS / 64; b++)
            tma_store_2d(tmc, stage + b * 8192, n0 + b * 64, m0);
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    }
}
/* Shared memory must outlive the copy engine's last read of it. */
__device__ __forceinline__ void wg_store_drain()
{
    if ((threadIdx.x & 127) == 0)
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

typedef CUresult (*tensor_map_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                         const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                         const cuuint32_t *, CUtensorMapInterleave,
                                         CUtensorMapSwizzle, CUtensorMapL2promotion,
                                         CUtensorMapFloatOOBfill);

/* cuTensorMapEncodeTiled is a driver function; reach it through the runtime so the artifact
 * links no libcuda. Null on drivers without it (the caller falls back to cp.async). */
static tensor_map_encode_fn tensor_map_encoder(void)
{
    static const tensor_map_encode_fn fn = [] {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                             &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            return (tensor_map_encode_fn) nullptr;
        return (tensor_map_encode_fn)p;
    }();
    return fn;
}

static int sm_count(void)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return 0;
    return sms;
}

/* A launch of `grid` blocks in clusters of `cl` along x. The cluster shape is a launch
 * attribute (not __cluster_dims__), so the same source compiles for targets without clusters.
 * cfg points at attr: initialise it in place and do not copy it. */
struct cluster_launch {
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg;
};
static inline void cluster_launch_init(cluster_launch *l, int cl, unsigned grid, int threads,
                                       int smem_bytes, kb_stream_t stream)
{
    l->attr = {};
    l->attr.id = cudaLaunchAttributeClusterDimension;
    l->attr.val.clusterDim.x = (unsigned)cl;
    l->attr.val.clusterDim.y = 1;
    l->attr.val.clusterDim.z = 1;
    l->cfg = {};
    l->cfg.gridDim = dim3(grid);
    l->cfg.blockDim = dim3((unsigned)threads);
    l->cfg.dynamicSmemBytes = (size_t)smem_bytes;
    l->cfg.stream = (cudaStream_t)stream;
    l->cfg.attrs = &l->attr;
    l->cfg.numAttrs = 1;
}

/* A row-major rows x cols matrix of elem_bytes-wide elements with leading dimension ld, read
 * in boxes of box_rows x (128 / elem_bytes) columns (128 bytes, the swizzle span), 128-byte
 * swizzled in shared memory. Out-of-bounds reads fill zeros. */
static inline bool make_tensor_map_128b(CUtensorMap *map, CUtensorMapDataType type, int elem_bytes,
                                        const void *base, int rows, int cols, int ld, int box_rows)
{
    tensor_map_encode_fn encode = tensor_map_encoder();
    if (!encode)
        return false;
    cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)ld * (cuuint64_t)elem_bytes};
    cuuint32_t box[2] = {(cuuint32_t)(128 / elem_bytes), (cuuint32_t)box_rows};
    cuuint32_t elem_strides[2] = {1, 1};
    return encode(map, type, 2, (void *)base, dims, strides, box, elem_strides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

constexpr bool starts_with(const char *s, const char *w)
{
    return *w == '\0' ? true : (*s == *w && starts_with(s + 1, w + 1));
}
constexpr bool contains(const char *s, const char *w)
{
    return *s == '\0' ? false : (starts_with(s, w) || contains(s + 1, w));
}
/* The builder compiles one artifact per arch and bakes its target id; sm_90a artifacts run
 * only on sm_90 devices (DESIGN.md), so the name alone says wgmma is there. */
constexpr bool kTargetIsSm90a = contains(KBPKG_TARGET, "sm_90a");
/* sm_90 (and sm_90a) SASS runs only on compute capability 9.0, which has the TMA engine */
constexpr bool kTargetIsSm90 = contains(KBPKG_TARGET, "sm_90");

/* Whether kernel's code came from PTX or SASS of at least ptx_version (89, 90): a fat binary
 * whose older PTX the driver JIT-compiled for this device holds only the trap. Leaves no error
 * behind for the fallback's launch check. */
template <typename Kernel> static inline bool kernel_code_at_least(Kernel kernel, int ptx_version)
{
    cudaFuncAttributes attr;
    if (cudaFuncGetAttributes(&attr, kernel) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return attr.ptxVersion >= ptx_version;
}

} // namespace rf

#endif
#endif
