# Sourced by the device scripts that run Nsight Compute: NCU is the ncu on PATH, else the one a
# CUDA toolkit or a standalone Nsight Compute install left in its usual place, else empty.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
