// Templates shared by every precision (C++17).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace rk {

template <typename T> inline T silu(T x) { return x / (T(1) + std::exp(-x)); }

template <typename T> int silu_and_mul(T *out, const T *in, int64_t n, int64_t d)
{
    if (n < 0 || d < 0 || ((n && d) && (!out || !in)))
        return -1;
    std::vector<T> gate(static_cast<size_t>(d)); // a scratch row: needs the C++ runtime
    for (int64_t r = 0; r < n; r++) {
        const T *row = in + r * 2 * d;
        for (int64_t i = 0; i < d; i++)
            gate[static_cast<size_t>(i)] = silu(row[i]);
        for (int64_t i = 0; i < d; i += RK_ACT_VEC)
            for (int64_t k = i; k < i + RK_ACT_VEC && k < d; k++)
                out[r * d + k] = gate[static_cast<size_t>(k)] * row[d + k];
    }
    return 0;
}

} // namespace rk
